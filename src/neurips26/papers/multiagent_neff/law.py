"""The effective-team-size law ``R(N) = N_eff / N = 1 / (1 + c (N - 1) N^-beta)``.

The paper proposes to measure a multi-agent LLM team not by its nominal size ``N`` but
by its effective size ``N_eff``, and finds that the ratio ``R(N) = N_eff / N`` follows a
two-parameter law. The redundancy ``c`` sets the scale and the exponent ``beta`` the
asymptotic regime: ``beta = 0`` is a hard ceiling ``N_eff -> 1 / c`` (Kish's design
effect with intra-class correlation ``c``), ``0 < beta < 1`` sublinear growth
``N_eff ~ N^beta / c`` and ``beta >= 1`` linear growth. This module holds the law, its
nonlinear least-squares fit with bootstrap uncertainty, the regime classifier and the
small-pilot extrapolation.

Deviations from the paper
-------------------------
- The fit uses ``scipy.optimize.least_squares`` (the trust-region solver behind
  ``curve_fit``) with the analytic Jacobian and three starting exponents, so that the
  convergence status is reported rather than inferred; bounds ``c >= 0``,
  ``0 <= beta <= 2`` are ours.
- R^2 is computed on ``N >= 2`` only (``R(1) = 1`` under every parameter value and would
  inflate it), which is stricter than a fit over the whole grid.
- Regime rule (inferred): hard ceiling if the 95% CI of ``beta`` contains 0, linear if
  it reaches 1, else sublinear; a CI containing both 0 and 1 is ``"indeterminate"``
  (our addition: such a fit cannot tell the regimes apart).
- CIs come from refitting bootstrap replicates of the curve (questions resampled, see
  :func:`neurips26.papers.multiagent_neff.neff_curve`) or, without replicates, from a
  residual bootstrap.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field

import numpy as np
from scipy.optimize import least_squares

from neurips26.common.validation import check_array, check_float, check_int, check_size

__all__ = [
    "REGIMES",
    "NeffFit",
    "NeffFitWarning",
    "Prediction",
    "classify_regime",
    "fit_neff_law",
    "kish_neff",
    "neff_ratio",
    "percentile_interval",
    "predict_from_pilot",
]

#: The regimes a fit can be classified into.
REGIMES = ("hard_ceiling", "sublinear", "linear", "indeterminate")


def percentile_interval(samples, ci: float = 0.95) -> tuple[float, float]:
    """Central ``ci`` percentile interval of bootstrap replicates (non-finite ones dropped).

    The interval every CI of this package is read from (``NeffFit.c_ci`` and the others);
    ``(nan, nan)`` with fewer than two finite replicates.

    >>> percentile_interval([1.0, 2.0, 3.0, 4.0, 5.0], ci=0.5)
    (2.0, 4.0)
    """
    x = np.asarray(samples, dtype=float).ravel()
    x = x[np.isfinite(x)]
    if x.size < 2:
        return float("nan"), float("nan")
    lo, hi = np.percentile(x, [50 * (1 - ci), 50 * (1 + ci)])
    return float(lo), float(hi)


class NeffFitWarning(RuntimeWarning):
    """Raised (as a warning) when the law's least-squares fit does not converge."""


def _check_team_sizes(N, name: str = "N") -> np.ndarray:
    arr = check_array(N, name, ndim=None)
    if np.any(arr < 1):
        raise ValueError(f"{name} must hold team sizes >= 1, got min {arr.min():g}")
    return arr


def neff_ratio(N, c: float, beta: float) -> np.ndarray:
    """The law ``R(N) = N_eff / N`` (vectorised over ``N``).

    Parameters
    ----------
    N : array_like, shape (G,)
        Team sizes ``N >= 1`` (need not be integers).
    c : float
        Redundancy ``c >= 0``.
    beta : float
        Regime exponent ``beta >= 0``.

    Returns
    -------
    ndarray, shape (G,)
        ``1 / (1 + c (N - 1) N^-beta)``; multiply by ``N`` for ``N_eff``.

    References
    ----------
    Bertalanic and Fortuna, arXiv 2606.02646, the two-parameter law.

    Examples
    --------
    >>> float(neff_ratio(30, 0.5, 0.0)[0] * 30)  # hard ceiling 1/c = 2
    1.935483870967742
    """
    n = _check_team_sizes(np.atleast_1d(N))
    c = check_float(c, "c", min=0)
    beta = check_float(beta, "beta", min=0)
    return 1.0 / (1.0 + c * (n - 1.0) * n ** (-beta))  # Eq. (1)


