"""Retrieval quality: mean average precision over queries, and accuracy at a threshold."""

from __future__ import annotations

import numpy as np

from neurips26.common.validation import check_array

__all__ = ["average_precision", "retrieval_metrics"]


def average_precision(scores: np.ndarray, labels: np.ndarray) -> float:
    """Average precision of one ranking (higher score = ranked first; ties broken
    pessimistically, as scikit-learn's step-wise AP does).

    ``AP = sum_k P@k * rel_k / #rel``; NaN when no item is relevant.

    Examples
    --------
    >>> average_precision(np.array([3.0, 2.0, 1.0]), np.array([True, False, True]))
    0.8333333333333333
    """
    s = check_array(scores, "scores", finite=False, min_size=0)
    y = np.asarray(labels, dtype=bool)
    if s.ndim != 1 or s.shape != y.shape:
        raise ValueError(f"scores, labels: expected equal 1-D shapes, got {s.shape}, {y.shape}")
    if not np.isfinite(s).all():
        raise ValueError("scores: must be finite (no NaN or inf)")
    if not y.any():
        return float("nan")
    # Group tied scores: every item of a tie block gets the block's final rank.
    order = np.argsort(-s, kind="stable")
    s_sorted, y_sorted = s[order], y[order]
    hits = np.cumsum(y_sorted)
    ends = np.r_[np.flatnonzero(np.diff(s_sorted) != 0), len(s) - 1]
    ap, prev_hits = 0.0, 0
    for end in ends:
        new = hits[end] - prev_hits
        ap += new * hits[end] / (end + 1)
        prev_hits = hits[end]
    return float(ap / y.sum())


def retrieval_metrics(
    scores: np.ndarray, labels: np.ndarray, *, threshold: float = 0.0, per_query: bool = True
) -> dict[str, float | np.ndarray]:
    """MAP and accuracy of a score matrix.

    Parameters
    ----------
    scores : numpy.ndarray, shape (n_q, n_c)
        ``s(Q_i, G_ij)``; each row ranks one query's corpus.
    labels : numpy.ndarray of bool, shape (n_q, n_c)
        ``y(Q_i, G_ij)``.
    threshold : float
        Pairs with ``score > threshold`` are predicted relevant (for the accuracy).
    per_query : bool
        Also return the per-query APs.

    Returns
    -------
    dict
        ``map`` (mean over queries with a relevant item), ``accuracy`` and, with
        ``per_query``, ``ap`` of shape (n_q,) (NaN for queries without relevant items).

    Examples
    --------
    >>> m = retrieval_metrics(np.array([[2.0, 1.0], [1.0, 2.0]]),
    ...                       np.array([[True, False], [True, False]]))
    >>> m["map"], m["accuracy"]
    (0.75, 0.5)
    """
    s = check_array(scores, "scores", finite=False, min_size=0)
    y = np.asarray(labels)
    if s.ndim != 2 or s.shape != y.shape or s.size == 0:
        raise ValueError(
            f"scores, labels: expected equal non-empty 2-D shapes, got {s.shape}, {y.shape}"
        )
    if y.dtype != bool:
        raise TypeError(f"labels: expected booleans, got dtype {y.dtype}")
    if not np.isfinite(s).all():
        raise ValueError("scores: must be finite (no NaN or inf)")
    if isinstance(threshold, bool) or not isinstance(threshold, (int, float, np.number)):
        raise TypeError(f"threshold must be a real number, got {type(threshold).__name__}")
    threshold = float(threshold)
    if not np.isfinite(threshold):
        raise ValueError(f"threshold: must be finite, got {threshold}")
    ap = np.array([average_precision(s[i], y[i]) for i in range(len(s))])
    out: dict[str, float | np.ndarray] = {
        "map": float(np.nanmean(ap)) if np.isfinite(ap).any() else float("nan"),
        "accuracy": float(((s > threshold) == y).mean()),
    }
    if per_query:
        out["ap"] = ap
    return out
