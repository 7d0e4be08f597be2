"""Exact weighted least-squares segmentation (shared by detection and the baselines)."""

from __future__ import annotations

from typing import Any

import numpy as np

from neurips26.common.validation import check_array, check_int

__all__ = ["offline_change_points"]


def offline_change_points(
    signal: Any, *, num_change_points: int, weights: Any = None
) -> np.ndarray:
    """Exact least-squares segmentation of a 1-D signal into ``N + 1`` constant pieces.

    Minimises ``sum_k sum_{i in segment k} w_i (y_i - mean_w(segment k))^2`` over the
    ``N`` breakpoints by dynamic programming on a precomputed segment-cost matrix, in
    ``O(N K^2)`` vectorised operations.

    Parameters
    ----------
    signal : array_like, shape (K,)
        ``y_i``, e.g. the mean observation at each grid point.
    num_change_points : int
        ``N``, with ``1 <= N < K``.
    weights : array_like, shape (K,), optional
        ``w_i > 0`` (e.g. sample counts); equal weights by default.

    Returns
    -------
    ndarray of int, shape (N,)
        Breakpoints in the ``ruptures`` convention: segment ``k`` is
        ``signal[b_{k-1}:b_k]``, so a change lies between ``signal[b_k - 1]`` and
        ``signal[b_k]``. With equal weights this equals
        ``ruptures.Dynp(model="l2", min_size=1, jump=1).fit(signal).predict(n_bkps=N)[:-1]``.

    Examples
    --------
    >>> offline_change_points([0.0, 0.1, 0.0, 2.0, 2.1, 0.0], num_change_points=2).tolist()
    [3, 5]
    """
    y = check_array(signal, "signal", ndim=None, min_size=0, finite=False).reshape(-1)
    K = y.size
    if not np.all(np.isfinite(y)):
        raise ValueError("signal must be finite (no NaN or inf)")
    if K < 2:
        raise ValueError(f"signal needs at least 2 points to hold a change point, got {K}")
    N = check_int(num_change_points, "num_change_points")
    if not 1 <= N < K:
        raise ValueError(f"num_change_points must be in [1, K - 1] = [1, {K - 1}], got {N}")
    w = np.ones(K) if weights is None else np.asarray(weights, dtype=float).reshape(-1)
    if w.shape != (K,) or np.any(~(w > 0)):
        raise ValueError("weights must be positive with the same shape as signal")
    # The segmentation is unchanged by y -> (y - c) / s and w -> w / t (every cost scales
    # by one positive factor): centre and scale both, so that huge inputs cannot overflow
    # y^2 and the sums keep their precision.
    y = y - np.median(y)
    spread = float(np.max(np.abs(y)))
    if spread > 0:
        y = y / spread
    w = w / w.max()
    # cumulative sums with a leading zero: segment [i, j) uses S[j] - S[i]
    W = np.concatenate([[0.0], np.cumsum(w)])  # (K + 1,)
    S1 = np.concatenate([[0.0], np.cumsum(w * y)])
    S2 = np.concatenate([[0.0], np.cumsum(w * y * y)])
    with np.errstate(divide="ignore", invalid="ignore"):
        dw = W[None, :] - W[:, None]  # (K + 1, K + 1) weight of segment [i, j)
        d1 = S1[None, :] - S1[:, None]
        cost = (S2[None, :] - S2[:, None]) - d1**2 / dw  # weighted SSE of [i, j)
    cost = np.maximum(cost, 0.0)
    cost[np.tri(K + 1, dtype=bool)] = np.inf  # only segments [i, j) with j > i
    F = cost[0].copy()  # (K + 1,) best cost of y[:j] with 0 breakpoints
    back = []
    for _ in range(N):
        total = F[:, None] + cost  # (K + 1, K + 1): first part y[:i], last segment [i, j)
        arg = np.argmin(total, axis=0)  # (K + 1,)
        F = total[arg, np.arange(K + 1)]
        back.append(arg)
    bkps = []
    j = K
    for arg in reversed(back):
        j = int(arg[j])
        bkps.append(j)
    return np.array(sorted(bkps), dtype=np.int64)
