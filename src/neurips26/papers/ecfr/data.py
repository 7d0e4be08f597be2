"""Procedural RGB+depth objects with anomalies ("MVTec-3D-lite") and one real RGB-D scene.

Five object classes are parametric height fields ``h(x, y) >= 0`` on a flat plane seen
from above: a torus (bagel), a domed disk (cookie), a wavy rope loop (cable), a lying
cylinder (dowel) and a textured slab (foam). Each sample gets a random pose (rotation,
shift, scale), a procedural albedo (value noise, a sum of bilinearly upsampled random
grids) and Lambertian shading from the height-field normals: ``RGB = albedo * shading``.
Depth is the distance from a camera above the plane, ``depth = z0 - h``.

Anomalies and their ground-truth masks:

- ``dent`` / ``bump``: a Gaussian blob subtracted from / added to ``h`` (depth changes;
  RGB changes only through the shading); the albedo is untouched.
- ``stain``: the albedo is blended toward a stain colour inside an irregular blob; ``h``,
  hence depth, is untouched bit for bit.
- ``crack``: a thin curved groove cut into ``h`` with darkened albedo along it (both).

Depth holes follow one convention everywhere in this paper: a missing depth value is NaN.
Real disparity maps mark holes with ``inf`` (scikit-image's motorcycle pair) or ``0``;
:func:`load_stereo_rgbd` converts them to NaN and :func:`fill_depth_holes` fills them.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy import ndimage

from neurips26.common.validation import (
    check_array,
    check_bool,
    check_choice,
    check_float,
    check_int,
    check_rng,
    check_seed,
)

CLASSES = ("bagel", "cookie", "cable", "dowel", "foam")
ANOMALY_TYPES = ("dent", "bump", "stain", "crack")
_BASE_COLOURS = {
    "bagel": (0.72, 0.48, 0.25), "cookie": (0.80, 0.62, 0.38), "cable": (0.30, 0.45, 0.75),
    "dowel": (0.78, 0.66, 0.45), "foam": (0.55, 0.70, 0.40),
}  # fmt: skip
_BACKGROUND = (0.35, 0.35, 0.38)
_Z0 = 2.0  # camera height above the plane (depth units)
_LIGHT = np.array([0.35, -0.3, 0.89]) / np.linalg.norm([0.35, -0.3, 0.89])


@dataclass(frozen=True)
class Sample:
    """One rendered object.

    Attributes
    ----------
    rgb : ndarray (H, W, 3), float32 in [0, 1]
    depth : ndarray (H, W), float32 (distance from the camera; NaN = hole)
    albedo : ndarray (H, W, 3), float32 (before shading)
    mask : ndarray (H, W), bool (anomalous pixels; all False for a normal sample)
    """

    rgb: np.ndarray
    depth: np.ndarray
    albedo: np.ndarray
    mask: np.ndarray


@dataclass(frozen=True)
class AD3DDataset:
    """A multi-class RGB+depth anomaly-detection data set.

    Attributes
    ----------
    rgb_train, rgb_test : ndarray (N, H, W, 3), float32 in [0, 1]
    depth_train, depth_test : ndarray (N, H, W), float32
    class_train, class_test : ndarray (N,), int (index into ``classes``)
    mask_test : ndarray (N, H, W), bool
    label_test : ndarray (N,), int (1 = anomalous)
    type_test : ndarray (N,), str ("" for normal samples)
    classes : tuple of str
    """

    rgb_train: np.ndarray
    depth_train: np.ndarray
    class_train: np.ndarray
    rgb_test: np.ndarray
    depth_test: np.ndarray
    class_test: np.ndarray
    mask_test: np.ndarray
    label_test: np.ndarray
    type_test: np.ndarray
    classes: tuple[str, ...]


def value_noise(size: int, rng: np.random.Generator, *, octaves: int = 4,
                base: int = 4) -> np.ndarray:  # fmt: skip
    """Perlin-like value noise in [0, 1]: octaves of bilinearly upsampled random grids.

    Examples
    --------
    >>> v = value_noise(16, np.random.default_rng(0))
    >>> v.shape, bool(0 <= v.min() and v.max() <= 1)
    ((16, 16), True)
    """
    size = check_int(size, "size", min=2, max=4096)
    check_rng(rng)
    octaves = check_int(octaves, "octaves", min=1, max=12)
    base = check_int(base, "base", min=1, max=1024)
    out = np.zeros((size, size))
    amp, total = 1.0, 0.0
    for o in range(octaves):
        g = base * 2**o + 1
        grid = rng.random((g, g))
        out += amp * ndimage.zoom(grid, size / g, order=1, mode="nearest", grid_mode=True)
        total += amp
        amp *= 0.5
    out /= total
    lo, hi = out.min(), out.max()
    return (out - lo) / max(hi - lo, 1e-12)


def _height_field(name: str, u: np.ndarray, v: np.ndarray, rng) -> np.ndarray:
    """Height ``h`` of class ``name`` at object coordinates (u, v) in about [-1, 1]."""
    rho = np.hypot(u, v)
    if name == "bagel":  # torus: tube of radius 0.28 around a circle of radius 0.5
        return 0.9 * np.sqrt(np.clip(0.28**2 - (rho - 0.5) ** 2, 0, None)) / 0.28 * 0.35
    if name == "cookie":  # domed disk with a soft rim
        rim = np.clip((0.72 - rho) / 0.08, 0, 1)
        return rim * (0.12 + 0.06 * np.clip(1 - (rho / 0.72) ** 2, 0, None))
    if name == "cable":  # thin tube along a wavy loop
        theta = np.arctan2(v, u)
        radius = 0.55 + 0.1 * np.sin(3 * theta + rng.uniform(0, 2 * np.pi))
        return 0.25 * np.sqrt(np.clip(1 - ((rho - radius) / 0.12) ** 2, 0, None))
    if name == "dowel":  # cylinder of radius 0.25 lying along u, length 1.6
        ends = np.clip((0.8 - np.abs(u)) / 0.04, 0, 1)
        return ends * 0.3 * np.sqrt(np.clip(1 - (v / 0.25) ** 2, 0, None))
    # foam: a rounded-corner slab
    box = np.clip((0.65 - np.maximum(np.abs(u), np.abs(v) * 1.2)) / 0.06, 0, 1)
    return 0.18 * box


def _blob(size: int, cy: float, cx: float, radius: float) -> np.ndarray:
    yy, xx = np.mgrid[0:size, 0:size]
    return np.exp(-((yy - cy) ** 2 + (xx - cx) ** 2) / (2 * radius**2))


def render_object(class_name: str, anomaly: str | None = None, *, image_size: int = 64,
                  seed: int = 0) -> Sample:  # fmt: skip
    """Render one object of ``class_name`` with an optional anomaly.

    The pose, albedo and shape come from ``seed`` alone and the anomaly's placement from a
    separate stream of the same seed, so ``render_object(c, None, seed=s)`` is the normal
    twin of ``render_object(c, "stain", seed=s)``.

    Parameters
    ----------
    class_name : one of :data:`CLASSES`
    anomaly : one of :data:`ANOMALY_TYPES` or None
    image_size : int
        Side length in pixels (>= 16).
    seed : int

    Returns
    -------
    Sample

    Examples
    --------
    >>> s = render_object("bagel", "stain", image_size=32, seed=1)
    >>> s.rgb.shape, s.depth.shape, bool(s.mask.any())
    ((32, 32, 3), (32, 32), True)
    >>> bool((s.depth == render_object("bagel", None, image_size=32, seed=1).depth).all())
    True
    """
    check_choice(class_name, "class_name", CLASSES)
    if anomaly is not None:
        check_choice(anomaly, "anomaly", ANOMALY_TYPES)
    n = check_int(image_size, "image_size", min=16, max=1024)
    seed = check_seed(seed)
    rng = np.random.default_rng([seed, 0])
    arng = np.random.default_rng([seed, 1])
    # Pose jitter: rotation, shift, scale.
    ang = rng.uniform(0, 2 * np.pi)
    scale = rng.uniform(0.9, 1.1) * 0.42 * n
    cy, cx = n / 2 + rng.uniform(-0.05, 0.05, 2) * n
    yy, xx = np.mgrid[0:n, 0:n].astype(float)
    dy, dx = (yy - cy) / scale, (xx - cx) / scale
    u = np.cos(ang) * dx + np.sin(ang) * dy
    v = -np.sin(ang) * dx + np.cos(ang) * dy
    h = _height_field(class_name, u, v, rng) * scale / 8  # heights in pixel-ish units
    if class_name == "foam":
        h = h + (h > 0) * 0.6 * value_noise(n, rng, octaves=3, base=8)
    obj = h > 1e-6
    # Procedural albedo: class colour modulated by value noise; grey background.
    tex = value_noise(n, rng, octaves=4, base=4)
    base = np.asarray(_BASE_COLOURS[class_name]) * rng.uniform(0.93, 1.07, 3)
    albedo = np.where(obj[..., None], base * (0.75 + 0.45 * tex[..., None]),
                      np.asarray(_BACKGROUND) * (0.9 + 0.2 * tex[..., None]))  # fmt: skip
    mask = np.zeros((n, n), bool)
    if anomaly is not None:
        ys, xs = np.nonzero(h > 0.35 * h.max())
        k = arng.integers(len(ys))
        ay, ax = float(ys[k]), float(xs[k])
        r = arng.uniform(0.05, 0.08) * n
        if anomaly in ("dent", "bump"):
            blob = _blob(n, ay, ax, r)
            amp = arng.uniform(0.5, 0.8) * max(h.max(), 1.0) * (-1 if anomaly == "dent" else 1)
            h = np.clip(h + amp * blob, 0, None)
            mask = blob > 0.3
        elif anomaly == "stain":
            shape = _blob(n, ay, ax, 1.3 * r) * (0.6 + 0.8 * value_noise(n, arng, base=6))
            mask = shape > 0.45
            colour = arng.uniform(0.05, 0.35, 3)
            alpha = np.clip((shape - 0.35) / 0.2, 0, 1)[..., None]
            albedo = albedo * (1 - alpha) + colour * alpha
        else:  # crack: a thin curved groove with dark albedo
            t = np.linspace(-1, 1, 4 * n)
            phi = arng.uniform(0, np.pi)
            length = arng.uniform(0.18, 0.28) * n
            bend = arng.uniform(-0.3, 0.3) * length
            py = ay + t * length * np.sin(phi) + bend * (1 - t**2) * np.cos(phi)
            px = ax + t * length * np.cos(phi) - bend * (1 - t**2) * np.sin(phi)
            line = np.zeros((n, n))
            iy, ix = np.round(py).astype(int), np.round(px).astype(int)
            ok = (iy >= 0) & (iy < n) & (ix >= 0) & (ix < n)
            line[iy[ok], ix[ok]] = 1.0
            groove = np.clip(ndimage.gaussian_filter(line, 0.8) * 3.0, 0, 1)
            mask = groove > 0.3
            h = np.clip(h - 0.6 * max(h.max(), 1.0) * groove, 0, None)
            albedo = albedo * (1 - 0.75 * groove[..., None])
    # Lambertian shading from the height-field normals n = (-h_x, -h_y, 1) / |.|.
    hy, hx = np.gradient(h)
    normal = np.stack([-hx, -hy, np.ones_like(h)], -1)
    normal /= np.linalg.norm(normal, axis=-1, keepdims=True)
    shading = 0.3 + 0.7 * np.clip(normal @ _LIGHT, 0, None)
    rgb = np.clip(albedo * shading[..., None], 0, 1)
    depth = _Z0 * 0.42 * n / 8 - h  # a constant plane under every object
    return Sample(rgb.astype(np.float32), depth.astype(np.float32), albedo.astype(np.float32),
                  mask)  # fmt: skip


def make_synthetic_3dad(*, num_classes: int = 5, num_train_per_class: int = 80,
                        num_test_per_class: int = 40, image_size: int = 64,
                        anomaly_types: tuple[str, ...] = ANOMALY_TYPES,
                        seed: int = 0) -> AD3DDataset:  # fmt: skip
    """The procedural multi-class RGB+depth data set (normal training images only).

    Half of each class's test images are normal, the other half anomalous with the
    anomaly types taken in turn.

    Parameters
    ----------
    num_classes : int
        How many of :data:`CLASSES` to use (1-5).
    num_train_per_class, num_test_per_class : int
    image_size : int
    anomaly_types : tuple of str
        Subset of :data:`ANOMALY_TYPES`.
    seed : int

    Returns
    -------
    AD3DDataset

    Examples
    --------
    >>> ds = make_synthetic_3dad(num_classes=2, num_train_per_class=2, num_test_per_class=4,
    ...                          image_size=32)
    >>> ds.rgb_train.shape, ds.depth_test.shape, ds.label_test.tolist()
    ((4, 32, 32, 3), (8, 32, 32), [0, 0, 1, 1, 0, 0, 1, 1])
    """
    num_classes = check_int(num_classes, "num_classes", min=1, max=len(CLASSES))
    ntr = check_int(num_train_per_class, "num_train_per_class", min=1, max=100_000)
    nte = check_int(num_test_per_class, "num_test_per_class", min=2, max=100_000)
    image_size = check_int(image_size, "image_size", min=16, max=1024)
    if isinstance(anomaly_types, str) or not isinstance(anomaly_types, (tuple, list)):
        raise TypeError(f"anomaly_types must be a tuple of str, got {anomaly_types!r}")
    if not anomaly_types:
        raise ValueError("anomaly_types must name at least one anomaly type")
    for a in anomaly_types:
        check_choice(a, "anomaly_types", ANOMALY_TYPES)
    seed = check_seed(seed)
    rows_tr, rows_te = [], []
    for c in range(num_classes):
        name = CLASSES[c]
        for i in range(ntr):
            rows_tr.append((c, render_object(name, None, image_size=image_size,
                                             seed=hash_seed(seed, c, 0, i))))  # fmt: skip
        num_normal = nte // 2
        for i in range(nte):
            kind = None if i < num_normal else anomaly_types[(i - num_normal) % len(anomaly_types)]
            rows_te.append((c, kind, render_object(name, kind, image_size=image_size,
                                                   seed=hash_seed(seed, c, 1, i))))  # fmt: skip
    return AD3DDataset(
        rgb_train=np.stack([s.rgb for _, s in rows_tr]),
        depth_train=np.stack([s.depth for _, s in rows_tr]),
        class_train=np.array([c for c, _ in rows_tr]),
        rgb_test=np.stack([s.rgb for _, _, s in rows_te]),
        depth_test=np.stack([s.depth for _, _, s in rows_te]),
        class_test=np.array([c for c, _, _ in rows_te]),
        mask_test=np.stack([s.mask for _, _, s in rows_te]),
        label_test=np.array([int(k is not None) for _, k, _ in rows_te]),
        type_test=np.array([k or "" for _, k, _ in rows_te]),
        classes=CLASSES[:num_classes],
    )


def hash_seed(*parts: int) -> int:
    """A 63-bit seed from integer parts (stable across runs and platforms)."""
    return int(np.random.SeedSequence(list(parts)).generate_state(1, np.uint64)[0] >> 1)


# --------------------------------------------------------------------------- real RGB-D


def fill_depth_holes(depth, *, max_fraction: float = 0.5) -> np.ndarray:
    """Fill NaN holes of a depth map with the nearest valid value (per image).

    Parameters
    ----------
    depth : ndarray (H, W) or (N, H, W)
        NaN marks a hole; +-inf is refused (convert it to NaN first, see
        :func:`load_stereo_rgbd`).
    max_fraction : float
        Refuse maps with more than this fraction of holes (nothing to interpolate from).

    Returns
    -------
    ndarray of the same shape, float32, finite

    Examples
    --------
    >>> fill_depth_holes(np.array([[1.0, np.nan], [3.0, 4.0]])).tolist()
    [[1.0, 1.0], [3.0, 4.0]]
    """
    d = check_array(depth, "depth", ndim=(2, 3), finite=False)
    max_fraction = check_float(max_fraction, "max_fraction", min=0, max=1)
    if np.isinf(d).any():
        raise ValueError("depth must mark holes with NaN, not inf (convert inf to NaN first)")
    squeeze = d.ndim == 2
    d = d[None] if squeeze else d.copy()
    out = np.empty_like(d)
    for i, m in enumerate(d):
        hole = np.isnan(m)
        if hole.all() or hole.mean() > max_fraction:
            raise ValueError(f"depth has {hole.mean():.0%} holes in image {i}, more than "
                             f"max_fraction={max_fraction}")  # fmt: skip
        if hole.any():
            idx = ndimage.distance_transform_edt(hole, return_distances=False, return_indices=True)
            m = m[tuple(idx)]
        out[i] = m
    out = out.astype(np.float32)
    return out[0] if squeeze else out


@dataclass(frozen=True)
class RGBDScene:
    """A real RGB-D scene: the left view and depth (NaN at holes) on the same grid."""

    rgb: np.ndarray  # (H, W, 3) float32 in [0, 1]
    depth: np.ndarray  # (H, W) float32, NaN = hole
    hole_fraction: float


def load_stereo_rgbd() -> RGBDScene:
    """scikit-image's Middlebury motorcycle stereo pair as one real RGB-D scene (offline).

    Depth is inverse disparity, ``depth = f * b / disparity`` with ``f * b`` set to the
    largest disparity (so depth >= 1); pixels without a disparity (``inf`` in the file) or
    with a non-positive one become NaN holes.

    Returns
    -------
    RGBDScene
    """
    from skimage import data as skdata

    left, _right, disp = skdata.stereo_motorcycle()
    disp = np.asarray(disp, dtype=np.float64)
    hole = ~np.isfinite(disp) | (disp <= 0)
    fb = float(disp[~hole].max())
    depth = np.where(hole, np.nan, fb / np.where(hole, 1.0, disp))
    return RGBDScene((left / 255.0).astype(np.float32), depth.astype(np.float32),
                     float(hole.mean()))  # fmt: skip


def scene_patches(scene: RGBDScene, *, num_patches: int, patch_size: int = 64,
                  fill_holes: bool = True, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Random square crops of a real scene, resized to ``patch_size`` (RGB, depth).

    Parameters
    ----------
    scene : RGBDScene
    num_patches : int
    patch_size : int
    fill_holes : bool
        Fill the depth holes (:func:`fill_depth_holes`) before cropping; with False, crops
        keep NaN holes (and the detectors refuse them unless asked to fill).
    seed : int

    Returns
    -------
    rgb : ndarray (num_patches, patch_size, patch_size, 3)
    depth : ndarray (num_patches, patch_size, patch_size)
    """
    if not isinstance(scene, RGBDScene):
        raise TypeError(f"scene must be an RGBDScene, got {type(scene).__name__}")
    num = check_int(num_patches, "num_patches", min=1, max=100_000)
    size = check_int(patch_size, "patch_size", min=16, max=1024)
    check_bool(fill_holes, "fill_holes")
    rng = np.random.default_rng(check_seed(seed))
    depth = fill_depth_holes(scene.depth, max_fraction=0.9) if fill_holes else scene.depth
    H, W = depth.shape
    crop = min(H, W) // 3
    rgbs, deps = [], []
    for _ in range(num):
        y, x = rng.integers(0, H - crop), rng.integers(0, W - crop)
        zoom = size / crop
        rgbs.append(ndimage.zoom(scene.rgb[y:y + crop, x:x + crop], (zoom, zoom, 1), order=1))
        deps.append(ndimage.zoom(depth[y:y + crop, x:x + crop], zoom, order=0 if not fill_holes
                                 else 1))  # fmt: skip
    return (np.clip(np.stack(rgbs), 0, 1).astype(np.float32)[:, :size, :size],
            np.stack(deps).astype(np.float32)[:, :size, :size])  # fmt: skip
