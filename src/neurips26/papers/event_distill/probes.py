"""The probe suite: what an RGB network's decisions rely on.

- Shape bias on cue-conflict images: ``shape / (shape + texture)`` decisions (Geirhos et
  al., 2019).
- Colour invariance: accuracy under grayscale, random hue rotation (about the luma axis,
  in YIQ) and channel permutation.
- Frequency robustness (Yin et al., 2019): additive Gaussian noise filtered to a radial
  frequency band, and Gaussian blur.
- Geometric disruption: patch shuffling and elastic warps.
- Early layers: chromatic energy and radial spectral centroid of the first conv's filters.
- A downstream prior: a linear probe on frozen features of a new shape task.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import torch
from scipy import ndimage
from sklearn.linear_model import LogisticRegression
from torch import nn

from neurips26.common.validation import check_array, check_float, check_int, check_seed

from .distill import predict_logits
from .scenes import ShapeTextureData

#: Radial frequency bands in cycles per pixel (the spec's).
BANDS = {"low": (0.0, 0.15), "mid": (0.15, 0.35), "high": (0.35, 0.5)}
_LUMA = np.array([0.299, 0.587, 0.114])
_RGB2YIQ = np.array([[0.299, 0.587, 0.114], [0.596, -0.274, -0.322], [0.211, -0.523, 0.312]])


def _images(x, name="x"):
    arr = check_array(x, name, ndim=4, dtype=np.float64)
    if arr.shape[1] != 3:
        raise ValueError(f"{name} must have shape (N, 3, H, W), got {arr.shape}")
    return arr


def _rng(seed):
    return np.random.default_rng(check_seed(seed))


def radial_frequency(h: int, w: int) -> np.ndarray:
    """``|f|`` in cycles per pixel of each 2-D DFT bin, ``(h, w)``."""
    h = check_int(h, "h", min=1, max=1 << 14)
    w = check_int(w, "w", min=1, max=1 << 14)
    fy, fx = np.meshgrid(np.fft.fftfreq(h), np.fft.fftfreq(w), indexing="ij")
    return np.hypot(fy, fx)


def band_noise(shape, band=(0.35, 0.5), *, seed: int = 0) -> np.ndarray:
    """Gaussian noise band-limited to radial frequencies ``[lo, hi)``, unit RMS.

    Parameters
    ----------
    shape : tuple of int
        ``(..., H, W)``; the filter acts on the last two axes.
    band : (float, float)
        ``0 <= lo < hi`` in cycles per pixel (0.5 is Nyquist along an axis; bins up to
        ``sqrt(2) / 2`` exist along diagonals and ``hi > 0.5`` includes them).
    seed : int

    Examples
    --------
    >>> n = band_noise((2, 16, 16), (0.15, 0.35), seed=0)
    >>> n.shape, round(float(np.sqrt((n ** 2).mean())), 6)
    ((2, 16, 16), 1.0)
    """
    if not isinstance(shape, (tuple, list)):
        raise TypeError(f"shape must be a tuple of ints, got {type(shape).__name__}")
    shape = tuple(check_int(s, "shape", min=1, max=1 << 14) for s in shape)
    if len(shape) < 2:
        raise ValueError(f"shape must have at least 2 dimensions, got {shape}")
    b = check_array(band, "band", shape=(2,))
    if not 0 <= b[0] < b[1] <= 1:
        raise ValueError(f"band must satisfy 0 <= lo < hi <= 1, got {tuple(b)}")
    z = _rng(seed).normal(size=shape)
    r = radial_frequency(*shape[-2:])
    mask = (r >= b[0]) & (r < b[1])
    out = np.real(np.fft.ifft2(np.fft.fft2(z) * mask))
    rms = np.sqrt((out**2).mean(axis=(-2, -1), keepdims=True))
    return out / np.where(rms > 0, rms, 1.0)


def add_band_noise(x, band, strength: float, *, seed: int = 0) -> np.ndarray:
    """``clip(x + strength * n)`` with :func:`band_noise` ``n`` per image and channel."""
    x = _images(x)
    s = check_float(strength, "strength", min=0, max=10)
    return np.clip(x + s * band_noise(x.shape, band, seed=seed), 0, 1)


def grayscale(x) -> np.ndarray:
    """Replace each pixel by its luma in all three channels."""
    x = _images(x)
    y = np.tensordot(_LUMA, x, axes=([0], [1]))  # (N, H, W)
    return np.repeat(y[:, None], 3, axis=1)


def hue_rotate(x, *, seed: int = 0) -> np.ndarray:
    """Rotate each image's chroma (I, Q of YIQ) by a random angle in ``[pi/4, 7pi/4]``.

    Luma is unchanged (up to clipping to [0, 1]).
    """
    x = _images(x)
    ang = _rng(seed).uniform(np.pi / 4, 7 * np.pi / 4, size=len(x))
    yiq = np.einsum("ij,njhw->nihw", _RGB2YIQ, x)
    c, s = np.cos(ang)[:, None, None], np.sin(ang)[:, None, None]
    i, q = yiq[:, 1], yiq[:, 2]
    yiq = np.stack([yiq[:, 0], c * i - s * q, s * i + c * q], axis=1)
    return np.clip(np.einsum("ij,njhw->nihw", np.linalg.inv(_RGB2YIQ), yiq), 0, 1)


def channel_permute(x, *, seed: int = 0) -> np.ndarray:
    """Permute each image's RGB channels by a random non-identity permutation."""
    x = _images(x)
    perms = np.array([[0, 2, 1], [1, 0, 2], [1, 2, 0], [2, 0, 1], [2, 1, 0]])
    pick = perms[_rng(seed).integers(0, len(perms), size=len(x))]
    return np.take_along_axis(x, pick[:, :, None, None], axis=1)


