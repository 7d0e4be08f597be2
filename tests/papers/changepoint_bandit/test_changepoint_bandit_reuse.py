"""Verification that continues from detection's draws (issue 13).

Where detection already resolved every cell to width <= 2 eta, its draws at the cells'
endpoints start the paired certificate; the cells were chosen by the data from the grid's
K cells, so each test runs at a union level, and fresh verification keeps the rest of
delta.
"""

import numpy as np
import pytest

import neurips26.papers.changepoint_bandit.localize as L
from neurips26.papers.changepoint_bandit import (
    QueryOracle,
    StepFunction,
    localize_change_points,
    localize_in_cells,
    make_step_function,
)


def _spy_verify(monkeypatch):
    calls = []
    real = L._verify

    def spy(S, lo, hi, gap_hat, delta_test, delta_fail, sigma, growth, start=None):
        calls.append({"delta": np.array(delta_test, float), "start": start, "width": hi - lo})
        return real(S, lo, hi, gap_hat, delta_test, delta_fail, sigma, growth, start)

    monkeypatch.setattr(L, "_verify", spy)
    return calls


def test_first_verification_continues_from_detection_at_the_union_level(monkeypatch):
    calls = _spy_verify(monkeypatch)
    eta, delta, N = 1e-2, 0.01, 3
    f = make_step_function(num_change_points=N, jump=0.5, layout="spread", seed=0)
    res = localize_change_points(QueryOracle(f, seed=0), num_change_points=N, eta=eta, delta=delta)
    assert res.correct(f.change_points, eta)
    first = calls[0]
    assert first["start"] is not None and np.all(first["width"] <= 2 * eta)
    K = 2 ** L._finest_level(N, eta)  # 64 cells of width 1/64 <= 2 eta
    np.testing.assert_allclose(first["delta"], 0.5 * delta / K)
    sums, counts = first["start"]
    assert sums.shape == counts.shape == (N, 2) and np.all(counts > 0)
    # fresh rounds, if any, share the rest of delta: delta (1 - s) / (N a (a + 1))
    for a, call in enumerate(calls[1:], start=1):
        assert call["start"] is None
        np.testing.assert_allclose(call["delta"], (1 - 0.5) * delta / (N * a * (a + 1)))


def test_cells_known_in_advance_keep_all_of_delta_for_fresh_verification(monkeypatch):
    calls = _spy_verify(monkeypatch)
    f = StepFunction([0.3], [0.0, 1.0])
    res = localize_in_cells(QueryOracle(f, seed=0), cells=[[0.25, 0.5]], eta=0.01, delta=0.05)
    assert res.success
    assert calls[0]["start"] is None
    np.testing.assert_allclose(calls[0]["delta"], 0.05 / 2)  # round 1: delta / (N 1 2)


@pytest.mark.parametrize("seed", range(20))
def test_a_flat_cell_with_unequal_detection_counts_is_never_certified(seed):
    # Detection drew 200 samples at one end and 8 at the other. The top-up brings the
    # lagging end to 200 before any pairing; pairing sums of unequal counts (or the first
    # min(n) draws' sum against all 200) would certify a difference at once at level 5.
    rng = np.random.default_rng(seed)
    counts = np.array([[200, 8]])
    sums = 5.0 * counts + np.sqrt(counts) * rng.standard_normal((1, 2))
    # f = 5 on [0, 0.9): the cell [0.1, 0.2] is flat
    S = L._Sampler(QueryOracle(StepFunction([0.9], [5.0, 6.0]), seed=seed), None)
    cert, queries = L._verify(
        S,
        np.array([0.1]),
        np.array([0.2]),
        np.array([1.0]),
        np.array([1e-3]),
        0.1,
        1.0,
        1.25,
        start=(sums, counts),
    )
    assert not cert[0]
    assert queries[0] >= 192  # at least the top-up of the lagging end
    assert S.phase["verification"] == queries[0]


def test_top_up_alone_certifies_a_large_jump():
    # A jump of 4 sigma with 400 detection draws at the left end and 100 at the right:
    # the 300-draw top-up at the right end is all verification needs.
    f = StepFunction([0.5], [0.0, 4.0])
    S = L._Sampler(QueryOracle(f, seed=1), None)
    counts = np.array([[400, 100]])
    sums = np.array([[0.0, 400.0]])  # exact level sums: means 0 and 4
    cert, queries = L._verify(
        S,
        np.array([0.4]),
        np.array([0.6]),
        np.array([4.0]),
        np.array([1e-3]),
        0.1,
        1.0,
        1.25,
        start=(sums, counts),
    )
    assert cert[0] and queries[0] == 300


def test_reuse_share_zero_is_fresh_verification_only(monkeypatch):
    calls = _spy_verify(monkeypatch)
    f = make_step_function(num_change_points=3, jump=0.5, layout="spread", seed=0)
    kw = dict(num_change_points=3, eta=1e-2, delta=0.01)
    res = localize_change_points(QueryOracle(f, seed=0), reuse_share=0.0, **kw)
    assert res.correct(f.change_points, 1e-2)
    assert all(c["start"] is None for c in calls)
    np.testing.assert_allclose(calls[0]["delta"], 0.01 / (3 * 1 * 2))


@pytest.mark.parametrize("bad", [-0.1, 1.0, 2.0, float("nan")])
def test_bad_reuse_share(bad):
    f = make_step_function(num_change_points=2, seed=0)
    with pytest.raises(ValueError, match="reuse_share"):
        localize_change_points(QueryOracle(f), num_change_points=2, eta=0.01, reuse_share=bad)
    with pytest.raises(TypeError, match="reuse_share"):
        localize_change_points(QueryOracle(f), num_change_points=2, eta=0.01, reuse_share="x")
