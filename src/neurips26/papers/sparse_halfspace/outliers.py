"""Outlier handling: the L-infinity filter and soft outlier removal over the sparse set W.

Soft outlier removal looks for weights ``q`` in the capped simplex
``Q = {q : sum q = 1, 0 <= q_i <= 1/((1 - xi) n)}`` such that the weighted second moment
is small in every direction of W: ``sup_{w in W} sum_i q_i <w, x_i>^2 <= sigma_bar^2``.
The sup is a sparse-PCA problem; it is relaxed to the SDP
``sup {<Sigma_q, H> : H psd, tr H <= 1, ||H||_1 <= s}`` (d'Aspremont et al. 2007), which
over-estimates it, so a feasible ``q`` is *certified*. A cutting-plane loop alternates the
SDP (find the worst ``H``) and a small QP over ``q`` (stay in Q, satisfy every cut
``sum_i q_i <H, x_i x_i'> <= sigma_bar^2``, closest to uniform).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import cvxpy as cp
import numpy as np

from neurips26.common.validation import check_array as _check_array

from ._validation import check_fraction, check_int, check_matrix, check_positive, check_sparsity
from .hinge import maximize_linear_l1_l2

OUTLIER_METHODS = ("sdp", "power", "eig")

#: Above this dimension ``method="sdp"`` is refused (d x d PSD variable; minutes per solve).
SDP_MAX_DIM = 150


def filter_threshold(
    num_samples: int, dim: int, *, filter_const: float = 1.0, delta: float = 0.05
) -> float:
    """The L-infinity filter's threshold ``c_f sqrt(2 log(2 n d / delta))``.

    For standardised sub-Gaussian features, ``P(|x_ij| > t) <= 2 exp(-t^2 / 2)``, so by a
    union bound over the ``n d`` entries no clean coordinate exceeds
    ``sqrt(2 log(2 n d / delta))`` with probability ``>= 1 - delta``: the level from the
    analysis, the smallest that keeps every clean point w.h.p. (``c_f = 1``). A looser
    ``c_f`` lets attack points with a coordinate a few times the clean maximum through.

    Parameters
    ----------
    num_samples, dim : int
        ``n`` and ``d``.
    filter_const : float
        ``c_f`` > 0, a multiplier on the union-bound level (1 = the analysis).
    delta : float
        Failure probability ``delta`` in (0, 1) of the union bound.

    Returns
    -------
    float

    Raises
    ------
    TypeError
        ``num_samples`` or ``dim`` not an integer, ``filter_const`` or ``delta`` not a number.
    ValueError
        ``num_samples`` or ``dim`` below 1, ``filter_const`` not finite and positive,
        ``delta`` outside (0, 1), or a threshold that overflows.

    Examples
    --------
    >>> round(filter_threshold(100, 50), 3)
    4.941
    """
    num_samples = check_int(num_samples, "num_samples", minimum=1)
    dim = check_int(dim, "dim", minimum=1)
    c = check_positive(filter_const, "filter_const")
    delta = check_positive(delta, "delta")
    if delta >= 1:
        raise ValueError(f"delta must be in (0, 1), got {delta}")
    out = float(c * math.sqrt(2.0 * math.log(2.0 * num_samples * dim / delta)))
    if not math.isfinite(out):
        raise ValueError(f"filter_const={c:g} is too large: the threshold overflows")
    return out


def variance_cap(
    num_samples: int,
    dim: int,
    sparsity: int | None,
    xi: float,
    *,
    clean_variance: float = 1.0,
    variance_slack: float = 1.0,
) -> float:
    """The cap ``sigma_bar^2`` of soft outlier removal, from the analysis.

    ``sigma_bar^2 = sigma^2 (1 + c_v (xi log(1/xi) + sqrt(s log(d) / n)))``: the clean
    directional second moment ``sigma^2`` plus two deviations the clean sample may show over
    W: the sparse-eigenvalue concentration ``sqrt(s log d / n)`` of ``n`` sub-Gaussian
    points, and ``xi log(1/xi)``, how far removing a ``xi`` fraction can move a Gaussian's
    second moment (the tail mass an adversary can hide in). A cluster of scale ``alpha``
    (``alpha^2 > sigma_bar^2``) then keeps at most ``(sigma_bar^2 - sigma^2) /
    (alpha^2 - sigma^2)`` of the weight.

    Parameters
    ----------
    num_samples : int
        ``n``, the points being reweighted.
    dim : int
        ``d``.
    sparsity : int or None
        ``s`` (None: the L2 ball, ``s = d``).
    xi : float
        Removable fraction in [0, 1).
    clean_variance : float
        ``sigma^2`` > 0 (1 for standardised features, in every direction of a band too).
    variance_slack : float
        ``c_v`` >= 0, the constant in front of the deviations (1 by default, inferred).

    Returns
    -------
    float

    Examples
    --------
    >>> round(variance_cap(600, 200, 3, 0.2), 3)
    1.485
    """
    n = check_int(num_samples, "num_samples", minimum=1)
    d = check_int(dim, "dim", minimum=1)
    s = d if sparsity is None else check_sparsity(sparsity, d)
    xi = check_fraction(xi, "xi")
    sigma2 = check_positive(clean_variance, "clean_variance")
    if isinstance(variance_slack, bool) or not isinstance(variance_slack, (int, float)):
        raise TypeError(f"variance_slack must be a number, got {variance_slack!r}")
    c_v = float(variance_slack)
    if not math.isfinite(c_v) or c_v < 0:
        raise ValueError(f"variance_slack must be a finite number >= 0, got {variance_slack}")
    trim = xi * math.log(1.0 / xi) if xi > 0 else 0.0
    conc = math.sqrt(s * math.log(max(d, 2)) / n)
    return float(sigma2 * (1.0 + c_v * (trim + conc)))


def linf_filter(X, *, threshold: float) -> np.ndarray:
    """Keep the rows with ``||x_i||_inf <= threshold`` (step 1).

    Parameters
    ----------
    X : array_like, shape (n, d)
        Features.
    threshold : float
        The filter level (see :func:`filter_threshold`).

    Returns
    -------
    ndarray of bool, shape (n,)
        True for the rows kept.

    Examples
    --------
    >>> linf_filter([[0.5, -1.0], [0.1, 9.0]], threshold=3.0).tolist()
    [True, False]
    """
    X = check_matrix(X)
    t = check_positive(threshold, "threshold")
    return np.max(np.abs(X), axis=1) <= t  # (n,)


@dataclass(frozen=True)
class SparseVariance:
    """An (upper or lower) bound on ``sup_{w in W} w' Sigma w`` and its maximiser.

    Attributes
    ----------
    value : float
        The SDP value (an upper bound on the sup over W) or the value of the direction found
        by the power method (a lower bound).
    H : ndarray, shape (d, d)
        The maximising matrix (``w w'`` for the power method).
    is_upper_bound : bool
        True for the SDP relaxation and the dense eigenvalue (certificates).
    direction : ndarray of shape (d,) or None
        The unit vector ``w`` when ``H = w w'`` (power method, eigenvalue), else None.
    """

    value: float
    H: np.ndarray
    is_upper_bound: bool
    direction: np.ndarray | None = None


class _SparsePCASDP:
    """The sparse-PCA SDP as a cvxpy problem with the covariance as a parameter (DPP)."""

    def __init__(self, dim: int, sparsity: int, solver: str) -> None:
        self.Sigma = cp.Parameter((dim, dim))
        self.H = cp.Variable((dim, dim), PSD=True)
        cons = [cp.trace(self.H) <= 1, cp.sum(cp.abs(self.H)) <= sparsity]
        self.prob = cp.Problem(cp.Maximize(cp.trace(self.Sigma @ self.H)), cons)
        self.solver = solver

    def __call__(self, Sigma: np.ndarray) -> SparseVariance:
        self.Sigma.value = 0.5 * (Sigma + Sigma.T)
        self.prob.solve(solver=self.solver)
        if self.H.value is None or self.prob.status not in ("optimal", "optimal_inaccurate"):
            raise RuntimeError(f"sparse-PCA SDP failed with status {self.prob.status!r}")
        H = 0.5 * (self.H.value + self.H.value.T)
        # the solver's value can sit a hair below the optimum; <Sigma, H> of a feasible H is a
        # lower bound, the solver's dual value an upper bound: report the larger.
        return SparseVariance(
            value=float(max(self.prob.value, np.sum(Sigma * H))), H=H, is_upper_bound=True
        )


def sparse_pca_sdp(Sigma, *, sparsity: int, solver: str = "CLARABEL") -> SparseVariance:
    """The SDP relaxation ``max <Sigma, H> s.t. H psd, tr H <= 1, ||H||_1 <= s``.

    It upper-bounds ``sup {w' Sigma w : ||w||_2 <= 1, ||w||_1 <= sqrt(s)}`` (take ``H = w w'``)
    and equals the top eigenvalue of a PSD ``Sigma`` when ``s = d``.

    Parameters
    ----------
    Sigma : array_like, shape (d, d)
        Symmetric (weighted second-moment) matrix ``Sigma_q = sum_i q_i x_i x_i'``.
    sparsity : int
        ``s``.
    solver : str
        cvxpy SDP solver (``"CLARABEL"`` or ``"SCS"``).

    Returns
    -------
    SparseVariance

    References
    ----------
    d'Aspremont, El Ghaoui, Jordan & Lanckriet (2007), A direct formulation for sparse PCA
    using semidefinite programming, SIAM Review 49(3).

    Examples
    --------
    >>> round(sparse_pca_sdp(np.diag([3.0, 1.0, 1.0]), sparsity=1).value, 4)
    3.0
    """
    Sigma = check_matrix(Sigma, name="Sigma")
    d = Sigma.shape[0]
    if Sigma.shape != (d, d):
        raise ValueError(f"Sigma must be square, got shape {Sigma.shape}")
    s = check_sparsity(sparsity, d)
    return _SparsePCASDP(d, s, solver)(Sigma)


def sparse_variance_power(
    Sigma, *, sparsity: int, max_iter: int = 30, num_starts: int = 4, tol: float = 1e-5
) -> SparseVariance:
    """Heuristic ``sup_{w in W} w' Sigma w`` by a power method over W (no certificate).

    Each step is ``w <- argmax_{v in W} <Sigma w, v>`` (soft-threshold and normalise); for a
    PSD ``Sigma`` the value never decreases (a conditional-gradient ascent on a convex
    function). Starts: the top eigenvector and the coordinate vectors of the largest
    diagonal entries, as in the truncated power method of Yuan & Zhang (2013).

    Parameters
    ----------
    Sigma : array_like, shape (d, d)
        Symmetric PSD matrix.
    sparsity : int
        ``s``; the set is ``{||w||_2 <= 1, ||w||_1 <= sqrt(s)}``.
    max_iter : int
        Power steps per start.
    num_starts : int
        Number of starting points (1 = the top eigenvector only).
    tol : float
        Stop a start when a step raises the value by less than this fraction.

    Returns
    -------
    SparseVariance
        ``value`` is a lower bound on the sup (``is_upper_bound=False``).
    """
    Sigma = np.asarray(Sigma, dtype=float)
    d = Sigma.shape[0]
    s = check_sparsity(sparsity, d)
    r1 = math.sqrt(s)
    _, vecs = np.linalg.eigh(Sigma)
    starts = [vecs[:, -1]]
    for j in np.argsort(-np.diag(Sigma))[: max(0, num_starts - 1)]:
        e = np.zeros(d)
        e[j] = 1.0
        starts.append(e)
    best_val, best_w = -np.inf, starts[0]
    for w0 in starts:
        w = maximize_linear_l1_l2(Sigma @ w0, radius_l1=r1) if np.any(w0) else w0
        val = float(w @ Sigma @ w)
        for _ in range(max_iter):
            w_new = maximize_linear_l1_l2(Sigma @ w, radius_l1=r1)
            val_new = float(w_new @ Sigma @ w_new)
            w = w_new
            if val_new <= val * (1 + tol):  # no more ascent (the value never decreases)
                val = val_new
                break
            val = max(val, val_new)
        val = float(w @ Sigma @ w)
        if val > best_val:
            best_val, best_w = val, w
    return SparseVariance(
        value=best_val, H=np.outer(best_w, best_w), is_upper_bound=False, direction=best_w
    )


def project_capped_simplex(v, *, cap: float) -> np.ndarray:
    """Projection onto ``{q : sum q = 1, 0 <= q_i <= cap}`` (bisection on the shift).

    Parameters
    ----------
    v : array_like, shape (n,)
        Finite numbers. The projection is unchanged by adding a constant to every entry,
        so entries larger than ``1e6`` in magnitude are first shifted by ``max(v)``; a
        range too wide for that (``max(v) - min(v)`` overflowing) is refused.
    cap : float
        Upper bound per entry, finite and ``> 0``; needs ``cap * n >= 1``.

    Returns
    -------
    ndarray, shape (n,)
    """
    v = _check_array(v, "v", ndim=1)
    cap = check_positive(cap, "cap")
    n = v.shape[0]
    if np.abs(v).max() > 1e6:  # the bisection below cannot resolve a huge common offset
        with np.errstate(over="ignore", invalid="ignore"):
            v = v - v.max()
        if not np.all(np.isfinite(v)):
            raise ValueError("v spans too wide a range: max(v) - min(v) overflows")
    if cap * n < 1 - 1e-12:
        raise ValueError(f"capped simplex is empty: cap {cap} * n {n} < 1")
    lo, hi = float(v.min() - cap - 1.0), float(v.max() + 1.0)
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        if np.clip(v - mid, 0.0, cap).sum() > 1.0:
            lo = mid
        else:
            hi = mid
    q = np.clip(v - 0.5 * (lo + hi), 0.0, cap)
    return q / q.sum() if abs(q.sum() - 1.0) > 0 else q


class InfeasibleWeightsError(ValueError):
    """No weights in the capped simplex meet the variance bound (raise the slack or xi)."""


@dataclass(frozen=True)
class OutlierWeights:
    """Result of soft outlier removal.

    Attributes
    ----------
    q : ndarray, shape (n,)
        Weights in the capped simplex ``sum q = 1``, ``0 <= q_i <= 1/((1 - xi) n)``.
    max_variance : float
        The last oracle value of ``sup_{w in W} sum_i q_i <w, x_i>^2`` (SDP upper bound, exact
        eigenvalue, or power-method lower bound).
    bound : float
        The cap ``sigma_bar^2``.
    num_cuts : int
        Cutting planes added.
    certified : bool
        True when an upper bound (SDP or eigenvalue) of the final ``q`` is within
        ``bound * (1 + tol)``. Always False for ``method="power"``.
    method : str
        The oracle used.
    """

    q: np.ndarray
    max_variance: float
    bound: float
    num_cuts: int
    certified: bool
    method: str


def _weight_qp(cuts: list[np.ndarray], n: int, cap: float, bound: float, solver: str):
    """``min ||q||^2`` over the capped simplex and the cuts; None when infeasible."""
    q = cp.Variable(n)
    A = np.vstack(cuts)  # (k, n)
    cons = [cp.sum(q) == 1, q >= 0, q <= cap, A @ q <= bound]
    prob = cp.Problem(cp.Minimize(cp.sum_squares(q)), cons)
    prob.solve(solver=solver)
    if prob.status in ("infeasible", "infeasible_inaccurate") or q.value is None:
        return None
    return np.asarray(q.value, dtype=float)


def soft_outlier_weights(
    X,
    *,
    sparsity: int | None,
    xi: float,
    bound: float,
    method: str = "sdp",
    max_iter: int = 50,
    tol: float = 1e-4,
    solver: str = "CLARABEL",
    sdp_solver: str = "SCS",
) -> OutlierWeights:
    """Soft outlier removal over the sparse set W by cutting planes (step 2).

    Finds ``q`` with ``sum q = 1``, ``0 <= q_i <= 1/((1 - xi) n)`` and
    ``sup_{w in W} sum_i q_i <w, x_i>^2 <= sigma_bar^2`` (Eq. (2)), starting from uniform
    ``q``. Each round asks the oracle for the worst ``H``; if ``<Sigma_q, H>`` exceeds the
    bound by more than ``tol`` (relative), the cut ``sum_i q_i x_i' H x_i <= sigma_bar^2`` is
    added and ``q`` is re-solved as the point of the feasible polytope closest to uniform
    (a QP: ``min ||q||^2``).

    Parameters
    ----------
    X : array_like, shape (n, d)
        Features (after the L-infinity filter).
    sparsity : int or None
        ``s`` of ``W = {||w||_2 <= 1, ||w||_1 <= sqrt(s)}``; None for the unit L2 ball
        (Shen's dense algorithm; then ``method`` must be ``"eig"``).
    xi : float
        Fraction in [0, 1) that may be removed: the cap is ``1/((1 - xi) n)`` (``xi = 2 eta``).
    bound : float
        ``sigma_bar^2`` > 0, the allowed directional second moment.
    method : {"sdp", "power", "eig"}
        Oracle for the sup: the sparse-PCA SDP (certified; ``d <= 150``), the power method
        over W (heuristic, uncertified), or the top eigenvalue (exact for the L2 ball; an upper
        bound for W).
    max_iter : int
        Maximum number of cuts.
    tol : float
        Relative violation accepted: stop when the oracle value is ``<= bound (1 + tol)``.
    solver : str
        cvxpy solver of the weight QP.
    sdp_solver : str
        cvxpy solver of the SDP (SCS by default: first-order, fast at d >= 40).

    Returns
    -------
    OutlierWeights

    Raises
    ------
    InfeasibleWeightsError
        A ``ValueError``: the cuts and the capped simplex have no common point (the variance
        bound is too tight for this data: raise ``variance_slack`` or ``xi``).

    References
    ----------
    Shen, arXiv 2410.01186 (soft outlier removal for dense halfspaces); d'Aspremont et al.
    (2007); Yuan & Zhang (2013).

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> X = rng.standard_normal((100, 8)); X[:5] = 6.0
    >>> res = soft_outlier_weights(X, sparsity=2, xi=0.2, bound=2.5, method="sdp")
    >>> bool(res.q[:5].sum() < 0.05), res.certified
    (True, True)
    """
    X = check_matrix(X)
    n, d = X.shape
    if method not in OUTLIER_METHODS:
        raise ValueError(f"unknown method {method!r}; choose one of {OUTLIER_METHODS}")
    if sparsity is None:
        if method != "eig":
            raise ValueError("sparsity=None (the L2 ball) needs method='eig'")
        s = d
    else:
        s = check_sparsity(sparsity, d)
    xi = check_fraction(xi, "xi")
    sigma2 = check_positive(bound, "bound")
    check_int(max_iter, "max_iter", minimum=0)
    check_positive(tol, "tol")
    if method == "sdp" and d > SDP_MAX_DIM:
        raise ValueError(
            f"method='sdp' with dim {d} > {SDP_MAX_DIM} is too slow (a d x d PSD variable "
            f"per cut); use method='power' (heuristic, uncertified)"
        )
    if method == "sdp":
        oracle = _SparsePCASDP(d, s, sdp_solver)
    elif method == "power":

        def oracle(S):
            return sparse_variance_power(S, sparsity=s)
    else:

        def oracle(S):
            vals, vecs = np.linalg.eigh(S)
            v = vecs[:, -1]
            return SparseVariance(
                value=float(vals[-1]), H=np.outer(v, v), is_upper_bound=True, direction=v
            )

    cap = 1.0 / ((1.0 - xi) * n)
    q = np.full(n, 1.0 / n)
    cuts: list[np.ndarray] = []
    res = None
    for it in range(max_iter + 1):
        Sigma = X.T @ (q[:, None] * X)  # (d, d) Sigma_q
        res = oracle(Sigma)
        if res.value <= sigma2 * (1 + tol) or it == max_iter:
            break
        if res.direction is not None:  # H = w w': x_i' H x_i = <w, x_i>^2
            cuts.append((X @ res.direction) ** 2)
        else:
            cuts.append(np.einsum("ij,jk,ik->i", X, res.H, X))  # (n,) x_i' H x_i
        q_new = _weight_qp(cuts, n, cap, sigma2, solver)
        if q_new is None:
            raise InfeasibleWeightsError(
                f"soft outlier removal is infeasible after {len(cuts)} cuts: no weights with "
                f"q_i <= 1/((1 - xi) n) (xi = {xi:g}) keep the sparse variance below "
                f"{sigma2:g}; use a larger variance_slack (bound) or noise_rate (xi)"
            )
        q = project_capped_simplex(q_new, cap=cap)
    certified = bool(res.is_upper_bound and res.value <= sigma2 * (1 + tol))
    return OutlierWeights(
        q=q,
        max_variance=float(res.value),
        bound=sigma2,
        num_cuts=len(cuts),
        certified=certified,
        method=method,
    )
