"""ImageNet-C-style corruptions of image batches, in numpy (Hendrycks & Dietterich, 2019).

Every corruption maps images ``(N, C, H, W)`` with values in ``[0, 1]`` to images of the
same shape and range. ``severity`` runs from 1 (mild) to 5 (strong); severity 0 is the
identity. The parameters follow ImageNet-C's tables where they are scale-free (noise
levels, contrast factors, brightness shifts, pixelation factors) and are rescaled to the
image size where they are lengths (blur radii and widths are given for 28-pixel images and
scale with ``H / 28`` for larger images; the disk is anti-aliased).

References
----------
Hendrycks, D. and Dietterich, T. "Benchmarking Neural Network Robustness to Common
Corruptions and Perturbations." ICLR 2019.
"""

from __future__ import annotations

import numpy as np
from scipy import ndimage

from neurips26.common.validation import (
    check_array,
    check_choice,
    check_float,
    check_int,
    check_rng,
)

#: Per-severity parameters (index = severity - 1).
GAUSSIAN_SIGMA = (0.08, 0.12, 0.18, 0.26, 0.38)  # ImageNet-C gaussian_noise
SHOT_PHOTONS = (60.0, 25.0, 12.0, 5.0, 3.0)  # ImageNet-C shot_noise
IMPULSE_AMOUNT = (0.03, 0.06, 0.09, 0.17, 0.27)  # ImageNet-C impulse_noise
DEFOCUS_RADIUS = (0.8, 1.2, 1.6, 2.0, 2.5)  # disk radius in pixels at H = 28
BLUR_SIGMA = (0.5, 0.75, 1.0, 1.25, 1.5)  # gaussian width in pixels at H = 28
CONTRAST_FACTOR = (0.4, 0.3, 0.2, 0.1, 0.05)  # ImageNet-C contrast
BRIGHTNESS_SHIFT = (0.1, 0.2, 0.3, 0.4, 0.5)  # ImageNet-C brightness (HSV value)
PIXELATE_FACTOR = (0.6, 0.5, 0.4, 0.3, 0.25)  # ImageNet-C pixelate

#: Corruptions that draw random numbers (they need ``rng``).
RANDOM_KINDS = ("gaussian_noise", "shot_noise", "impulse_noise")


def _gaussian_noise(x, s, rng):
    return x + rng.normal(0.0, GAUSSIAN_SIGMA[s], size=x.shape)


def _shot_noise(x, s, rng):
    lam = SHOT_PHOTONS[s]
    return rng.poisson(x * lam) / lam


def _impulse_noise(x, s, rng):
    # Salt and pepper: each value is replaced, with probability ``amount``, by 0 or 1.
    hit = rng.random(x.shape) < IMPULSE_AMOUNT[s]
    salt = rng.random(x.shape) < 0.5
    return np.where(hit, salt.astype(x.dtype), x)


def disk_kernel(radius: float) -> np.ndarray:
    """A normalised anti-aliased disk: weight ``clip(radius + 1/2 - |u|, 0, 1)`` at offset u.

    The soft edge makes the blur change continuously with ``radius`` (a hard disk of radius
    below one pixel would be the identity).

    Examples
    --------
    >>> k = disk_kernel(1.0)
    >>> k.shape, round(float(k.sum()), 6), int((k > 0).sum())
    ((5, 5), 1.0, 9)
    """
    radius = check_float(radius, "radius", min=0.0, max=1000.0, min_inclusive=False)
    r = int(np.ceil(radius + 0.5))
    yy, xx = np.mgrid[-r : r + 1, -r : r + 1]
    k = np.clip(radius + 0.5 - np.sqrt(xx**2 + yy**2), 0.0, 1.0)
    return k / k.sum()


def _scale(x) -> float:
    # Lengths are given for 28-pixel images; larger images scale them up (never down).
    return max(x.shape[2], 28) / 28


