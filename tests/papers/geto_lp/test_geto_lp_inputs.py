"""Bad inputs raise clear errors; solver failures are never a silent wrong barycenter."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from neurips26.papers.geto_lp import (
    IPM_MIN_VARIABLES,
    GETOBarycenter,
    GridSpec,
    SolverError,
    build_full_lp,
    build_geto_lp,
    geto_barycenter,
    geto_distance,
    lp_size,
    quota_recolor,
    synthetic_densities,
)

GRID = GridSpec((3, 3))
GOOD = np.full((2, 3, 3), 1 / 9)


def test_negative_nan_and_unnormalised_histograms():
    bad = GOOD.copy()
    bad[0, 0, 0] = -0.1
    with pytest.raises(ValueError, match="nonnegative"):
        geto_barycenter(bad, GRID)
    bad = GOOD.copy()
    bad[1, 1, 1] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        geto_barycenter(bad, GRID)
    with pytest.raises(ValueError, match="sum to 1"):
        geto_barycenter(GOOD * 2, GRID)
    res = geto_barycenter(GOOD * 2, GRID, normalize=True)
    assert res.barycenter.sum() == pytest.approx(1.0)
    with pytest.raises(ValueError, match="positive total mass"):
        geto_barycenter(np.zeros((1, 3, 3)), GRID, normalize=True)


def test_shape_mismatches():
    with pytest.raises(ValueError, match=r"shape \(M, \*grid.shape\)"):
        geto_barycenter(np.full((2, 3, 4), 1 / 12), GRID)
    with pytest.raises(ValueError, match=r"histograms\[None\]"):
        geto_barycenter(GOOD[0], GRID)
    with pytest.raises(ValueError, match="M = 0"):
        geto_barycenter(np.zeros((0, 3, 3)), GRID)
    with pytest.raises(TypeError, match="GridSpec"):
        geto_barycenter(GOOD, (3, 3))


def test_bad_weights():
    with pytest.raises(ValueError, match="nonnegative"):
        geto_barycenter(GOOD, GRID, weights=[1.5, -0.5])
    with pytest.raises(ValueError, match="sum to 1"):
        geto_barycenter(GOOD, GRID, weights=[0.5, 0.6])
    with pytest.raises(ValueError, match=r"shape \(M,\)"):
        build_full_lp(GOOD, GRID, weights=[1.0])


def test_bad_grids():
    with pytest.raises(ValueError, match="separable"):
        GridSpec((3, 3), cost="euclidean")
    with pytest.raises(ValueError, match="at least one point"):
        GridSpec((3, 0))
    with pytest.raises(ValueError, match="at least one axis"):
        GridSpec(())
    with pytest.raises(TypeError, match="ints"):
        GridSpec((3.5, 2))
    with pytest.raises(ValueError, match="spacing"):
        GridSpec((3, 3), spacing=(1.0, -1.0))
    with pytest.raises(ValueError, match="2 axes"):
        GridSpec((3, 3), spacing=(1.0,))
    with pytest.raises(ValueError, match="exponent p"):
        GridSpec((3,), cost="lp", p=0.0)
    with pytest.raises(ValueError, match="formulation"):
        lp_size((3,), 2, formulation="sparse")
    with pytest.raises(ValueError, match="num_inputs"):
        lp_size((3,), 0)


def test_bad_solver_settings():
    with pytest.raises(ValueError, match="solver must be one of"):
        geto_barycenter(GOOD, GRID, solver="glpk")
    with pytest.raises(ValueError, match="solver must be one of"):
        GETOBarycenter(grid=GRID, solver="ipm").fit(GOOD)
    with pytest.raises(ValueError, match="tol"):
        geto_barycenter(GOOD, GRID, tol=0.0)
    with pytest.raises(ValueError, match="time_limit"):
        geto_barycenter(GOOD, GRID, time_limit=-1.0)


@pytest.mark.parametrize("solver", ["auto", "highs-ds"])  # IPM may finish past its limit
def test_time_limit_raises_or_reports_status(solver):
    rng = np.random.default_rng(0)
    mu = rng.random((3, 8, 8)) + 0.05  # under IPM_MIN_VARIABLES: "auto" is dual simplex
    mu /= mu.sum((1, 2), keepdims=True)
    grid = GridSpec((8, 8))
    assert build_geto_lp(mu, grid).num_variables < IPM_MIN_VARIABLES
    with pytest.raises(SolverError, match="allow_incomplete"):
        geto_barycenter(mu, grid, time_limit=1e-4, solver=solver)
    res = geto_barycenter(mu, grid, time_limit=1e-4, allow_incomplete=True, solver=solver)
    assert not res.optimal and res.status == "iteration_or_time_limit"
    assert np.all(np.isnan(res.barycenter)) and np.isnan(res.objective)
    with pytest.raises(SolverError, match="no optimal solution"):
        res.plan(0)


def test_tiny_masses_warn(monkeypatch):
    import neurips26.papers.geto_lp.geto as geto_mod

    monkeypatch.setattr(geto_mod, "_TINY_WARNED", False)  # once per process: any order
    mu = np.full((2, 3, 3), 1 / 9)
    mu[0, 0, 0] += 1e-10
    mu[0, 0, 1] -= 1e-10
    mu[1, 2, 2] = 1e-11
    mu[1, 0, 0] += 1 / 9 - 1e-11
    with pytest.warns(UserWarning, match="feasibility tolerance"):
        geto_barycenter(mu, GRID)


def test_fixed_barycenter_and_distance_inputs():
    with pytest.raises(ValueError, match="sum to 1"):
        build_geto_lp(GOOD, GRID, fixed_barycenter=np.ones((3, 3)))
    with pytest.raises(ValueError, match=r"source must have shape \(3, 3\)"):
        geto_distance(np.full(9, 1 / 9), GOOD[0], GRID)
    with pytest.raises(ValueError, match="target must sum to 1"):
        geto_distance(GOOD[0], np.ones((3, 3)), GRID)


def test_quota_recolor_inputs():
    import scipy.sparse as sp

    plan = sp.csr_matrix(np.eye(3) / 3)
    with pytest.raises(ValueError, match="integer"):
        quota_recolor(np.array([0.0, 1.0]), plan, rng=np.random.default_rng(0))
    with pytest.raises(ValueError, match="does not cover"):
        quota_recolor(np.array([0, 5]), plan, rng=np.random.default_rng(0))
    with pytest.raises(ValueError, match="no mass"):
        quota_recolor(np.array([0, 1]), sp.csr_matrix(np.diag([1.0, 0.0, 0.0])),
                      rng=np.random.default_rng(0))


def test_float32_histograms_are_accepted_and_renormalised_in_float64():
    import warnings as _w

    from neurips26.papers.geto_lp import GridSpec, geto_barycenter, geto_distance

    grid = GridSpec((4, 4))
    rng = np.random.default_rng(0)
    h64 = rng.random((2, 4, 4)) + 0.1
    h64 /= h64.sum(axis=(1, 2), keepdims=True)
    h32 = h64.astype(np.float32)  # sums miss 1 by ~1e-8, more than the float64 tolerance
    ref = geto_barycenter(h64, grid)
    res = geto_barycenter(h32, grid)
    assert abs(res.objective - ref.objective) < 1e-5 * max(1.0, ref.objective)
    d = geto_distance(h32[0], h32[1], grid)
    assert abs(d.cost - geto_distance(h64[0], h64[1], grid).cost) < 1e-5
    # float64 histograms off by more than 1e-9 are still refused
    with pytest.raises(ValueError, match="sum to 1 within 1e-09"):
        geto_barycenter(h64 * (1 + 1e-6), grid)
    # float32 histograms far from 1 are refused, naming the tolerance used
    with pytest.raises(ValueError, match="sum to 1 within"):
        geto_barycenter(h32 * np.float32(1.01), grid)
    with _w.catch_warnings():
        _w.simplefilter("error")
        geto_barycenter(h32, grid)  # no warning for a float32 input


def test_tiny_mass_warning_is_given_once_per_process(monkeypatch):
    import warnings as _w

    import neurips26.papers.geto_lp.geto as geto_mod
    from neurips26.papers.geto_lp import GridSpec, geto_barycenter

    monkeypatch.setattr(geto_mod, "_TINY_WARNED", False)
    grid = GridSpec((3, 3))
    h = np.full((2, 3, 3), 1.0)
    h[:, 0, 0] = 1e-12
    h /= h.sum(axis=(1, 2), keepdims=True)
    with _w.catch_warnings(record=True) as seen:
        _w.simplefilter("always")
        geto_barycenter(h, grid)
        geto_barycenter(h, grid)
    assert sum("histogram masses lie in" in str(w.message) for w in seen) == 1


def test_untruncated_tails_do_not_make_the_lp_infeasible():
    # Masses down to 1e-20 (Gaussian tails, floor 0): HiGHS's presolve calls this LP
    # infeasible; the barycenter LP is always feasible, so the solve is retried without it.
    mu, _ = synthetic_densities(12, 3, rng=np.random.default_rng(0), floor=0.0)
    assert mu[mu > 0].min() < 1e-15
    grid = GridSpec((12, 12), spacing=(1 / 11, 1 / 11))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # the tiny-mass warning
        res = geto_barycenter(mu, grid)
        whole = geto_barycenter(mu, grid, reduce_support=False)
    assert res.optimal and res.objective == pytest.approx(whole.objective, rel=1e-7)
    assert res.optimality_gap <= 1e-8
