"""Stage 1: the many-facet Rasch rating-scale model (MFRM) as a ruler for a human benchmark.

The paper validates an LLM judge against a human benchmark only after auditing the human
ratings themselves as a measuring instrument. Each rating ``x`` in ``{1..K}`` of system ``s``
on item (document) ``d`` by rater ``r`` follows Linacre's many-facet rating scale model,

    log P(X = k) / P(X = k - 1) = theta_s - delta_d - rho_r - tau_k,    k = 2..K,

so system quality ``theta``, item difficulty ``delta``, rater severity ``rho`` and the
category thresholds ``tau`` sit on one logit scale. This module fits the model by penalised
joint maximum likelihood (JMLE) with analytic gradients and the exact observed information
(the model is a multinomial logit with canonical link, so observed and expected information
coincide), and reports standard errors and infit/outfit statistics per facet level.

Deviations from the paper
-------------------------
- Estimation is penalised JMLE (tiny ridge, default 1e-4), as in FACETS, rather than marginal
  ML; JMLE has a known small outward bias of item/rater estimates when each level has few
  observations. The ridge keeps extreme-score levels (all ratings in the top category) finite.
- L-BFGS-B (scipy) runs first; when there are at most ``dense_limit`` free parameters the
  solution is polished with scipy's ``trust-exact`` on the exact Hessian, and standard errors
  come from the inverse observed information. Above that limit the SEs use the diagonal of
  the information (a documented approximation).
- Identification: ``sum delta = 0``, ``sum rho = 0`` and ``sum tau = 0`` (per rater when
  ``thresholds="rater"``); ``theta`` is free.
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping
from dataclasses import dataclass, field

import networkx as nx
import numpy as np
import pandas as pd
import scipy.sparse as sp
from scipy.optimize import minimize

from neurips26.common.threads import single_threaded
from neurips26.common.validation import check_array

__all__ = [
    "MFRMFit",
    "MFRMGradient",
    "category_probabilities",
    "expected_score",
    "fit_mfrm",
    "mfrm_gradient",
    "mfrm_loglik",
    "prepare_ratings",
]

RATING_COLUMNS = ("system", "item", "rater", "score")


# ----------------------------------------------------------------------------- model core
def category_probabilities(eta, tau) -> np.ndarray:
    """Category probabilities of the rating scale model.

    Parameters
    ----------
    eta : array_like, shape (...)
        Location ``theta_s - delta_d - rho_r`` of each rating (logits).
    tau : array_like, shape (K-1,) or (..., K-1)
        Thresholds ``tau_2..tau_K`` (broadcast against ``eta``).

    Returns
    -------
    ndarray, shape (..., K)
        ``P(X = k)`` for ``k = 1..K``; each row sums to one.

    Raises
    ------
    ValueError
        If ``eta`` or ``tau`` hold NaN/inf, or ``|eta| * (K-1)`` exceeds ``1e300``
        (the category scores would overflow).

    Examples
    --------
    >>> category_probabilities([0.0], [-1.0, 1.0]).round(3)
    array([[0.212, 0.576, 0.212]])
    """
    eta = check_array(eta, "eta", ndim=None, min_size=0)
    tau = check_array(tau, "tau", ndim=None, min_size=0)
    if tau.ndim == 0 or tau.shape[-1] < 1:
        raise ValueError("tau must hold K-1 >= 1 thresholds in its last axis")
    # psi_k = k * eta - ... overflows to inf (and the softmax to NaN) when |eta| is huge.
    if eta.size and tau.shape[-1] * float(np.max(np.abs(eta))) > _MAX_PSI:
        raise ValueError(
            f"eta must have |eta| * (K-1) <= {_MAX_PSI:g} (the category scores overflow), "
            f"got max |eta| = {float(np.max(np.abs(eta))):g}"
        )
    logp = _log_probs(eta, tau)
    return np.exp(logp)


#: Largest ``|eta| * (K-1)`` accepted by :func:`category_probabilities` (float overflow).
_MAX_PSI = 1e300


def _log_probs(eta: np.ndarray, tau: np.ndarray) -> np.ndarray:
    # Eq. (1): psi_k = sum_{h<=k} (eta - tau_h), psi_1 = 0; P(X=k) = softmax(psi)_k.
    num_cat = tau.shape[-1] + 1
    k = np.arange(num_cat, dtype=float)  # (K,)
    cum = np.cumsum(tau, axis=-1)  # (..., K-1)
    cum = np.concatenate([np.zeros((*cum.shape[:-1], 1)), cum], axis=-1)  # (..., K)
    psi = k * eta[..., None] - cum  # (..., K)
    psi = psi - psi.max(axis=-1, keepdims=True)
    return psi - np.log(np.exp(psi).sum(axis=-1, keepdims=True))


#: Run a function with one BLAS thread: these problems are small, and threads fight.
single_thread = single_threaded


def expected_score(eta, tau) -> np.ndarray:
    """Expected rating ``E[X] = sum_k k P(X = k)`` on the 1..K scale.

    Parameters
    ----------
    eta : array_like, shape (...)
        Linear predictor ``theta_s - delta_d - rho_r``.
    tau : array_like, shape (K - 1,) or (..., K - 1)
        Category thresholds.

    Returns
    -------
    ndarray, shape of ``eta``
        The expected score, in ``[1, K]``.
    """
    p = category_probabilities(eta, tau)
    return p @ np.arange(1, p.shape[-1] + 1)


def _rsm_terms(eta: np.ndarray, tau_obs: np.ndarray, x0: np.ndarray):
    """Log-likelihood pieces for ratings ``x0`` in 0..K-1.

    Returns ll (scalar), resid = x0 - E (N,), dtau (N, K-1) = d ll_n / d tau_j and the
    probabilities P (N, K).
    """
    logp = _log_probs(eta, tau_obs)  # (N, K)
    p = np.exp(logp)
    num_cat = p.shape[-1]
    n = np.arange(x0.shape[0])
    ll = float(logp[n, x0].sum())
    expect = p @ np.arange(num_cat)  # (N,)
    # survival S_j = P(X > j) for j = 0..K-2 (0-based); d psi_k / d tau_j = -1[k > j]
    surv = np.cumsum(p[:, ::-1], axis=1)[:, ::-1][:, 1:]  # (N, K-1)
    ind = x0[:, None] > np.arange(num_cat - 1)[None, :]  # (N, K-1)
    dtau = surv - ind
    return ll, x0 - expect, dtau, p


def _info_blocks(p: np.ndarray):
    """Per-observation covariances of the sufficient statistics (k, -1[k>j])."""
    num_cat = p.shape[1]
    k = np.arange(num_cat, dtype=float)
    mean = p @ k  # (N,)
    var = p @ k**2 - mean**2  # (N,)
    surv = np.cumsum(p[:, ::-1], axis=1)[:, ::-1][:, 1:]  # (N, K-1): P(X > j)
    # E[k 1[k>j]] = sum_{k>j} k p_k
    kp = (p * k)[:, ::-1]
    ek_above = np.cumsum(kp, axis=1)[:, ::-1][:, 1:]  # (N, K-1)
    cov_eta_tau = -(ek_above - mean[:, None] * surv)  # Cov(k, -1[k>j])
    return var, cov_eta_tau, surv


def _sum_to_zero(n: int) -> sp.csr_matrix:
    """(n, n-1) basis of vectors summing to zero: [I; -1]."""
    if n <= 1:
        return sp.csr_matrix((n, 0))
    return sp.vstack([sp.identity(n - 1), -np.ones((1, n - 1))]).tocsr()


@dataclass(frozen=True)
class _Problem:
    """A rating-scale likelihood with linear locations and grouped thresholds.

    eta = X_eta @ b_eta + offset ;  tau of obs n = tau_full[group_n] (G, K-1);
    b_full = [b_eta, vec(tau_full)] = L @ b_free.
    """

    x_eta: sp.csr_matrix  # (N, P_eta)
    offset: np.ndarray  # (N,)
    group: np.ndarray  # (N,) threshold group of each observation
    num_groups: int
    x0: np.ndarray  # (N,) ratings in 0..K-1
    num_categories: int
    basis: sp.csr_matrix  # (P_full, P_free)
    ridge: float
    tau_fixed: np.ndarray | None = None  # (G, K-1) when thresholds are not estimated

    @property
    def p_eta(self) -> int:
        return self.x_eta.shape[1]

    def split(self, b_full: np.ndarray):
        b_eta = b_full[: self.p_eta]
        if self.tau_fixed is not None:
            return b_eta, self.tau_fixed
        tau = b_full[self.p_eta :].reshape(self.num_groups, self.num_categories - 1)
        return b_eta, tau

    def value_grad(self, b_free: np.ndarray):
        b_full = self.basis @ b_free
        b_eta, tau = self.split(b_full)
        eta = self.x_eta @ b_eta + self.offset
        ll, resid, dtau, _ = _rsm_terms(eta, tau[self.group], self.x0)
        g_eta = self.x_eta.T @ resid  # (P_eta,) segment sums over facets
        grads = [g_eta]
        if self.tau_fixed is None:
            km1 = self.num_categories - 1
            g_tau = np.zeros((self.num_groups, km1))
            for j in range(km1):  # loop over thresholds, never over observations
                g_tau[:, j] = np.bincount(self.group, weights=dtau[:, j], minlength=self.num_groups)
            grads.append(g_tau.ravel())
        g_full = np.concatenate(grads) - self.ridge * b_full
        obj = ll - 0.5 * self.ridge * float(b_full @ b_full)
        return obj, self.basis.T @ g_full, ll

    def information(self, b_free: np.ndarray, *, dense: bool = True) -> np.ndarray:
        """Observed information (negative Hessian) of the penalised objective, free coords."""
        b_full = self.basis @ b_free
        b_eta, tau = self.split(b_full)
        eta = self.x_eta @ b_eta + self.offset
        p = np.exp(_log_probs(eta, tau[self.group]))
        var, cov_et, surv = _info_blocks(p)
        x = self.x_eta
        if not dense:
            diag_eta = np.asarray((x.multiply(x)).T @ var).ravel()
            diag = [diag_eta]
            if self.tau_fixed is None:
                km1 = self.num_categories - 1
                d_tau = np.zeros((self.num_groups, km1))
                for j in range(km1):
                    d_tau[:, j] = np.bincount(
                        self.group, weights=surv[:, j] - surv[:, j] ** 2, minlength=self.num_groups
                    )
                diag.append(d_tau.ravel())
            full = np.concatenate(diag) + self.ridge
            # diagonal approximation in the free basis
            return np.asarray((self.basis.multiply(self.basis)).T @ full).ravel()
        i_ee = (x.T @ sp.diags(var) @ x).toarray()  # (P_eta, P_eta)
        if self.tau_fixed is None:
            km1 = self.num_categories - 1
            n_obs = x.shape[0]
            rows = np.repeat(np.arange(n_obs), km1)
            cols = (self.group[:, None] * km1 + np.arange(km1)[None, :]).ravel()
            c_mat = sp.csr_matrix(
                (cov_et.ravel(), (rows, cols)), shape=(n_obs, self.num_groups * km1)
            )
            i_et = (x.T @ c_mat).toarray()  # (P_eta, G*(K-1))
            i_tt = np.zeros((self.num_groups * km1, self.num_groups * km1))
            jj = np.maximum.outer(np.arange(km1), np.arange(km1))
            for g in range(self.num_groups):  # loop over threshold groups
                s_g = surv[self.group == g]
                block = s_g.sum(axis=0)[jj] - s_g.T @ s_g  # Cov(1[k>j], 1[k>l]) summed
                i_tt[g * km1 : (g + 1) * km1, g * km1 : (g + 1) * km1] = block
            full = np.block([[i_ee, i_et], [i_et.T, i_tt]])
        else:
            full = i_ee
        full = full + self.ridge * np.eye(full.shape[0])
        basis = self.basis.toarray()
        return basis.T @ full @ basis


def _solve(problem: _Problem, b0: np.ndarray, *, max_iter: int, tol: float, dense: bool):
    n_obs = problem.x0.shape[0]

    def fun(b):
        obj, g, _ = problem.value_grad(b)
        return -obj / n_obs, -g / n_obs

    res = minimize(
        fun,
        b0,
        jac=True,
        method="L-BFGS-B",
        options={"maxiter": max_iter, "gtol": tol, "ftol": 1e-15, "maxcor": 20},
    )
    n_iter = int(res.nit)
    b = res.x
    if dense and b.size > 0:
        res2 = minimize(
            fun,
            b,
            jac=True,
            hess=lambda bb: problem.information(bb) / n_obs,
            method="trust-exact",
            options={"gtol": tol, "maxiter": 100},
        )
        if res2.fun <= res.fun + 1e-12:
            b = res2.x
        n_iter += int(res2.nit)
    _, g_final, ll = problem.value_grad(b)
    grad_norm = float(np.max(np.abs(g_final)) / n_obs) if b.size else 0.0
    converged = bool(np.isfinite(grad_norm) and grad_norm <= max(10 * tol, 1e-6))
    return b, ll, n_iter, grad_norm, converged


# ----------------------------------------------------------------------------- input checks
@dataclass(frozen=True, eq=False)
class RatingData:
    """Ratings encoded as integer codes (an :class:`MFRMFit` keeps the data it was fitted on).

    Attributes
    ----------
    systems, items, raters : ndarray
        Sorted unique labels of each facet.
    system_idx, item_idx, rater_idx : ndarray of int, shape (N,)
        Codes into those labels.
    x0 : ndarray of int, shape (N,)
        Ratings minus one (0..K-1).
    categories : ndarray of int, shape (K,)
        The original score of each model category (differs from 1..K after collapsing).
    """

    systems: np.ndarray
    items: np.ndarray
    raters: np.ndarray
    system_idx: np.ndarray
    item_idx: np.ndarray
    rater_idx: np.ndarray
    x0: np.ndarray
    categories: np.ndarray


def _as_frame(ratings, columns: tuple[str, ...], what: str) -> pd.DataFrame:
    if isinstance(ratings, pd.DataFrame):
        frame = ratings
    elif isinstance(ratings, Mapping):
        lengths = {k: len(np.atleast_1d(v)) for k, v in ratings.items()}
        if len(set(lengths.values())) > 1:
            raise ValueError(f"{what}: columns have different lengths (ragged input): {lengths}")
        frame = pd.DataFrame({k: np.atleast_1d(v) for k, v in ratings.items()})
    elif isinstance(ratings, np.ndarray):
        if ratings.ndim != 2 or ratings.shape[1] != len(columns):
            raise ValueError(
                f"{what}: an array must have shape (N, {len(columns)}) with columns "
                f"{columns}; got shape {ratings.shape}"
            )
        frame = pd.DataFrame(ratings, columns=list(columns))
    else:
        raise TypeError(
            f"{what} must be a pandas DataFrame, a mapping of equal-length arrays or a 2-D "
            f"array; got {type(ratings).__name__}"
        )
    missing = [c for c in columns if c not in frame.columns]
    if missing:
        raise ValueError(
            f"{what} is missing column(s) {missing}; it needs {list(columns)} "
            f"(long format: one row per rating); got {list(frame.columns)}"
        )
    if len(frame) == 0:
        raise ValueError(f"{what} is empty")
    for c in columns:
        n_missing = int(frame[c].isna().sum())
        if n_missing:
            raise ValueError(f"{what}: column {c!r} has {n_missing} missing (NaN/None) value(s)")
    return frame


def _check_scores(score: pd.Series, num_categories: int, what: str) -> np.ndarray:
    try:
        values = np.asarray(score, dtype=float)
    except (TypeError, ValueError) as err:
        raise ValueError(f"{what}: scores must be numbers in 1..{num_categories}") from err
    if not np.all(np.isfinite(values)):
        raise ValueError(f"{what}: scores must be finite")
    if np.any(values != np.round(values)):
        bad = values[values != np.round(values)][:3]
        raise ValueError(f"{what}: scores must be integers 1..{num_categories}; got {bad}")
    bad = values[(values < 1) | (values > num_categories)]
    if bad.size:
        raise ValueError(
            f"{what}: scores must lie in 1..{num_categories} (num_categories={num_categories}); "
            f"got {np.unique(bad)[:5]}"
        )
    return values.astype(int)


def prepare_ratings(
    ratings,
    *,
    num_categories: int,
    collapse_empty: bool = False,
    min_systems: int = 2,
    min_items: int = 2,
) -> RatingData:
    """Validate a long table of ratings and encode it.

    Parameters
    ----------
    ratings : DataFrame, mapping of arrays, or ndarray of shape (N, 4)
        One row per rating with columns ``system``, ``item``, ``rater``, ``score``
        (score in ``1..num_categories``).
    num_categories : int
        ``K``, the number of ordered categories (>= 2).
    collapse_empty : bool
        If False (default) a category that no rating uses raises (its threshold is not
        identified); if True empty categories are dropped and the rest renumbered.
    min_systems, min_items : int
        Smallest number of distinct systems and items accepted.

    Returns
    -------
    RatingData
    """
    if isinstance(num_categories, bool) or not isinstance(num_categories, (int, np.integer)):
        raise TypeError(f"num_categories must be an int, got {type(num_categories).__name__}")
    if num_categories < 2:
        raise ValueError(f"num_categories must be >= 2, got {num_categories}")
    frame = _as_frame(ratings, RATING_COLUMNS, "ratings")
    scores = _check_scores(frame["score"], int(num_categories), "ratings")
    counts = np.bincount(scores - 1, minlength=num_categories)
    if np.count_nonzero(counts) < 2:
        raise ValueError(
            f"ratings: all scores equal {scores[0]} (constant score column); the rating scale "
            "model needs at least two observed categories"
        )
    categories = np.arange(1, num_categories + 1)
    empty = categories[counts == 0]
    if empty.size and not collapse_empty:
        raise ValueError(
            f"ratings: category/categories {empty.tolist()} never observed, so their thresholds "
            "are not identified; pass collapse_empty=True to merge them away or lower "
            "num_categories"
        )
    used = categories[counts > 0]
    remap = np.full(num_categories + 1, -1)
    remap[used] = np.arange(used.size)
    x0 = remap[scores]
    codes = {}
    for col in ("system", "item", "rater"):
        codes[col] = pd.factorize(frame[col], sort=True)
    n_sys = len(codes["system"][1])
    n_item = len(codes["item"][1])
    if n_sys < min_systems:
        raise ValueError(f"ratings: need at least {min_systems} systems, got {n_sys}")
    if n_item < min_items:
        raise ValueError(f"ratings: need at least {min_items} items, got {n_item}")
    data = RatingData(
        systems=np.asarray(codes["system"][1]),
        items=np.asarray(codes["item"][1]),
        raters=np.asarray(codes["rater"][1]),
        system_idx=codes["system"][0].astype(np.intp),
        item_idx=codes["item"][0].astype(np.intp),
        rater_idx=codes["rater"][0].astype(np.intp),
        x0=x0.astype(np.intp),
        categories=used,
    )
    _check_connected(data)
    return data


def _check_connected(data: RatingData) -> None:
    """Raise when the facets split into unlinked subsets (FACETS 'disjoint subsets')."""
    graph = nx.Graph()
    s = [("system", v) for v in data.systems]
    graph.add_nodes_from(s)
    graph.add_nodes_from(("item", v) for v in data.items)
    graph.add_nodes_from(("rater", v) for v in data.raters)
    pairs_sd = np.unique(np.stack([data.system_idx, data.item_idx], 1), axis=0)
    pairs_sr = np.unique(np.stack([data.system_idx, data.rater_idx], 1), axis=0)
    pairs_dr = np.unique(np.stack([data.item_idx, data.rater_idx], 1), axis=0)
    graph.add_edges_from(
        (("system", data.systems[a]), ("item", data.items[b])) for a, b in pairs_sd
    )
    graph.add_edges_from(
        (("system", data.systems[a]), ("rater", data.raters[b])) for a, b in pairs_sr
    )
    graph.add_edges_from((("item", data.items[a]), ("rater", data.raters[b])) for a, b in pairs_dr)
    comps = list(nx.connected_components(graph))
    if len(comps) > 1:
        sizes = sorted((len(c) for c in comps), reverse=True)
        example = sorted(min(comps, key=len), key=str)[:4]
        raise ValueError(
            f"ratings: the design is disconnected into {len(comps)} subsets (sizes {sizes}); "
            f"facet levels such as {example} share no ratings with the rest, so their "
            "measures are not on a common scale"
        )


# ----------------------------------------------------------------------------- the fit
@dataclass(frozen=True, eq=False)
class MFRMFit:
    """A fitted many-facet rating scale model (one rating dimension).

    Attributes
    ----------
    theta, delta, rho : ndarray, shapes (S,), (D,), (R,)
        System measures ``theta_s``, item difficulties ``delta_d`` (sum 0) and rater
        severities ``rho_r`` (sum 0), in logits.
    tau : ndarray, shape (K-1,) or (R, K-1)
        Thresholds ``tau_2..tau_K`` (sum 0; per rater when ``thresholds="rater"``).
    theta_se, delta_se, rho_se, tau_se : ndarray
        Standard errors from the inverse observed information.
    theta_cov : ndarray, shape (S, S)
        Covariance of ``theta`` (diagonal when the dense information was not formed).
    loglik : float
        Log-likelihood at the estimate (without the ridge penalty).
    converged : bool
        Whether the optimiser met the gradient tolerance.
    n_iter : int
        Optimiser iterations.
    grad_norm : float
        Largest absolute gradient entry per observation at the estimate.
    infit, outfit : dict of str to ndarray
        Infit and outfit mean squares per level of ``"system"``, ``"item"``, ``"rater"``.
    data : RatingData
        The encoded ratings (labels, codes, categories).
    num_categories : int
        ``K`` after any collapsing of empty categories.
    thresholds : str
        ``"shared"`` or ``"rater"``.
    ridge : float
        The penalty used.
    identified : bool
        False when facets are nested (e.g. items within raters) so that some contrasts
        among item and rater measures are fixed only by the ridge.
    """

    theta: np.ndarray
    delta: np.ndarray
    rho: np.ndarray
    tau: np.ndarray
    theta_se: np.ndarray
    delta_se: np.ndarray
    rho_se: np.ndarray
    tau_se: np.ndarray
    theta_cov: np.ndarray
    loglik: float
    converged: bool
    n_iter: int
    grad_norm: float
    infit: dict = field(repr=False)
    outfit: dict = field(repr=False)
    data: RatingData = field(repr=False)
    num_categories: int = 5
    thresholds: str = "shared"
    ridge: float = 1e-4
    identified: bool = True

    @property
    def systems(self) -> np.ndarray:
        return self.data.systems

    @property
    def items(self) -> np.ndarray:
        return self.data.items

    @property
    def raters(self) -> np.ndarray:
        return self.data.raters

    def tau_of(self, rater_idx: np.ndarray) -> np.ndarray:
        """Thresholds of each observation's rater, shape (N, K-1)."""
        if self.tau.ndim == 1:
            return np.broadcast_to(self.tau, (len(rater_idx), self.tau.size))
        return self.tau[rater_idx]

    def eta(self) -> np.ndarray:
        """``theta_s - delta_d - rho_r`` for every fitted rating, shape (N,)."""
        d = self.data
        return self.theta[d.system_idx] - self.delta[d.item_idx] - self.rho[d.rater_idx]

    def probabilities(self) -> np.ndarray:
        """Model category probabilities of every fitted rating, shape (N, K)."""
        return category_probabilities(self.eta(), self.tau_of(self.data.rater_idx))

    def table(self, facet: str) -> pd.DataFrame:
        """Measures, SEs and fit statistics of one facet as a DataFrame."""
        if facet not in ("system", "item", "rater"):
            raise ValueError(f"facet must be 'system', 'item' or 'rater', got {facet!r}")
        labels = {"system": self.systems, "item": self.items, "rater": self.raters}[facet]
        est = {"system": self.theta, "item": self.delta, "rater": self.rho}[facet]
        se = {"system": self.theta_se, "item": self.delta_se, "rater": self.rho_se}[facet]
        return pd.DataFrame(
            {
                facet: labels,
                "measure": est,
                "se": se,
                "infit": self.infit[facet],
                "outfit": self.outfit[facet],
            }
        )


