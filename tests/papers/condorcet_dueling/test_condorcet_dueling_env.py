"""Environment, preference-matrix and instance tests for condorcet_dueling."""

import itertools

import numpy as np
import pytest

from neurips26.papers.condorcet_dueling import (
    INSTANCE_KINDS,
    BudgetExhaustedError,
    CallableEnvironment,
    DuelEnvironment,
    as_environment,
    check_preference_matrix,
    condorcet_winner,
    make_instance,
)


def _brute_force_winner(Q):
    K = len(Q)
    winners = [i for i in range(K) if all(Q[i][j] >= 0.5 for j in range(K) if j != i)]
    return winners[0] if len(winners) == 1 else None


def test_condorcet_winner_matches_brute_force_on_random_matrices():
    rng = np.random.default_rng(0)
    found = 0
    for _ in range(300):
        K = int(rng.integers(2, 7))
        U = rng.choice([0.2, 0.5, 0.7, 0.9], size=(K, K))
        Q = np.triu(U, 1) + np.tril(1 - U.T, -1)
        np.fill_diagonal(Q, 0.5)
        w = condorcet_winner(Q)
        assert w == _brute_force_winner(Q.tolist())
        found += w is not None
    assert 30 < found < 300  # both outcomes exercised


@pytest.mark.parametrize("kind", INSTANCE_KINDS)
@pytest.mark.parametrize("K", [2, 3, 4, 7, 20])
def test_make_instance_is_a_tournament_with_planted_winner(kind, K):
    Q = make_instance(kind, num_arms=K, winner_gap=0.02, seed=K)
    assert Q.shape == (K, K)
    off = ~np.eye(K, dtype=bool)
    np.testing.assert_allclose((Q + Q.T)[off], 1.0, atol=1e-12)
    assert np.all((Q >= 0) & (Q <= 1))
    w = condorcet_winner(Q)
    assert w is not None
    gaps = np.delete(Q[w], w) - 0.5
    if kind == "bradley_terry":
        assert gaps.min() == pytest.approx(0.02, abs=1e-9)  # runner-up margin
    else:
        np.testing.assert_allclose(gaps, 0.02, atol=1e-12)


@pytest.mark.parametrize("kind", ["small_winner_gap", "cyclic_nonwinners"])
def test_every_nonwinner_has_a_strong_nonwinner_beater(kind):
    Q = make_instance(kind, num_arms=13, beater_gap=0.3, seed=4)
    w = condorcet_winner(Q)
    for i in range(13):
        if i != w:
            col = np.delete(Q[:, i], [i, w])
            assert col.max() == pytest.approx(0.8)


def test_bradley_terry_is_strongly_transitive():
    Q = make_instance("bradley_terry", num_arms=8, seed=1)
    w = condorcet_winner(Q)
    # SST: the winner has the largest win probability against every arm.
    for i in range(8):
        if i != w:
            assert Q[w, i] >= np.delete(Q[:, i], [i]).max() - 1e-12


def test_environment_frequencies_counts_and_streams():
    Q = np.array([[0.5, 0.7, 0.2], [0.3, 0.5, 0.6], [0.8, 0.4, 0.5]])
    env = DuelEnvironment(Q, seed=3, require_winner=False)
    wins = env.duels(0, 1, 20000)
    assert abs(wins / 20000 - 0.7) < 4 * np.sqrt(0.21 / 20000)
    assert env.duels(1, 0, 10) in range(11)
    assert env.num_duels == 20010
    assert env.duel_counts[0, 1] == env.duel_counts[1, 0] == 20010
    assert isinstance(env.duel(2, 0), bool)
    # Per-pair streams: interleaving other pairs does not change a pair's outcomes.
    a = DuelEnvironment(Q, seed=5, require_winner=False)
    b = DuelEnvironment(Q, seed=5, require_winner=False)
    first = [a.duels(0, 1, 7) for _ in range(5)]
    second = []
    for _ in range(5):
        b.duels(1, 2, 3)
        second.append(b.duels(1, 0, 7))
    assert first == [7 - x for x in second]


def test_environment_budget_raises_clear_error():
    env = DuelEnvironment([[0.5, 0.6], [0.4, 0.5]], max_duels=10)
    env.duels(0, 1, 10)
    with pytest.raises(BudgetExhaustedError, match="budget exhausted"):
        env.duel(0, 1)


def test_callable_environment_rejects_non_booleans_and_counts():
    env = CallableEnvironment(lambda i, j: 1, num_arms=3)
    with pytest.raises(TypeError, match="must return a bool"):
        env.duel(0, 1)
    ok = CallableEnvironment(lambda i, j: np.bool_(i < j), num_arms=3, max_duels=5)
    assert ok.duels(0, 2, 5) == 5
    assert ok.num_duels == 5
    with pytest.raises(BudgetExhaustedError, match="max_duels=5"):
        ok.duel(0, 1)


def test_as_environment():
    env = as_environment(lambda i, j: True, num_arms=4)
    assert env.num_arms == 4
    with pytest.raises(TypeError, match="num_arms is required"):
        as_environment(lambda i, j: True)
    with pytest.raises(TypeError, match="must be a DuelEnvironment-like"):
        as_environment(42)
    d = DuelEnvironment([[0.5, 0.6], [0.4, 0.5]])
    assert as_environment(d) is d
    with pytest.raises(ValueError, match="disagrees"):
        as_environment(d, num_arms=3)


@pytest.mark.parametrize(
    ("Q", "match"),
    [
        (np.full((2, 3), 0.5), "square"),
        (np.full((1, 1), 0.5), "at least 2 arms"),
        ([[0.5, 1.2], [-0.2, 0.5]], r"\[0, 1\]"),
        ([[0.5, 0.6], [0.6, 0.5]], r"Q\[i, j\] \+ Q\[j, i\] = 1"),
        ([[0.5, np.nan], [np.nan, 0.5]], "NaN"),
    ],
)
def test_bad_matrices(Q, match):
    with pytest.raises(ValueError, match=match):
        check_preference_matrix(Q)


def test_no_winner_names_beaters():
    rps = [[0.5, 0.9, 0.1], [0.1, 0.5, 0.9], [0.9, 0.1, 0.5]]
    with pytest.raises(ValueError, match=r"no Condorcet winner.*0 by 2"):
        DuelEnvironment(rps)
    assert DuelEnvironment(rps, require_winner=False).winner is None


def test_bad_instance_arguments_and_arms():
    with pytest.raises(ValueError, match="unknown instance kind"):
        make_instance("nope")
    with pytest.raises(ValueError, match="num_arms must be >= 2"):
        make_instance("bradley_terry", num_arms=1)
    with pytest.raises(ValueError, match="winner_gap"):
        make_instance("small_winner_gap", winner_gap=0.0)
    with pytest.raises(ValueError, match="num_arms must be >= 2"):
        CallableEnvironment(lambda i, j: True, num_arms=1)
    env = DuelEnvironment([[0.5, 0.6], [0.4, 0.5]])
    for i, j in itertools.product([0, 2], [0]):
        with pytest.raises(ValueError):
            env.duel(i, j)
