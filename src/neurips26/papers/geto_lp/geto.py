"""GETO-LP: an exact fixed-support Wasserstein barycenter LP on grids.

The paper proposes GETO-LP (Grid Efficient Transport Optimization LP), a linear program
for the barycenter of ``M`` histograms that share one fixed support, a ``d``-dimensional
grid of ``N`` points, under a cost that is a sum of per-axis terms (the squared
Euclidean cost, for instance). The classical LP keeps one ``N x N`` transport plan per
input, ``O(M N^2)`` variables. GETO-LP instead routes the mass from the barycenter to
every input through ``d`` layers, where layer ``k`` only moves mass along axis ``k``;
each layer has ``N n_k`` arcs, so the model has ``N + M N sum_k n_k`` variables, that is
``O(d M N^(1+1/d))`` on a cubic grid. Because the cost is separable, any plan can be
routed along the "axis-by-axis" path at the same cost and any layered flow composes back
into a plan of the same cost, so the optimal value is exactly the classical one and the
optimal plans are recovered from the layers by sparse matrix products, with no further
optimisation. The construction extends the (d+1)-partite flow of Auricchio et al.
(NeurIPS 2018) for W2 distances to barycenters.

Deviations from the paper
-------------------------
- The paper's text is not available to us, only its abstract: the layered construction
  (variables, node balances, objective) and the plan recovery by proportional
  composition of the layers, ``pi_m = diag(nu) P_1 ... P_d``, are our reading of it,
  built on Auricchio et al.'s (d+1)-partite graph.
- The equation numbers in comments refer to the equations of our spec
  (``shared/papers/geto_lp.md``), numbered in order: (1) separable cost, (2) layer arcs,
  (3) node balances, (4) objective, (5) plan composition; not to the paper's.
- ``sum(nu) = 1`` is implied by the balances and is added only on request
  (``add_mass_constraint=True``); the tests check that it is redundant.
- An exact support reduction that the abstract does not mention is on by default
  (``reduce_support=True``, in both LPs so that they are compared on equal terms). Every
  point of an optimal barycenter is a grid minimiser of ``sum_m w_m c(x, y_m)`` for some
  tuple of the inputs' support points (gluing the optimal plans; otherwise moving its
  mass would lower the objective), and for a convex per-axis cost these minimisers are
  monotone in the ``y_m``. So the barycenter lives in :func:`support_box`, and after
  layer ``k`` a unit of mass bound for ``y`` in ``mu_m`` can only sit on nodes whose first
  ``k + 1`` coordinates are a prefix of ``mu_m``'s support and whose later coordinates lie
  in a window computed from that prefix. Variables outside are left out and rows left
  empty are dropped; the optimal value is unchanged (tested against the whole
  formulation, the full LP and POT). The experiment stores the fraction of the
  variables that is left (``solved_var_fraction_largest``) and ``benchmarks/geto_lp.py``
  times the reduced and the whole formulation side by side.
  ``reduce_support=False`` solves the paper's formulation as it stands.
- Both LPs are solved by HiGHS through :func:`scipy.optimize.linprog` at primal and dual
  feasibility tolerance ``tol = 1e-9``; the paper's own solver settings are unknown. The
  default ``solver="auto"`` picks dual simplex for models under ``IPM_MIN_VARIABLES``
  variables and interior point with crossover above (both return a vertex solution;
  the threshold is where the two cross on the reduced models of 2-D grids with M = 3),
  one setting shared by the library, the experiment and the benchmark. Every optimal
  result carries a certificate, :func:`dual_certificate`'s lower bound from HiGHS's row
  duals, so its optimality is checked in one sparse product. What else the structure
  allows was tried and left out of the default: interior point
  without crossover (the barycenter, not a vertex, is what is wanted) was not faster than
  with crossover on these models and at ``1e-9`` tolerances IPX sometimes stopped short
  ("imprecise"); HiGHS's first-order PDLP did not reach even ``1e-7`` on a 32 x 32
  instance within a minute; warm-started primal simplex across a sweep of weights was
  slower than cold interior-point solves; a multiscale column-generation prototype
  (arcs of the coarse solution, all arcs priced with the duals, exact on convergence)
  only matched interior point's time. HiPO, HiGHS's direct-factorisation IPM (highspy
  1.15.1 with ``highspy-extras`` 1.15.1), was several times slower than IPX on the whole
  formulation at 32 x 32 and 64 x 64 (the normal equations fill in), and calling HiGHS
  1.16 through ``highspy`` instead of scipy's bundled copy changed little. HiGHS may
  leave masses below its feasibility tolerance unmatched, so plan marginals are exact
  only to ``tol``; the code warns (once per process) when an input has positive masses
  under ``10 tol``, and the reproduction's synthetic densities are truncated at ``1e-5``
  of their peak. With masses far below the tolerance (untruncated Gaussian tails) HiGHS's
  presolve may even call the LP infeasible; a barycenter LP is always feasible, so the
  solve is then repeated without presolve.
- Histograms must sum to 1 within ``1e-9``; float32 (or float16) inputs, which cannot be
  normalised that finely, within ``N eps`` of their dtype (``N`` bins), and are then
  renormalised in float64. Every LP is built and solved in float64.
- Memory claims are measured with :mod:`tracemalloc` around build + solve in the
  reproduction. It sees the Python/NumPy side (the COO/CSC model arrays, scipy's copies
  and the solution vector) but not HiGHS's C++ allocations (its own matrix copies,
  factorisations), so the model's ``nnz`` and ``num_variables`` are reported alongside,
  and the benchmark also records each solve's peak RSS in a child process.
- The experiments use grids on the unit cube (``spacing = 1 / (n - 1)``) so that POT's
  entropic regularisations are on the cost scale of its convolutional solver.
"""

from __future__ import annotations

import math
import time
import warnings
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import scipy.sparse as sp
from scipy.optimize import linprog
from sklearn.base import BaseEstimator

from neurips26.common.validation import (
    check_array,
    check_bool,
    check_choice,
    check_float,
    check_int,
    check_probability_vector,
    check_size,
)

__all__ = [
    "IPM_MIN_VARIABLES",
    "SOLVERS",
    "BarycenterResult",
    "GETOBarycenter",
    "GridSpec",
    "LPModel",
    "LPSize",
    "SolverError",
    "TransportResult",
    "build_full_lp",
    "build_geto_lp",
    "dual_certificate",
    "full_lp_barycenter",
    "geto_barycenter",
    "geto_distance",
    "grid_cost_matrix",
    "lp_size",
    "resolve_solver",
    "support_box",
    "w2_to_inputs",
]

_SEPARABLE_COSTS = ("sqeuclidean", "lp")
_NON_SEPARABLE = ("euclidean", "cityblock_sqrt", "chebyshev", "cosine", "minkowski")
#: The ``solver`` choices: the HiGHS methods of :func:`scipy.optimize.linprog` and "auto".
SOLVERS = ("auto", "highs", "highs-ds", "highs-ipm")
#: ``solver="auto"`` uses HiGHS interior point (with crossover) from this many variables
#: on, dual simplex below: where the two cross on the reduced models of 2-D grids with
#: M = 3 (about a 16 x 16 grid).
IPM_MIN_VARIABLES = 5_000
_SUM_TOL = 1e-9


class SolverError(RuntimeError):
    """HiGHS did not return an optimal solution (time limit, infeasible, numerical)."""


# --------------------------------------------------------------------------- grid


