"""The market: firms, data exchanges, accuracies and market shares.

``n`` firms hold ``m_j > 0`` data points each. An exchange ``alpha in [0, 1]^{n x n}``
(zero diagonal) gives firm ``j`` the fraction ``alpha_ij`` of firm ``i``'s data, so firm
``j`` trains on ``d_j = m_j + sum_{i != j} alpha_ij m_i`` points (data is non-rival: the
giver keeps its own) and reaches accuracy ``a_j = f(d_j)`` for a non-decreasing learning
curve ``f``. Customers split by relative accuracy: all go to the best firm(s)
("fully rational", winner-takes-all) or follow a logit rule ("partially rational").
A firm's utility is its market share; with revenue sharing, the members of each block of
a partition split their blocks' total share equally.

Two facts used throughout (both tested):

* shares depend on ``alpha`` only through ``d``, and the set of reachable ``d`` is the box
  ``prod_j [m_j, M]`` with ``M = sum_j m_j``: column ``j`` of ``alpha`` sets ``d_j`` alone;
  the canonical exchange ``alpha_ij = t_j`` (every other firm gives ``j`` the same fraction
  ``t_j``) reaches every point of the box;
* shares sum to one, so the grand coalition can never make every firm strictly better off.

References
----------
The abstract of "Core stability of data exchange between competing predictors"
(NeurIPS 2026; seed 004, paragraph 4). Additive pooling as in Tsoy and Konstantinov,
"Strategic data sharing between competitors", NeurIPS 2023.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from neurips26.common.validation import check_array

__all__ = [
    "DEMANDS",
    "MAX_FIRMS",
    "Market",
    "check_alpha",
    "check_coalition",
    "check_partition",
    "coalition_value",
    "coalitions",
    "effective_data",
    "market_shares",
    "sharing_partition",
    "utilities",
]

#: The demand models: winner-takes-all ("fully rational") and logit ("partially rational").
DEMANDS = ("wta", "logit")

#: Coalition enumeration and grids cost 2^n; refuse larger markets.
MAX_FIRMS = 6


def _check_real(value, name: str) -> float:
    """A real number (not a bool) as a float; ``TypeError`` naming ``name`` otherwise."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, float, np.number)):
        raise TypeError(f"{name} must be a real number, got {type(value).__name__} {value!r}")
    try:
        return float(value)
    except (TypeError, ValueError, OverflowError):
        raise TypeError(f"{name} must be a real number, got {value!r}") from None


def _check_rationality(rationality) -> float:
    lam = _check_real(rationality, "rationality")
    if not np.isfinite(lam) or lam <= 0:
        raise ValueError(f"rationality (logit lambda) must be finite and > 0, got {lam}")
    return lam


def _check_sizes(sizes) -> np.ndarray:
    m = check_array(sizes, "sizes", ndim=1, min_size=0)
    if m.shape[0] < 2:
        raise ValueError(f"sizes: a market needs at least 2 firms, got n = {m.shape[0]}")
    if m.shape[0] > MAX_FIRMS:
        raise ValueError(
            f"sizes: n = {m.shape[0]} firms, more than the limit of MAX_FIRMS = {MAX_FIRMS} "
            "(the coalition and grid searches cost 2^n grids)"
        )
    if np.any(m <= 0):
        raise ValueError(f"sizes must be positive data counts, got {m}")
    if not np.isfinite(m.sum()):  # the pooled data d_j and the total M would be inf
        raise ValueError(f"sizes sum to more than a float holds (inf), got {m}")
    return m


