"""Oracles for the constraint set W and the constrained hinge program."""

import warnings

import cvxpy as cp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from threadpoolctl import threadpool_limits

from neurips26.papers.sparse_halfspace import (
    clean_error,
    hinge_objective,
    make_margin_halfspace,
    maximize_linear_l1_l2,
    project_l1_l2,
    sparse_hinge,
)


def _cvxpy_projection(v, r1):
    w = cp.Variable(v.size)
    prob = cp.Problem(cp.Minimize(cp.sum_squares(w - v)), [cp.norm(w, 2) <= 1, cp.norm(w, 1) <= r1])
    prob.solve(solver="CLARABEL", tol_gap_abs=1e-10, tol_gap_rel=1e-10, tol_feas=1e-10)
    return w.value


@settings(max_examples=25, deadline=None)
@given(
    seed=st.integers(0, 10_000),
    d=st.integers(2, 12),
    scale=st.floats(0.05, 10.0),
    s=st.integers(1, 12),
)
def test_projection_norms_idempotent_and_matches_cvxpy(seed, d, scale, s):
    s = min(s, d)
    v = np.random.default_rng(seed).standard_normal(d) * scale
    r1 = np.sqrt(s)
    w = project_l1_l2(v, radius_l1=r1)
    assert np.linalg.norm(w) <= 1 + 1e-9
    assert np.abs(w).sum() <= r1 + 1e-9
    np.testing.assert_allclose(project_l1_l2(w, radius_l1=r1), w, atol=1e-10)
    # exact optimality certificate: <v - w, z - w> <= 0 for every z in W (max via the LMO)
    g = v - w
    z = maximize_linear_l1_l2(g, radius_l1=r1)
    assert g @ z - g @ w <= 1e-9 * max(1.0, np.abs(g).sum())
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # "may be inaccurate" at tight tolerances
        ref = _cvxpy_projection(v, r1)
    np.testing.assert_allclose(w, ref, atol=1e-5)  # Clarabel's own accuracy is ~1e-6


def test_projection_inside_set_is_identity():
    v = np.array([0.3, -0.2, 0.1])
    np.testing.assert_array_equal(project_l1_l2(v, radius_l1=1.0), v)


@pytest.mark.parametrize("seed", range(8))
def test_linear_maximiser_matches_cvxpy(seed):
    rng = np.random.default_rng(seed)
    d = int(rng.integers(3, 25))
    g = rng.standard_normal(d) * rng.uniform(0.1, 5)
    r1 = float(rng.uniform(1.0, np.sqrt(d)))
    w = maximize_linear_l1_l2(g, radius_l1=r1)
    x = cp.Variable(d)
    prob = cp.Problem(cp.Maximize(g @ x), [cp.norm(x, 2) <= 1, cp.norm(x, 1) <= r1])
    prob.solve(solver="CLARABEL")
    assert abs(g @ w - prob.value) <= 1e-6 * max(1.0, abs(prob.value))
    assert np.abs(w).sum() <= r1 + 1e-8 and np.linalg.norm(w) <= 1 + 1e-9


def test_linear_maximiser_with_ties_stays_in_w():
    g = np.array([1.0, -1.0, 1.0, 1.0, 0.2])
    w = maximize_linear_l1_l2(g, radius_l1=1.5)
    assert np.abs(w).sum() <= 1.5 + 1e-12 and np.linalg.norm(w) <= 1
    assert g @ w == pytest.approx(1.5)  # = r max|g|, the upper bound


def _projected_subgradient(X, y, q, tau, r1, num_iter=4000):
    """Independent solver: projected subgradient with step 0.5/sqrt(t), best iterate."""
    w = np.zeros(X.shape[1])
    best, best_w = np.inf, w
    for t in range(1, num_iter + 1):
        m = y * (X @ w) / tau
        f = q @ np.maximum(0.0, 1.0 - m)
        if f < best:
            best, best_w = f, w
        g = -(X.T @ (q * y * (m < 1))) / tau
        w = project_l1_l2(w - 0.5 / np.sqrt(t) * g, radius_l1=r1)
    return best_w, best