@dataclass(frozen=True)
class GridSpec:
    """A regular ``d``-dimensional grid and a separable ground cost on it.

    Parameters
    ----------
    shape : tuple of int
        ``(n_1, ..., n_d)``, the number of points on each axis; ``N = prod(shape)``.
    spacing : tuple of float or None
        Distance between neighbouring points on each axis (``h_k``); axis ``k`` has
        coordinates ``t_k[i] = i h_k``. ``None`` means 1 on every axis.
    cost : {"sqeuclidean", "lp"}
        The ground cost ``c(x, y) = sum_k phi_k(x_k - y_k)``: ``phi(t) = t^2`` (``W2^2``,
        the default) or ``phi(t) = |t|^p``. Non-separable costs (``"euclidean"``) are
        refused: the layered formulation needs separability.
    p : float
        The exponent of ``"lp"`` (ignored for ``"sqeuclidean"``), ``p > 0``.

    Examples
    --------
    >>> g = GridSpec((4, 3), spacing=(0.5, 1.0))
    >>> g.num_points, g.ndim
    (12, 2)
    """

    shape: tuple[int, ...]
    spacing: tuple[float, ...] | None = None
    cost: str = "sqeuclidean"
    p: float = 2.0

    def __post_init__(self) -> None:
        shape = self.shape
        if isinstance(shape, (int, np.integer)):
            shape = (int(shape),)
        try:
            shape = tuple(shape)
        except TypeError as err:
            raise TypeError(f"GridSpec.shape must be a tuple of ints, got {self.shape!r}") from err
        if len(shape) == 0:
            raise ValueError("GridSpec.shape must have at least one axis, got ()")
        for n in shape:
            if isinstance(n, bool) or not isinstance(n, (int, np.integer)):
                raise TypeError(f"GridSpec.shape must hold ints, got {shape!r}")
            if n < 1:
                raise ValueError(f"every grid axis needs at least one point, got shape {shape}")
        object.__setattr__(self, "shape", tuple(int(n) for n in shape))
        if self.spacing is not None:
            spacing = tuple(float(h) for h in np.atleast_1d(self.spacing))
            if len(spacing) != len(shape):
                raise ValueError(
                    f"spacing has {len(spacing)} entries but the grid has {len(shape)} axes"
                )
            if not all(math.isfinite(h) and h > 0 for h in spacing):
                raise ValueError(f"spacing must be finite and > 0 on every axis, got {spacing}")
            object.__setattr__(self, "spacing", spacing)
        if self.cost in _NON_SEPARABLE or self.cost not in _SEPARABLE_COSTS:
            raise ValueError(
                f"cost {self.cost!r} is not supported: GETO-LP needs a separable cost "
                f"c(x, y) = sum_k phi_k(x_k - y_k); use one of {_SEPARABLE_COSTS} "
                "('lp' with exponent p gives sum_k |x_k - y_k|^p)"
            )
        if not (math.isfinite(self.p) and self.p > 0):
            raise ValueError(f"the cost exponent p must be finite and > 0, got {self.p}")

    @property
    def ndim(self) -> int:
        """``d``, the number of axes."""
        return len(self.shape)

    @property
    def num_points(self) -> int:
        """``N``, the number of grid points."""
        return math.prod(self.shape)

    @property
    def steps(self) -> tuple[float, ...]:
        """The spacing on every axis (1.0 where ``spacing`` is None)."""
        return self.spacing if self.spacing is not None else (1.0,) * self.ndim

    def axis_cost(self, delta: np.ndarray, axis: int) -> np.ndarray:
        """``phi_k`` of an integer index offset ``delta`` along ``axis`` (Eq. (1))."""
        t = np.abs(np.asarray(delta, dtype=float)) * self.steps[axis]
        if self.cost == "sqeuclidean":
            return t * t
        return t**self.p

    def coordinates(self) -> np.ndarray:
        """Coordinates of the ``N`` points in C order, shape ``(N, d)``."""
        axes = [np.arange(n) * h for n, h in zip(self.shape, self.steps, strict=True)]
        mesh = np.meshgrid(*axes, indexing="ij")
        return np.stack([m.ravel() for m in mesh], axis=1)


#: Most grid points :func:`grid_cost_matrix` accepts (its dense matrix has N^2 entries).
MAX_DENSE_POINTS = 20_000


def grid_cost_matrix(grid: GridSpec) -> np.ndarray:
    """The dense ``N x N`` ground-cost matrix ``C[x, y] = sum_k phi_k(x_k - y_k)``.

    Parameters
    ----------
    grid : GridSpec
        The grid and its separable cost.

    Returns
    -------
    C : ndarray, shape (N, N)

    Examples
    --------
    >>> grid_cost_matrix(GridSpec((3,)))
    array([[0., 1., 4.],
           [1., 0., 1.],
           [4., 1., 0.]])

    Refuses a ``grid`` that is not a :class:`GridSpec` (``TypeError``) and grids of more
    than ``MAX_DENSE_POINTS`` points (the matrix has ``N^2`` entries).
    """
    grid = _check_grid(grid)
    check_size(grid.num_points, "grid", limit=MAX_DENSE_POINTS, what="grid points")
    idx = np.unravel_index(np.arange(grid.num_points), grid.shape)
    cost = np.zeros((grid.num_points, grid.num_points))
    for k in range(grid.ndim):
        cost += grid.axis_cost(idx[k][:, None] - idx[k][None, :], k)  # Eq. (1)
    return cost


def _strides(shape: tuple[int, ...]) -> tuple[int, ...]:
    return tuple(math.prod(shape[k + 1 :]) for k in range(len(shape)))


