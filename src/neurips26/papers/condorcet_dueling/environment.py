"""Dueling environments, preference matrices and synthetic instances.

A dueling bandit over ``K`` arms is described by a preference matrix ``Q`` (K, K) with
``Q[i, j] = q_ij``, the probability that arm ``i`` beats arm ``j`` in one duel, and
``q_ij + q_ji = 1``. The gap matrix is ``Delta = Q - 1/2``. A Condorcet winner ``w``
has ``q_wj >= 1/2`` for every ``j`` (with at least one strict inequality per arm, so it
is unique).

This module holds the simulator (:class:`DuelEnvironment`), a wrapper that turns any
``duel(i, j) -> bool`` callable into an environment with a budget counter
(:class:`CallableEnvironment`), the brute-force :func:`condorcet_winner`, and the three
instance families of the reproduction (:func:`make_instance`).
"""

from __future__ import annotations

from collections.abc import Callable
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
    "INSTANCE_KINDS",
    "BudgetExhaustedError",
    "CallableEnvironment",
    "DuelEnvironment",
    "DuelingEnvironment",
    "as_environment",
    "check_preference_matrix",
    "condorcet_winner",
    "make_instance",
]

INSTANCE_KINDS = ("small_winner_gap", "bradley_terry", "cyclic_nonwinners")

_ATOL = 1e-9


class BudgetExhaustedError(RuntimeError):
    """Raised by an environment asked for more duels than its ``max_duels`` budget."""


@runtime_checkable
class DuelingEnvironment(Protocol):
    """What the identification procedures need from an environment.

    ``num_arms`` (int), ``num_duels`` (duels played so far) and ``duels(i, j, n)``, the
    number of wins of ``i`` in ``n`` fresh duels against ``j``.
    """

    num_arms: int

    @property
    def num_duels(self) -> int: ...

    def duels(self, i: int, j: int, n: int) -> int: ...


def _check_arm(name: str, value: Any, num_arms: int) -> int:
    return check_int(value, name, min=0, max=num_arms - 1)


def _check_budget(max_duels: Any) -> int | None:
    return None if max_duels is None else check_int(max_duels, "max_duels", min=1)


def check_preference_matrix(Q: Any, *, require_winner: bool = False) -> np.ndarray:
    """Validate a preference matrix and return it as a float array.

    Parameters
    ----------
    Q : array_like, shape (K, K)
        ``Q[i, j] = q_ij``, the probability that arm ``i`` beats arm ``j``. The diagonal
        is ignored (set to 1/2 in the returned copy).
    require_winner : bool, default False
        Also require a Condorcet winner to exist.

    Returns
    -------
    ndarray, shape (K, K)
        A float copy with diagonal 1/2.

    Raises
    ------
    ValueError
        If ``Q`` is not square with ``K >= 2``, has non-finite entries or entries outside
        ``[0, 1]``, violates ``Q[i, j] + Q[j, i] = 1`` off the diagonal (tolerance 1e-9), or
        (with ``require_winner``) has no Condorcet winner; the last message names, for each
        arm, an arm that beats it.
    """
    Q = check_array(Q, "Q", finite=False, copy=True)
    if Q.ndim != 2 or Q.shape[0] != Q.shape[1]:
        raise ValueError(f"Q must be a square (K, K) matrix, got shape {Q.shape}")
    K = Q.shape[0]
    if K < 2:
        raise ValueError(f"Q must describe at least 2 arms (num_arms >= 2), got K={K}")
    np.fill_diagonal(Q, 0.5)
    if not np.all(np.isfinite(Q)):
        raise ValueError("Q has NaN or infinite entries")
    if Q.min() < 0.0 or Q.max() > 1.0:
        raise ValueError(f"Q entries must lie in [0, 1], got range [{Q.min():g}, {Q.max():g}]")
    asym = np.abs(Q + Q.T - 1.0)
    if asym.max() > _ATOL:
        i, j = np.unravel_index(int(np.argmax(asym)), asym.shape)
        raise ValueError(
            f"Q must satisfy Q[i, j] + Q[j, i] = 1 off the diagonal; Q[{i}, {j}] + Q[{j}, {i}]"
            f" = {Q[i, j] + Q[j, i]:.12g}"
        )
    if require_winner and condorcet_winner(Q) is None:
        beaters = {i: int(np.argmax(Q[:, i])) for i in range(K)}
        listing = ", ".join(f"{i} by {b}" for i, b in beaters.items())
        raise ValueError(
            "Q has no Condorcet winner (every arm is beaten by some arm: "
            f"{listing}); pass require_winner=False to allow this"
        )
    return Q