def residual_fit(x0: np.ndarray, p: np.ndarray, groups: np.ndarray, num_groups: int):
    """Infit and outfit mean squares of ratings grouped by facet level.

    Parameters
    ----------
    x0 : ndarray of int, shape (N,)
        Ratings in 0..K-1.
    p : ndarray, shape (N, K)
        Model category probabilities.
    groups : ndarray of int, shape (N,)
        Level of each rating.
    num_groups : int
        Number of levels.

    Returns
    -------
    infit, outfit : ndarray, shape (num_groups,)
        ``infit = sum (x-E)^2 / sum Var``; ``outfit = mean z^2`` with
        ``z = (x - E) / sqrt(Var)`` (NaN for a level without ratings).
    """
    k = np.arange(p.shape[1])
    mean = p @ k
    var = np.maximum(p @ k**2 - mean**2, 1e-12)
    sq = (x0 - mean) ** 2  # (N,)
    cnt = np.bincount(groups, minlength=num_groups).astype(float)
    with np.errstate(invalid="ignore", divide="ignore"):
        outfit = np.bincount(groups, weights=sq / var, minlength=num_groups) / cnt
        infit = np.bincount(groups, weights=sq, minlength=num_groups) / np.bincount(
            groups, weights=var, minlength=num_groups
        )
    return infit, outfit


