"""Tests of the multi-agent simulator, including the mean-field k*tau property."""

import itertools

import numpy as np
import pytest

from neurips26.papers.multiagent_neff import (
    Task,
    answer_neff,
    debate_update,
    make_task,
    simulate_team,
)


def _expected_after(b0, p, k, tau, w):
    """Exact E[belief] after tau rounds with k peers each (peer answers iid from p)."""
    a = len(p)
    total = np.zeros(a)
    for seq in itertools.product(range(a), repeat=k * tau):
        prob = np.prod([p[s] for s in seq])
        b = np.array(b0, dtype=float)
        for t in range(tau):
            counts = np.bincount(seq[t * k : (t + 1) * k], minlength=a)
            b = debate_update(b, counts, influence=w, sharpen=1.0)
        total += prob * b
    return total


def test_mean_field_k_tau_first_order():
    b0 = np.array([0.6, 0.3, 0.1])
    p = np.array([0.2, 0.5, 0.3])
    w = 1e-5
    d_41 = (_expected_after(b0, p, 4, 1, w) - b0) / w  # one round, four peers
    d_14 = (_expected_after(b0, p, 1, 4, w) - b0) / w  # four rounds, one peer
    d_22 = (_expected_after(b0, p, 2, 2, w) - b0) / w
    # Eq. (S1) to first order in w: E[db] = w k tau b * (p - <b, p>)
    np.testing.assert_allclose(d_41, 4 * b0 * (p - b0 @ p), atol=1e-3)
    np.testing.assert_allclose(d_14, d_41, atol=1e-3)
    np.testing.assert_allclose(d_22, d_41, atol=1e-3)
    d_21 = (_expected_after(b0, p, 2, 1, w) - b0) / w
    assert np.max(np.abs(d_21 - d_41)) > 0.05  # the product matters


def test_k_tau_exact_without_feedback_and_product_matters_at_large_w():
    # with peers' answers iid from a fixed p, the log-linear update depends on the total
    # counts only, so (4, 1), (2, 2) and (1, 4) agree at any w; only the feedback of
    # announced answers in the simulator can break the collapse
    b0 = np.array([0.6, 0.3, 0.1])
    p = np.array([0.2, 0.5, 0.3])
    e41 = _expected_after(b0, p, 4, 1, 0.8)
    np.testing.assert_allclose(_expected_after(b0, p, 1, 4, 0.8), e41, atol=1e-12)
    np.testing.assert_allclose(_expected_after(b0, p, 2, 2, 0.8), e41, atol=1e-12)
    assert np.max(np.abs(_expected_after(b0, p, 2, 1, 0.8) - e41)) > 0.05


def test_debate_update_formula():
    b = np.array([0.5, 0.3, 0.2])
    out = debate_update(b, [1, 0, 2], influence=0.2, sharpen=2.0)
    mid = b * np.exp(0.2 * np.array([1, 0, 2]))  # Bayesian: each peer a likelihood factor
    np.testing.assert_allclose(out, mid**2 / np.sum(mid**2))
    # peers can move an agent to an answer it gave no mass
    moved = debate_update([1.0, 0.0], [0, 30], influence=1.0, sharpen=1.0)
    assert moved[1] > 0.5


def test_peer_influence_calibrated_so_k_tau_matters():
    # issue 12: with the old additive w = 0.1 update, k*tau = 2 and 8 differed by < 0.1
    task = make_task(num_questions=200, num_answers=40, seed=40)
    ratio = {}
    for k, tau in ((2, 1), (4, 2)):
        run = simulate_team(
            task,
            num_agents=5,
            condition="debate",
            peers=k,
            rounds=tau,
            sharpen=1.0,
            num_runs=10,
            seed=3,
        )
        ratio[k * tau] = answer_neff(run.answers) / 5
    assert ratio[2] - ratio[8] >= 0.1