def kish_neff(N, rho: float) -> np.ndarray:
    """Kish's design effect ``N_eff = N / (1 + (N - 1) rho)``.

    Parameters
    ----------
    N : array_like, shape (G,)
        Team sizes ``N >= 1``.
    rho : float
        Mean pairwise (intra-class) correlation, ``rho > -1 / (N - 1)``.

    Returns
    -------
    ndarray, shape (G,)
        Effective team sizes.

    References
    ----------
    Kish, L. (1965). Survey Sampling. Wiley.

    Examples
    --------
    >>> float(kish_neff(11, 0.1)[0])
    5.5
    """
    n = _check_team_sizes(np.atleast_1d(N))
    rho = check_float(rho, "rho")
    denom = 1.0 + (n - 1.0) * rho
    if np.any(denom <= 0):
        raise ValueError(f"rho={rho} is below -1/(N-1) for some N; the design effect is undefined")
    return n / denom


def classify_regime(beta_ci, *, atol: float = 1e-3) -> str:
    """The asymptotic regime of a fit from the confidence interval of ``beta``.

    Parameters
    ----------
    beta_ci : tuple of float, (lower, upper)
        Confidence interval of the exponent ``beta``.
    atol : float
        A lower bound within ``atol`` of 0 counts as containing 0 (``beta`` is fitted on
        the bound ``beta >= 0``).

    Returns
    -------
    str
        ``"hard_ceiling"`` (CI contains 0), ``"linear"`` (CI reaches 1),
        ``"sublinear"`` (CI inside (0, 1)) or ``"indeterminate"`` (CI contains both 0
        and 1).

    Examples
    --------
    >>> classify_regime((0.0, 0.2)), classify_regime((0.3, 0.6)), classify_regime((0.9, 1.3))
    ('hard_ceiling', 'sublinear', 'linear')
    """
    lo, hi = (float(v) for v in check_array(beta_ci, "beta_ci", shape=(2,)))
    if lo > hi:
        raise ValueError(f"beta_ci must be (lower, upper) with lower <= upper, got {beta_ci}")
    atol = check_float(atol, "atol", min=0)
    has_zero = lo <= atol
    has_one = hi >= 1.0
    if has_zero and has_one:
        return "indeterminate"
    if has_zero:
        return "hard_ceiling"
    if has_one:
        return "linear"
    return "sublinear"


@dataclass(frozen=True)
class NeffFit:
    """A fit of the law ``R(N; c, beta)``.

    Attributes
    ----------
    c, beta : float
        Point estimates of the redundancy and the regime exponent.
    c_ci, beta_ci : tuple of float
        Confidence intervals (NaN when no bootstrap was run).
    r2 : float
        Coefficient of determination on the ``N >= 2`` points.
    regime : str
        One of :data:`REGIMES`.
    converged : bool
        Whether the least-squares solver reported convergence.
    num_points : int
        Grid points used.
    num_bootstrap_failed : int
        Bootstrap refits dropped (non-finite replicate or no convergence).
    samples : ndarray, shape (B, 2)
        Bootstrap ``(c, beta)`` samples (empty when none).
    r2_ci : tuple of float
        Percentile interval of the refits' R^2, each on its own bootstrap curve (NaN
        when no bootstrap was run).
    """

    c: float
    beta: float
    c_ci: tuple[float, float]
    beta_ci: tuple[float, float]
    r2: float
    regime: str
    converged: bool
    num_points: int
    num_bootstrap_failed: int = 0
    samples: np.ndarray = field(default_factory=lambda: np.empty((0, 2)), repr=False)
    r2_ci: tuple[float, float] = (float("nan"), float("nan"))

    @property
    def ceiling(self) -> float:
        """The hard ceiling ``1 / c`` (``inf`` when ``c = 0``)."""
        return float("inf") if self.c == 0 else 1.0 / self.c

    def predict(self, N) -> np.ndarray:
        """Predicted ``N_eff(N) = N R(N; c, beta)``, shape (G,)."""
        n = _check_team_sizes(np.atleast_1d(N))
        return n * neff_ratio(n, self.c, self.beta)