def test_sparse_hinge_matches_projected_subgradient():
    rng = np.random.default_rng(0)
    X = rng.standard_normal((40, 6))
    y = np.sign(X[:, 0] + 0.8 * rng.standard_normal(40))
    q = rng.uniform(0.5, 1.5, 40)
    q /= q.sum()
    w = sparse_hinge(X, y, sparsity=2, margin=0.3, sample_weight=q)
    f = hinge_objective(w, X, y, margin=0.3, sample_weight=q)
    with threadpool_limits(1):
        _, f_ref = _projected_subgradient(X, y, q, 0.3, np.sqrt(2))
    assert np.linalg.norm(w) <= 1 + 1e-6 and np.abs(w).sum() <= np.sqrt(2) + 1e-6
    assert f <= f_ref + 1e-6  # the conic solver is at least as good ...
    assert f_ref - f <= 1e-3  # ... and the independent solver gets within 1e-3


def test_sparse_hinge_none_is_l2_ball_and_weights_matter():
    rng = np.random.default_rng(1)
    X = rng.standard_normal((50, 8))
    y = np.sign(X @ rng.standard_normal(8))
    w = sparse_hinge(X, y, sparsity=None, margin=1.0)
    assert np.linalg.norm(w) <= 1 + 1e-6
    assert np.abs(w).sum() > 1.2  # the L1 bound sqrt(1) = 1 would be violated
    q = np.zeros(50)
    q[:10] = 0.1
    w_sub = sparse_hinge(X[:10], y[:10], sparsity=3, margin=1.0)
    w_q = sparse_hinge(X, y, sparsity=3, margin=1.0, sample_weight=q)
    np.testing.assert_allclose(w_q, w_sub, atol=1e-5)  # zero weight == row removed


@pytest.mark.parametrize("seed", range(3))
def test_noiseless_margin_separates_training_set(seed):
    data = make_margin_halfspace(150, 30, 3, margin=0.1, seed=seed)
    w = sparse_hinge(data.X, data.y, sparsity=3, margin=0.1)
    # w* is in W with zero loss, so the minimiser has zero hinge loss: margin >= gamma
    assert hinge_objective(w, data.X, data.y, margin=0.1) <= 1e-5
    assert np.all(data.y * (data.X @ w) > 0)


@pytest.mark.parametrize("seed", range(4))
def test_support_recovered_for_large_n(seed):
    data = make_margin_halfspace(400, 100, 3, margin=0.1, seed=seed)
    w = sparse_hinge(data.X, data.y, sparsity=3, margin=1.0)
    top = set(np.argsort(-np.abs(w))[:3].tolist())
    assert top == set(np.flatnonzero(data.w_star).tolist())
    assert clean_error(w, data.w_star, margin=0.1) < 0.05


def test_sparse_hinge_bad_input():
    X = np.random.default_rng(0).standard_normal((10, 4))
    y = np.ones(10)
    with pytest.raises(ValueError, match="sparsity s must satisfy"):
        sparse_hinge(X, y, sparsity=5, margin=1.0)
    with pytest.raises(ValueError, match="margin must be"):
        sparse_hinge(X, y, sparsity=2, margin=0.0)
    with pytest.raises(ValueError, match="sample_weight must have shape"):
        sparse_hinge(X, y, sparsity=2, margin=1.0, sample_weight=np.ones(3))
    with pytest.raises(ValueError, match="nonnegative"):
        sparse_hinge(X, y, sparsity=2, margin=1.0, sample_weight=-np.ones(10))
    with pytest.raises(ValueError, match="mismatched lengths"):
        sparse_hinge(X, y[:5], sparsity=2, margin=1.0)