def gaussian_blur(x, sigma: float) -> np.ndarray:
    """Gaussian low-pass of each channel, ``sigma`` in pixels."""
    x = _images(x)
    sigma = check_float(sigma, "sigma", min=0, max=100)
    return ndimage.gaussian_filter(x, (0, 0, sigma, sigma), mode="reflect")


def patch_shuffle(x, grid: int = 4, *, seed: int = 0) -> np.ndarray:
    """Cut each image into ``grid x grid`` patches and shuffle them."""
    x = _images(x)
    grid = check_int(grid, "grid", min=1, max=min(x.shape[2:]))
    N, C, H, W = x.shape
    if H % grid or W % grid:
        raise ValueError(f"grid must divide the image size {H}x{W}, got {grid}")
    ph, pw = H // grid, W // grid
    p = x.reshape(N, C, grid, ph, grid, pw).transpose(0, 2, 4, 1, 3, 5).reshape(
        N, grid * grid, C, ph, pw)
    rng = _rng(seed)
    order = np.stack([rng.permutation(grid * grid) for _ in range(N)])
    p = np.take_along_axis(p, order[:, :, None, None, None], axis=1)
    return p.reshape(N, grid, grid, C, ph, pw).transpose(0, 3, 1, 4, 2, 5).reshape(x.shape)


def elastic_warp(x, alpha: float = 2.0, sigma: float = 3.0, *, seed: int = 0) -> np.ndarray:
    """Elastic deformation (Simard et al., 2003): smooth random displacement fields.

    Parameters
    ----------
    alpha : float
        Largest RMS displacement scale in pixels.
    sigma : float
        Smoothness of the field (Gaussian sigma in pixels).
    """
    x = _images(x)
    alpha = check_float(alpha, "alpha", min=0, max=100)
    sigma = check_float(sigma, "sigma", min=0.1, max=100)
    N, C, H, W = x.shape
    rng = _rng(seed)
    yy, xx = np.meshgrid(np.arange(H), np.arange(W), indexing="ij")
    out = np.empty_like(x)
    for n in range(N):
        d = ndimage.gaussian_filter(rng.uniform(-1, 1, size=(2, H, W)), (0, sigma, sigma))
        d *= alpha / max(np.sqrt((d**2).mean()), 1e-12)
        coords = [yy + d[0], xx + d[1]]
        for c in range(C):
            out[n, c] = ndimage.map_coordinates(x[n, c], coords, order=1, mode="reflect")
    return out


def _first_conv(model: nn.Module) -> np.ndarray:
    for m in model.modules():
        if isinstance(m, nn.Conv2d) and m.weight.requires_grad is not None:
            w = m.weight.detach().cpu().numpy()
            if w.shape[1] < 3:
                raise ValueError(f"model: first conv has {w.shape[1]} input channels; "
                                 "filter analysis needs RGB (3)")
            return w[:, :3]  # (O, 3, k, k); an edge channel, if any, is left out
    raise ValueError("model: has no Conv2d layer")


