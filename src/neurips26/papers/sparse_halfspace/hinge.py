"""The sparsity-inducing constraint set W and the weighted hinge program over it.

``W = {w : ||w||_2 <= 1, ||w||_1 <= sqrt(s)}`` contains every unit-norm s-sparse vector and
is convex, so hinge-loss minimisation over it is a second-order cone program (solved here
with cvxpy). The projection onto W and the linear maximisation over W are closed forms up to
one scalar found by bisection (soft thresholding).
"""

from __future__ import annotations

import math

import cvxpy as cp
import numpy as np

from neurips26.common.validation import check_array as _check_array

from ._validation import check_labels, check_matrix, check_positive, check_sparsity


def _soft(v: np.ndarray, lam: float) -> np.ndarray:
    return np.sign(v) * np.maximum(np.abs(v) - lam, 0.0)


def _bisect_lambda(v: np.ndarray, radius: float, scale) -> float:
    """Smallest lam >= 0 with ||scale(S_lam(v))||_1 <= radius (the map is non-increasing)."""
    lo, hi = 0.0, float(np.max(np.abs(v)))
    for _ in range(100):
        mid = 0.5 * (lo + hi)
        if np.abs(scale(_soft(v, mid))).sum() > radius:
            lo = mid
        else:
            hi = mid
        if hi - lo <= 1e-15 * max(1.0, hi):
            break
    return hi


def project_l1_l2(v, *, radius_l1: float, radius_l2: float = 1.0) -> np.ndarray:
    """Euclidean projection onto ``{w : ||w||_2 <= r2, ||w||_1 <= r1}``.

    By the KKT conditions the projection is ``S_lam(v) / max(1, ||S_lam(v)||_2 / r2)`` with
    ``S_lam`` the soft-threshold at the smallest ``lam >= 0`` for which the L1 bound holds;
    ``lam`` is found by bisection.

    Parameters
    ----------
    v : array_like, shape (d,)
        Point to project.
    radius_l1 : float
        L1 radius ``r1`` (``sqrt(s)`` for the set W).
    radius_l2 : float
        L2 radius ``r2`` (1 for W).

    Returns
    -------
    ndarray, shape (d,)

    Examples
    --------
    >>> w = project_l1_l2([3.0, 0.0, 0.1], radius_l1=1.0)
    >>> np.round(w, 6).tolist()
    [1.0, 0.0, 0.0]
    """
    v = _check_array(v, "v", ndim=1)
    r1 = check_positive(radius_l1, "radius_l1")
    r2 = check_positive(radius_l2, "radius_l2")

    def scale(u):
        return u / max(1.0, np.linalg.norm(u) / r2)

    if np.abs(scale(v)).sum() <= r1:
        return scale(v)
    lam = _bisect_lambda(v, r1, scale)
    return scale(_soft(v, lam))


def maximize_linear_l1_l2(g, *, radius_l1: float) -> np.ndarray:
    """``argmax_{w in W} <g, w>`` for ``W = {||w||_2 <= 1, ||w||_1 <= r1}``.

    The maximiser is ``S_lam(g) / ||S_lam(g)||_2`` with the smallest ``lam >= 0`` meeting the
    L1 bound (Witten, Tibshirani & Hastie 2009, the penalised matrix decomposition step).

    Parameters
    ----------
    g : array_like, shape (d,)
        Linear objective.
    radius_l1 : float
        L1 radius (``sqrt(s)``).

    Returns
    -------
    ndarray, shape (d,)
        A unit vector in W (zero if ``g`` is zero).
    """
    g = np.asarray(g, dtype=float)
    if not np.any(g):
        return np.zeros_like(g)

    def unit(u):
        nu = np.linalg.norm(u)
        return u / nu if nu > 0 else u

    r = float(radius_l1)
    if np.abs(unit(g)).sum() <= r:
        return unit(g)
    if r <= 1.0:  # only the largest entry survives
        w = np.zeros_like(g)
        j = int(np.argmax(np.abs(g)))
        w[j] = np.sign(g[j])
        return w
    # f(lam) = ||S_lam(g)||_1 / ||S_lam(g)||_2 is non-increasing in lam; find its breakpoint
    # interval by sorting, then solve f(lam) = r, a quadratic in lam on that interval.
    a = np.sort(np.abs(g))[::-1]  # (d,) descending
    A1 = np.cumsum(a)  # (d,) sums of the top-k
    A2 = np.cumsum(a * a)
    k = np.arange(1, a.size + 1)
    # ratio at lam = a_{k+1} with the top-k entries active (k = 1..d-1)
    lam_b = a[1:]
    l1 = A1[:-1] - k[:-1] * lam_b
    l2 = np.sqrt(np.maximum(A2[:-1] - 2 * lam_b * A1[:-1] + k[:-1] * lam_b**2, 1e-300))
    ratio = l1 / l2  # non-decreasing in k
    kk = int(np.searchsorted(ratio, r, side="left")) + 1  # active-set size at the solution
    kk = min(kk, a.size)
    S1, S2 = A1[kk - 1], A2[kk - 1]
    lo = a[kk] if kk < a.size else 0.0
    hi = a[kk - 1]
    # (S1 - k lam)^2 = r^2 (S2 - 2 lam S1 + k lam^2)
    qa, qb, qc = kk * (kk - r * r), -2 * S1 * (kk - r * r), S1 * S1 - r * r * S2
    lam = None
    if abs(qa) > 1e-12:
        disc = qb * qb - 4 * qa * qc
        if disc >= 0:
            for root in ((-qb - math.sqrt(disc)) / (2 * qa), (-qb + math.sqrt(disc)) / (2 * qa)):
                if lo - 1e-12 <= root <= hi + 1e-12:
                    lam = root
                    break
    if lam is None:  # degenerate case: fall back to bisection
        lam = _bisect_lambda(g, r, unit)
    lam = min(max(lam, lo), hi * (1 - 1e-12))
    w = unit(_soft(g, lam))
    if np.abs(w).sum() > r * (1 + 1e-9):
        # ties at the top: m > r^2 entries share max|g|, so any split of L1 mass r over them
        # (here an even one, L2 norm r / sqrt(m) < 1) attains the bound r max|g|
        top = np.abs(g) >= a[0] * (1 - 1e-9)
        w = np.zeros_like(g)
        w[top] = np.sign(g[top]) * r / top.sum()
    return w