def test_thirty_dense_debaters_reach_consensus():
    # issue 12: the old dynamics left 30 dense debaters at an answer-level N_eff near 1.3
    task = make_task(num_questions=100, num_answers=4, seed=4)
    run = simulate_team(task, num_agents=30, condition="debate", num_runs=2, seed=2)
    sc = simulate_team(task, num_agents=30, condition="self_consistency", num_runs=2, seed=2)
    assert answer_neff(run.answers) < 1.1 < answer_neff(sc.answers)


def test_placebo_is_content_free_and_does_not_grow_with_team_size():
    # issue 12: the old placebo added N - 1 random answer votes, swamping large teams
    task = make_task(num_questions=200, num_answers=4, seed=4)
    loss = {}
    for n in (2, 30):
        kw = dict(num_agents=n, num_runs=30 // n + 2, seed=n)
        sc = simulate_team(task, condition="self_correction", **kw).accuracy_by_round
        pl = simulate_team(task, condition="placebo", **kw).accuracy_by_round
        loss[n] = 100 * ((sc[-1] - sc[0]) - (pl[-1] - pl[0]))  # gain the noise costs
    assert abs(loss[30] - loss[2]) < 1.5
    # an agent's placebo trajectory does not depend on its team: a solo agent's accuracy
    # equals a 30-agent team's per-agent accuracy (up to sampling noise)
    solo = simulate_team(task, num_agents=1, condition="placebo", num_runs=60, seed=7)
    team = simulate_team(task, num_agents=30, condition="placebo", num_runs=2, seed=8)
    assert abs(solo.accuracy_by_round[-1] - team.accuracy_by_round[-1]) < 0.03
    # and the noise carries no answer: with no re-evaluation it leaves the mean belief
    rng = np.random.default_rng(0)
    b = np.array([0.4, 0.3, 0.2, 0.1])
    draws = np.stack(
        [
            debate_update(b, 0.05 * rng.standard_normal(4), influence=1.0, sharpen=1.0)
            for _ in range(4000)
        ]
    )
    np.testing.assert_allclose(draws.mean(0), b, atol=2e-3)


def test_placebo_gap_claim_can_fail():
    # a placebo ten times the size of one peer answer costs self-correction's gain
    task = make_task(num_questions=200, num_answers=4, seed=4)
    kw = dict(num_agents=5, num_runs=10, seed=1)
    sc = simulate_team(task, condition="self_correction", **kw).accuracy_by_round
    pl = simulate_team(task, condition="placebo", placebo_noise=5.0, **kw).accuracy_by_round
    assert 100 * ((sc[-1] - sc[0]) - (pl[-1] - pl[0])) > 2.0


def test_families_have_independent_difficulty_and_error_profiles():
    # issue 12: families shared one question difficulty and differed by a small deviation
    task = make_task(num_questions=3000, num_answers=10, num_families=3, seed=0)
    q = np.arange(task.num_questions)
    p = task.priors[:, q, task.correct_answer]  # (F, Q) correct-answer mass
    corr = np.corrcoef(p)[np.triu_indices(3, 1)]
    assert np.all(np.abs(corr) < 0.1)
    wrong = task.priors.copy()
    wrong[:, q, task.correct_answer] = -1
    top = wrong.argmax(-1)  # (F, Q) each family's favourite wrong answer
    assert np.mean(top[0] == top[1]) < 0.3  # chance 1 / 9
    shared = make_task(num_questions=3000, num_answers=10, shared_difficulty=1.0, seed=0)
    ps = shared.priors[:, q, shared.correct_answer]
    np.testing.assert_allclose(ps[0], ps[1])


def test_heterogeneous_team_draws_families_independently_of_team_size():
    task = make_task(num_questions=100, num_answers=40, num_families=3, seed=0)
    # families are drawn per agent, so two agents share one with probability 1/3 at every
    # team size (round-robin put agents 0 and 1 in different families at every size)
    agree = {}
    for n in (2, 12):
        het = simulate_team(task, num_agents=n, families=3, num_runs=60, seed=n)
        agree[n] = np.mean(het.answers[..., 0] == het.answers[..., 1])
    hom = simulate_team(task, num_agents=2, families=1, num_runs=60, seed=5)
    assert abs(agree[2] - agree[12]) < 0.03
    assert agree[2] < np.mean(hom.answers[..., 0] == hom.answers[..., 1]) - 0.03


def test_task_priors_and_shapes():
    task = make_task(num_questions=30, num_answers=5, num_families=2, seed=0)
    assert task.priors.shape == (2, 30, 5)
    np.testing.assert_allclose(task.priors.sum(-1), 1.0)
    assert np.all(task.priors >= 0)
    run = simulate_team(task, num_agents=4, condition="self_correction", num_runs=3, seed=1)
    assert run.answers.shape == run.correct.shape == (3, 30, 4)
    assert run.accuracy_by_round.shape == (4,)
    assert run.accuracy_by_run.shape == (3, 4)
    np.testing.assert_allclose(run.accuracy_by_round, run.accuracy_by_run.mean(0))
    np.testing.assert_array_equal(run.correct, run.answers == task.correct_answer[None, :, None])
    sc = simulate_team(task, num_agents=4, seed=1)
    assert sc.accuracy_by_round.shape == (1,)


def test_simulator_deterministic_and_sparse_peers():
    task = make_task(num_questions=40, num_answers=10, seed=0)
    a = simulate_team(task, num_agents=6, condition="debate", peers=2, seed=5)
    b = simulate_team(task, num_agents=6, condition="debate", peers=2, seed=5)
    np.testing.assert_array_equal(a.answers, b.answers)


def test_dense_debate_reduces_diversity_and_shared_priors_cause_redundancy():
    task = make_task(num_questions=200, num_answers=40, seed=0)
    sc = simulate_team(task, num_agents=12, condition="self_consistency", num_runs=4, seed=1)
    db = simulate_team(task, num_agents=12, condition="debate", influence=0.3, num_runs=4, seed=1)
    assert answer_neff(db.answers) < 0.8 * answer_neff(sc.answers)
    assert answer_neff(sc.answers) < 12


def test_simulator_bad_input():
    task = make_task(num_questions=10, seed=0)
    with pytest.raises(ValueError, match="influence"):
        simulate_team(task, num_agents=3, influence=6.0)
    with pytest.raises(ValueError, match="influence"):
        simulate_team(task, num_agents=3, influence=-0.1)
    with pytest.raises(ValueError, match="placebo_noise"):
        simulate_team(task, num_agents=3, condition="placebo", placebo_noise=np.nan)
    with pytest.raises(ValueError, match="agent_concentration"):
        simulate_team(task, num_agents=3, agent_concentration=np.inf)
    with pytest.raises(ValueError, match="shared_difficulty"):
        make_task(shared_difficulty=1.5)
    with pytest.raises(ValueError, match="difficulty_spread"):
        make_task(difficulty_spread=np.nan)
    with pytest.raises(ValueError, match="num_questions"):
        make_task(num_questions=True)
    with pytest.raises(ValueError, match="sharpen"):
        simulate_team(task, num_agents=3, sharpen=0.0)
    with pytest.raises(ValueError, match="peers"):
        simulate_team(task, num_agents=3, condition="debate", peers=3)
    with pytest.raises(ValueError, match="unknown condition"):
        simulate_team(task, num_agents=3, condition="vote")
    with pytest.raises(ValueError, match="families"):
        simulate_team(task, num_agents=3, families=4)
    with pytest.raises(ValueError, match="num_agents"):
        simulate_team(task, num_agents=0)
    with pytest.raises(TypeError, match="Task"):
        simulate_team(np.zeros((1, 2, 3)), num_agents=2)
    with pytest.raises(ValueError, match="accuracy"):
        make_task(accuracy=1.0)
    assert isinstance(task, Task)
