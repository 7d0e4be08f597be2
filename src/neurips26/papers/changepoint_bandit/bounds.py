"""Time-uniform confidence sequences and the certification rules built on them.

After ``n`` sigma-sub-Gaussian samples at a point with empirical mean ``mu_hat``, the
interval ``mu_hat +/- r(n)`` with the *stitched* boundary of Howard, Ramdas, McAuliffe and
Sekhon (2021, Theorem 1 with ``eta = 2``, ``s = 1.4``, ``m = 1``; their Eq. (11) rounds it
to ``1.7 sqrt(V (log log 2V + 0.72 log(5.2 / alpha)))``)

    r(n) = sigma * k1 * sqrt(l(n) / n),                                         # Eq. (1)
    l(n) = s log log(2 n) + log(2 zeta(s) / (delta (log 2)^s)),
    k1 = (2^(1/4) + 2^(-1/4)) / sqrt(2) ~ 1.4355,

contains the true mean for *every* ``n >= 1`` simultaneously with probability at least
``1 - delta``. Theorem 1 bounds the upper deviation ``S_n = sum_i (y_i - mu)`` of a
sigma-sub-Gaussian martingale by ``k1 sqrt(V l_alpha(V))`` at every ``V = sigma^2 n >= m``
with probability ``1 - alpha``, ``l_alpha(V) = s log log(eta V / m) + log(zeta(s) / (alpha
log^s eta))``; the two-sided interval spends ``alpha = delta / 2`` on each side, which is
the factor 2 inside ``l(n)``. Being time-uniform, it stays valid under adaptive stopping,
which is what the stopping rules of :mod:`.localize` need. It grows like
``sqrt(log log n / n)`` instead of the ``sqrt(log n / n)`` of a union bound over ``n``.

Two certificates that ``f(a) != f(b)``, i.e. that a change point lies between ``a`` and
``b``:

- :func:`certified_different`: the intervals at ``a`` and at ``b`` are disjoint (each
  holds with probability ``1 - delta``; any sample counts);
- :func:`paired_certified_different`: ``a`` and ``b`` have been sampled the *same* number
  of times ``n`` (lockstep top-ups), so ``sum_i (y_{a,i} - y_{b,i})`` is a sum of ``n``
  ``sqrt(2) sigma``-sub-Gaussian increments with mean ``n (f(a) - f(b))``, and the
  difference of the means lies within ``sqrt(2) r(n)`` of ``f(a) - f(b)`` for every ``n``
  (one sequence, level ``delta``). It needs half the samples of the disjoint-interval rule
  for the same gap, because ``sqrt(2) r < 2 r``.

These are the only certificates the procedures use for their ``1 - delta`` guarantee.

References
----------
S. R. Howard, A. Ramdas, J. McAuliffe, J. Sekhon, "Time-uniform, nonparametric,
nonasymptotic confidence sequences", Annals of Statistics 49(2), 2021 (Theorem 1, Eq. (11)).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy.special import zeta

from neurips26.common.validation import check_array, check_float, check_probability

__all__ = [
    "STITCH_K1",
    "STITCH_S",
    "STITCH_ZETA",
    "ConfidenceBounds",
    "certified_different",
    "confidence_bounds",
    "confidence_radius",
    "min_samples_to_separate",
    "paired_certified_different",
]

#: ``s`` of Eq. (1) (Howard et al.'s stitching exponent).
STITCH_S = 1.4
#: ``zeta(s) / (log 2)^s`` of Eq. (1), about 5.19 (Howard et al.'s "5.2").
STITCH_ZETA = float(zeta(STITCH_S)) / math.log(2.0) ** STITCH_S
#: ``k1 = (2^(1/4) + 2^(-1/4)) / sqrt(2)`` of Eq. (1), about 1.4355.
STITCH_K1 = (2.0**0.25 + 2.0**-0.25) / math.sqrt(2.0)


def _check_delta(delta: Any, name: str = "delta") -> float:
    return check_probability(delta, name, open=True)


def _check_sigma(sigma: Any) -> float:
    return check_float(sigma, "sigma", min=0, min_inclusive=False)


def confidence_radius(n: Any, *, delta: Any, sigma: float = 1.0) -> np.ndarray:
    """Half-width ``r(n)`` of the time-uniform interval, Eq. (1).

    Parameters
    ----------
    n : array_like of int, shape (m,)
        Sample counts (``n = 0`` gives ``inf``).
    delta : float or array_like, shape (m,)
        Per-point error level ``delta_pt`` in (0, 1) (two-sided, over all ``n >= 1``).
    sigma : float, default 1.0
        Sub-Gaussian parameter ``sigma`` of the noise.

    Returns
    -------
    ndarray, shape (m,)
        ``sigma k1 sqrt((1.4 log log(2 n) + log(2 zeta(1.4) / (delta log(2)^1.4))) / n)``.

    Examples
    --------
    >>> float(confidence_radius(100, delta=0.05).round(4))
    0.3975
    """
    sigma = _check_sigma(sigma)
    d = check_array(delta, "delta", ndim=None, min_size=0, finite=False)
    if np.any(~(d > 0)) or np.any(d >= 1):
        raise ValueError(f"delta must lie in the open interval (0, 1), got {delta!r}")
    n = check_array(n, "n", ndim=None, min_size=0, min=0.0)
    if np.any(n < 0):
        raise ValueError("sample counts n must be >= 0")
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        nn = np.maximum(n, 1.0)
        loglog = np.log(math.log(2.0) + np.log(nn))  # log log(2 n), no overflow in 2 n
        ell = STITCH_S * loglog + np.log(2.0 * STITCH_ZETA / d)  # Eq. (1)
        r = sigma * STITCH_K1 * np.sqrt(ell / nn)
    return np.where(n > 0, r, np.inf)


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
    ([0.2, -0.4], [1.0, 0.4])
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


def paired_certified_different(
    sums_a: Any, sums_b: Any, counts: Any, *, delta: Any, sigma: float = 1.0
) -> np.ndarray:
    """Paired certificate ``f(a) != f(b)`` for points sampled equally often.

    Valid only when ``a`` and ``b`` hold the *same* number ``n`` of samples (sampled in
    lockstep, so that ``sums_a - sums_b`` is the sum of the first ``n`` paired
    differences): certified when ``|sums_a - sums_b| / n > sqrt(2) r(n)``, Eq. (1) with
    noise parameter ``sqrt(2) sigma``.

    Parameters
    ----------
    sums_a, sums_b : array_like, shape (m,)
        Sums of the observations at the two points of each pair.
    counts : array_like of int, shape (m,)
        The common sample count ``n`` of each pair.
    delta : float or array_like, shape (m,)
        Error level of each pair's sequence, over all ``n``.
    sigma : float, default 1.0
        Sub-Gaussian parameter of the noise.

    Returns
    -------
    ndarray of bool, shape (m,)

    Examples
    --------
    >>> paired_certified_different([60.0, 20.0], [0.0, 0.0], [100, 100], delta=0.05).tolist()
    [True, False]
    """
    sa = np.asarray(sums_a, dtype=float)
    sb = np.asarray(sums_b, dtype=float)
    n = np.asarray(counts, dtype=float)
    if not (sa.shape == sb.shape == n.shape):
        raise ValueError(
            f"sums_a, sums_b and counts must have the same shape, got {sa.shape}, "
            f"{sb.shape}, {n.shape}"
        )
    if not (np.all(np.isfinite(sa)) and np.all(np.isfinite(sb))):
        raise ValueError("sums_a and sums_b must be finite (no NaN or inf)")
    r = confidence_radius(n, delta=delta, sigma=math.sqrt(2.0) * _check_sigma(sigma))
    with np.errstate(divide="ignore", invalid="ignore"):
        diff = np.where(n > 0, np.abs(sa - sb) / np.maximum(n, 1.0), 0.0)
    return (n > 0) & (diff > r)


def min_samples_to_separate(
    gap: float, *, delta: float, sigma: float = 1.0, paired: bool = False
) -> int:
    """Smallest ``n`` at which two points ``gap`` apart with exact means are certified.

    ``2 r(n) < gap`` (disjoint intervals, :func:`certified_different`) or, with
    ``paired=True``, ``sqrt(2) r(n) < gap`` (:func:`paired_certified_different`), each
    point sampled ``n`` times.

    Parameters
    ----------
    gap : float
        ``|f(a) - f(b)| > 0``.
    delta : float
        Error level of the certificate's sequences.
    sigma : float, default 1.0
        Sub-Gaussian parameter.
    paired : bool, default False
        Use the paired certificate.

    Refuses ``sigma / gap`` so large that more than ``MAX_SEPARATION_SAMPLES`` (``1e15``)
    samples would be needed.

    Examples
    --------
    >>> min_samples_to_separate(1.0, delta=0.05), min_samples_to_separate(1.0, delta=0.05,
    ...                                                                  paired=True)
    (63, 31)
    """
    delta = _check_delta(delta)
    gap = check_float(gap, "gap", min=0, min_inclusive=False)
    sigma = _check_sigma(sigma)
    if not isinstance(paired, (bool, np.bool_)):
        raise TypeError(f"paired must be a bool, got {type(paired).__name__}")
    width = math.sqrt(2.0) if paired else 2.0
    # l(n) >= log(2 zeta / delta) - 0.52, so n > k1^2 width^2 sigma^2 l / gap^2 at least
    ratio = sigma / gap  # plain float arithmetic: overflows to inf, never raises
    ell_min = max(math.log(2.0 * STITCH_ZETA / delta) - 0.52, 1e-3)
    need = (STITCH_K1 * width * ratio) ** 2 * ell_min
    if not need <= MAX_SEPARATION_SAMPLES:
        raise ValueError(
            f"sigma / gap = {ratio:.3g} needs more than {need:.3g} samples, beyond the "
            f"limit of {MAX_SEPARATION_SAMPLES}"
        )

    def ok(n: int) -> bool:
        return width * float(confidence_radius(n, delta=delta, sigma=sigma)) < gap

    lo, hi = 1, 2
    while not ok(hi):
        lo, hi = hi, hi * 2
    while lo < hi:  # r(n) is decreasing in n wherever l(n) > 1.4 / log(2 n)
        mid = (lo + hi) // 2
        if ok(mid):
            hi = mid
        else:
            lo = mid + 1
    return lo
