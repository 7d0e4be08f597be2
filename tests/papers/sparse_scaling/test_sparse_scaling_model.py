"""The data model, the features and the exact population loss."""

import numpy as np
import pytest

from neurips26.papers.sparse_scaling import (
    SparseFeatureModel,
    activation_probs,
    population_loss,
    random_features,
    sample_inputs,
    sample_teacher,
)


def test_activation_probs_formula_and_cap():
    m = SparseFeatureModel(dim=5, alpha=0.5, p0=1.0)
    i = np.arange(1, 6)
    np.testing.assert_allclose(activation_probs(m), np.minimum(1, i**-1.5), rtol=1e-15)
    assert activation_probs(m)[0] == 1.0


def test_sample_shapes_and_sparsity():
    m = SparseFeatureModel(dim=32, alpha=1.0, p0=0.5)
    x = sample_inputs(m, 4000, rng=np.random.default_rng(0))
    assert x.shape == (4000, 32)
    frac_active = (x != 0).mean(axis=0)
    p = activation_probs(m)
    se = np.sqrt(p * (1 - p) / 4000)
    assert np.all(np.abs(frac_active - p) < 5 * se + 1e-12)
    xd = sample_inputs(m.control(), 10, rng=np.random.default_rng(0))
    assert np.all(xd != 0) and m.control().dense


@pytest.mark.parametrize("dense", [True, False])
def test_covariance_is_diag_p(dense):
    # spec oracle: empirical covariance of 1e5 samples equals diag(p) (1% of p_1)
    m = SparseFeatureModel(dim=12, alpha=1.0, p0=0.5, dense=dense)
    x = sample_inputs(m, 100_000, rng=np.random.default_rng(1))
    cov = x.T @ x / x.shape[0]
    p = activation_probs(m)
    assert np.max(np.abs(cov - np.diag(p))) <= 0.01 * p[0]
    assert np.abs(x.mean(axis=0)).max() < 0.01


@pytest.mark.parametrize("dense", [True, False])
def test_population_loss_matches_monte_carlo(dense):
    # spec oracle: exact (w - w_hat)' diag(p) (w - w_hat) vs a 200,000-sample test loss
    m = SparseFeatureModel(dim=20, alpha=1.0, p0=0.8, dense=dense)
    rng = np.random.default_rng(2)
    w, w_hat = sample_teacher(m, rng=rng), 0.3 * sample_teacher(m, rng=rng)
    exact = population_loss(activation_probs(m), w, w_hat)
    x = sample_inputs(m, 200_000, rng=rng)
    sq = (x @ (w - w_hat)) ** 2
    se = sq.std() / np.sqrt(sq.size)
    assert abs(sq.mean() - exact) <= max(1e-2 * exact, 3 * se)
    if dense:
        assert abs(sq.mean() - exact) <= 1e-2 * exact
    # batched estimates
    both = population_loss(activation_probs(m), w, np.stack([w_hat, w]))
    np.testing.assert_allclose(both, [exact, 0.0])


def test_random_features_linear_and_relu():
    m = SparseFeatureModel(dim=16)
    f = random_features(m, 8, rng=np.random.default_rng(0))
    x = sample_inputs(m, 5, rng=np.random.default_rng(1))
    np.testing.assert_allclose(f(x), x @ f.weights.T)
    assert f.head(3).weights.shape == (3, 16) and f.num_params == 8
    r = random_features(m, 40, activation="relu", rng=np.random.default_rng(0))
    assert r(x).shape == (5, 40) and np.all(r(x) >= 0)


@pytest.mark.parametrize(
    "kwargs,err,msg",
    [
        ({"alpha": 0.0}, ValueError, "alpha"),
        ({"alpha": -1.0}, ValueError, "alpha"),
        ({"p0": 0.0}, ValueError, "p0"),
        ({"p0": 1.5}, ValueError, "p0"),
        ({"dim": 1}, ValueError, "dim"),
        ({"dim": 2.5}, TypeError, "dim"),
        ({"alpha": float("nan")}, ValueError, "alpha"),
        ({"noise": -1.0}, ValueError, "noise"),
    ],
)
def test_model_bad_input(kwargs, err, msg):
    with pytest.raises(err, match=msg):
        SparseFeatureModel(**kwargs)


def test_bad_input_messages():
    m = SparseFeatureModel(dim=8)
    rng = np.random.default_rng(0)
    with pytest.raises(ValueError, match="plain linear regression"):
        random_features(m, 9, rng=rng)
    with pytest.raises(ValueError, match="activation"):
        random_features(m, 4, activation="tanh", rng=rng)
    with pytest.raises(ValueError, match="num_samples"):
        sample_inputs(m, 0, rng=rng)
    with pytest.raises(TypeError, match="Generator"):
        sample_inputs(m, 3, rng=0)
    with pytest.raises(TypeError, match="SparseFeatureModel"):
        activation_probs("model")
    with pytest.raises(ValueError, match="NaN"):
        population_loss([0.5, np.nan], [1.0, 1.0], [0.0, 0.0])
    with pytest.raises(ValueError, match="last dimension"):
        population_loss([0.5, 0.1], [1.0, 1.0], [0.0, 0.0, 0.0])
