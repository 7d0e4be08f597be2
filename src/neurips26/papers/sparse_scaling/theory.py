"""Predicted quantities: unseen mass, seen coordinates, the parameter-limited loss, exponents.

These are the formulas the simulations are checked against.

- Unseen mass. A coordinate never active in ``T`` training inputs is invisible to the
  student: the teacher's ``y`` does not depend on ``w_i``, so the fitted predictor cannot
  either and the coordinate costs at least ``w_i^2 p_i`` (on average over the sign of
  ``w_i``). Its expectation is ``E[U(T)] = sum_i w_i^2 p_i (1 - p_i)^T`` (Eq. U), which for
  ``p_i = p0 i^-(1 + alpha)`` behaves as
  ``Gamma(alpha / (1 + alpha)) / (1 + alpha) p0^(1 / (1 + alpha)) T^(-alpha / (1 + alpha))``
  (Eq. U-asym, the Laplace/Gamma integral of the sum, ``D -> infinity``).
- Seen coordinates. ``E[#seen] = sum_i 1 - (1 - p_i)^T`` (Eq. S) bounds the rank of the
  training inputs and so locates the sparse model's interpolation threshold.
- Parameter-limited loss (``T -> infinity``). With ``F`` Gaussian the best readout leaves
  ``||(I - Pi) Sigma^(1/2) w||^2``; its deterministic equivalent is
  ``kappa sum_i p_i w_i^2 / (p_i + kappa)`` with ``sum_i p_i / (p_i + kappa) = P`` (Eq. K).
  It is the same for the sparse model and its dense control (only the covariance enters),
  and decays as ``P^-alpha``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.optimize import brentq
from scipy.special import gamma

from neurips26.common.validation import check_array

from .model import _check_array, _check_positive


def _samples_array(num_samples) -> np.ndarray:
    t = np.asarray(num_samples)
    if t.dtype == bool or not np.issubdtype(t.dtype, np.integer):
        if not (np.issubdtype(t.dtype, np.floating) and np.all(t == np.round(t))):
            raise TypeError(f"num_samples must be an integer or integers, got {num_samples!r}")
    if np.any(t < 1):
        raise ValueError(f"num_samples must be >= 1, got {num_samples!r}")
    return t.astype(float)


def _weights_sq(probs: np.ndarray, weights) -> np.ndarray:
    if weights is None:
        return np.ones_like(probs)  # E[w_i^2] = 1
    w = _check_array("weights", weights, ndim=1)
    if w.shape != probs.shape:
        raise ValueError(f"weights {w.shape} and probs {probs.shape} must have the same shape")
    return w**2


def _check_probs(probs) -> np.ndarray:
    return check_array(probs, "probs", ndim=1, min=0.0, max=1.0)


def expected_unseen_mass(probs, weights, num_samples):
    """Expected loss mass on coordinates never active in training, Eq. (U).

    ``E[U(T)] = sum_i w_i^2 p_i (1 - p_i)^T``.

    Parameters
    ----------
    probs : array_like, shape (D,)
        Activation probabilities ``p``.
    weights : array_like of shape (D,), or None
        Teacher ``w``; ``None`` averages over ``w_i ~ N(0, 1)`` (``w_i^2 -> 1``).
    num_samples : int or array_like of int
        ``T`` (one or several).

    Returns
    -------
    float or ndarray
        Same shape as ``num_samples``.

    References
    ----------
    Hutter, "Learning curve theory" (2021), the unseen-feature term of the Zipf model.

    Examples
    --------
    >>> round(expected_unseen_mass([0.5, 0.5], None, 1), 3)
    0.5
    """
    p = _check_probs(probs)
    w2 = _weights_sq(p, weights)
    t = _samples_array(num_samples)
    # log1p keeps (1 - p)^T accurate for tiny p and large T
    with np.errstate(divide="ignore"):
        log_q = np.log1p(-p)  # (D,), -inf where p = 1
    out = np.exp(np.multiply.outer(t, log_q)) @ (w2 * p)  # Eq. (U)
    return float(out) if out.ndim == 0 else out


def expected_seen_coords(probs, num_samples):
    """Expected number of coordinates active at least once in ``T`` inputs, Eq. (S).

    Parameters
    ----------
    probs : array_like, shape (D,)
    num_samples : int or array_like of int

    Returns
    -------
    float or ndarray
        ``sum_i 1 - (1 - p_i)^T``.
    """
    p = _check_probs(probs)
    t = _samples_array(num_samples)
    with np.errstate(divide="ignore"):
        log_q = np.log1p(-p)
    out = (1.0 - np.exp(np.multiply.outer(t, log_q))).sum(axis=-1)  # Eq. (S)
    return float(out) if out.ndim == 0 else out


def unseen_mass_asymptote(*, alpha: float, p0: float, num_samples):
    """Large-``T`` power law of the unseen mass (``D -> infinity``), Eq. (U-asym).

    ``E[U(T)] ~ Gamma(alpha/(1+alpha)) / (1+alpha) * p0^(1/(1+alpha)) * T^(-alpha/(1+alpha))``.

    Parameters
    ----------
    alpha : float
        Spectral exponent (> 0).
    p0 : float
        Activation probability of the first coordinate, in (0, 1].
    num_samples : int or array_like of int

    Returns
    -------
    float or ndarray

    Examples
    --------
    >>> round(unseen_mass_asymptote(alpha=1.0, p0=1.0, num_samples=100), 4)
    0.0886
    """
    alpha = _check_positive("alpha", alpha)
    p0 = _check_positive("p0", p0)
    if p0 > 1:
        raise ValueError(f"p0 must lie in (0, 1], got {p0}")
    t = _samples_array(num_samples)
    e = alpha / (1.0 + alpha)
    out = gamma(e) / (1.0 + alpha) * p0 ** (1.0 / (1.0 + alpha)) * t ** (-e)
    return float(out) if np.ndim(out) == 0 else out


def param_limited_loss(probs, num_params, *, weights=None):
    """Deterministic equivalent of the ``T -> infinity`` loss with ``P`` random features, Eq. (K).

    ``L(P) = kappa sum_i p_i w_i^2 / (p_i + kappa)`` where ``kappa > 0`` solves
    ``sum_i p_i / (p_i + kappa) = P``; ``L = 0`` for ``P >= D``.

    Parameters
    ----------
    probs : array_like, shape (D,)
        Covariance eigenvalues ``p``.
    num_params : int or array_like of int
        ``P``.
    weights : array_like of shape (D,), or None
        Teacher ``w``; ``None`` averages over ``w_i ~ N(0, 1)``.

    Returns
    -------
    float or ndarray

    References
    ----------
    Maloney, Roberts & Sully, "A solvable model of neural scaling laws" (2022);
    Bach, "High-dimensional analysis of double descent for linear regression with random
    projections" (2024).

    Examples
    --------
    >>> round(param_limited_loss(np.ones(10), 4), 6)  # isotropic: D - P
    6.0
    """
    p = _check_probs(probs)
    if np.any(p <= 0):
        raise ValueError("probs must be > 0 for the parameter-limited loss")
    w2 = _weights_sq(p, weights)
    ps = np.atleast_1d(np.asarray(num_params))
    if not np.issubdtype(ps.dtype, np.integer) or np.any(ps < 1):
        raise ValueError(f"num_params must be integers >= 1, got {num_params!r}")
    out = np.empty(ps.shape, dtype=float)
    for k, P in enumerate(ps):
        if P >= p.size:
            out[k] = 0.0
            continue

        def df1(log_kappa, P=P):  # sum_i p_i / (p_i + kappa) - P, decreasing in kappa
            return np.sum(p / (p + np.exp(log_kappa))) - P

        lo, hi = np.log(p.min()) - 40.0, np.log(p.sum()) + 40.0
        kappa = np.exp(brentq(df1, lo, hi, xtol=1e-14, rtol=1e-13))
        out[k] = kappa * np.sum(p * w2 / (p + kappa))  # Eq. (K)
    return float(out[0]) if np.ndim(num_params) == 0 else out


@dataclass(frozen=True)
class ExponentPrediction:
    """Our derivation's exponents for one ``alpha`` (loss ~ x^-exponent).

    Attributes
    ----------
    param : float
        Underparameterized (parameter-limited) exponent ``a_P = alpha``.
    data : float
        Overparameterized (data-limited) exponent ``a_T``: ``alpha / (1 + alpha)`` for
        sparse inputs (unseen-mass bottleneck), ``alpha`` for the dense control.
    gap : float
        ``a_P - a_T`` (``alpha^2 / (1 + alpha)`` sparse, 0 dense).
    frontier_params, frontier_samples : float
        ``P* ~ C^a``, ``T* ~ C^b`` for ``C = P T`` from ``L = A P^-a_P + B T^-a_T``:
        ``a = a_T / (a_P + a_T)``, ``b = a_P / (a_P + a_T)``.
    """

    param: float
    data: float
    gap: float
    frontier_params: float
    frontier_samples: float


def predicted_exponents(alpha: float, *, dense: bool = False) -> ExponentPrediction:
    """The exponents our reading of the theory predicts.

    Parameters
    ----------
    alpha : float
        Spectral exponent (> 0).
    dense : bool
        ``True`` for the dense control.

    Returns
    -------
    ExponentPrediction

    Examples
    --------
    >>> predicted_exponents(1.0).gap
    0.5
    """
    alpha = _check_positive("alpha", alpha)
    a_p = alpha
    a_t = alpha if dense else alpha / (1.0 + alpha)
    return ExponentPrediction(
        param=a_p,
        data=a_t,
        gap=a_p - a_t,
        frontier_params=a_t / (a_p + a_t),
        frontier_samples=a_p / (a_p + a_t),
    )


__all__ = [
    "ExponentPrediction",
    "expected_seen_coords",
    "expected_unseen_mass",
    "param_limited_loss",
    "predicted_exponents",
    "unseen_mass_asymptote",
]
