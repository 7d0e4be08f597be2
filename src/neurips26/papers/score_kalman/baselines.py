"""Baseline filters sharing one discretised model: KF (information form), EKF, UKF, EnKF, PF.

Every nonlinear baseline uses the model's discretised transition
``x_{k+1} = Phi(x_k) + w_k`` over the observation interval ``dt``: ``Phi`` is
``num_substeps`` Euler steps of the drift (EKF, UKF; process noise ``G G^T dt``) or
Euler-Maruyama with ``num_substeps`` steps (EnKF, PF). The observation model is
``y = H x + v``, ``v ~ N(0, R)``. Each step predicts over ``dt`` and then updates with
``ys[t]``, as :class:`~neurips26.papers.score_kalman.ScoreKalmanFilter` does.
"""

from __future__ import annotations

import time

import numpy as np

from neurips26.common.validation import check_array, check_float, check_int

from .models import PolyMap, PolySDE
from .skf import FilterResult, _check_obs

__all__ = ["ekf", "enkf", "kalman_filter", "particle_filter", "ukf"]


def _prep(ys, init_mean, init_cov, H, R):
    mu = check_array(init_mean, "init_mean", ndim=(0, 1, 2)).ravel()
    P = np.atleast_2d(check_array(init_cov, "init_cov", ndim=(0, 1, 2)))
    n = mu.size
    if P.shape != (n, n):
        raise ValueError(
            f"init_cov has shape {P.shape}, expected {(n, n)} to match init_mean of length {n}"
        )
    if not np.allclose(P, P.T) or np.linalg.eigvalsh(0.5 * (P + P.T)).min() < -1e-12 * max(
        1.0, float(np.abs(P).max())
    ):
        raise ValueError("init_cov must be symmetric positive semi-definite")
    ys = check_array(ys, "ys", ndim=None, min_size=0, finite=False)
    _, H, R = _check_obs(None, H, R, n)
    if ys.ndim != 2 or ys.shape[1] != H.shape[0]:
        raise ValueError(f"ys has shape {ys.shape}, expected (T, {H.shape[0]})")
    if ys.shape[0] == 0:
        raise ValueError("ys is empty")
    if not np.all(np.isfinite(ys)):
        raise ValueError("ys must be finite")
    return ys, mu, P, H, R


def _check_square(A, name: str, n: int) -> np.ndarray:
    A = np.atleast_2d(check_array(A, name, ndim=(0, 1, 2)))
    if A.shape != (n, n):
        raise ValueError(f"{name} has shape {A.shape}, expected {(n, n)}")
    return A


#: Most Euler steps per observation interval a baseline takes (``num_substeps``).
MAX_SUBSTEPS = 10**6


def _check_dynamics(model, dt, num_substeps) -> tuple[float, int]:
    if not isinstance(model, (PolySDE, PolyMap)):
        raise TypeError(f"model must be a PolySDE or a PolyMap, got {type(model).__name__}")
    dt = check_float(dt, "dt", min=0, min_inclusive=False)
    return dt, check_int(num_substeps, "num_substeps", min=1, max=MAX_SUBSTEPS)


def _result(means, covs, times) -> FilterResult:
    T = len(means)
    return FilterResult(
        means=np.asarray(means),
        covs=np.asarray(covs),
        theta=np.zeros((T, 0)),
        step_time_s=np.asarray(times),
        cond=np.full(T, np.nan),
    )


def _kalman_update(mu, P, y, H, R):
    S = H @ P @ H.T + R  # (m, m)
    K = np.linalg.solve(S, H @ P).T  # (n, m)
    mu = mu + K @ (y - H @ mu)
    IKH = np.eye(mu.size) - K @ H
    P = IKH @ P @ IKH.T + K @ R @ K.T  # Joseph form
    return mu, 0.5 * (P + P.T)