def _model(x: np.ndarray, n: np.ndarray) -> np.ndarray:
    c, beta = x
    return 1.0 / (1.0 + c * (n - 1.0) * n ** (-beta))  # Eq. (1), (G,)


def _jac(x: np.ndarray, n: np.ndarray) -> np.ndarray:
    c, beta = x
    g = (n - 1.0) * n ** (-beta)  # (G,)
    d2 = (1.0 + c * g) ** 2
    return np.stack([-g / d2, c * g * np.log(n) / d2], axis=1)  # (G, 2)


def _fit_once(n, r, sw, *, max_iter: int, tol: float, start=None):
    """Best of three starts (or one warm ``start``); returns (params (2,), converged)."""
    if start is None:
        informative = n >= 2
        c0 = float(
            np.mean(np.clip((1.0 / r[informative] - 1.0) / (n[informative] - 1.0), 1e-4, 1e4))
        )
        # rough rescaling keeps R(N_max) close
        starts = [np.array([c0 * (1.0 + beta0), beta0]) for beta0 in (0.0, 0.5, 1.0)]
    else:
        starts = [np.clip(np.asarray(start, dtype=float), [0.0, 0.0], [np.inf, 2.0])]
    best, best_cost, best_ok = None, np.inf, False
    for x0 in starts:
        res = least_squares(
            lambda x: sw * (_model(x, n) - r),
            x0,
            jac=lambda x: sw[:, None] * _jac(x, n),
            bounds=([0.0, 0.0], [np.inf, 2.0]),
            method="trf",
            xtol=tol,
            ftol=tol,
            gtol=tol,
            max_nfev=max_iter,
        )
        ok = bool(res.success and res.status > 0 and np.all(np.isfinite(res.x)))
        if (ok and not best_ok) or (ok == best_ok and res.cost < best_cost):
            best, best_cost, best_ok = res.x.copy(), res.cost, ok
    return best, best_ok


def _r2(n, r, params) -> float:
    m = n >= 2
    resid = r[m] - _model(params, n[m])
    ss_tot = float(np.sum((r[m] - r[m].mean()) ** 2))
    ss_res = float(np.sum(resid**2))
    return 1.0 - ss_res / ss_tot if ss_tot > 0 else (1.0 if ss_res == 0 else float("-inf"))


def _check_curve(N, ratio, name: str = "ratio") -> tuple[np.ndarray, np.ndarray]:
    n = _check_team_sizes(N)
    r = check_array(ratio, name, finite=False, min_size=0)  # type only; checked below
    if n.ndim != 1:
        raise ValueError(f"N must be 1-D, got shape {n.shape}")
    if r.shape != n.shape:
        raise ValueError(f"{name} must have the shape of N {n.shape}, got {r.shape}")
    if np.any(n != np.round(n)):
        raise ValueError("N must hold integer team sizes")
    if np.any(np.diff(n) <= 0):
        raise ValueError(f"N must be strictly increasing, got {n.tolist()}")
    if n.size < 3 or np.sum(n >= 2) < 2:
        raise ValueError(
            f"the law has 2 parameters: give at least 3 team sizes with at least 2 of them "
            f">= 2 (got N={n.tolist()}); the fit is under-determined otherwise"
        )
    if not np.all(np.isfinite(r)):
        raise ValueError(f"{name} contains NaN or infinite values")
    if np.any(r <= 0):
        raise ValueError(f"{name} must be positive (N_eff / N), got min {r.min():g}")
    return n, r


#: Most bootstrap refits :func:`fit_neff_law` runs.
MAX_BOOTSTRAP = 100_000