def _per_plane(x, fn):
    n, c, h, w = x.shape
    planes = x.reshape(n * c, h, w)
    return np.stack([fn(p) for p in planes]).reshape(n, c, h, w)


def _defocus_blur(x, s, rng):
    k = disk_kernel(DEFOCUS_RADIUS[s] * _scale(x))
    return _per_plane(x, lambda p: ndimage.convolve(p, k, mode="reflect"))


def _gaussian_blur(x, s, rng):
    sigma = BLUR_SIGMA[s] * _scale(x)
    return _per_plane(x, lambda p: ndimage.gaussian_filter(p, sigma, mode="reflect"))


def _contrast(x, s, rng):
    # Eq. (ImageNet-C): (x - mean) * c + mean, the mean over each image's pixels.
    mean = x.mean(axis=(1, 2, 3), keepdims=True)
    return (x - mean) * CONTRAST_FACTOR[s] + mean


def _brightness(x, s, rng):
    # HSV value V = max over channels gains c (clipped to 1) with hue and saturation kept:
    # that scales the RGB triple by V' / V (grey V' where V = 0).
    v = x.max(axis=1, keepdims=True)
    v_new = np.minimum(v + BRIGHTNESS_SHIFT[s], 1.0)
    scale = np.where(v > 0, v_new / np.where(v > 0, v, 1.0), 0.0)
    return np.where(v > 0, x * scale, v_new)


def _cells(size: int, cells: int) -> np.ndarray:
    return (np.arange(size) * cells) // size


def _pixelate(x, s, rng):
    # Box-average down to round(c * H) x round(c * W) cells, then nearest-neighbour back up.
    n, c, h, w = x.shape
    gh, gw = max(1, round(PIXELATE_FACTOR[s] * h)), max(1, round(PIXELATE_FACTOR[s] * w))
    ri, ci = _cells(h, gh), _cells(w, gw)
    cell = ri[:, None] * gw + ci[None, :]  # (H, W) cell index
    flat = x.reshape(n, c, h * w)
    sums = np.zeros((n, c, gh * gw))
    np.add.at(sums, (slice(None), slice(None), cell.ravel()), flat)
    counts = np.bincount(cell.ravel(), minlength=gh * gw)
    means = sums / counts
    return means[:, :, cell]


CORRUPTIONS = {
    "gaussian_noise": _gaussian_noise,
    "shot_noise": _shot_noise,
    "impulse_noise": _impulse_noise,
    "defocus_blur": _defocus_blur,
    "gaussian_blur": _gaussian_blur,
    "contrast": _contrast,
    "brightness": _brightness,
    "pixelate": _pixelate,
}


def corrupt(images, kind: str, severity: int, *, rng: np.random.Generator | None = None
            ) -> np.ndarray:  # fmt: skip
    """Apply one ImageNet-C-style corruption at one severity.

    Parameters
    ----------
    images : ndarray, shape (N, C, H, W), values in [0, 1]
    kind : str
        One of :data:`CORRUPTIONS`.
    severity : int
        0 (identity) to 5.
    rng : numpy.random.Generator
        Needed by the noise corruptions (:data:`RANDOM_KINDS`); ignored by the others.

    Returns
    -------
    ndarray, shape (N, C, H, W), float32 in [0, 1]

    Examples
    --------
    >>> x = np.full((1, 1, 4, 4), 0.5)
    >>> corrupt(x, "brightness", 2).max().round(6)
    np.float32(0.7)
    >>> bool((corrupt(x, "gaussian_noise", 0) == x).all())
    True
    """
    x = check_array(images, "images", ndim=4, min=0.0, max=1.0)
    kind = check_choice(kind, "kind", tuple(CORRUPTIONS))
    severity = check_int(severity, "severity", min=0, max=5)
    if kind in RANDOM_KINDS and severity > 0:
        rng = check_rng(rng, "rng")
    if severity == 0:
        return x.astype(np.float32)
    out = CORRUPTIONS[kind](x, severity - 1, rng)
    return np.clip(out, 0.0, 1.0).astype(np.float32)