def _mfrm_problem(
    s_idx, d_idx, r_idx, x0, *, sizes, num_categories, thresholds, ridge, constrained=True
) -> _Problem:
    """The MFRM as a :class:`_Problem`: eta = theta_s - delta_d - rho_r, grouped tau."""
    n_s, n_d, n_r = sizes
    n_obs = x0.size
    rows = np.repeat(np.arange(n_obs), 3)
    cols = np.stack([s_idx, n_s + d_idx, n_s + n_d + r_idx], axis=1).ravel()
    vals = np.tile([1.0, -1.0, -1.0], n_obs)
    x_eta = sp.csr_matrix((vals, (rows, cols)), shape=(n_obs, n_s + n_d + n_r))  # (N, P_eta)
    num_groups = n_r if thresholds == "rater" else 1
    group = (
        np.asarray(r_idx, dtype=np.intp)
        if thresholds == "rater"
        else np.zeros(n_obs, dtype=np.intp)
    )
    if constrained:
        blocks = [sp.identity(n_s), _sum_to_zero(n_d), _sum_to_zero(n_r)]
        blocks += [_sum_to_zero(num_categories - 1)] * num_groups
        basis = sp.block_diag(blocks, format="csr")
    else:
        basis = sp.identity(n_s + n_d + n_r + num_groups * (num_categories - 1), format="csr")
    return _Problem(
        x_eta=x_eta,
        offset=np.zeros(n_obs),
        group=group,
        num_groups=num_groups,
        x0=np.asarray(x0, dtype=np.intp),
        num_categories=num_categories,
        basis=basis,
        ridge=float(ridge),
    )