def fit_neff_law(
    N,
    ratio,
    *,
    replicates=None,
    weights=None,
    num_bootstrap: int = 500,
    ci: float = 0.95,
    max_iter: int = 2000,
    tol: float = 1e-12,
    atol: float = 1e-3,
    seed: int = 0,
    start=None,
) -> NeffFit:
    """Fit ``R(N) = 1 / (1 + c (N - 1) N^-beta)`` with uncertainty and regime.

    Parameters
    ----------
    N : array_like, shape (G,)
        Strictly increasing integer team sizes (at least 3, two of them >= 2).
    ratio : array_like, shape (G,)
        Measured ``R(N) = N_eff / N``.
    replicates : array_like, shape (B, G), optional
        Bootstrap replicates of ``ratio`` (e.g. questions resampled); each row is refit
        and the CIs are percentiles of the refits. Rows with NaN are dropped.
    weights : array_like, shape (G,), optional
        Non-negative least-squares weights (default: equal).
    num_bootstrap : int
        Residual-bootstrap refits when ``replicates`` is None (0: no CI; the regime is
        then read from the point estimate).
    ci : float
        Confidence level in (0, 1).
    max_iter : int
        Maximum function evaluations per least-squares start.
    tol : float
        ``xtol = ftol = gtol`` of the solver.
    atol : float
        Tolerance of :func:`classify_regime`.
    seed : int
        Seed of the residual bootstrap.
    start : (float, float), optional
        A warm start ``(c, beta)`` for the point fit (e.g. a fit of a nearby curve),
        used instead of the default three starts; clipped to the bounds ``c >= 0``,
        ``0 <= beta <= 2``.

    Returns
    -------
    NeffFit
        Estimates, CIs, R^2 on ``N >= 2``, regime and convergence. A fit that does not
        converge is returned with ``converged=False`` and a :class:`NeffFitWarning`.

    References
    ----------
    Bertalanic and Fortuna, arXiv 2606.02646.

    Examples
    --------
    >>> N = np.array([1, 2, 3, 5, 8, 12, 20, 30])
    >>> fit = fit_neff_law(N, neff_ratio(N, 0.2, 0.4), num_bootstrap=0)
    >>> round(fit.c, 6), round(fit.beta, 6)
    (0.2, 0.4)
    """
    n, r = _check_curve(N, ratio)
    if weights is None:
        sw = np.ones_like(n)
    else:
        w = np.asarray(weights, dtype=float)
        if w.shape != n.shape or not np.all(np.isfinite(w)) or np.any(w < 0):
            raise ValueError(f"weights must be finite, >= 0 and of shape {n.shape}")
        sw = np.sqrt(w)
    if not 0 < ci < 1:
        raise ValueError(f"ci must be in (0, 1), got {ci}")
    num_bootstrap = check_int(num_bootstrap, "num_bootstrap", min=0)
    check_size(num_bootstrap, "num_bootstrap", limit=MAX_BOOTSTRAP, what="bootstrap refits")
    if max_iter < 1 or tol <= 0:
        raise ValueError(f"max_iter must be >= 1 and tol > 0, got {max_iter}, {tol}")

    if start is not None:
        start = check_array(start, "start", shape=(2,))
    params, converged = _fit_once(n, r, sw, max_iter=max_iter, tol=tol, start=start)
    if not converged:
        warnings.warn(
            f"the N_eff law fit did not converge within max_iter={max_iter} evaluations "
            f"(c={params[0]:.4g}, beta={params[1]:.4g}); treat the parameters with care",
            NeffFitWarning,
            stacklevel=2,
        )
    # bootstrap
    if replicates is not None:
        reps = np.asarray(replicates, dtype=float)
        if reps.ndim != 2 or reps.shape[1] != n.size:
            raise ValueError(f"replicates must have shape (B, {n.size}), got {reps.shape}")
        rows = [row for row in reps if np.all(np.isfinite(row)) and np.all(row > 0)]
    elif num_bootstrap > 0:
        rng = np.random.default_rng(seed)
        m = n >= 2
        resid = r[m] - _model(params, n[m])  # (G2,)
        rows = []
        for _ in range(num_bootstrap):
            row = _model(params, n).copy()
            row[m] += rng.choice(resid, size=resid.size, replace=True)
            rows.append(np.clip(row, 1e-9, None))
    else:
        rows = []
    samples, r2s, failed = [], [], (0 if replicates is None else len(reps) - len(rows))
    for row in rows:  # warm start at the point estimate (the curves are close to it)
        p, ok = _fit_once(n, row, sw, max_iter=max_iter, tol=tol, start=params)
        if ok:
            samples.append(p)
            r2s.append(_r2(n, row, p))
        else:
            failed += 1
    samples_arr = np.array(samples).reshape(-1, 2)
    if len(samples_arr) >= 2:
        q = 100 * np.array([(1 - ci) / 2, (1 + ci) / 2])
        c_ci = tuple(float(v) for v in np.percentile(samples_arr[:, 0], q))
        beta_ci = tuple(float(v) for v in np.percentile(samples_arr[:, 1], q))
        r2_ci = tuple(float(v) for v in np.percentile(r2s, q))
        regime = classify_regime(beta_ci, atol=atol)
    else:
        c_ci = beta_ci = r2_ci = (float("nan"), float("nan"))
        regime = classify_regime((params[1], params[1]), atol=atol)
    return NeffFit(
        c=float(params[0]),
        beta=float(params[1]),
        c_ci=c_ci,
        beta_ci=beta_ci,
        r2=float(_r2(n, r, params)),
        regime=regime,
        converged=converged,
        num_points=int(n.size),
        num_bootstrap_failed=int(failed),
        samples=samples_arr,
        r2_ci=r2_ci,
    )


