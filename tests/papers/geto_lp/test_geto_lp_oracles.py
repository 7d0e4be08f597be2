"""Oracle tests for GETO-LP: the full LP, POT's LP barycenter, ot.emd2, closed forms."""

from __future__ import annotations

import numpy as np
import ot
import pytest
from scipy.spatial.distance import cdist

from neurips26.papers.geto_lp import (
    IPM_MIN_VARIABLES,
    GridSpec,
    build_geto_lp,
    full_lp_barycenter,
    geto_barycenter,
    geto_distance,
    grid_cost_matrix,
    lp_size,
    resolve_solver,
)


def _random_hists(rng, num, shape):
    h = rng.random((num, *shape)) + 0.05  # masses well above the solver tolerance
    return h / h.reshape(num, -1).sum(axis=1).reshape((num,) + (1,) * len(shape))


@pytest.mark.parametrize("solver", ["auto", "highs-ipm"])
@pytest.mark.parametrize("shape", [(7,), (4, 5), (3, 3, 3)])
def test_geto_equals_full_lp_and_pot(shape, solver):
    rng = np.random.default_rng(sum(shape))
    mu = _random_hists(rng, 3, shape)
    w = rng.dirichlet(np.ones(3))
    grid = GridSpec(shape, spacing=tuple(rng.uniform(0.5, 2.0, len(shape))))
    geto = geto_barycenter(mu, grid, weights=w, solver=solver)
    full = full_lp_barycenter(mu, grid, weights=w, solver=solver)
    _, log = ot.lp.barycenter(mu.reshape(3, -1).T, grid_cost_matrix(grid), weights=w,
                              solver="highs", log=True)
    assert geto.objective == pytest.approx(full.objective, rel=1e-7)
    assert geto.objective == pytest.approx(log.fun, rel=1e-7)
    assert geto.num_variables < full.num_variables or len(shape) == 1


def test_lp_cost_p1_equals_full_and_pot():
    rng = np.random.default_rng(5)
    shape = (4, 4)
    mu = _random_hists(rng, 2, shape)
    grid = GridSpec(shape, cost="lp", p=1.0)
    coords = grid.coordinates()
    cost = cdist(coords, coords, metric="cityblock")
    np.testing.assert_allclose(grid_cost_matrix(grid), cost)
    _, log = ot.lp.barycenter(mu.reshape(2, -1).T, cost, solver="highs", log=True)
    geto = geto_barycenter(mu, grid)
    assert geto.objective == pytest.approx(full_lp_barycenter(mu, grid).objective, rel=1e-7)
    assert geto.objective == pytest.approx(log.fun, rel=1e-7)


def test_d1_geto_is_the_full_lp():
    rng = np.random.default_rng(1)
    mu = _random_hists(rng, 2, (9,))
    grid = GridSpec((9,))
    geto, full = geto_barycenter(mu, grid), full_lp_barycenter(mu, grid)
    assert geto.num_variables == full.num_variables == 9 + 2 * 81
    assert geto.objective == pytest.approx(full.objective, rel=1e-12, abs=1e-14)


def test_single_input_is_its_own_barycenter():
    rng = np.random.default_rng(2)
    mu = _random_hists(rng, 1, (4, 3))
    res = geto_barycenter(mu, GridSpec((4, 3)))
    np.testing.assert_allclose(res.barycenter, mu[0], atol=1e-12)
    assert res.objective == pytest.approx(0.0, abs=1e-12)


def test_identical_inputs_give_themselves():
    rng = np.random.default_rng(3)
    mu = _random_hists(rng, 1, (3, 3, 2))
    res = geto_barycenter(np.concatenate([mu, mu]), GridSpec((3, 3, 2)))
    np.testing.assert_allclose(res.barycenter, mu[0], atol=1e-12)
    assert res.objective == pytest.approx(0.0, abs=1e-12)


