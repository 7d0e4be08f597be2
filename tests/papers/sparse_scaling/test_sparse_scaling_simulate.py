"""The fitted student: interpolation, least squares, the unseen-mass bound, the grid."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.linear_model import LinearRegression

from neurips26.papers.sparse_scaling import (
    FitResult,
    ScalingGrid,
    SparseFeatureModel,
    activation_probs,
    fit_random_features,
    min_norm_readout,
    population_loss,
    random_features,
    sample_inputs,
    sample_teacher,
    scaling_grid,
)


def _reference_grid(model, p_grid, t_grid, seed, s):
    """Independent re-implementation with the same random draws (pinv, no shortcuts)."""
    rng = np.random.default_rng([seed, s])
    d = model.dim
    w = rng.standard_normal(d)
    f = rng.standard_normal((max(p_grid), d)) / np.sqrt(d)
    x = sample_inputs(model, max(t_grid), rng=rng)
    y = x @ w
    p = activation_probs(model)
    out = np.empty((len(p_grid), len(t_grid)))
    for i, pp in enumerate(p_grid):
        for j, t in enumerate(t_grid):
            theta = np.linalg.pinv(x[:t] @ f[:pp].T, rcond=1e-13) @ y[:t]
            r = w - f[:pp].T @ theta
            out[i, j] = r @ (p * r)
    return out


@pytest.mark.parametrize("dense", [False, True])
def test_grid_matches_independent_pinv(dense):
    # covers the reduced s-dim solve (sparse), the Cholesky paths and SVD least squares
    m = SparseFeatureModel(dim=120, alpha=1.0, p0=0.8, dense=dense)
    p_grid, t_grid = [5, 12, 30, 60, 120], [10, 25, 60]
    g = scaling_grid(m, num_params_grid=p_grid, num_samples_grid=t_grid, num_seeds=2, seed=4)
    assert isinstance(g, ScalingGrid) and g.loss.shape == (2, 5, 3)
    for s in range(2):
        ref = _reference_grid(m, p_grid, t_grid, 4, s)
        np.testing.assert_allclose(g.loss[s], ref, rtol=1e-6)


def test_relu_grid_matches_independent_pinv():
    # nested T reuse the rows of one feature matrix; check against per-(P, T) pinv fits
    m = SparseFeatureModel(dim=40, alpha=1.0, p0=0.8)
    p_grid, t_grid, n_test = [4, 20, 60], [10, 25], 300
    g = scaling_grid(
        m,
        num_params_grid=p_grid,
        num_samples_grid=t_grid,
        num_seeds=1,
        activation="relu",
        num_test=n_test,
        seed=3,
    )
    rng = np.random.default_rng([3, 0])
    w = sample_teacher(m, rng=rng)
    fmap = random_features(m, max(p_grid), activation="relu", rng=rng)
    x = sample_inputs(m, max(t_grid), rng=rng)
    x_test = sample_inputs(m, n_test, rng=rng)
    y, y_test = x @ w, x_test @ w
    for i, pp in enumerate(p_grid):
        f, c = fmap.weights[:pp], fmap.bias[:pp]
        for j, t in enumerate(t_grid):
            theta = np.linalg.pinv(np.maximum(x[:t] @ f.T + c, 0), rcond=1e-13) @ y[:t]
            ref = np.mean((np.maximum(x_test @ f.T + c, 0) @ theta - y_test) ** 2)
            np.testing.assert_allclose(g.loss[0, i, j], ref, rtol=1e-6)


def test_min_norm_interpolates_and_matches_sklearn():
    # spec oracle: P >= rank interpolates; P < rank equals sklearn OLS (no intercept)
    m = SparseFeatureModel(dim=80, alpha=1.0, p0=0.9, dense=True)
    rng = np.random.default_rng(0)
    w = sample_teacher(m, rng=rng)
    x = sample_inputs(m, 30, rng=rng)
    y = x @ w
    over = random_features(m, 60, rng=rng)(x)  # (30, 60): rank 30
    theta = min_norm_readout(over, y)
    assert np.mean((over @ theta - y) ** 2) < 1e-20 * np.mean(y**2)
    # min norm: theta lies in the row space of Phi
    np.testing.assert_allclose(theta, over.T @ np.linalg.lstsq(over @ over.T, y, rcond=None)[0])
    under = random_features(m, 10, rng=rng)(x)  # (30, 10)
    ref = LinearRegression(fit_intercept=False).fit(under, y).coef_
    np.testing.assert_allclose(min_norm_readout(under, y), ref, rtol=1e-8, atol=1e-10)


def test_ridge_readout_closed_form():
    rng = np.random.default_rng(1)
    phi, y = rng.standard_normal((20, 8)), rng.standard_normal(20)
    lam = 0.3
    ref = np.linalg.solve(phi.T @ phi / 20 + lam * np.eye(8), phi.T @ y / 20)
    np.testing.assert_allclose(min_norm_readout(phi, y, ridge=lam), ref, rtol=1e-10)


def test_fit_random_features_result():
    m = SparseFeatureModel(dim=100, alpha=1.0)
    r = fit_random_features(m, num_params=50, num_samples=40, rng=np.random.default_rng(0))
    assert isinstance(r, FitResult)
    assert r.data_rank <= min(40, r.seen_coords) and r.rank == min(50, r.data_rank)
    assert r.train_loss < 1e-20 + 1e-12 * r.test_loss  # overparameterized: interpolates
    assert r.test_loss >= 0 and r.unseen_mass >= 0
    relu = fit_random_features(
        m,
        num_params=150,
        num_samples=40,
        activation="relu",
        num_test=500,
        rng=np.random.default_rng(0),
    )
    assert relu.test_loss > 0 and relu.rank <= 40


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 10_000), t=st.integers(1, 40), p=st.integers(1, 60))
def test_unseen_mass_is_a_lower_bound(seed, t, p):
    # The student cannot depend on the teacher's unseen coordinates: flipping their sign
    # leaves the fit unchanged, and the two losses average to at least the unseen mass.
    m = SparseFeatureModel(dim=60, alpha=1.0, p0=0.5)
    rng = np.random.default_rng(seed)
    prob = activation_probs(m)
    w = sample_teacher(m, rng=rng)
    x = sample_inputs(m, t, rng=rng)
    f = random_features(m, p, rng=rng)
    unseen = ~np.any(x != 0, axis=0)
    w_flip = np.where(unseen, -w, w)
    th1 = min_norm_readout(f(x), x @ w)
    th2 = min_norm_readout(f(x), x @ w_flip)
    np.testing.assert_allclose(th1, th2, atol=1e-12)
    w_hat = f.weights.T @ th1
    u = np.sum(w[unseen] ** 2 * prob[unseen])
    l1, l2 = population_loss(prob, w, w_hat), population_loss(prob, w_flip, w_hat)
    assert 0.5 * (l1 + l2) >= u * (1 - 1e-12)


def test_grid_is_deterministic_and_nested():
    m = SparseFeatureModel(dim=64)
    kw = dict(num_params_grid=[4, 16, 64], num_samples_grid=[8, 32], num_seeds=2, seed=7)
    a, b = scaling_grid(m, **kw), scaling_grid(m, **kw)
    np.testing.assert_array_equal(a.loss, b.loss)
    assert a.mean_loss.shape == (3, 2)
    assert np.all(np.diff(a.seen_coords, axis=1) >= 0)  # nested data: seen set only grows
    assert np.all(np.diff(a.unseen_mass, axis=1) <= 0)


def test_simulate_bad_input():
    m = SparseFeatureModel(dim=16)
    with pytest.raises(ValueError, match="strictly increasing"):
        scaling_grid(m, num_params_grid=[4, 4], num_samples_grid=[8])
    with pytest.raises(ValueError, match="strictly increasing"):
        scaling_grid(m, num_params_grid=[4], num_samples_grid=[8, 2])
    with pytest.raises(ValueError, match="plain linear regression"):
        scaling_grid(m, num_params_grid=[4, 32], num_samples_grid=[8])
    with pytest.raises(TypeError, match="integers"):
        scaling_grid(m, num_params_grid=[4.5], num_samples_grid=[8])
    with pytest.raises(ValueError, match="num_samples"):
        fit_random_features(m, num_params=4, num_samples=0, rng=np.random.default_rng(0))
    with pytest.raises(ValueError, match="plain linear regression"):
        fit_random_features(m, num_params=17, num_samples=4, rng=np.random.default_rng(0))
    with pytest.raises(ValueError, match="ridge"):
        min_norm_readout(np.ones((3, 2)), np.ones(3), ridge=-1.0)
    with pytest.raises(ValueError, match="disagree"):
        min_norm_readout(np.ones((3, 2)), np.ones(4))
    with pytest.raises(ValueError, match="NaN"):
        min_norm_readout([[np.nan, 1.0]], [1.0])
