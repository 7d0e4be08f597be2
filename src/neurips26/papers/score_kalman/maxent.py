"""Maximum-entropy density fit by grid quadrature (the reference the paper replaces).

MaxEnt picks ``theta`` so that ``E_theta[T] = m``; its dual is the convex
``log Z(theta) - theta . m``, whose gradient ``E_theta[T] - m`` and Hessian
``Cov_theta(T)`` are ``n``-dimensional integrals. Here they are tensor-grid sums with
``grid_points^n`` nodes, so the cost grows exponentially in ``n`` (reference only,
``n <= 3``).
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from .basis import MonomialBasis, _check_moments

__all__ = ["maxent_fit"]


def maxent_fit(
    moments: Mapping,
    basis: MonomialBasis,
    *,
    grid_points: int = 40,
    max_iter: int = 100,
    tol: float = 1e-9,
) -> np.ndarray:
    """Maximum-entropy natural parameters by damped Newton on a quadrature grid.

    Parameters
    ----------
    moments : dict
        ``E[T_m]`` for every basis exponent, plus the second moments (for the box).
    basis : MonomialBasis
        Statistics ``T`` (n <= 3).
    grid_points : int
        Nodes per axis on the box ``mean ± 6 sd``.
    max_iter, tol : int, float
        Newton iterations and gradient tolerance.

    Returns
    -------
    array, shape (M,)
        ``theta`` with ``E_theta[T] = m`` on the grid.

    Examples
    --------
    >>> from neurips26.papers.score_kalman import full_basis, gaussian_moments
    >>> b = full_basis(1, 2)
    >>> th = maxent_fit(gaussian_moments([0.0], [[1.0]], b.exponents), b, grid_points=200)
    >>> np.round(th, 3) + 0.0
    array([ 0. , -0.5])
    """
    n = basis.dim
    if n > 3:
        raise ValueError(f"maxent_fit is a grid reference for n <= 3, got n = {n}")
    if grid_points < 5:
        raise ValueError(f"grid_points must be >= 5, got {grid_points}")
    m = _check_moments(moments, list(basis.exponents), "maxent_fit")
    units = [tuple(int(j == i) for j in range(n)) for i in range(n)]
    sq = [tuple(2 * int(j == i) for j in range(n)) for i in range(n)]
    mu = _check_moments(moments, units, "maxent_fit")
    sd = np.sqrt(np.maximum(_check_moments(moments, sq, "maxent_fit") - mu**2, 1e-12))
    axes = [np.linspace(mu[i] - 6 * sd[i], mu[i] + 6 * sd[i], grid_points) for i in range(n)]
    grid = np.stack(np.meshgrid(*axes, indexing="ij"), axis=-1).reshape(-1, n)  # (G^n, n)
    T = basis.evaluate(grid)  # (G^n, M)
    theta = np.zeros(basis.size)
    for i in range(n):  # start from the moment-matched Gaussian-ish diagonal
        theta[basis.exponents.index(sq[i])] = -0.5 / sd[i] ** 2 if sq[i] in basis.exponents else 0
    for _ in range(max_iter):
        logp = T @ theta
        w = np.exp(logp - logp.max())
        w /= w.sum()
        ET = w @ T  # E_theta[T]
        grad = ET - m  # gradient of log Z - theta . m
        if np.abs(grad).max() < tol * max(1.0, np.abs(m).max()):
            break
        D = T - ET
        Hs = (w[:, None] * D).T @ D + 1e-12 * np.eye(basis.size)  # Cov_theta(T)
        step = np.linalg.solve(Hs, grad)
        f0 = np.log(np.exp(logp - logp.max()).sum()) + logp.max() - theta @ m
        t = 1.0
        for _ in range(30):  # backtracking on the convex dual
            th = theta - t * step
            lp = T @ th
            f1 = np.log(np.exp(lp - lp.max()).sum()) + lp.max() - th @ m
            if f1 <= f0:
                break
            t *= 0.5
        theta = th
    return theta
