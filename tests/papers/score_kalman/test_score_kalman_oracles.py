"""Oracle tests: quadrature, closed forms, independent KF and filterpy."""

import numpy as np
import pytest
from scipy import integrate

from neurips26.papers.score_kalman import (
    PolySDE,
    ScoreKalmanFilter,
    ekf,
    enkf,
    full_basis,
    gaussian_moments,
    kalman_filter,
    linear_gaussian,
    maxent_fit,
    particle_filter,
    predict,
    score_matching_fit,
    stein_closure,
    ukf,
)

TH1 = np.array([0.3, 0.5, -0.1, -0.2])  # exp(0.3x + 0.5x^2 - 0.1x^3 - 0.2x^4)


def _moments_1d(theta, kmax=10):
    def f(x, k):
        return x**k * np.exp(theta @ np.array([x, x * x, x**3, x**4]))

    z = integrate.quad(f, -np.inf, np.inf, args=(0,), epsabs=1e-14, epsrel=1e-13)[0]
    return {
        (k,): integrate.quad(f, -np.inf, np.inf, args=(k,), epsabs=1e-14, epsrel=1e-13)[0] / z
        for k in range(1, kmax + 1)
    }


def test_score_matching_recovers_theta_1d():
    fit = score_matching_fit(_moments_1d(TH1), full_basis(1, 4))
    np.testing.assert_allclose(fit.theta, TH1, atol=1e-8)


def test_score_matching_recovers_theta_2d_product():
    # product density: moments factorise; basis has cross terms whose true theta is 0
    th2 = np.array([-0.2, -0.3, 0.0, -0.1])
    m1, m2 = _moments_1d(TH1, 6), _moments_1d(th2, 6)
    basis = full_basis(2, 4)
    mom = {}
    for a in range(7):
        for b in range(7 - a):
            if a + b:
                mom[(a, b)] = (m1[(a,)] if a else 1.0) * (m2[(b,)] if b else 1.0)
    fit = score_matching_fit(mom, basis)
    want = np.zeros(basis.size)
    for k, c in zip(range(1, 5), TH1, strict=True):
        want[basis.index((k, 0))] = c
    for k, c in zip(range(1, 5), th2, strict=True):
        want[basis.index((0, k))] = c
    np.testing.assert_allclose(fit.theta, want, atol=1e-8)


def test_stein_closure_matches_quadrature():
    m = _moments_1d(TH1)
    known = {(k,): m[(k,)] for k in range(1, 7)}
    out = stein_closure(TH1, full_basis(1, 4), known, [(7,), (8,), (9,)])
    for a, v in out.items():
        assert v == pytest.approx(m[a], rel=1e-8, abs=1e-8)


def test_stein_closure_wrong_theta_gives_wrong_moments():
    m = _moments_1d(TH1)
    known = {(k,): m[(k,)] for k in range(1, 7)}
    out = stein_closure(TH1 + 0.05, full_basis(1, 4), known, [(8,)])
    assert abs(out[(8,)] - m[(8,)]) > 1e-3


def test_ou_moments_closed_form():
    a, s, dt = 0.7, 0.5, 0.8
    ou = PolySDE([{(1,): -a}], np.array([[s]]))
    m = predict(gaussian_moments([1.5], [[0.2]], [(1,), (2,)]), ou, full_basis(1, 2),
                dt=dt, num_substeps=80)
    mean = 1.5 * np.exp(-a * dt)
    var = 0.2 * np.exp(-2 * a * dt) + s**2 / (2 * a) * (1 - np.exp(-2 * a * dt))
    assert m[(1,)] == pytest.approx(mean, abs=1e-8)
    assert m[(2,)] - m[(1,)] ** 2 == pytest.approx(var, abs=1e-8)


def _linear_problem(seed=0, T=50):
    rng = np.random.default_rng(seed)
    n = 3
    A = rng.standard_normal((n, n))
    F = 0.95 * A / np.abs(np.linalg.eigvals(A)).max()
    Q = 0.1 * np.eye(n) + 0.02
    H = rng.standard_normal((2, n))
    R = np.array([[0.3, 0.05], [0.05, 0.2]])
    x, ys = rng.standard_normal(n), []
    for _ in range(T):
        x = F @ x + rng.multivariate_normal(np.zeros(n), Q)
        ys.append(H @ x + rng.multivariate_normal(np.zeros(2), R))
    return F, Q, H, R, np.array(ys)


