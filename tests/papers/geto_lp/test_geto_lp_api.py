"""API, shape and property tests for GETO-LP."""

from __future__ import annotations

import dataclasses

import numpy as np
import ot
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st

from neurips26.papers.geto_lp import (
    BarycenterResult,
    GETOBarycenter,
    GridSpec,
    LPModel,
    build_full_lp,
    build_geto_lp,
    full_lp_barycenter,
    geto_barycenter,
    grid_cost_matrix,
    lp_size,
    organ_densities,
    quota_recolor,
    rgb_histogram,
    synthetic_densities,
    w2_to_inputs,
)


@pytest.mark.parametrize("shape", [(5,), (3, 4), (2, 3, 4)])
@pytest.mark.parametrize("mass", [False, True])
def test_lp_size_matches_built_models(shape, mass):
    mu = np.full((3, *shape), 1 / np.prod(shape))
    grid = GridSpec(shape)
    for builder, form in ((build_geto_lp, "geto"), (build_full_lp, "full")):
        model = builder(mu, grid, add_mass_constraint=mass)
        size = lp_size(shape, 3, formulation=form, add_mass_constraint=mass)
        assert isinstance(model, LPModel)
        assert model.A_eq.shape == (size.num_constraints, size.num_variables)
        assert model.num_variables == size.num_variables == len(model.c)
        assert model.nnz == size.nnz
        assert model.b_eq.shape == (size.num_constraints,)
    n = int(np.prod(shape))
    assert lp_size(shape, 3).num_variables == n + 3 * n * sum(shape)
    assert lp_size(shape, 3, formulation="full").num_variables == n + 3 * n * n


def test_cost_matrix_matches_pot_dist():
    grid = GridSpec((3, 4), spacing=(0.5, 2.0))
    coords = grid.coordinates()
    assert coords.shape == (12, 2)
    np.testing.assert_allclose(grid_cost_matrix(grid), ot.dist(coords, coords), atol=1e-12)
    grid3 = GridSpec((2, 3, 2), cost="lp", p=3.0)
    c3 = grid3.coordinates()
    expected = (np.abs(c3[:, None, :] - c3[None, :, :]) ** 3).sum(-1)
    np.testing.assert_allclose(grid_cost_matrix(grid3), expected)


def test_result_is_frozen_and_shaped():
    mu = np.full((2, 3, 4), 1 / 12)
    res = geto_barycenter(mu, GridSpec((3, 4)))
    assert isinstance(res, BarycenterResult)
    assert res.barycenter.shape == (3, 4)
    assert res.optimal and res.status == "optimal" and res.formulation == "geto"
    assert res.num_inputs == 2
    assert isinstance(res.plan(1), sp.csr_matrix)
    with pytest.raises(dataclasses.FrozenInstanceError):
        res.objective = 0.0  # type: ignore[misc]
    with pytest.raises(IndexError, match="input index"):
        res.plan(2)
    full = full_lp_barycenter(mu, GridSpec((3, 4)))
    assert full.formulation == "full" and full.plan(0).shape == (12, 12)


def test_estimator_wrapper():
    mu = np.zeros((2, 3, 3))
    mu[0, 0, 0] = mu[1, 2, 2] = 1.0
    est = GETOBarycenter(grid=GridSpec((3, 3)), weights=[0.5, 0.5])
    with pytest.raises(RuntimeError, match="fit"):
        est.plan(0)
    assert est.fit(mu) is est
    assert est.barycenter_[1, 1] == pytest.approx(1.0)
    assert est.objective_ == pytest.approx(2.0)  # 0.5 * (1 + 1) * 2
    assert est.plan(0).shape == (9, 9)


def test_weights_pull_the_barycenter():
    mu = np.zeros((2, 11))
    mu[0, 0] = mu[1, 10] = 1.0
    res = geto_barycenter(mu, GridSpec((11,)), weights=[0.8, 0.2])
    assert res.barycenter[2] == pytest.approx(1.0)  # 0.8 * 0 + 0.2 * 10