def test_fixed_barycenter_distance_equals_emd2():
    rng = np.random.default_rng(4)
    shape = (5, 4)
    a, b = _random_hists(rng, 2, shape)
    grid = GridSpec(shape, spacing=(0.3, 0.7))
    cost = ot.dist(grid.coordinates(), grid.coordinates())  # squared Euclidean
    exact = ot.emd2(a.ravel(), b.ravel(), cost)
    res = geto_distance(a, b, grid)
    assert res.cost == pytest.approx(exact, abs=1e-9)
    # The same through the barycenter model with nu fixed to mu_1 and M = 2.
    model = build_geto_lp(np.stack([a, b]), grid, weights=[0.5, 0.5], fixed_barycenter=a)
    from scipy.optimize import linprog

    sol = linprog(model.c, A_eq=model.A_eq, b_eq=model.b_eq, bounds=model.bounds,
                  method="highs")
    assert sol.status == 0
    assert sol.fun == pytest.approx(0.5 * exact, abs=1e-9)  # W(a, a) = 0
    # The plan is a valid coupling of a and b with that cost.
    pi = res.plan.toarray()
    np.testing.assert_allclose(pi.sum(1), a.ravel(), atol=1e-12)
    np.testing.assert_allclose(pi.sum(0), b.ravel(), atol=1e-12)
    assert float((pi * cost).sum()) == pytest.approx(exact, abs=1e-9)


def test_two_diracs_meet_at_the_midpoint():
    mu = np.zeros((2, 9))
    mu[0, 1] = mu[1, 7] = 1.0
    res = geto_barycenter(mu, GridSpec((9,)))
    expected = np.zeros(9)
    expected[4] = 1.0
    np.testing.assert_allclose(res.barycenter, expected, atol=1e-12)
    assert res.objective == pytest.approx(9.0)  # 0.5 * 3^2 + 0.5 * 3^2
    mu2 = np.zeros((2, 5, 5))
    mu2[0, 0, 4] = mu2[1, 4, 0] = 1.0
    res2 = geto_barycenter(mu2, GridSpec((5, 5)))
    assert res2.barycenter[2, 2] == pytest.approx(1.0)


@pytest.mark.parametrize("solver", ["auto", "highs-ipm"])
@pytest.mark.parametrize("shape", [(6,), (4, 5), (3, 4, 2)])
def test_recovered_plans_have_right_marginals_and_cost(shape, solver):
    rng = np.random.default_rng(7)
    mu = _random_hists(rng, 3, shape)
    grid = GridSpec(shape)
    res = geto_barycenter(mu, grid, solver=solver)
    cost = grid_cost_matrix(grid)
    total = 0.0
    for m in range(3):
        pi = res.plan(m).toarray()
        assert pi.shape == (grid.num_points, grid.num_points)
        assert pi.min() >= 0
        np.testing.assert_allclose(pi.sum(1), res.barycenter.ravel(), atol=1e-9)
        np.testing.assert_allclose(pi.sum(0), mu[m].ravel(), atol=1e-9)
        assert res.plan_cost(m) == pytest.approx(float((pi * cost).sum()), abs=1e-12)
        # Each plan is optimal between nu and mu_m (the exactness of the recovery).
        exact = ot.emd2(res.barycenter.ravel(), mu[m].ravel(), cost)
        assert res.plan_cost(m) == pytest.approx(exact, abs=1e-9)
        total += res.weights[m] * res.plan_cost(m)
    assert total == pytest.approx(res.objective, abs=1e-9)


