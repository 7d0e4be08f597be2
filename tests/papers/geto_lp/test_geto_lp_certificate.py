"""Issue 13: the optimality certificate, exactness against POT at its default solver, and
the benchmark comparing every method at its best setting."""

from __future__ import annotations

import importlib.util
import pathlib

import numpy as np
import ot
import pytest

from neurips26.papers.geto_lp import (
    GridSpec,
    build_full_lp,
    build_geto_lp,
    dual_certificate,
    full_lp_barycenter,
    geto_barycenter,
    grid_cost_matrix,
)

ROOT = pathlib.Path(__file__).resolve().parents[3]


def _random_hists(rng, num, shape):
    h = rng.random((num, *shape)) + 0.05
    return h / h.reshape(num, -1).sum(axis=1).reshape((num,) + (1,) * len(shape))


@pytest.mark.parametrize("solver", ["highs-ds", "highs-ipm"])
@pytest.mark.parametrize("shape", [(6,), (4, 5), (3, 3, 2)])
def test_certificate_proves_optimality_and_matches_pot_to_1e9(shape, solver):
    rng = np.random.default_rng(len(shape) + 7)
    mu = _random_hists(rng, 3, shape)
    grid = GridSpec(shape, spacing=tuple(rng.uniform(0.5, 2.0, len(shape))))
    res = geto_barycenter(mu, grid, solver=solver)
    # POT at its own default solver (interior point), the classical full LP
    _, log = ot.lp.barycenter(mu.reshape(3, -1).T, grid_cost_matrix(grid), log=True)
    assert res.objective == pytest.approx(log.fun, rel=1e-9)
    # a valid lower bound on the optimum, tight at HiGHS's optimal duals
    assert res.dual_bound <= log.fun * (1 + 1e-12) + 1e-15
    assert 0 <= res.optimality_gap + 1e-14 and res.optimality_gap <= 1e-9
    assert res.primal_residual <= 1e-9
    full = full_lp_barycenter(mu, grid, solver=solver)
    assert full.optimality_gap <= 1e-9 and full.dual_bound <= log.fun * (1 + 1e-12) + 1e-15


def test_certificate_is_a_lower_bound_for_any_duals():
    rng = np.random.default_rng(3)
    mu = _random_hists(rng, 2, (4, 4))
    grid = GridSpec((4, 4))
    res = geto_barycenter(mu, grid)
    for builder in (build_geto_lp, build_full_lp):
        model = builder(mu, grid)
        x = np.zeros(model.num_variables)
        for scale in (1e-3, 1.0, 10.0):
            y = rng.normal(scale=scale, size=model.num_constraints)
            bound, residual = dual_certificate(model, x, y)
            assert bound <= res.objective + 1e-12
            assert residual == pytest.approx(np.abs(model.b_eq).max())


def test_certificate_with_fixed_barycenter():
    rng = np.random.default_rng(4)
    mu = _random_hists(rng, 2, (3, 4))
    grid = GridSpec((3, 4))
    model = build_geto_lp(mu[1:], grid, fixed_barycenter=mu[0])
    value = ot.emd2(mu[0].ravel(), mu[1].ravel(), grid_cost_matrix(grid))
    bound, _ = dual_certificate(model, np.zeros(model.num_variables),
                                rng.normal(size=model.num_constraints))
    assert bound <= value + 1e-12


def test_incomplete_solve_has_no_certificate():
    mu = _random_hists(np.random.default_rng(5), 3, (12, 12))
    res = geto_barycenter(mu, GridSpec((12, 12)), solver="highs-ds", time_limit=1e-4,
                          allow_incomplete=True)
    if not res.optimal:
        assert np.isnan(res.dual_bound) and np.isnan(res.optimality_gap)


def _load_benchmark():
    path = ROOT / "benchmarks" / "geto_lp.py"
    spec = importlib.util.spec_from_file_location("geto_lp_bench", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_benchmark_runs_each_method_at_its_best_and_prints_the_frontier(capsys):
    bench = _load_benchmark()
    src = (ROOT / "benchmarks" / "geto_lp.py").read_text()
    assert 'solver="highs-ds"' not in src.replace('"highs-ds" if method == "geto_ds"', "")
    results = bench.main(["--sizes", "6", "--num-inputs", "2", "--time-limit", "60"])
    out = capsys.readouterr().out
    assert "53^2" in out and "Time-vs-gap frontier" in out and "Largest grid" in out
    assert results[(6, "pot")]["solver"] == "POT default"
    assert results[(6, "geto")]["solver"] == "highs-ds"  # 'auto' on a small model
    geto, pot = results[(6, "geto")], results[(6, "pot")]
    assert geto["objective"] == pytest.approx(pot["objective"], rel=1e-9)
    # the whole formulation and the reduced full LP reach the same optimum
    for method in ("geto_whole", "full"):
        assert results[(6, method)]["objective"] == pytest.approx(pot["objective"], rel=1e-9)
    assert results[(6, "geto_whole")]["vars"] > geto["vars"]
    for name, _, _ in bench.ENTROPIC:  # entropic: evaluated exactly, never below the LP
        assert results[(6, name)].get("gap_pct", 0.0) >= -1e-7
    assert "exact to 1e-09 relative against POT" in out
