"""Stages 1-3 of benchmark-conditional LLM-judge validation, and the decision.

The paper argues that "how well does the judge correlate with averaged human ratings?" is
the wrong validation question: a judge can correlate well while collapsing the rating scale,
shrinking margins or separating systems humans cannot tell apart, and a correlation workflow
always returns a leaderboard even when the human data cannot support one. It proposes three
stages. Stage 1 audits the human benchmark as a ruler (a many-facet Rasch model, see
:mod:`.mfrm`): rater/item fit, separation reliability and which system pairs the ruler
resolves. Stage 2 links each judge to that ruler as an extra rater with its own severity and
category thresholds. Stage 3 measures, on held-out items, how faithfully the judge transfers
system-level margins (normalised signed-margin fidelity, false separations, bootstrap transfer
intervals) and score distributions (EMD). A decision rule then selects the judge, warns, or
refuses because the ruler itself cannot support a ranking.

Deviations from the paper
-------------------------
- The NSMF formula ``sum m^H m^J / sum (m^H)^2`` over system pairs, the false-separation
  definition, the transfer-interval construction (percentile bootstrap over held-out items
  with the other facets held fixed) and every decision threshold are our inferences; the
  thresholds are keyword arguments.
- Pairwise resolution uses the full covariance of the system measures
  (``Var(theta_s - theta_s')``) rather than ``SE_s^2 + SE_s'^2``; they agree when the measures
  are independent. Holm's correction runs over all ``S(S-1)/2`` pairs.
- Judge audit: besides infit/outfit we apply Linacre's category-functioning guidelines
  (every category used at least ``min_category_count`` times, thresholds ordered), which is
  how a collapsed rating scale shows up once the judge has its own thresholds.
- Transfer failures (our addition to the decision rule): a system whose judge-vs-human gap
  departs from the judge's median gap (bootstrap z test, Holm over systems) is a judge x
  system interaction, FACETS' bias analysis; any such system triggers a warning. Without it
  a judge biased for a few systems keeps NSMF near 1 and is selected.
- ``JudgeValidator`` drops raters flagged by the Stage 1 audit and refits the ruler before
  linking (``drop_misfitting_raters=True``): a noisy rater compresses the human measures, and
  the compressed ruler would then make a faithful judge look biased.
- Transfer intervals hold item difficulties, rater and judge parameters fixed and resample
  only held-out items, so they omit calibration uncertainty.
- The calibrated EMD prediction averages the model distribution over the human raters who
  rated each system on the held-out items (the spec used the mean human rater); this is the
  model-implied distribution of exactly the observed human ratings.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
import scipy.sparse as sp
from scipy.stats import kendalltau, norm, spearmanr
from sklearn.base import BaseEstimator

from neurips26.common.validation import check_array, check_probability

from .mfrm import (
    MFRMFit,
    _as_frame,
    _check_scores,
    _log_probs,
    _Problem,
    _solve,
    _sum_to_zero,
    category_probabilities,
    fit_mfrm,
    residual_fit,
    single_thread,
)

__all__ = [
    "CorrelationBaseline",
    "Decision",
    "FidelityReport",
    "HumanBootstrap",
    "JudgeCalibration",
    "JudgeValidator",
    "RulerAudit",
    "audit_ruler",
    "bootstrap_human_measures",
    "calibrate_judge",
    "correlation_baseline",
    "decide",
    "emd_categories",
    "holm_reject",
    "judge_fidelity",
    "nsmf",
    "resolvable_pairs",
]

JUDGE_COLUMNS = ("system", "item", "score")


# ----------------------------------------------------------------------------- helpers
def holm_reject(pvalues, alpha: float = 0.05) -> np.ndarray:
    """Holm's step-down rejections (same as statsmodels ``multipletests(method="holm")``).

    Parameters
    ----------
    pvalues : array_like, shape (M,)
    alpha : float
        Family-wise error rate.

    Returns
    -------
    ndarray of bool, shape (M,)

    Refuses p-values that are NaN or outside ``[0, 1]`` and ``alpha`` outside ``(0, 1)``;
    an empty family rejects nothing.
    """
    p = check_array(pvalues, "pvalues", ndim=1, min_size=0, min=0.0, max=1.0)
    alpha = _check_alpha(alpha)
    m = p.size
    order = np.argsort(p, kind="stable")
    # reject p_(i) while p_(j) <= alpha / (m - j) for every j <= i
    ok = p[order] <= alpha / (m - np.arange(m))
    n_rej = m if ok.all() else int(np.argmin(ok))
    reject = np.zeros(m, dtype=bool)
    reject[order[:n_rej]] = True
    return reject


def resolvable_pairs(theta, cov, *, alpha: float = 0.05) -> np.ndarray:
    """Which system pairs a set of measures resolves, Holm-corrected.

    Parameters
    ----------
    theta : array_like, shape (S,)
        Measures ``theta_s``.
    cov : array_like, shape (S, S) or (S,)
        Their covariance, or their standard errors.
    alpha : float
        Family-wise error rate over the ``S(S-1)/2`` pairs.

    Returns
    -------
    ndarray of int, shape (S, S)
        ``sign(theta_s - theta_s')`` where the pair is resolved, else 0 (antisymmetric).

    Refuses non-finite or mis-shaped ``theta`` and ``cov``, negative standard errors and
    ``alpha`` outside ``(0, 1)``.
    """
    theta = check_array(theta, "theta", ndim=1)
    cov = check_array(cov, "cov", ndim=(1, 2))
    alpha = _check_alpha(alpha)
    n = theta.size
    if cov.ndim == 1:
        if cov.shape != (n,):
            raise ValueError(f"cov (standard errors) must have shape ({n},), got {cov.shape}")
        if np.any(cov < 0):
            raise ValueError("cov (standard errors) must be nonnegative")
        cov = np.diag(cov**2)
    elif cov.shape != (n, n):
        raise ValueError(f"cov must have shape ({n}, {n}) or ({n},), got {cov.shape}")
    iu, ju = np.triu_indices(n, 1)
    diff = theta[iu] - theta[ju]
    var = cov[iu, iu] + cov[ju, ju] - 2 * cov[iu, ju]  # Var(theta_s - theta_s')
    z = np.abs(diff) / np.sqrt(np.maximum(var, 1e-300))
    pval = 2 * norm.sf(z)
    out = np.zeros((n, n), dtype=int)
    if iu.size == 0:
        return out
    reject = holm_reject(pval, alpha)
    sign = np.sign(diff).astype(int) * reject
    out[iu, ju] = sign
    out[ju, iu] = -sign
    return out


def nsmf(theta_human, theta_judge) -> float:
    """Normalised signed-margin fidelity over all system pairs.

    ``NSMF = sum_{s<s'} m^H m^J / sum_{s<s'} (m^H)^2`` with ``m = theta_s - theta_s'``:
    1 for identical margins, ``c`` when judge margins are ``c`` times the human ones,
    negative under reversal.

    Parameters
    ----------
    theta_human, theta_judge : array_like, shape (S,)
        Human-based and judge-based system measures.

    Returns
    -------
    float

    Examples
    --------
    >>> nsmf([0.0, 1.0, 2.0], [0.0, 0.5, 1.0])
    0.5
    """
    th = np.asarray(theta_human, float)
    tj = np.asarray(theta_judge, float)
    if th.shape != tj.shape or th.ndim != 1 or th.size < 2:
        raise ValueError("theta_human and theta_judge must be 1-D arrays of the same length >= 2")
    iu, ju = np.triu_indices(th.size, 1)
    mh, mj = th[iu] - th[ju], tj[iu] - tj[ju]  # (pairs,)
    den = float(mh @ mh)
    if den == 0:
        raise ValueError("human measures are all equal; NSMF is undefined")
    return float(mh @ mj / den)


def emd_categories(p, q) -> np.ndarray:
    """1-D earth mover's distance between histograms on categories 1..K.

    Parameters
    ----------
    p, q : array_like, shape (..., K)
        Non-negative weights (normalised here).

    Returns
    -------
    ndarray, shape (...)
        ``sum_k |F_p(k) - F_q(k)|`` (unit spacing), equal to
        ``scipy.stats.wasserstein_distance`` on the category indices.

    Refuses ``p`` and ``q`` of different shapes (no broadcasting), fewer than 1 category,
    negative or non-finite weights and a histogram of zero total weight.
    """
    p = check_array(p, "p", min=0.0)
    q = check_array(q, "q", min=0.0)
    if p.shape != q.shape:
        raise ValueError(f"p and q must have the same shape, got {p.shape} and {q.shape}")
    if p.ndim == 0:
        raise ValueError("p must have a category axis (shape (..., K)), got a scalar")
    if np.any(p.sum(axis=-1) <= 0) or np.any(q.sum(axis=-1) <= 0):
        raise ValueError("p and q need positive total weight in every histogram")
    p = p / p.sum(axis=-1, keepdims=True)
    q = q / q.sum(axis=-1, keepdims=True)
    return np.abs(np.cumsum(p - q, axis=-1))[..., :-1].sum(axis=-1)


def _measure_systems(
    x0,
    sys_idx,
    offset,
    slope,
    tau_obs,
    num_systems,
    *,
    weights=None,
    ridge=1e-4,
    max_iter=100,
    start=None,
    tol=1e-9,
):
    """ML system measures with every other parameter fixed (vectorised Newton).

    eta_n = slope * theta_{s_n} + offset_n. ``weights`` (B, N) gives B weighted problems
    (bootstrap resamples). Returns theta (B, S) and se (B, S).
    """
    w = np.ones((1, x0.size)) if weights is None else np.asarray(weights, float)
    n_b = w.shape[0]
    theta = np.zeros((n_b, num_systems))
    if start is not None:
        theta += start
    num_cat = tau_obs.shape[-1] + 1
    k = np.arange(num_cat)
    cols = sys_idx[None, :] + num_systems * np.arange(n_b)[:, None]  # (B, N) flat bins
    for _ in range(max_iter):
        eta = slope * theta[:, sys_idx] + offset  # (B, N)
        p = np.exp(_log_probs(eta, tau_obs))  # (B, N, K)
        mean = p @ k
        var = p @ k**2 - mean**2
        g = np.bincount(
            cols.ravel(), weights=(w * (x0 - mean) * slope).ravel(), minlength=n_b * num_systems
        ).reshape(n_b, num_systems)
        h = np.bincount(
            cols.ravel(), weights=(w * var * slope**2).ravel(), minlength=n_b * num_systems
        ).reshape(n_b, num_systems)
        g -= ridge * theta
        h += ridge
        step = np.clip(g / h, -2.0, 2.0)  # Newton step on a concave 1-D problem per system
        theta += step
        if np.max(np.abs(step)) < tol:
            break
    return theta, 1.0 / np.sqrt(h)


def _judge_frame(judge_ratings, fit: MFRMFit, what: str) -> tuple[np.ndarray, ...]:
    frame = _as_frame(judge_ratings, JUDGE_COLUMNS, what)
    if "rater" in frame.columns and frame["rater"].nunique() > 1:
        raise ValueError(f"{what}: one judge at a time (the rater column has several values)")
    scores = _check_scores(frame["score"], int(fit.data.categories.max()), what)
    remap = np.full(int(fit.data.categories.max()) + 1, -1)
    remap[fit.data.categories] = np.arange(fit.data.categories.size)
    x0 = remap[scores]
    if np.any(x0 < 0):
        raise ValueError(
            f"{what}: the judge uses categories {np.unique(scores[x0 < 0]).tolist()} that were "
            "collapsed away in the human fit"
        )
    sys_pos = pd.Index(fit.systems).get_indexer(frame["system"])
    item_pos = pd.Index(fit.items).get_indexer(frame["item"])
    if np.any(sys_pos < 0):
        missing = pd.unique(frame["system"][sys_pos < 0])[:5].tolist()
        raise ValueError(f"{what}: systems {missing} are absent from the human fit")
    if np.any(item_pos < 0):
        missing = pd.unique(frame["item"][item_pos < 0])[:5].tolist()
        raise ValueError(
            f"{what}: items {missing} are absent from the human ratings (the judge must "
            "rate items the human ruler has measured)"
        )
    return sys_pos.astype(np.intp), item_pos.astype(np.intp), x0.astype(np.intp)


# ----------------------------------------------------------------------------- stage 1
@dataclass(frozen=True, eq=False)
class RulerAudit:
    """Stage 1: the human benchmark audited as a measuring instrument.

    Attributes
    ----------
    reliability : float
        Separation reliability ``R = (var(theta) - mean SE^2) / var(theta)`` (clipped at 0).
    separation : float
        ``G = sqrt(R / (1 - R))``.
    resolvable : ndarray of int, shape (S, S)
        Signed resolution matrix from :func:`resolvable_pairs`.
    resolvable_pairs : list of tuple
        ``(higher, lower)`` system labels of every resolved pair.
    resolvable_fraction : float
        Resolved pairs / all pairs.
    misfitting_raters, misfitting_items : list
        Labels whose infit or outfit lies outside ``fit_range``.
    theta_grid, conditional_se : ndarray, shape (G,)
        Conditional standard error of a system measure at each ``theta`` (test information
        of the average system's design).
    converged : bool
        Whether the Stage 1 fit converged.
    """

    reliability: float
    separation: float
    resolvable: np.ndarray = field(repr=False)
    resolvable_pairs: list = field(repr=False)
    resolvable_fraction: float
    misfitting_raters: list
    misfitting_items: list = field(repr=False)
    theta_grid: np.ndarray = field(repr=False)
    conditional_se: np.ndarray = field(repr=False)
    converged: bool


@single_thread
def audit_ruler(fit: MFRMFit, *, alpha: float = 0.05, fit_range=(0.5, 1.5)) -> RulerAudit:
    """Audit a fitted human benchmark: reliability, separation, resolution and fit.

    Parameters
    ----------
    fit : MFRMFit
        Stage 1 fit of the human ratings.
    alpha : float
        Family-wise error rate for pairwise resolution (Holm).
    fit_range : tuple of float
        Acceptable ``(low, high)`` band for infit and outfit mean squares.

    Returns
    -------
    RulerAudit

    References
    ----------
    Wright, B. D. and Masters, G. N. (1982). Rating scale analysis, ch. 5 (separation).

    Examples
    --------
    >>> from neurips26.papers.judge_rasch import simulate_benchmark, fit_mfrm
    >>> bench = simulate_benchmark(num_systems=6, num_items=20, num_dimensions=1, seed=0)
    >>> audit = audit_ruler(fit_mfrm(bench.ratings.drop(columns="dimension"), num_categories=5))
    >>> audit.reliability > 0.7
    True
    """
    if not isinstance(fit, MFRMFit):
        raise TypeError(f"fit must be an MFRMFit, got {type(fit).__name__}")
    _check_alpha(alpha)
    lo, hi = _check_range(fit_range)
    theta = fit.theta
    var_obs = float(np.var(theta))
    mse = float(np.mean(fit.theta_se**2))
    reliability = max(0.0, (var_obs - mse) / var_obs) if var_obs > 0 else 0.0  # Eq. R
    separation = float(np.sqrt(reliability / (1 - reliability))) if reliability < 1 else np.inf
    res = resolvable_pairs(theta, fit.theta_cov, alpha=alpha)
    iu, ju = np.triu_indices(theta.size, 1)
    pairs = []
    for a, b in zip(iu, ju, strict=True):
        if res[a, b] != 0:
            hi_s, lo_s = (a, b) if res[a, b] > 0 else (b, a)
            pairs.append(tuple(fit.systems[[hi_s, lo_s]].tolist()))
    frac = len(pairs) / max(iu.size, 1)

    def bad(facet):
        labels = {"rater": fit.raters, "item": fit.items}[facet]
        inf, outf = fit.infit[facet], fit.outfit[facet]
        mask = (inf < lo) | (inf > hi) | (outf < lo) | (outf > hi)
        return labels[mask].tolist()

    # conditional SE: information of the average system's ratings at each theta
    d = fit.data
    grid = np.linspace(theta.min() - 2, theta.max() + 2, 41)  # (G,)
    off = -fit.delta[d.item_idx] - fit.rho[d.rater_idx]  # (N,)
    p = category_probabilities(grid[:, None] + off[None, :], fit.tau_of(d.rater_idx))
    k = np.arange(p.shape[-1])
    info = (p @ k**2 - (p @ k) ** 2).sum(axis=1) / fit.systems.size  # (G,)
    return RulerAudit(
        reliability=float(reliability),
        separation=float(separation),
        resolvable=res,
        resolvable_pairs=pairs,
        resolvable_fraction=float(frac),
        misfitting_raters=bad("rater"),
        misfitting_items=bad("item"),
        theta_grid=grid,
        conditional_se=1.0 / np.sqrt(info),
        converged=bool(fit.converged),
    )


# ----------------------------------------------------------------------------- stage 2
@dataclass(frozen=True, eq=False)
class JudgeCalibration:
    """Stage 2: a judge linked to the human ruler as a calibrated rater.

    Attributes
    ----------
    rho, rho_se : float
        Judge severity ``rho_J`` on the human scale.
    tau, tau_se : ndarray, shape (K-1,)
        Judge thresholds ``tau_J`` (sum 0).
    slope, slope_se : float
        Discrimination ``a_J`` (1 and 0 when not estimated).
    infit, outfit : float
        Mean squares of the judge's calibration ratings.
    category_counts : ndarray of int, shape (K,)
        How often the judge used each category.
    disordered : bool
        Whether the judge's thresholds are not increasing.
    converged : bool
        Whether the calibration fit converged.
    """

    rho: float
    rho_se: float
    tau: np.ndarray
    tau_se: np.ndarray
    slope: float
    slope_se: float
    infit: float
    outfit: float
    category_counts: np.ndarray
    disordered: bool
    converged: bool


@single_thread
def calibrate_judge(
    fit: MFRMFit,
    judge_ratings,
    *,
    slope: bool = False,
    ridge: float = 1e-4,
    max_iter: int = 2000,
    tol: float = 1e-8,
) -> JudgeCalibration:
    """Link a judge to a fitted human ruler as a new rater with its own thresholds.

    With ``theta`` and ``delta`` fixed at the human estimates, the judge's ratings follow
    ``log P(k)/P(k-1) = a_J (theta_s - delta_d) - rho_J - tau_{J,k}``; ``rho_J``, ``tau_J``
    (and ``a_J`` if ``slope``) are estimated by penalised ML.

    Parameters
    ----------
    fit : MFRMFit
        Human fit on the calibration items.
    judge_ratings : DataFrame or mapping of arrays
        Columns ``system``, ``item``, ``score``; items and systems must be in ``fit``.
    slope : bool
        Also estimate the discrimination ``a_J`` (a diagnostic for compressed margins).
    ridge, max_iter, tol : float, int, float
        As in :func:`fit_mfrm`.

    Returns
    -------
    JudgeCalibration

    Examples
    --------
    >>> from neurips26.papers.judge_rasch import simulate_benchmark, simulate_judge, fit_mfrm
    >>> bench = simulate_benchmark(num_systems=6, num_items=20, num_dimensions=1, seed=0)
    >>> fit = fit_mfrm(bench.ratings.drop(columns="dimension"), num_categories=5)
    >>> cal = calibrate_judge(fit, simulate_judge("shifted", bench, seed=1))
    >>> bool(cal.rho > 0.5)
    True
    """
    if not isinstance(fit, MFRMFit):
        raise TypeError(f"fit must be an MFRMFit, got {type(fit).__name__}")
    s_idx, d_idx, x0 = _judge_frame(judge_ratings, fit, "judge_ratings")
    num_cat = fit.num_categories
    m = fit.theta[s_idx] - fit.delta[d_idx]  # (N,) human location of each judged summary
    n_obs = x0.size
    cols = [-np.ones(n_obs)] + ([m] if slope else [])
    x_eta = sp.csr_matrix(np.stack(cols, axis=1))  # (N, 1 or 2): [rho_J, a_J]
    basis = sp.block_diag([sp.identity(len(cols)), _sum_to_zero(num_cat - 1)], format="csr")
    problem = _Problem(
        x_eta=x_eta,
        offset=np.zeros(n_obs) if slope else m,
        group=np.zeros(n_obs, dtype=np.intp),
        num_groups=1,
        x0=x0,
        num_categories=num_cat,
        basis=basis,
        ridge=float(ridge),
    )
    b0 = np.zeros(basis.shape[1])
    if slope:
        b0[1] = 1.0
    b, _, _, _, converged = _solve(problem, b0, max_iter=max_iter, tol=tol, dense=True)
    cov_free = np.linalg.inv(problem.information(b))
    lb = basis.toarray()
    b_full = lb @ b
    se_full = np.sqrt(np.maximum(np.diag(lb @ cov_free @ lb.T), 0.0))
    rho = float(b_full[0])
    a = float(b_full[1]) if slope else 1.0
    tau = b_full[len(cols) :]
    p = category_probabilities(a * m - rho, tau)  # (N, K)
    infit, outfit = residual_fit(x0, p, np.zeros(n_obs, dtype=np.intp), 1)
    return JudgeCalibration(
        rho=rho,
        rho_se=float(se_full[0]),
        tau=tau,
        tau_se=se_full[len(cols) :],
        slope=a,
        slope_se=float(se_full[1]) if slope else 0.0,
        infit=float(infit[0]),
        outfit=float(outfit[0]),
        category_counts=np.bincount(x0, minlength=num_cat),
        disordered=bool(np.any(np.diff(tau) <= 0)),
        converged=converged,
    )


# ----------------------------------------------------------------------------- stage 3
@dataclass(frozen=True, eq=False)
class HumanBootstrap:
    """Bootstrap resamples of held-out items and the human measures on each.

    Attributes
    ----------
    counts : ndarray of int, shape (B, D)
        How often each held-out item appears in each resample.
    theta : ndarray, shape (B, S)
        Human measures ``theta^H`` per resample (other facets fixed at the fit).
    """

    counts: np.ndarray = field(repr=False)
    theta: np.ndarray = field(repr=False)


@single_thread
def bootstrap_human_measures(
    fit_heldout: MFRMFit, *, num_bootstrap: int = 200, seed: int = 0
) -> HumanBootstrap:
    """Resample held-out items with replacement and re-measure the systems.

    Item difficulties, rater severities and thresholds stay at ``fit_heldout``; each
    resample re-estimates ``theta^H`` by weighted ML. Share the result across judges with
    ``judge_fidelity(..., human_bootstrap=...)`` so every judge sees the same resamples.

    Parameters
    ----------
    fit_heldout : MFRMFit
        Human fit on the held-out items.
    num_bootstrap : int
        ``B`` resamples (>= 10).
    seed : int
        Seed of ``numpy.random.default_rng``.

    Returns
    -------
    HumanBootstrap
    """
    if not isinstance(fit_heldout, MFRMFit):
        raise TypeError(f"fit_heldout must be an MFRMFit, got {type(fit_heldout).__name__}")
    if int(num_bootstrap) < 10:
        raise ValueError(f"num_bootstrap must be >= 10, got {num_bootstrap}")
    rng = np.random.default_rng(seed)
    n_items = fit_heldout.items.size
    counts = rng.multinomial(n_items, np.full(n_items, 1 / n_items), size=int(num_bootstrap))
    h = fit_heldout.data
    off_h = -fit_heldout.delta[h.item_idx] - fit_heldout.rho[h.rater_idx]  # (N_H,)
    theta, _ = _measure_systems(
        h.x0,
        h.system_idx,
        off_h,
        1.0,
        fit_heldout.tau_of(h.rater_idx),
        fit_heldout.systems.size,
        weights=counts[:, h.item_idx],
        ridge=fit_heldout.ridge,
        start=fit_heldout.theta,
        tol=1e-6,
    )
    return HumanBootstrap(counts=counts, theta=theta)


@dataclass(frozen=True, eq=False)
class FidelityReport:
    """Stage 3: out-of-sample system-level fidelity of a calibrated judge.

    Attributes
    ----------
    systems : ndarray, shape (S,)
        System labels.
    theta_human, theta_judge, theta_judge_se : ndarray, shape (S,)
        Human measures on the held-out items and judge-based measures ``theta^J``.
    nsmf : float
        Normalised signed-margin fidelity.
    false_separations : int
        Pairs the judge resolves that humans leave unresolved or order the other way.
    false_separation_rate : float
        ``false_separations`` over all pairs.
    judge_resolved_fraction, human_resolved_fraction : float
        Fractions of pairs each side resolves (Holm, ``alpha``).
    transfer_intervals : ndarray, shape (S, 2)
        Bootstrap ``1 - alpha`` intervals of ``theta^J_s - theta^H_s`` over held-out items.
    transfer_failures : list
        Systems whose gap ``theta^J_s - theta^H_s`` departs from the judge's median gap
        (z test with the bootstrap SD, Holm over systems at ``alpha``): a judge x system
        interaction, i.e. system-specific judge bias.
    emd_raw, emd_calibrated : ndarray, shape (S,)
        Per system, EMD between the human rating histogram and the raw judge histogram, or
        the calibrated prediction.
    """

    systems: np.ndarray
    theta_human: np.ndarray
    theta_judge: np.ndarray
    theta_judge_se: np.ndarray
    nsmf: float
    false_separations: int
    false_separation_rate: float
    judge_resolved_fraction: float
    human_resolved_fraction: float
    transfer_intervals: np.ndarray = field(repr=False)
    transfer_failures: list
    emd_raw: np.ndarray = field(repr=False)
    emd_calibrated: np.ndarray = field(repr=False)

    @property
    def mean_emd_raw(self) -> float:
        return float(np.mean(self.emd_raw))

    @property
    def mean_emd_calibrated(self) -> float:
        return float(np.mean(self.emd_calibrated))


@single_thread
def judge_fidelity(
    fit_heldout: MFRMFit,
    calib: JudgeCalibration,
    judge_ratings_heldout,
    *,
    alpha: float = 0.05,
    num_bootstrap: int = 200,
    seed: int = 0,
    human_bootstrap: HumanBootstrap | None = None,
) -> FidelityReport:
    """Out-of-sample fidelity of a calibrated judge on held-out items.

    Parameters
    ----------
    fit_heldout : MFRMFit
        Human fit on the held-out items (gives ``theta^H``, ``delta_d``, rater parameters).
    calib : JudgeCalibration
        The judge's Stage 2 calibration (on other items).
    judge_ratings_heldout : DataFrame or mapping of arrays
        The judge's ratings (``system``, ``item``, ``score``) of held-out items.
    alpha : float
        Level for pairwise resolution and the transfer intervals.
    num_bootstrap : int
        Bootstrap resamples of held-out items for the transfer intervals.
    seed : int
        Seed of ``numpy.random.default_rng`` for the bootstrap.
    human_bootstrap : HumanBootstrap or None
        Precomputed resamples from :func:`bootstrap_human_measures` (then ``num_bootstrap``
        and ``seed`` are ignored).

    Returns
    -------
    FidelityReport
    """
    if not isinstance(fit_heldout, MFRMFit):
        raise TypeError(f"fit_heldout must be an MFRMFit, got {type(fit_heldout).__name__}")
    if not isinstance(calib, JudgeCalibration):
        raise TypeError(f"calib must be a JudgeCalibration, got {type(calib).__name__}")
    _check_alpha(alpha)
    if int(num_bootstrap) < 10:
        raise ValueError(f"num_bootstrap must be >= 10, got {num_bootstrap}")
    if calib.tau.size != fit_heldout.num_categories - 1:
        raise ValueError("calib and fit_heldout use different numbers of categories")
    s_j, d_j, x_j = _judge_frame(judge_ratings_heldout, fit_heldout, "judge_ratings_heldout")
    n_sys = fit_heldout.systems.size
    missing = np.setdiff1d(np.arange(n_sys), s_j)
    if missing.size:
        absent = fit_heldout.systems[missing].tolist()
        raise ValueError(f"judge_ratings_heldout has no ratings for systems {absent}")
    num_cat = fit_heldout.num_categories
    h = fit_heldout.data
    ridge = fit_heldout.ridge
    a = calib.slope
    # judge-based measures theta^J with the judge's calibrated parameters fixed
    off_j = -a * fit_heldout.delta[d_j] - calib.rho  # (N_J,)
    tau_j = np.broadcast_to(calib.tau, (x_j.size, num_cat - 1))
    theta_j, se_j = _measure_systems(x_j, s_j, off_j, a, tau_j, n_sys, ridge=ridge)
    theta_j, se_j = theta_j[0], se_j[0]
    theta_h = fit_heldout.theta
    # margins and separations
    fidelity = nsmf(theta_h, theta_j)
    res_h = resolvable_pairs(theta_h, fit_heldout.theta_cov, alpha=alpha)
    res_j = resolvable_pairs(theta_j, se_j, alpha=alpha)
    iu, ju = np.triu_indices(n_sys, 1)
    rj, rh = res_j[iu, ju], res_h[iu, ju]
    false_sep = int(np.sum((rj != 0) & (rh != rj)))
    # empirical transfer intervals: bootstrap held-out items, other facets fixed
    if human_bootstrap is None:
        human_bootstrap = bootstrap_human_measures(
            fit_heldout, num_bootstrap=num_bootstrap, seed=seed
        )
    counts, boot_h = human_bootstrap.counts, human_bootstrap.theta
    if counts.shape[1] != fit_heldout.items.size or boot_h.shape[1] != n_sys:
        raise ValueError("human_bootstrap was computed on a different held-out fit")
    tau_h = fit_heldout.tau_of(h.rater_idx)
    boot_j, _ = _measure_systems(
        x_j,
        s_j,
        off_j,
        a,
        tau_j,
        n_sys,
        weights=counts[:, d_j],
        ridge=ridge,
        start=theta_j,
        tol=1e-6,
    )
    diffs = boot_j - boot_h  # (B, S)
    intervals = np.quantile(diffs, [alpha / 2, 1 - alpha / 2], axis=0).T  # (S, 2)
    # transfer failures: judge x system interaction, i.e. gaps theta^J - theta^H that depart
    # from the judge's common gap (median over systems), z-tested with the bootstrap SD (Holm)
    gap = theta_j - theta_h  # (S,)
    gap_boot = diffs - np.median(diffs, axis=1, keepdims=True)  # (B, S)
    z_gap = (gap - np.median(gap)) / np.maximum(gap_boot.std(axis=0, ddof=1), 1e-12)
    failures = holm_reject(2 * norm.sf(np.abs(z_gap)), alpha)
    # distributional EMD per system: human histogram vs raw judge / calibrated prediction
    hist_h = np.zeros((n_sys, num_cat))
    np.add.at(hist_h, (h.system_idx, h.x0), 1.0)
    hist_j = np.zeros((n_sys, num_cat))
    np.add.at(hist_j, (s_j, x_j), 1.0)
    # Eq. (calibrated prediction): P(X = k | theta^J_s, delta_d, rho_r, tau_r) over human cells
    p_cal = category_probabilities(
        theta_j[h.system_idx] - fit_heldout.delta[h.item_idx] - fit_heldout.rho[h.rater_idx],
        tau_h,
    )  # (N_H, K)
    pred = np.zeros((n_sys, num_cat))
    for k in range(num_cat):  # loop over categories only
        pred[:, k] = np.bincount(h.system_idx, weights=p_cal[:, k], minlength=n_sys)
    return FidelityReport(
        systems=fit_heldout.systems,
        theta_human=theta_h,
        theta_judge=theta_j,
        theta_judge_se=se_j,
        nsmf=fidelity,
        false_separations=false_sep,
        false_separation_rate=false_sep / max(iu.size, 1),
        judge_resolved_fraction=float(np.mean(rj != 0)) if iu.size else 0.0,
        human_resolved_fraction=float(np.mean(rh != 0)) if iu.size else 0.0,
        transfer_intervals=intervals,
        transfer_failures=fit_heldout.systems[failures].tolist(),
        emd_raw=emd_categories(hist_h, hist_j),
        emd_calibrated=emd_categories(hist_h, pred),
    )


# ----------------------------------------------------------------------------- decision
@dataclass(frozen=True)
class Decision:
    """The outcome of validation: ``label`` in {"select", "warn", "refuse"} and why."""

    label: str
    reasons: tuple[str, ...]


def decide(
    ruler: RulerAudit,
    fidelity: FidelityReport | None = None,
    calib: JudgeCalibration | None = None,
    *,
    min_reliability: float = 0.7,
    min_resolvable_fraction: float = 0.2,
    fit_range: tuple[float, float] = (0.5, 1.5),
    min_nsmf: float = 0.8,
    max_false_separation: float = 0.1,
    max_transfer_failures: int = 0,
    min_category_count: int = 10,
) -> Decision:
    """Select, warn or refuse a judge from the three audits.

    Refuse if the ruler resolves fewer than ``min_resolvable_fraction`` of system pairs or
    its reliability is below ``min_reliability`` (the human data cannot support a ranking).
    Otherwise warn if the judge misfits (infit/outfit outside ``fit_range``), its scale is
    degenerate (a category used fewer than ``min_category_count`` times or disordered
    thresholds), ``NSMF < min_nsmf`` or its false separations exceed
    ``max_false_separation`` of all pairs, or more than ``max_transfer_failures`` systems
    fail the transfer test. Otherwise select.

    Parameters
    ----------
    ruler : RulerAudit
        Stage 1 audit.
    fidelity : FidelityReport or None
        Stage 3 report (None: only the ruler is judged).
    calib : JudgeCalibration or None
        Stage 2 calibration.
    min_reliability, min_resolvable_fraction, fit_range, min_nsmf, max_false_separation,
    max_transfer_failures, min_category_count : float, float, tuple, float, float, int, int
        Decision thresholds.

    Returns
    -------
    Decision
    """
    if not isinstance(ruler, RulerAudit):
        raise TypeError(f"ruler must be a RulerAudit, got {type(ruler).__name__}")
    lo, hi = _check_range(fit_range)
    if not 0 <= min_reliability <= 1 or not 0 <= min_resolvable_fraction <= 1:
        raise ValueError("min_reliability and min_resolvable_fraction must lie in [0, 1]")
    if not 0 <= max_false_separation <= 1:
        raise ValueError(f"max_false_separation must lie in [0, 1], got {max_false_separation}")
    reasons = []
    if ruler.reliability < min_reliability:
        reasons.append(f"ruler reliability {ruler.reliability:.2f} < {min_reliability}")
    if ruler.resolvable_fraction < min_resolvable_fraction:
        reasons.append(
            f"ruler resolves {ruler.resolvable_fraction:.0%} of pairs < "
            f"{min_resolvable_fraction:.0%}"
        )
    if reasons:
        return Decision("refuse", tuple(reasons))
    if calib is not None:
        for name, v in (("infit", calib.infit), ("outfit", calib.outfit)):
            if not lo <= v <= hi:
                reasons.append(f"judge {name} {v:.2f} outside [{lo}, {hi}]")
        rare = np.flatnonzero(calib.category_counts < min_category_count)
        if rare.size:
            reasons.append(f"judge scale collapsed: categories {(rare + 1).tolist()} rarely used")
        elif calib.disordered:
            reasons.append("judge thresholds disordered")
    if fidelity is not None:
        if fidelity.nsmf < min_nsmf:
            reasons.append(f"NSMF {fidelity.nsmf:.2f} < {min_nsmf}")
        if fidelity.false_separation_rate > max_false_separation:
            reasons.append(
                f"false separations {fidelity.false_separation_rate:.0%} > "
                f"{max_false_separation:.0%} of pairs"
            )
        if len(fidelity.transfer_failures) > max_transfer_failures:
            reasons.append(
                f"judge measures fail to transfer for systems {fidelity.transfer_failures}"
            )
    return Decision("warn" if reasons else "select", tuple(reasons))


# ----------------------------------------------------------------------------- baseline
@dataclass(frozen=True, eq=False)
class CorrelationBaseline:
    """The correlation workflow: judge vs human system means, and the judge's leaderboard."""

    spearman: float
    kendall: float
    leaderboard: list


def correlation_baseline(human_ratings, judge_ratings) -> CorrelationBaseline:
    """System-level Spearman/Kendall correlation of judge means with human means.

    Parameters
    ----------
    human_ratings, judge_ratings : DataFrame or mapping of arrays
        Columns ``system`` and ``score`` (others ignored).

    Returns
    -------
    CorrelationBaseline
        Always with a full leaderboard (systems by decreasing judge mean): the workflow
        never refuses.
    """
    h = _as_frame(human_ratings, ("system", "score"), "human_ratings")
    j = _as_frame(judge_ratings, ("system", "score"), "judge_ratings")
    mh = h.groupby("system")["score"].mean()
    mj = j.groupby("system")["score"].mean()
    common = mh.index.intersection(mj.index)
    if common.size < 3:
        raise ValueError("need at least 3 systems rated by both humans and the judge")
    mh, mj = mh.loc[common], mj.loc[common]
    return CorrelationBaseline(
        spearman=float(spearmanr(mh, mj).statistic),
        kendall=float(kendalltau(mh, mj).statistic),
        leaderboard=list(mj.sort_values(ascending=False).index),
    )


# ----------------------------------------------------------------------------- estimator
class JudgeValidator(BaseEstimator):
    """The three-stage validation of LLM judges against a human benchmark.

    Parameters
    ----------
    num_categories : int
        ``K`` of the rating scale.
    alpha : float
        Family-wise error rate for pairwise resolution and interval level.
    heldout_frac : float
        Share of items held out for Stage 3 (the rest calibrates the judges).
    num_bootstrap : int
        Bootstrap resamples for the transfer intervals.
    slope : bool
        Estimate a judge discrimination in Stage 2 (then ``theta^J`` is rescaled by it).
    thresholds : str
        ``"shared"`` or ``"rater"`` for the human model.
    drop_misfitting_raters : bool
        Remove raters that the Stage 1 audit flags (infit/outfit outside ``fit_range``)
        and refit the ruler before Stages 2-3, as FACETS users do with unproductive
        raters (kept when it would leave no rater).
    seed : int
        Seed of the item split and the bootstrap.
    **decision
        Thresholds passed to :func:`decide`.

    Attributes
    ----------
    report_ : DataFrame
        One row per dimension and judge: decision, reasons and every diagnostic.
    rulers_ : dict
        ``RulerAudit`` per dimension (of the ruler used, after any rater removal).
    dropped_raters_ : dict
        Raters removed per dimension.
    fits_ : dict
        The Stage 1 ``MFRMFit`` per dimension (the ruler used).
    fidelity_, calibrations_, decisions_ : dict
        Per ``(dimension, judge)``.

    Examples
    --------
    >>> from neurips26.papers.judge_rasch import simulate_benchmark, simulate_judge
    >>> bench = simulate_benchmark(num_systems=10, num_items=60, num_dimensions=1, seed=0)
    >>> judges = {"good": simulate_judge("faithful", bench, seed=1)}
    >>> v = JudgeValidator(num_bootstrap=50).fit(bench.ratings, judges)
    >>> v.report_["decision"].tolist()
    ['select']
    """

    def __init__(
        self,
        *,
        num_categories: int = 5,
        alpha: float = 0.05,
        heldout_frac: float = 0.5,
        num_bootstrap: int = 200,
        slope: bool = False,
        thresholds: str = "shared",
        drop_misfitting_raters: bool = True,
        seed: int = 0,
        **decision,
    ):
        self.num_categories = num_categories
        self.alpha = alpha
        self.heldout_frac = heldout_frac
        self.num_bootstrap = num_bootstrap
        self.slope = slope
        self.thresholds = thresholds
        self.drop_misfitting_raters = drop_misfitting_raters
        self.seed = seed
        self.decision = decision

    def get_params(self, deep: bool = True) -> dict:
        """The keyword parameters and the ``**decision`` thresholds, flat (for ``clone``)."""
        params = super().get_params(deep=deep)
        params.update(self.decision)
        return params

    def set_params(self, **params) -> JudgeValidator:
        """Set parameters; names that are not ``__init__`` keywords go to ``decision``."""
        named = set(self._get_param_names())
        self.decision = {**self.decision, **{k: v for k, v in params.items() if k not in named}}
        return super().set_params(**{k: v for k, v in params.items() if k in named})

    @single_thread
    def fit(self, human, judges: Mapping) -> JudgeValidator:
        """Run Stages 1-3 and the decision for every dimension and judge.

        Parameters
        ----------
        human : DataFrame
            Columns ``system, item, rater, score`` and optionally ``dimension``.
        judges : mapping of str to DataFrame
            Each judge's ratings: ``system, item, score`` (and ``dimension`` if ``human``
            has one).

        Returns
        -------
        self
        """
        if not 0 < self.heldout_frac < 1:
            raise ValueError(f"heldout_frac must lie in (0, 1), got {self.heldout_frac}")
        if not isinstance(judges, Mapping) or not judges:
            raise TypeError("judges must be a non-empty mapping of name -> ratings DataFrame")
        _check_alpha(self.alpha)
        unknown = set(self.decision) - set(_DECISION_KEYS)
        if unknown:
            raise TypeError(
                f"unknown decision threshold(s) {sorted(unknown)}; valid: {list(_DECISION_KEYS)}"
            )
        fit_range = self.decision.get("fit_range", (0.5, 1.5))
        cols = ("system", "item", "rater", "score")
        human = _as_frame(human, cols, "human")
        dims = list(pd.unique(human["dimension"])) if "dimension" in human.columns else [None]
        judge_frames = {}
        for name, jr in judges.items():
            jf = _as_frame(jr, JUDGE_COLUMNS, f"judges[{name!r}]")
            if dims != [None] and "dimension" not in jf.columns:
                raise ValueError(f"judges[{name!r}] needs a 'dimension' column like human")
            judge_frames[name] = jf
        rng = np.random.default_rng(self.seed)
        rows = []
        self.rulers_, self.dropped_raters_, self.fits_ = {}, {}, {}
        self.fidelity_, self.calibrations_, self.decisions_ = {}, {}, {}
        for dim in dims:
            hd = human if dim is None else human[human["dimension"] == dim]
            hd = hd[list(cols)]
            fit = fit_mfrm(hd, num_categories=self.num_categories, thresholds=self.thresholds)
            ruler = audit_ruler(fit, alpha=self.alpha, fit_range=fit_range)
            dropped = []
            if self.drop_misfitting_raters and ruler.misfitting_raters:
                keep = ~hd["rater"].isin(ruler.misfitting_raters)
                if hd.loc[keep, "rater"].nunique() >= 1:
                    dropped = list(ruler.misfitting_raters)
                    hd = hd[keep]
                    fit = fit_mfrm(
                        hd, num_categories=self.num_categories, thresholds=self.thresholds
                    )
                    ruler = audit_ruler(fit, alpha=self.alpha, fit_range=fit_range)
            self.rulers_[dim], self.fits_[dim], self.dropped_raters_[dim] = ruler, fit, dropped
            items = np.asarray(fit.items)
            perm = rng.permutation(items.size)
            n_ho = round(self.heldout_frac * items.size)
            if not 2 <= n_ho <= items.size - 2:
                raise ValueError(
                    f"dimension {dim!r}: {items.size} items cannot be split into calibration "
                    f"and held-out halves of at least 2 items (heldout_frac={self.heldout_frac})"
                )
            ho_items = items[perm[:n_ho]]
            is_ho = hd["item"].isin(ho_items)
            fit_cal = fit_mfrm(
                hd[~is_ho], num_categories=self.num_categories, thresholds=self.thresholds
            )
            fit_ho = fit_mfrm(
                hd[is_ho], num_categories=self.num_categories, thresholds=self.thresholds
            )
            for sub, nm in ((fit_cal, "calibration"), (fit_ho, "held-out")):
                if sub.systems.size != fit.systems.size:
                    raise ValueError(
                        f"dimension {dim!r}: the {nm} split leaves some systems without items"
                    )
            boot = bootstrap_human_measures(
                fit_ho, num_bootstrap=self.num_bootstrap, seed=int(rng.integers(2**31))
            )
            for name, jf in judge_frames.items():
                jd = jf if dim is None else jf[jf["dimension"] == dim]
                j_ho = jd["item"].isin(ho_items)
                calib = calibrate_judge(fit_cal, jd[~j_ho], slope=self.slope)
                fid = judge_fidelity(
                    fit_ho, calib, jd[j_ho], alpha=self.alpha, human_bootstrap=boot
                )
                dec = decide(ruler, fid, calib, **self.decision)
                base = correlation_baseline(hd, jd)
                key = (dim, name)
                self.calibrations_[key], self.fidelity_[key] = calib, fid
                self.decisions_[key] = dec
                rows.append(
                    {
                        "dimension": dim,
                        "judge": name,
                        "decision": dec.label,
                        "reasons": "; ".join(dec.reasons),
                        "reliability": ruler.reliability,
                        "resolvable_fraction": ruler.resolvable_fraction,
                        "dropped_raters": len(dropped),
                        "judge_rho": calib.rho,
                        "judge_slope": calib.slope,
                        "judge_infit": calib.infit,
                        "judge_outfit": calib.outfit,
                        "nsmf": fid.nsmf,
                        "false_separation_rate": fid.false_separation_rate,
                        "transfer_failures": len(fid.transfer_failures),
                        "emd_raw": fid.mean_emd_raw,
                        "emd_calibrated": fid.mean_emd_calibrated,
                        "spearman": base.spearman,
                        "kendall": base.kendall,
                        "converged": bool(
                            fit.converged
                            and fit_cal.converged
                            and fit_ho.converged
                            and calib.converged
                        ),
                    }
                )
        self.report_ = pd.DataFrame(rows)
        return self


_DECISION_KEYS = (
    "min_reliability",
    "min_resolvable_fraction",
    "fit_range",
    "min_nsmf",
    "max_false_separation",
    "max_transfer_failures",
    "min_category_count",
)


# ----------------------------------------------------------------------------- checks
def _check_alpha(alpha: float) -> float:
    return check_probability(alpha, "alpha", open=True)


def _check_range(fit_range) -> tuple[float, float]:
    try:
        lo, hi = (float(v) for v in fit_range)
    except (TypeError, ValueError) as err:
        raise ValueError(f"fit_range must be a pair (low, high), got {fit_range!r}") from err
    if not 0 <= lo < hi:
        raise ValueError(f"fit_range must satisfy 0 <= low < high, got {fit_range!r}")
    return lo, hi