def filter_chroma(model: nn.Module) -> float:
    """Chromatic energy of the first-layer filters, ``sum ||f - lum(f)||^2 / sum ||f||^2``.

    ``lum(f)`` replaces each of a filter's RGB slices by their mean (the projection onto
    the achromatic direction); 0 for colour-blind filters, up to 1.

    Examples
    --------
    >>> conv = nn.Conv2d(3, 1, 3, bias=False)
    >>> with torch.no_grad():
    ...     _ = conv.weight.fill_(1.0)
    >>> filter_chroma(nn.Sequential(conv))
    0.0
    """
    if not isinstance(model, nn.Module):
        raise TypeError(f"model must be a torch.nn.Module, got {type(model).__name__}")
    f = _first_conv(model)
    lum = f.mean(axis=1, keepdims=True)
    total = float((f**2).sum())
    return float(((f - lum) ** 2).sum() / total) if total > 0 else 0.0


def filter_freq_centroid(model: nn.Module, *, pad: int = 16) -> float:
    """Power-weighted mean radial frequency (cycles/pixel) of the first-layer filters.

    Each filter is zero-padded to ``pad x pad``; its power spectrum is summed over
    channels and filters.
    """
    if not isinstance(model, nn.Module):
        raise TypeError(f"model must be a torch.nn.Module, got {type(model).__name__}")
    pad = check_int(pad, "pad", min=2, max=1024)
    f = _first_conv(model)
    if f.shape[-1] > pad:
        raise ValueError(f"pad must be at least the kernel size {f.shape[-1]}, got {pad}")
    P = (np.abs(np.fft.fft2(f, s=(pad, pad))) ** 2).sum(axis=(0, 1))
    r = radial_frequency(pad, pad)
    return float((r * P).sum() / P.sum()) if P.sum() > 0 else 0.0


def accuracy_on(model: nn.Module, x, y) -> float:
    """Top-1 accuracy of ``model`` on images ``x`` (N, 3, H, W) with labels ``y`` (N,)."""
    x = _images(x)
    y = check_array(y, "y", shape=(len(x),), dtype=None)
    return float((predict_logits(model, x).argmax(-1) == y).mean())


def shape_bias(model: nn.Module, cue_conflict: ShapeTextureData) -> float:
    """``shape / (shape + texture)`` over cue-conflict decisions (NaN if neither ever)."""
    if not isinstance(cue_conflict, ShapeTextureData):
        raise TypeError("cue_conflict must be a ShapeTextureData")
    if np.any(cue_conflict.shape_y == cue_conflict.texture_y):
        raise ValueError("cue_conflict: shape and texture classes must differ in every image")
    pred = predict_logits(model, _images(cue_conflict.x, "cue_conflict")).argmax(-1)
    s = int((pred == cue_conflict.shape_y).sum())
    t = int((pred == cue_conflict.texture_y).sum())
    return s / (s + t) if s + t else float("nan")


@dataclass(frozen=True)
class ProbeReport:
    """Results of :func:`probe_suite` (accuracies in [0, 1]).

    Attributes
    ----------
    clean_acc : float
    shape_bias : float
    color_acc : dict
        ``grayscale``, ``hue``, ``permute``.
    band_noise_acc : dict
        ``"<band>_<strength>"`` (bands of :data:`BANDS`).
    blur_acc : dict
        ``"sigma<s>"``.
    geometric_acc : dict
        ``shuffle``, ``elastic``.
    filter_chroma, filter_freq_centroid : float
    """

    clean_acc: float
    shape_bias: float
    color_acc: dict = field(default_factory=dict)
    band_noise_acc: dict = field(default_factory=dict)
    blur_acc: dict = field(default_factory=dict)
    geometric_acc: dict = field(default_factory=dict)
    filter_chroma: float = float("nan")
    filter_freq_centroid: float = float("nan")

    @property
    def color_drop(self) -> dict:
        """Accuracy drop under each colour shift."""
        return {k: self.clean_acc - v for k, v in self.color_acc.items()}

    def flat(self) -> dict[str, float]:
        """All numbers under flat names (``band_high_0.2``, ``color_hue``, ...)."""
        out = {"clean_acc": self.clean_acc, "shape_bias": self.shape_bias,
               "filter_chroma": self.filter_chroma,
               "filter_freq_centroid": self.filter_freq_centroid}
        for prefix, d in (("color", self.color_acc), ("band", self.band_noise_acc),
                          ("blur", self.blur_acc), ("geo", self.geometric_acc)):
            out.update({f"{prefix}_{k}": float(v) for k, v in d.items()})
        return out


