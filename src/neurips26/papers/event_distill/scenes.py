"""Procedural shape/texture images with a texture shortcut, and cue-conflict sets.

Each image is a shape (8 classes) filled with one texture and set on a background with
another texture (8 texture families), in random hues. The shape's luminance differs from
the background's by a contrast ``delta``; each texture modulates luminance by
``texture_contrast * delta`` around its region's level. In the training split the shape's
texture is the class's own texture with probability ``shortcut_prob`` (a texture
shortcut, as ImageNet offers one); in the cue-conflict split shape class and texture class
always differ (Geirhos et al., 2019).
"""

from __future__ import annotations

import colorsys
from dataclasses import dataclass

import numpy as np

from neurips26.common.validation import (
    check_choice,
    check_float,
    check_int,
    check_probability,
    check_rng,
    check_seed,
)

SHAPES = ("circle", "square", "triangle", "star", "cross", "ellipse", "hexagon", "ring")
#: Eight other shapes for the downstream shape-prior task (spec's item 7).
DOWNSTREAM_SHAPES = ("pentagon", "diamond", "half_disc", "square_ring", "tee", "ell",
                     "crescent", "bar")
ALL_SHAPES = SHAPES + DOWNSTREAM_SHAPES
TEXTURES = ("stripes_low", "stripes_high", "checker", "dots", "noise", "waves", "plaid",
            "crosshatch")
SPLITS = ("train", "cue_conflict", "shape_only")


@dataclass(frozen=True)
class ShapeTextureData:
    """Images with their shape and texture classes.

    Attributes
    ----------
    x : ndarray (N, 3, H, W) float32 in [0, 1]
    shape_y : ndarray (N,) int64
        Index into :data:`SHAPES`.
    texture_y : ndarray (N,) int64
        Index into :data:`TEXTURES` of the texture inside the shape.
    """

    x: np.ndarray
    shape_y: np.ndarray
    texture_y: np.ndarray

    def __len__(self) -> int:
        return len(self.shape_y)


def _polygon_mask(X, Y, verts):
    inside = np.ones_like(X, dtype=bool)
    n = len(verts)
    for k in range(n):
        (x0, y0), (x1, y1) = verts[k], verts[(k + 1) % n]
        inside &= (x1 - x0) * (Y - y0) - (y1 - y0) * (X - x0) >= 0
    return inside


def shape_mask(shape: str, size: int = 32, *, scale: float = 1.0, angle: float = 0.0,
               center=(0.0, 0.0)) -> np.ndarray:
    """Boolean mask ``(size, size)`` of a shape class.

    Parameters
    ----------
    shape : str
        One of :data:`ALL_SHAPES`.
    size : int
    scale : float
        Size as a share of the default (radius 0.62 of the half side).
    angle : float
        Rotation in radians.
    center : (float, float)
        Offset of the centre in units of the half side.

    Examples
    --------
    >>> m = shape_mask("square", 16)
    >>> m.shape, bool(m[8, 8]), bool(m[0, 0])
    ((16, 16), True, False)
    """
    check_choice(shape, "shape", ALL_SHAPES)
    size = check_int(size, "size", min=8, max=1024)
    scale = check_float(scale, "scale", min=0.1, max=2.0)
    angle = check_float(angle, "angle", min=-100, max=100)
    c = np.linspace(-1, 1, size)
    X, Y = np.meshgrid(c, c)
    X, Y = X - center[0], Y - center[1]
    ca, sa = np.cos(angle), np.sin(angle)
    X, Y = ca * X + sa * Y, -sa * X + ca * Y
    r = 0.62 * scale
    R = np.hypot(X, Y)
    th = np.arctan2(Y, X)

    def regular(n, rot=0.0, rr=r):
        a = rot + 2 * np.pi * np.arange(n) / n
        return _polygon_mask(X, Y, np.stack([rr * np.cos(a), rr * np.sin(a)], 1))

    if shape == "circle":
        return R <= r
    if shape == "square":
        return (np.abs(X) <= 0.8 * r) & (np.abs(Y) <= 0.8 * r)
    if shape == "triangle":
        return regular(3, np.pi / 2, 1.1 * r)
    if shape == "hexagon":
        return regular(6)
    if shape == "ellipse":
        return (X / r) ** 2 + (Y / (0.5 * r)) ** 2 <= 1
    if shape == "ring":
        return (R <= r) & (R >= 0.55 * r)
    if shape == "cross":
        w = 0.3 * r
        return ((np.abs(X) <= w) & (np.abs(Y) <= r)) | ((np.abs(Y) <= w) & (np.abs(X) <= r))
    if shape == "star":  # radius oscillating with five points
        return R <= r * (0.45 + 0.55 * np.clip(np.cos(5 * (th - np.pi / 2)), 0, 1))
    if shape == "pentagon":
        return regular(5, np.pi / 2)
    if shape == "diamond":
        return np.abs(X) / (0.6 * r) + np.abs(Y) / r <= 1
    if shape == "half_disc":
        return (R <= r) & (Y >= -0.2 * r)
    if shape == "square_ring":
        return (np.maximum(np.abs(X), np.abs(Y)) <= 0.8 * r) & (
            np.maximum(np.abs(X), np.abs(Y)) >= 0.45 * r)
    if shape == "tee":
        w = 0.28 * r
        return ((np.abs(X) <= r) & (np.abs(Y + 0.7 * r) <= w)) | (
            (np.abs(X) <= w) & (Y >= -0.7 * r) & (Y <= r))
    if shape == "ell":
        w = 0.3 * r
        return ((np.abs(X + 0.7 * r) <= w) & (np.abs(Y) <= r)) | (
            (np.abs(Y - 0.7 * r) <= w) & (X >= -r) & (X <= 0.8 * r))
    if shape == "crescent":
        return (R <= r) & (np.hypot(X - 0.45 * r, Y) > 0.8 * r)
    # bar: a long thin rectangle
    return (np.abs(X) <= r) & (np.abs(Y) <= 0.25 * r)


