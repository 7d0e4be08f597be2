"""Tests for the weaknesses named in issues 11, 12 and 13 (each failed on the old code)."""

import numpy as np
import pytest

from neurips26.papers.score_kalman import (
    PolySDE,
    ScoreKalmanFilter,
    coupled_duffing,
    full_basis,
    gaussian_moments,
    kalman_filter,
    linear_gaussian,
    oscillator_basis,
    score_matching_moments,
    stein_moments,
)


@pytest.mark.parametrize("drift", [{(1,): 1.0, (3,): -1.0}, {(3,): -1.0}],
                         ids=["x-x^3", "-x^3"])
def test_runs_on_cubic_drifts_from_a_centred_gaussian(drift):
    # Issue 11: both raised NonIntegrableBeliefError at step 0 (dt 0.1, R 0.1, quartic).
    model = PolySDE([drift], np.array([[0.5]]))
    skf = ScoreKalmanFilter(basis=full_basis(1, 4), model=model, H=np.eye(1),
                            R=0.1 * np.eye(1), dt=0.1)
    rng = np.random.default_rng(0)
    xs, x = [], np.zeros((1, 1)) + 0.5 * rng.standard_normal((1, 1))
    for _ in range(25):
        x = model.sample_transition(x, 0.1, 20, rng)
        xs.append(x[0])
    xs = np.array(xs)
    ys = xs + np.sqrt(0.1) * rng.standard_normal(xs.shape)
    res = skf.filter(ys, np.zeros(1), 0.25 * np.eye(1))
    assert np.all(np.isfinite(res.means)) and np.all(res.covs[:, 0, 0] > 0)
    assert np.mean(res.regularised) < 0.1
    # it filters: the error is well below the observation noise's
    assert np.sqrt(np.mean((res.means - xs) ** 2)) < np.sqrt(0.1)
    # step-wise use is the same computation, bit for bit
    skf.initialize(np.zeros(1), 0.25 * np.eye(1))
    for t, y in enumerate(ys):
        skf.predict().update(y)
        assert np.array_equal(skf.mean_, res.means[t])
        assert np.array_equal(skf.cov_, res.covs[t])


def test_quartic_basis_on_linear_gaussian_is_the_kalman_filter():
    # Issue 12: the ridge toward a fixed quartic reference biased this by up to 6e-3.
    rng = np.random.default_rng(1)
    F = np.array([[0.9, 0.2], [-0.1, 0.8]])
    Q = np.array([[0.1, 0.02], [0.02, 0.05]])
    H = np.array([[1.0, 0.5]])
    R = np.array([[0.2]])
    ys = rng.standard_normal((40, 1))
    skf = ScoreKalmanFilter(basis=full_basis(2, 4), model=linear_gaussian(F, Q), H=H, R=R,
                            dt=1.0)
    a = skf.filter(ys, np.array([0.3, -0.2]), np.eye(2))
    b = kalman_filter(ys, np.array([0.3, -0.2]), np.eye(2), F=F, Q=Q, H=H, R=R)
    np.testing.assert_allclose(a.means, b.means, atol=1e-8, rtol=0)
    np.testing.assert_allclose(a.covs, b.covs, atol=1e-8, rtol=0)
    assert not a.regularised.any()  # no fallback: the Gaussian is in the family
    assert np.all(a.cond < 1.0 + 1e-6)  # Hermite basis: identity at a Gaussian belief


def test_oscillator_basis_on_linear_gaussian_is_the_kalman_filter():
    # same with the block basis, several blocks and cross terms (conditional Gaussian)
    rng = np.random.default_rng(2)
    n = 4
    A = rng.standard_normal((n, n))
    F = 0.9 * A / np.abs(np.linalg.eigvals(A)).max()
    Q = 0.1 * np.eye(n) + 0.01
    H = np.eye(n)[::2]
    R = 0.1 * np.eye(2)
    ys = rng.standard_normal((15, 2))
    skf = ScoreKalmanFilter(basis=oscillator_basis(n), model=linear_gaussian(F, Q), H=H, R=R,
                            dt=1.0)
    a = skf.filter(ys, np.zeros(n), np.eye(n))
    b = kalman_filter(ys, np.zeros(n), np.eye(n), F=F, Q=Q, H=H, R=R)
    np.testing.assert_allclose(a.means, b.means, atol=1e-8, rtol=0)
    np.testing.assert_allclose(a.covs, b.covs, atol=1e-8, rtol=0)
    assert not a.regularised.any()


