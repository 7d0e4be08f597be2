"""Baselines and the reference complexity of changepoint_bandit."""

import itertools
import math
import warnings
from functools import partial

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


def test_segmentation_is_affine_invariant_and_survives_huge_values():
    # the optimum is the same for a y -> a + b y, w -> c w; at 1e200, y^2 overflowed
    rng = np.random.default_rng(7)
    y = np.r_[np.zeros(8), np.ones(6), np.zeros(6)] + rng.normal(0, 0.2, 20)
    w = rng.integers(1, 10, size=20).astype(float)
    ref = offline_change_points(y, num_change_points=2, weights=w).tolist()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for a, b, c in ((1e9, 1.0, 1.0), (0.0, 1e200, 1.0), (-3e150, 1e150, 1e300)):
            got = offline_change_points(a + b * y, num_change_points=2, weights=c * w)
            assert got.tolist() == ref, (a, b, c)
    assert offline_change_points(np.full(5, 1e300), num_change_points=1).size == 1


def test_offline_bad_input():
    with pytest.raises(ValueError, match="num_change_points"):
        offline_change_points([1.0, 2.0], num_change_points=2)
    with pytest.raises(ValueError, match="finite"):
        offline_change_points([1.0, float("nan"), 2.0], num_change_points=1)
    with pytest.raises(ValueError, match="weights"):
        offline_change_points([1.0, 2.0, 3.0], num_change_points=1, weights=[1, 0, 1])


@pytest.mark.parametrize(
    "method",
    [uniform_ruptures, mcpi_track_and_stop, partial(mcpi_track_and_stop, stopping="certified")],
)
def test_baselines_locate_change_points(method):
    f = StepFunction([0.31, 0.68], [0.0, 1.0, 0.0])
    res = method(QueryOracle(f, seed=0), num_change_points=2, eta=0.01, delta=0.01)
    assert res.success and res.correct(f.change_points, 0.01)
    assert res.estimates.shape == (2,) and res.num_queries == res.detection_queries


def test_certified_mcpi_never_stops_on_a_flat_function():
    # No cell holds a change, so a valid certificate fires only when a sequence fails
    # (probability <= delta). The level 5 makes sums over unequal counts differ by 5 per
    # extra draw: a pairing that did not cut both arms to min(n_l, n_r) would stop at once.
    flat = StepFunction([0.5], [5.0, 5.0 + 1e-12])
    for seed in range(3):
        with pytest.warns(RuntimeWarning, match="budget"):
            res = mcpi_track_and_stop(
                QueryOracle(flat, seed=seed),
                num_change_points=1,
                eta=0.05,
                delta=1e-3,
                stopping="certified",
                max_queries=20_000,
                on_budget="warn",
            )
        assert res.success is None and res.method == "mcpi_certified"


def test_certified_mcpi_pairs_the_first_draws(monkeypatch):
    # _pairs_certified must hand the certificate the sums of exactly the first
    # min(n_l, n_r) draws of each arm, in the order drawn (across batches).
    from neurips26.papers.changepoint_bandit import baselines

    seen = {}

    def spy(sums_a, sums_b, counts, *, delta, sigma):
        seen.update(a=np.asarray(sums_a), b=np.asarray(sums_b), n=np.asarray(counts), d=delta)
        return np.ones(len(counts), dtype=bool)

    monkeypatch.setattr(baselines, "paired_certified_different", spy)
    rng = np.random.default_rng(0)
    obs = [[rng.normal(0, 1, 3), rng.normal(0, 1, 9)], [rng.normal(3, 1, 2), rng.normal(3, 1, 4)]]
    counts = np.array([12, 6])
    assert baselines._pairs_certified(obs, np.array([0]), np.array([1]), counts, 0.1, 1.0)
    first0 = np.concatenate(obs[0])[:6].sum()
    np.testing.assert_allclose(seen["a"], [first0])
    np.testing.assert_allclose(seen["b"], [np.concatenate(obs[1]).sum()])
    assert seen["n"].tolist() == [6] and seen["d"] == 0.1


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
    with pytest.raises(ValueError, match="stopping"):
        mcpi_track_and_stop(QueryOracle(f), num_change_points=1, stopping="bayes")


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


def test_benchmark_prints_both_mcpi_stops_and_the_oracle_floor(capsys):
    import importlib.util
    from pathlib import Path

    path = Path(__file__).resolve().parents[3] / "benchmarks" / "changepoint_bandit.py"
    spec = importlib.util.spec_from_file_location("changepoint_bench", path)
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    bench.main(["--tier", "smoke", "--runs", "2"])
    out = capsys.readouterr().out
    for name in ("ours", "uniform_ruptures", "mcpi", "mcpi_certified", "oracle_cells"):
        assert f" {name} " in out
    assert "against mcpi (heuristic" in out and "against mcpi_certified (certified" in out
    assert out.count("goal (our median queries") == 2
    assert "mcpi / oracle_cells" in out and "certificate share of oracle_cells" in out
