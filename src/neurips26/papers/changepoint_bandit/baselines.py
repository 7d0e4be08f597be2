"""Baselines: uniform sampling with offline detection, and a Track-and-Stop-style MCPI.

Both work on the grid ``g_i = i / K``, ``i = 0..K``, with ``K = ceil(1 / (2 eta))`` (cells
of width at most ``2 eta``, so a cell's midpoint is within ``eta`` of a change point inside
it), and return the same :class:`~.localize.LocalizationResult` as our method.

- :func:`uniform_ruptures`: every grid point is sampled in batches that grow by the
  factor ``growth`` (1.25, as our method's targets); after each batch the ``N`` change
  points are placed by exact least-squares segmentation of the grid means
  (:func:`offline_change_points`, which equals ``ruptures.Dynp(model="l2")``; the
  ``solver="ruptures"`` option calls ruptures itself). It stops when the segmentation is
  the same as after the previous batch and each chosen cell is certified by disjoint
  anytime intervals at its two grid points (level ``delta / (K + 1)`` per point, a union
  bound over the grid, so a stop is correct with probability at least ``1 - delta``).
- :func:`mcpi_track_and_stop`: a simplified version of MCPI (Lazzaro and Pike-Burke, ICML
  2025): Track-and-Stop on the grid arms. The current segmentation (weighted least squares
  on the arm means) names the two arms around each change point; they receive the
  sampling effort in proportion to ``1 / Delta_hat_k^2``, the rest is a decaying forced
  exploration of all arms (a share ``sqrt(K / t)``). It stops when the Gaussian GLR of the
  closest alternative (moving a change point by one arm: that arm's mean would have to
  equal the other level) exceeds ``beta(t, delta) = log(2 N (1 + log t) / delta)`` for
  every change point. With ``stopping="certified"`` it stops instead when each of the
  ``N`` cells it names passes the paired time-uniform certificate of :mod:`.bounds` at
  level ``delta / K`` (a union over the ``K`` cells of the grid, so whichever cells the
  segmentation names are covered): the same guarantee as our method, for comparisons at
  equal confidence.

Deviations: MCPI's optimal proportions solve a max-min problem over all alternatives; we
use the closed-form ``1 / Delta^2`` weights on boundary arms suggested by the spec, with the
grid of spacing ``2 eta`` (not ``eta``) shared with the uniform baseline. Its threshold is
the usual heuristic one, so its ``delta`` guarantee is not formal.
"""

from __future__ import annotations

import itertools
import math
from typing import Any

import numpy as np

from neurips26.common.validation import check_choice

from .bounds import paired_certified_different
from .localize import (
    LocalizationResult,
    _check_common,
    _check_on_budget,
    _grow,
    _out_of_budget,
    _OutOfBudget,
    _Sampler,
)
from .segment import offline_change_points

__all__ = ["mcpi_track_and_stop", "offline_change_points", "uniform_ruptures"]


def _grid(eta: float) -> np.ndarray:
    K = math.ceil(1.0 / (2.0 * eta))
    return np.arange(K + 1) / K  # (K + 1,)


def _result(S, N, est, lo, hi, success, method):
    return LocalizationResult(
        estimates=est,
        intervals=np.stack([lo, hi], axis=1),
        success=success,
        num_queries=S.used,
        detection_queries=S.phase["detection"],
        localization_queries=0,
        verification_queries=0,
        per_change=np.zeros(N, dtype=np.int64),
        certified_cells=np.stack([lo, hi], axis=1),
        detection_level=0,
        num_locations=S.num_locations,
        num_restarts=0,
        method=method,
    )


def _segment(means, N, solver, weights=None):
    if solver == "ruptures":
        import ruptures as rpt

        algo = rpt.Dynp(model="l2", min_size=1, jump=1).fit(means.reshape(-1, 1))
        return np.array(algo.predict(n_bkps=N)[:-1], dtype=np.int64)
    return offline_change_points(means, num_change_points=N, weights=weights)