@dataclass(frozen=True)
class Prediction:
    """An extrapolation of ``N_eff`` from a pilot.

    Attributes
    ----------
    target_N : int
        The team size predicted for.
    neff : float
        Predicted ``N_eff(target_N)``.
    ratio : float
        Predicted ``R(target_N)``.
    interval : tuple of float
        Bootstrap interval of ``neff`` (NaN when no bootstrap).
    fit : NeffFit
        The pilot fit.
    """

    target_N: int
    neff: float
    ratio: float
    interval: tuple[float, float]
    fit: NeffFit


def predict_from_pilot(
    N_pilot,
    ratio_pilot,
    *,
    target_N: int = 30,
    replicates=None,
    num_bootstrap: int = 200,
    ci: float = 0.95,
    seed: int = 0,
) -> Prediction:
    """Fit the law on a small pilot (e.g. ``N <= 5``) and extrapolate ``N_eff(target_N)``.

    Parameters
    ----------
    N_pilot : array_like, shape (G,)
        Pilot team sizes (at least 3, two of them >= 2).
    ratio_pilot : array_like, shape (G,)
        Measured ``R(N)`` on the pilot.
    target_N : int
        Team size to predict (``>= 1``).
    replicates : array_like, shape (B, G), optional
        Bootstrap replicates of the pilot curve (see :func:`fit_neff_law`).
    num_bootstrap : int
        Residual-bootstrap refits when ``replicates`` is None.
    ci : float
        Level of the prediction interval.
    seed : int
        Seed of the residual bootstrap.

    Returns
    -------
    Prediction
        ``N_eff(target_N)``, ``R(target_N)``, an interval and the pilot fit.

    Examples
    --------
    >>> N = np.array([1, 2, 3, 4, 5])
    >>> p = predict_from_pilot(N, neff_ratio(N, 0.3, 0.0), target_N=30, num_bootstrap=0)
    >>> round(p.neff, 4)  # Kish: 30 / (1 + 29 * 0.3)
    3.0928
    """
    if int(target_N) != target_N or target_N < 1:
        raise ValueError(f"target_N must be an integer >= 1, got {target_N}")
    fit = fit_neff_law(
        N_pilot, ratio_pilot, replicates=replicates, num_bootstrap=num_bootstrap, ci=ci, seed=seed
    )
    neff = float(fit.predict(target_N)[0])
    if len(fit.samples) >= 2:
        tn = np.array([float(target_N)])
        draws = np.array([target_N * _model(p, tn)[0] for p in fit.samples])  # (B,)
        q = 100 * np.array([(1 - ci) / 2, (1 + ci) / 2])
        interval = tuple(float(v) for v in np.percentile(draws, q))
    else:
        interval = (float("nan"), float("nan"))
    return Prediction(
        target_N=int(target_N), neff=neff, ratio=neff / target_N, interval=interval, fit=fit
    )