def kalman_filter(ys, init_mean, init_cov, *, F, Q, H, R) -> FilterResult:
    """Linear-Gaussian Kalman filter with the update in information form.

    Predict ``mu = F mu``, ``P = F P F^T + Q``; update ``Lambda = P^{-1} + H^T R^{-1} H``,
    ``eta = P^{-1} mu + H^T R^{-1} y``, ``mu = Lambda^{-1} eta``, ``P = Lambda^{-1}``.

    Parameters
    ----------
    ys : array, shape (T, m)
    init_mean : array, shape (n,)
    init_cov : array, shape (n, n)
    F, Q : arrays, shape (n, n)
    H : array, shape (m, n)
    R : array, shape (m, m)

    Returns
    -------
    FilterResult

    Examples
    --------
    >>> import numpy as np
    >>> r = kalman_filter(np.array([[2.0]]), [0.0], [[0.5]], F=[[1.0]], Q=[[0.5]], H=[[1.0]],
    ...                   R=[[1.0]])
    >>> float(r.means[0, 0]), float(r.covs[0, 0, 0])
    (1.0, 0.5)
    """
    ys, mu, P, H, R = _prep(ys, init_mean, init_cov, H, R)
    F = _check_square(F, "F", mu.size)
    Q = _check_square(Q, "Q", mu.size)
    Ri = np.linalg.inv(R)
    means, covs, times = [], [], []
    for y in ys:
        t0 = time.perf_counter()
        mu = F @ mu
        P = F @ P @ F.T + Q
        Lam = np.linalg.inv(P) + H.T @ Ri @ H  # information matrix
        eta = np.linalg.solve(P, mu) + H.T @ Ri @ y  # information vector
        P = np.linalg.inv(Lam)
        P = 0.5 * (P + P.T)
        mu = P @ eta
        times.append(time.perf_counter() - t0)
        means.append(mu.copy())
        covs.append(P.copy())
    return _result(means, covs, times)


def ekf(ys, init_mean, init_cov, *, model, H, R, dt, num_substeps=10) -> FilterResult:
    """Extended Kalman filter on the Euler-discretised model.

    Parameters
    ----------
    ys : array, shape (T, m)
    init_mean : array, shape (n,)
    init_cov : array, shape (n, n)
    model : PolySDE or PolyMap
    H : array, shape (m, n)
    R : array, shape (m, m)
    dt : float
        Observation interval.
    num_substeps : int
        Euler steps per interval, at most :data:`MAX_SUBSTEPS`.

    Returns
    -------
    FilterResult
    """
    ys, mu, P, H, R = _prep(ys, init_mean, init_cov, H, R)
    dt, num_substeps = _check_dynamics(model, dt, num_substeps)
    Q = model.transition_noise_cov(dt)
    means, covs, times = [], [], []
    for y in ys:
        t0 = time.perf_counter()
        J = model.transition_jacobian(mu, dt, num_substeps)  # (n, n)
        mu = model.transition_mean(mu[None, :], dt, num_substeps)[0]
        P = J @ P @ J.T + Q
        mu, P = _kalman_update(mu, P, y, H, R)
        times.append(time.perf_counter() - t0)
        means.append(mu)
        covs.append(P)
    return _result(means, covs, times)


def _merwe_weights(n, alpha, beta, kappa):
    lam = alpha**2 * (n + kappa) - n
    wm = np.full(2 * n + 1, 1.0 / (2 * (n + lam)))
    wc = wm.copy()
    wm[0] = lam / (n + lam)
    wc[0] = lam / (n + lam) + (1 - alpha**2 + beta)
    return lam, wm, wc


def ukf(
    ys, init_mean, init_cov, *, model, H, R, dt, num_substeps=10, alpha=1.0, beta=2.0, kappa=0.0
) -> FilterResult:
    """Unscented Kalman filter with Van der Merwe's scaled sigma points.

    Sigma points ``mu``, ``mu ± sqrt((n + lambda) P)`` columns (Cholesky, as filterpy),
    ``lambda = alpha^2 (n + kappa) - n``; propagated through the discretised drift,
    process noise ``G G^T dt`` added; the linear observation is updated exactly.

    Parameters
    ----------
    ys, init_mean, init_cov, model, H, R, dt, num_substeps
        As :func:`ekf`.
    alpha, beta, kappa : float
        Sigma-point spread and weights; ``alpha`` must lie in ``(0, 1]`` (Van der Merwe's
        range: beyond it ``1 - alpha^2`` swamps the centre weight and, for huge values,
        ``alpha^2`` overflows).

    Returns
    -------
    FilterResult
    """
    ys, mu, P, H, R = _prep(ys, init_mean, init_cov, H, R)
    dt, num_substeps = _check_dynamics(model, dt, num_substeps)
    alpha = check_float(alpha, "alpha", min=0, min_inclusive=False)
    alpha = check_float(alpha, "alpha", max=1)
    beta = check_float(beta, "beta")
    kappa = check_float(kappa, "kappa")
    n = mu.size
    lam, wm, wc = _merwe_weights(n, alpha, beta, kappa)
    if n + lam <= 0:
        raise ValueError(f"n + lambda must be > 0, got {n + lam} (alpha={alpha}, kappa={kappa})")
    Q = model.transition_noise_cov(dt)
    means, covs, times = [], [], []
    for y in ys:
        t0 = time.perf_counter()
        U = np.linalg.cholesky((n + lam) * P).T  # rows are the offsets, as filterpy
        sig = np.vstack([mu, mu + U, mu - U])  # (2n+1, n)
        sig = model.transition_mean(sig, dt, num_substeps)
        mu = wm @ sig
        d = sig - mu
        P = (wc[:, None] * d).T @ d + Q
        mu, P = _kalman_update(mu, P, y, H, R)  # linear observation: exact
        times.append(time.perf_counter() - t0)
        means.append(mu)
        covs.append(P)
    return _result(means, covs, times)