def uniform_ruptures(
    env: Any,
    *,
    num_change_points: int,
    eta: float = 1e-3,
    delta: float = 0.05,
    sigma: float = 1.0,
    solver: str = "dp",
    growth: float = 1.25,
    max_queries: int | None = 10**7,
    on_budget: str = "raise",
) -> LocalizationResult:
    """Uniform sampling on the ``2 eta`` grid with offline least-squares segmentation.

    Parameters
    ----------
    env : QueryEnvironment or callable
        As in :func:`~.localize.localize_change_points`.
    num_change_points : int
        ``N``.
    eta, delta, sigma : float
        Precision, error level and noise parameter.
    solver : {"dp", "ruptures"}, default "dp"
        ``"dp"``: :func:`offline_change_points` (vectorised; identical segmentation to
        ruptures' ``Dynp`` with the ``l2`` cost, checked in the tests); ``"ruptures"``:
        ``ruptures.Dynp(model="l2", min_size=1, jump=1)`` (slow: ``O(K^3)``).
    growth : float in (1, 4], default 1.25
        Per-point sample target after each batch: ``max(n + 1, ceil(growth n))``, the
        schedule our method uses, so the stopping time overshoots by at most
        ``growth - 1`` (doubling batches would inflate the count by up to 2x).
    max_queries, on_budget
        As in :func:`~.localize.localize_change_points`.

    Returns
    -------
    LocalizationResult
        All queries count as ``detection_queries``.

    Examples
    --------
    >>> from neurips26.papers.changepoint_bandit import QueryOracle, StepFunction
    >>> f = StepFunction([0.3, 0.6], [0.0, 1.0, 0.0])
    >>> r = uniform_ruptures(QueryOracle(f), num_change_points=2, eta=0.02)
    >>> bool(r.success), bool(r.correct(f.change_points, 0.02))
    (True, True)
    """
    N, eta, delta, sigma, _, growth = _check_common(
        num_change_points, eta, delta, sigma, 0.5, growth, max_queries
    )
    _check_on_budget(on_budget)
    if solver not in ("dp", "ruptures"):
        raise ValueError(f"solver must be 'dp' or 'ruptures', got {solver!r}")
    grid = _grid(eta)
    K1 = grid.size
    if K1 - 1 < N:
        raise ValueError(f"eta={eta:g} gives a grid of {K1 - 1} cells, fewer than N={N}")
    S = _Sampler(env, max_queries)
    sums = np.zeros(K1)
    counts = np.zeros(K1, dtype=np.int64)
    prev = None
    n = 1
    nan = np.full(N, np.nan)
    try:
        while True:
            sums += S.sample(grid, np.full(K1, n) - counts, "detection")  # top up to n
            counts[:] = n
            bkps = _segment(sums / counts, N, solver)  # (N,)
            # paired certificate per adjacent pair (equal counts), union over the K pairs
            cert = paired_certified_different(
                sums[bkps - 1], sums[bkps], counts[bkps], delta=delta / (K1 - 1), sigma=sigma
            )
            if prev is not None and np.array_equal(bkps, prev) and cert.all():
                lo, hi = grid[bkps - 1], grid[bkps]
                return _result(S, N, (lo + hi) / 2, lo, hi, True, "uniform_ruptures")
            prev = bkps
            n = int(_grow(np.array([n]), growth)[0])
    except _OutOfBudget:
        return _out_of_budget(
            _result(S, N, nan, nan, nan, None, "uniform_ruptures"), max_queries, on_budget
        )


