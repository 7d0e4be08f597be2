"""Anomaly-detection metrics: image AUROC, pixel AUROC and AUPRO.

AUROC is the Mann-Whitney statistic with ties counted one half (equal to
``sklearn.metrics.roc_auc_score``). AUPRO (Bergmann et al., MVTec AD) is the area under
the per-region-overlap curve up to a false-positive rate ``fpr_limit``, divided by
``fpr_limit``: every connected component of every ground-truth mask is one region, PRO at
a threshold is the mean over regions of the region's fraction above the threshold, FPR
the fraction of normal pixels above it.
"""

from __future__ import annotations

import numpy as np
from scipy import ndimage
from scipy.stats import rankdata

from neurips26.common.validation import check_array, check_float


def _auroc(scores: np.ndarray, labels: np.ndarray, name: str) -> float:
    pos = labels.astype(bool)
    n_pos, n_neg = int(pos.sum()), int((~pos).sum())
    if n_pos == 0 or n_neg == 0:
        raise ValueError(f"{name} must contain both classes (got {n_pos} positive and "
                         f"{n_neg} negative)")  # fmt: skip
    ranks = rankdata(scores)  # average ranks: ties count 1/2
    return float((ranks[pos].sum() - n_pos * (n_pos + 1) / 2) / (n_pos * n_neg))


def _binary(x, name: str, ndim) -> np.ndarray:
    a = check_array(x, name, ndim=ndim, dtype=None)
    if not np.isin(a, (0, 1)).all():
        raise ValueError(f"{name} must hold only 0/1 (or bool) values")
    return a.astype(bool)


def image_auroc(scores, labels) -> float:
    """Image-level AUROC of anomaly scores against 0/1 labels.

    Parameters
    ----------
    scores : array_like (N,)
    labels : array_like (N,), 1 = anomalous

    Examples
    --------
    >>> image_auroc([0.1, 0.4, 0.35, 0.8], [0, 0, 1, 1])
    0.75
    """
    s = check_array(scores, "scores", ndim=1)
    y = _binary(labels, "labels", 1)
    if len(s) != len(y):
        raise ValueError(f"scores and labels must have the same length, got {len(s)} and "
                         f"{len(y)}")  # fmt: skip
    return _auroc(s, y, "labels")


def _maps_masks(maps, masks) -> tuple[np.ndarray, np.ndarray]:
    m = check_array(maps, "maps", ndim=3)
    g = _binary(masks, "masks", 3)
    if m.shape != g.shape:
        raise ValueError(f"masks must have the shape of maps, got {g.shape} and {m.shape}")
    return m, g


def pixel_auroc(maps, masks) -> float:
    """Pixel-level AUROC of anomaly maps against ground-truth masks, all pixels pooled.

    Parameters
    ----------
    maps : array_like (N, H, W)
    masks : array_like (N, H, W), bool

    Examples
    --------
    >>> pixel_auroc([[[0.0, 1.0], [0.2, 0.1]]], [[[0, 1], [0, 0]]])
    1.0
    """
    m, g = _maps_masks(maps, masks)
    return _auroc(m.ravel(), g.ravel(), "masks")


def aupro(maps, masks, *, fpr_limit: float = 0.3) -> float:
    """Normalised area under the per-region-overlap curve up to ``fpr_limit``.

    Parameters
    ----------
    maps : array_like (N, H, W)
    masks : array_like (N, H, W), bool (at least one anomalous and one normal pixel)
    fpr_limit : float in (0, 1]

    Returns
    -------
    float in [0, 1]

    Examples
    --------
    >>> maps = np.array([[[0.9, 0.8], [0.1, 0.2]]])
    >>> aupro(maps, maps > 0.5)
    1.0
    """
    m, g = _maps_masks(maps, masks)
    fpr_limit = check_float(fpr_limit, "fpr_limit", min=0, max=1, min_inclusive=False)
    if not g.any() or g.all():
        raise ValueError("masks must contain anomalous and normal pixels")
    # Per-pixel weights: each region contributes 1 / (num_regions * region size).
    weight = np.zeros(m.shape)
    regions = []
    for i in range(len(g)):
        lab, n = ndimage.label(g[i])
        for r in range(1, n + 1):
            regions.append((i, lab == r))
    for i, reg in regions:
        weight[i][reg] = 1.0 / (len(regions) * reg.sum())
    s, w, neg = m.ravel(), weight.ravel(), ~g.ravel()
    order = np.argsort(-s, kind="stable")
    s, w, neg = s[order], w[order], neg[order]
    fpr = np.cumsum(neg) / neg.sum()
    pro = np.cumsum(w)
    last = np.r_[s[1:] != s[:-1], True]  # one point per distinct threshold
    fpr, pro = np.r_[0.0, fpr[last]], np.r_[0.0, pro[last]]
    # Trapezoid up to fpr_limit, interpolating the curve at the limit.
    keep = fpr <= fpr_limit
    x, y = fpr[keep], pro[keep]
    if x[-1] < fpr_limit:
        j = int(np.searchsorted(fpr, fpr_limit))
        frac = (fpr_limit - fpr[j - 1]) / (fpr[j] - fpr[j - 1])
        y_lim = pro[j - 1] + (pro[j] - pro[j - 1]) * frac
        x, y = np.r_[x, fpr_limit], np.r_[y, y_lim]
    return float(np.clip(np.trapezoid(y, x) / fpr_limit, 0.0, 1.0))
