"""Storage baselines at a byte budget: PCA + uint8, temporal subsampling, k-means.

Each fits the largest setting whose stored size (the same 21-byte header and per-video
frame counts as :class:`FeatureMemory`, plus its own model and payload) is at most the
budget, and returns the features a downstream model would train on.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import numpy as np

from neurips26.common.validation import check_int, check_seed

from .memory import HEADER_BYTES
from .model import _check_videos


@dataclass(frozen=True)
class BaselineMemory:
    """A baseline's stored representation.

    Attributes
    ----------
    name : str
    setting : int
        PCA components, subsampling stride or k-means clusters.
    nbytes : int
        All-in stored bytes (model part included).
    model_nbytes : int
        Bytes of its model part (PCA basis, centroids; 0 for subsampling).
    features : list of ndarray (T_i, D)
        The reconstructed training features.
    """

    name: str
    setting: int
    nbytes: int
    model_nbytes: int
    features: list

    @property
    def codes_nbytes(self) -> int:
        return self.nbytes - self.model_nbytes


def _container(videos) -> int:
    return HEADER_BYTES + 4 * len(videos)


def _split(x, videos):
    off = np.r_[0, np.cumsum([len(v) for v in videos])]
    return [x[a:b].astype(np.float32) for a, b in itertools.pairwise(off)]


def _infeasible(name, budget, need):
    raise ValueError(f"budget_bytes {budget} is infeasible for {name}: its smallest setting "
                     f"takes {need} bytes")


def pca_uint8_memory(videos, budget_bytes: int, *, seed: int = 0) -> BaselineMemory:
    """PCA to k dimensions, each scalar-quantized to uint8 with a per-component range.

    Stored: mean and basis (float32, (k + 1) D), per-component min and step (float32, 2k),
    and k bytes per frame; k is the largest that fits the budget.

    >>> v = [np.random.default_rng(0).normal(size=(50, 6))]
    >>> b = pca_uint8_memory(v, 400)
    >>> b.setting >= 1 and b.nbytes <= 400
    True
    """
    from sklearn.decomposition import PCA

    videos = _check_videos(videos)
    budget = check_int(budget_bytes, "budget_bytes", min=1, max=2**62)
    seed = check_seed(seed)
    x = np.concatenate(videos).astype(np.float64)
    N, D = x.shape
    if N < 2:
        raise ValueError(f"videos must hold at least 2 frames for PCA, got {N}")

    def size(k):
        return _container(videos) + 4 * (k + 1) * D + 8 * k + N * k

    k = min(D, N)
    while k >= 1 and size(k) > budget:
        k -= 1
    if k < 1:
        _infeasible("pca_uint8", budget, size(1))
    pca = PCA(k, random_state=seed % 2**32).fit(x)
    z = pca.transform(x)
    lo, hi = z.min(0), z.max(0)
    step = np.where(hi > lo, (hi - lo) / 255.0, 1.0)
    q = np.clip(np.round((z - lo) / step), 0, 255).astype(np.uint8)  # the stored bytes
    rec = pca.inverse_transform(q * step + lo)
    return BaselineMemory("pca_uint8", k, size(k), 4 * (k + 1) * D + 8 * k, _split(rec, videos))


def subsample_memory(videos, budget_bytes: int) -> BaselineMemory:
    """Keep every s-th frame (float32) and repeat it at training time; s the smallest that fits.

    >>> v = [np.arange(12.0).reshape(6, 2)]
    >>> b = subsample_memory(v, 21 + 4 + 3 * 8)
    >>> b.setting, b.features[0][:, 0].tolist()
    (2, [0.0, 0.0, 4.0, 4.0, 8.0, 8.0])
    """
    videos = _check_videos(videos)
    budget = check_int(budget_bytes, "budget_bytes", min=1, max=2**62)
    D = videos[0].shape[1]

    def size(s):
        return _container(videos) + 4 * D * sum(-(-len(v) // s) for v in videos)

    longest = max(len(v) for v in videos)
    if size(longest) > budget:
        _infeasible("subsample", budget, size(longest))
    lo, hi = 1, longest  # the smallest stride s with size(s) <= budget (size falls with s)
    while lo < hi:
        mid = (lo + hi) // 2
        if size(mid) <= budget:
            hi = mid
        else:
            lo = mid + 1
    s = lo
    feats = [np.repeat(v[::s], s, axis=0)[:len(v)] for v in videos]
    return BaselineMemory("subsample", s, size(s), 0, feats)


def kmeans_memory(videos, budget_bytes: int, *, max_clusters: int = 256,
                  seed: int = 0) -> BaselineMemory:
    """One k-means codebook (float32 centroids) and one byte per frame (K <= 256).

    >>> v = [np.random.default_rng(0).normal(size=(40, 3))]
    >>> b = kmeans_memory(v, 21 + 4 + 40 + 4 * 3 * 5)
    >>> b.setting
    5
    """
    from sklearn.cluster import KMeans

    videos = _check_videos(videos)
    budget = check_int(budget_bytes, "budget_bytes", min=1, max=2**62)
    max_clusters = check_int(max_clusters, "max_clusters", min=1, max=256)
    seed = check_seed(seed)
    x = np.concatenate(videos).astype(np.float64)
    N, D = x.shape

    def size(k):
        return _container(videos) + 4 * k * D + N

    k = min(max_clusters, N, (budget - _container(videos) - N) // (4 * D))
    if k < 1:
        _infeasible("kmeans", budget, size(1))
    km = KMeans(int(k), n_init=1, max_iter=50, random_state=seed % 2**32).fit(x)
    rec = km.cluster_centers_[km.labels_]
    return BaselineMemory("kmeans", int(k), size(k), 4 * int(k) * D, _split(rec, videos))
