"""Baselines and the reference complexity of changepoint_bandit."""

import itertools
import math

import numpy as np
import pytest
import ruptures as rpt

from neurips26.papers.changepoint_bandit import (
    QueryOracle,
    StepFunction,
    make_step_function,
    mcpi_track_and_stop,
    offline_change_points,
    reference_complexity,
    uniform_ruptures,
)


@pytest.mark.parametrize("seed, N", [(0, 1), (1, 2), (2, 3), (3, 4)])
def test_offline_segmentation_equals_ruptures_dynp(seed, N):
    # Independent implementation: ruptures' dynamic programme with the l2 cost.
    rng = np.random.default_rng(seed)
    f = make_step_function(num_change_points=N, jump=1.0, seed=seed)
    x = np.arange(60) / 59
    y = f(x) + rng.normal(0, 0.6, size=60)  # uniform samples
    ours = offline_change_points(y, num_change_points=N)
    ref = rpt.Dynp(model="l2", min_size=1, jump=1).fit(y.reshape(-1, 1)).predict(n_bkps=N)
    assert ours.tolist() == ref[:-1]


def _sse(y, w, bkps):
    edges = [0, *bkps, len(y)]
    tot = 0.0
    for a, b in itertools.pairwise(edges):
        m = np.average(y[a:b], weights=w[a:b])
        tot += float(np.sum(w[a:b] * (y[a:b] - m) ** 2))
    return tot


def test_weighted_segmentation_is_the_brute_force_optimum():
    rng = np.random.default_rng(5)
    y = rng.normal(size=12)
    w = rng.integers(1, 10, size=12).astype(float)
    best = min(itertools.combinations(range(1, 12), 2), key=lambda b: _sse(y, w, b))
    ours = offline_change_points(y, num_change_points=2, weights=w)
    assert math.isclose(_sse(y, w, ours), _sse(y, w, best), rel_tol=1e-10)


def test_offline_bad_input():
    with pytest.raises(ValueError, match="num_change_points"):
        offline_change_points([1.0, 2.0], num_change_points=2)
    with pytest.raises(ValueError, match="finite"):
        offline_change_points([1.0, float("nan"), 2.0], num_change_points=1)
    with pytest.raises(ValueError, match="weights"):
        offline_change_points([1.0, 2.0, 3.0], num_change_points=1, weights=[1, 0, 1])


@pytest.mark.parametrize("method", [uniform_ruptures, mcpi_track_and_stop])
def test_baselines_locate_change_points(method):
    f = StepFunction([0.31, 0.68], [0.0, 1.0, 0.0])
    res = method(QueryOracle(f, seed=0), num_change_points=2, eta=0.01, delta=0.01)
    assert res.success and res.correct(f.change_points, 0.01)
    assert res.estimates.shape == (2,) and res.num_queries == res.detection_queries


def test_uniform_with_ruptures_solver_matches_dp():
    f = StepFunction([0.31, 0.68], [0.0, 1.0, 0.0])
    a = uniform_ruptures(QueryOracle(f, seed=1), num_change_points=2, eta=0.02)
    b = uniform_ruptures(QueryOracle(f, seed=1), num_change_points=2, eta=0.02, solver="ruptures")
    np.testing.assert_array_equal(a.estimates, b.estimates)
    assert a.num_queries == b.num_queries


def test_baseline_bad_input():
    f = StepFunction([0.5], [0.0, 1.0])
    with pytest.raises(ValueError, match="solver"):
        uniform_ruptures(QueryOracle(f), num_change_points=1, solver="pelt")
    with pytest.raises(ValueError, match="delta"):
        mcpi_track_and_stop(QueryOracle(f), num_change_points=1, delta=2.0)
    with pytest.raises(ValueError, match="batch_fraction"):
        mcpi_track_and_stop(QueryOracle(f), num_change_points=1, batch_fraction=0.0)


def test_reference_complexity_closed_form():
    f = StepFunction([0.3, 0.305], [0.0, 0.5, 0.0])
    c = reference_complexity(f, eta=1e-3, delta=1e-4, sigma=2.0)
    inv = 4.0 / 0.25
    assert math.isclose(c.asymptotic, 2 * 2 * inv * math.log(1e4))
    assert math.isclose(c.localization, 2 * inv * 9)  # ceil(log2(500)) = 9
    assert c.level == 8  # ceil(log2(1 / 0.005))
    assert math.isclose(c.position_term, (2**9 - 2) * inv)
    assert math.isclose(c.total, c.asymptotic + c.localization + c.position_term)
    spread = reference_complexity(StepFunction([0.3, 0.7], [0.0, 0.5, 0.0]), eta=1e-3, delta=1e-4)
    assert spread.position_term < c.position_term / 4  # positions enter only this term
    with pytest.raises(TypeError, match="StepFunction"):
        reference_complexity([0.3], eta=1e-3, delta=0.1)


@pytest.mark.parametrize("growth", [1.25, 2.0])
def test_uniform_stops_within_its_growth_factor_of_the_smallest_sufficient_count(growth):
    # Noise-free queries: the segmentation is right from the first batch, so the stop
    # comes at the first scheduled per-point count n with 2 r(n, delta / (K + 1)) < jump,
    # i.e. at most max(n* + 1, ceil(growth n*)) for n* = min_samples_to_separate. With
    # the old doubling batches the count could be up to twice n*.
    from neurips26.papers.changepoint_bandit import CallableOracle, min_samples_to_separate

    f = StepFunction([0.31, 0.68], [0.0, 1.0, 0.0])
    eta, delta = 0.01, 0.05
    res = uniform_ruptures(
        CallableOracle(lambda x: float(f(x))), num_change_points=2, eta=eta, delta=delta,
        growth=growth,
    )  # fmt: skip
    k1 = math.ceil(1 / (2 * eta)) + 1
    n_star = min_samples_to_separate(1.0, delta=delta / (k1 - 1), paired=True)
    per_point = res.num_queries / k1
    assert res.success and per_point == int(per_point)
    assert n_star <= per_point <= max(n_star + 1, math.ceil(growth * n_star))