def mcpi_track_and_stop(
    env: Any,
    *,
    num_change_points: int,
    eta: float = 1e-3,
    delta: float = 0.05,
    sigma: float = 1.0,
    batch_fraction: float = 0.25,
    stopping: str = "glr",
    max_queries: int | None = 10**7,
    on_budget: str = "raise",
) -> LocalizationResult:
    """Track-and-Stop-style identification on the grid arms (simplified MCPI).

    Parameters
    ----------
    env : QueryEnvironment or callable
        As in :func:`~.localize.localize_change_points`.
    num_change_points : int
        ``N``.
    eta, delta, sigma : float
        Precision, error level and noise parameter.
    batch_fraction : float, default 0.25
        Each batch has ``max(K + 1, batch_fraction * t)`` queries (``t`` so far); the
        stopping rule is checked after each batch.
    stopping : {"glr", "certified"}, default "glr"
        ``"glr"``: MCPI's heuristic rule, the Gaussian GLR of each boundary arm against the
        other side's pooled level (treated as known) at least ``beta(t, delta) = log(2 N
        (1 + log t) / delta)``; its ``delta`` is nominal. ``"certified"``: each named cell
        ``(g_l, g_r]`` passes :func:`~.bounds.paired_certified_different` on the first
        ``m = min(n_l, n_r)`` observations of its two arms, paired in the order drawn, at
        level ``delta / K``. Every arm's observations are i.i.d. whatever the sampling
        rule, so these pairs are i.i.d. and the time-uniform sequence holds at the
        data-dependent stopping time; the union over the ``K`` cells covers any cells the
        segmentation names, and ``N`` disjoint cells each holding a change, with exactly
        ``N`` change points, hold one each: correct with probability at least
        ``1 - delta``. The sampling rule is the same; observations are drawn one by one.
    max_queries, on_budget
        As in :func:`~.localize.localize_change_points`.

    Returns
    -------
    LocalizationResult
        All queries count as ``detection_queries``.

    References
    ----------
    Lazzaro and Pike-Burke, "Fixed-confidence multiple change point identification under
    bandit feedback", ICML 2025. Garivier and Kaufmann, "Optimal best arm identification
    with fixed confidence", COLT 2016.

    Examples
    --------
    >>> from neurips26.papers.changepoint_bandit import QueryOracle, StepFunction
    >>> f = StepFunction([0.3, 0.6], [0.0, 1.0, 0.0])
    >>> r = mcpi_track_and_stop(QueryOracle(f), num_change_points=2, eta=0.02)
    >>> bool(r.success), bool(r.correct(f.change_points, 0.02))
    (True, True)
    """
    N, eta, delta, sigma, _, _ = _check_common(
        num_change_points, eta, delta, sigma, 0.5, 2.0, max_queries
    )
    _check_on_budget(on_budget)
    if not 0 < batch_fraction <= 1:
        raise ValueError(f"batch_fraction must lie in (0, 1], got {batch_fraction!r}")
    certified = check_choice(stopping, "stopping", ("glr", "certified")) == "certified"
    grid = _grid(eta)
    K1 = grid.size
    if K1 - 1 < N:
        raise ValueError(f"eta={eta:g} gives a grid of {K1 - 1} cells, fewer than N={N}")
    S = _Sampler(env, max_queries)
    sums = np.zeros(K1)
    counts = np.zeros(K1, dtype=np.int64)
    nan = np.full(N, np.nan)
    need = np.ones(K1, dtype=np.int64)  # initialisation: one query per arm
    obs: list[list[np.ndarray]] = [[] for _ in range(K1)]  # per-arm draws ("certified")
    method = "mcpi_certified" if certified else "mcpi"
    try:
        while True:
            if certified:  # one draw per query, kept per arm in the order drawn
                arms = np.repeat(np.arange(K1), need)  # (sum(need),), arm by arm
                y = S.sample(grid[arms], np.ones(arms.size, dtype=np.int64), "detection")
                for a, part in enumerate(np.split(y, np.cumsum(need)[:-1])):
                    if part.size:
                        obs[a].append(part)
                np.add.at(sums, arms, y)
            else:
                sums += S.sample(grid, need, "detection")
            counts += need
            t = int(counts.sum())
            means = sums / counts  # (K + 1,)
            bkps = _segment(means, N, "dp", weights=counts)  # (N,)
            edges = np.concatenate([[0], bkps, [K1]])
            levels = np.array(
                [sums[a:b].sum() / counts[a:b].sum() for a, b in itertools.pairwise(edges)]
            )  # (N + 1,) segment levels
            left, right = bkps - 1, bkps  # arms around each change point
            vL, vR = levels[:-1], levels[1:]
            if certified:
                stop = _pairs_certified(obs, left, right, counts, delta / (K1 - 1), sigma)
            else:
                # GLR of the closest alternative: the boundary arm takes the other level.
                zl = counts[left] * (means[left] - vR) ** 2 / (2 * sigma**2)
                zr = counts[right] * (means[right] - vL) ** 2 / (2 * sigma**2)
                side_ok = (np.abs(means[left] - vL) < np.abs(means[left] - vR)) & (
                    np.abs(means[right] - vR) < np.abs(means[right] - vL)
                )
                z = np.where(side_ok, np.minimum(zl, zr), 0.0)  # (N,)
                beta = math.log(2 * N * (1 + math.log(t)) / delta)
                stop = bool(np.all(z >= beta))
            if stop:
                lo, hi = grid[left], grid[right]
                return _result(S, N, (lo + hi) / 2, lo, hi, True, method)
            # Next batch: forced exploration share sqrt(K / t), the rest tracks 1/Delta^2.
            B = max(K1, int(batch_fraction * t))
            explore = min(0.5, math.sqrt(K1 / t))
            n_exp = round(explore * B)
            need = np.full(K1, n_exp // K1, dtype=np.int64)
            need[: n_exp % K1] += 1
            gap = np.maximum(np.abs(vR - vL), 1e-12)
            w = 1.0 / gap**2
            share = (B - n_exp) * w / w.sum() / 2  # (N,) per boundary arm
            np.add.at(need, left, np.ceil(share).astype(np.int64))
            np.add.at(need, right, np.ceil(share).astype(np.int64))
    except _OutOfBudget:
        return _out_of_budget(_result(S, N, nan, nan, nan, None, method), max_queries, on_budget)


def _pairs_certified(obs, left, right, counts, delta_cell, sigma) -> bool:
    """Paired certificate on the first ``min(n_l, n_r)`` draws of each cell's two arms."""
    m = np.minimum(counts[left], counts[right])  # (N,)
    s_l = np.array([np.concatenate(obs[a])[:k].sum() for a, k in zip(left, m, strict=True)])
    s_r = np.array([np.concatenate(obs[a])[:k].sum() for a, k in zip(right, m, strict=True)])
    return bool(np.all(paired_certified_different(s_l, s_r, m, delta=delta_cell, sigma=sigma)))