def probe_suite(model: nn.Module, clean: ShapeTextureData,
                cue_conflict: ShapeTextureData | None = None, *,
                strengths: tuple[float, ...] = (0.05, 0.1, 0.2),
                blur_sigmas: tuple[float, ...] = (1.0, 1.5), shuffle_grid: int = 4,
                seed: int = 0) -> ProbeReport:
    """Run every probe on an RGB classifier.

    Parameters
    ----------
    model : nn.Module
        Maps RGB ``(B, 3, H, W)`` to logits over the shape classes.
    clean : ShapeTextureData
        Test images labelled by ``shape_y``.
    cue_conflict : ShapeTextureData, optional
        For the shape bias (NaN without).
    strengths : tuple of float
        RMS of the band-limited noise.
    blur_sigmas : tuple of float
    shuffle_grid : int
    seed : int

    Returns
    -------
    ProbeReport
    """
    if not isinstance(model, nn.Module):
        raise TypeError(f"model must be a torch.nn.Module, got {type(model).__name__}")
    if not isinstance(clean, ShapeTextureData):
        raise TypeError(f"clean must be a ShapeTextureData, got {type(clean).__name__}")
    x, y = _images(clean.x, "clean"), clean.shape_y
    for name, v in (("strengths", strengths), ("blur_sigmas", blur_sigmas)):
        if not isinstance(v, (tuple, list)) or not v:
            raise TypeError(f"{name} must be a non-empty tuple of floats, got {v!r}")
    strengths = tuple(check_float(s, "strengths", min=0, max=10) for s in strengths)
    blur_sigmas = tuple(check_float(s, "blur_sigmas", min=0, max=100) for s in blur_sigmas)
    shuffle_grid = check_int(shuffle_grid, "shuffle_grid", min=1, max=min(x.shape[2:]))
    if x.shape[2] % shuffle_grid or x.shape[3] % shuffle_grid:
        raise ValueError(f"shuffle_grid must divide the image size, got {shuffle_grid}")
    seed = check_seed(seed)
    acc = lambda z: accuracy_on(model, z, y)  # noqa: E731
    bias = shape_bias(model, cue_conflict) if cue_conflict is not None else float("nan")
    band = {f"{name}_{s:g}": acc(add_band_noise(x, b, s, seed=seed + k))
            for k, (name, b) in enumerate(BANDS.items()) for s in strengths}
    return ProbeReport(
        clean_acc=acc(x),
        shape_bias=bias,
        color_acc={"grayscale": acc(grayscale(x)), "hue": acc(hue_rotate(x, seed=seed)),
                   "permute": acc(channel_permute(x, seed=seed))},
        band_noise_acc=band,
        blur_acc={f"sigma{s:g}": acc(gaussian_blur(x, s)) for s in blur_sigmas},
        geometric_acc={"shuffle": acc(patch_shuffle(x, shuffle_grid, seed=seed)),
                       "elastic": acc(elastic_warp(x, seed=seed))},
        filter_chroma=filter_chroma(model),
        filter_freq_centroid=filter_freq_centroid(model),
    )


def extract_features(model: nn.Module, x, *, batch_size: int = 512) -> np.ndarray:
    """Penultimate features ``model.features(x)`` (N, D) in eval mode."""
    if not hasattr(model, "features"):
        raise TypeError("model must have a features(x) method")
    x = check_array(x, "x", ndim=4, dtype=np.float32)
    model.eval()
    with torch.no_grad():
        return np.concatenate([model.features(torch.as_tensor(x[s:s + batch_size])).numpy()
                               for s in range(0, len(x), batch_size)])


def linear_probe_transfer(backbone: nn.Module, task: ShapeTextureData, *,
                          labels_per_class: int = 20, seed: int = 0) -> float:
    """Accuracy of a logistic-regression probe on frozen features of a new task.

    ``labels_per_class`` images per class train the probe; the rest of ``task`` tests it.
    """
    if not isinstance(backbone, nn.Module) or not hasattr(backbone, "features"):
        raise TypeError("backbone must be a torch.nn.Module with a features(x) method")
    if not isinstance(task, ShapeTextureData):
        raise TypeError(f"task must be a ShapeTextureData, got {type(task).__name__}")
    k = check_int(labels_per_class, "labels_per_class", min=1, max=100_000)
    rng = _rng(seed)
    y = task.shape_y
    train = np.zeros(len(y), bool)
    for c in np.unique(y):
        idx = np.flatnonzero(y == c)
        if len(idx) <= k:
            raise ValueError(f"labels_per_class: class {c} has {len(idx)} images, need > {k}")
        train[rng.choice(idx, k, replace=False)] = True
    f = extract_features(backbone, _images(task.x, "task"))
    mu, sd = f[train].mean(0), f[train].std(0) + 1e-6
    f = (f - mu) / sd
    clf = LogisticRegression(C=1.0, max_iter=2000).fit(f[train], y[train])
    return float(clf.score(f[~train], y[~train]))