@dataclass(frozen=True, eq=False)
class Market:
    """A data-exchange market: firm sizes, a learning curve and a demand model.

    Parameters
    ----------
    sizes : array_like, shape (n,)
        Data held by each firm, ``m_j > 0``; ``2 <= n <= MAX_FIRMS`` (more is refused, as
        are sizes whose sum overflows to inf).
    accuracy : callable
        The learning curve ``f``: maps an array of data counts (any shape) to accuracies
        of the same shape; must be finite, at most 1 and non-decreasing on
        ``[min m, sum m]`` (checked on a 257-point grid).
    demand : {"wta", "logit"}
        Winner-takes-all (fully rational) or logit (partially rational) demand.
    rationality : float
        The logit's ``lambda > 0`` (ignored by winner-takes-all).
    revenue_sharing : bool
        If true, the blocks of the outcome's partition split their total share equally.
    tie_tol : float
        Winner-takes-all tie tolerance: firms within ``tie_tol`` of the best accuracy split
        the market.

    Examples
    --------
    >>> mk = Market([1.0, 2.0, 4.0], lambda d: 1 - 1 / (1 + d))
    >>> mk.num_firms, mk.total
    (3, 7.0)
    """

    sizes: np.ndarray
    accuracy: Callable[[np.ndarray], np.ndarray]
    demand: str = "wta"
    rationality: float = 10.0
    revenue_sharing: bool = False
    tie_tol: float = 1e-12

    def __post_init__(self) -> None:
        m = _check_sizes(self.sizes)
        m.setflags(write=False)
        object.__setattr__(self, "sizes", m)
        if not callable(self.accuracy):
            raise TypeError(f"accuracy must be callable, got {type(self.accuracy).__name__}")
        if self.demand not in DEMANDS:
            raise ValueError(f"unknown demand model {self.demand!r}; valid: {DEMANDS}")
        lam = _check_rationality(self.rationality)
        tie_tol = _check_real(self.tie_tol, "tie_tol")
        if not np.isfinite(tie_tol) or tie_tol < 0:
            raise ValueError(f"tie_tol must be finite and >= 0, got {self.tie_tol}")
        object.__setattr__(self, "rationality", lam)
        object.__setattr__(self, "tie_tol", tie_tol)
        grid = np.linspace(m.min(), m.sum(), 257)
        a = np.asarray(self.accuracy(grid), dtype=float)
        if a.shape != grid.shape:
            raise ValueError(
                f"accuracy must map an array of shape {grid.shape} to the same shape, got {a.shape}"
            )
        if not np.all(np.isfinite(a)):
            raise ValueError("accuracy returned non-finite values on [min(sizes), sum(sizes)]")
        if a.max() > 1:
            raise ValueError(
                f"accuracy must return accuracies <= 1, got a maximum of {a.max():g} on "
                "[min(sizes), sum(sizes)]"
            )
        if np.any(np.diff(a) < -1e-12):
            k = int(np.argmin(np.diff(a)))
            raise ValueError(
                "accuracy must be non-decreasing in the data count; it decreases between "
                f"d = {grid[k]:.4g} and d = {grid[k + 1]:.4g}"
            )

    @property
    def num_firms(self) -> int:
        """``n``."""
        return int(self.sizes.shape[0])

    @property
    def total(self) -> float:
        """``M = sum_j m_j``."""
        return float(self.sizes.sum())

    def accuracies(self, d) -> np.ndarray:
        """``a = f(d)`` elementwise for ``d`` of any shape ``(..., n)``."""
        d = np.asarray(d, dtype=float)
        return np.asarray(self.accuracy(d.ravel()), dtype=float).reshape(d.shape)

    def shares(self, d) -> np.ndarray:
        """Market shares ``s`` of shape ``(..., n)`` for effective data ``d`` ``(..., n)``."""
        return market_shares(
            self.accuracies(d),
            demand=self.demand,
            rationality=self.rationality,
            tie_tol=self.tie_tol,
        )


def check_alpha(alpha, n: int) -> np.ndarray:
    """Validate an exchange matrix: shape ``(n, n)``, finite, in ``[0, 1]``, zero diagonal.

    Parameters
    ----------
    alpha : array_like, shape (n, n)
        The exchange ``alpha_ij``: fraction of firm ``i``'s data given to firm ``j``.
    n : int
        Number of firms.

    Returns
    -------
    numpy.ndarray, shape (n, n)
        ``alpha`` as a float array.

    Raises
    ------
    ValueError
        On a wrong shape, non-finite entries, entries outside ``[0, 1]`` or a non-zero
        diagonal, with a message naming the problem.
    """
    a = check_array(alpha, "alpha", ndim=None, min_size=0, finite=False)
    if a.shape != (n, n):
        raise ValueError(f"alpha must have shape ({n}, {n}), got {a.shape}")
    if not np.all(np.isfinite(a)):
        raise ValueError("alpha contains NaN or infinite entries")
    if np.any(a < 0) or np.any(a > 1):
        raise ValueError(
            f"alpha entries are fractions of data and must lie in [0, 1]; got range "
            f"[{a.min():.4g}, {a.max():.4g}]"
        )
    if np.any(np.diag(a) != 0):
        raise ValueError("alpha must have a zero diagonal (a firm does not give data to itself)")
    return a