def test_gaussian_skf_equals_kalman_and_filterpy():
    from filterpy.kalman import KalmanFilter

    F, Q, H, R, ys = _linear_problem()
    m0, P0 = np.array([0.5, -0.2, 0.1]), np.eye(3)
    skf = ScoreKalmanFilter(basis=full_basis(3, 2), model=linear_gaussian(F, Q), H=H, R=R, dt=1)
    a = skf.filter(ys, m0, P0)
    b = kalman_filter(ys, m0, P0, F=F, Q=Q, H=H, R=R)
    np.testing.assert_allclose(a.means, b.means, atol=1e-9)
    np.testing.assert_allclose(a.covs, b.covs, atol=1e-9)
    kf = KalmanFilter(dim_x=3, dim_z=2)
    kf.x, kf.P, kf.F, kf.Q, kf.H, kf.R = m0.copy(), P0.copy(), F, Q, H, R
    for t, y in enumerate(ys):
        kf.predict()
        kf.update(y)
        np.testing.assert_allclose(kf.x, a.means[t], atol=1e-9)
        np.testing.assert_allclose(kf.P, a.covs[t], atol=1e-9)


def test_ekf_ukf_equal_kalman_on_linear_model():
    F, Q, H, R, ys = _linear_problem(1)
    m0, P0 = np.zeros(3), np.eye(3)
    ref = kalman_filter(ys, m0, P0, F=F, Q=Q, H=H, R=R)
    model = linear_gaussian(F, Q)
    for f in (ekf, ukf):
        out = f(ys, m0, P0, model=model, H=H, R=R, dt=1.0)
        np.testing.assert_allclose(out.means, ref.means, atol=1e-9)
        np.testing.assert_allclose(out.covs, ref.covs, atol=1e-9)


def test_ukf_matches_filterpy_on_nonlinear_map():
    from filterpy.kalman import MerweScaledSigmaPoints, UnscentedKalmanFilter

    from neurips26.papers.score_kalman import PolyMap

    model = PolyMap([{(1, 0): 0.9, (0, 1): 0.1}, {(3, 0): -0.1, (0, 1): 0.8}], 0.05 * np.eye(2))
    H, R = np.array([[1.0, 0.0]]), np.array([[0.2]])
    rng = np.random.default_rng(3)
    ys = rng.standard_normal((20, 1))
    ours = ukf(ys, np.zeros(2), np.eye(2), model=model, H=H, R=R, dt=1.0, alpha=0.5)
    pts = MerweScaledSigmaPoints(2, alpha=0.5, beta=2.0, kappa=0.0)
    fp = UnscentedKalmanFilter(2, 1, 1.0, hx=lambda x: H @ x,
                               fx=lambda x, dt: model.F(x[None])[0], points=pts)
    fp.x, fp.P, fp.Q, fp.R = np.zeros(2), np.eye(2), model.noise_cov, R
    for t, y in enumerate(ys):
        fp.predict()
        fp.update(y)
        np.testing.assert_allclose(fp.x, ours.means[t], atol=1e-9)
        np.testing.assert_allclose(fp.P, ours.covs[t], atol=1e-9)


def test_enkf_and_pf_track_kalman_on_linear_model():
    F, Q, H, R, ys = _linear_problem(2, T=30)
    m0, P0 = np.zeros(3), np.eye(3)
    ref = kalman_filter(ys, m0, P0, F=F, Q=Q, H=H, R=R)
    sd = np.sqrt(np.einsum("tii->ti", ref.covs))
    model = linear_gaussian(F, Q)
    out = enkf(ys, m0, P0, model=model, H=H, R=R, dt=1.0, num_members=4000, seed=1)
    assert np.abs((out.means - ref.means) / sd).max() < 0.25
    out = particle_filter(ys, m0, P0, model=model, H=H, R=R, dt=1.0, num_particles=20000,
                          seed=1)
    assert np.abs((out.means - ref.means) / sd).max() < 0.25


def test_maxent_matches_score_matching_on_exact_family():
    m = _moments_1d(TH1)
    th = maxent_fit(m, full_basis(1, 4), grid_points=400)
    np.testing.assert_allclose(th, TH1, atol=1e-4)