def condorcet_winner(Q: Any) -> int | None:
    """The Condorcet winner of ``Q``, or ``None`` if there is none.

    The winner ``w`` beats every other arm with probability at least 1/2 and is the only
    arm to do so (an arm with ``q_wj = 1/2`` for some ``j`` still qualifies if no other
    arm does).

    Parameters
    ----------
    Q : array_like, shape (K, K)
        Preference matrix, ``Q[i, j] = q_ij``.

    Returns
    -------
    int or None

    Examples
    --------
    >>> condorcet_winner([[0.5, 0.6], [0.4, 0.5]])
    0
    >>> condorcet_winner([[.5, .9, .1], [.1, .5, .9], [.9, .1, .5]]) is None
    True

    ``Q`` is checked as by :func:`check_preference_matrix` (square, ``K >= 2``, finite,
    in ``[0, 1]``, ``Q + Q^T = 1``); ``None`` or a ragged list raises ``TypeError`` or
    ``ValueError``.
    """
    Q = check_preference_matrix(Q)
    K = Q.shape[0]
    off = ~np.eye(K, dtype=bool)
    weak = np.all((Q >= 0.5) | ~off, axis=1)  # (K,) beats-or-ties everyone
    candidates = np.flatnonzero(weak)
    if candidates.size == 1:
        return int(candidates[0])
    return None