def test_layers_move_mass_along_their_axis_only():
    shape = (3, 4, 2)
    grid = GridSpec(shape)
    mu = np.full((2, *shape), 1 / 24)
    model = build_geto_lp(mu, grid)
    a = model.A_eq.tocsc()
    n, d = grid.num_points, grid.ndim
    for (m, k), (start, stop) in model.layout["blocks"].items():
        assert stop - start == n * shape[k]
        sub = a[:, start:stop].tocoo()
        assert np.all(np.bincount(sub.col, minlength=stop - start) == 2)
        src = sub.row[sub.data < 0]  # out of layer k's input nodes
        dst = sub.row[sub.data > 0]  # into layer k+1's nodes
        order_s, order_d = np.argsort(sub.col[sub.data < 0]), np.argsort(sub.col[sub.data > 0])
        src, dst = src[order_s], dst[order_d]
        base = m * (d + 1) * n
        assert np.all((src - base) // n == k) and np.all((dst - base) // n == k + 1)
        cs = np.unravel_index((src - base) % n, shape)
        cd = np.unravel_index((dst - base) % n, shape)
        for axis in range(d):
            if axis != k:
                np.testing.assert_array_equal(cs[axis], cd[axis])
        # the layer offers every target along its axis (n_k arcs per node)
        assert len(np.unique(np.stack([src, dst]), axis=1).T) == n * shape[k]


def test_mass_constraint_is_redundant():
    rng = np.random.default_rng(8)
    mu = _random_hists(rng, 3, (4, 4))
    grid = GridSpec((4, 4))
    plain = geto_barycenter(mu, grid)
    with_mass = geto_barycenter(mu, grid, add_mass_constraint=True)
    assert with_mass.num_constraints == plain.num_constraints + 1
    assert with_mass.objective == pytest.approx(plain.objective, rel=1e-9)
    assert plain.barycenter.sum() == pytest.approx(1.0, abs=1e-9)


def test_geto_beats_entropic_barycenter():
    rng = np.random.default_rng(9)
    mu = _random_hists(rng, 2, (6, 6)) ** 3
    mu /= mu.reshape(2, -1).sum(1)[:, None, None]
    grid = GridSpec((6, 6), spacing=(0.2, 0.2))
    from neurips26.papers.geto_lp import w2_to_inputs

    res = geto_barycenter(mu, grid)
    ent = ot.bregman.barycenter(mu.reshape(2, -1).T, grid_cost_matrix(grid), 1e-2,
                                method="sinkhorn_log", numItermax=2000)
    geto_val = w2_to_inputs(res.barycenter, mu, grid).mean()
    assert geto_val == pytest.approx(res.objective, abs=1e-9)
    assert w2_to_inputs(ent.reshape(6, 6), mu, grid).mean() >= geto_val - 1e-9


def test_auto_solver_uses_ipm_on_large_models_and_stays_exact():
    # 21 x 21, M = 3: 56,007 GETO variables, above IPM_MIN_VARIABLES, so "auto" is IPM
    # with crossover; it must give dual simplex's optimum to 1e-9 and valid optimal plans.
    rng = np.random.default_rng(3)
    shape = (21, 21)
    mu = _random_hists(rng, 3, shape)
    grid = GridSpec(shape, spacing=(0.05, 0.05))
    assert resolve_solver("auto", lp_size(shape, 3).num_variables) == "highs-ipm"
    auto = geto_barycenter(mu, grid)
    ds = geto_barycenter(mu, grid, solver="highs-ds")
    assert auto.solver == "highs-ipm" and ds.solver == "highs-ds"
    assert auto.objective == pytest.approx(ds.objective, rel=1e-9)
    cost = grid_cost_matrix(grid)
    total = 0.0
    for m in range(3):
        pi = auto.plan(m)
        np.testing.assert_allclose(np.asarray(pi.sum(1)).ravel(), auto.barycenter.ravel(),
                                   atol=1e-8)
        np.testing.assert_allclose(np.asarray(pi.sum(0)).ravel(), mu[m].ravel(), atol=1e-8)
        exact = ot.emd2(auto.barycenter.ravel() / auto.barycenter.sum(), mu[m].ravel(), cost)
        assert auto.plan_cost(m) == pytest.approx(exact, rel=1e-7)
        total += auto.weights[m] * auto.plan_cost(m)
    assert total == pytest.approx(auto.objective, rel=1e-9)


def test_resolve_solver():
    assert resolve_solver("auto", IPM_MIN_VARIABLES - 1) == "highs-ds"
    assert resolve_solver("auto", IPM_MIN_VARIABLES) == "highs-ipm"
    for name in ("highs", "highs-ds", "highs-ipm"):
        assert resolve_solver(name, 10**7) == name
    with pytest.raises(ValueError, match="solver"):
        resolve_solver("simplex", 10)
    with pytest.raises((ValueError, TypeError), match="num_variables"):
        resolve_solver("auto", -1)
