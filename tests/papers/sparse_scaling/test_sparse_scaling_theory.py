"""Predicted quantities against Monte Carlo, closed forms and limits."""

import numpy as np
import pytest
from scipy.special import gamma

from neurips26.papers.sparse_scaling import (
    SparseFeatureModel,
    activation_probs,
    expected_seen_coords,
    expected_unseen_mass,
    infinite_data_loss,
    param_limited_loss,
    predicted_exponents,
    sample_inputs,
    sample_teacher,
    unseen_mass_asymptote,
    unseen_mass_curve,
)


def test_unseen_mass_matches_monte_carlo():
    # spec oracle: E[U(T)] vs 2,000 training draws, within 3 standard errors
    m = SparseFeatureModel(dim=200, alpha=1.0, p0=0.5)
    p = activation_probs(m)
    rng = np.random.default_rng(0)
    w = sample_teacher(m, rng=rng)
    t = 40
    draws = np.empty(2000)
    for k in range(draws.size):
        seen = np.any(sample_inputs(m, t, rng=rng) != 0, axis=0)
        draws[k] = np.sum(w[~seen] ** 2 * p[~seen])
    se = draws.std(ddof=1) / np.sqrt(draws.size)
    assert abs(draws.mean() - expected_unseen_mass(p, w, t)) <= 3 * se
    # and seen coordinates: E[#seen] = sum 1 - (1 - p)^T, written out
    assert expected_seen_coords(p, t) == pytest.approx(np.sum(1 - (1 - p) ** t), rel=1e-12)


def test_unseen_mass_closed_forms():
    p = np.array([0.5, 0.25, 1.0])
    w = np.array([1.0, 2.0, 3.0])
    # (1 - p)^T by hand: 0.5^2 * 0.5 + 4 * 0.75^2 * 0.25 + 0
    assert expected_unseen_mass(p, w, 2) == pytest.approx(0.125 + 0.5625)
    np.testing.assert_allclose(
        expected_unseen_mass(p, None, [1, 2]), [0.25 + 0.1875, 0.125 + 0.140625]
    )
    assert expected_seen_coords(p, 1) == pytest.approx(1.75)


@pytest.mark.parametrize("alpha", [0.5, 1.0, 2.0])
def test_unseen_mass_power_law_limit(alpha):
    # the asymptote (Gamma integral) is the D -> infinity, large-T limit of the exact sum
    p0 = 0.5
    i = np.arange(1, 2_000_001, dtype=float)
    p = p0 * i ** (-(1 + alpha))
    t = 20_000
    exact = expected_unseen_mass(p, None, t)
    asym = unseen_mass_asymptote(alpha=alpha, p0=p0, num_samples=t)
    assert asym == pytest.approx(exact, rel=0.03)
    e = alpha / (1 + alpha)
    assert asym == pytest.approx(gamma(e) / (1 + alpha) * p0 ** (1 / (1 + alpha)) * t**-e)
    # the local log-log slope of the exact sum approaches -alpha / (1 + alpha)
    u = expected_unseen_mass(p, None, [t, 2 * t])
    assert np.log(u[0] / u[1]) / np.log(2) == pytest.approx(e, abs=0.02)


def test_param_limited_loss_isotropic_closed_form():
    # Sigma = I: projecting w onto P random directions leaves D - P of E||w||^2 = D
    for d, p in [(10, 4), (50, 1), (50, 49)]:
        assert param_limited_loss(np.ones(d), p) == pytest.approx(d - p, rel=1e-9)
    assert param_limited_loss(np.ones(10), 10) == 0.0
    # isotropic with a known teacher: kappa / (1 + kappa) ||w||^2 = (D - P) / D ||w||^2
    w = np.arange(1.0, 9.0)
    assert param_limited_loss(np.ones(8), 2, weights=w) == pytest.approx(0.75 * w @ w)


def test_param_limited_loss_matches_exact_projection():
    # deterministic equivalent vs the exact T = infinity loss averaged over feature draws
    m = SparseFeatureModel(dim=512, alpha=1.0, p0=0.5)
    grid = np.array([8, 32, 128])
    draws = infinite_data_loss(m, num_params_grid=grid, num_seeds=40, seed=3)
    se = draws.std(axis=0, ddof=1) / np.sqrt(draws.shape[0])
    theory = param_limited_loss(activation_probs(m), grid)
    # a wrong kappa equation or a missing factor is off by far more than this
    assert np.all(np.abs(draws.mean(axis=0) - theory) <= 3 * se + 0.05 * theory)
    # and it decays as P^-alpha
    big = param_limited_loss(activation_probs(SparseFeatureModel(dim=20000)), [100, 400])
    assert np.log(big[0] / big[1]) / np.log(4) == pytest.approx(1.0, abs=0.08)


def test_infinite_data_loss_equals_direct_projection():
    m = SparseFeatureModel(dim=40, alpha=1.0)
    grid = [3, 10, 25, 40]
    got = infinite_data_loss(m, num_params_grid=grid, num_seeds=2, seed=5)
    p = activation_probs(m)
    for s in range(2):
        rng = np.random.default_rng([5, s])
        w = rng.standard_normal(40)
        f = rng.standard_normal((40, 40)) / np.sqrt(40)
        for k, pp in enumerate(grid):
            fp = f[:pp]
            # best readout: theta = (F Sigma F')^-1 F Sigma w, loss = (w - F'theta)' Sigma (...)
            theta = np.linalg.solve((fp * p) @ fp.T, fp @ (p * w))
            r = w - fp.T @ theta
            assert got[s, k] == pytest.approx(r @ (p * r), rel=1e-6, abs=1e-10)


def test_predicted_exponents():
    e = predicted_exponents(1.0)
    assert (e.param, e.data, e.gap) == (1.0, 0.5, 0.5)
    assert e.frontier_params == pytest.approx(1 / 3) and e.frontier_samples == pytest.approx(2 / 3)
    d = predicted_exponents(2.0, dense=True)
    assert d.gap == 0 and d.frontier_params == d.frontier_samples == 0.5
    gaps = [predicted_exponents(a).gap for a in (0.5, 1.0, 2.0)]
    assert np.all(np.diff(gaps) > 0)


def test_unseen_mass_curve_dense_is_zero():
    m = SparseFeatureModel(dim=16)
    assert np.all(unseen_mass_curve(m.control(), [1, 5]) == 0)
    assert np.all(np.diff(unseen_mass_curve(m, [1, 5, 50])) < 0)


def test_theory_bad_input():
    with pytest.raises(ValueError, match="num_samples"):
        expected_unseen_mass([0.5], None, 0)
    with pytest.raises(TypeError, match="num_samples"):
        expected_unseen_mass([0.5], None, 1.5)
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        expected_seen_coords([1.5], 3)
    with pytest.raises(ValueError, match="same shape"):
        expected_unseen_mass([0.5, 0.1], [1.0], 3)
    with pytest.raises(ValueError, match="alpha"):
        unseen_mass_asymptote(alpha=0.0, p0=0.5, num_samples=10)
    with pytest.raises(ValueError, match="p0"):
        unseen_mass_asymptote(alpha=1.0, p0=2.0, num_samples=10)
    with pytest.raises(ValueError, match="num_params"):
        param_limited_loss([0.5, 0.1], 0)
    with pytest.raises(ValueError, match="empty"):
        param_limited_loss([], 1)