def test_fallback_is_rare_on_the_duffing_benchmark():
    # Issue 12: the pinned-Gaussian fallback ran on 52-64 % of steps.
    bench = coupled_duffing(num_nodes=2)
    skf = ScoreKalmanFilter(basis=oscillator_basis(4), model=bench.model, H=bench.H, R=bench.R,
                            dt=bench.dt, num_substeps=2)
    _, ys = bench.simulate(15, np.random.default_rng(3))
    res = skf.filter(ys, init_moments=bench.prior.moments(skf.moment_exponents))
    assert np.mean(res.regularised) < 0.1
    assert np.all(res.cond < 1e12)


def test_from_function_recovers_polynomial_and_filter_matches():
    g = np.array([[0.0], [0.3]])
    f = lambda x: np.stack([x[:, 1], -0.3 * x[:, 1] + x[:, 0] - x[:, 0] ** 3], axis=1)  # noqa: E731
    sde = PolySDE.from_function(f, g, degree=3, center=[0.5, 0.0], scale=[1.0, 0.5])
    want = coupled_duffing(num_nodes=1, coupling=0.0, sigma=0.3).model
    got = {i: {a: c for a, c in p if abs(c) > 1e-9} for i, p in enumerate(sde.drift)}
    ref = {i: dict(p) for i, p in enumerate(want.drift)}
    for i in ref:
        assert set(got[i]) == set(ref[i])
        for a in ref[i]:
            assert got[i][a] == pytest.approx(ref[i][a], abs=1e-9)
    # a plain function is filterpy's fx(x, dt) now (issue 31): it needs the process noise Q
    with pytest.raises(ValueError, match="needs Q"):
        ScoreKalmanFilter(basis=full_basis(2, 4), model=f, H=np.eye(2)[:1], R=np.eye(1),
                          dt=0.1)


def test_from_function_bad_input():
    g = np.array([[0.5]])
    with pytest.raises(TypeError, match="drift"):
        PolySDE.from_function("x", g)
    with pytest.raises(ValueError, match="scale"):
        PolySDE.from_function(lambda x: -x, g, scale=0.0)
    with pytest.raises(ValueError, match="drift returned shape"):
        PolySDE.from_function(lambda x: x[:, :0], g)
    with pytest.raises(ValueError, match="degree"):
        PolySDE.from_function(lambda x: -x, g, degree=0)


def test_bulk_restricted_stein_moments_of_a_tiny_positive_quartic():
    # exp(-z^2/2 + 0.001 z^4) restricted to |z| < sqrt(250): quadrature reference
    from scipy import integrate

    m = stein_moments([{(1,): -1.0, (3,): 0.004}], degree=4, truncation=20,
                      require_normalisable=False)
    hi = np.sqrt(250.0)
    f = lambda z, k: z**k * np.exp(-z**2 / 2 + 0.001 * z**4)  # noqa: E731
    Z = integrate.quad(f, -hi, hi, args=(0,))[0]
    for k in (2, 4):
        assert m[(k,)] == pytest.approx(integrate.quad(f, -hi, hi, args=(k,))[0] / Z, rel=1e-6)
    with pytest.raises(ValueError, match="not normalisable"):
        stein_moments([{(1,): -1.0, (3,): 0.004}], degree=4)


def test_singular_covariance_message_says_what_to_change():
    from neurips26.papers.score_kalman.skf import NonIntegrableBeliefError, _ScorePlan

    basis = full_basis(2, 4)
    plan = _ScorePlan(basis)
    S = score_matching_moments(basis)
    mom = gaussian_moments([0.0, 0.0], [[1.0, 1.0], [1.0, 1.0]], S)  # x1 = x0
    with pytest.raises(NonIntegrableBeliefError, match="process noise"):
        plan.fit_robust(np.array([1.0 if sum(a) == 0 else mom[a] for a in S]))