def effective_data(alpha, sizes) -> np.ndarray:
    """Data each firm trains on after an exchange.

    Parameters
    ----------
    alpha : array_like, shape (n, n)
        ``alpha_ij``: fraction of firm ``i``'s data given to firm ``j``; zero diagonal.
    sizes : array_like, shape (n,)
        ``m``: own data of each firm.

    Returns
    -------
    ndarray, shape (n,)
        ``d_j = m_j + sum_{i != j} alpha_ij m_i`` (additive pooling).

    Examples
    --------
    >>> effective_data([[0, 0.5], [0, 0]], [2.0, 3.0])
    array([2., 4.])
    """
    m = _check_sizes(sizes)
    a = check_alpha(alpha, m.shape[0])
    return m + a.T @ m  # Eq. (d): d_j = m_j + sum_i alpha_ij m_i   (n,)


def market_shares(
    acc, *, demand: str = "wta", rationality: float = 10.0, tie_tol: float = 1e-12
) -> np.ndarray:
    """Market shares from accuracies.

    Parameters
    ----------
    acc : array_like, shape (..., n)
        Accuracies ``a_j`` (the last axis indexes firms).
    demand : {"wta", "logit"}
        ``"wta"``: ``s_j = 1/|W|`` on ``W = {k : a_k >= max a - tie_tol}``, else 0;
        ``"logit"``: ``s_j = exp(lambda a_j) / sum_k exp(lambda a_k)``.
    rationality : float
        ``lambda > 0`` of the logit.
    tie_tol : float
        Winner-takes-all tie tolerance.

    Returns
    -------
    ndarray, shape (..., n)
        Shares, summing to one along the last axis.

    Examples
    --------
    >>> market_shares([0.9, 0.9, 0.8], demand="wta")
    array([0.5, 0.5, 0. ])
    """
    a = check_array(acc, "acc", ndim=None, min_size=0, finite=False)
    if a.ndim == 0 or a.shape[-1] < 1:
        raise ValueError(f"acc must have a last axis of firms, got shape {a.shape}")
    if not np.all(np.isfinite(a)):
        raise ValueError("acc (accuracies) contains NaN or infinite values")
    if demand == "wta":
        win = a >= a.max(axis=-1, keepdims=True) - tie_tol  # (..., n) winners W
        return win / win.sum(axis=-1, keepdims=True)
    if demand == "logit":
        lam = _check_rationality(rationality)
        z = lam * (a - a.max(axis=-1, keepdims=True))  # stable softmax
        e = np.exp(z)
        return e / e.sum(axis=-1, keepdims=True)
    raise ValueError(f"unknown demand model {demand!r}; valid: {DEMANDS}")


def coalitions(n: int, *, include_grand: bool = True) -> list[tuple[int, ...]]:
    """Every non-empty coalition of ``range(n)``, by increasing size then lexicographically.

    Parameters
    ----------
    n : int
        Number of firms, ``1 <= n <= MAX_FIRMS``.
    include_grand : bool
        Whether to include the grand coalition ``(0, ..., n - 1)``.

    Returns
    -------
    list of tuple of int
        The coalitions ``S``, each a sorted tuple of firm ids.

    Examples
    --------
    >>> coalitions(3, include_grand=False)
    [(0,), (1,), (2,), (0, 1), (0, 2), (1, 2)]
    """
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 1:
        raise ValueError(f"n must be a positive integer number of firms, got {n!r}")
    if n > MAX_FIRMS:
        raise ValueError(
            f"n = {n} firms: enumerating the 2^n coalitions and their exchange grids is "
            f"combinatorially expensive; at most {MAX_FIRMS} firms are supported"
        )
    top = n if include_grand else n - 1
    return [c for k in range(1, top + 1) for c in itertools.combinations(range(n), k)]


def check_coalition(coalition, n: int) -> tuple[int, ...]:
    """Validate a coalition: a non-empty set of distinct firm ids in ``range(n)``."""
    try:
        ids = [int(i) for i in coalition]
    except TypeError as exc:
        raise TypeError(f"coalition must be a sequence of firm ids, got {coalition!r}") from exc
    if not ids:
        raise ValueError("coalition must not be empty")
    bad = [i for i in ids if not 0 <= i < n]
    if bad:
        raise ValueError(f"coalition has unknown firm ids {bad}; firms are 0..{n - 1}")
    if len(set(ids)) != len(ids):
        raise ValueError(f"coalition lists a firm twice: {ids}")
    return tuple(sorted(ids))