class DuelEnvironment:
    """A simulated dueling bandit with a duel counter and an optional budget.

    Each unordered pair ``{i, j}`` has its own random stream, seeded from ``(seed, i, j)``,
    so the outcomes of a pair depend only on the sizes of the batches asked of that pair,
    not on how duels of different pairs interleave (common random numbers across
    algorithms and implementations).

    Parameters
    ----------
    Q : array_like, shape (K, K)
        Preference matrix ``q_ij``; validated by :func:`check_preference_matrix`.
    seed : int, default 0
        Seed of the per-pair streams.
    max_duels : int or None, default None
        Budget: asking for more duels in total raises :class:`BudgetExhaustedError`.
    require_winner : bool, default True
        Refuse a matrix without a Condorcet winner.

    Attributes
    ----------
    num_arms : int
        ``K``.
    winner : int or None
        The Condorcet winner of ``Q``.

    Examples
    --------
    >>> env = DuelEnvironment([[0.5, 0.8], [0.2, 0.5]], seed=1)
    >>> wins = env.duels(0, 1, 100)  # wins of arm 0 in 100 duels against arm 1
    >>> env.num_duels
    100
    """

    def __init__(
        self, Q: Any, *, seed: int = 0, max_duels: int | None = None, require_winner: bool = True
    ) -> None:
        self._Q = check_preference_matrix(Q, require_winner=require_winner)
        self._Q.setflags(write=False)
        if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
            raise ValueError(f"seed must be a non-negative integer, got {seed!r}")
        self.seed = int(seed)
        self.num_arms = int(self._Q.shape[0])
        self.max_duels = _check_budget(max_duels)
        self.winner = condorcet_winner(self._Q)
        self._num_duels = 0
        self._counts = np.zeros((self.num_arms, self.num_arms), dtype=np.int64)
        self._streams: dict[tuple[int, int], np.random.Generator] = {}

    @property
    def Q(self) -> np.ndarray:
        """The preference matrix (read-only)."""
        return self._Q

    @property
    def num_duels(self) -> int:
        """Duels played so far."""
        return self._num_duels

    @property
    def duel_counts(self) -> np.ndarray:
        """(K, K) symmetric matrix of duels played per pair (a copy)."""
        return self._counts.copy()

    def _stream(self, a: int, b: int) -> np.random.Generator:
        key = (a, b)
        rng = self._streams.get(key)
        if rng is None:
            rng = np.random.default_rng([self.seed, a, b])
            self._streams[key] = rng
        return rng

    def duels(self, i: int, j: int, n: int) -> int:
        """Play ``n`` duels of arm ``i`` against arm ``j``; return the wins of ``i``.

        Raises
        ------
        BudgetExhaustedError
            If the duels would exceed ``max_duels``.
        """
        i = _check_arm("i", i, self.num_arms)
        j = _check_arm("j", j, self.num_arms)
        if i == j:
            raise ValueError(f"an arm cannot duel itself (i = j = {i})")
        n = int(n)
        if n < 0:
            raise ValueError(f"n must be >= 0, got {n}")
        if n == 0:
            return 0
        if self.max_duels is not None and self._num_duels + n > self.max_duels:
            raise BudgetExhaustedError(
                f"duel budget exhausted: {self._num_duels} of max_duels={self.max_duels} used,"
                f" {n} more requested for pair ({i}, {j})"
            )
        a, b = (i, j) if i < j else (j, i)
        wins_a = int(self._stream(a, b).binomial(n, self._Q[a, b]))
        self._num_duels += n
        self._counts[i, j] += n
        self._counts[j, i] += n
        return wins_a if i == a else n - wins_a

    def duel(self, i: int, j: int) -> bool:
        """One duel; ``True`` when ``i`` beats ``j``."""
        return self.duels(i, j, 1) == 1

    def __call__(self, i: int, j: int) -> bool:
        return self.duel(i, j)

    def __repr__(self) -> str:
        return (
            f"DuelEnvironment(num_arms={self.num_arms}, seed={self.seed}, "
            f"num_duels={self._num_duels}, max_duels={self.max_duels})"
        )


class CallableEnvironment:
    """Wrap a ``duel(i, j) -> bool`` callable as an environment with a budget counter.

    Parameters
    ----------
    duel : callable
        ``duel(i, j)`` returns ``True`` when arm ``i`` wins a fresh duel against ``j``. It
        must return a ``bool`` (or ``numpy.bool_``); anything else raises ``TypeError``.
    num_arms : int
        ``K >= 2``.
    max_duels : int or None, default None
        Budget: asking for more duels raises :class:`BudgetExhaustedError`.

    Examples
    --------
    >>> import random
    >>> r = random.Random(0)
    >>> env = CallableEnvironment(lambda i, j: r.random() < (0.7 if i < j else 0.3), num_arms=3)
    >>> env.duel(0, 2) in (True, False)
    True
    """

    def __init__(
        self, duel: Callable[[int, int], bool], *, num_arms: int, max_duels: int | None = None
    ) -> None:
        if not callable(duel):
            raise TypeError(f"duel must be callable as duel(i, j) -> bool, got {duel!r}")
        if isinstance(num_arms, bool) or not isinstance(num_arms, (int, np.integer)):
            raise TypeError(f"num_arms must be an integer, got {num_arms!r}")
        if num_arms < 2:
            raise ValueError(f"num_arms must be >= 2, got {num_arms}")
        self._duel = duel
        self.num_arms = int(num_arms)
        self.max_duels = _check_budget(max_duels)
        self._num_duels = 0

    @property
    def num_duels(self) -> int:
        """Duels played so far."""
        return self._num_duels

    def duel(self, i: int, j: int) -> bool:
        """One duel; ``True`` when ``i`` beats ``j``."""
        i = _check_arm("i", i, self.num_arms)
        j = _check_arm("j", j, self.num_arms)
        if i == j:
            raise ValueError(f"an arm cannot duel itself (i = j = {i})")
        if self.max_duels is not None and self._num_duels >= self.max_duels:
            raise BudgetExhaustedError(
                f"duel budget exhausted: all max_duels={self.max_duels} duels used"
                f" (next requested pair ({i}, {j}))"
            )
        out = self._duel(i, j)
        if not isinstance(out, (bool, np.bool_)):
            raise TypeError(
                f"the environment returned {out!r} ({type(out).__name__}) for duel({i}, {j});"
                " duel(i, j) must return a bool (True when i beats j)"
            )
        self._num_duels += 1
        return bool(out)

    def duels(self, i: int, j: int, n: int) -> int:
        """Play ``n`` duels one at a time; return the wins of ``i``."""
        return sum(self.duel(i, j) for _ in range(int(n)))

    __call__ = duel