def texture_pattern(texture: str, size: int = 32, *, rng: np.random.Generator) -> np.ndarray:
    """A texture ``(size, size)`` in [-1, 1] with a random phase/orientation jitter.

    Examples
    --------
    >>> t = texture_pattern("checker", 16, rng=np.random.default_rng(0))
    >>> t.shape, float(t.min()) >= -1, float(t.max()) <= 1
    ((16, 16), True, True)
    """
    check_choice(texture, "texture", TEXTURES)
    size = check_int(size, "size", min=8, max=1024)
    rng = check_rng(rng)
    i = np.arange(size)
    X, Y = np.meshgrid(i, i)
    ph = rng.uniform(0, 2 * np.pi)
    a = rng.uniform(-0.25, 0.25)
    U = np.cos(a) * X + np.sin(a) * Y
    V = -np.sin(a) * X + np.cos(a) * Y
    if texture == "stripes_low":
        t = np.sign(np.sin(2 * np.pi * U / 8 + ph))
    elif texture == "stripes_high":
        t = np.sign(np.sin(2 * np.pi * V / 3 + ph))
    elif texture == "checker":
        t = np.sign(np.sin(np.pi * X / 2 + ph)) * np.sign(np.sin(np.pi * Y / 2 + ph))
    elif texture == "dots":
        t = np.where(np.hypot((X + ph) % 5 - 2, (Y + ph) % 5 - 2) <= 1.2, 1.0, -1.0)
    elif texture == "noise":
        coarse = rng.uniform(-1, 1, size=(size // 4 + 2, size // 4 + 2))
        t = np.sign(np.kron(coarse, np.ones((4, 4)))[:size, :size])
    elif texture == "waves":
        t = np.sin(2 * np.pi * (U + 2 * np.sin(2 * np.pi * V / 10)) / 5 + ph)
    elif texture == "plaid":
        t = 0.5 * (np.sin(2 * np.pi * U / 6 + ph) + np.sin(2 * np.pi * V / 6 + ph))
    else:  # crosshatch: thin diagonal lines both ways
        t = np.where(((X + Y + int(ph)) % 6 < 1) | ((X - Y + int(ph)) % 6 < 1), 1.0, -1.0)
    t[t == 0] = 1.0
    return t.astype(np.float64)


def _hue_rgb(hue: float, lum: float) -> np.ndarray:
    """An RGB colour of the given hue whose luma is ``lum`` (as near as the gamut allows)."""
    rgb = np.array(colorsys.hsv_to_rgb(hue % 1.0, 0.6, 1.0))
    y = float(rgb @ np.array([0.299, 0.587, 0.114]))
    return np.clip(rgb * lum / y, 0, 1)


def render_scene(*, shape: str, shape_texture: str, bg_texture: str, size: int = 32,
                 texture_contrast: float = 0.5, seed: int = 0) -> np.ndarray:
    """One RGB image: a textured shape on a textured background.

    Parameters
    ----------
    shape : str
        One of :data:`ALL_SHAPES`.
    shape_texture, bg_texture : str
        Two of :data:`TEXTURES`.
    size : int
        Side in pixels (>= 8).
    texture_contrast : float
        Texture luminance amplitude as a share of the shape-background contrast (0 to 2).
    seed : int
        Draws position, scale, rotation, hues, luminances and texture phases.

    Returns
    -------
    ndarray (3, size, size) float32 in [0, 1]

    Examples
    --------
    >>> img = render_scene(shape="star", shape_texture="dots", bg_texture="waves", seed=1)
    >>> img.shape, img.dtype.name
    ((3, 32, 32), 'float32')
    """
    check_choice(shape, "shape", ALL_SHAPES)
    check_choice(shape_texture, "shape_texture", TEXTURES)
    check_choice(bg_texture, "bg_texture", TEXTURES)
    size = check_int(size, "size", min=8, max=1024)
    tc = check_float(texture_contrast, "texture_contrast", min=0, max=2)
    rng = np.random.default_rng(check_seed(seed))
    mask = shape_mask(shape, size, scale=rng.uniform(0.75, 1.1), angle=rng.uniform(-0.4, 0.4),
                      center=rng.uniform(-0.12, 0.12, size=2))
    lum_bg = rng.uniform(0.3, 0.7)
    delta = rng.uniform(0.15, 0.25) * rng.choice([-1.0, 1.0])  # shape-background contrast
    lum_fg = lum_bg + delta
    amp = tc * abs(delta)
    t_fg = texture_pattern(shape_texture, size, rng=rng)
    t_bg = texture_pattern(bg_texture, size, rng=rng)
    c_fg = _hue_rgb(rng.uniform(), 1.0)
    c_bg = _hue_rgb(rng.uniform(), 1.0)
    lum = np.where(mask, lum_fg + amp * t_fg, lum_bg + amp * t_bg)  # (H, W)
    col = np.where(mask[None], c_fg[:, None, None], c_bg[:, None, None])  # (3, H, W)
    return np.clip(col * lum[None], 0, 1).astype(np.float32)


def make_dataset(*, num_samples: int, shortcut_prob: float = 0.8, split: str = "train",
                 texture_contrast: float = 0.5, size: int = 32,
                 shapes: tuple[str, ...] = SHAPES, seed: int = 0) -> ShapeTextureData:  # fmt: skip
    """A seeded data set of :func:`render_scene` images.

    Parameters
    ----------
    num_samples : int
    shortcut_prob : float
        ``train``: probability that the shape's texture is its class's texture (class
        ``k`` pairs with texture ``k``); otherwise it is uniform over the others.
    split : {"train", "cue_conflict", "shape_only"}
        ``cue_conflict``: the texture is always another class's; ``shape_only``: the
        texture is uniform and independent of the class.
    texture_contrast, size : float, int
        Passed to :func:`render_scene`.
    shapes : tuple of str
        The shape classes (8 of :data:`ALL_SHAPES`; label ``k`` is ``shapes[k]``).
    seed : int

    Examples
    --------
    >>> d = make_dataset(num_samples=16, split="cue_conflict", seed=0)
    >>> d.x.shape, bool((d.shape_y != d.texture_y).all())
    ((16, 3, 32, 32), True)
    """
    n = check_int(num_samples, "num_samples", min=1, max=1_000_000)
    sp = check_probability(shortcut_prob, "shortcut_prob")
    check_choice(split, "split", SPLITS)
    check_float(texture_contrast, "texture_contrast", min=0, max=2)
    size = check_int(size, "size", min=8, max=1024)
    if not isinstance(shapes, (tuple, list)) or len(shapes) != len(TEXTURES):
        raise ValueError(f"shapes must be a tuple of {len(TEXTURES)} shape names, got {shapes!r}")
    for s in shapes:
        check_choice(s, "shapes", ALL_SHAPES)
    if len(set(shapes)) != len(shapes):
        raise ValueError(f"shapes must not repeat a name, got {shapes!r}")
    rng = np.random.default_rng(check_seed(seed))
    K = len(shapes)
    shape_y = np.arange(n) % K
    rng.shuffle(shape_y)
    other = (shape_y + rng.integers(1, K, size=n)) % K  # uniform over the other classes
    if split == "train":
        tex_y = np.where(rng.random(n) < sp, shape_y, other)
    elif split == "cue_conflict":
        tex_y = other
    else:
        tex_y = rng.integers(0, K, size=n)
    bg_y = rng.integers(0, K, size=n)
    seeds = rng.integers(0, 2**62, size=n)
    x = np.stack([
        render_scene(shape=shapes[s], shape_texture=TEXTURES[t], bg_texture=TEXTURES[b],
                     size=size, texture_contrast=texture_contrast, seed=int(z))
        for s, t, b, z in zip(shape_y, tex_y, bg_y, seeds, strict=True)
    ])
    return ShapeTextureData(x, shape_y.astype(np.int64), tex_y.astype(np.int64))