def check_partition(partition, n: int) -> tuple[tuple[int, ...], ...]:
    """Validate a partition of ``range(n)`` into blocks; return it as sorted tuples."""
    blocks = tuple(sorted(check_coalition(b, n) for b in partition))
    flat = [i for b in blocks for i in b]
    if sorted(flat) != list(range(n)):
        raise ValueError(
            f"partition must cover every firm 0..{n - 1} exactly once, got {list(blocks)}"
        )
    return blocks


def sharing_partition(alpha, n: int) -> tuple[tuple[int, ...], ...]:
    """Components of the sharing graph: ``i ~ j`` if ``alpha_ij > 0`` or ``alpha_ji > 0``.

    Parameters
    ----------
    alpha : array_like, shape (n, n)
        The exchange (validated with :func:`check_alpha`).
    n : int
        Number of firms.

    Returns
    -------
    tuple of tuple of int
        The partition of ``range(n)`` into connected components, sorted.

    Examples
    --------
    >>> a = np.zeros((3, 3)); a[0, 2] = 0.5
    >>> sharing_partition(a, 3)
    ((0, 2), (1,))
    """
    a = check_alpha(alpha, n)
    adj = (a > 0) | (a.T > 0)
    label = list(range(n))

    def find(i: int) -> int:
        while label[i] != i:
            label[i] = label[label[i]]
            i = label[i]
        return i

    for i, j in zip(*np.nonzero(adj), strict=True):
        ri, rj = find(int(i)), find(int(j))
        if ri != rj:
            label[max(ri, rj)] = min(ri, rj)
    groups: dict[int, list[int]] = {}
    for i in range(n):
        groups.setdefault(find(i), []).append(i)
    return tuple(sorted(tuple(g) for g in groups.values()))


def _sharing_matrix(blocks: Sequence[Sequence[int]], n: int) -> np.ndarray:
    """``R`` with ``R[j, k] = 1/|B|`` when ``j, k`` share block ``B``: ``u = s @ R.T``."""
    r = np.zeros((n, n))
    for b in blocks:
        idx = np.asarray(b)
        r[np.ix_(idx, idx)] = 1.0 / len(b)
    return r


def utilities(market: Market, alpha, *, partition=None) -> np.ndarray:
    """Utilities of every firm under an exchange.

    Parameters
    ----------
    market : Market
        The market.
    alpha : array_like, shape (n, n)
        The exchange ``alpha``.
    partition : sequence of sequences of int, optional
        Revenue-sharing blocks (only for ``market.revenue_sharing``). Default: the
        connected components of the sharing graph of ``alpha``.

    Returns
    -------
    ndarray, shape (n,)
        ``u_j = s_j`` (market share), or ``u_j = (1/|B|) sum_{k in B} s_k`` for ``j``'s
        block ``B`` under revenue sharing.

    Examples
    --------
    >>> mk = Market([1.0, 2.0, 4.0], lambda d: 1 - 1 / (1 + d))
    >>> utilities(mk, np.zeros((3, 3)))
    array([0., 0., 1.])
    """
    n = market.num_firms
    a = check_alpha(alpha, n)
    s = market.shares(effective_data(a, market.sizes))  # (n,)
    if not market.revenue_sharing:
        if partition is not None:
            raise ValueError("partition applies only to markets with revenue_sharing=True")
        return s
    blocks = sharing_partition(a, n) if partition is None else check_partition(partition, n)
    return s @ _sharing_matrix(blocks, n).T  # (n,) block averages


def coalition_value(market: Market, coalition) -> float:
    """Guaranteed per-member value ``V(S)`` of a coalition.

    ``S`` pools all its data internally (every member trains on ``m_S``) and cuts every
    flow across its boundary; the outsiders pool among themselves (each trains on
    ``M - m_S``), which is their worst-case response to ``S`` since every member's share
    falls in every outsider's accuracy. ``V(S)`` is then the members' common share
    (their average share under revenue sharing, the same number).

    Parameters
    ----------
    market : Market
        The market.
    coalition : sequence of int
        ``S``, non-empty.

    Returns
    -------
    float
        ``V(S)``.

    Examples
    --------
    >>> mk = Market([1.0, 2.0, 4.0], lambda d: 1 - 1 / (1 + d))
    >>> coalition_value(mk, [2]), coalition_value(mk, [0, 1])
    (1.0, 0.0)
    """
    n = market.num_firms
    c = np.asarray(check_coalition(coalition, n))
    m_s = float(market.sizes[c].sum())
    d = np.full(n, market.total - m_s)  # outsiders fully pooled
    d[c] = m_s  # members fully pooled
    return float(market.shares(d)[c].mean())
