"""Anytime confidence sequences for the duel win rates and the elimination test.

For an ordered pair ``(j, i)`` with ``n`` duels of which ``j`` won ``x``, the empirical win
rate is ``q_hat = x / n``. Both bounds share the threshold (Hoeffding with a union bound
over the ``K^2`` ordered pairs and over time, constant ``c = 4``)

    beta(n) = log(c K^2 n^2 / delta),

- ``"hoeffding"``: ``LCB = q_hat - sqrt(beta(n) / (2 n))``;
- ``"kl"``: ``LCB = inf {q <= q_hat : n kl(q_hat, q) <= beta(n)}`` (Chernoff / Garivier-Cappe),
  never looser than Hoeffding by Pinsker's inequality.

Each one-sided bound fails at a given ``n`` with probability at most
``exp(-beta(n)) = delta / (c K^2 n^2)``; summing over ``n >= 1`` and the ``K (K - 1)`` ordered
pairs gives a total error of at most ``delta pi^2 / (6 c) < delta``. The elimination rule
(remove ``i`` once some ``j`` has ``LCB_ji > 1/2``) is therefore wrong with probability below
``delta`` whatever the sampling rule, and checking it at a subset of times keeps that.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from neurips26.common.validation import check_array, check_choice, check_int, check_probability

__all__ = [
    "BOUNDS",
    "ConfidenceBounds",
    "bernoulli_kl",
    "certifies",
    "confidence_bounds",
    "min_certifying_samples",
    "threshold",
]

BOUNDS = ("hoeffding", "kl")
UNION_CONSTANT = 4.0  # c in beta(n) = log(c K^2 n^2 / delta)


def _check_delta(delta: float) -> float:
    return check_probability(delta, "delta", open=True)


def _check_bound(bound: str) -> str:
    return check_choice(bound, "bound", BOUNDS)


def _check_num_arms(num_arms: int) -> int:
    return check_int(num_arms, "num_arms", min=2)


def threshold(n, *, delta: float, num_arms: int):
    """The exploration threshold ``beta(n) = log(4 K^2 n^2 / delta)``.

    Parameters
    ----------
    n : int or array_like of int, shape (...)
        Number of duels of the pair, ``n >= 1``.
    delta : float
        Confidence level ``delta`` in (0, 1).
    num_arms : int
        ``K``; the union bound is over ``K^2`` ordered pairs.

    Returns
    -------
    float or ndarray, shape (...)
    """
    delta = _check_delta(delta)
    K = _check_num_arms(num_arms)
    n = np.asarray(n, dtype=float)
    out = np.log(UNION_CONSTANT * K * K / delta) + 2.0 * np.log(n)  # log(c K^2 n^2 / delta)
    return float(out) if out.ndim == 0 else out


def bernoulli_kl(p, q):
    """``kl(p, q) = p log(p / q) + (1 - p) log((1 - p) / (1 - q))`` elementwise (nats).

    Parameters
    ----------
    p, q : array_like
        Bernoulli means (broadcast together); ``p`` is clipped to [0, 1] and ``q`` to
        (0, 1).

    Returns
    -------
    ndarray
        The divergence, >= 0.

    Refuses ``p`` or ``q`` outside ``[0, 1]``, NaN, or of shapes that do not broadcast
    (``ValueError``); ``q`` is clipped to
    ``[1e-15, 1 - 1e-15]`` so the divergence stays finite.
    """
    p = check_array(p, "p", min_size=0, min=0.0, max=1.0)
    q = check_array(q, "q", min_size=0, min=0.0, max=1.0)
    try:
        np.broadcast_shapes(p.shape, q.shape)
    except ValueError:
        raise ValueError(
            f"p and q must broadcast together, got shapes {p.shape} and {q.shape}"
        ) from None
    q = np.clip(q, 1e-15, 1 - 1e-15)
    with np.errstate(divide="ignore", invalid="ignore"):
        a = np.where(p > 0, p * np.log(np.where(p > 0, p, 1.0) / q), 0.0)
        b = np.where(p < 1, (1 - p) * np.log(np.where(p < 1, 1 - p, 1.0) / (1 - q)), 0.0)
    return a + b


@dataclass(frozen=True)
class ConfidenceBounds:
    """Lower and upper confidence bounds on win rates.

    Attributes
    ----------
    lower, upper : ndarray, shape (...)
        ``LCB`` and ``UCB``, clipped to ``[0, 1]``; ``(0, 1)`` where ``n = 0``.
    """

    lower: np.ndarray
    upper: np.ndarray


def _kl_lower(p_hat: np.ndarray, level: np.ndarray, iters: int = 40) -> np.ndarray:
    # inf {q in [0, p_hat] : kl(p_hat, q) <= level}, by bisection; kl decreases in q there.
    # Pinsker (kl >= 2 (p - q)^2) puts the root above the Hoeffding bound: start there.
    lo = np.clip(p_hat - np.sqrt(level / 2.0), 0.0, 1.0)
    hi = p_hat.copy()
    for _ in range(iters):
        mid = 0.5 * (lo + hi)
        too_far = bernoulli_kl(p_hat, mid) > level
        lo = np.where(too_far, mid, lo)
        hi = np.where(too_far, hi, mid)
    return lo  # conservative (lower) end of the bracket


def confidence_bounds(wins, n, *, delta: float, num_arms: int, bound: str = "hoeffding"):
    """Anytime confidence bounds on ``q_ji`` from ``wins`` of ``j`` in ``n`` duels.

    Parameters
    ----------
    wins : array_like of int, shape (...)
        Wins ``x`` of the first arm.
    n : array_like of int, shape (...)
        Duels played, ``0 <= wins <= n``.
    delta : float
        Confidence ``delta`` in (0, 1).
    num_arms : int
        ``K`` (enters the union bound).
    bound : {"hoeffding", "kl"}

    Returns
    -------
    ConfidenceBounds
        ``lower``/``upper`` of the same shape as the broadcast inputs.

    References
    ----------
    Howard, Ramdas, McAuliffe, Sekhon (2021), time-uniform Chernoff bounds.
    Garivier and Cappe (2011), the KL-UCB algorithm.

    Examples
    --------
    >>> cb = confidence_bounds(80, 100, delta=0.05, num_arms=2)
    >>> bool(cb.lower < 0.8 < cb.upper)
    True
    """
    delta = _check_delta(delta)
    K = _check_num_arms(num_arms)
    _check_bound(bound)
    wins, n = np.broadcast_arrays(np.asarray(wins, dtype=float), np.asarray(n, dtype=float))
    if np.any(n < 0) or np.any(wins < 0) or np.any(wins > n):
        raise ValueError("need 0 <= wins <= n")
    seen = n > 0
    n_safe = np.where(seen, n, 1.0)
    p_hat = np.where(seen, wins / n_safe, 0.5)
    beta = threshold(n_safe, delta=delta, num_arms=K)
    if bound == "hoeffding":
        radius = np.sqrt(beta / (2.0 * n_safe))  # sqrt(log(c K^2 n^2 / delta) / (2 n))
        lower, upper = p_hat - radius, p_hat + radius
    else:
        level = beta / n_safe  # kl(q_hat, q) <= beta(n) / n
        lower = _kl_lower(p_hat, level)
        upper = 1.0 - _kl_lower(1.0 - p_hat, level)
    lower = np.where(seen, np.clip(lower, 0.0, 1.0), 0.0)
    upper = np.where(seen, np.clip(upper, 0.0, 1.0), 1.0)
    return ConfidenceBounds(lower=lower, upper=upper)


def _certifies_scalar(wins: int, n: int, log_ck2: float, bound: str) -> bool:
    # Fast path used inside the procedures: LCB_ji > 1/2 without computing the LCB.
    if n <= 0 or 2 * wins <= n:
        return False
    beta = log_ck2 + 2.0 * math.log(n)
    p = wins / n
    if bound == "hoeffding":
        return (p - 0.5) ** 2 * 2.0 * n > beta  # p - 1/2 > sqrt(beta / (2 n))
    kl = p * math.log(2.0 * p) + ((1 - p) * math.log(2.0 * (1 - p)) if p < 1 else 0.0)
    return n * kl > beta  # n kl(q_hat, 1/2) > beta(n), q_hat > 1/2


def certifies(wins, n, *, delta: float, num_arms: int, bound: str = "hoeffding"):
    """The elimination test ``LCB_ji > 1/2``: does ``j`` (``wins`` of ``n``) certifiably beat ``i``.

    Parameters
    ----------
    wins, n : array_like of int, shape (...)
    delta, num_arms, bound
        As in :func:`confidence_bounds`.

    Returns
    -------
    bool or ndarray of bool, shape (...)

    Refuses negative, fractional or non-finite counts and ``wins > n``.

    Examples
    --------
    >>> bool(certifies(90, 100, delta=0.05, num_arms=10))
    True
    >>> bool(certifies(55, 100, delta=0.05, num_arms=10))
    False
    """
    delta = _check_delta(delta)
    K = _check_num_arms(num_arms)
    _check_bound(bound)
    log_ck2 = math.log(UNION_CONSTANT * K * K / delta)
    w = check_array(wins, "wins", dtype=None, min_size=0, min=0)
    m = check_array(n, "n", dtype=None, min_size=0, min=0)
    if w.dtype.kind == "f" and np.any(w != np.round(w)):
        raise ValueError("wins must hold whole numbers of duels")
    if m.dtype.kind == "f" and np.any(m != np.round(m)):
        raise ValueError("n must hold whole numbers of duels")
    if np.any(np.broadcast_to(w, np.broadcast_shapes(w.shape, m.shape)) > m):
        raise ValueError("wins must be <= n (wins out of n duels)")

    def rule(a, b):
        return _certifies_scalar(int(a), int(b), log_ck2, bound)

    out = np.vectorize(rule, otypes=[bool])(w, m)
    return bool(out) if out.ndim == 0 else out


def min_certifying_samples(*, delta: float, num_arms: int, bound: str = "hoeffding") -> int:
    """Smallest ``n`` at which ``n`` wins out of ``n`` duels pass the elimination test.

    No pair can be certified with fewer duels, so the procedures need not check before.

    Examples
    --------
    >>> min_certifying_samples(delta=0.05, num_arms=2) > 1
    True
    """
    delta = _check_delta(delta)
    K = _check_num_arms(num_arms)
    _check_bound(bound)
    log_ck2 = math.log(UNION_CONSTANT * K * K / delta)
    n = 1
    while not _certifies_scalar(n, n, log_ck2, bound):
        n += 1
    return n
