"""Detectors on frozen RGB+depth features: ECFR, and the CFM and PatchCore baselines.

Every detector follows one pattern: ``fit(rgb, depth)`` on normal images (all classes at
once, except PatchCore, which keeps one memory bank per class) and ``score(rgb, depth)``
returning an :class:`AnomalyOutput`. ``fit_features`` / ``score_features`` take feature
maps directly, so several detectors can share one :class:`~.features.RGBDFeatureExtractor`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import torch
import torch.nn.functional as F
from sklearn.base import BaseEstimator
from torch import nn

from neurips26.common.torch import get_device, make_generator, seeded
from neurips26.common.train import array_batches, cosine_schedule, train
from neurips26.common.validation import (
    check_array,
    check_choice,
    check_float,
    check_int,
    check_seed,
)

from .features import Features, RGBDFeatureExtractor, check_rgbd
from .model import CROSS_MODES, ECFR, _check_pair, cosine_distance, reconstruction_loss

IMAGE_SCORES = ("max", "top1")


@dataclass(frozen=True)
class AnomalyOutput:
    """Anomaly maps and scores of a batch.

    Attributes
    ----------
    pixel_map : ndarray (N, H, W)
        ``A``, smoothed and at image size.
    image_score : ndarray (N,)
        ``max A`` (or the mean of the top 1% of pixels).
    rgb_map, depth_map : ndarray (N, h, w)
        The per-modality terms on the feature grid (before upsampling).
    """

    pixel_map: np.ndarray
    image_score: np.ndarray
    rgb_map: np.ndarray
    depth_map: np.ndarray


def gaussian_blur(maps: torch.Tensor, sigma: float) -> torch.Tensor:
    """Separable Gaussian smoothing of (N, H, W) maps (reflect padding, radius 4 sigma)."""
    sigma = check_float(sigma, "sigma", min=0, max=1000)
    if sigma == 0:
        return maps
    radius = max(1, math.ceil(4 * sigma))
    radius = min(radius, maps.shape[-1] - 1, maps.shape[-2] - 1)
    t = torch.arange(-radius, radius + 1, dtype=maps.dtype)
    k = torch.exp(-(t**2) / (2 * sigma**2))
    k = k / k.sum()
    x = maps[:, None]
    x = F.conv2d(F.pad(x, (radius, radius, 0, 0), mode="reflect"), k.view(1, 1, 1, -1))
    x = F.conv2d(F.pad(x, (0, 0, radius, radius), mode="reflect"), k.view(1, 1, -1, 1))
    return x[:, 0]


def combine_maps(rgb_map: torch.Tensor, depth_map: torch.Tensor, *, image_size,
                 sigma: float = 4.0, image_score: str = "max", combine: str = "sum"
                 ) -> AnomalyOutput:  # fmt: skip
    """``A = rgb_map + depth_map`` (or their product), upsampled, smoothed and scored."""
    check_choice(image_score, "image_score", IMAGE_SCORES)
    check_choice(combine, "combine", ("sum", "product"))
    if isinstance(image_size, (tuple, list)):
        size = tuple(check_int(s, "image_size", min=1, max=8192) for s in image_size)
    else:
        size = (check_int(image_size, "image_size", min=1, max=8192),) * 2
    a = rgb_map + depth_map if combine == "sum" else rgb_map * depth_map  # (N, h, w)
    a = F.interpolate(a[:, None], size=size, mode="bilinear", align_corners=False)[:, 0]
    a = gaussian_blur(a, sigma)
    flat = a.flatten(1)
    if image_score == "max":
        score = flat.amax(1)
    else:
        k = max(1, round(0.01 * flat.shape[1]))
        score = flat.topk(k, dim=1).values.mean(1)
    return AnomalyOutput(a.numpy().astype(np.float64), score.numpy().astype(np.float64),
                         rgb_map.numpy().astype(np.float64), depth_map.numpy().astype(np.float64))


@torch.no_grad()
def anomaly_maps(model: ECFR, f_rgb: torch.Tensor, f_depth: torch.Tensor, *, image_size,
                 sigma: float = 4.0, image_score: str = "max",
                 batch_size: int = 256) -> AnomalyOutput:  # fmt: skip
    """ECFR's anomaly maps: ``A = (1 - cos)_rgb + (1 - cos)_d``, upsampled and smoothed.

    Parameters
    ----------
    model : ECFR
    f_rgb, f_depth : Tensor (N, C_r, h, w), (N, C_d, h, w)
    image_size : int or (int, int)
        Output size ``(H, W)`` of the pixel map.
    sigma : float
        Gaussian smoothing in pixels (0: none).
    image_score : {"max", "top1"}

    Returns
    -------
    AnomalyOutput
    """
    if not isinstance(model, nn.Module):
        raise TypeError(f"model must be a torch.nn.Module, got {type(model).__name__}")
    f_rgb, f_depth = _check_pair(f_rgb, f_depth, "f_rgb", "f_depth")
    check_float(sigma, "sigma", min=0, max=1000)
    bs = check_int(batch_size, "batch_size", min=1, max=10**6)
    model.eval()
    dev = next(model.parameters()).device
    rm, dm = [], []
    for i in range(0, len(f_rgb), bs):
        r = model(f_rgb[i:i + bs].to(dev), f_depth[i:i + bs].to(dev))
        rm.append(cosine_distance(r.rgb_hat, f_rgb[i:i + bs].to(dev)).cpu())
        dm.append(cosine_distance(r.depth_hat, f_depth[i:i + bs].to(dev)).cpu())
    return combine_maps(torch.cat(rm), torch.cat(dm), image_size=image_size, sigma=sigma,
                        image_score=image_score)  # fmt: skip


class _FeatureDetector(BaseEstimator):
    """Shared fit/score plumbing: an extractor, then a head on its features."""

    def _extractor(self) -> RGBDFeatureExtractor:
        if self.extractor is None:
            return RGBDFeatureExtractor(seed=self.seed, device=self.device,
                                        fill_holes=self.fill_holes)  # fmt: skip
        if not isinstance(self.extractor, RGBDFeatureExtractor):
            raise TypeError(f"extractor must be an RGBDFeatureExtractor or None, got "
                            f"{type(self.extractor).__name__}")  # fmt: skip
        return self.extractor

    def _fit_extractor(self, rgb, depth):
        rgb, depth = check_rgbd(rgb, depth, fill_holes=self.fill_holes)  # holes filled here
        fx = self._extractor()
        if not hasattr(fx, "rgb_encoder_"):
            fx.fit(rgb, depth)
        self.extractor_ = fx
        return fx.transform(rgb, depth)

    def _features(self, rgb, depth):
        if not hasattr(self, "extractor_"):
            raise ValueError(f"this {type(self).__name__} is not fitted; call fit first")
        r, d = check_rgbd(rgb, depth, fill_holes=self.fill_holes)
        return self.extractor_.transform(r, d), r.shape[1:3]


def _check_features(features, name="features") -> Features:
    if not isinstance(features, Features):
        raise TypeError(f"{name} must be a Features object, got {type(features).__name__}")
    _check_pair(features.rgb, features.depth, f"{name}.rgb", f"{name}.depth")
    return features


class ECFRDetector(_FeatureDetector):
    """Unified multi-class RGB+depth anomaly detector by cross-modal feature reconstruction.

    Parameters
    ----------
    extractor : RGBDFeatureExtractor or None
        Frozen feature extractor (fitted on ``fit``'s images if not yet fitted; a new
        conv extractor when None).
    dim, num_blocks, cross_mode, use_afir, use_hac
        The :class:`~.model.ECFR` head (``cross_mode="same"``: the same-modality baseline).
    lr, max_iter, batch_size : training of the head (AdamW, cosine schedule).
    l2_weight : float
        Weight of the optional MSE term added to the cosine loss.
    sigma : float
        Gaussian smoothing of the pixel map (pixels).
    image_score : {"max", "top1"}
    fill_holes : bool
        Fill NaN depth holes instead of refusing them.
    seed : int
    device : {"cpu", "cuda"}

    Examples
    --------
    >>> from neurips26.papers.ecfr import make_synthetic_3dad
    >>> ds = make_synthetic_3dad(num_classes=1, num_train_per_class=4, num_test_per_class=2,
    ...                          image_size=16)
    >>> fx = RGBDFeatureExtractor(width=4, max_iter=2)
    >>> det = ECFRDetector(extractor=fx, dim=8, num_blocks=1, max_iter=2).fit(
    ...     ds.rgb_train, ds.depth_train)
    >>> det.score(ds.rgb_test, ds.depth_test).pixel_map.shape
    (2, 16, 16)
    """

    def __init__(self, *, extractor: RGBDFeatureExtractor | None = None, dim: int = 64,
                 num_blocks: int = 2, cross_mode: str = "gated", use_afir: bool = True,
                 use_hac: bool = True, lr: float = 1e-3, max_iter: int = 2000,
                 batch_size: int = 16, l2_weight: float = 0.0, sigma: float = 4.0,
                 image_score: str = "max", fill_holes: bool = False, seed: int = 0,
                 device: str = "cpu"):  # fmt: skip
        self.extractor = extractor
        self.dim = dim
        self.num_blocks = num_blocks
        self.cross_mode = cross_mode
        self.use_afir = use_afir
        self.use_hac = use_hac
        self.lr = lr
        self.max_iter = max_iter
        self.batch_size = batch_size
        self.l2_weight = l2_weight
        self.sigma = sigma
        self.image_score = image_score
        self.fill_holes = fill_holes
        self.seed = seed
        self.device = device

    def build(self, rgb_channels: int, depth_channels: int) -> ECFR:
        """The untrained head for features of these widths (seeded initialisation)."""
        check_choice(self.cross_mode, "cross_mode", CROSS_MODES)
        heads = 4 if check_int(self.dim, "dim", min=1, max=4096) % 4 == 0 else 1
        with seeded(check_seed(self.seed)):
            return ECFR(rgb_channels, depth_channels, dim=self.dim, num_blocks=self.num_blocks,
                        cross_mode=self.cross_mode, use_afir=self.use_afir,
                        use_hac=self.use_hac, num_heads=heads)  # fmt: skip

    def train_head(self, model: ECFR, features: Features) -> ECFR:
        """Train ``model`` in place on normal ``features`` (cosine loss, Step 5)."""
        features = _check_features(features)
        max_iter = check_int(self.max_iter, "max_iter", min=1, max=10**7)
        bs = min(check_int(self.batch_size, "batch_size", min=1, max=10**5), len(features.rgb))
        lr = check_float(self.lr, "lr", min=0, min_inclusive=False, max=10)
        l2 = check_float(self.l2_weight, "l2_weight", min=0, max=1e6)
        dev = get_device(self.device)
        gen = make_generator(self.seed)
        train(model, array_batches(features.rgb, features.depth, batch_size=bs, generator=gen),
              max_iter=max_iter, lr=lr, seed=self.seed, device=str(dev),
              lr_schedule=cosine_schedule(max_iter, warmup=min(50, max_iter // 10)),
              loss_fn=lambda m, b: reconstruction_loss(m, b[0], b[1], l2_weight=l2),
              desc=f"ECFR ({self.cross_mode})")  # fmt: skip
        return model.cpu().eval()

    def _validate(self) -> None:
        check_float(self.sigma, "sigma", min=0, max=1000)
        check_choice(self.image_score, "image_score", IMAGE_SCORES)
        check_seed(self.seed)
        get_device(self.device)

    def fit_features(self, features: Features) -> ECFRDetector:
        """Fit the head on precomputed normal features (``extractor`` is not used)."""
        self._validate()
        features = _check_features(features)
        self.model_ = self.train_head(self.build(features.rgb.shape[1], features.depth.shape[1]),
                                      features)  # fmt: skip
        return self

    def fit(self, rgb, depth) -> ECFRDetector:
        """Fit the extractor (if needed) and the head on normal images of all classes.

        Parameters
        ----------
        rgb : array_like (N, H, W, 3)
        depth : array_like (N, H, W)
        """
        return self.fit_features(self._fit_extractor(rgb, depth))

    def score_features(self, features: Features, *, image_size) -> AnomalyOutput:
        """Anomaly maps from precomputed features."""
        if not hasattr(self, "model_"):
            raise ValueError("this ECFRDetector is not fitted; call fit first")
        features = _check_features(features)
        return anomaly_maps(self.model_, features.rgb, features.depth, image_size=image_size,
                            sigma=self.sigma, image_score=self.image_score)  # fmt: skip

    def score(self, rgb, depth) -> AnomalyOutput:
        """Anomaly maps and image scores of test images (N, H, W, 3) and depths (N, H, W)."""
        f, size = self._features(rgb, depth)
        return self.score_features(f, image_size=size)


class _PixelMLP(nn.Module):
    def __init__(self, c_in: int, c_out: int, hidden: int):
        super().__init__()
        self.net = nn.Sequential(nn.Conv2d(c_in, hidden, 1), nn.GELU(),
                                 nn.Conv2d(hidden, hidden, 1), nn.GELU(),
                                 nn.Conv2d(hidden, c_out, 1))  # fmt: skip

    def forward(self, x):
        return self.net(x)


class CFMPair(nn.Module):
    """Crossmodal Feature Mapping: per-pixel MLPs RGB -> depth and depth -> RGB."""

    def __init__(self, rgb_channels: int, depth_channels: int, *, hidden: int = 256):
        super().__init__()
        c_r = check_int(rgb_channels, "rgb_channels", min=1, max=1 << 16)
        c_d = check_int(depth_channels, "depth_channels", min=1, max=1 << 16)
        h = check_int(hidden, "hidden", min=1, max=1 << 16)
        self.rgb_to_depth = _PixelMLP(c_r, c_d, h)
        self.depth_to_rgb = _PixelMLP(c_d, c_r, h)

    def forward(self, f_rgb, f_depth):
        from .model import Reconstruction

        return Reconstruction(self.depth_to_rgb(f_depth), self.rgb_to_depth(f_rgb))


class CFMDetector(ECFRDetector):
    """CFM baseline (Costanzino et al., CVPR 2024): two per-pixel crossmodal MLPs, trained
    with the cosine loss; the anomaly map is the product of the two cosine distances.

    Parameters as :class:`ECFRDetector` (``dim`` is the MLPs' hidden width; ``cross_mode``,
    ``num_blocks``, ``use_afir`` and ``use_hac`` are unused).
    """

    def __init__(self, *, extractor: RGBDFeatureExtractor | None = None, dim: int = 256,
                 lr: float = 1e-3, max_iter: int = 2000, batch_size: int = 16,
                 sigma: float = 4.0, image_score: str = "max", fill_holes: bool = False,
                 seed: int = 0, device: str = "cpu"):  # fmt: skip
        super().__init__(extractor=extractor, dim=dim, lr=lr, max_iter=max_iter,
                         batch_size=batch_size, sigma=sigma, image_score=image_score,
                         fill_holes=fill_holes, seed=seed, device=device)  # fmt: skip

    def build(self, rgb_channels: int, depth_channels: int) -> CFMPair:
        with seeded(check_seed(self.seed)):
            return CFMPair(rgb_channels, depth_channels, hidden=self.dim)

    def score_features(self, features: Features, *, image_size) -> AnomalyOutput:
        if not hasattr(self, "model_"):
            raise ValueError("this CFMDetector is not fitted; call fit first")
        features = _check_features(features)
        with torch.no_grad():
            r = self.model_(features.rgb, features.depth)
            rm = cosine_distance(r.rgb_hat, features.rgb)
            dm = cosine_distance(r.depth_hat, features.depth)
        return combine_maps(rm, dm, image_size=image_size, sigma=self.sigma,
                            image_score=self.image_score, combine="product")  # fmt: skip


def greedy_coreset(x: np.ndarray, num: int, *, seed: int = 0, proj_dim: int = 64) -> np.ndarray:
    """Indices of a greedy k-center coreset of the rows of ``x`` (PatchCore's subsampling),
    computed on a Gaussian random projection to ``proj_dim`` dimensions."""
    x = check_array(x, "x", ndim=2)
    num = check_int(num, "num", min=1, max=len(x))
    rng = np.random.default_rng(check_seed(seed))
    if x.shape[1] > proj_dim:
        x = x @ rng.normal(size=(x.shape[1], proj_dim)) / np.sqrt(proj_dim)
    idx = [int(rng.integers(len(x)))]
    dist = ((x - x[idx[0]]) ** 2).sum(1)
    for _ in range(num - 1):
        j = int(dist.argmax())
        idx.append(j)
        dist = np.minimum(dist, ((x - x[j]) ** 2).sum(1))
    return np.asarray(idx)


class PatchCoreDetector(_FeatureDetector):
    """PatchCore-style kNN baseline: a memory bank of concatenated RGB+depth patch features
    per class (not unified: the class of each test image must be given), a greedy coreset,
    and the distance to the nearest bank patch as the anomaly score.

    Parameters
    ----------
    extractor : RGBDFeatureExtractor or None
    coreset_fraction : float in (0, 1]
    sigma : float
    image_score : {"max", "top1"}
    fill_holes : bool
    seed : int
    """

    def __init__(self, *, extractor: RGBDFeatureExtractor | None = None,
                 coreset_fraction: float = 0.1, sigma: float = 4.0, image_score: str = "max",
                 fill_holes: bool = False, seed: int = 0, device: str = "cpu"):  # fmt: skip
        self.extractor = extractor
        self.coreset_fraction = coreset_fraction
        self.sigma = sigma
        self.image_score = image_score
        self.fill_holes = fill_holes
        self.seed = seed
        self.device = device

    @staticmethod
    def _patches(features: Features) -> np.ndarray:
        f = torch.cat([features.rgb, features.depth], 1)  # (N, C, h, w)
        f = F.avg_pool2d(f, 3, 1, 1, count_include_pad=False)  # PatchCore's local aggregation
        return f.permute(0, 2, 3, 1).reshape(-1, f.shape[1]).numpy().astype(np.float64)

    def _classes(self, class_id, n: int) -> np.ndarray:
        c = check_array(class_id, "class_id", ndim=1, dtype=None)
        if c.dtype.kind not in "iu":
            raise TypeError(f"class_id must hold integers, got dtype {c.dtype}")
        if len(c) != n:
            raise ValueError(f"class_id must have one entry per image ({n}), got {len(c)}")
        return c.astype(int)

    def fit_features(self, features: Features, class_id) -> PatchCoreDetector:
        """Build one memory bank per class from normal features."""
        from sklearn.neighbors import NearestNeighbors

        features = _check_features(features)
        check_float(self.sigma, "sigma", min=0, max=1000)
        check_choice(self.image_score, "image_score", IMAGE_SCORES)
        frac = check_float(self.coreset_fraction, "coreset_fraction", min=0, max=1,
                           min_inclusive=False)  # fmt: skip
        cls = self._classes(class_id, len(features.rgb))
        self.banks_ = {}
        for c in np.unique(cls):
            sel = torch.as_tensor(cls == c)
            p = self._patches(Features(features.rgb[sel], features.depth[sel]))
            if frac < 1:
                p = p[greedy_coreset(p, max(1, int(frac * len(p))), seed=self.seed)]
            self.banks_[int(c)] = NearestNeighbors(n_neighbors=1).fit(p)
        return self

    def fit(self, rgb, depth, class_id) -> PatchCoreDetector:
        """Fit on normal images with their class ids (N,)."""
        return self.fit_features(self._fit_extractor(rgb, depth), class_id)

    def score_features(self, features: Features, class_id, *, image_size) -> AnomalyOutput:
        if not hasattr(self, "banks_"):
            raise ValueError("this PatchCoreDetector is not fitted; call fit first")
        features = _check_features(features)
        cls = self._classes(class_id, len(features.rgb))
        unknown = set(np.unique(cls).tolist()) - set(self.banks_)
        if unknown:
            raise ValueError(f"class_id holds classes without a memory bank: {sorted(unknown)}")
        n, _, h, w = features.rgb.shape
        dist = np.zeros((n, h, w))
        for c in np.unique(cls):
            sel = np.nonzero(cls == c)[0]
            p = self._patches(Features(features.rgb[sel], features.depth[sel]))
            d, _ = self.banks_[int(c)].kneighbors(p)
            dist[sel] = d[:, 0].reshape(len(sel), h, w)
        t = torch.as_tensor(dist, dtype=torch.float32)
        return combine_maps(t, torch.zeros_like(t), image_size=image_size, sigma=self.sigma,
                            image_score=self.image_score)  # fmt: skip

    def score(self, rgb, depth, class_id) -> AnomalyOutput:
        f, size = self._features(rgb, depth)
        return self.score_features(f, class_id, image_size=size)