@dataclass(frozen=True)
class MFRMGradient:
    """Gradient of the MFRM log-likelihood with respect to every facet parameter."""

    theta: np.ndarray
    delta: np.ndarray
    rho: np.ndarray
    tau: np.ndarray


def mfrm_gradient(theta, delta, rho, tau, system_idx, item_idx, rater_idx, scores) -> MFRMGradient:
    """Analytic gradient of :func:`mfrm_loglik` (unconstrained, no penalty).

    Computed with facet segment sums (``d ll / d theta_s = sum_{n: s_n = s} (x_n - E_n)``,
    ``d ll / d tau_k = sum_n P(X_n >= k) - 1[x_n >= k]``), the same code the fitter uses.

    Parameters
    ----------
    theta, delta, rho, tau, system_idx, item_idx, rater_idx, scores
        As in :func:`mfrm_loglik`.

    Returns
    -------
    MFRMGradient
        Arrays shaped like ``theta``, ``delta``, ``rho`` and ``tau``.
    """
    theta, delta, rho = (np.asarray(a, float) for a in (theta, delta, rho))
    tau = np.asarray(tau, float)
    thresholds = "rater" if tau.ndim == 2 else "shared"
    sizes = (theta.size, delta.size, rho.size)
    problem = _mfrm_problem(
        np.asarray(system_idx, np.intp),
        np.asarray(item_idx, np.intp),
        np.asarray(rater_idx, np.intp),
        np.asarray(scores, np.intp) - 1,
        sizes=sizes,
        num_categories=tau.shape[-1] + 1,
        thresholds=thresholds,
        ridge=0.0,
        constrained=False,
    )
    b = np.concatenate([theta, delta, rho, tau.ravel()])
    _, g, _ = problem.value_grad(b)
    o = np.cumsum([0, *sizes])
    return MFRMGradient(
        theta=g[: o[1]], delta=g[o[1] : o[2]], rho=g[o[2] : o[3]], tau=g[o[3] :].reshape(tau.shape)
    )


