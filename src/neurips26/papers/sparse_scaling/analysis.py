"""Reading exponents, the interpolation peak and the compute-optimal frontier off a grid."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from neurips26.common.stats import fit_power_law as common_fit_power_law
from neurips26.common.validation import MAX_ELEMENTS, check_array, check_int, check_size

from .simulate import ScalingGrid


@dataclass(frozen=True)
class ExponentFit:
    """A power law ``y = exp(intercept) x^-exponent`` fitted by OLS in log-log.

    Attributes
    ----------
    exponent : float
        ``a`` in ``y ~ x^-a`` (positive for a decaying loss).
    intercept : float
        Log-scale intercept.
    r2 : float
        Coefficient of determination of the log-log fit.
    ci95 : tuple of float
        Percentile bootstrap interval of ``exponent`` over seeds (NaN with one seed).
    num_points : int
        Points inside the fitting window.
    """

    exponent: float
    intercept: float
    r2: float
    ci95: tuple[float, float]
    num_points: int

    @property
    def half_width(self) -> float:
        """Half the width of ``ci95``."""
        return 0.5 * (self.ci95[1] - self.ci95[0])


def fit_power_law(x, y, *, x_range=None, num_bootstrap: int = 1000, seed: int = 0) -> ExponentFit:
    """Fit ``y ~ x^-a`` by least squares on ``log y`` vs ``log x``.

    Parameters
    ----------
    x : array_like, shape (n,)
        Positive abscissae (``P`` or ``T``).
    y : array_like, shape (n,) or (S, n)
        Positive values; with ``S`` seeds the point estimate fits the seed mean and
        ``ci95`` resamples seeds with replacement (``num_bootstrap`` times).
    x_range : (float, float) or None
        Keep only ``lo <= x <= hi``.
    num_bootstrap : int
        Bootstrap replicates (0 disables the interval).
    seed : int
        Seed of the bootstrap.

    Returns
    -------
    ExponentFit

    Raises
    ------
    TypeError
        ``x`` or ``y`` not numeric (``None``, strings, objects).
    ValueError
        Fewer than 3 points in the window, non-positive or non-finite values, shapes
        that disagree, empty arrays, ``num_bootstrap * S * n`` above
        :data:`~neurips26.common.validation.MAX_ELEMENTS`.

    Examples
    --------
    >>> x = np.array([1.0, 2.0, 4.0, 8.0])
    >>> round(fit_power_law(x, 3 * x**-0.5).exponent, 6)
    0.5
    """
    xa = check_array(x, "x", ndim=1)
    ya = check_array(y, "y", ndim=(1, 2))
    if ya.ndim == 1:
        ya = ya[None, :]
    if ya.shape[1] != xa.size:
        raise ValueError(
            f"x and y disagree: y must have shape (n,) or (S, n) with n = len(x) = {xa.size}, "
            f"got {ya.shape}"
        )
    num_bootstrap = check_int(num_bootstrap, "num_bootstrap", min=0)
    check_size(
        num_bootstrap * ya.shape[0] * xa.size,
        "num_bootstrap",
        limit=MAX_ELEMENTS,
        what="resampled values (num_bootstrap * S * n)",
    )
    keep = np.ones(xa.size, dtype=bool)
    if x_range is not None:
        lo, hi = x_range
        if not lo <= hi:
            raise ValueError(f"x_range must be (lo, hi) with lo <= hi, got {x_range}")
        keep = (xa >= lo) & (xa <= hi)
    if keep.sum() < 3:
        raise ValueError(f"a power-law fit needs at least 3 points, got {int(keep.sum())}")
    if np.any(xa[keep] <= 0) or np.any(ya[:, keep] <= 0):
        raise ValueError("a power-law fit needs positive x and y (log-log), got a value <= 0")
    lx = np.log(xa[keep])
    ys = ya[:, keep]  # (S, n)
    point = common_fit_power_law(xa[keep], ys.mean(axis=0))  # log-log OLS
    ci = (float("nan"), float("nan"))
    if ys.shape[0] >= 2 and num_bootstrap > 0:
        rng = np.random.default_rng(seed)
        idx = rng.integers(0, ys.shape[0], size=(num_bootstrap, ys.shape[0]))  # (B, S)
        boot_mean = ys[idx].mean(axis=1)  # (B, n)
        lxc = lx - lx.mean()
        slopes = (np.log(boot_mean) @ lxc) / (lxc @ lxc)  # (B,) OLS slopes
        lo, hi = np.percentile(-slopes, [2.5, 97.5])
        ci = (float(lo), float(hi))
    return ExponentFit(
        exponent=point.exponent,
        intercept=point.intercept,
        r2=point.r2,
        ci95=ci,
        num_points=int(keep.sum()),
    )


@dataclass(frozen=True)
class PeakResult:
    """Where the mean loss over ``P`` peaks for one ``T``.

    Attributes
    ----------
    num_samples : int
        ``T``.
    data_rank : float
        Mean ``r_T = rank(X_train)`` over seeds.
    peak_params : int
        ``argmax_P`` of the seed-mean loss.
    peak_ratio_to_rank : float
        ``peak_params / data_rank``.
    peak_loss : float
    quarter_loss : float
        Seed-mean loss at the grid ``P`` closest (in log) to ``r_T / 4``.
    peak_over_quarter : float
        ``peak_loss / quarter_loss``.
    """

    num_samples: int
    data_rank: float
    peak_params: int
    peak_ratio_to_rank: float
    peak_loss: float
    quarter_loss: float
    peak_over_quarter: float


def interpolation_peak(grid: ScalingGrid, *, sample_index: int) -> PeakResult:
    """Locate the double-descent peak of one ``T`` column of a grid.

    Parameters
    ----------
    grid : ScalingGrid
    sample_index : int
        Column of ``grid.num_samples``.

    Returns
    -------
    PeakResult
    """
    if not isinstance(grid, ScalingGrid):
        raise TypeError(f"grid must be a ScalingGrid, got {type(grid).__name__}")
    j = check_int(sample_index, "sample_index", min=0)
    if j >= grid.num_samples.size:
        raise ValueError(f"sample_index {j} out of range for {grid.num_samples.size} T values")
    mean = grid.mean_loss[:, j]  # (nP,)
    r_t = float(grid.data_rank[:, j].mean())
    i_peak = int(np.argmax(mean))
    i_q = int(np.argmin(np.abs(np.log(grid.num_params) - np.log(max(r_t / 4.0, 1.0)))))
    return PeakResult(
        num_samples=int(grid.num_samples[j]),
        data_rank=r_t,
        peak_params=int(grid.num_params[i_peak]),
        peak_ratio_to_rank=float(grid.num_params[i_peak] / r_t),
        peak_loss=float(mean[i_peak]),
        quarter_loss=float(mean[i_q]),
        peak_over_quarter=float(mean[i_peak] / mean[i_q]),
    )


@dataclass(frozen=True)
class Frontier:
    """The compute-optimal frontier of a grid under cost ``C = P T``.

    Attributes
    ----------
    cost : ndarray, shape (K,)
        Budgets ``C``.
    best_params, best_samples : ndarray, shape (K,)
        ``P*(C)``, ``T*(C)``: the grid cell of least seed-mean loss with ``P T <= C``.
    best_loss : ndarray, shape (K,)
    interior : ndarray of bool, shape (K,)
        Optimum not on the grid's largest ``P`` or ``T`` (only these enter the fits).
    params_fit, samples_fit : ExponentFit or None
        ``P* ~ C^a`` and ``T* ~ C^b`` (``exponent`` holds ``-a`` and ``-b``; use
        ``params_exponent`` / ``samples_exponent``). None with fewer than 3 interior
        budgets.
    """

    cost: np.ndarray
    best_params: np.ndarray
    best_samples: np.ndarray
    best_loss: np.ndarray
    interior: np.ndarray
    params_fit: ExponentFit | None
    samples_fit: ExponentFit | None

    @property
    def params_exponent(self) -> float:
        """``a`` in ``P* ~ C^a`` (NaN when not fitted)."""
        return float("nan") if self.params_fit is None else -self.params_fit.exponent

    @property
    def samples_exponent(self) -> float:
        """``b`` in ``T* ~ C^b`` (NaN when not fitted)."""
        return float("nan") if self.samples_fit is None else -self.samples_fit.exponent


def compute_optimal_frontier(grid: ScalingGrid, *, num_levels: int = 16) -> Frontier:
    """Best ``(P, T)`` per compute budget ``C = P T`` and the exponents of ``P*`` and ``T*``.

    Parameters
    ----------
    grid : ScalingGrid
    num_levels : int
        Budgets, log-spaced from the smallest to the largest ``P T`` of the grid.

    Returns
    -------
    Frontier

    Examples
    --------
    >>> from neurips26.papers.sparse_scaling import SparseFeatureModel, scaling_grid
    >>> g = scaling_grid(SparseFeatureModel(dim=64), num_params_grid=[4, 8, 16, 32, 64],
    ...                  num_samples_grid=[4, 8, 16, 32], num_seeds=2)
    >>> compute_optimal_frontier(g, num_levels=6).cost.shape
    (6,)
    """
    if not isinstance(grid, ScalingGrid):
        raise TypeError(f"grid must be a ScalingGrid, got {type(grid).__name__}")
    num_levels = check_int(num_levels, "num_levels", min=3)
    p, t = grid.num_params, grid.num_samples
    cost_cells = np.multiply.outer(p, t).astype(float)  # (nP, nT)
    mean = grid.mean_loss  # (nP, nT)
    levels = np.geomspace(cost_cells.min(), cost_cells.max(), num_levels)
    best_p = np.empty(num_levels, dtype=int)
    best_t = np.empty(num_levels, dtype=int)
    best_l = np.empty(num_levels)
    for k, c in enumerate(levels):
        masked = np.where(cost_cells <= c * (1 + 1e-12), mean, np.inf)
        i, j = np.unravel_index(int(np.argmin(masked)), masked.shape)
        best_p[k], best_t[k], best_l[k] = p[i], t[j], masked[i, j]
    interior = (best_p < p[-1]) & (best_t < t[-1])
    pf = sf = None
    if interior.sum() >= 3 and np.unique(levels[interior]).size >= 3:
        lc = levels[interior]
        # fit P* ~ C^a as a "power law" in C with exponent -a
        pf = fit_power_law(lc, best_p[interior].astype(float), num_bootstrap=0)
        sf = fit_power_law(lc, best_t[interior].astype(float), num_bootstrap=0)
    return Frontier(
        cost=levels,
        best_params=best_p,
        best_samples=best_t,
        best_loss=best_l,
        interior=interior,
        params_fit=pf,
        samples_fit=sf,
    )
