"""Inputs for the GETO-LP reproduction: synthetic 2-D shapes, organ-like densities, RGB palettes.

All generators are deterministic given a :class:`numpy.random.Generator`. Densities are
rasterised on the unit square (``n`` points per axis at ``linspace(0, 1, n)``), masses
below ``floor`` times the peak are set to 0 (HiGHS treats masses under its feasibility
tolerance as zero, see :mod:`.geto`) and every histogram is normalised to sum 1.
"""

from __future__ import annotations

import numpy as np

from neurips26.common.validation import check_array, check_float, check_int, check_rng, check_size

__all__ = ["organ_densities", "rgb_histogram", "synthetic_densities"]

_SHAPES = ("gaussians", "disc", "ring", "cross")


def _finish(density: np.ndarray, floor: float) -> np.ndarray:
    density = np.where(density >= floor * density.max(), density, 0.0)
    return density / density.sum()


def _shape(kind: str, xx: np.ndarray, yy: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    cx, cy = rng.uniform(0.3, 0.7, size=2)
    if kind == "gaussians":
        out = np.zeros_like(xx)
        for _ in range(int(rng.integers(2, 4))):
            mx, my = rng.uniform(0.15, 0.85, size=2)
            s = rng.uniform(0.04, 0.1)
            out += rng.uniform(0.5, 1.0) * np.exp(-((xx - mx) ** 2 + (yy - my) ** 2) / (2 * s * s))
        return out
    r = np.hypot(xx - cx, yy - cy)
    if kind == "disc":
        return (r <= rng.uniform(0.12, 0.25)).astype(float)
    if kind == "ring":
        r0 = rng.uniform(0.18, 0.3)
        return (np.abs(r - r0) <= 0.06).astype(float)
    half = rng.uniform(0.18, 0.3)  # cross
    arm = 0.06
    horiz = (np.abs(yy - cy) <= arm) & (np.abs(xx - cx) <= half)
    vert = (np.abs(xx - cx) <= arm) & (np.abs(yy - cy) <= half)
    return (horiz | vert).astype(float)


#: Most grid points (``M n^2`` for the generators, ``bins^3`` for colours) a helper builds.
MAX_GRID_POINTS = 50_000_000


def _check_generator(n, count, count_name: str, rng, floor) -> None:
    n = check_int(n, "n", min=2)
    count = check_int(count, count_name, min=1)
    check_size(count * n * n, f"n and {count_name}", limit=MAX_GRID_POINTS, what="grid points")
    check_rng(rng)
    check_float(floor, "floor", min=0, max=1, max_inclusive=False)


def synthetic_densities(
    n: int, num_inputs: int, *, rng: np.random.Generator, floor: float = 1e-5,
) -> tuple[np.ndarray, tuple[str, ...]]:
    """Random 2-D shapes (Gaussian mixtures, discs, rings, crosses) on an ``n x n`` grid.

    Parameters
    ----------
    n : int
        Points per axis.
    num_inputs : int
        ``M``, the number of histograms; kinds cycle through a random permutation.
    rng : numpy.random.Generator
        Source of randomness.
    floor : float
        Masses below ``floor * max`` are set to 0.

    More than ``MAX_GRID_POINTS`` points in all (``M n^2``) are refused.

    Returns
    -------
    histograms : ndarray, shape (M, n, n)
        Each sums to 1.
    kinds : tuple of str
        The shape of each histogram.
    """
    _check_generator(n, num_inputs, "num_inputs", rng, floor)
    t = np.linspace(0.0, 1.0, n)
    xx, yy = np.meshgrid(t, t, indexing="ij")
    order = rng.permutation(len(_SHAPES))
    kinds = tuple(_SHAPES[order[m % len(_SHAPES)]] for m in range(num_inputs))
    hist = np.stack([_finish(_shape(k, xx, yy, rng), floor) for k in kinds])
    return hist, kinds


def organ_densities(
    n: int, num_subjects: int, *, rng: np.random.Generator, floor: float = 1e-5,
) -> np.ndarray:
    """Organ-like 2-D densities: a deformed ellipse with a brighter inner structure.

    A synthetic stand-in for the paper's medical images: each subject has a random
    centre, semi-axes, rotation and a smooth radial deformation of the outer contour, and
    an inner ellipse (twice the density) at a random offset.

    More than ``MAX_GRID_POINTS`` points in all (``num_subjects n^2``) are refused.

    Returns
    -------
    ndarray, shape (num_subjects, n, n)
        Each sums to 1.
    """
    _check_generator(n, num_subjects, "num_subjects", rng, floor)
    t = np.linspace(0.0, 1.0, n)
    xx, yy = np.meshgrid(t, t, indexing="ij")
    out = []
    for _ in range(num_subjects):
        cx, cy = 0.5 + rng.normal(0, 0.04, size=2)
        a, b = rng.uniform(0.26, 0.36), rng.uniform(0.16, 0.24)
        theta = rng.uniform(-0.5, 0.5)
        u = (xx - cx) * np.cos(theta) + (yy - cy) * np.sin(theta)
        v = -(xx - cx) * np.sin(theta) + (yy - cy) * np.cos(theta)
        phi = np.arctan2(v, u)
        bump = 1 + 0.12 * np.sin(2 * phi + rng.uniform(0, 2 * np.pi)) * rng.uniform(0.3, 1)
        outer = (u / a) ** 2 + (v / b) ** 2 <= bump**2
        ox, oy = rng.normal(0, 0.05, size=2)
        inner = ((u - ox - 0.05) / (0.35 * a)) ** 2 + ((v - oy) / (0.4 * b)) ** 2 <= 1
        out.append(_finish(outer.astype(float) + 2.0 * (inner & outer), floor))
    return np.stack(out)


def rgb_histogram(image: np.ndarray, bins: int) -> tuple[np.ndarray, np.ndarray]:
    """The normalised 3-D colour histogram of an RGB image.

    Parameters
    ----------
    image : ndarray, shape (H, W, 3)
        An RGB image: integers in ``[0, 255]`` (``uint8``), or floats in ``[0, 1]``
        (scikit-image's convention). Other ranges, NaN and empty images are refused.
    bins : int
        Bins per channel (``bins^3`` grid points).

    Returns
    -------
    hist : ndarray, shape (bins, bins, bins)
        Pixel counts per colour bin divided by ``H W``.
    pixel_bins : ndarray, shape (H * W,)
        The flat (C-order) bin index of every pixel.
    """
    img = check_array(image, "image", shape=(None, None, 3), dtype=None)
    bins = check_int(bins, "bins", min=1, max=256)
    check_size(bins**3, "bins", limit=MAX_GRID_POINTS, what="colour bins")
    if img.dtype.kind == "f":
        if img.min() < 0 or img.max() > 1:
            raise ValueError(
                f"image: a float image must lie in [0, 1], got values in [{img.min():g}, "
                f"{img.max():g}] (pass uint8 for 0..255)"
            )
        q = np.minimum((img.reshape(-1, 3) * bins).astype(np.int64), bins - 1)  # (P, 3)
    else:
        if img.min() < 0 or img.max() > 255:
            raise ValueError(
                f"image: an integer image must lie in [0, 255], got values in "
                f"[{img.min()}, {img.max()}]"
            )
        q = (img.reshape(-1, 3).astype(np.int64) * bins) // 256  # (P, 3) per-channel bin
    flat = np.ravel_multi_index((q[:, 0], q[:, 1], q[:, 2]), (bins,) * 3)  # (P,)
    hist = np.bincount(flat, minlength=bins**3).astype(float) / flat.size
    return hist.reshape((bins,) * 3), flat