def _is_identified(problem: _Problem, b_free: np.ndarray) -> bool:
    """False when the unpenalised information has a null direction (nested facets)."""
    info = problem.information(b_free)
    info = info - problem.ridge * (problem.basis.T @ problem.basis).toarray()
    eig = np.linalg.eigvalsh(info)
    return not (eig.size and eig[0] <= 1e-8 * max(eig[-1], 1.0))


@single_thread
def fit_mfrm(
    ratings,
    *,
    num_categories: int,
    thresholds: str = "shared",
    ridge: float = 1e-4,
    max_iter: int = 2000,
    tol: float = 1e-8,
    collapse_empty: bool = False,
    dense_limit: int = 2000,
) -> MFRMFit:
    """Fit the many-facet Rasch rating scale model by penalised joint maximum likelihood.

    Parameters
    ----------
    ratings : DataFrame, mapping of arrays, or ndarray of shape (N, 4)
        Long table with columns ``system``, ``item``, ``rater``, ``score`` (``1..K``);
        one rating dimension.
    num_categories : int
        ``K``, the number of ordered categories.
    thresholds : {"shared", "rater"}
        One set of thresholds ``tau_k`` (rating scale model) or one per rater
        (partial-credit thresholds ``tau_{r,k}``).
    ridge : float
        Penalty ``ridge / 2 * ||params||^2`` added to the negative log-likelihood (>= 0).
    max_iter : int
        Maximum L-BFGS iterations.
    tol : float
        Gradient tolerance (per observation).
    collapse_empty : bool
        Merge categories that no rating uses instead of raising.
    dense_limit : int
        Largest number of free parameters for the dense Hessian (polish and full covariance).

    Returns
    -------
    MFRMFit

    Warns
    -----
    RuntimeWarning
        When the optimiser did not converge (``converged=False`` in the result).

    References
    ----------
    Linacre, J. M. (1989). Many-facet Rasch measurement. MESA Press.
    Wright, B. D. and Masters, G. N. (1982). Rating scale analysis. MESA Press.

    Examples
    --------
    >>> import pandas as pd
    >>> df = pd.DataFrame({"system": [0, 0, 1, 1] * 3, "item": [0, 1, 0, 1] * 3,
    ...                    "rater": [0] * 4 + [1] * 4 + [2] * 4,
    ...                    "score": [1, 2, 2, 3, 1, 3, 2, 3, 2, 2, 3, 3]})
    >>> fit = fit_mfrm(df, num_categories=3)
    >>> bool(fit.theta[1] > fit.theta[0])
    True
    """
    if thresholds not in ("shared", "rater"):
        raise ValueError(f"thresholds must be 'shared' or 'rater', got {thresholds!r}")
    if not np.isfinite(ridge) or ridge < 0:
        raise ValueError(f"ridge must be a finite number >= 0, got {ridge}")
    if int(max_iter) < 1:
        raise ValueError(f"max_iter must be >= 1, got {max_iter}")
    if not tol > 0:
        raise ValueError(f"tol must be > 0, got {tol}")
    data = prepare_ratings(ratings, num_categories=num_categories, collapse_empty=collapse_empty)
    num_cat = data.categories.size
    if thresholds == "rater":
        per_rater = np.zeros((data.raters.size, num_cat), dtype=int)
        np.add.at(per_rater, (data.rater_idx, data.x0), 1)
        empty = np.argwhere(per_rater == 0)
        if empty.size:
            r, k = empty[0]
            raise ValueError(
                f"ratings: rater {data.raters[r]!r} never uses category {data.categories[k]}, "
                "so its own thresholds are not identified; use thresholds='shared'"
            )
    problem = _mfrm_problem(
        data.system_idx,
        data.item_idx,
        data.rater_idx,
        data.x0,
        sizes=(data.systems.size, data.items.size, data.raters.size),
        num_categories=num_cat,
        thresholds=thresholds,
        ridge=float(ridge),
    )
    n_s, n_d, n_r = data.systems.size, data.items.size, data.raters.size
    num_groups = problem.num_groups
    basis = problem.basis
    p_free = basis.shape[1]
    dense = p_free <= dense_limit
    b0 = np.zeros(p_free)
    identified = _is_identified(problem, b0) if dense else True
    if not identified:
        warnings.warn(
            "fit_mfrm: the model is not fully identified on this design (a facet is nested "
            "in another, e.g. each item is rated by a single rater for all systems, so item "
            "difficulty and rater severity cannot be told apart). The ridge picks one solution; "
            "system contrasts remain estimable but item/rater measures and their SEs do not",
            RuntimeWarning,
            stacklevel=2,
        )
    b, ll, n_iter, grad_norm, converged = _solve(
        problem, b0, max_iter=int(max_iter), tol=float(tol), dense=dense
    )
    if not converged:
        warnings.warn(
            f"fit_mfrm did not converge (max |gradient| per rating {grad_norm:.2e} after "
            f"{n_iter} iterations); raise max_iter or check for extreme scores",
            RuntimeWarning,
            stacklevel=2,
        )
    b_full = basis @ b
    # standard errors: cov_full = L I_free^{-1} L^T
    if dense:
        info = problem.information(b)
        cov_free = np.linalg.inv(info)
        lb = basis.toarray()
        cov_full = lb @ cov_free @ lb.T
        var_full = np.diag(cov_full).copy()
        theta_cov = cov_full[:n_s, :n_s]
    else:
        diag = problem.information(b, dense=False)
        var_free = 1.0 / diag
        var_full = np.asarray((basis.multiply(basis)) @ var_free).ravel()
        theta_cov = np.diag(var_full[:n_s])
    se_full = np.sqrt(np.maximum(var_full, 0.0))
    o = [0, n_s, n_s + n_d, n_s + n_d + n_r]
    tau = b_full[o[3] :].reshape(num_groups, num_cat - 1)
    tau_se = se_full[o[3] :].reshape(num_groups, num_cat - 1)
    if thresholds == "shared":
        tau, tau_se = tau[0], tau_se[0]
    theta, delta, rho = b_full[: o[1]], b_full[o[1] : o[2]], b_full[o[2] : o[3]]
    eta = theta[data.system_idx] - delta[data.item_idx] - rho[data.rater_idx]
    tau_obs = tau if tau.ndim == 1 else tau[data.rater_idx]
    p = category_probabilities(eta, tau_obs)
    infit, outfit = {}, {}
    for facet, idx, n in (
        ("system", data.system_idx, n_s),
        ("item", data.item_idx, n_d),
        ("rater", data.rater_idx, n_r),
    ):
        infit[facet], outfit[facet] = residual_fit(data.x0, p, idx, n)
    return MFRMFit(
        theta=theta,
        delta=delta,
        rho=rho,
        tau=tau,
        theta_se=se_full[: o[1]],
        delta_se=se_full[o[1] : o[2]],
        rho_se=se_full[o[2] : o[3]],
        tau_se=tau_se,
        theta_cov=theta_cov,
        loglik=float(ll),
        converged=converged,
        n_iter=n_iter,
        grad_norm=grad_norm,
        infit=infit,
        outfit=outfit,
        data=data,
        num_categories=num_cat,
        thresholds=thresholds,
        ridge=float(ridge),
        identified=identified,
    )


