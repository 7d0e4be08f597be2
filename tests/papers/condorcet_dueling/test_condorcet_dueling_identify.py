"""Identification procedures: oracles, properties, determinism and bad input."""

import math

import numpy as np
import pytest

from neurips26.papers.condorcet_dueling import (
    METHODS,
    BudgetExhaustedError,
    CallableEnvironment,
    CondorcetIdentifier,
    DuelEnvironment,
    IdentificationResult,
    certifies,
    condorcet_winner,
    identify_condorcet,
    instance_complexity,
    make_instance,
    round_robin_elimination,
    winner_gap_elimination,
)


class StreamEnv:
    """Outcome of the k-th duel of pair {a < b} is fixed in advance (counts only)."""

    def __init__(self, Q, seed, length=4000):
        self.Q = np.asarray(Q)
        self.num_arms = K = len(Q)
        rng = np.random.default_rng(seed)
        self.u = rng.random((K, K, length))
        self.k = np.zeros((K, K), dtype=int)
        self.num_duels = 0

    def duel(self, i, j):
        a, b = min(i, j), max(i, j)
        out = self.u[a, b, self.k[a, b]] < self.Q[a, b]  # a beats b
        self.k[a, b] += 1
        self.num_duels += 1
        return bool(out) if i == a else not out

    def duels(self, i, j, n):
        return sum(self.duel(i, j) for _ in range(n))


def _lcb_beats(w, n, K, delta):  # independent Hoeffding stopping rule
    return n > 0 and w / n - math.sqrt(math.log(4 * K * K * n * n / delta) / (2 * n)) > 0.5


