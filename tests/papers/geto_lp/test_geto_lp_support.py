"""The exact support reduction: the box holds every optimal barycenter, and the optimum of
the reduced LPs is that of the whole formulations (and of POT's LP barycenter)."""

from __future__ import annotations

import itertools

import numpy as np
import ot
import pytest

from neurips26.papers.geto_lp import (
    GridSpec,
    build_full_lp,
    build_geto_lp,
    full_lp_barycenter,
    geto_barycenter,
    geto_distance,
    grid_cost_matrix,
    support_box,
)


def _sparse_hists(rng, num, shape, keep=0.35):
    """Histograms on random sub-boxes with holes: supports far from the whole grid."""
    out = np.zeros((num, *shape))
    for m in range(num):
        lo = [rng.integers(0, n) for n in shape]
        hi = [rng.integers(a, n) + 1 for a, n in zip(lo, shape, strict=True)]
        sl = tuple(slice(a, b) for a, b in zip(lo, hi, strict=True))
        block = rng.random(out[m][sl].shape) + 0.05
        block *= rng.random(block.shape) < keep
        block.flat[rng.integers(block.size)] = 1.0  # never empty
        out[m][sl] = block
    return out / out.reshape(num, -1).sum(axis=1).reshape((num,) + (1,) * len(shape))


GRIDS = [
    GridSpec((9,)),
    GridSpec((5, 6), spacing=(0.7, 1.3)),
    GridSpec((5, 5), cost="lp", p=1.0),
    GridSpec((5, 5), cost="lp", p=0.5),
    GridSpec((6, 5), cost="lp", p=3.0),
    GridSpec((3, 4, 3)),
]


@pytest.mark.parametrize("grid", GRIDS, ids=lambda g: f"{g.shape}-{g.cost}-{g.p}")
@pytest.mark.parametrize("seed", range(4))
def test_reduced_lps_keep_the_optimum_and_the_box_holds_the_barycenter(grid, seed):
    rng = np.random.default_rng(seed)
    mu = _sparse_hists(rng, 3, grid.shape)
    w = rng.dirichlet(np.ones(3))
    whole = geto_barycenter(mu, grid, weights=w, reduce_support=False)
    reduced = geto_barycenter(mu, grid, weights=w)
    full = full_lp_barycenter(mu, grid, weights=w)
    assert reduced.num_variables < whole.num_variables
    assert reduced.objective == pytest.approx(whole.objective, rel=1e-9, abs=1e-12)
    assert full.objective == pytest.approx(whole.objective, rel=1e-9, abs=1e-12)
    assert reduced.optimality_gap <= 1e-9
    # The unreduced LP is free to put the barycenter anywhere: every optimal one lies in
    # the box (the theorem behind the reduction), so HiGHS's does too.
    box = support_box(mu, grid, weights=w)
    idx = np.argwhere(whole.barycenter > 1e-10)
    for k, (lo, hi) in enumerate(box):
        assert idx[:, k].min() >= lo and idx[:, k].max() <= hi
    # The reduced plans keep their marginals and cost.
    for m in range(3):
        pi = reduced.plan(m)
        np.testing.assert_allclose(np.asarray(pi.sum(axis=1)).ravel(),
                                   reduced.barycenter.ravel(), atol=1e-9)
        np.testing.assert_allclose(np.asarray(pi.sum(axis=0)).ravel(), mu[m].ravel(), atol=1e-9)
        np.testing.assert_allclose(np.asarray(full.plan(m).sum(axis=0)).ravel(),
                                   mu[m].ravel(), atol=1e-9)
    cost = sum(w[m] * reduced.plan_cost(m) for m in range(3))
    assert cost == pytest.approx(reduced.objective, rel=1e-8)