def mfrm_loglik(theta, delta, rho, tau, system_idx, item_idx, rater_idx, scores) -> float:
    """Log-likelihood of ratings under given MFRM parameters (no penalty).

    Parameters
    ----------
    theta, delta, rho : array_like, shapes (S,), (D,), (R,)
        Facet measures.
    tau : array_like, shape (K-1,) or (R, K-1)
        Thresholds.
    system_idx, item_idx, rater_idx : array_like of int, shape (N,)
        Facet codes of each rating.
    scores : array_like of int, shape (N,)
        Ratings in ``1..K``.

    Returns
    -------
    float
        ``sum_n log P(X_n = x_n)``.
    """
    theta, delta, rho = (np.asarray(a, float) for a in (theta, delta, rho))
    tau = np.asarray(tau, float)
    s, d, r = (np.asarray(a, dtype=np.intp) for a in (system_idx, item_idx, rater_idx))
    x0 = np.asarray(scores, dtype=np.intp) - 1
    eta = theta[s] - delta[d] - rho[r]  # (N,)
    tau_obs = tau if tau.ndim == 1 else tau[r]
    logp = _log_probs(eta, np.broadcast_to(tau_obs, (eta.size, tau.shape[-1])))
    if x0.min() < 0 or x0.max() >= logp.shape[1]:
        raise ValueError(f"scores must lie in 1..{logp.shape[1]}")
    return float(logp[np.arange(eta.size), x0].sum())