def _layer_arcs(grid: GridSpec, axis: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Arcs of the layer along ``axis``: (source, target, cost), each of length ``N n_k``.

    Arc ``x * n_k + j`` goes from node ``x`` to the node equal to ``x`` except that its
    coordinate ``k`` is ``j`` (Eq. (2)); ``j = x_k`` is the zero-cost stay-put arc.
    """
    n_k = grid.shape[axis]
    stride = _strides(grid.shape)[axis]
    nodes = np.arange(grid.num_points, dtype=np.int64)  # (N,)
    x_k = (nodes // stride) % n_k  # (N,) coordinate k of every node
    j = np.arange(n_k, dtype=np.int64)  # (n_k,)
    delta = j[None, :] - x_k[:, None]  # (N, n_k)
    source = np.repeat(nodes, n_k)  # (N n_k,)
    target = (nodes[:, None] + delta * stride).ravel()  # (N n_k,)
    return source, target, grid.axis_cost(delta.ravel(), axis)


# --------------------------------------------------------------------------- checks


def _check_grid(grid: Any) -> GridSpec:
    if not isinstance(grid, GridSpec):
        raise TypeError(f"grid must be a GridSpec, got {type(grid).__name__}")
    return grid


def _sum_tolerance(histograms: Any, num_bins: int) -> float:
    """How far from 1 a histogram's sum may be: ``1e-9``, or ``N eps`` of a lower precision.

    A float64 histogram must sum to 1 within ``1e-9``. One stored in float32 (or float16)
    cannot be normalised that finely, so its sum may miss 1 by up to ``N eps`` of its
    dtype (``N`` bins: the worst-case rounding of the sum); such histograms are accepted
    and renormalised in float64 before the LP is built.

    Examples
    --------
    >>> _sum_tolerance(np.zeros(3), 4096)
    1e-09
    >>> round(_sum_tolerance(np.zeros(3, np.float32), 4096), 7)
    0.0004883
    """
    dtype = getattr(histograms, "dtype", None)
    if dtype is not None and np.issubdtype(dtype, np.floating) and np.dtype(dtype).itemsize < 8:
        return max(_SUM_TOL, num_bins * float(np.finfo(dtype).eps))
    return _SUM_TOL


def _check_histograms(histograms: Any, grid: GridSpec, *, normalize: bool) -> np.ndarray:
    """Validate ``(M, *shape)`` histograms; return them as an ``(M, N)`` float64 array."""
    try:
        sum_tol = _sum_tolerance(histograms, grid.num_points)
        h = np.asarray(histograms, dtype=float)
    except (TypeError, ValueError) as err:
        raise TypeError(f"histograms must be a numeric array, got {type(histograms)}") from err
    if h.ndim == grid.ndim and h.shape == grid.shape:
        raise ValueError(
            f"histograms must have shape (M, *grid.shape) = (M, {', '.join(map(str, grid.shape))})"
            f"; got a single histogram of shape {h.shape}: pass histograms[None] for M = 1"
        )
    if h.ndim != grid.ndim + 1 or h.shape[1:] != grid.shape:
        raise ValueError(
            f"histograms must have shape (M, *grid.shape) = (M, {', '.join(map(str, grid.shape))})"
            f", got {h.shape}"
        )
    if h.shape[0] == 0:
        raise ValueError("need at least one histogram (M >= 1), got M = 0")
    if not np.all(np.isfinite(h)):
        raise ValueError("histograms contain NaN or infinite entries")
    if np.any(h < 0):
        raise ValueError(f"histograms must be nonnegative; the smallest entry is {h.min():.3g}")
    h = h.reshape(h.shape[0], -1)  # (M, N)
    sums = h.sum(axis=1)
    if np.any(sums <= 0):
        raise ValueError("every histogram needs positive total mass")
    if normalize:
        h = h / sums[:, None]
    elif np.any(np.abs(sums - 1.0) > sum_tol):
        bad = int(np.argmax(np.abs(sums - 1.0)))
        raise ValueError(
            f"every histogram must sum to 1 within {sum_tol:g}; histogram {bad} sums to "
            f"{sums[bad]!r} (pass normalize=True to rescale)"
        )
    elif sum_tol > _SUM_TOL:  # a lower-precision input: renormalise in float64
        h = h / sums[:, None]
    return h


def _check_weights(weights: Any, num_inputs: int) -> np.ndarray:
    if weights is None:
        return np.full(num_inputs, 1.0 / num_inputs)
    w = check_array(weights, "weights", ndim=None)
    if w.shape != (num_inputs,):
        raise ValueError(f"weights must have shape (M,) = ({num_inputs},), got {w.shape}")
    return check_probability_vector(w, "weights", atol=_SUM_TOL)


def _check_solver(solver: str, tol: float, time_limit: float | None) -> None:
    check_choice(solver, "solver", SOLVERS)
    check_float(tol, "tol", min=0, max=1, min_inclusive=False, max_inclusive=False)
    if time_limit is not None:
        check_float(time_limit, "time_limit", min=0, min_inclusive=False, allow_inf=True)


# --------------------------------------------------------------------------- support


def _convex_cost(grid: GridSpec) -> bool:
    """Whether every ``phi_k`` is convex (``t^2``, or ``|t|^p`` with ``p >= 1``)."""
    return grid.cost == "sqeuclidean" or grid.p >= 1.0


def _support_box(mu: np.ndarray, grid: GridSpec, w: np.ndarray) -> tuple[tuple[int, int], ...]:
    """Index box holding the support of every optimal barycenter of ``mu`` (M, N).

    Glue the optimal plans of an optimal ``nu`` into a coupling of ``(x, y_1..y_M)``. If
    ``x`` did not minimise ``g_y(z) = sum_m w_m c(z, y_m)`` over the grid for a tuple
    ``y`` of that coupling, moving its mass to the minimiser would lower the objective,
    so every ``x`` in the support of an optimal ``nu`` is a grid minimiser of some
    ``g_y``, ``y_m`` in the support of ``mu_m``. ``g_y`` is separable, so axis by axis
    ``x_k`` minimises ``sum_m w_m phi_k(z - y_mk)`` over the axis's indices. For a convex
    ``phi_k`` these minimisers are nondecreasing in every ``y_mk`` (the sum has
    decreasing differences in ``(z, y)``; Topkis), so ``x_k`` lies between the smallest
    minimiser at ``y_mk = lo_mk`` and the largest at ``y_mk = hi_mk``, the ends of the
    support of ``mu_m``'s projection on axis ``k``. For a cost only increasing in
    ``|t|`` (``p < 1``) ``x_k`` lies in the hull ``[min_m lo_mk, max_m hi_mk]``.
    """
    box = []
    for k, (lo, hi) in enumerate(_projection_ranges(mu, grid)):
        low, high = _minimiser_ends(grid, k, w, lo, hi)
        box.append((int(low), int(high)))
    return tuple(box)


def _projection_ranges(mu: np.ndarray, grid: GridSpec) -> list[tuple[np.ndarray, np.ndarray]]:
    """Per axis ``k``, the first and last index (each shape (M,)) of ``mu_m``'s mass on it."""
    d = grid.ndim
    mu_nd = mu.reshape(mu.shape[0], *grid.shape)
    ranges = []
    for k in range(d):
        proj = mu_nd.sum(axis=tuple(a + 1 for a in range(d) if a != k)) > 0  # (M, n_k)
        ranges.append((proj.argmax(axis=1), grid.shape[k] - 1 - proj[:, ::-1].argmax(axis=1)))
    return ranges


def _minimiser_ends(
    grid: GridSpec, k: int, w: np.ndarray, lows: np.ndarray, highs: np.ndarray,
    m: int | None = None,
) -> tuple[Any, Any]:
    """Ends of the grid minimisers of ``g(z) = sum_l w_l phi_k(z - y_l)`` along axis ``k``.

    Returns the smallest minimiser with ``y = lows`` and the largest with ``y = highs``
    (each ``(M,)``): for a convex ``phi_k`` every minimiser for ``lows <= y <= highs``
    lies between them (the argmin is nondecreasing in ``y``). With ``m`` given, ``y_m``
    runs over every index ``a`` of the axis instead, and both ends come back as arrays of
    shape ``(n_k,)``, one per ``a``. For a non-convex ``phi_k`` (``p < 1``) the ends are
    those of the hull of the ``y``, which holds every minimiser of a cost increasing in
    ``|t|``.
    """
    n_k = grid.shape[k]
    a = np.arange(n_k)
    others = np.ones(len(w), dtype=bool)
    if m is not None:
        others[m] = False
    if not _convex_cost(grid):
        low = lows[others].min(initial=n_k)
        high = highs[others].max(initial=-1)
        return (low, high) if m is None else (np.minimum(a, low), np.maximum(a, high))
    z = np.arange(n_k)  # candidate indices
    own = 0.0 if m is None else w[m] * grid.axis_cost(z[None, :] - a[:, None], k)  # (n_k, n_k)
    ends = []
    for y, last in ((lows, False), (highs, True)):
        rest = (w[others, None] * grid.axis_cost(z[None, :] - y[others, None], k)).sum(axis=0)
        g = np.atleast_2d(own + rest[None, :])  # (1 or n_k, n_k)
        g_min = g.min(axis=1, keepdims=True)
        scale = np.maximum(np.abs(g_min), g.max(axis=1, keepdims=True) - g_min)
        # every near-minimiser is kept (rounding can only widen the range, never cut it)
        near = g <= g_min + 1e-9 * scale
        end = n_k - 1 - near[:, ::-1].argmax(axis=1) if last else near.argmax(axis=1)
        ends.append(end if m is not None else int(end[0]))
    return ends[0], ends[1]


def support_box(
    histograms: np.ndarray, grid: GridSpec, *, weights: np.ndarray | None = None,
    normalize: bool = False,
) -> tuple[tuple[int, int], ...]:
    """Per-axis index range that contains the support of every optimal barycenter.

    For the squared Euclidean cost the barycenter's support lies in the box spanned by
    the grid roundings of the weighted means ``sum_m w_m lo_mk`` and ``sum_m w_m hi_mk``,
    where ``[lo_mk, hi_mk]`` is the index range of ``mu_m``'s mass along axis ``k``;
    for any convex ``phi_k`` (``p >= 1``) the same holds with the grid minimisers of
    ``sum_m w_m phi_k(z - lo_mk)`` and ``sum_m w_m phi_k(z - hi_mk)``, and for ``p < 1``
    the box is the hull of the inputs' ranges. :func:`build_geto_lp` and
    :func:`build_full_lp` leave every barycenter variable outside it out of the model
    (``reduce_support=True``), which does not change the optimal value.

    Parameters
    ----------
    histograms : array_like, shape (M, n_1, ..., n_d)
        The inputs ``mu_m``, nonnegative, each summing to 1.
    grid : GridSpec
        Support and separable cost.
    weights : array_like, shape (M,), optional
        ``w_m``, uniform by default.
    normalize : bool
        Rescale histograms to sum 1 instead of raising.

    Returns
    -------
    tuple of (int, int)
        ``((lo_1, hi_1), ..., (lo_d, hi_d))``, inclusive index ranges.

    Examples
    --------
    >>> g = GridSpec((9,))
    >>> mu = np.zeros((2, 9)); mu[0, 0] = mu[1, 8] = 1.0
    >>> support_box(mu, g), support_box(mu, g, weights=[0.25, 0.75])
    (((4, 4),), ((6, 6),))
    """
    grid = _check_grid(grid)
    mu = _check_histograms(histograms, grid, normalize=check_bool(normalize, "normalize"))
    return _support_box(mu, grid, _check_weights(weights, mu.shape[0]))


def _axis_coords(grid: GridSpec) -> list[np.ndarray]:
    """Index of every node along every axis: ``d`` arrays of shape (N,)."""
    return list(np.unravel_index(np.arange(grid.num_points), grid.shape))


def _in_box(coords: list[np.ndarray], box: tuple[tuple[int, int], ...], axes: range) -> np.ndarray:
    """Whether each node's coordinates on ``axes`` lie in ``box`` (shape (N,))."""
    inside = np.ones(len(coords[0]), dtype=bool)
    for k in axes:
        inside &= (coords[k] >= box[k][0]) & (coords[k] <= box[k][1])
    return inside


def _reduced_box(
    mu: np.ndarray, grid: GridSpec, w: np.ndarray, fixed: np.ndarray | None,
) -> tuple[tuple[tuple[int, int], ...], list[np.ndarray], np.ndarray]:
    """The reduction's barycenter box, every node's coordinates and which nodes lie in it.

    The box is :func:`_support_box`'s, or with a fixed barycenter ``fixed`` (shape (N,))
    the bounding box of its support.
    """
    coords = _axis_coords(grid)
    if fixed is None:
        box = _support_box(mu, grid, w)
    else:
        on = fixed > 0
        box = tuple((int(c[on].min()), int(c[on].max())) for c in coords)
    return box, coords, _in_box(coords, box, range(grid.ndim))


def _alive_after_layer(
    mu: np.ndarray, grid: GridSpec, w: np.ndarray, m: int, k: int, coords: list[np.ndarray],
    box: tuple[tuple[int, int], ...] | None, ranges: list | None,
) -> np.ndarray:
    """Which nodes of input ``m``'s level ``k + 1`` an optimal layered flow can use, (N,).

    After layer ``k`` a unit of mass on its way from ``x`` to ``y`` (``y`` in the support
    of ``mu_m``) sits at the node with coordinates ``y_0..y_k`` and ``x_{k+1}..x_{d-1}``.
    So the prefix must be that of a point with mass, and every later coordinate ``j`` is
    one of ``x``'s: a grid minimiser of ``sum_l w_l phi_j(z - y_lj)`` (see
    :func:`_support_box`) in which ``y_mj`` ranges only over the points of ``mu_m`` with
    that prefix, which narrows the window prefix by prefix (``ranges``: the inputs'
    :func:`_projection_ranges`). With a fixed barycenter (``box`` given: the bounding box
    of its support) the window is that box.
    """
    d, shape = grid.ndim, grid.shape
    stride = _strides(shape)[k]
    on = (mu[m] > 0).reshape(math.prod(shape[: k + 1]), *shape[k + 1 :])  # (P, n_{k+1}, ...)
    prefix = np.flatnonzero(on.reshape(on.shape[0], -1).any(axis=1))
    node_prefix = np.arange(grid.num_points) // stride  # (N,) flat prefix of every node
    alive = np.zeros(on.shape[0], dtype=bool)
    alive[prefix] = True
    alive = alive[node_prefix]
    if box is not None:
        return alive & _in_box(coords, box, range(k + 1, d))
    for j in range(k + 1, d):
        axis = j - k  # axis j of the grid in ``on``
        proj = on.any(axis=tuple(a for a in range(1, d - k) if a != axis))  # (P, n_j)
        first = proj.argmax(axis=1)  # (P,) range of y_mj among the prefix's points
        last = shape[j] - 1 - proj[:, ::-1].argmax(axis=1)
        lows, highs = ranges[j]
        low, high = _minimiser_ends(grid, j, w, lows, highs, m=m)  # (n_j,) per y_mj
        alive &= (coords[j] >= low[first][node_prefix]) & (coords[j] <= high[last][node_prefix])
    return alive


def _drop_empty_rows(
    rows: list[np.ndarray], b_eq: np.ndarray,
) -> tuple[list[np.ndarray], np.ndarray]:
    """Renumber the rows to those holding a variable or a nonzero right-hand side.

    An empty row with ``b != 0`` is kept, so an infeasible model stays infeasible.
    """
    keep = b_eq != 0
    for r in rows:
        keep[r] = True
    new_index = np.cumsum(keep) - 1
    return [new_index[r] for r in rows], b_eq[keep]


# --------------------------------------------------------------------------- models


@dataclass(frozen=True, eq=False)
class LPModel:
    """An equality-form LP ``min c'x s.t. A_eq x = b_eq, lower <= x <= upper``.

    Attributes
    ----------
    c : ndarray, shape (num_variables,)
        Objective coefficients.
    A_eq : scipy.sparse.csc_matrix, shape (num_constraints, num_variables)
        Equality constraints.
    b_eq : ndarray, shape (num_constraints,)
        Right-hand sides.
    num_variables : int
        Number of columns.
    layout : dict
        Where the blocks live in ``x``: ``"formulation"`` (``"geto"`` or ``"full"``),
        ``"num_points"`` ``N``, ``"num_inputs"`` ``M``, ``"nu"`` (start, stop) of the
        barycenter, and ``"blocks"``: ``{(m, k): (start, stop)}`` for GETO layer flows
        (``k`` the axis) or ``{(m, 0): (start, stop)}`` for full-LP plans.
    bounds : ndarray or None, shape (num_variables, 2)
        Per-variable bounds; ``None`` means ``x >= 0``.
    """

    c: np.ndarray
    A_eq: sp.csc_matrix
    b_eq: np.ndarray
    num_variables: int
    layout: dict
    bounds: np.ndarray | None = None

    @property
    def num_constraints(self) -> int:
        """Number of equality rows."""
        return int(self.A_eq.shape[0])

    @property
    def nnz(self) -> int:
        """Nonzeros of ``A_eq``."""
        return int(self.A_eq.nnz)


@dataclass(frozen=True)
class LPSize:
    """Size of a barycenter LP, computed without building it.

    Attributes
    ----------
    num_variables, num_constraints, nnz : int
        Columns, equality rows and nonzeros of ``A_eq``.
    """

    num_variables: int
    num_constraints: int
    nnz: int


def lp_size(
    shape: tuple[int, ...], num_inputs: int, *, formulation: str = "geto",
    add_mass_constraint: bool = False,
) -> LPSize:
    """Count the variables, rows and nonzeros of the GETO or the full LP.

    GETO: ``N + M N sum_k n_k`` variables, ``M (d+1) N`` rows, ``2 M N sum_k n_k + M N``
    nonzeros. Full LP: ``N + M N^2`` variables, ``2 M N`` rows, ``2 M N^2 + M N`` nonzeros.

    Parameters
    ----------
    shape : tuple of int
        The grid ``(n_1, ..., n_d)``.
    num_inputs : int
        ``M``.
    formulation : {"geto", "full"}
        Which LP.
    add_mass_constraint : bool
        Count the optional ``sum(nu) = 1`` row.

    Returns
    -------
    LPSize

    Examples
    --------
    >>> lp_size((32, 32), 3).num_variables
    197632
    >>> lp_size((32, 32), 3, formulation="full").num_variables
    3146752
    """
    shape = GridSpec(tuple(shape)).shape
    num_inputs = check_int(num_inputs, "num_inputs", min=1)
    n, m, d = math.prod(shape), int(num_inputs), len(shape)
    extra = n if add_mass_constraint else 0
    if formulation == "geto":
        arcs = n * sum(shape)
        return LPSize(n + m * arcs, m * (d + 1) * n + bool(extra), 2 * m * arcs + m * n + extra)
    if formulation == "full":
        return LPSize(n + m * n * n, 2 * m * n + bool(extra), 2 * m * n * n + m * n + extra)
    raise ValueError(f"formulation must be 'geto' or 'full', got {formulation!r}")


def _assemble(
    rows: list[np.ndarray], cols: list[np.ndarray], vals: list[np.ndarray],
    shape: tuple[int, int],
) -> sp.csc_matrix:
    a = sp.coo_matrix(
        (np.concatenate(vals), (np.concatenate(rows), np.concatenate(cols))), shape=shape
    )
    return a.tocsc()


def build_geto_lp(
    histograms: np.ndarray, grid: GridSpec, *, weights: np.ndarray | None = None,
    normalize: bool = False, add_mass_constraint: bool = False,
    fixed_barycenter: np.ndarray | None = None, reduce_support: bool = True,
) -> LPModel:
    """Build the GETO-LP for the barycenter of ``M`` histograms on a grid.

    Variables are the barycenter ``nu`` (``N``) followed, for every input ``m`` and axis
    ``k``, by the layer flow ``f^{m,k}`` on the ``N n_k`` arcs that change coordinate
    ``k`` only. For every ``m`` the rows are the node balances of the layered network
    ``nu -> layer 1 -> ... -> layer d -> mu_m`` (out-flow ``-1``, in-flow ``+1``).

    Parameters
    ----------
    histograms : array_like, shape (M, n_1, ..., n_d)
        The inputs ``mu_1..mu_M``, each nonnegative and summing to 1.
    grid : GridSpec
        The common support and the separable cost.
    weights : array_like, shape (M,), optional
        Barycentric weights ``w_m`` (nonnegative, summing to 1); uniform by default.
    normalize : bool
        Rescale every histogram to sum 1 instead of raising.
    add_mass_constraint : bool
        Append the (redundant) row ``sum_x nu(x) = 1``.
    fixed_barycenter : array_like, shape (n_1, ..., n_d), optional
        Fix ``nu`` to this histogram (bounds ``lower = upper = nu``); the LP then computes
        ``sum_m w_m W_c(nu, mu_m)``.
    reduce_support : bool
        Leave out what no optimal solution uses (the optimal value is unchanged): the
        barycenter outside :func:`support_box` (outside the bounding box of a fixed
        ``nu``'s support), and every arc of layer ``k`` that starts or ends on a node no
        optimal path to ``mu_m`` visits. After layer ``k`` a path sits at a node whose
        coordinates ``0..k`` are those of a point of ``mu_m``'s support and whose later
        coordinates are the barycenter point's, inside a window computed from that prefix
        (:func:`support_box`'s argument with ``mu_m`` restricted to the prefix). Rows left
        without a variable are dropped. ``False`` builds the whole formulation.

    Returns
    -------
    LPModel
        ``N + M N sum_k n_k`` variables and ``M (d+1) N`` rows when ``reduce_support`` is
        False (a subset of them when it is True).

    References
    ----------
    Auricchio, Bassetti, Gualandi & Veneroni, "Computing Kantorovich-Wasserstein
    distances on d-dimensional histograms using (d+1)-partite graphs", NeurIPS 2018.

    Examples
    --------
    >>> g = GridSpec((4, 4))
    >>> mu = np.full((2, 4, 4), 1 / 16)
    >>> build_geto_lp(mu, g).num_variables == 16 + 2 * 16 * 8
    True
    """
    grid = _check_grid(grid)
    mu = _check_histograms(histograms, grid, normalize=normalize)  # (M, N)
    w = _check_weights(weights, mu.shape[0])  # (M,)
    reduce_support = check_bool(reduce_support, "reduce_support")
    num_inputs, n, d = mu.shape[0], grid.num_points, grid.ndim
    fixed = None if fixed_barycenter is None else _check_fixed(fixed_barycenter, grid)
    arcs = [_layer_arcs(grid, k) for k in range(d)]  # Eq. (2)
    nu_index = np.arange(n, dtype=np.int64)
    kept: dict[tuple[int, int], np.ndarray] = {}
    if reduce_support:
        box, coords, inside = _reduced_box(mu, grid, w, fixed)  # level 0: the barycenter
        nu_index = np.flatnonzero(inside)
        ranges = _projection_ranges(mu, grid) if fixed is None else None
        for m in range(num_inputs):
            alive = inside
            for k, (source, target, _) in enumerate(arcs):
                after = _alive_after_layer(mu, grid, w, m, k, coords,
                                           box if fixed is not None else None, ranges)
                kept[(m, k)] = np.flatnonzero(alive[source] & after[target])
                alive = after
    num_nu = len(nu_index)
    num_vars = num_nu + sum(
        len(kept[(m, k)]) if reduce_support else len(arcs[k][0])
        for m in range(num_inputs) for k in range(d)
    )
    rows_per_input = (d + 1) * n

    c = np.zeros(num_vars)
    rows: list[np.ndarray] = []
    cols: list[np.ndarray] = []
    vals: list[np.ndarray] = []
    blocks: dict[tuple[int, int], tuple[int, int]] = {}
    b_eq = np.zeros(num_inputs * rows_per_input + (1 if add_mass_constraint else 0))
    start = num_nu
    for m in range(num_inputs):
        base = m * rows_per_input
        # Eq. (3), block 0: nu(x) - sum_x' f^{m,1}(x, x') = 0
        rows.append(base + nu_index)
        cols.append(np.arange(num_nu, dtype=np.int64))
        vals.append(np.ones(num_nu))
        for k, (source, target, cost) in enumerate(arcs):
            if reduce_support:
                idx = kept[(m, k)]
                source, target, cost = source[idx], target[idx], cost[idx]
            stop = start + len(source)
            var = np.arange(start, stop, dtype=np.int64)
            # Eq. (3), block k: in-flow of layer k - out-flow of layer k+1 = 0 at every node;
            # block d: in-flow of layer d = mu_m.
            rows.append(base + k * n + source)
            cols.append(var)
            vals.append(-np.ones(len(var)))
            rows.append(base + (k + 1) * n + target)
            cols.append(var)
            vals.append(np.ones(len(var)))
            c[start:stop] = w[m] * cost  # Eq. (4): w_m phi_k(x_k - x'_k)
            blocks[(m, k)] = (start, stop)
            start = stop
        b_eq[base + d * n : base + (d + 1) * n] = mu[m]
    if add_mass_constraint:
        rows.append(np.full(num_nu, num_inputs * rows_per_input, dtype=np.int64))
        cols.append(np.arange(num_nu, dtype=np.int64))
        vals.append(np.ones(num_nu))
        b_eq[-1] = 1.0
    if reduce_support:
        rows, b_eq = _drop_empty_rows(rows, b_eq)
    a_eq = _assemble(rows, cols, vals, (len(b_eq), num_vars))
    layout = {
        "formulation": "geto", "num_points": n, "num_inputs": num_inputs,
        "nu": (0, num_nu), "nu_index": nu_index, "blocks": blocks,
        "arcs": kept if reduce_support else None,
    }
    return LPModel(c=c, A_eq=a_eq, b_eq=b_eq, num_variables=num_vars, layout=layout,
                   bounds=_fixed_bounds(fixed, nu_index, num_vars))


def _check_fixed(fixed: Any, grid: GridSpec) -> np.ndarray:
    """A fixed barycenter as an (N,) float64 histogram."""
    return _check_histograms(np.asarray(fixed)[None], grid, normalize=False)[0]


def _fixed_bounds(
    nu: np.ndarray | None, nu_index: np.ndarray, num_vars: int,
) -> np.ndarray | None:
    """Bounds fixing the barycenter variables (``nu`` at ``nu_index``) to ``nu``."""
    if nu is None:
        return None
    bounds = np.zeros((num_vars, 2))
    bounds[:, 1] = np.inf
    bounds[: len(nu_index), 0] = nu[nu_index]
    bounds[: len(nu_index), 1] = nu[nu_index]
    return bounds


def build_full_lp(
    histograms: np.ndarray, grid: GridSpec, *, weights: np.ndarray | None = None,
    normalize: bool = False, add_mass_constraint: bool = False,
    fixed_barycenter: np.ndarray | None = None, reduce_support: bool = True,
) -> LPModel:
    """Build the classical barycenter LP with one ``N x N`` plan per input.

    Variables are ``nu`` (``N``) and the plans ``pi_m`` (``N^2`` each, row-major
    ``x * N + y``); rows are ``nu(x) - sum_y pi_m(x, y) = 0`` and
    ``sum_x pi_m(x, y) = mu_m(y)``. This is the ``O(M N^2)`` baseline.

    Parameters
    ----------
    histograms : array_like, shape (M, n_1, ..., n_d)
        The inputs ``mu_m``.
    grid : GridSpec
        Support and cost; any cost accepted by :class:`GridSpec`.
    weights : array_like, shape (M,), optional
        Barycentric weights, uniform by default.
    normalize, add_mass_constraint, fixed_barycenter
        As in :func:`build_geto_lp`.
    reduce_support : bool
        The same reduction as :func:`build_geto_lp`'s, so that the two formulations are
        compared on equal terms: plans only from barycenter points in
        :func:`support_box` to points where ``mu_m`` has mass, and no empty rows.

    Returns
    -------
    LPModel
        ``N + M N^2`` variables and ``2 M N`` rows when ``reduce_support`` is False.

    Examples
    --------
    >>> g = GridSpec((3,))
    >>> build_full_lp(np.full((2, 3), 1 / 3), g).num_variables
    21
    """
    grid = _check_grid(grid)
    mu = _check_histograms(histograms, grid, normalize=normalize)  # (M, N)
    w = _check_weights(weights, mu.shape[0])
    reduce_support = check_bool(reduce_support, "reduce_support")
    num_inputs, n = mu.shape[0], grid.num_points
    fixed = None if fixed_barycenter is None else _check_fixed(fixed_barycenter, grid)
    cost_matrix = grid_cost_matrix(grid)  # (N, N)
    nodes = np.arange(n, dtype=np.int64)
    nu_index = nodes
    targets = [nodes] * num_inputs  # the columns y of each plan
    if reduce_support:
        nu_index = np.flatnonzero(_reduced_box(mu, grid, w, fixed)[2])
        targets = [np.flatnonzero(mu[m] > 0) for m in range(num_inputs)]
    num_nu = len(nu_index)
    num_vars = num_nu + num_nu * sum(len(t) for t in targets)
    c = np.zeros(num_vars)
    rows, cols, vals = [], [], []
    blocks, pairs = {}, {}
    b_eq = np.zeros(2 * num_inputs * n + (1 if add_mass_constraint else 0))
    start = num_nu
    for m in range(num_inputs):
        ys = targets[m]
        stop = start + num_nu * len(ys)
        var = np.arange(start, stop, dtype=np.int64)  # pi_m(x, y), x-major
        base = 2 * m * n
        rows += [base + nu_index, base + np.repeat(nu_index, len(ys)),
                 base + n + np.tile(ys, num_nu)]
        cols += [np.arange(num_nu, dtype=np.int64), var, var]
        vals += [np.ones(num_nu), -np.ones(len(var)), np.ones(len(var))]
        c[start:stop] = w[m] * cost_matrix[np.ix_(nu_index, ys)].ravel()
        b_eq[base + n : base + 2 * n] = mu[m]
        blocks[(m, 0)] = (start, stop)
        pairs[(m, 0)] = (nu_index, ys)
        start = stop
    if add_mass_constraint:
        rows.append(np.full(num_nu, 2 * num_inputs * n, dtype=np.int64))
        cols.append(np.arange(num_nu, dtype=np.int64))
        vals.append(np.ones(num_nu))
        b_eq[-1] = 1.0
    if reduce_support:
        rows, b_eq = _drop_empty_rows(rows, b_eq)
    a_eq = _assemble(rows, cols, vals, (len(b_eq), num_vars))
    layout = {
        "formulation": "full", "num_points": n, "num_inputs": num_inputs,
        "nu": (0, num_nu), "nu_index": nu_index, "blocks": blocks, "pairs": pairs,
    }
    return LPModel(c=c, A_eq=a_eq, b_eq=b_eq, num_variables=num_vars, layout=layout,
                   bounds=_fixed_bounds(fixed, nu_index, num_vars))


# --------------------------------------------------------------------------- solving

_STATUS = {0: "optimal", 1: "iteration_or_time_limit", 2: "infeasible", 3: "unbounded",
           4: "numerical_difficulties"}


def resolve_solver(solver: str, num_variables: int) -> str:
    """The HiGHS method that ``solver`` means for a model of ``num_variables`` variables.

    ``"auto"`` is ``"highs-ipm"`` (interior point with crossover, a vertex solution) from
    ``IPM_MIN_VARIABLES`` variables on and ``"highs-ds"`` (dual simplex) below; the
    other choices are returned unchanged.

    Parameters
    ----------
    solver : {"auto", "highs", "highs-ds", "highs-ipm"}
        The requested method.
    num_variables : int
        Variables of the LP, at least 0.

    Returns
    -------
    str
        A :func:`scipy.optimize.linprog` ``method``.

    Examples
    --------
    >>> resolve_solver("auto", 1_000), resolve_solver("auto", 10**6)
    ('highs-ds', 'highs-ipm')
    """
    check_choice(solver, "solver", SOLVERS)
    check_int(num_variables, "num_variables", min=0)
    if solver != "auto":
        return solver
    return "highs-ipm" if num_variables >= IPM_MIN_VARIABLES else "highs-ds"


#: Whether the tiny-mass warning of :func:`_solve` has been shown in this process.
_TINY_WARNED = False


def _solve(model: LPModel, *, solver: str, tol: float, time_limit: float | None) -> Any:
    global _TINY_WARNED
    tiny = (model.b_eq > 0) & (model.b_eq < 10 * tol)
    if np.any(tiny) and not _TINY_WARNED:
        _TINY_WARNED = True  # once per process, not on every solve of a sweep
        warnings.warn(
            f"{int(tiny.sum())} histogram masses lie in (0, 10 tol) = (0, {10 * tol:g}): HiGHS "
            "may leave masses below its feasibility tolerance unmatched, so marginals are "
            "only exact to tol; zero out or quantise such masses, or lower tol",
            UserWarning, stacklevel=4,
        )
    solver = resolve_solver(solver, model.num_variables)
    options: dict[str, Any] = {
        "primal_feasibility_tolerance": tol,
        "dual_feasibility_tolerance": tol,
    }
    if solver == "highs-ipm":
        options["ipm_optimality_tolerance"] = max(tol, 1e-12)
    if time_limit is not None:
        options["time_limit"] = float(time_limit)
    bounds = (0, None) if model.bounds is None else model.bounds
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", category=RuntimeWarning)
        res = linprog(model.c, A_eq=model.A_eq, b_eq=model.b_eq, bounds=bounds,
                      method=solver, options=options)
        if res.status == 2:
            # A barycenter (or transport) LP between histograms of equal mass is always
            # feasible, so "infeasible" is numerical: HiGHS's presolve reports it when
            # masses lie far below its feasibility tolerance (untruncated Gaussian tails).
            # The solve without presolve does not.
            res = linprog(model.c, A_eq=model.A_eq, b_eq=model.b_eq, bounds=bounds,
                          method=solver, options=options | {"presolve": False})
    return res


@dataclass(frozen=True, eq=False)
class BarycenterResult:
    """The solution of a barycenter LP (GETO or full).

    Attributes
    ----------
    barycenter : ndarray, shape (n_1, ..., n_d)
        ``nu``; all NaN when the solve did not finish (``status != "optimal"``).
    objective : float
        ``sum_m w_m <C, pi_m>`` at the solution (NaN if not optimal).
    status : str
        ``"optimal"`` or the HiGHS failure (``"iteration_or_time_limit"``, ...).
    formulation : str
        ``"geto"`` or ``"full"``.
    num_variables, num_constraints, nnz : int
        Model size.
    build_seconds, solve_seconds : float
        Wall-clock time to assemble the model and inside HiGHS (via linprog).
    grid : GridSpec
        The grid.
    weights : ndarray, shape (M,)
        The barycentric weights.
    solver : str
        The HiGHS method that solved it (``"auto"`` resolved, see :func:`resolve_solver`).
    dual_bound : float
        A certified lower bound on the LP's optimal value, from HiGHS's row duals ``y``
        (see :func:`dual_certificate`); NaN if not optimal. ``objective - dual_bound``
        bounds how far the returned solution's value is from the optimum.
    primal_residual : float
        ``max |A_eq x - b_eq|`` at the returned solution (NaN if not optimal).
    """

    barycenter: np.ndarray
    objective: float
    status: str
    formulation: str
    num_variables: int
    num_constraints: int
    nnz: int
    build_seconds: float
    solve_seconds: float
    grid: GridSpec
    weights: np.ndarray
    solver: str = ""
    dual_bound: float = float("nan")
    primal_residual: float = float("nan")
    _x: np.ndarray | None = field(default=None, repr=False)
    _layout: dict = field(default_factory=dict, repr=False)

    @property
    def optimal(self) -> bool:
        """Whether HiGHS reported an optimal solution."""
        return self.status == "optimal"

    @property
    def num_inputs(self) -> int:
        """``M``."""
        return len(self.weights)

    @property
    def optimality_gap(self) -> float:
        """Certified relative gap ``(objective - dual_bound) / max(|objective|, 1e-12)``.

        At most ``1e-9`` means the objective is within ``1e-9`` (relative) of the true
        optimum of the LP (up to ``primal_residual``), whatever method produced it.
        """
        return (self.objective - self.dual_bound) / max(abs(self.objective), 1e-12)

    def _need_solution(self, m: int) -> None:
        if not self.optimal or self._x is None:
            raise SolverError(f"no optimal solution (status {self.status!r}): no plans")
        if not (0 <= m < self.num_inputs):
            raise IndexError(f"input index m must be in [0, {self.num_inputs}), got {m}")

    def plan(self, m: int) -> sp.csr_matrix:
        """The optimal transport plan ``pi_m`` from ``nu`` to input ``m``.

        For GETO it is composed from the layers (Eq. (5)): with ``F_k`` layer ``k``'s
        flow as an ``N x N`` sparse matrix and ``P_k`` its row-normalised version,
        ``pi_m = diag(nu) P_1 P_2 ... P_d``; rows of zero mass stay zero.

        Parameters
        ----------
        m : int
            The input index, ``0 <= m < M``.

        Returns
        -------
        scipy.sparse.csr_matrix, shape (N, N)
            Rows sum to ``nu``, columns to ``mu_m`` (within the solver tolerance).
        """
        self._need_solution(m)
        n = self.grid.num_points
        x, layout = self._x, self._layout
        if layout["formulation"] == "full":
            start, stop = layout["blocks"][(m, 0)]
            xs, ys = layout["pairs"][(m, 0)]
            pi = np.clip(x[start:stop], 0.0, None)
            rows, cols = np.repeat(xs, len(ys)), np.tile(ys, len(xs))
            keep = pi > 0
            return sp.csr_matrix((pi[keep], (rows[keep], cols[keep])), shape=(n, n))
        nu = _barycenter_vector(x, layout)  # (N,)
        pi = sp.diags(nu, format="csr")
        for k in range(self.grid.ndim):
            source, target, _ = _layer_arcs(self.grid, k)
            if layout["arcs"] is not None:
                idx = layout["arcs"][(m, k)]
                source, target = source[idx], target[idx]
            start, stop = layout["blocks"][(m, k)]
            f = np.clip(x[start:stop], 0.0, None)
            keep = f > 0
            flow = sp.csr_matrix((f[keep], (source[keep], target[keep])), shape=(n, n))
            eta = np.asarray(flow.sum(axis=1)).ravel()  # (N,) mass entering layer k
            inv = np.divide(1.0, eta, out=np.zeros_like(eta), where=eta > 0)
            pi = pi @ (sp.diags(inv, format="csr") @ flow)  # Eq. (5)
        pi.eliminate_zeros()
        return pi.tocsr()

    def plan_cost(self, m: int) -> float:
        """``<C, pi_m>``, the (unweighted) transport cost of :meth:`plan`."""
        pi = self.plan(m).tocoo()
        idx_r = np.unravel_index(pi.row, self.grid.shape)
        idx_c = np.unravel_index(pi.col, self.grid.shape)
        cost = sum(self.grid.axis_cost(idx_r[k] - idx_c[k], k) for k in range(self.grid.ndim))
        return float(np.dot(pi.data, cost))


def dual_certificate(
    model: LPModel, x: np.ndarray, y: np.ndarray,
) -> tuple[float, float]:
    """A certified lower bound on a barycenter LP's optimum from any row duals ``y``.

    With reduced costs ``r = c - A_eq' y``, every feasible ``x`` has
    ``c'x = b_eq'y + r'x``. The variables of a barycenter LP come in groups of known
    total mass: the barycenter ``nu`` and every layer flow ``f^{m,k}`` (GETO) or plan
    ``pi_m`` (full LP) sum to 1, all nonnegative. So ``r'x >= sum_g min(0, min_{j in g}
    r_j)``, and ``L = b_eq'y + sum_g min(0, min_g r)`` is a lower bound on the optimum
    for ANY ``y`` (weak duality with the implied bounds; a fixed ``nu`` contributes
    ``r_nu' nu`` exactly). It costs one sparse product, and ``objective - L`` certifies
    how close a solution is to optimal, with or without a vertex (crossover).

    Parameters
    ----------
    model : LPModel
        The LP, as built by :func:`build_geto_lp` or :func:`build_full_lp`.
    x : ndarray, shape (num_variables,)
        A solution (only used for the primal residual).
    y : ndarray, shape (num_constraints,)
        Row duals (e.g. HiGHS's), any values.

    Returns
    -------
    dual_bound : float
        ``L`` above.
    primal_residual : float
        ``max |A_eq x - b_eq|``.

    Examples
    --------
    >>> g = GridSpec((3,))
    >>> mu = np.array([[1.0, 0, 0], [0, 0, 1.0]])
    >>> model = build_geto_lp(mu, g)
    >>> res = geto_barycenter(mu, g)
    >>> bound, _ = dual_certificate(model, res._x, np.zeros(model.num_constraints))
    >>> bound <= res.objective  # y = 0 gives the trivial bound min(0, min c) = 0
    True
    """
    if not isinstance(model, LPModel):
        raise TypeError(f"model must be an LPModel, got {type(model).__name__}")
    x = check_array(x, "x", shape=(model.num_variables,))
    y = check_array(y, "y", shape=(model.num_constraints,))
    r = model.c - model.A_eq.T @ y  # (num_variables,) reduced costs
    lo, hi = model.layout["nu"]
    bound = float(model.b_eq @ y)
    if model.bounds is not None:  # fixed barycenter: its variables are known exactly
        bound += float(r[lo:hi] @ model.bounds[lo:hi, 0])
    else:
        bound += min(0.0, float(r[lo:hi].min()))
    for start, stop in model.layout["blocks"].values():  # each group sums to 1
        bound += min(0.0, float(r[start:stop].min()))
    residual = float(np.abs(model.A_eq @ x - model.b_eq).max()) if model.num_constraints else 0.0
    return bound, residual


def _barycenter_vector(x: np.ndarray, layout: dict) -> np.ndarray:
    """``nu`` on all ``N`` grid points (zero where the model has no variable), clipped >= 0."""
    lo, hi = layout["nu"]
    nu = np.zeros(layout["num_points"])
    nu[layout["nu_index"]] = np.clip(x[lo:hi], 0.0, None)
    return nu


def _status_name(res: Any) -> str:
    return _STATUS.get(int(res.status), f"status_{res.status}")


def _finish(
    model: LPModel, grid: GridSpec, weights: np.ndarray, res: Any, *, build_seconds: float,
    solve_seconds: float, allow_incomplete: bool, solver: str,
) -> BarycenterResult:
    status = _status_name(res)
    if status != "optimal" and not allow_incomplete:
        raise SolverError(
            f"HiGHS did not solve the {model.layout['formulation']} LP: {status} "
            f"({res.message}); pass allow_incomplete=True to get the status back instead"
        )
    bound = residual = float("nan")
    if status == "optimal":
        x = np.asarray(res.x, dtype=float)
        nu = _barycenter_vector(x, model.layout).reshape(grid.shape)
        objective = float(model.c @ x)
        duals = getattr(getattr(res, "eqlin", None), "marginals", None)
        if duals is not None and len(duals) == model.num_constraints:
            bound, residual = dual_certificate(model, x, np.asarray(duals, dtype=float))
    else:
        x, nu, objective = None, np.full(grid.shape, np.nan), float("nan")
    return BarycenterResult(
        barycenter=nu, objective=objective, status=status,
        formulation=model.layout["formulation"], num_variables=model.num_variables,
        num_constraints=model.num_constraints, nnz=model.nnz, build_seconds=build_seconds,
        solve_seconds=solve_seconds, grid=grid, weights=weights,
        solver=resolve_solver(solver, model.num_variables), dual_bound=bound,
        primal_residual=residual, _x=x, _layout=model.layout,
    )


def _barycenter(
    builder: Any, histograms: Any, grid: GridSpec, *, weights: Any, normalize: bool,
    solver: str, tol: float, time_limit: float | None, allow_incomplete: bool,
    add_mass_constraint: bool, reduce_support: bool,
) -> BarycenterResult:
    _check_solver(solver, tol, time_limit)
    t0 = time.perf_counter()
    model = builder(histograms, grid, weights=weights, normalize=normalize,
                    add_mass_constraint=add_mass_constraint, reduce_support=reduce_support)
    t1 = time.perf_counter()
    res = _solve(model, solver=solver, tol=tol, time_limit=time_limit)
    t2 = time.perf_counter()
    w = _check_weights(weights, model.layout["num_inputs"])
    return _finish(model, grid, w, res, build_seconds=t1 - t0, solve_seconds=t2 - t1,
                   allow_incomplete=allow_incomplete, solver=solver)


def geto_barycenter(
    histograms: np.ndarray, grid: GridSpec, *, weights: np.ndarray | None = None,
    normalize: bool = False, solver: str = "auto", tol: float = 1e-9,
    time_limit: float | None = None, allow_incomplete: bool = False,
    add_mass_constraint: bool = False, reduce_support: bool = True,
) -> BarycenterResult:
    """Exact fixed-support Wasserstein barycenter on a grid via the GETO-LP.

    Solves ``min_nu sum_m w_m W_c(nu, mu_m)`` over histograms ``nu`` on the grid, with
    ``O(d M N^(1+1/d))`` variables; the optimal plans come from :meth:`BarycenterResult.plan`.

    Parameters
    ----------
    histograms : array_like, shape (M, n_1, ..., n_d)
        The inputs ``mu_m``, nonnegative, each summing to 1.
    grid : GridSpec
        Support and separable cost ``c``.
    weights : array_like, shape (M,), optional
        ``w_m``, uniform by default.
    normalize : bool
        Rescale histograms to sum 1 instead of raising.
    solver : {"auto", "highs", "highs-ds", "highs-ipm"}
        The HiGHS method through :func:`scipy.optimize.linprog`. ``"auto"`` (default) is
        interior point with crossover (``"highs-ipm"``) from ``IPM_MIN_VARIABLES``
        variables on and dual simplex (``"highs-ds"``) below, see :func:`resolve_solver`;
        ``"highs"`` lets HiGHS choose. All return a vertex solution. Dual simplex honours
        ``time_limit`` closely; IPM's crossover can overrun it.
    tol : float
        HiGHS primal and dual feasibility tolerance.
    time_limit : float, optional
        Seconds for HiGHS.
    allow_incomplete : bool
        Return a result with a non-optimal ``status`` (and a NaN barycenter) instead of
        raising :class:`SolverError`.
    add_mass_constraint : bool
        Add the redundant row ``sum(nu) = 1``.
    reduce_support : bool
        Leave out of the LP the barycenter points outside :func:`support_box` and the
        arcs no optimal solution can use (exact: the optimal value is unchanged; see
        :func:`build_geto_lp`). ``False`` solves the whole formulation.

    Returns
    -------
    BarycenterResult

    Raises
    ------
    SolverError
        If HiGHS stops without an optimal solution and ``allow_incomplete`` is False.

    References
    ----------
    GETO-LP, NeurIPS 2026 (seed paragraph); Auricchio et al., NeurIPS 2018;
    Anderes, Borgwardt & Miller, "Discrete Wasserstein barycenters", 2016.

    Examples
    --------
    >>> g = GridSpec((5,))
    >>> mu = np.zeros((2, 5)); mu[0, 0] = mu[1, 4] = 1.0
    >>> res = geto_barycenter(mu, g)
    >>> float(res.barycenter[2]), round(res.objective, 9)
    (1.0, 4.0)
    """
    return _barycenter(build_geto_lp, histograms, grid, weights=weights, normalize=normalize,
                       solver=solver, tol=tol, time_limit=time_limit,
                       allow_incomplete=allow_incomplete, add_mass_constraint=add_mass_constraint,
                       reduce_support=reduce_support)


def full_lp_barycenter(
    histograms: np.ndarray, grid: GridSpec, *, weights: np.ndarray | None = None,
    normalize: bool = False, solver: str = "auto", tol: float = 1e-9,
    time_limit: float | None = None, allow_incomplete: bool = False,
    add_mass_constraint: bool = False, reduce_support: bool = True,
) -> BarycenterResult:
    """The same barycenter by the classical ``O(M N^2)`` LP (the baseline).

    Parameters and returns are those of :func:`geto_barycenter`.

    Examples
    --------
    >>> g = GridSpec((5,))
    >>> mu = np.zeros((2, 5)); mu[0, 0] = mu[1, 4] = 1.0
    >>> round(full_lp_barycenter(mu, g).objective, 9)
    4.0
    """
    return _barycenter(build_full_lp, histograms, grid, weights=weights, normalize=normalize,
                       solver=solver, tol=tol, time_limit=time_limit,
                       allow_incomplete=allow_incomplete, add_mass_constraint=add_mass_constraint,
                       reduce_support=reduce_support)


@dataclass(frozen=True, eq=False)
class TransportResult:
    """An exact transport problem between two histograms solved by the layered flow.

    Attributes
    ----------
    cost : float
        ``W_c(source, target)``, e.g. ``W2^2`` for the squared Euclidean cost.
    plan : scipy.sparse.csr_matrix, shape (N, N)
        An optimal plan composed from the layers.
    status : str
        ``"optimal"``.
    num_variables : int
        ``N + N sum_k n_k``.
    """

    cost: float
    plan: sp.csr_matrix
    status: str
    num_variables: int


def _check_one_histogram(h: Any, name: str, grid: GridSpec) -> np.ndarray:
    """One histogram of the grid's shape, nonnegative, finite, summing to 1."""
    sum_tol = _sum_tolerance(h, grid.num_points)
    h = check_array(h, name, shape=grid.shape, min=0)
    total = float(h.sum())
    if abs(total - 1.0) > sum_tol:
        raise ValueError(f"{name} must sum to 1 within {sum_tol:g}, got a sum of {total!r}")
    return h / total if sum_tol > _SUM_TOL else h


def geto_distance(
    source: np.ndarray, target: np.ndarray, grid: GridSpec, *, solver: str = "auto",
    tol: float = 1e-9, time_limit: float | None = None,
) -> TransportResult:
    """Exact ``W_c(source, target)`` on a grid through the (d+1)-partite flow.

    It is GETO-LP with ``M = 1`` and the barycenter fixed to ``source``, i.e.
    Auricchio et al.'s model.

    Parameters
    ----------
    source, target : array_like, shape (n_1, ..., n_d)
        Histograms ``a`` and ``b`` summing to 1.
    grid : GridSpec
        Support and separable cost.
    solver, tol, time_limit
        As in :func:`geto_barycenter`.

    Returns
    -------
    TransportResult

    Refuses ``source`` or ``target`` that are ``None``, non-numeric, not of the grid's shape,
    negative, non-finite or not summing to 1, and a non-``GridSpec`` grid.

    Examples
    --------
    >>> g = GridSpec((2, 2))
    >>> a = np.array([[1.0, 0.0], [0.0, 0.0]]); b = np.array([[0.0, 0.0], [0.0, 1.0]])
    >>> round(geto_distance(a, b, g).cost, 9)
    2.0
    """
    grid = _check_grid(grid)
    _check_solver(solver, tol, time_limit)
    # None would mean "free barycenter" downstream; refuse it (and bad shapes) here, by name
    source = _check_one_histogram(source, "source", grid)
    target = _check_one_histogram(target, "target", grid)
    model = build_geto_lp(target[None], grid, fixed_barycenter=source)
    res = _solve(model, solver=solver, tol=tol, time_limit=time_limit)
    out = _finish(model, grid, np.ones(1), res, build_seconds=0.0, solve_seconds=0.0,
                  allow_incomplete=False, solver=solver)
    return TransportResult(cost=out.objective, plan=out.plan(0), status=out.status,
                           num_variables=model.num_variables)


class GETOBarycenter(BaseEstimator):
    """Estimator-style wrapper of :func:`geto_barycenter`.

    Parameters
    ----------
    grid : GridSpec
        Support and separable cost.
    weights : array_like, shape (M,), optional
        Barycentric weights, uniform by default.
    solver : {"auto", "highs", "highs-ds", "highs-ipm"}
        HiGHS method, as in :func:`geto_barycenter`.
    tol : float
        Feasibility tolerance.
    time_limit : float, optional
        Seconds for HiGHS.
    reduce_support : bool
        The exact support reduction of :func:`geto_barycenter` (default True).

    Attributes
    ----------
    barycenter_ : ndarray, shape (n_1, ..., n_d)
    objective_ : float
    result_ : BarycenterResult

    Examples
    --------
    >>> g = GridSpec((3, 3))
    >>> mu = np.zeros((2, 3, 3)); mu[0, 0, 0] = mu[1, 2, 2] = 1.0
    >>> est = GETOBarycenter(grid=g).fit(mu)
    >>> float(est.barycenter_[1, 1])
    1.0
    """

    def __init__(
        self, *, grid: GridSpec, weights: np.ndarray | None = None, solver: str = "auto",
        tol: float = 1e-9, time_limit: float | None = None, reduce_support: bool = True,
    ) -> None:
        self.grid = grid
        self.weights = weights
        self.solver = solver
        self.tol = tol
        self.time_limit = time_limit
        self.reduce_support = reduce_support

    def fit(self, histograms: np.ndarray) -> GETOBarycenter:
        """Compute the barycenter of ``histograms`` (shape ``(M, *grid.shape)``)."""
        self.result_ = geto_barycenter(histograms, self.grid, weights=self.weights,
                                       solver=self.solver, tol=self.tol,
                                       time_limit=self.time_limit,
                                       reduce_support=self.reduce_support)
        self.barycenter_ = self.result_.barycenter
        self.objective_ = self.result_.objective
        return self

    def plan(self, m: int) -> sp.csr_matrix:
        """The optimal plan from the barycenter to input ``m`` (after :meth:`fit`)."""
        if not hasattr(self, "result_"):
            raise RuntimeError("call fit(histograms) before plan()")
        return self.result_.plan(m)


def w2_to_inputs(
    barycenter: np.ndarray, histograms: np.ndarray, grid: GridSpec, *,
    normalize: bool = True,
) -> np.ndarray:
    """Exact ``W_c(nu, mu_m)`` for every input by POT's network simplex (``ot.emd2``).

    An independent evaluation of any barycenter (GETO, LP or entropic); with the default
    squared Euclidean cost this is ``W2^2``.

    Parameters
    ----------
    barycenter : array_like, shape (n_1, ..., n_d)
        ``nu`` (rescaled to sum 1 when ``normalize``: entropic solvers drift slightly).
    histograms : array_like, shape (M, n_1, ..., n_d)
        The inputs.
    grid : GridSpec
        Support and cost.
    normalize : bool
        Rescale ``nu`` and the inputs to sum 1 before evaluating.

    Returns
    -------
    ndarray, shape (M,)

    Examples
    --------
    >>> g = GridSpec((3,))
    >>> w2_to_inputs(np.array([1.0, 0, 0]), np.array([[0, 0, 1.0]]), g)
    array([4.])
    """
    import ot  # local: POT is only needed for this evaluation

    grid = _check_grid(grid)
    mu = _check_histograms(histograms, grid, normalize=normalize)
    nu = _check_histograms(np.asarray(barycenter)[None], grid,
                           normalize=normalize)[0]
    cost = grid_cost_matrix(grid)
    return np.array([float(ot.emd2(nu, mu[m], cost, numItermax=10_000_000))
                     for m in range(mu.shape[0])])