def test_reduced_lp_matches_pot_on_a_2d_instance():
    rng = np.random.default_rng(7)
    grid = GridSpec((7, 7), spacing=(1 / 6, 1 / 6))
    mu = _sparse_hists(rng, 3, grid.shape)
    res = geto_barycenter(mu, grid)
    _, log = ot.lp.barycenter(mu.reshape(3, -1).T, grid_cost_matrix(grid), log=True)
    assert res.objective == pytest.approx(log.fun, rel=1e-8)


def test_box_of_two_diracs_is_the_weighted_mean():
    grid = GridSpec((9,))
    mu = np.zeros((2, 9))
    mu[0, 0] = mu[1, 8] = 1.0
    assert support_box(mu, grid) == ((4, 4),)
    assert support_box(mu, grid, weights=[0.25, 0.75]) == ((6, 6),)
    # A mean halfway between two points keeps both (either rounding may be optimal).
    assert support_box(mu, grid, weights=[0.5625, 0.4375]) == ((3, 4),)
    # p < 1: the cost is concave in |t|, the barycenter sits on the heavier input, and
    # the box is the inputs' hull.
    concave = GridSpec((9,), cost="lp", p=0.5)
    assert support_box(mu, concave, weights=[0.25, 0.75]) == ((0, 8),)
    assert geto_barycenter(mu, concave, weights=[0.25, 0.75]).barycenter[8] == pytest.approx(1)


def test_box_is_nondecreasing_in_the_inputs_and_exhaustive_on_a_tiny_grid():
    """Brute force on a 1-D grid: for every pair of support points the grid minimisers of
    the weighted cost lie in the box (the argument, checked exhaustively)."""
    grid = GridSpec((7,), cost="lp", p=1.5)
    rng = np.random.default_rng(3)
    for _ in range(20):
        mu = _sparse_hists(rng, 2, grid.shape, keep=0.5)
        w = rng.dirichlet(np.ones(2))
        (lo, hi), = support_box(mu, grid, weights=w)
        z = np.arange(7)
        for y0, y1 in itertools.product(np.flatnonzero(mu[0]), np.flatnonzero(mu[1])):
            g = w[0] * grid.axis_cost(z - y0, 0) + w[1] * grid.axis_cost(z - y1, 0)
            best = np.flatnonzero(g <= g.min() + 1e-12)
            assert lo <= best.min() and best.max() <= hi


def test_fixed_barycenter_distance_is_unchanged_by_the_reduction():
    rng = np.random.default_rng(5)
    grid = GridSpec((5, 6))
    a, b = _sparse_hists(rng, 2, grid.shape)
    exact = ot.emd2(a.ravel(), b.ravel(), grid_cost_matrix(grid))
    assert geto_distance(a, b, grid).cost == pytest.approx(exact, rel=1e-9)
    reduced = build_geto_lp(b[None], grid, fixed_barycenter=a)
    whole = build_geto_lp(b[None], grid, fixed_barycenter=a, reduce_support=False)
    assert reduced.num_variables < whole.num_variables


def test_whole_formulations_have_the_formula_sizes():
    grid = GridSpec((4, 5))
    mu = _sparse_hists(np.random.default_rng(1), 2, grid.shape)
    n = grid.num_points
    geto = build_geto_lp(mu, grid, reduce_support=False)
    full = build_full_lp(mu, grid, reduce_support=False)
    assert geto.num_variables == n + 2 * n * 9 and geto.num_constraints == 2 * 3 * n
    assert full.num_variables == n + 2 * n * n and full.num_constraints == 2 * 2 * n
    small = build_geto_lp(mu, grid)
    assert small.num_variables < geto.num_variables
    assert small.num_constraints < geto.num_constraints  # empty rows are dropped


@pytest.mark.parametrize("bad", ["yes", 1, None])
def test_reduce_support_must_be_a_bool(bad):
    mu = np.full((2, 3), 1 / 3)
    with pytest.raises(TypeError, match="reduce_support"):
        build_geto_lp(mu, GridSpec((3,)), reduce_support=bad)
    with pytest.raises(TypeError, match="reduce_support"):
        build_full_lp(mu, GridSpec((3,)), reduce_support=bad)