def as_environment(env: Any, *, num_arms: int | None = None) -> DuelingEnvironment:
    """Return ``env`` if it is an environment, or wrap a ``duel(i, j)`` callable.

    Parameters
    ----------
    env : DuelingEnvironment or callable
        An object with ``num_arms``, ``num_duels`` and ``duels(i, j, n)``, or a callable
        ``duel(i, j) -> bool``.
    num_arms : int, optional
        Required when ``env`` is a bare callable.
    """
    if isinstance(env, DuelingEnvironment):
        K = env.num_arms
        if num_arms is not None and num_arms != K:
            raise ValueError(f"num_arms={num_arms} disagrees with the environment's {K} arms")
        if K < 2:
            raise ValueError(f"the environment must have num_arms >= 2, got {K}")
        return env
    if callable(env):
        if num_arms is None:
            raise TypeError("num_arms is required when env is a bare duel(i, j) callable")
        return CallableEnvironment(env, num_arms=num_arms)
    raise TypeError(
        "env must be a DuelEnvironment-like object (num_arms, num_duels, duels(i, j, n))"
        f" or a callable duel(i, j) -> bool, got {type(env).__name__}"
    )


def _set_gap(Q: np.ndarray, i: int, j: int, gap: float) -> None:
    Q[i, j] = 0.5 + gap  # q_ij = 1/2 + Delta_ij
    Q[j, i] = 0.5 - gap


#: Most arms :func:`make_instance` builds (its pair loops take minutes beyond this).
MAX_INSTANCE_ARMS = 5000