def _loop_round_robin(env, K, delta, seed):
    rng = np.random.default_rng(seed)
    W = np.zeros((K, K), int)
    N = np.zeros((K, K), int)
    alive = set(range(K))
    elim = {}
    pairs = [(a, b) for a in range(K) for b in range(a + 1, K)]
    resolved = set()
    r = 0
    while len(alive) > 1:
        r += 1
        for p in rng.permutation(len(pairs)):
            a, b = pairs[p]
            if p in resolved or (a not in alive and b not in alive):
                continue
            while N[a, b] < 2**r:
                x = env.duel(a, b)
                W[a, b] += x
                W[b, a] += 1 - x
                N[a, b] += 1
                N[b, a] += 1
                for s, t in ((a, b), (b, a)):
                    if _lcb_beats(W[s, t], N[s, t], K, delta):
                        resolved.add(p)
                        if t in alive and len(alive) > 1:
                            alive.discard(t)
                            elim[t] = s
                if p in resolved:
                    break
            if len(alive) == 1:
                break
    return alive.pop(), elim, int(N.sum() // 2)


def _loop_winner_gap(env, K, delta, seed):
    rng = np.random.default_rng(seed)
    W = np.zeros((K, K), int)
    N = np.zeros((K, K), int)
    alive = np.ones(K, bool)
    elim = {}
    r = 0
    while alive.sum() > 1:
        r += 1
        cands = np.flatnonzero(alive)
        borda = (W.sum(1) + 1.0) / (N.sum(1) + 2.0)
        leader = int(cands[np.argmax(borda[cands] + 1e-9 * rng.random(cands.size))])
        for i in rng.permutation(cands):
            i = int(i)
            if i == leader or not alive[i]:
                continue
            done = False
            while N[leader, i] < 2**r and not done:
                x = env.duel(leader, i)
                W[leader, i] += x
                W[i, leader] += 1 - x
                N[leader, i] += 1
                N[i, leader] += 1
                for s, t in ((leader, i), (i, leader)):
                    if _lcb_beats(W[s, t], N[s, t], K, delta) and not done:
                        done = True
                        if alive[t] and alive.sum() > 1:
                            alive[t] = False
                            elim[t] = s
            if alive.sum() == 1 or not alive[leader]:
                break
    return int(np.flatnonzero(alive)[0]), elim, int(N.sum() // 2)


@pytest.mark.parametrize(
    ("impl", "loop"),
    [(round_robin_elimination, _loop_round_robin), (winner_gap_elimination, _loop_winner_gap)],
)
def test_baselines_match_loop_implementations_on_fixed_streams(impl, loop):
    for s in range(3):
        Q = make_instance("cyclic_nonwinners", num_arms=6, winner_gap=0.1, seed=s)
        res = impl(StreamEnv(Q, seed=s), delta=0.1, batch_growth=1.0, seed=s)
        winner, elim, used = loop(StreamEnv(Q, seed=s), 6, 0.1, s)
        assert (res.winner, dict(res.eliminated_by), res.num_duels) == (winner, elim, used)


def test_two_arms_is_a_sequential_test_of_one_coin():
    # K = 2: stopping time and answer equal the first passage of the confidence sequence.
    delta, q, K = 0.2, 0.58, 2
    errors = 0
    times = []
    for s in range(60):
        rng = np.random.default_rng(s)
        u = rng.random(20000)
        it = iter(u)
        env = CallableEnvironment(lambda i, j, it=it: bool((next(it) < q) == (i == 0)), num_arms=2)
        res = identify_condorcet(env, delta=delta, batch_growth=1.0, seed=s)
        x = np.cumsum(u < q)  # wins of arm 0, (T,)
        n = np.arange(1, u.size + 1)
        stop = certifies(x, n, delta=delta, num_arms=K)
        stop |= certifies(n - x, n, delta=delta, num_arms=K)
        t = int(np.argmax(stop)) + 1
        assert res.num_duels == t
        assert res.winner == (0 if certifies(x[t - 1], t, delta=delta, num_arms=K) else 1)
        errors += res.winner != 0
        times.append(t)
    assert errors / 60 <= delta
    assert np.median(times) > 100  # a gap of 0.08 needs hundreds of duels


@pytest.mark.parametrize("kind", ["small_winner_gap", "bradley_terry", "cyclic_nonwinners"])
@pytest.mark.parametrize("name", ["full_matrix", "winner_gap", "round_robin", "dkwt"])
def test_certificates_are_true_beaters(kind, name):
    for s in range(4):
        Q = make_instance(kind, num_arms=7, winner_gap=0.05, seed=s)
        res = METHODS[name](DuelEnvironment(Q, seed=s), delta=0.05, seed=s)
        assert isinstance(res, IdentificationResult)
        assert res.certified and res.winner == condorcet_winner(Q)
        assert set(res.eliminated_by) == set(range(7)) - {res.winner}
        for i, j in res.eliminated_by.items():
            assert Q[j, i] > 0.5  # never eliminated by an arm it beats
        assert res.duels_per_pair.shape == (7, 7)
        assert res.duels_per_pair.sum() == 2 * res.num_duels
        assert [e.arm for e in res.trace] == list(res.eliminated_by)
        assert 0 < res.verification_share <= 1


@pytest.mark.parametrize("kw", [{"guided": True}, {"bound": "kl"}, {"batch_growth": 1.0}])
def test_variants_identify_the_winner(kw):
    Q = make_instance("small_winner_gap", num_arms=9, winner_gap=0.01, seed=3)
    res = identify_condorcet(DuelEnvironment(Q, seed=1), **kw)
    assert res.certified and res.winner == condorcet_winner(Q)


def test_kl_bound_uses_fewer_duels():
    Q = make_instance("cyclic_nonwinners", num_arms=10, seed=2)
    h = [identify_condorcet(DuelEnvironment(Q, seed=s), seed=s).num_duels for s in range(5)]
    k = [
        identify_condorcet(DuelEnvironment(Q, seed=s), seed=s, bound="kl").num_duels
        for s in range(5)
    ]
    assert np.median(k) < np.median(h)


def test_full_matrix_saves_when_winner_gap_is_small():
    Q = make_instance("small_winner_gap", num_arms=10, winner_gap=0.01, seed=0)
    ours = identify_condorcet(DuelEnvironment(Q, seed=0)).num_duels
    base = winner_gap_elimination(DuelEnvironment(Q, seed=0)).num_duels
    assert base > 10 * ours


def test_rucb_reference_runs():
    Q = make_instance("cyclic_nonwinners", num_arms=8, winner_gap=0.1, seed=0)
    res = METHODS["rucb"](DuelEnvironment(Q, seed=0), seed=0)
    assert res.winner == condorcet_winner(Q) and not res.certified
    with pytest.raises(ValueError, match="alpha"):
        METHODS["rucb"](DuelEnvironment(Q), alpha=0.4)


def test_determinism_under_seed():
    Q = make_instance("cyclic_nonwinners", num_arms=12, seed=5)
    a = identify_condorcet(DuelEnvironment(Q, seed=3), seed=4)
    b = identify_condorcet(DuelEnvironment(Q, seed=3), seed=4)
    c = identify_condorcet(DuelEnvironment(Q, seed=3), seed=5)
    assert a.num_duels == b.num_duels and dict(a.eliminated_by) == dict(b.eliminated_by)
    np.testing.assert_array_equal(a.duels_per_pair, b.duels_per_pair)
    assert a.num_duels != c.num_duels


def test_estimator_wrapper():
    Q = make_instance("bradley_terry", num_arms=5, winner_gap=0.1, seed=0)
    est = CondorcetIdentifier(delta=0.1, seed=2)
    assert est.fit(DuelEnvironment(Q, seed=1)) is est
    ref = identify_condorcet(DuelEnvironment(Q, seed=1), delta=0.1, seed=2)
    assert (est.winner_, est.num_duels_, est.certified_) == (
        ref.winner,
        ref.num_duels,
        ref.certified,
    )


def test_algorithm_budget_returns_uncertified_and_env_budget_raises():
    Q = make_instance("small_winner_gap", num_arms=6, seed=0)
    res = winner_gap_elimination(DuelEnvironment(Q), max_duels=500)
    assert not res.certified and res.num_duels == 500
    with pytest.raises(BudgetExhaustedError, match="budget exhausted"):
        identify_condorcet(DuelEnvironment(Q, max_duels=50))


def test_bad_inputs():
    env = DuelEnvironment([[0.5, 0.7], [0.3, 0.5]])
    for d in (0.0, 1.0, 2.0):
        with pytest.raises(ValueError, match="delta must lie"):
            identify_condorcet(env, delta=d)
    with pytest.raises(ValueError, match="max_duels must be >= 1"):
        identify_condorcet(env, max_duels=0)
    with pytest.raises(ValueError, match="unknown bound"):
        identify_condorcet(env, bound="bernstein")
    with pytest.raises(ValueError, match="batch_growth"):
        identify_condorcet(env, batch_growth=0.5)
    with pytest.raises(TypeError, match="must return a bool"):
        identify_condorcet(lambda i, j: 0.7, num_arms=3)
    with pytest.raises(ValueError, match="num_arms must be >= 2"):
        identify_condorcet(lambda i, j: True, num_arms=1)


def test_complexity_closed_form():
    Q = np.array([[0.5, 0.51, 0.52], [0.49, 0.5, 0.9], [0.48, 0.1, 0.5]])
    c = instance_complexity(Q, delta=0.1)
    L = math.log(3 / 0.1)
    assert c.winner == 0
    assert c.H_winner == pytest.approx(L / 0.01**2 + L / 0.02**2)
    # arm 1: gaps {0.01 (w)} -> 3 + L/1e-4; arm 2: gaps {0.4, 0.02} -> min(3 + L/0.16, ...)
    assert c.per_arm_full[1] == pytest.approx(3 + L / 0.01**2)
    assert c.per_arm_full[2] == pytest.approx(3 + L / 0.4**2)
    assert c.H_full <= c.H_winner + 3 * 2