def hinge_objective(w, X, y, *, margin: float, sample_weight=None) -> float:
    """``sum_i q_i max(0, 1 - y_i <w, x_i> / gamma)`` (uniform ``q = 1/n`` if None).

    Parameters
    ----------
    w : array_like, shape (d,)
    X : array_like, shape (n, d)
    y : array_like, shape (n,)
        Labels in {-1, +1}.
    margin : float
        ``gamma > 0``.
    sample_weight : array_like, shape (n,), optional
        ``q``.

    Returns
    -------
    float

    Raises
    ------
    TypeError, ValueError
        Non-numeric, empty or non-finite ``w``, ``X``, ``sample_weight``; shapes that
        disagree; labels outside {-1, +1}; ``margin`` not finite and positive.
    """
    X = check_matrix(X)
    n, d = X.shape
    w = _check_array(w, "w", shape=(d,))
    y_pm, _ = check_labels(y, n)
    gamma = check_positive(margin, "margin")
    if sample_weight is None:
        q = np.full(n, 1.0 / n)
    else:
        q = _check_array(sample_weight, "sample_weight", shape=(n,))
    return float(q @ np.maximum(0.0, 1.0 - y_pm * (X @ w) / gamma))


def sparse_hinge(
    X,
    y,
    *,
    sparsity: int | None,
    margin: float,
    sample_weight=None,
    center=None,
    radius: float | None = None,
    solver: str = "CLARABEL",
) -> np.ndarray:
    """Weighted hinge minimisation over the sparsity-inducing set W.

    Solves ``min_{w in W} sum_i q_i max(0, 1 - y_i <w, x_i> / gamma)`` (Eq. (3) of the
    step list in the module docstring), ``W = {||w||_2 <= 1, ||w||_1 <= sqrt(s)}``, as a
    second-order cone program with cvxpy. ``sparsity=None`` drops the L1 bound (the unit
    L2 ball of Shen's dense algorithm). With ``center`` and ``radius`` the program is
    restricted to the ball ``||w - w_{t-1}||_2 <= r_t`` around the current estimate (a
    localisation round).

    Parameters
    ----------
    X : array_like, shape (n, d)
        Features ``x_i``.
    y : array_like, shape (n,)
        Labels ``y_i`` in {-1, +1}.
    sparsity : int or None
        ``s`` (1 <= s <= d); None for the L2 ball only.
    margin : float
        ``gamma`` > 0: the hinge is scaled by ``1/gamma``.
    sample_weight : array_like, shape (n,), optional
        Nonnegative weights ``q_i`` (uniform ``1/n`` if None).
    center : array_like, shape (d,), optional
        ``w_{t-1}``, the centre of the localisation ball (None: no ball).
    radius : float, optional
        ``r_t`` > 0, the ball's radius (required with ``center``).
    solver : str
        A cvxpy conic solver (``"CLARABEL"`` or ``"SCS"``).

    Returns
    -------
    ndarray, shape (d,)
        The minimiser ``w_hat``.

    References
    ----------
    Zeng & Shen, arXiv 2505.21430; Shen, arXiv 2410.01186.

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> X = rng.standard_normal((60, 10)); y = np.sign(X[:, 0])
    >>> w = sparse_hinge(X, y, sparsity=1, margin=0.1)
    >>> int(np.argmax(np.abs(w)))
    0
    """
    X = check_matrix(X)
    n, d = X.shape
    y, _ = check_labels(y, n)
    gamma = check_positive(margin, "margin")
    if sample_weight is None:
        q = np.full(n, 1.0 / n)
    else:
        q = np.asarray(sample_weight, dtype=float)
        if q.shape != (n,):
            raise ValueError(f"sample_weight must have shape ({n},), got {q.shape}")
        if not np.all(np.isfinite(q)) or np.any(q < 0) or q.sum() <= 0:
            raise ValueError("sample_weight must be finite, nonnegative and not all zero")
    s = None if sparsity is None else check_sparsity(sparsity, d)
    if (center is None) != (radius is None):
        raise ValueError("center and radius must be given together (the localisation ball)")
    if center is not None:
        center = _check_array(center, "center", shape=(d,))
        radius = check_positive(radius, "radius")
    keep = q > 0
    Xk, yk, qk = X[keep], y[keep], q[keep]
    w = cp.Variable(d)
    margins = cp.multiply(yk, Xk @ w) / gamma  # (n,)
    objective = cp.Minimize(qk @ cp.pos(1 - margins))
    cons = [cp.norm(w, 2) <= 1]
    if s is not None:
        cons.append(cp.norm(w, 1) <= math.sqrt(s))
    if center is not None:
        cons.append(cp.norm(w - center, 2) <= radius)  # ||w - w_{t-1}||_2 <= r_t
    prob = cp.Problem(objective, cons)
    prob.solve(solver=solver)
    if w.value is None or prob.status not in ("optimal", "optimal_inaccurate"):
        raise RuntimeError(f"hinge program failed with status {prob.status!r} ({solver})")
    return np.asarray(w.value, dtype=float).copy()