@settings(max_examples=8, deadline=None)
@given(
    shape=st.lists(st.integers(1, 4), min_size=1, max_size=3).map(tuple),
    num=st.integers(1, 3),
    seed=st.integers(0, 10_000),
)
def test_property_geto_matches_full_lp(shape, num, seed):
    rng = np.random.default_rng(seed)
    mu = rng.random((num, *shape)) + 0.05
    mu /= mu.reshape(num, -1).sum(1).reshape((num,) + (1,) * len(shape))
    grid = GridSpec(shape)
    geto, full = geto_barycenter(mu, grid), full_lp_barycenter(mu, grid)
    assert geto.objective == pytest.approx(full.objective, rel=1e-7, abs=1e-12)
    assert geto.barycenter.sum() == pytest.approx(1.0, abs=1e-9)
    assert np.all(geto.barycenter >= 0)
    # the barycenter objective is the weighted exact distance to the inputs
    vals = w2_to_inputs(geto.barycenter, mu, grid)
    assert float(geto.weights @ vals) == pytest.approx(geto.objective, abs=1e-9)


def test_translation_equivariance_1d():
    """Shifting every input by s keeps the optimum; the shifted barycenter is optimal.

    (Fixed-support barycenters need not be unique, so only optimality is compared.)
    """
    rng = np.random.default_rng(11)
    mu = np.zeros((2, 14))
    mu[:, 1:7] = rng.random((2, 6)) + 0.1
    mu /= mu.sum(1, keepdims=True)
    grid = GridSpec((14,))
    a = geto_barycenter(mu, grid)
    b = geto_barycenter(np.roll(mu, 5, axis=1), grid)
    assert b.objective == pytest.approx(a.objective, rel=1e-9)
    shifted = np.roll(mu, 5, axis=1)
    value = float(b.weights @ w2_to_inputs(np.roll(a.barycenter, 5), shifted, grid))
    assert value == pytest.approx(b.objective, rel=1e-9)


def test_quota_recolor_preserves_counts_and_matches_rows():
    rng = np.random.default_rng(0)
    pixels = rng.integers(0, 4, size=1000)
    counts = np.bincount(pixels, minlength=5)
    mu = counts / counts.sum()
    nu = rng.dirichlet(np.ones(5))
    plan = sp.csr_matrix(ot.emd(nu, mu, rng.random((5, 5))))
    new = quota_recolor(pixels, plan, rng=rng)
    assert new.shape == pixels.shape
    hist = np.bincount(new, minlength=5) / new.size
    assert np.abs(hist - nu).sum() <= plan.nnz / new.size + 1e-12
    # every pixel of a bin goes to a target that the plan allows
    dense = plan.toarray()
    assert np.all(dense[new, pixels] > 0)


def test_data_generators_are_normalised_and_deterministic():
    h1, kinds = synthetic_densities(12, 4, rng=np.random.default_rng(0))
    h2, _ = synthetic_densities(12, 4, rng=np.random.default_rng(0))
    assert h1.shape == (4, 12, 12) and len(kinds) == 4
    np.testing.assert_array_equal(h1, h2)
    np.testing.assert_allclose(h1.sum((1, 2)), 1.0)
    for h in h1:  # masses under 1e-5 of each peak are zeroed
        assert h[h > 0].min() >= 1e-5 * h.max() * 0.99
    org = organ_densities(10, 3, rng=np.random.default_rng(1))
    assert org.shape == (3, 10, 10)
    np.testing.assert_allclose(org.sum((1, 2)), 1.0)
    img = np.random.default_rng(2).integers(0, 256, size=(6, 5, 3), dtype=np.uint8)
    hist, flat = rgb_histogram(img, 4)
    assert hist.shape == (4, 4, 4) and flat.shape == (30,)
    assert hist.sum() == pytest.approx(1.0)
    np.testing.assert_allclose(np.bincount(flat, minlength=64) / 30, hist.ravel())
