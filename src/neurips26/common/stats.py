"""Statistics shared by the papers: power-law fits, paired tests, the Frechet distance.

Confidence intervals of measured quantities are made by the experiment layer
(:mod:`neurips26.experiment`: ``t_interval``, ``bootstrap_interval``, ``Table.bootstrap``).

* :func:`fit_power_law` fits ``y = C x^(-a)`` by least squares in log-log (the scaling-law
  reading), or with ``asymptote=True`` the saturating learning curve
  ``y = y_inf - C x^(-a)`` by bounded non-linear least squares.
* :func:`paired_test` compares two methods measured on the same instances (paired t test or
  the Wilcoxon signed-rank test, both from scipy).
* :func:`frechet_distance` is the Frechet distance between Gaussians fitted to two feature
  sets (FID's formula), exact when there are fewer samples than features.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass

import numpy as np
from scipy import linalg, optimize, stats

from .validation import check_array, check_choice

__all__ = [
    "PairedTest",
    "PowerLawFit",
    "fit_power_law",
    "frechet_distance",
    "paired_test",
]


@dataclass(frozen=True)
class PowerLawFit:
    """A fitted power law ``y = asymptote - sign * scale * x^(-exponent)``.

    Attributes
    ----------
    exponent : float
        ``a`` (positive for a decaying loss or a saturating accuracy).
    scale : float
        ``C``.
    asymptote : float
        ``y_inf`` of the saturating form; 0 for the pure power law.
    r2 : float
        Coefficient of determination (in log-log for the pure law, in ``y`` otherwise).
    num_points : int
    saturating : bool
        Which form was fitted.
    intercept : float
        ``log C`` (the log-log intercept of the pure law, as fitted).
    """

    exponent: float
    scale: float
    asymptote: float
    r2: float
    num_points: int
    saturating: bool
    intercept: float

    def __call__(self, x) -> np.ndarray:
        """The fitted curve at ``x`` (any shape, ``x > 0``)."""
        x = np.asarray(x, dtype=float)
        if self.saturating:
            return self.asymptote - self.scale * x ** (-self.exponent)
        return self.scale * x ** (-self.exponent)


def _r2(y: np.ndarray, pred: np.ndarray) -> float:
    ss_res = float(np.sum((y - pred) ** 2))
    ss_tot = float(np.sum((y - y.mean()) ** 2))
    return 1.0 - ss_res / ss_tot if ss_tot > 0 else 1.0


def _saturating(d, a_inf, c, gamma):
    return a_inf - c * d ** (-gamma)


def fit_power_law(x, y, *, asymptote: bool = False) -> PowerLawFit:
    """Fit ``y = C x^(-a)`` (log-log OLS) or ``y = y_inf - C x^(-a)`` (``asymptote=True``).

    Parameters
    ----------
    x : array_like, shape (n,)
        Positive abscissae (sizes, budgets, compute).
    y : array_like, shape (n,)
        Values; positive for the pure law.
    asymptote : bool
        Fit the saturating form with ``C > 0`` and ``0 < a <= 10`` (bounded trust-region
        least squares started from a log-log fit of the gap to ``max(y) + 0.01``); needs at
        least 3 distinct ``x``.

    Returns
    -------
    PowerLawFit

    Raises
    ------
    ValueError
        Shapes that disagree, NaN or inf, ``x <= 0``, ``y <= 0`` for the pure law, fewer
        than 2 points (3 distinct for the saturating form).

    Examples
    --------
    >>> x = np.array([1.0, 2.0, 4.0, 8.0])
    >>> round(fit_power_law(x, 3 * x**-0.5).exponent, 6)
    0.5
    >>> d = np.array([10.0, 20, 50, 100, 200, 500])
    >>> fit = fit_power_law(d, 0.9 - 0.5 * d**-0.7, asymptote=True)
    >>> round(fit.exponent, 6), round(fit.asymptote, 6)
    (0.7, 0.9)
    """
    xa = check_array(x, "x", ndim=1)
    ya = check_array(y, "y", ndim=1)
    if xa.shape != ya.shape:
        raise ValueError(f"x and y must have the same length, got {xa.size} and {ya.size}")
    if np.any(xa <= 0):
        raise ValueError(f"x must be positive for a power law, got a minimum of {xa.min()!r}")
    if not asymptote:
        if xa.size < 2:
            raise ValueError(f"x needs at least 2 points for a power-law fit, got {xa.size}")
        if np.any(ya <= 0):
            raise ValueError(f"y must be positive for a log-log fit, got a minimum of {ya.min()!r}")
        lx, ly = np.log(xa), np.log(ya)
        slope, icept = np.polyfit(lx, ly, 1)
        r2 = _r2(ly, slope * lx + icept)
        return PowerLawFit(
            exponent=-float(slope),
            scale=float(np.exp(icept)),
            asymptote=0.0,
            r2=r2,
            num_points=int(xa.size),
            saturating=False,
            intercept=float(icept),
        )
    if np.unique(xa).size < 3:
        raise ValueError("x needs at least 3 distinct values to fit the saturating power law")
    # Start from a log-log regression of the gap to a slightly-above-max asymptote.
    a0 = float(ya.max() + 0.01)
    slope, icept = np.polyfit(np.log(xa), np.log(np.maximum(a0 - ya, 1e-6)), 1)
    p0 = (a0, float(np.exp(icept)), float(max(-slope, 1e-2)))
    popt, _ = optimize.curve_fit(
        _saturating,
        xa,
        ya,
        p0=p0,
        bounds=([-np.inf, 1e-12, 1e-6], [np.inf, np.inf, 10.0]),
        method="trf",
        xtol=1e-15,
        ftol=1e-15,
        gtol=1e-15,
        max_nfev=20_000,
    )
    return PowerLawFit(
        exponent=float(popt[2]),
        scale=float(popt[1]),
        asymptote=float(popt[0]),
        r2=_r2(ya, _saturating(xa, *popt)),
        num_points=int(xa.size),
        saturating=True,
        intercept=math.log(float(popt[1])),
    )


@dataclass(frozen=True)
class PairedTest:
    """A paired comparison of ``a`` and ``b`` measured on the same ``n`` units.

    Attributes
    ----------
    method : str
        ``"t"`` (paired t test) or ``"wilcoxon"`` (signed-rank test).
    statistic : float
    pvalue : float
        Two-sided.
    mean_difference : float
        ``mean(a - b)``.
    n : int
    """

    method: str
    statistic: float
    pvalue: float
    mean_difference: float
    n: int


def paired_test(a, b, *, method: str = "t") -> PairedTest:
    """Two-sided paired test of ``a`` against ``b`` (``scipy.stats.ttest_rel`` / ``wilcoxon``).

    Parameters
    ----------
    a, b : array_like, shape (n,)
        Paired measurements (``n >= 2``), finite.
    method : {"t", "wilcoxon"}

    Returns
    -------
    PairedTest
        All differences zero gives ``statistic = 0`` and ``pvalue = 1``.

    Examples
    --------
    >>> r = paired_test([1.0, 2.0, 3.0, 4.0], [0.5, 1.0, 2.5, 3.0])
    >>> r.method, round(r.mean_difference, 6)
    ('t', 0.75)
    """
    xa = check_array(a, "a", ndim=1)
    xb = check_array(b, "b", ndim=1)
    if xa.shape != xb.shape:
        raise ValueError(f"a and b must have the same length, got {xa.size} and {xb.size}")
    if xa.size < 2:
        raise ValueError(f"a needs at least 2 paired values, got {xa.size}")
    check_choice(method, "method", ("t", "wilcoxon"))
    diff = xa - xb
    if np.all(diff == 0):
        return PairedTest(method, 0.0, 1.0, 0.0, int(xa.size))
    if method == "t":
        res = stats.ttest_rel(xa, xb)
    else:
        res = stats.wilcoxon(xa, xb)
    return PairedTest(
        method, float(res.statistic), float(res.pvalue), float(diff.mean()), int(xa.size)
    )


#: The widest features :func:`frechet_distance` accepts (its sqrtm is cubic in the width).
MAX_FD_DIM = 4096


def _fd_features(value, name: str) -> np.ndarray:
    if type(value).__module__.startswith("torch") and hasattr(value, "detach"):
        value = value.detach().cpu().numpy()
    x = check_array(value, name, ndim=2)
    if x.size and np.abs(x).max() > 1e8:
        raise ValueError(f"{name}: values must be of moderate size (|x| <= 1e8)")
    return x


def frechet_distance(feats_a, feats_b) -> float:
    """Frechet distance between Gaussians fitted to two feature sets (FID's formula).

    ``||mu_a - mu_b||^2 + tr(S_a + S_b - 2 (S_a S_b)^{1/2})`` with the unbiased sample
    covariances ``S``. With fewer sample pairs than features (``N M <= F^2``) the trace of
    the square root is computed exactly as a nuclear norm: the non-zero eigenvalues of
    ``S_a S_b`` are the squared singular values of ``A B^T / sqrt((N-1)(M-1))`` (centred
    rows). Otherwise ``scipy.linalg.sqrtm``; a (nearly) singular product is regularised by
    a ridge of ``1e-6`` times the mean variance, as the FID reference code does.

    Parameters
    ----------
    feats_a : array_like, shape (N, F)
    feats_b : array_like, shape (M, F)
        Finite features of the same width ``F <= 4096``, ``|x| <= 1e8``; at least 2 rows
        each. Torch tensors are read detached (a metric, not a loss).

    Returns
    -------
    float
        Non-negative (rounding below zero is clipped).

    Raises
    ------
    ValueError
        Naming the argument: NaN or inf, widths that differ, fewer than 2 rows, too wide.

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> a = rng.normal(size=(5000, 2))
    >>> round(frechet_distance(a, a + [3.0, 0.0]), 6)  # a shift of 3: 3^2
    9.0
    """
    a, b = _fd_features(feats_a, "feats_a"), _fd_features(feats_b, "feats_b")
    if a.shape[1] != b.shape[1]:
        raise ValueError(f"feats_b: expected {a.shape[1]} features like feats_a, got "
                         f"{b.shape[1]}")
    if a.shape[1] > MAX_FD_DIM:
        raise ValueError(f"feats_a: at most {MAX_FD_DIM} features, got {a.shape[1]}")
    for name, f in (("feats_a", a), ("feats_b", b)):
        if len(f) < 2:
            raise ValueError(f"{name}: need at least 2 rows, got {len(f)}")
    mu_a, mu_b = a.mean(0), b.mean(0)
    s_a = np.atleast_2d(np.cov(a, rowvar=False))
    s_b = np.atleast_2d(np.cov(b, rowvar=False))
    if len(a) * len(b) <= a.shape[1] ** 2:
        sv = linalg.svdvals((a - mu_a) @ (b - mu_b).T)
        tr_covmean = float(sv.sum()) / math.sqrt((len(a) - 1) * (len(b) - 1))
    else:
        with warnings.catch_warnings():
            warnings.simplefilter("error", linalg.LinAlgWarning)
            try:
                covmean = linalg.sqrtm(s_a @ s_b)
                singular = not np.isfinite(covmean).all()
            except linalg.LinAlgWarning:
                singular = True
        if singular:
            eps = 1e-6 * max(1.0, float(np.trace(s_a) + np.trace(s_b)) / len(s_a))
            ridge = eps * np.eye(len(s_a))
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", linalg.LinAlgWarning)
                covmean = linalg.sqrtm((s_a + ridge) @ (s_b + ridge))
        tr_covmean = float(np.trace(np.real(covmean)))
    fd = float(((mu_a - mu_b) ** 2).sum() + np.trace(s_a) + np.trace(s_b) - 2 * tr_covmean)
    return max(fd, 0.0)