def make_instance(
    kind: str,
    *,
    num_arms: int = 20,
    winner_gap: float = 0.01,
    beater_gap: float = 0.3,
    background_gap: float = 0.05,
    seed: int = 0,
) -> np.ndarray:
    """A synthetic preference matrix with a planted Condorcet winner.

    Arm labels are randomly permuted, so the winner's index carries no information.

    Parameters
    ----------
    kind : {"small_winner_gap", "bradley_terry", "cyclic_nonwinners"}
        - ``"small_winner_gap"``: ``w`` beats every arm by ``winner_gap``; the non-winners
          form one random cycle in which each arm is beaten by its successor by
          ``beater_gap``; every other pair of non-winners has a gap of random sign and
          magnitude uniform in ``[background_gap / 2, background_gap]``.
        - ``"bradley_terry"``: ``q_ij = sigmoid(theta_i - theta_j)`` with non-winner
          utilities uniform on ``[0, 2]`` and ``theta_w`` set so that ``w`` beats the
          runner-up by ``winner_gap`` (strong stochastic transitivity holds; ``w`` has
          the largest gap against every arm).
        - ``"cyclic_nonwinners"``: non-winners in rock-paper-scissors blocks of 3 (the
          last block takes the 1-2 left over) with within-block gaps ``beater_gap``;
          earlier blocks beat later blocks by ``background_gap``; ``w`` beats all by
          ``winner_gap``.
    num_arms : int, default 20
        ``K >= 2`` and at most :data:`MAX_INSTANCE_ARMS` (5000; the pair loops would take
        many minutes beyond). With fewer than 4 arms no cycle of non-winners exists and the
        cyclic families fall back to a transitive order among non-winners.
    winner_gap, beater_gap, background_gap : float
        Gaps ``Delta`` in ``(0, 1/2]``.
    seed : int, default 0
        An integer in ``[0, 2**63 - 1]``.

    Returns
    -------
    ndarray, shape (K, K)
        ``Q`` with ``Q + Q.T = 1`` off the diagonal and a Condorcet winner.

    Examples
    --------
    >>> Q = make_instance("small_winner_gap", num_arms=6, winner_gap=0.02, seed=0)
    >>> w = condorcet_winner(Q)
    >>> bool(np.allclose(np.delete(Q[w], w), 0.52))
    True
    """
    if kind not in INSTANCE_KINDS:
        valid = ", ".join(INSTANCE_KINDS)
        raise ValueError(f"unknown instance kind {kind!r}; valid kinds: {valid}")
    if isinstance(num_arms, bool) or not isinstance(num_arms, (int, np.integer)):
        raise TypeError(f"num_arms must be an integer, got {num_arms!r}")
    if num_arms < 2:
        raise ValueError(f"num_arms must be >= 2, got {num_arms}")
    check_size(num_arms, "num_arms", limit=MAX_INSTANCE_ARMS, what="arms")
    for name, gap in (
        ("winner_gap", winner_gap),
        ("beater_gap", beater_gap),
        ("background_gap", background_gap),
    ):
        check_float(gap, name, min=0.0, max=0.5, min_inclusive=False)
    rng = np.random.default_rng(check_seed(seed, "seed"))
    K = int(num_arms)
    Q = np.full((K, K), 0.5)
    # Build with the winner at index 0, non-winners 1..K-1, then relabel.
    nonw = np.arange(1, K)
    M = K - 1
    if kind == "bradley_terry":
        theta = np.zeros(K)
        theta[1:] = rng.uniform(0.0, 2.0, size=M)
        theta[0] = theta[1:].max() + np.log((0.5 + winner_gap) / (0.5 - winner_gap))
        Q = 1.0 / (1.0 + np.exp(-(theta[:, None] - theta[None, :])))  # (K, K)
    else:
        for i in nonw:
            _set_gap(Q, 0, int(i), winner_gap)
        if kind == "small_winner_gap":
            order = rng.permutation(nonw)
            for a in range(M):  # background pairs first, the cycle overwrites its edges
                for b in range(a + 1, M):
                    mag = rng.uniform(background_gap / 2, background_gap)
                    _set_gap(Q, int(order[a]), int(order[b]), mag if rng.random() < 0.5 else -mag)
            if M >= 3:
                for a in range(M):  # order[a + 1] beats order[a]; the cycle closes
                    _set_gap(Q, int(order[(a + 1) % M]), int(order[a]), beater_gap)
            else:
                for a in range(M - 1):
                    _set_gap(Q, int(order[a + 1]), int(order[a]), beater_gap)
        else:  # cyclic_nonwinners
            order = rng.permutation(nonw)
            nblocks = max(M // 3, 1)
            block = np.minimum(np.arange(M) // 3, nblocks - 1)
            for a in range(M):
                for b in range(a + 1, M):
                    if block[a] != block[b]:  # earlier blocks beat later ones
                        _set_gap(Q, int(order[a]), int(order[b]), background_gap)
            for blk in range(nblocks):
                members = order[block == blk]
                L = members.size
                if L >= 3:
                    for a in range(L):
                        _set_gap(Q, int(members[(a + 1) % L]), int(members[a]), beater_gap)
                else:
                    for a in range(L - 1):
                        _set_gap(Q, int(members[a + 1]), int(members[a]), beater_gap)
    perm = rng.permutation(K)  # new label of old arm a is perm[a]
    out = np.empty_like(Q)
    out[np.ix_(perm, perm)] = Q
    np.fill_diagonal(out, 0.5)
    return out
