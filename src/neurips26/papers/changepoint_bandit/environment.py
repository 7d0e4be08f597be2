"""Step functions, noisy query environments and synthetic instances.

A step function on ``[0, 1]`` with ``N`` change points ``x_1 < ... < x_N`` and ``N + 1``
levels ``v_0, ..., v_N`` is ``f(x) = v_k`` for ``x_k <= x < x_{k+1}`` (with ``x_0 = 0`` and
``x_{N+1} = 1``; ``f(1) = v_N``), so ``f`` is right-continuous and the ``k``-th jump is
``Delta_k = v_k - v_{k-1}``. A query at ``x`` returns ``f(x) + eps`` with ``eps``
sigma-sub-Gaussian noise (Gaussian in the simulator).

The procedures of this package talk to an environment through one method,
``sample(x, n)``: the *sums* of ``n[i]`` fresh noisy evaluations at ``x[i]`` (vectorised,
so a simulator can draw a whole round at once). :class:`QueryOracle` simulates Gaussian
noise exactly in distribution (a sum of ``n`` Gaussians is one Gaussian);
:class:`CallableOracle` wraps a user's ``query(x) -> float`` and calls it once per sample,
with a budget counter and checks on what it returns.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

import numpy as np

from neurips26.common.validation import (
    check_array,
    check_float,
    check_int,
    check_seed,
    check_size,
)

__all__ = [
    "LAYOUTS",
    "BudgetExhaustedError",
    "CallableOracle",
    "QueryEnvironment",
    "QueryOracle",
    "StepFunction",
    "as_environment",
    "make_step_function",
]

LAYOUTS = ("spread", "clustered")


class BudgetExhaustedError(RuntimeError):
    """Raised when more queries are requested than the budget ``max_queries`` allows.

    Attributes
    ----------
    result : object or None
        When raised by a localisation procedure, the partial
        :class:`~.localize.LocalizationResult` (``success=None``) at the time the budget
        ran out; ``None`` when raised by an environment.
    """

    def __init__(self, message: str, result: Any = None) -> None:
        super().__init__(message)
        self.result = result


def _check_budget(max_queries: Any) -> int | None:
    return None if max_queries is None else check_int(max_queries, "max_queries", min=1)


def _check_locations(x: Any) -> np.ndarray:
    return check_array(x, "x (query locations)", min_size=0, min=0.0, max=1.0)


@dataclass(frozen=True)
class StepFunction:
    """A piecewise-constant function on ``[0, 1]``.

    Parameters
    ----------
    change_points : array_like, shape (N,)
        ``x_1 < ... < x_N``, strictly increasing, inside the open interval ``(0, 1)``.
    levels : array_like, shape (N + 1,)
        ``v_0, ..., v_N``; consecutive levels must differ (every jump ``Delta_k`` is
        nonzero, else the change point is not identifiable).

    Examples
    --------
    >>> f = StepFunction([0.3, 0.7], [0.0, 1.0, 0.0])
    >>> f([0.1, 0.3, 0.5, 0.9]).tolist()
    [0.0, 1.0, 1.0, 0.0]
    >>> f.jumps.tolist()
    [1.0, -1.0]
    """

    change_points: np.ndarray
    levels: np.ndarray

    def __post_init__(self) -> None:
        try:
            x = np.array(self.change_points, dtype=float, copy=True).reshape(-1)
            v = np.array(self.levels, dtype=float, copy=True).reshape(-1)
        except (TypeError, ValueError) as err:
            raise TypeError("change_points and levels must be arrays of numbers") from err
        if x.size < 1:
            raise ValueError("a step function needs at least one change point (N >= 1)")
        if v.size != x.size + 1:
            raise ValueError(
                f"levels must have N + 1 = {x.size + 1} entries for N = {x.size} change "
                f"points, got {v.size}"
            )
        if not (np.all(np.isfinite(x)) and np.all(np.isfinite(v))):
            raise ValueError("change_points and levels must be finite (no NaN or inf)")
        if x.min() <= 0.0 or x.max() >= 1.0:
            raise ValueError(
                f"change points must lie strictly inside (0, 1), got range "
                f"[{x.min():g}, {x.max():g}]"
            )
        if np.any(np.diff(x) <= 0):
            raise ValueError(
                f"change points must be strictly increasing (sorted, no duplicates), got "
                f"{x.tolist()}"
            )
        if np.any(np.diff(v) == 0):
            k = int(np.flatnonzero(np.diff(v) == 0)[0])
            raise ValueError(
                f"jump {k + 1} is zero (levels[{k}] == levels[{k + 1}] == {v[k]:g}): that "
                "change point is not identifiable"
            )
        x.setflags(write=False)
        v.setflags(write=False)
        object.__setattr__(self, "change_points", x)
        object.__setattr__(self, "levels", v)

    @property
    def num_change_points(self) -> int:
        """``N``."""
        return int(self.change_points.size)

    @property
    def jumps(self) -> np.ndarray:
        """``Delta_k = v_k - v_{k-1}``, shape (N,)."""
        return np.diff(self.levels)

    @property
    def min_spacing(self) -> float:
        """Smallest distance between consecutive change points (``inf`` when ``N = 1``)."""
        if self.num_change_points < 2:
            return float("inf")
        return float(np.diff(self.change_points).min())

    def __call__(self, x: Any) -> np.ndarray:
        """``f(x)``, same shape as ``x``; ``x`` must lie in ``[0, 1]``."""
        x = _check_locations(x)
        idx = np.searchsorted(self.change_points, x, side="right")  # 0..N
        return self.levels[idx]

    def reflect(self) -> StepFunction:
        """The function ``x -> f(1 - x)`` (change points ``1 - x_k``, levels reversed)."""
        return StepFunction(1.0 - self.change_points[::-1], self.levels[::-1])

    def affine(self, *, scale: float = 1.0, shift: float = 0.0) -> StepFunction:
        """The function ``scale * f + shift`` (same change points)."""
        return StepFunction(self.change_points, scale * self.levels + shift)


@runtime_checkable
class QueryEnvironment(Protocol):
    """What the procedures need: ``num_queries`` and ``sample(x, n)`` (sums, shape (m,))."""

    @property
    def num_queries(self) -> int: ...

    def sample(self, x: np.ndarray, n: np.ndarray) -> np.ndarray: ...


class QueryOracle:
    """Simulator of noisy queries ``f(x) + sigma * Z`` with ``Z`` standard Gaussian.

    Parameters
    ----------
    f : StepFunction
        The unknown function.
    sigma : float, default 1.0
        Noise standard deviation (``sigma >= 0``; 0 gives exact evaluations).
    seed : int, default 0
        Seed of the noise stream (``numpy.random.default_rng``).
    max_queries : int or None, default None
        Budget; asking for more raises :class:`BudgetExhaustedError`.

    Notes
    -----
    ``sample(x, n)`` draws the sum of ``n`` Gaussian evaluations as one Gaussian
    ``n f(x) + sigma sqrt(n) Z``, which has exactly the same distribution and lets
    millions of queries be simulated in a few vectorised calls.

    Examples
    --------
    >>> f = StepFunction([0.5], [0.0, 1.0])
    >>> oracle = QueryOracle(f, sigma=0.0)
    >>> oracle.query([0.25, 0.75]).tolist(), oracle.num_queries
    ([0.0, 1.0], 2)
    """

    def __init__(
        self, f: StepFunction, *, sigma: float = 1.0, seed: int = 0, max_queries: int | None = None
    ) -> None:
        if not isinstance(f, StepFunction):
            raise TypeError(f"f must be a StepFunction, got {type(f).__name__}")
        if not (isinstance(sigma, (int, float, np.floating)) and np.isfinite(sigma)) or sigma < 0:
            raise ValueError(f"sigma must be a finite number >= 0, got {sigma!r}")
        self.f = f
        self.sigma = float(sigma)
        self.max_queries = _check_budget(max_queries)
        self._rng = np.random.default_rng(seed)
        self._num_queries = 0

    @property
    def num_queries(self) -> int:
        """Noisy evaluations drawn so far."""
        return self._num_queries

    def _charge(self, total: int) -> None:
        if self.max_queries is not None and self._num_queries + total > self.max_queries:
            raise BudgetExhaustedError(
                f"query budget exhausted: {self._num_queries} of max_queries="
                f"{self.max_queries} used, {total} more requested"
            )
        self._num_queries += total

    def query(self, x: Any) -> np.ndarray:
        """One noisy evaluation at each location of ``x`` (shape of ``x``)."""
        x = _check_locations(x)
        self._charge(int(x.size))
        return self.f(x) + self.sigma * self._rng.standard_normal(x.shape)

    def sample(self, x: Any, n: Any) -> np.ndarray:
        """Sums of ``n[i]`` fresh evaluations at ``x[i]``; shapes (m,) -> (m,)."""
        x = _check_locations(x).reshape(-1)
        n = np.asarray(n, dtype=np.int64).reshape(-1)
        if n.shape != x.shape:
            raise ValueError(f"x and n must have the same shape, got {x.shape} and {n.shape}")
        if np.any(n < 0):
            raise ValueError("sample counts n must be >= 0")
        self._charge(int(n.sum()))
        noise = self._rng.standard_normal(x.shape)  # (m,)
        return n * self.f(x) + self.sigma * np.sqrt(n) * noise

    __call__ = query


class CallableOracle:
    """Wrap a user's ``query(x) -> float`` as an environment with a budget counter.

    Parameters
    ----------
    query : callable
        ``query(x)`` returns one noisy evaluation of the unknown function at
        ``x in [0, 1]`` as a real number. Anything else (a string, ``None``, NaN, inf)
        raises an error naming the location.
    max_queries : int or None, default None
        Budget; asking for more raises :class:`BudgetExhaustedError`.

    Examples
    --------
    >>> import random
    >>> r = random.Random(0)
    >>> env = CallableOracle(lambda x: float(x > 0.4) + r.gauss(0.0, 0.1), max_queries=10)
    >>> (env.sample([0.2, 0.9], [2, 3]).round(0) + 0.0).tolist(), env.num_queries
    ([0.0, 3.0], 5)
    """

    def __init__(self, query: Callable[[float], float], *, max_queries: int | None = None):
        if not callable(query):
            raise TypeError(f"query must be callable as query(x) -> float, got {query!r}")
        self._query = query
        self.max_queries = _check_budget(max_queries)
        self._num_queries = 0

    @property
    def num_queries(self) -> int:
        """Evaluations made so far."""
        return self._num_queries

    def query(self, x: float) -> float:
        """One evaluation at ``x`` (checked to be a finite real number)."""
        x = float(_check_locations(x))
        if self.max_queries is not None and self._num_queries >= self.max_queries:
            raise BudgetExhaustedError(
                f"query budget exhausted: all max_queries={self.max_queries} queries used "
                f"(next requested location x={x:g})"
            )
        out = self._query(x)
        if isinstance(out, (bool, np.bool_)) or not isinstance(
            out, (int, float, np.integer, np.floating)
        ):
            raise TypeError(
                f"the environment returned {out!r} ({type(out).__name__}) for query({x:g}); "
                "query(x) must return a real number"
            )
        if not np.isfinite(out):
            raise ValueError(
                f"the environment returned {out!r} for query({x:g}); query(x) must return a "
                "finite number (no NaN or inf)"
            )
        self._num_queries += 1
        return float(out)

    def sample(self, x: Any, n: Any) -> np.ndarray:
        """Sums of ``n[i]`` evaluations at ``x[i]``, made one call at a time."""
        x = _check_locations(x).reshape(-1)
        n = np.asarray(n, dtype=np.int64).reshape(-1)
        if n.shape != x.shape:
            raise ValueError(f"x and n must have the same shape, got {x.shape} and {n.shape}")
        return np.array(
            [
                sum(self.query(float(xi)) for _ in range(int(ni)))
                for xi, ni in zip(x, n, strict=True)
            ],
            dtype=float,
        )

    __call__ = query


def as_environment(env: Any) -> QueryEnvironment:
    """Return ``env`` if it has ``sample`` and ``num_queries``; wrap a bare callable.

    Parameters
    ----------
    env : QueryEnvironment or callable
        An environment (:class:`QueryOracle`, :class:`CallableOracle` or your own with
        ``num_queries`` and ``sample(x, n)``), or a callable ``query(x) -> float``.
    """
    if isinstance(env, QueryEnvironment):
        return env
    if callable(env):
        return CallableOracle(env)
    raise TypeError(
        "env must be a QueryOracle/CallableOracle (with num_queries and sample(x, n)) or a "
        f"callable query(x) -> float, got {type(env).__name__}"
    )


#: Most change points :func:`make_step_function` draws.
MAX_CHANGE_POINTS = 10**6


def make_step_function(
    *,
    num_change_points: int = 3,
    jump: float = 1.0,
    min_spacing: float = 0.1,
    layout: str = "spread",
    eta: float | None = None,
    seed: int = 0,
) -> StepFunction:
    """A synthetic step function with equal-size jumps of alternating sign.

    Parameters
    ----------
    num_change_points : int, default 3
        ``N >= 1``, at most :data:`MAX_CHANGE_POINTS` (``10**6``).
    jump : float, default 1.0
        ``|Delta_k|``, the same for every change point. Signs alternate (a random first
        sign), so two close change points form a bump that cancels in coarse cells.
    min_spacing : float, default 0.1
        ``layout="clustered"`` only: the distance between the two clustered change points.
    layout : {"spread", "clustered"}
        ``"spread"``: change points near ``k / (N + 1)`` with a random jitter of at most
        ``0.1 / (N + 1)`` (spacing at least ``0.8 / (N + 1)``). ``"clustered"``: the spread
        layout of ``N - 1`` points with one of them (at random) split into a pair at
        distance ``min_spacing`` (needs ``N >= 2``).
    eta : float, optional
        Target precision; when given, ``min_spacing < 2 eta`` is rejected (two change
        points closer than ``2 eta`` cannot be told apart at precision ``eta``).
    seed : int, default 0
        Seed of the jitter, the split pair and the first sign.

    Returns
    -------
    StepFunction

    Examples
    --------
    >>> f = make_step_function(num_change_points=2, layout="clustered", min_spacing=0.01)
    >>> round(f.min_spacing, 6)
    0.01
    """
    if isinstance(num_change_points, bool) or not isinstance(num_change_points, (int, np.integer)):
        raise TypeError(f"num_change_points must be an integer, got {num_change_points!r}")
    if num_change_points < 1:
        raise ValueError(f"num_change_points must be >= 1, got {num_change_points}")
    check_size(
        num_change_points, "num_change_points", limit=MAX_CHANGE_POINTS, what="change points"
    )
    jump = check_float(jump, "jump", min=0, min_inclusive=False)
    seed = check_seed(seed, "seed")
    if layout not in LAYOUTS:
        raise ValueError(f"layout must be one of {LAYOUTS}, got {layout!r}")
    N = int(num_change_points)
    rng = np.random.default_rng(seed)
    if layout == "spread":
        base = np.arange(1, N + 1) / (N + 1)
        x = base + rng.uniform(-0.1, 0.1, size=N) / (N + 1)  # (N,)
    else:
        if N < 2:
            raise ValueError("layout='clustered' needs num_change_points >= 2")
        if not np.isfinite(min_spacing) or min_spacing <= 0:
            raise ValueError(f"min_spacing must be a finite number > 0, got {min_spacing!r}")
        if eta is not None and min_spacing < 2 * eta:
            raise ValueError(
                f"min_spacing={min_spacing:g} is below 2 * eta = {2 * eta:g}: change points "
                "that close cannot be separated at precision eta"
            )
        M = N - 1
        base = np.arange(1, M + 1) / (M + 1)
        centres = base + rng.uniform(-0.1, 0.1, size=M) / (M + 1)  # (N - 1,)
        if min_spacing >= 0.4 / (M + 1):
            raise ValueError(
                f"min_spacing={min_spacing:g} is too large for a clustered layout with N={N} "
                f"(must be < {0.4 / (M + 1):g})"
            )
        split = int(rng.integers(M))
        half = min_spacing / 2
        x = np.sort(
            np.concatenate(
                [np.delete(centres, split), [centres[split] - half, centres[split] + half]]
            )
        )
    sign = 1.0 if rng.random() < 0.5 else -1.0
    signs = sign * (-1.0) ** np.arange(N)  # alternating
    levels = np.concatenate([[0.0], np.cumsum(signs * jump)])  # (N + 1,)
    return StepFunction(x, levels)