def _initial_ensemble(init_mean, init_cov, size, rng, init_samples):
    if init_samples is not None:
        x = np.asarray(init_samples, dtype=float)
        if x.ndim != 2 or x.shape[1] != init_mean.size:
            raise ValueError(f"init_samples has shape {x.shape}, expected (N, {init_mean.size})")
        idx = rng.integers(0, x.shape[0], size) if x.shape[0] != size else np.arange(size)
        return x[idx].copy()
    L = np.linalg.cholesky(init_cov + 1e-12 * np.eye(init_mean.size))
    return init_mean + rng.standard_normal((size, init_mean.size)) @ L.T


def enkf(
    ys,
    init_mean,
    init_cov,
    *,
    model,
    H,
    R,
    dt,
    num_substeps=10,
    num_members=100,
    seed=0,
    init_samples=None,
) -> FilterResult:
    """Stochastic ensemble Kalman filter with perturbed observations.

    Parameters
    ----------
    ys, init_mean, init_cov, model, H, R, dt, num_substeps
        As :func:`ekf`.
    num_members : int
        Ensemble size ``N``.
    seed : int
        Seed of the filter's own random numbers.
    init_samples : array, shape (N0, n), optional
        Draws from the prior (else ``N(init_mean, init_cov)``).

    Returns
    -------
    FilterResult
    """
    ys, mu, P, H, R = _prep(ys, init_mean, init_cov, H, R)
    dt, num_substeps = _check_dynamics(model, dt, num_substeps)
    num_members = check_int(num_members, "num_members", min=2)
    rng = np.random.default_rng(seed)
    X = _initial_ensemble(mu, P, num_members, rng, init_samples)  # (N, n)
    LR = np.linalg.cholesky(R)
    means, covs, times = [], [], []
    for y in ys:
        t0 = time.perf_counter()
        X = model.sample_transition(X, dt, num_substeps, rng)
        A = X - X.mean(axis=0)
        Pf = A.T @ A / (num_members - 1)
        S = H @ Pf @ H.T + R
        K = np.linalg.solve(S, H @ Pf).T  # (n, m)
        Yp = y + rng.standard_normal((num_members, y.size)) @ LR.T  # perturbed obs
        X = X + (Yp - X @ H.T) @ K.T
        m = X.mean(axis=0)
        A = X - m
        times.append(time.perf_counter() - t0)
        means.append(m)
        covs.append(A.T @ A / (num_members - 1))
    return _result(means, covs, times)


def particle_filter(
    ys,
    init_mean,
    init_cov,
    *,
    model,
    H,
    R,
    dt,
    num_substeps=10,
    num_particles=2000,
    seed=0,
    init_samples=None,
) -> FilterResult:
    """Bootstrap particle filter with systematic resampling at every step.

    Parameters
    ----------
    ys, init_mean, init_cov, model, H, R, dt, num_substeps
        As :func:`ekf`.
    num_particles : int
        Number of particles.
    seed : int
        Seed of the filter's own random numbers.
    init_samples : array, shape (N0, n), optional
        Draws from the prior (else ``N(init_mean, init_cov)``).

    Returns
    -------
    FilterResult
    """
    ys, mu, P, H, R = _prep(ys, init_mean, init_cov, H, R)
    dt, num_substeps = _check_dynamics(model, dt, num_substeps)
    num_particles = check_int(num_particles, "num_particles", min=1)
    rng = np.random.default_rng(seed)
    X = _initial_ensemble(mu, P, num_particles, rng, init_samples)
    Ri = np.linalg.inv(R)
    means, covs, times = [], [], []
    for y in ys:
        t0 = time.perf_counter()
        X = model.sample_transition(X, dt, num_substeps, rng)
        r = y - X @ H.T  # (N, m)
        logw = -0.5 * np.einsum("ij,jk,ik->i", r, Ri, r)
        w = np.exp(logw - logw.max())
        w /= w.sum()
        m = w @ X
        A = X - m
        cov = (w[:, None] * A).T @ A
        # systematic resampling
        u = (rng.random() + np.arange(num_particles)) / num_particles
        idx = np.minimum(np.searchsorted(np.cumsum(w), u), num_particles - 1)
        X = X[idx]
        times.append(time.perf_counter() - t0)
        means.append(m)
        covs.append(cov)
    return _result(means, covs, times)
