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
    np.testing.assert_allclose(d_41, 4 * (p - b0), atol=1e-3)  # w k tau (p - b)
    np.testing.assert_allclose(d_14, d_41, atol=1e-3)
    np.testing.assert_allclose(d_22, d_41, atol=1e-3)
    d_21 = (_expected_after(b0, p, 2, 1, w) - b0) / w
    assert np.max(np.abs(d_21 - d_41)) > 0.1  # the product matters
    # at large w the equivalence breaks (second order): the check can fail
    big = 0.5
    gap = _expected_after(b0, p, 4, 1, big) - _expected_after(b0, p, 1, 4, big)
    assert np.max(np.abs(gap)) > 1e-3


def test_debate_update_formula():
    b = np.array([0.5, 0.3, 0.2])
    out = debate_update(b, [1, 0, 2], influence=0.2, sharpen=2.0)
    mid = (b + 0.2 * np.array([1, 0, 2])) / 1.6
    np.testing.assert_allclose(out, mid**2 / np.sum(mid**2))


def test_task_priors_and_shapes():
    task = make_task(num_questions=30, num_answers=5, num_families=2, seed=0)
    assert task.priors.shape == (2, 30, 5)
    np.testing.assert_allclose(task.priors.sum(-1), 1.0)
    assert np.all(task.priors >= 0)
    run = simulate_team(task, num_agents=4, condition="self_correction", num_runs=3, seed=1)
    assert run.answers.shape == run.correct.shape == (3, 30, 4)
    assert run.accuracy_by_round.shape == (4,)
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
        simulate_team(task, num_agents=3, influence=1.5)
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
