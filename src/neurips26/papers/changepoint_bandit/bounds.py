"""Anytime confidence intervals and the certification rule built on them.

After ``n`` sigma-sub-Gaussian samples at a point with empirical mean ``mu_hat``, the
interval ``mu_hat +/- r(n)`` with

    r(n) = sigma * sqrt(2 * log(c * n^2 / delta) / n),   c = pi^2 / 6,        # Eq. (1)

contains the true mean for *every* ``n >= 1`` simultaneously with probability at least
``1 - delta`` (a sub-Gaussian tail bound at each ``n`` with level ``delta / (c n^2)`` and a
union bound over ``n``; ``sum_n 1 / (c n^2) = 1``). Being anytime, it stays valid under
adaptive stopping, which is what the stopping rules of :mod:`.localize` need.

Two points are *certified different* when their intervals are disjoint; if both intervals
hold, the function differs at the two points, so at least one change point lies between
them. This is the only certificate the procedures use for their ``1 - delta`` guarantee.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from neurips26.common.validation import check_array, check_float, check_probability

__all__ = [
    "UNION_CONSTANT",
    "ConfidenceBounds",
    "certified_different",
    "confidence_bounds",
    "confidence_radius",
    "min_samples_to_separate",
]

#: ``c`` of Eq. (1): ``sum_{n >= 1} 1 / (c n^2) = 1``.
UNION_CONSTANT = math.pi**2 / 6


def _check_delta(delta: Any, name: str = "delta") -> float:
    return check_probability(delta, name, open=True)


def _check_sigma(sigma: Any) -> float:
    return check_float(sigma, "sigma", min=0, min_inclusive=False)


def confidence_radius(n: Any, *, delta: Any, sigma: float = 1.0) -> np.ndarray:
    """Half-width ``r(n)`` of the anytime interval, Eq. (1).

    Parameters
    ----------
    n : array_like of int, shape (m,)
        Sample counts (``n = 0`` gives ``inf``).
    delta : float or array_like, shape (m,)
        Per-point error level ``delta_pt`` in (0, 1).
    sigma : float, default 1.0
        Sub-Gaussian parameter ``sigma`` of the noise.

    Returns
    -------
    ndarray, shape (m,)
        ``sigma sqrt(2 log(c n^2 / delta) / n)``.

    Examples
    --------
    >>> float(confidence_radius(100, delta=0.05).round(4))
    0.5041
    """
    sigma = _check_sigma(sigma)
    d = check_array(delta, "delta", ndim=None, min_size=0, finite=False)
    if np.any(~(d > 0)) or np.any(d >= 1):
        raise ValueError(f"delta must lie in the open interval (0, 1), got {delta!r}")
    n = check_array(n, "n", ndim=None, min_size=0, min=0.0)
    if np.any(n < 0):
        raise ValueError("sample counts n must be >= 0")
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        r = sigma * np.sqrt(2.0 * np.log(UNION_CONSTANT * n**2 / d) / n)  # Eq. (1)
        # n**2 overflows past ~1e154: take the log of the product term by term there
        big = n > _BIG_N
        if np.any(big):
            log_term = np.log(UNION_CONSTANT) + 2.0 * np.log(n) - np.log(d)
            r = np.where(big, sigma * np.sqrt(2.0 * log_term / n), r)
    return np.where(n > 0, r, np.inf)


#: Counts above which :func:`confidence_radius` avoids ``n**2`` (it would overflow).
_BIG_N = 1e150

#: Most samples :func:`min_samples_to_separate` searches for (sigma / gap too large).
MAX_SEPARATION_SAMPLES = 10**15


@dataclass(frozen=True)
class ConfidenceBounds:
    """Anytime intervals at a set of points.

    Attributes
    ----------
    mean : ndarray, shape (m,)
        Empirical means ``mu_hat`` (NaN where ``n = 0``).
    radius : ndarray, shape (m,)
        ``r(n)`` of Eq. (1).
    lower, upper : ndarray, shape (m,)
        ``mu_hat -/+ r(n)`` (``-inf``/``inf`` where ``n = 0``).
    """

    mean: np.ndarray
    radius: np.ndarray
    lower: np.ndarray
    upper: np.ndarray


def confidence_bounds(
    sums: Any, counts: Any, *, delta: Any, sigma: float = 1.0
) -> ConfidenceBounds:
    """Anytime intervals from sample sums and counts.

    Parameters
    ----------
    sums : array_like, shape (m,)
        Sum of the observations at each point.
    counts : array_like of int, shape (m,)
        Number of observations ``n`` at each point.
    delta : float or array_like, shape (m,)
        Per-point error level.
    sigma : float, default 1.0
        Sub-Gaussian parameter of the noise.

    Returns
    -------
    ConfidenceBounds

    Examples
    --------
    >>> cb = confidence_bounds([60.0, 0.0], [100, 100], delta=0.05)
    >>> cb.lower.round(2).tolist(), cb.upper.round(2).tolist()
    ([0.1, -0.5], [1.1, 0.5])
    """
    sums = np.asarray(sums, dtype=float)
    counts = np.asarray(counts, dtype=float)
    if sums.shape != counts.shape:
        raise ValueError(
            f"sums and counts must have the same shape, got {sums.shape}, {counts.shape}"
        )
    if not np.all(np.isfinite(sums)):
        raise ValueError("sums must be finite (no NaN or inf)")
    r = confidence_radius(counts, delta=delta, sigma=sigma)  # (m,)
    with np.errstate(divide="ignore", invalid="ignore"):
        mean = np.where(counts > 0, sums / counts, np.nan)
    lo = np.where(counts > 0, mean - r, -np.inf)
    hi = np.where(counts > 0, mean + r, np.inf)
    return ConfidenceBounds(mean=mean, radius=r, lower=lo, upper=hi)


def certified_different(a: ConfidenceBounds, b: ConfidenceBounds) -> np.ndarray:
    """Whether the intervals of ``a`` and ``b`` are disjoint, elementwise.

    If both intervals contain their true means, disjointness proves ``f(a) != f(b)``.

    Parameters
    ----------
    a, b : ConfidenceBounds
        Intervals at ``m`` pairs of points.

    Returns
    -------
    ndarray of bool, shape (m,)
    """
    return (a.upper < b.lower) | (b.upper < a.lower)


def min_samples_to_separate(gap: float, *, delta: float, sigma: float = 1.0) -> int:
    """Smallest ``n`` with ``2 r(n) < gap``: two points ``gap`` apart, each sampled ``n``
    times with exact means, are certified different.

    Parameters
    ----------
    gap : float
        ``|f(a) - f(b)| > 0``.
    delta : float
        Per-point error level.
    sigma : float, default 1.0
        Sub-Gaussian parameter.

    Refuses ``sigma / gap`` so large that more than ``MAX_SEPARATION_SAMPLES`` (``1e15``)
    samples would be needed.

    Examples
    --------
    >>> min_samples_to_separate(1.0, delta=0.05)
    102
    """
    delta = _check_delta(delta)
    gap = check_float(gap, "gap", min=0, min_inclusive=False)
    sigma = _check_sigma(sigma)
    # r(n) >= sigma sqrt(2 log(c / delta) / n), so n > 8 sigma^2 log(c / delta) / gap^2
    ratio = sigma / gap  # plain float arithmetic: overflows to inf, never raises
    need = 8.0 * ratio * ratio * math.log(UNION_CONSTANT / delta)
    if not need <= MAX_SEPARATION_SAMPLES:
        raise ValueError(
            f"sigma / gap = {ratio:.3g} needs more than {need:.3g} samples, beyond the "
            f"limit of {MAX_SEPARATION_SAMPLES}"
        )
    lo, hi = 1, 2
    while 2 * float(confidence_radius(hi, delta=delta, sigma=sigma)) >= gap:
        lo, hi = hi, hi * 2
    while lo < hi:  # r(n) is decreasing for n >= 1 when c/delta > e^{1/2}
        mid = (lo + hi) // 2
        if 2 * float(confidence_radius(mid, delta=delta, sigma=sigma)) < gap:
            hi = mid
        else:
            lo = mid + 1
    return lo
