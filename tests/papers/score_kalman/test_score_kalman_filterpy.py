"""Issue 31: the filterpy idioms (callable fx / hx, 1-D observation sequences, x and P)."""

import numpy as np
import pytest

from neurips26.papers.score_kalman import (
    PolySDE,
    ScoreKalmanFilter,
    full_basis,
    ukf,
)

G_L, DT = 9.81, 0.05


def _field(x):
    return np.array([x[1], -G_L * np.sin(x[0])])


def fx(x, dt):  # filterpy style: one state (n,), RK4 over dt
    k1 = _field(x)
    k2 = _field(x + 0.5 * dt * k1)
    k3 = _field(x + 0.5 * dt * k2)
    k4 = _field(x + dt * k3)
    return x + dt / 6 * (k1 + 2 * k2 + 2 * k3 + k4)


def _pendulum(steps=25, seed=0):
    rng = np.random.default_rng(seed)
    x, xs = np.array([0.4, 0.0]), []
    for _ in range(steps):
        x = fx(x, DT) + np.array([0.0, 0.3 * np.sqrt(DT)]) * rng.standard_normal()
        xs.append(x)
    xs = np.array(xs)
    return xs, xs[:, 0] + np.sqrt(0.05) * rng.standard_normal(steps)  # 1-D sequence


Q = np.diag([1e-8, 0.09 * DT])


def test_callable_dynamics_is_projected_with_a_stated_error():
    skf = ScoreKalmanFilter(basis=full_basis(2, 4), model=fx, Q=Q, H=np.array([[1.0, 0.0]]),
                            R=np.array([[0.05]]), dt=DT, num_substeps=2, model_scale=[0.6, 1.5])
    assert isinstance(skf.model, PolySDE)
    err = skf.projection_error_["model"]
    assert 0 < err < 0.05  # sin(theta) by a cubic over |theta| <~ 1.2: a few percent
    # the projected drift is the pendulum's Taylor-like cubic: d theta = omega
    drift0 = {a: c for a, c in skf.model.drift[0] if abs(c) > 1e-6}
    assert set(drift0) == {(0, 1)} and drift0[(0, 1)] == pytest.approx(1.0, abs=1e-3)
    xs, ys = _pendulum()
    res = skf.filter(ys, np.array([0.3, 0.0]), 0.1 * np.eye(2))
    u = ukf(ys[:, None], np.array([0.3, 0.0]), 0.1 * np.eye(2), model=skf.model,
            H=np.array([[1.0, 0.0]]), R=np.array([[0.05]]), dt=DT, num_substeps=2)
    e_skf = np.sqrt(np.mean((res.means[:, 0] - xs[:, 0]) ** 2))
    e_ukf = np.sqrt(np.mean((u.means[:, 0] - xs[:, 0]) ** 2))
    assert e_skf < np.sqrt(0.05) and e_skf < 1.5 * e_ukf
    with pytest.raises(ValueError, match="Q"):
        ScoreKalmanFilter(basis=full_basis(2, 4), model=fx, H=np.eye(2)[:1], R=np.eye(1),
                          dt=DT)
    with pytest.raises(ValueError, match="Q"):
        ScoreKalmanFilter(basis=full_basis(2, 4), model=fx, Q=np.eye(3), H=np.eye(2)[:1],
                          R=np.eye(1), dt=DT)


def test_callable_observation_is_linearised_with_a_stated_error():
    # a linear hx gives the matrix filter exactly (zero projection error)
    lin = ScoreKalmanFilter(basis=full_basis(2, 4), model=fx, Q=Q, H=np.array([[1.0, 0.0]]),
                            R=np.array([[0.05]]), dt=DT, num_substeps=2)
    cal = ScoreKalmanFilter(basis=full_basis(2, 4), model=fx, Q=Q, H=lambda x: x[:1],
                            R=np.array([[0.05]]), dt=DT, num_substeps=2)
    _, ys = _pendulum(10)
    a = lin.filter(ys, np.array([0.3, 0.0]), 0.1 * np.eye(2))
    b = cal.filter(ys, np.array([0.3, 0.0]), 0.1 * np.eye(2))
    np.testing.assert_allclose(a.means, b.means, atol=1e-8)
    assert a.obs_projection_error is None
    assert np.all(b.obs_projection_error < 1e-6)
    # a nonlinear hx (the bob's horizontal position): the residual is stated and positive
    non = ScoreKalmanFilter(basis=full_basis(2, 4), model=fx, Q=Q,
                            H=lambda x: np.sin(x[:1]), R=np.array([[0.05]]), dt=DT,
                            num_substeps=2)
    r = non.filter(np.sin(ys), np.array([0.3, 0.0]), 0.1 * np.eye(2))
    assert np.all(np.isfinite(r.means)) and np.all(r.obs_projection_error > 0)
    with pytest.raises(ValueError, match="H"):
        ScoreKalmanFilter(basis=full_basis(2, 4), model=fx, Q=Q, H=lambda x: x,
                          R=np.array([[0.05]]), dt=DT).filter(ys, np.zeros(2), np.eye(2))


def test_one_dimensional_observation_sequences():
    skf = ScoreKalmanFilter(basis=full_basis(2, 4), model=fx, Q=Q, H=np.array([[1.0, 0.0]]),
                            R=np.array([[0.05]]), dt=DT, num_substeps=2)
    _, ys = _pendulum(8)
    a = skf.filter(ys, np.array([0.3, 0.0]), 0.1 * np.eye(2))
    b = skf.filter(ys[:, None], np.array([0.3, 0.0]), 0.1 * np.eye(2))
    np.testing.assert_array_equal(a.means, b.means)
    two = ScoreKalmanFilter(basis=full_basis(2, 4), model=fx, Q=Q, H=np.eye(2),
                            R=0.05 * np.eye(2), dt=DT)
    with pytest.raises(ValueError, match="ys"):
        two.filter(ys, np.zeros(2), np.eye(2))


def test_x_and_P_aliases():
    skf = ScoreKalmanFilter(basis=full_basis(2, 4), model=fx, Q=Q, H=np.array([[1.0, 0.0]]),
                            R=np.array([[0.05]]), dt=DT, num_substeps=2)
    skf.x = np.array([0.3, 0.0])  # filterpy: kf.x = ...; kf.P = ...
    np.testing.assert_array_equal(skf.P, np.eye(2))  # filterpy's default P
    skf.P = 0.1 * np.eye(2)
    np.testing.assert_allclose(skf.x, [0.3, 0.0], atol=1e-15)
    np.testing.assert_allclose(skf.P, 0.1 * np.eye(2), atol=1e-15)
    _, ys = _pendulum(6)
    start = dict(zip(skf.moment_exponents[1:], skf.moments_[1:], strict=True))
    res = skf.filter(ys)  # batch_filter idiom: starts from x, P
    ref = skf.filter(ys, init_moments=start)
    np.testing.assert_array_equal(res.means, ref.means)
    np.testing.assert_array_equal(skf.x, ref.means[-1])  # x, P follow the filter
    skf.predict().update(ys[0])  # then step by step
    assert skf.x.shape == (2,) and skf.P.shape == (2, 2)
    skf.x = np.array([1.0, -1.0])  # moves the belief, keeping its central moments
    np.testing.assert_allclose(skf.x, [1.0, -1.0], atol=1e-12)
    with pytest.raises(ValueError, match="x"):
        skf.x = np.zeros(3)
    with pytest.raises(ValueError, match="P"):
        skf.P = -np.eye(2)
