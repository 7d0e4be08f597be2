"""Instance-complexity proxies: the full-matrix quantity and the winner-gap quantity.

The abstract describes the sample complexity as a trade-off between the cost of locating
informative entries of the gap matrix and the cost of verifying one at confidence
``delta``. Our proxy (inferred, see the spec) rules out each non-winner ``i`` at the best
trade-off over ``s``: hitting one of the ``s`` largest gaps ``Delta_(s),i`` among
``{Delta_ji}_j`` by random search costs about ``K / s`` duels, verifying it
``log(K / delta) / Delta_(s),i^2``. The classical quantity only uses the winner's gaps.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from .bounds import _check_delta
from .environment import check_preference_matrix, condorcet_winner

__all__ = ["Complexity", "instance_complexity"]


@dataclass(frozen=True)
class Complexity:
    """Complexity proxies of an instance.

    Attributes
    ----------
    H_full : float
        ``sum_{i != w} min_s [K / s + log(K / delta) / Delta_(s),i^2]``.
    H_winner : float
        ``sum_{i != w} log(K / delta) / Delta_wi^2`` (``inf`` if some ``Delta_wi = 0``).
    per_arm_full : ndarray, shape (K,)
        The summands of ``H_full`` (0 for ``w``).
    winner : int
    """

    H_full: float
    H_winner: float
    per_arm_full: np.ndarray
    winner: int


def instance_complexity(Q, *, delta: float = 0.05) -> Complexity:
    """Full-matrix and winner-gap complexity proxies of a preference matrix.

    Parameters
    ----------
    Q : array_like, shape (K, K)
        Preference matrix with a Condorcet winner ``w``.
    delta : float, default 0.05
        Confidence ``delta`` in (0, 1).

    Returns
    -------
    Complexity

    Examples
    --------
    >>> Q = [[0.5, 0.51, 0.51], [0.49, 0.5, 0.9], [0.49, 0.1, 0.5]]
    >>> c = instance_complexity(Q, delta=0.05)
    >>> bool(c.H_full < c.H_winner)
    True
    """
    delta = _check_delta(delta)
    Q = check_preference_matrix(Q, require_winner=True)
    K = Q.shape[0]
    w = condorcet_winner(Q)
    Delta = Q - 0.5  # (K, K), Delta_ji = q_ji - 1/2
    L = math.log(K / delta)
    per_arm = np.zeros(K)
    for i in range(K):
        if i == w:
            continue
        gaps = np.sort(Delta[:, i])[::-1]  # Delta_(1),i >= Delta_(2),i >= ...
        gaps = gaps[gaps > 0]  # (S,) informative entries of column i
        s = np.arange(1, gaps.size + 1)
        per_arm[i] = float(np.min(K / s + L / gaps**2))  # search + verification
    dw = np.delete(Delta[w], w)  # (K - 1,) winner gaps Delta_wi
    H_w = float(np.sum(L / dw**2)) if np.all(dw > 0) else math.inf
    return Complexity(H_full=float(per_arm.sum()), H_winner=H_w, per_arm_full=per_arm, winner=w)
