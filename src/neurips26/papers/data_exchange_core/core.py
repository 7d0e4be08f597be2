"""Core stability of data exchanges: deviations, the core check, the theorem's construction
and the exchange dynamic.

A coalition ``S`` *blocks* an exchange ``alpha`` when it can pick an exchange among its own
members, cut every flow across its boundary, and leave each member strictly better off
(by more than ``eps``) whatever the outsiders then do among themselves. Every member's
share falls in every outsider's accuracy under both demand models, so the worst case is
that the outsiders pool all their data (each trains on ``M - m_S``); this lemma is
property-tested. The violation

    v(alpha) = max_S max_{alpha_S} min_{j in S} [u_j(alpha_S, worst) - u_j(alpha)]

is ``>= 0`` (the grand coalition can keep ``alpha``) and ``alpha`` is in the (eps-)core
iff ``v(alpha) <= eps``. Because shares sum to one, the grand coalition never blocks, so
only proper coalitions are searched.

The theorem made runnable. Let ``V(S)`` be the common share of ``S``'s members when they
pool fully and the outsiders pool fully (:func:`coalition_value`). Under winner-takes-all
demand, and under any demand with equal revenue sharing inside blocks, no deviation of
``S`` gives every member more than ``V(S)``, so the violation has the closed form

    v(alpha) = max(0, max_S [V(S) - max_{j in S} u_j(alpha)])          (*)

(:func:`pooling_violation`; for logit demand without revenue sharing (*) is only a lower
bound, since asymmetric internal exchanges can do better). The greedy partition that
repeatedly forms the remaining coalition of largest ``V`` and pools inside it gives each
member at least its block's ``V``, hence ``v = 0``: a core-stable exchange
(:func:`constructive_core`). This is the existence proof for claims (i) and (iii).

Deviations from the paper
-------------------------
- The abstract gives no formulas. Additive pooling ``d_j = m_j + sum_i alpha_ij m_i``, the
  worst-case outsider response (full pooling among outsiders, a lemma we test), blocking
  with strict gains for all members, and the greedy construction above are inferred.
- Utility is the market share itself (the paper allows any monotone transform; the core
  is unchanged by a common strictly increasing transform for winner-takes-all).
- Best deviations are searched over the box of reachable effective data (the canonical
  exchange ``alpha_ij = t_j`` reaches it all) with a grid, corner patterns, random points
  and bounded Nelder-Mead refinement (logit without revenue sharing only; elsewhere (*) is
  exact and the corners contain the optimum). A numerical search gives lower bounds on
  ``v``: emptiness of logit cores is certified only up to the searched exchanges.
- The exchange dynamic (first blocking coalition in order of size applies its best
  deviation) is our reading of the paper's "natural exchange dynamic".
- Revenue sharing: the outcome is a partition plus an exchange; a deviating coalition forms
  its own block and the rest of each old block stays together.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass

import numpy as np
from scipy.optimize import minimize
from sklearn.base import BaseEstimator

from neurips26.common.validation import check_float, check_int, check_size

from .market import (
    MAX_FIRMS,
    Market,
    _sharing_matrix,
    check_alpha,
    check_coalition,
    check_partition,
    coalition_value,
    coalitions,
    effective_data,
    sharing_partition,
    utilities,
)

__all__ = [
    "METHODS",
    "CoreCheck",
    "CoreConstruction",
    "CoreSearch",
    "DataExchangeGame",
    "Deviation",
    "DynamicResult",
    "apply_deviation",
    "best_deviation",
    "constructive_core",
    "core_violation",
    "exchange_dynamic",
    "find_core_exchange",
    "pooling_violation",
    "set_partitions",
]

#: Methods of :func:`find_core_exchange`.
METHODS = ("search", "dynamic", "constructive")


# --- helpers


#: Most partitions :func:`set_partitions` lists (B_10 = 115975, B_11 = 678570).
MAX_PARTITIONS = 200_000

#: Most candidate points one coalition's deviation search evaluates.
MAX_GRID_POINTS = 2_000_000


def _check_market(market) -> Market:
    if not isinstance(market, Market):
        raise TypeError(f"market must be a Market, got {type(market).__name__}")
    if market.num_firms > MAX_FIRMS:
        raise ValueError(
            f"n = {market.num_firms} firms: the coalition and grid searches cost 2^n grids; "
            f"at most {MAX_FIRMS} firms are supported"
        )
    return market


def _check_step(step: float, name: str = "grid_step") -> float:
    return check_float(step, name, min=0, max=1, min_inclusive=False)


def _resolve_partition(market: Market, alpha: np.ndarray, partition):
    n = market.num_firms
    if not market.revenue_sharing:
        if partition is not None:
            raise ValueError("partition applies only to markets with revenue_sharing=True")
        return None
    return sharing_partition(alpha, n) if partition is None else check_partition(partition, n)


def _scenario(market: Market, c: np.ndarray, t: np.ndarray):
    """Members' utilities when ``S = c`` deviates with fractions ``t`` and outsiders pool.

    ``t`` (P, k) in [0, 1]: member ``j`` trains on ``m_j + t_j (m_S - m_j)``, the data it
    gets from the canonical internal exchange ``alpha_ij = t_j``. Returns ``(U, D)``:
    utilities (P, k) and effective data (P, n).
    """
    m = market.sizes
    m_s = float(m[c].sum())
    d = np.full((t.shape[0], market.num_firms), market.total - m_s)  # (P, n) outsiders pooled
    d[:, c] = m[c] + t * (m_s - m[c])  # (P, k) members
    s = market.shares(d)  # (P, n)
    if market.revenue_sharing:  # the deviating block splits its revenue equally
        u = np.repeat(s[:, c].mean(axis=1, keepdims=True), len(c), axis=1)
    else:
        u = s[:, c]
    return u, d


def _grid(k: int, step: float) -> np.ndarray:
    pts = np.linspace(0.0, 1.0, round(1.0 / step) + 1)
    return np.array(list(itertools.product(pts, repeat=k)), dtype=float).reshape(-1, k)


def _canonical_alpha(t: np.ndarray) -> np.ndarray:
    """``alpha_ij = t_j`` for ``i != j``: the (k, k) exchange reaching
    ``d_j = m_j + t_j (m_S - m_j)``."""
    k = t.shape[0]
    a = np.tile(np.asarray(t, dtype=float), (k, 1))  # row i, column j -> t_j
    np.fill_diagonal(a, 0.0)
    return a


def _needs_refinement(market: Market) -> bool:
    # Winner-takes-all shares are piecewise constant and revenue-shared values are
    # maximised by full pooling (a corner): only plain logit needs local search.
    return market.demand == "logit" and not market.revenue_sharing


# --- deviations


@dataclass(frozen=True, eq=False)
class Deviation:
    """A coalition's best deviation found against an exchange.

    Attributes
    ----------
    coalition : tuple of int
        ``S`` (sorted firm ids), ``k = |S|``.
    gain : float
        ``max_{alpha_S} min_{j in S} [u_j(alpha_S, worst) - u_j(alpha)]`` (found); ``S``
        eps-blocks ``alpha`` iff ``gain > eps``.
    alpha_s : ndarray, shape (k, k)
        The internal exchange achieving it (canonical form ``alpha_ij = t_j``).
    fractions : ndarray, shape (k,)
        ``t``: member ``j`` receives the fraction ``t_j`` of every other member's data.
    effective_data : ndarray, shape (n,)
        ``d`` in the deviation scenario (outsiders pooled, at ``M - m_S``).
    utilities : ndarray, shape (k,)
        Members' utilities in the deviation.
    baseline : ndarray, shape (k,)
        Members' utilities under the current exchange.
    """

    coalition: tuple[int, ...]
    gain: float
    alpha_s: np.ndarray
    fractions: np.ndarray
    effective_data: np.ndarray
    utilities: np.ndarray
    baseline: np.ndarray


def best_deviation(
    market: Market,
    alpha,
    coalition,
    *,
    partition=None,
    grid_step: float = 0.25,
    num_restarts: int = 10,
    num_random: int = 64,
    seed: int = 0,
) -> Deviation:
    """Search coalition ``S``'s most profitable deviation from ``alpha``.

    Candidates: the status quo inside ``S``, every corner pattern (each member receives
    everything or nothing from the others, full pooling first), a grid of step
    ``grid_step`` over the fractions ``t in [0, 1]^k``, ``num_random`` uniform points; for
    logit demand without revenue sharing, bounded Nelder-Mead on a soft-min objective from
    the ``num_restarts`` best points. Grids are evaluated as ``(num_points, n)`` arrays.

    Parameters
    ----------
    market : Market
        The market.
    alpha : array_like, shape (n, n)
        The current exchange.
    coalition : sequence of int
        ``S``, non-empty firm ids.
    partition : sequence of sequences of int, optional
        Current revenue-sharing blocks (revenue-sharing markets only; default: the sharing
        graph's components).
    grid_step : float
        Grid spacing in ``(0, 1]``; a grid of more than ``MAX_GRID_POINTS`` points is refused.
    num_restarts : int
        Local refinements (logit only).
    num_random : int
        Extra uniform random candidates drawn from ``seed``.
    seed : int
        Seed of the random candidates.

    Returns
    -------
    Deviation

    References
    ----------
    Core with externalities, worst-case (alpha-core) outsider responses; see module notes.

    Examples
    --------
    >>> mk = Market([3.0, 2.0, 2.0], lambda d: 1 - d ** -0.5)
    >>> dev = best_deviation(mk, np.zeros((3, 3)), [1, 2])  # 2 + 2 > 3: the pair wins
    >>> round(dev.gain, 3), dev.fractions.tolist()
    (0.5, [1.0, 1.0])
    """
    market = _check_market(market)
    n = market.num_firms
    a = check_alpha(alpha, n)
    c_t = check_coalition(coalition, n)
    c = np.asarray(c_t)
    k = len(c_t)
    step = _check_step(grid_step)
    num_restarts = check_int(num_restarts, "num_restarts", min=0)
    num_random = check_int(num_random, "num_random", min=0)
    check_size(num_random, "num_random", limit=MAX_GRID_POINTS, what="random points")
    check_size((math.floor(1.0 / step) + 1) ** k, "grid_step", limit=MAX_GRID_POINTS,
               what=f"grid points for a {k}-firm coalition")
    blocks = _resolve_partition(market, a, partition)
    base = utilities(market, a, partition=blocks)[c]  # (k,)

    m = market.sizes
    m_s = float(m[c].sum())
    if k == 1:
        t_all = np.zeros((1, 1))
    else:
        inner = m[c] + a[np.ix_(c, c)].T @ m[c]  # (k,) status-quo data inside S
        t_sq = np.clip((inner - m[c]) / (m_s - m[c]), 0.0, 1.0)
        corners = _grid(k, 1.0)[::-1]  # full pooling (all ones) first
        rng = np.random.default_rng(seed)
        parts = [corners, t_sq[None, :], _grid(k, step), rng.random((int(num_random), k))]
        t_all = np.vstack(parts)  # (P, k)
    u_all, _ = _scenario(market, c, t_all)  # (P, k), (P, n)
    g_all = (u_all - base).min(axis=1)  # (P,) min gain over members
    best = int(np.argmax(g_all))
    best_t, best_g = t_all[best], float(g_all[best])

    if k > 1 and _needs_refinement(market) and num_restarts > 0:
        tau = 1e-4  # soft-min temperature (shares are O(1/n))

        def objective(x: np.ndarray) -> float:
            u, _ = _scenario(market, c, np.clip(x, 0.0, 1.0)[None, :])
            g = u[0] - base  # (k,)
            gmin = g.min()
            return -(gmin - tau * np.log(np.exp(-(g - gmin) / tau).sum()))

        order = np.argsort(-g_all, kind="stable")
        starts: list[np.ndarray] = []
        for i in order:
            if all(np.max(np.abs(t_all[i] - s)) > 1e-9 for s in starts):
                starts.append(t_all[i])
            if len(starts) >= num_restarts:
                break
        for x0 in starts:
            res = minimize(
                objective,
                x0,
                method="Nelder-Mead",
                bounds=[(0.0, 1.0)] * k,
                options={"xatol": 1e-7, "fatol": 1e-10, "maxfev": 150 * k},
            )
            x = np.clip(res.x, 0.0, 1.0)
            u, _ = _scenario(market, c, x[None, :])
            g = float((u[0] - base).min())
            if g > best_g:
                best_g, best_t = g, x

        def exact(x: np.ndarray) -> float:
            u, _ = _scenario(market, c, np.clip(x, 0.0, 1.0)[None, :])
            return -float((u[0] - base).min())

        # Polish the soft-min optimum on the exact max-min with a small simplex.
        for scale in (1e-2, 1e-3):
            simplex = np.vstack([best_t, best_t + scale * np.eye(k)])
            simplex = np.clip(simplex - scale * (simplex > 1 - scale), 0.0, 1.0)
            res = minimize(
                exact,
                best_t,
                method="Nelder-Mead",
                bounds=[(0.0, 1.0)] * k,
                options={
                    "xatol": 1e-9,
                    "fatol": 1e-12,
                    "maxfev": 150 * k,
                    "initial_simplex": simplex,
                },
            )
            if -res.fun > best_g:
                best_g, best_t = float(-res.fun), np.clip(res.x, 0.0, 1.0)
    u_best, d_best = _scenario(market, c, best_t[None, :])
    return Deviation(
        coalition=c_t,
        gain=best_g,
        alpha_s=_canonical_alpha(best_t) if k > 1 else np.zeros((1, 1)),
        fractions=np.asarray(best_t, dtype=float).copy(),
        effective_data=d_best[0],
        utilities=u_best[0],
        baseline=base,
    )


def apply_deviation(alpha, coalition, alpha_s) -> np.ndarray:
    """The exchange after ``S`` deviates: ``alpha_S`` inside, boundary flows cut.

    Parameters
    ----------
    alpha : array_like, shape (n, n)
        Current exchange.
    coalition : sequence of int
        ``S`` (sorted order matches ``alpha_s``).
    alpha_s : array_like, shape (k, k)
        ``S``'s internal exchange.

    Returns
    -------
    ndarray, shape (n, n)
        Outsiders keep their exchange among themselves.
    """
    a = np.asarray(alpha, dtype=float)
    n = a.shape[0]
    a = check_alpha(a, n).copy()
    c = np.asarray(check_coalition(coalition, n))
    inner = check_alpha(alpha_s, len(c))
    out = np.setdiff1d(np.arange(n), c)
    a[np.ix_(c, out)] = 0.0  # S gives nothing out
    a[np.ix_(out, c)] = 0.0  # and receives nothing from outside
    a[np.ix_(c, c)] = inner
    return a


# --- core check


@dataclass(frozen=True, eq=False)
class CoreCheck:
    """Result of :func:`core_violation`.

    Attributes
    ----------
    violation : float
        ``v(alpha) >= 0`` (found; a lower bound for logit demand without revenue sharing).
    eps : float
        The tolerance of the eps-core.
    stable : bool
        ``violation <= eps``: no coalition eps-blocks.
    blocking_coalition : tuple of int or None
        The coalition with the largest gain when ``not stable``.
    deviation : Deviation or None
        Its best deviation.
    coalitions : tuple of tuple of int
        The proper coalitions searched, by size.
    gains : ndarray, shape (num_coalitions,)
        Each coalition's best gain.
    """

    violation: float
    eps: float
    stable: bool
    blocking_coalition: tuple[int, ...] | None
    deviation: Deviation | None
    coalitions: tuple[tuple[int, ...], ...]
    gains: np.ndarray


def core_violation(
    market: Market,
    alpha,
    *,
    partition=None,
    eps: float = 0.0,
    grid_step: float = 0.25,
    num_restarts: int = 10,
    seed: int = 0,
) -> CoreCheck:
    """Core violation ``v(alpha)``: the best blocking gain over all proper coalitions.

    Parameters
    ----------
    market : Market
        The market.
    alpha : array_like, shape (n, n)
        The exchange to check.
    partition : sequence of sequences of int, optional
        Revenue-sharing blocks (revenue-sharing markets only).
    eps : float
        ``alpha`` is in the eps-core iff ``v(alpha) <= eps``; ``eps >= 0``.
    grid_step, num_restarts, seed
        Passed to :func:`best_deviation`.

    Returns
    -------
    CoreCheck

    Examples
    --------
    >>> mk = Market([3.0, 2.0, 2.0], lambda d: 1 - d ** -0.5)
    >>> core_violation(mk, np.zeros((3, 3))).blocking_coalition
    (1, 2)
    """
    market = _check_market(market)
    n = market.num_firms
    a = check_alpha(alpha, n)
    eps = float(eps)
    if not np.isfinite(eps) or eps < 0:
        raise ValueError(f"eps must be finite and >= 0, got {eps}")
    blocks = _resolve_partition(market, a, partition)
    coals = tuple(coalitions(n, include_grand=False))
    devs = [
        best_deviation(
            market,
            a,
            s,
            partition=blocks,
            grid_step=grid_step,
            num_restarts=num_restarts,
            seed=seed + i,
        )
        for i, s in enumerate(coals)
    ]
    gains = np.array([d.gain for d in devs])
    i = int(np.argmax(gains))
    v = max(0.0, float(gains[i]))  # the grand coalition can keep alpha: v >= 0
    stable = v <= eps
    return CoreCheck(
        violation=v,
        eps=eps,
        stable=bool(stable),
        blocking_coalition=None if stable else coals[i],
        deviation=None if stable else devs[i],
        coalitions=coals,
        gains=gains,
    )


def pooling_violation(market: Market, alpha, *, partition=None) -> float:
    """Closed-form violation ``max(0, max_S [V(S) - max_{j in S} u_j(alpha)])``.

    Exact for winner-takes-all demand and for revenue sharing (no deviation beats full
    internal pooling there); a lower bound on :func:`core_violation` for logit demand
    without revenue sharing.

    Parameters
    ----------
    market : Market
        The market.
    alpha : array_like, shape (n, n)
        The exchange.
    partition : sequence of sequences of int, optional
        Revenue-sharing blocks.

    Returns
    -------
    float
        ``v(alpha)`` by Eq. (*) of the module docstring.

    Examples
    --------
    >>> mk = Market([3.0, 2.0, 2.0], lambda d: 1 - d ** -0.5)
    >>> pooling_violation(mk, np.zeros((3, 3)))
    0.5
    """
    market = _check_market(market)
    n = market.num_firms
    a = check_alpha(alpha, n)
    u = utilities(market, a, partition=_resolve_partition(market, a, partition))
    gaps = [
        coalition_value(market, s) - float(u[list(s)].max())
        for s in coalitions(n, include_grand=False)
    ]
    return max(0.0, max(gaps))  # Eq. (*)


# --- theorem


@dataclass(frozen=True, eq=False)
class CoreConstruction:
    """The theorem's core-stable exchange (:func:`constructive_core`).

    Attributes
    ----------
    alpha : ndarray, shape (n, n)
        Full pooling inside each block, nothing across blocks.
    partition : tuple of tuple of int
        The blocks, in the order they were formed.
    values : ndarray, shape (num_blocks,)
        ``V(B)`` of each block when it was formed (non-increasing).
    guarantee : ndarray, shape (n,)
        Each firm's predicted lower bound on its utility: its block's ``V``.
    utilities : ndarray, shape (n,)
        The realised utilities (each ``>= guarantee``).
    """

    alpha: np.ndarray
    partition: tuple[tuple[int, ...], ...]
    values: np.ndarray
    guarantee: np.ndarray
    utilities: np.ndarray


def constructive_core(market: Market) -> CoreConstruction:
    """The existence proof as an algorithm: greedy blocks of largest guaranteed value.

    Repeatedly form, among the firms left, the coalition ``B`` of largest ``V(B)``
    (ties: smaller, then lexicographically first) and pool fully inside it. Each member
    of ``B`` then gets at least ``V(B) >= V(S)`` for every ``S`` of firms left at that
    point, so no coalition blocks when (*) is exact: winner-takes-all demand (claim i)
    and revenue sharing (claim iii). Under winner-takes-all the first block is a smallest
    coalition that wins against the pooled rest.

    Parameters
    ----------
    market : Market
        The market.

    Returns
    -------
    CoreConstruction

    Examples
    --------
    >>> mk = Market([3.0, 2.0, 2.0], lambda d: 1 - d ** -0.5)
    >>> constructive_core(mk).partition
    ((0, 1), (2,))
    """
    market = _check_market(market)
    n = market.num_firms
    left = list(range(n))
    blocks: list[tuple[int, ...]] = []
    values: list[float] = []
    while left:
        cands = [c for k in range(1, len(left) + 1) for c in itertools.combinations(left, k)]
        vals = np.array([coalition_value(market, c) for c in cands])
        i = int(np.argmax(vals))  # first maximum: smallest, then lexicographic
        blocks.append(tuple(cands[i]))
        values.append(float(vals[i]))
        left = [j for j in left if j not in cands[i]]
    alpha = np.zeros((n, n))
    guarantee = np.zeros(n)
    for b, v in zip(blocks, values, strict=True):
        idx = np.asarray(b)
        alpha[np.ix_(idx, idx)] = 1.0
        guarantee[idx] = v
    np.fill_diagonal(alpha, 0.0)
    part = tuple(blocks)
    u = utilities(market, alpha, partition=part if market.revenue_sharing else None)
    return CoreConstruction(
        alpha=alpha,
        partition=part,
        values=np.asarray(values),
        guarantee=guarantee,
        utilities=u,
    )


# --- dynamic


@dataclass(frozen=True, eq=False)
class DynamicResult:
    """Trajectory of :func:`exchange_dynamic`.

    Attributes
    ----------
    alpha : ndarray, shape (n, n)
        The final exchange.
    partition : tuple of tuple of int or None
        The final revenue-sharing blocks (None without revenue sharing).
    trajectory : ndarray, shape (rounds + 1, n, n)
        The exchange after each round (index 0: the start).
    violations : ndarray, shape (rounds + 1,)
        ``v(alpha)`` at each point of the trajectory.
    blocking : tuple of tuple of int
        The coalition that deviated in each round.
    converged : bool
        True when no coalition blocked the final exchange (within ``max_iter`` rounds).
    rounds : int
        Number of deviations applied.
    """

    alpha: np.ndarray
    partition: tuple[tuple[int, ...], ...] | None
    trajectory: np.ndarray
    violations: np.ndarray
    blocking: tuple[tuple[int, ...], ...]
    converged: bool
    rounds: int


def exchange_dynamic(
    market: Market,
    *,
    alpha0=None,
    max_iter: int = 200,
    eps: float = 0.0,
    tol: float = 1e-9,
    grid_step: float = 0.25,
    num_restarts: int = 10,
    seed: int = 0,
) -> DynamicResult:
    """The exchange dynamic: blocking coalitions deviate one at a time.

    Start at ``alpha0`` (default: no sharing, singleton blocks). In each round scan the
    proper coalitions by increasing size (lexicographic within a size); the first whose
    best gain exceeds ``eps + tol`` applies its best deviation (its internal exchange,
    boundary flows cut, everything else kept; under revenue sharing it becomes a block).
    Stop when none blocks or after ``max_iter`` rounds.

    Parameters
    ----------
    market : Market
        The market.
    alpha0 : array_like, shape (n, n), optional
        Starting exchange (default zeros).
    max_iter : int
        Maximum number of rounds.
    eps : float
        Blocking threshold (eps-core dynamic).
    tol : float
        Numerical slack: gains up to ``eps + tol`` do not count as blocking.
    grid_step, num_restarts, seed
        Passed to :func:`best_deviation`.

    Returns
    -------
    DynamicResult

    Examples
    --------
    >>> mk = Market([3.0, 2.0, 2.0], lambda d: 1 - d ** -0.5)
    >>> res = exchange_dynamic(mk)
    >>> res.converged, res.blocking
    (True, ((1, 2),))
    """
    market = _check_market(market)
    n = market.num_firms
    if int(max_iter) < 0:
        raise ValueError(f"max_iter must be >= 0, got {max_iter}")
    if not np.isfinite(tol) or tol < 0 or not np.isfinite(eps) or eps < 0:
        raise ValueError(f"eps and tol must be finite and >= 0, got eps={eps}, tol={tol}")
    alpha = np.zeros((n, n)) if alpha0 is None else check_alpha(alpha0, n).copy()
    part = sharing_partition(alpha, n) if market.revenue_sharing else None
    coals = coalitions(n, include_grand=False)
    traj, viol, blocking = [alpha.copy()], [], []
    converged = False
    for r in range(int(max_iter) + 1):
        devs = [
            best_deviation(
                market,
                alpha,
                s,
                partition=part,
                grid_step=grid_step,
                num_restarts=num_restarts,
                seed=seed + 1000 * r + i,
            )
            for i, s in enumerate(coals)
        ]
        gains = np.array([d.gain for d in devs])
        viol.append(max(0.0, float(gains.max())))
        hit = np.nonzero(gains > eps + tol)[0]
        if hit.size == 0:
            converged = True
            break
        if r == int(max_iter):
            break
        dev = devs[int(hit[0])]  # the first blocking coalition by size
        alpha = apply_deviation(alpha, dev.coalition, dev.alpha_s)
        if part is not None:
            s = set(dev.coalition)
            rest = [tuple(j for j in b if j not in s) for b in part]
            part = check_partition([dev.coalition] + [b for b in rest if b], n)
        traj.append(alpha.copy())
        blocking.append(dev.coalition)
    return DynamicResult(
        alpha=alpha,
        partition=part,
        trajectory=np.asarray(traj),
        violations=np.asarray(viol),
        blocking=tuple(blocking),
        converged=converged,
        rounds=len(blocking),
    )


# --- search


def set_partitions(items) -> list[tuple[tuple[int, ...], ...]]:
    """Every partition of ``items`` into non-empty blocks (Bell-number many).

    Parameters
    ----------
    items : iterable of int
        The elements to partition (e.g. ``range(n)`` firm ids). The count grows as the
        Bell number ``B_n`` (``B_6 = 203``); more than ``MAX_PARTITIONS`` partitions
        (``n >= 11``) are refused.

    Returns
    -------
    list of tuple of tuple of int
        Each partition as a sorted tuple of blocks; ``[()]`` for no items.

    Examples
    --------
    >>> set_partitions(range(3))
    [((0,), (1,), (2,)), ((0, 1), (2,)), ((0, 2), (1,)), ((0,), (1, 2)), ((0, 1, 2),)]
    """
    items = list(items)
    check_size(_bell(len(items)), "items", limit=MAX_PARTITIONS, what="partitions")
    return _set_partitions(items)


def _bell(n: int) -> int:
    row = [1]  # Bell triangle
    for _ in range(n):
        nxt = [row[-1]]
        for v in row:
            nxt.append(nxt[-1] + v)
        row = nxt
    return row[0]


def _set_partitions(items: list) -> list[tuple[tuple[int, ...], ...]]:
    if not items:
        return [()]
    first, rest = items[0], items[1:]
    out = []
    for p in _set_partitions(rest):
        out.append(((first,), *p))
        for i in range(len(p)):
            out.append((*p[:i], (first, *p[i]), *p[i + 1 :]))
    return [tuple(sorted(p)) for p in out]


@dataclass(frozen=True, eq=False)
class CoreSearch:
    """Result of :func:`find_core_exchange`.

    Attributes
    ----------
    alpha : ndarray, shape (n, n)
        The exchange of smallest violation found.
    partition : tuple of tuple of int or None
        Its revenue-sharing blocks (None without revenue sharing).
    violation : float
        Its violation ``v(alpha)`` (found).
    converged : bool
        ``violation <= tol``: a core-stable exchange was found.
    method : str
        The method used.
    min_violation_found : float
        The smallest violation lower bound over every exchange evaluated (outer grid,
        Nelder-Mead iterates, candidates). Above ``eps`` it certifies, up to the search,
        that the eps-core is empty.
    start_violations : ndarray, shape (num_outer_starts,)
        Violation at the end of each outer local search (empty if none ran).
    candidates : tuple of (str, float)
        The named reference exchanges tried and their violations.
    num_evaluated : int
        Exchanges evaluated by the outer search.
    trajectory : ndarray, shape (rounds + 1,)
        The dynamic's violations per round (when it ran; else empty).
    """

    alpha: np.ndarray
    partition: tuple[tuple[int, ...], ...] | None
    violation: float
    converged: bool
    method: str
    min_violation_found: float
    start_violations: np.ndarray
    candidates: tuple[tuple[str, float], ...]
    num_evaluated: int
    trajectory: np.ndarray


def _lb_step(k: int) -> float:
    return {2: 0.02, 3: 0.1}.get(k, 0.25)


class _LowerBound:
    """Vectorised lower bound on ``v`` over many current exchanges (fixed deviation sets)."""

    def __init__(self, market: Market, seed: int) -> None:
        self.market = market
        rng = np.random.default_rng(seed)
        self.sets = []
        for s in coalitions(market.num_firms, include_grand=False):
            c = np.asarray(s)
            k = len(s)
            if k == 1:
                t = np.zeros((1, 1))
            else:
                t = np.vstack([_grid(k, 1.0), _grid(k, _lb_step(k)), rng.random((256, k))])
            u, _ = _scenario(market, c, t)  # (P, k) deviation utilities
            if _needs_refinement(market) and k > 1:
                keep = _pareto(u)
                u = u[keep]
            self.sets.append((c, u))

    def __call__(self, u_cur: np.ndarray) -> np.ndarray:
        """``u_cur`` (B, n) current utilities -> (B,) violation lower bounds."""
        v = np.zeros(u_cur.shape[0])
        for c, u in self.sets:
            chunk = max(1, int(2_000_000 // max(1, u.size)))
            for lo in range(0, u_cur.shape[0], chunk):
                cur = u_cur[lo : lo + chunk, c]  # (b, k)
                g = (u[None, :, :] - cur[:, None, :]).min(axis=2).max(axis=1)  # (b,)
                v[lo : lo + chunk] = np.maximum(v[lo : lo + chunk], g)
        return v


def _pareto(u: np.ndarray) -> np.ndarray:
    """Indices of the Pareto-undominated rows of ``u`` (P, k); dominated rows never raise
    ``max_p min_j (u_pj - c_j)``, so dropping them leaves the lower bound unchanged."""
    if u.shape[1] == 2:
        order = np.lexsort((-u[:, 1], -u[:, 0]))  # u0 descending, then u1 descending
        y = u[order, 1]
        prev = np.concatenate([[-np.inf], np.maximum.accumulate(y)[:-1]])
        return np.sort(order[y > prev])
    keep = np.ones(u.shape[0], dtype=bool)
    for lo in range(0, u.shape[0], 256):
        blk = u[lo : lo + 256]  # (b, k)
        ge = (u[None, :, :] >= blk[:, None, :]).all(axis=2)  # (b, P)
        gt = (u[None, :, :] > blk[:, None, :]).any(axis=2)
        keep[lo : lo + 256] = ~(ge & gt).any(axis=1)
    return np.nonzero(keep)[0]


def find_core_exchange(
    market: Market,
    *,
    method: str = "search",
    num_starts: int = 50,
    outer_step: float = 0.1,
    max_iter: int = 200,
    dynamic_max_iter: int | None = None,
    dynamic_restarts: int = 2,
    tol: float = 1e-9,
    grid_step: float = 0.25,
    num_restarts: int = 10,
    seed: int = 0,
) -> CoreSearch:
    """Look for a core-stable exchange.

    ``"constructive"``: the theorem's greedy construction (:func:`constructive_core`).
    ``"dynamic"``: the output of :func:`exchange_dynamic` from no sharing.
    ``"search"``: the reference exchanges (construction, no sharing, full pooling, the
    dynamic's output), checked with :func:`core_violation`; if none is stable, an outer
    search over the box of reachable effective data (for every partition under revenue
    sharing): a grid, then bounded Nelder-Mead from its 10 best points, ``num_starts``
    random points and the dynamic's output, on a vectorised lower bound of ``v``.

    Parameters
    ----------
    market : Market
        The market.
    method : {"search", "dynamic", "constructive"}
        How to look.
    num_starts : int
        Random starts of the outer search.
    outer_step : float
        Grid step of the outer search over the fractions (capped at ~20,000 points).
    max_iter : int
        Rounds of the dynamic for ``method="dynamic"``.
    dynamic_max_iter : int, optional
        Rounds of the dynamic inside ``"search"`` (default ``max_iter``).
    dynamic_restarts : int
        Nelder-Mead refinements per coalition for the dynamic inside ``"search"``, where
        it is one start among many (``method="dynamic"`` uses ``num_restarts``).
    tol : float
        An exchange with ``v <= tol`` counts as core-stable.
    grid_step, num_restarts, seed
        Passed to :func:`core_violation`.

    Returns
    -------
    CoreSearch

    Examples
    --------
    >>> mk = Market([3.0, 2.0, 2.0], lambda d: 1 - d ** -0.5)
    >>> res = find_core_exchange(mk)
    >>> res.converged, res.violation
    (True, 0.0)
    """
    market = _check_market(market)
    if method not in METHODS:
        raise ValueError(f"unknown method {method!r}; valid: {METHODS}")
    _check_step(outer_step, "outer_step")
    if int(num_starts) < 0:
        raise ValueError(f"num_starts must be >= 0, got {num_starts}")
    n = market.num_firms
    rs = market.revenue_sharing
    kw = {"grid_step": grid_step, "num_restarts": num_restarts, "seed": seed}
    empty = np.zeros(0)

    def check(alpha, part) -> float:
        return core_violation(market, alpha, partition=part, **kw).violation

    def done(alpha, part, v, name, cands, min_found, starts=empty, num=0, traj=empty):
        return CoreSearch(
            alpha=alpha,
            partition=part if rs else None,
            violation=float(v),
            converged=bool(v <= tol),
            method=name,
            min_violation_found=float(min_found),
            start_violations=starts,
            candidates=tuple(cands),
            num_evaluated=int(num),
            trajectory=traj,
        )

    if method == "constructive":
        con = constructive_core(market)
        v = check(con.alpha, con.partition if rs else None)
        return done(con.alpha, con.partition, v, method, [("constructive", v)], v)
    if method == "dynamic":
        dyn_iter, dyn_kw = max_iter, kw
    else:
        dyn_iter = max_iter if dynamic_max_iter is None else dynamic_max_iter
        dyn_kw = {**kw, "num_restarts": min(int(dynamic_restarts), int(num_restarts))}
    dyn = exchange_dynamic(market, max_iter=dyn_iter, tol=tol, **dyn_kw)
    v_dyn = float(dyn.violations[-1])
    if method == "dynamic":
        return done(
            dyn.alpha,
            dyn.partition,
            v_dyn,
            method,
            [("dynamic", v_dyn)],
            v_dyn,
            traj=dyn.violations,
        )

    con = constructive_core(market)
    zero = np.zeros((n, n))
    full = np.ones((n, n)) - np.eye(n)
    singles = tuple((i,) for i in range(n))
    refs = [
        ("constructive", con.alpha, con.partition if rs else None),
        ("no_sharing", zero, singles if rs else None),
        ("full_pooling", full, (tuple(range(n)),) if rs else None),
    ]
    cands = [(name, check(a, p), a, p) for name, a, p in refs]
    cands.append(("dynamic", v_dyn, dyn.alpha, dyn.partition))
    best = min(cands, key=lambda x: x[1])
    min_found = best[1]
    named = [(x[0], float(x[1])) for x in cands]
    if best[1] <= tol:
        return done(best[2], best[3], best[1], "search", named, min_found, traj=dyn.violations)

    # Outer search over the reachable box d_j in [m_j, m_B(j)] for each partition.
    lb = _LowerBound(market, seed)
    rng = np.random.default_rng(seed)
    parts = set_partitions(range(n)) if rs else [(tuple(range(n)),)]
    per_dim = max(2, min(round(1.0 / outer_step) + 1, int(20_000 ** (1.0 / n))))
    x_grid = _grid(n, 1.0 / (per_dim - 1))  # (G, n)
    m = market.sizes
    num_eval = 0
    start_v: list[float] = []
    best_x, best_part, best_lb = None, None, np.inf
    for part in parts:
        hi = np.empty(n)
        for b in part:
            hi[list(b)] = m[list(b)].sum()
        r_mat = _sharing_matrix(part, n)

        def lb_batch(x, hi=hi, r_mat=r_mat):
            d = m + np.clip(x, 0.0, 1.0) * (hi - m)  # (B, n)
            u = market.shares(d)
            if rs:
                u = u @ r_mat.T
            return lb(u)

        vals = lb_batch(x_grid)
        num_eval += vals.size
        min_found = min(min_found, float(vals.min()))
        order = np.argsort(vals, kind="stable")[:10]
        starts = [x_grid[i] for i in order] + list(rng.random((int(num_starts), n)))
        for x0 in starts:
            trace: list[float] = []

            def f(x, trace=trace, lb_batch=lb_batch):
                val = float(lb_batch(np.asarray(x)[None, :])[0])
                trace.append(val)
                return val

            res = minimize(
                f,
                x0,
                method="Nelder-Mead",
                bounds=[(0.0, 1.0)] * n,
                options={"xatol": 1e-6, "fatol": 1e-9, "maxfev": 60 * n},
            )
            num_eval += len(trace)
            min_found = min(min_found, min(trace))
            start_v.append(float(res.fun))
            if res.fun < best_lb:
                best_lb, best_x, best_part = float(res.fun), np.clip(res.x, 0.0, 1.0), part
    # Realise the best point: alpha_ij = x_j inside each block.
    alpha = np.zeros((n, n))
    for b in best_part:
        idx = np.asarray(b)
        alpha[np.ix_(idx, idx)] = best_x[idx][None, :]
    np.fill_diagonal(alpha, 0.0)
    v = max(best_lb, check(alpha, best_part if rs else None))
    if v < best[1]:
        out_alpha, out_part = alpha, best_part
    else:
        v, out_alpha, out_part = best[1], best[2], best[3]
    return done(
        out_alpha,
        out_part,
        v,
        "search",
        named,
        min_found,
        starts=np.asarray(start_v),
        num=num_eval,
        traj=dyn.violations,
    )


# --- estimator


class DataExchangeGame(BaseEstimator):
    """Scikit-learn style front end: set the market's rules, fit sizes and a curve, solve.

    Parameters
    ----------
    demand : {"wta", "logit"}
        Demand model.
    rationality : float
        Logit ``lambda``.
    revenue_sharing : bool
        Equal revenue sharing inside blocks.
    tie_tol : float
        Winner-takes-all tie tolerance.

    Attributes
    ----------
    market_ : Market
        Set by :meth:`fit`.
    result_ : CoreSearch
        Set by :meth:`solve`.

    Examples
    --------
    >>> game = DataExchangeGame(demand="wta").fit([3.0, 2.0, 2.0], lambda d: 1 - d ** -0.5)
    >>> game.solve().converged
    True
    """

    def __init__(
        self,
        *,
        demand: str = "wta",
        rationality: float = 10.0,
        revenue_sharing: bool = False,
        tie_tol: float = 1e-12,
    ) -> None:
        self.demand = demand
        self.rationality = rationality
        self.revenue_sharing = revenue_sharing
        self.tie_tol = tie_tol

    def fit(self, sizes, curve) -> DataExchangeGame:
        """Build the market from firm sizes ``m`` (n,) and a learning curve ``f``."""
        self.market_ = Market(
            sizes,
            curve,
            demand=self.demand,
            rationality=self.rationality,
            revenue_sharing=self.revenue_sharing,
            tie_tol=self.tie_tol,
        )
        return self

    def solve(self, *, method: str = "search", seed: int = 0, **kwargs) -> CoreSearch:
        """Find a core-stable exchange with :func:`find_core_exchange`."""
        if not hasattr(self, "market_"):
            raise RuntimeError("call fit(sizes, curve) before solve()")
        self.result_ = find_core_exchange(self.market_, method=method, seed=seed, **kwargs)
        return self.result_

    def violation(self, alpha, *, partition=None) -> float:
        """``v(alpha)`` in the fitted market."""
        if not hasattr(self, "market_"):
            raise RuntimeError("call fit(sizes, curve) before violation()")
        return core_violation(self.market_, alpha, partition=partition).violation

    # Let effective_data be reachable from the estimator too (a convenience).
    def effective_data(self, alpha) -> np.ndarray:
        """``d`` (n,) for an exchange in the fitted market."""
        return effective_data(alpha, self.market_.sizes)
