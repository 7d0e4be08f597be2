"""Fixed-step gradient descent on the readout and the probability that it diverges.

GD with step ``eta`` on ``(1 / 2T) ||Phi theta - y||^2`` multiplies the error along the top
eigenvector of ``H = Phi' Phi / T`` by ``1 - eta lambda_max(H)`` per step, so it diverges
iff ``eta lambda_max(H) > 2`` (Eq. GD). With the step set from the *population* feature
covariance, ``eta = c 2 / lambda_max(F diag(p) F')`` (``c < 1``), divergence is the event
that the empirical top eigenvalue exceeds the population one by the factor ``1 / c``. Sparse
inputs have heavy-tailed coordinates (``E[x^4] / E[x^2]^2 = 3 / p``), so that event is
much likelier for them than for the dense control.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .model import (
    SparseFeatureModel,
    _check_array,
    _check_int,
    _check_model,
    _check_positive,
    _check_rng,
    activation_probs,
    random_features,
    sample_inputs,
)
from .simulate import _check_grid


@dataclass(frozen=True)
class GDResult:
    """One run of fixed-step gradient descent.

    Attributes
    ----------
    theta : ndarray, shape (P,)
        Final iterate.
    diverged : bool
        ``||theta||`` exceeded ``blowup`` (or became non-finite).
    num_iter : int
        Steps taken (fewer than ``max_iter`` when it diverged).
    train_loss : float
        ``(1 / 2T) ||Phi theta - y||^2`` at the last finite iterate.
    """

    theta: np.ndarray
    diverged: bool
    num_iter: int
    train_loss: float


def gradient_descent(
    features, targets, *, lr: float, max_iter: int = 500, blowup: float = 1e6
) -> GDResult:
    """Full-batch GD from ``theta = 0`` on ``(1 / 2T) ||Phi theta - y||^2``.

    Parameters
    ----------
    features : array_like, shape (T, P)
        ``Phi``.
    targets : array_like, shape (T,)
        ``y``.
    lr : float
        Step ``eta > 0``.
    max_iter : int
        Number of steps.
    blowup : float
        Norm above which the run counts as diverged.

    Returns
    -------
    GDResult

    Examples
    --------
    >>> phi = np.eye(2); y = np.ones(2)
    >>> gradient_descent(phi, y, lr=1.0, max_iter=50).diverged  # eta * lambda = 0.5 * 2 / 2
    False
    >>> gradient_descent(phi, y, lr=4.5, max_iter=200).diverged  # eta * lambda = 2.25 > 2
    True
    """
    phi = _check_array("features", features, ndim=2)
    y = _check_array("targets", targets, ndim=1)
    if phi.shape[0] != y.shape[0]:
        raise ValueError(f"features {phi.shape} and targets {y.shape} disagree on T")
    lr = _check_positive("lr", lr)
    max_iter = _check_int("max_iter", max_iter, minimum=1)
    blowup = _check_positive("blowup", blowup)
    t = phi.shape[0]
    theta = np.zeros(phi.shape[1])  # (P,)
    for k in range(1, max_iter + 1):
        resid = phi @ theta - y  # (T,)
        new = theta - lr * (phi.T @ resid) / t  # gradient step
        norm = float(np.linalg.norm(new))
        if not np.isfinite(norm) or norm > blowup:
            return GDResult(theta, True, k, float(0.5 * np.mean(resid**2)))
        theta = new
    resid = phi @ theta - y
    return GDResult(theta, False, max_iter, float(0.5 * np.mean(resid**2)))


@dataclass(frozen=True)
class InstabilityCurve:
    """Probability that fixed-step GD diverges, over a grid of ``T``.

    Attributes
    ----------
    num_samples : ndarray, shape (nT,)
    probability : ndarray, shape (nT,)
        Fraction of training-set draws with ``eta lambda_max(Phi'Phi / T) > 2``.
    stderr : ndarray, shape (nT,)
        Binomial standard error.
    top_eigenvalue : ndarray, shape (num_draws, nT)
        ``lambda_max(Phi'Phi / T)`` per draw.
    lr : float
        ``eta = step_factor * 2 / lambda_max(F diag(p) F')``.
    population_top_eigenvalue : float
    """

    num_samples: np.ndarray
    probability: np.ndarray
    stderr: np.ndarray
    top_eigenvalue: np.ndarray
    lr: float
    population_top_eigenvalue: float

    @property
    def diverged(self) -> np.ndarray:
        """(num_draws, nT) bool: GD diverges on that draw's training set (Eq. GD)."""
        return _diverges(self.lr, self.top_eigenvalue)


def _diverges(lr: float, top: np.ndarray) -> np.ndarray:
    """``eta lambda_max(Phi'Phi / T) > 2``: fixed-step GD diverges (Eq. GD)."""
    return lr * top > 2.0


def instability_curve(
    model: SparseFeatureModel,
    *,
    num_params: int,
    num_samples_grid,
    step_factor: float = 0.9,
    num_draws: int = 200,
    seed: int = 0,
) -> InstabilityCurve:
    """Estimate ``P_unstable(T)`` for linear features over training-set draws.

    One feature map ``F`` (``P`` rows) is drawn; each draw is a fresh nested data set.

    Parameters
    ----------
    model : SparseFeatureModel
    num_params : int
        ``P`` (<= ``D``).
    num_samples_grid : sequence of int
        Strictly increasing ``T``.
    step_factor : float
        ``c > 0`` in ``eta = c * 2 / lambda_max(F diag(p) F')``.
    num_draws : int
        Training sets per ``T``.
    seed : int

    Returns
    -------
    InstabilityCurve

    Examples
    --------
    >>> c = instability_curve(SparseFeatureModel(dim=64), num_params=8,
    ...                       num_samples_grid=[8, 64], num_draws=20)
    >>> c.probability.shape
    (2,)
    """
    model = _check_model(model)
    p = _check_int("num_params", num_params, minimum=1)
    t_grid = _check_grid("num_samples_grid", num_samples_grid)
    step_factor = _check_positive("step_factor", step_factor)
    num_draws = _check_int("num_draws", num_draws, minimum=1)
    seed = _check_int("seed", seed, minimum=0)
    rng = np.random.default_rng(seed)
    return _curve(model, p, t_grid, step_factor, num_draws, rng)


def _curve(model, p, t_grid, step_factor, num_draws, rng) -> InstabilityCurve:
    probs = activation_probs(model)
    f = random_features(model, p, rng=rng).weights  # (P, D)
    lam_pop = float(np.linalg.eigvalsh((f * probs) @ f.T)[-1])  # lambda_max(F Sigma F')
    lr = step_factor * 2.0 / lam_pop
    top = np.empty((num_draws, t_grid.size))
    for d in range(num_draws):
        x = sample_inputs(model, int(t_grid[-1]), rng=rng)  # (Tmax, D)
        cols = np.flatnonzero(np.any(x != 0.0, axis=0))
        phi = x[:, cols] @ f[:, cols].T  # (Tmax, P)
        gram = np.zeros((p, p))
        done = 0
        for j, t in enumerate(t_grid):
            block = phi[done:t]
            gram += block.T @ block  # Phi_T' Phi_T over nested T
            done = t
            top[d, j] = np.linalg.eigvalsh(gram / t)[-1]
    unstable = _diverges(lr, top)
    prob = unstable.mean(axis=0)
    return InstabilityCurve(
        num_samples=t_grid,
        probability=prob,
        stderr=np.sqrt(prob * (1 - prob) / num_draws),
        top_eigenvalue=top,
        lr=float(lr),
        population_top_eigenvalue=lam_pop,
    )


def gd_instability_probability(
    model: SparseFeatureModel,
    *,
    num_params: int,
    num_samples: int,
    step_factor: float = 0.9,
    num_draws: int = 200,
    rng,
) -> float:
    """``P_unstable`` at one ``T``: the fraction of training sets on which GD diverges.

    Parameters
    ----------
    model : SparseFeatureModel
    num_params : int
        ``P``.
    num_samples : int
        ``T``.
    step_factor : float
        ``c`` in ``eta = c * 2 / lambda_max(F diag(p) F')``.
    num_draws : int
    rng : numpy.random.Generator

    Returns
    -------
    float
    """
    model = _check_model(model)
    p = _check_int("num_params", num_params, minimum=1)
    t = _check_int("num_samples", num_samples, minimum=1)
    step_factor = _check_positive("step_factor", step_factor)
    num_draws = _check_int("num_draws", num_draws, minimum=1)
    rng = _check_rng(rng)
    return float(_curve(model, p, np.array([t]), step_factor, num_draws, rng).probability[0])
