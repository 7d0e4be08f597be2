"""Synthetic s-sparse margin halfspaces under malicious noise, and their exact clean error.

The clean marginal is the standard Gaussian ``N(0, I_d)`` conditioned on the margin event
``|<w*, x>| >= gamma``; labels are ``y = sign(<w*, x>)``. The malicious oracle replaces each
sample, independently with probability ``eta``, by a point of the adversary's choosing
(features and label alike).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy import integrate, stats

from neurips26.common.validation import MAX_ELEMENTS, check_size

from ._validation import check_int, check_noise_rate, check_positive, check_sparsity

ADVERSARIES = ("label_flip", "flip_cluster", "large_norm")


@dataclass(frozen=True)
class HalfspaceData:
    """A sample from the malicious-noise oracle.

    Attributes
    ----------
    X : ndarray, shape (n, d)
        Features (clean and corrupted rows).
    y : ndarray, shape (n,)
        Labels in {-1, +1}.
    w_star : ndarray, shape (d,)
        The unit-norm s-sparse target ``w*``.
    is_corrupt : ndarray of bool, shape (n,)
        Which rows the adversary wrote.
    margin : float
        The margin ``gamma`` of the clean points.
    """

    X: np.ndarray
    y: np.ndarray
    w_star: np.ndarray
    is_corrupt: np.ndarray
    margin: float


def make_sparse_target(dim: int, sparsity: int, rng: np.random.Generator) -> np.ndarray:
    """A unit-norm ``w*`` with ``sparsity`` nonzeros of magnitude in [0.5, 1] before scaling."""
    w = np.zeros(dim)
    support = rng.choice(dim, size=sparsity, replace=False)
    w[support] = rng.choice([-1.0, 1.0], size=sparsity) * rng.uniform(0.5, 1.0, size=sparsity)
    return w / np.linalg.norm(w)


def sample_clean(
    num_samples: int, w_star: np.ndarray, margin: float, rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray]:
    """Clean points: ``x ~ N(0, I)`` conditioned on ``|<w*, x>| >= gamma``; ``y = sign(<w*, x>)``.

    The conditioning is exact (the projection on ``w*`` is drawn from the two-sided truncated
    normal by inverse CDF), which equals rejection sampling in distribution.
    """
    d = w_star.shape[0]
    g = rng.standard_normal((num_samples, d))  # (n, d)
    tail = stats.norm.sf(margin)  # P(z >= gamma)
    u = rng.uniform(0.0, 1.0, size=num_samples)
    z = stats.norm.isf(u * tail)  # (n,) |<w*, x>| >= gamma, z >= gamma
    sign = rng.choice([-1.0, 1.0], size=num_samples)
    z = sign * z
    X = g - np.outer(g @ w_star, w_star) + np.outer(z, w_star)  # replace the w*-component
    return X, sign


#: Largest margin :func:`make_margin_halfspace` accepts: ``P(z >= 30)`` is about 5e-198, and
#: near 38 the normal tail underflows to 0.
MAX_MARGIN = 30.0


def make_margin_halfspace(
    num_samples: int,
    dim: int,
    sparsity: int,
    *,
    margin: float = 0.1,
    noise_rate: float = 0.0,
    adversary: str = "flip_cluster",
    attack_scale: float = 4.0,
    attack_angle: float = 75.0,
    attack_spike: float = 1.75,
    seed: int | None = None,
) -> HalfspaceData:
    """Draw ``num_samples`` points from the eta-malicious oracle of an s-sparse halfspace.

    Parameters
    ----------
    num_samples : int
        Sample size ``n`` (``n * d`` above ``MAX_ELEMENTS`` is refused).
    dim : int
        Ambient dimension ``d``.
    sparsity : int
        Number ``s`` of nonzeros of ``w*`` (1 <= s <= d).
    margin : float
        Margin ``gamma`` of the clean points, in ``(0, MAX_MARGIN]``.
    noise_rate : float
        Malicious noise rate ``eta`` in [0, 1/2): each row is corrupted independently with
        this probability.
    adversary : {"label_flip", "flip_cluster", "large_norm"}
        ``"label_flip"``: a clean point with its label flipped (benign). ``"flip_cluster"``: the
        points ``attack_scale * v + 0.1 g`` with ``v = cos(a) w* + sin(a) u`` (``u`` a unit
        vector on ``supp(w*)`` orthogonal to ``w*``, so ``v`` is s-sparse; ``a = attack_angle``
        degrees) labelled against ``w*``; they pull the hinge minimiser towards ``-u`` while
        keeping ``||x||_inf`` small, so only the variance test can catch them.
        ``"large_norm"``: a clean point plus a spike of height
        ``attack_spike * sqrt(2 log(n d))`` (a multiple of the clean sample's typical
        largest coordinate, independent of any filter's level) on one random coordinate,
        labelled against ``w*`` (the L-infinity filter's target).
    attack_scale : float
        Scale ``alpha`` of the flip cluster.
    attack_angle : float
        Angle (degrees) between the cluster direction ``v`` and ``w*``.
    attack_spike : float
        Height of the large-norm spike in units of ``sqrt(2 log(n d))``.
    seed : int or None
        Seed of ``numpy.random.default_rng``.

    Returns
    -------
    HalfspaceData

    Examples
    --------
    >>> data = make_margin_halfspace(100, 20, 3, noise_rate=0.1, seed=0)
    >>> data.X.shape, int((data.w_star != 0).sum())
    ((100, 20), 3)
    """
    n = check_int(num_samples, "num_samples", minimum=1)
    d = check_int(dim, "dim", minimum=1)
    check_size(n * d, "num_samples", limit=MAX_ELEMENTS, what="entries (num_samples * dim)")
    s = check_sparsity(sparsity, d)
    gamma = check_positive(margin, "margin")
    if gamma > MAX_MARGIN:
        raise ValueError(
            f"margin must be <= {MAX_MARGIN:g} (beyond it the Gaussian tail P(z >= margin) "
            f"underflows), got {gamma:g}"
        )
    eta = check_noise_rate(noise_rate)
    if adversary not in ADVERSARIES:
        raise ValueError(f"unknown adversary {adversary!r}; choose one of {ADVERSARIES}")
    check_positive(attack_scale, "attack_scale")
    spike = check_positive(attack_spike, "attack_spike")
    rng = np.random.default_rng(seed)
    w_star = make_sparse_target(d, s, rng)
    X, y = sample_clean(n, w_star, gamma, rng)  # (n, d), (n,)
    corrupt = rng.uniform(size=n) < eta  # (n,)
    k = int(corrupt.sum())
    if adversary == "label_flip":
        y[corrupt] = -y[corrupt]
    elif adversary == "flip_cluster":
        u = np.zeros(d)
        supp = np.flatnonzero(w_star)
        if s >= 2:  # u on supp(w*), orthogonal to w*: v stays s-sparse
            u[supp] = rng.standard_normal(s)
            u -= (u @ w_star) * w_star
        elif d >= 2:  # s = 1: one coordinate off the support (v is 2-sparse)
            u[rng.choice(np.flatnonzero(w_star == 0))] = 1.0
        if np.any(u):
            u /= np.linalg.norm(u)
        a = math.radians(attack_angle)
        v = math.cos(a) * w_star + math.sin(a) * u  # (d,), unit
        pts = attack_scale * v + 0.1 * rng.standard_normal((k, d))  # (k, d)
        X[corrupt] = pts
        y[corrupt] = -np.sign(pts @ w_star + 1e-300)  # against w*
    else:  # large_norm
        height = spike * math.sqrt(2.0 * math.log(max(n * d, 2)))
        cols = rng.integers(0, d, size=k)
        signs = rng.choice([-1.0, 1.0], size=k)
        rows = np.flatnonzero(corrupt)
        X[rows, cols] += signs * height
        y[corrupt] = -np.sign(X[corrupt] @ w_star + 1e-300)
    return HalfspaceData(X=X, y=y, w_star=w_star, is_corrupt=corrupt, margin=gamma)


def clean_error(w, w_star, *, margin: float) -> float:
    """Exact 0-1 error of ``sign(<w, x>)`` on the clean margin distribution.

    Only the angle ``theta`` between ``w`` and ``w*`` matters. With ``z1 = <w*, x>`` and
    ``z2`` the orthogonal Gaussian coordinate in the plane of ``w`` and ``w*``,

    ``err = int_gamma^inf phi(z) Phi(-z cot theta) dz / Phi(-gamma)`` for ``theta`` in
    (0, pi), which reduces to ``theta / pi`` at ``gamma = 0``.

    Parameters
    ----------
    w : array_like, shape (d,)
        Learned normal vector (``w = 0`` predicts at random: error 1/2).
    w_star : array_like, shape (d,)
        Target normal vector.
    margin : float
        Margin ``gamma`` >= 0 of the clean distribution.

    Returns
    -------
    float
        Error in [0, 1].

    Examples
    --------
    >>> round(clean_error([1.0, 1.0], [1.0, 0.0], margin=0.0), 6)
    0.25
    """
    w = np.asarray(w, dtype=float)
    w_star = np.asarray(w_star, dtype=float)
    if w.shape != w_star.shape or w.ndim != 1:
        raise ValueError(
            f"w and w_star must be 1-D of the same shape, got {w.shape}, {w_star.shape}"
        )
    if margin < 0:
        raise ValueError(f"margin must be >= 0, got {margin}")
    nw, ns = np.linalg.norm(w), np.linalg.norm(w_star)
    if ns == 0:
        raise ValueError("w_star must be nonzero")
    if nw == 0:
        return 0.5
    c = float(np.clip(w @ w_star / (nw * ns), -1.0, 1.0))
    theta = math.acos(c)
    if theta < 1e-12:
        return 0.0
    if math.pi - theta < 1e-12:
        return 1.0
    cot = math.cos(theta) / math.sin(theta)
    val, _ = integrate.quad(
        lambda z: stats.norm.pdf(z) * stats.norm.cdf(-z * cot), margin, np.inf, epsabs=1e-12
    )
    return float(np.clip(val / stats.norm.sf(margin), 0.0, 1.0))
