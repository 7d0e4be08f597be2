"""A small class-conditional Diffusion Transformer (DiT) with TREAD / noise-aware routing.

The model follows DiT (Peebles & Xie, 2023): patchify, fixed 2-D sin-cos position
embedding, ``depth`` transformer blocks conditioned by adaLN-zero on ``c = emb(t) +
emb(y)`` (with a learned null class for classifier-free guidance), and a zero-initialised
adaLN final layer that predicts the noise ``eps``. During training, a span of middle
blocks ``route_start .. route_end`` (inclusive) can be *routed*: each sample keeps only
``ceil((1 - r) L)`` of its tokens through the span (:func:`~.routing.route_start` /
:func:`~.routing.route_end`). ``routing="tread"`` uses one ratio for every sample,
``routing="noise_aware"`` one ratio per noise group; each distinct ratio runs the span as
its own sub-batch (different token counts), and the outputs go back in the batch's order.
In ``eval()`` mode routing is off whatever the flags say.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from neurips26.common.validation import check_choice, check_float, check_int

from .routing import (
    NAR_BOUNDARIES,
    NAR_RATIOS,
    _check_permutations,
    check_ratio,
    check_timesteps,
    noise_aware_ratios,
    route_span,
)

ROUTINGS = ("none", "tread", "noise_aware")
#: Largest width, depth, image side and class count accepted (CPU-scale sanity bounds).
MAX_DIM, MAX_DEPTH, MAX_IMAGE, MAX_CLASSES = 4096, 64, 1024, 100_000


def sincos_2d(dim: int, grid: int) -> torch.Tensor:
    """Fixed 2-D sin-cos position embedding (MAE/DiT), shape ``(grid**2, dim)``.

    Half the channels encode the row, half the column, each as sines and cosines of
    ``pos * omega_k`` with ``omega_k = 10000^{-k / (dim/4)}``.
    """
    dim = check_int(dim, "dim", min=4, max=MAX_DIM)
    grid = check_int(grid, "grid", min=1, max=MAX_IMAGE)
    if dim % 4:
        raise ValueError(f"dim: must be divisible by 4 for the 2-D sin-cos embedding, got {dim}")
    omega = 1.0 / 10000 ** (np.arange(dim // 4, dtype=np.float64) / (dim / 4))
    rows, cols = np.meshgrid(np.arange(grid), np.arange(grid), indexing="ij")

    def enc(pos):
        out = np.outer(pos.reshape(-1), omega)  # (L, dim/4)
        return np.concatenate([np.sin(out), np.cos(out)], axis=1)  # (L, dim/2)

    return torch.as_tensor(np.concatenate([enc(rows), enc(cols)], axis=1), dtype=torch.float32)


def timestep_embedding(t: torch.Tensor, dim: int, max_period: float = 10000.0) -> torch.Tensor:
    """Sinusoidal embedding of (possibly fractional) timesteps, shape ``(B, dim)``.

    ``[cos(t w_k), sin(t w_k)]`` with ``w_k = max_period^{-k / (dim/2)}`` (DiT's).
    """
    if not torch.is_tensor(t):
        raise TypeError(f"t: expected a torch.Tensor of timesteps, got {type(t).__name__}")
    if t.ndim != 1 or t.numel() == 0 or not torch.isfinite(t.float()).all():
        raise ValueError(f"t: expected a non-empty finite 1-D tensor, got shape {tuple(t.shape)}")
    dim = check_int(dim, "dim", min=1, max=MAX_DIM)
    max_period = check_float(max_period, "max_period", min=1.0, max=1e12)
    half = dim // 2
    freqs = torch.exp(-math.log(max_period) * torch.arange(half, dtype=torch.float32,
                                                           device=t.device) / half)  # fmt: skip
    args = t.float()[:, None] * freqs[None]  # (B, dim/2)
    emb = torch.cat([torch.cos(args), torch.sin(args)], dim=1)
    return F.pad(emb, (0, dim % 2))


def modulate(x: torch.Tensor, shift: torch.Tensor, scale: torch.Tensor) -> torch.Tensor:
    """adaLN: ``x * (1 + scale) + shift`` with per-sample ``(B, C)`` shift and scale."""
    return x * (1 + scale.unsqueeze(1)) + shift.unsqueeze(1)


class DiTBlock(nn.Module):
    """Pre-norm attention + MLP block with adaLN-zero conditioning (DiT, Fig. 3)."""

    def __init__(self, dim: int, num_heads: int, mlp_ratio: float = 4.0) -> None:
        super().__init__()
        self.num_heads = num_heads
        self.norm1 = nn.LayerNorm(dim, elementwise_affine=False, eps=1e-6)
        self.qkv = nn.Linear(dim, 3 * dim)
        self.proj = nn.Linear(dim, dim)
        self.norm2 = nn.LayerNorm(dim, elementwise_affine=False, eps=1e-6)
        hidden = int(dim * mlp_ratio)
        self.mlp = nn.Sequential(nn.Linear(dim, hidden), nn.GELU(approximate="tanh"),
                                 nn.Linear(hidden, dim))  # fmt: skip
        self.adaLN_modulation = nn.Sequential(nn.SiLU(), nn.Linear(dim, 6 * dim))

    def attention(self, x: torch.Tensor) -> torch.Tensor:
        b, n, c = x.shape
        qkv = self.qkv(x).reshape(b, n, 3, self.num_heads, c // self.num_heads)
        q, k, v = qkv.permute(2, 0, 3, 1, 4)  # each (B, H, N, C/H)
        # softmax(q k^T / sqrt(d)) v written out (not F.scaled_dot_product_attention, whose
        # CPU kernel torch's FLOP counter does not count): (B, H, N, C/H).
        att = (q @ k.transpose(-2, -1)) * (q.shape[-1] ** -0.5)  # (B, H, N, N)
        out = att.softmax(dim=-1) @ v
        return self.proj(out.transpose(1, 2).reshape(b, n, c))

    def forward(self, x: torch.Tensor, c: torch.Tensor) -> torch.Tensor:
        # x (B, N, C), c (B, C); N may be the routed K < L: nothing here depends on position.
        sh1, sc1, g1, sh2, sc2, g2 = self.adaLN_modulation(c).chunk(6, dim=1)
        x = x + g1.unsqueeze(1) * self.attention(modulate(self.norm1(x), sh1, sc1))
        return x + g2.unsqueeze(1) * self.mlp(modulate(self.norm2(x), sh2, sc2))


class MiniDiT(nn.Module):
    """A class-conditional DiT that predicts ``eps`` and can route tokens while training.

    Parameters
    ----------
    image_size : int
        Side ``H = W`` of the images.
    patch_size : int
        Side ``p`` of the square patches; ``L = (H / p)^2`` tokens.
    in_channels : int
        Image channels ``C``.
    dim : int
        Token width (divisible by ``num_heads`` and by 4).
    depth : int
        Number of DiT blocks.
    num_heads : int
    num_classes : int
        Labels are ``0 .. num_classes - 1``; ``num_classes`` is the null (unconditional)
        label used for classifier-free guidance.
    route_start, route_end : int
        The routed span: blocks ``route_start .. route_end`` inclusive,
        ``0 <= route_start < route_end < depth``. TREAD's default: ``1 .. depth - 2``.
    mlp_ratio : float

    Examples
    --------
    >>> net = MiniDiT(image_size=8, patch_size=2, dim=16, depth=3, num_heads=2,
    ...               route_start=1, route_end=2)
    >>> x, t, y = torch.zeros(4, 1, 8, 8), torch.tensor([0, 10, 500, 999]), torch.arange(4)
    >>> tuple(net(x, t, y, routing="noise_aware").shape), net.num_tokens
    ((4, 1, 8, 8), 16)
    """

    def __init__(self, *, image_size: int = 32, patch_size: int = 4, in_channels: int = 1,
                 dim: int = 128, depth: int = 6, num_heads: int = 4, num_classes: int = 10,
                 route_start: int = 1, route_end: int = 4,
                 mlp_ratio: float = 4.0) -> None:  # fmt: skip
        super().__init__()
        image_size = check_int(image_size, "image_size", min=1, max=MAX_IMAGE)
        patch_size = check_int(patch_size, "patch_size", min=1, max=MAX_IMAGE)
        if image_size % patch_size:
            raise ValueError(f"image_size: {image_size} is not divisible by patch_size "
                             f"{patch_size}")  # fmt: skip
        in_channels = check_int(in_channels, "in_channels", min=1, max=64)
        dim = check_int(dim, "dim", min=4, max=MAX_DIM)
        depth = check_int(depth, "depth", min=2, max=MAX_DEPTH)
        num_heads = check_int(num_heads, "num_heads", min=1, max=dim)
        if dim % num_heads or dim % 4:
            raise ValueError(f"dim: {dim} must be divisible by 4 and by num_heads {num_heads}")
        num_classes = check_int(num_classes, "num_classes", min=1, max=MAX_CLASSES)
        route_start = check_int(route_start, "route_start", min=0, max=depth - 1)
        route_end = check_int(route_end, "route_end", min=0, max=depth - 1)
        if route_start >= route_end:
            raise ValueError(f"route_start: must be < route_end, got {route_start} >= "
                             f"{route_end}")  # fmt: skip
        self.image_size, self.patch_size, self.in_channels = image_size, patch_size, in_channels
        self.dim, self.depth, self.num_classes = dim, depth, num_classes
        self.route_start, self.route_end = route_start, route_end
        self.grid = image_size // patch_size
        self.num_tokens = self.grid**2
        self.x_embed = nn.Conv2d(in_channels, dim, patch_size, stride=patch_size)
        self.register_buffer("pos_embed", sincos_2d(dim, self.grid)[None], persistent=False)
        self.t_embed = nn.Sequential(nn.Linear(dim, dim), nn.SiLU(), nn.Linear(dim, dim))
        self.y_embed = nn.Embedding(num_classes + 1, dim)  # + the null label
        self.blocks = nn.ModuleList(DiTBlock(dim, num_heads, mlp_ratio) for _ in range(depth))
        self.final_norm = nn.LayerNorm(dim, elementwise_affine=False, eps=1e-6)
        self.final_adaLN = nn.Sequential(nn.SiLU(), nn.Linear(dim, 2 * dim))
        self.final_linear = nn.Linear(dim, patch_size**2 * in_channels)
        self._init_weights()

    @property
    def sample_shape(self) -> tuple[int, int, int]:
        """``(C, H, W)`` of one image."""
        return (self.in_channels, self.image_size, self.image_size)

    @property
    def null_label(self) -> int:
        return self.num_classes

    def _init_weights(self) -> None:
        # DiT's initialisation: xavier linears, zero adaLN and output (adaLN-zero).
        for m in self.modules():
            if isinstance(m, nn.Linear):
                nn.init.xavier_uniform_(m.weight)
                nn.init.zeros_(m.bias)
        w = self.x_embed.weight
        nn.init.xavier_uniform_(w.view(w.shape[0], -1))
        nn.init.zeros_(self.x_embed.bias)
        nn.init.normal_(self.y_embed.weight, std=0.02)
        for lin in (*self.t_embed[::2],):
            nn.init.normal_(lin.weight, std=0.02)
        for blk in self.blocks:
            nn.init.zeros_(blk.adaLN_modulation[-1].weight)
            nn.init.zeros_(blk.adaLN_modulation[-1].bias)
        for lin in (self.final_adaLN[-1], self.final_linear):
            nn.init.zeros_(lin.weight)
            nn.init.zeros_(lin.bias)

    # ------------------------------------------------------------------ pieces

    def patchify(self, x: torch.Tensor) -> torch.Tensor:
        """``(B, C, H, W) -> (B, L, dim)`` with the position embedding added."""
        return self.x_embed(x).flatten(2).transpose(1, 2) + self.pos_embed

    def unpatchify(self, tokens: torch.Tensor) -> torch.Tensor:
        """``(B, L, p*p*C) -> (B, C, H, W)``."""
        b, p, c, g = tokens.shape[0], self.patch_size, self.in_channels, self.grid
        x = tokens.reshape(b, g, g, p, p, c)
        return torch.einsum("bhwpqc->bchpwq", x).reshape(b, c, g * p, g * p)

    def condition(self, t: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        """``c = emb(t) + emb(y)``, shape ``(B, dim)``."""
        emb = timestep_embedding(t, self.dim).to(self.y_embed.weight.dtype)  # the model's
        return self.t_embed(emb) + self.y_embed(y)

    def _check_inputs(self, x, t, y):
        if not torch.is_tensor(x):
            raise TypeError(f"x: expected a torch.Tensor (B, C, H, W), got {type(x).__name__}")
        if x.ndim != 4 or tuple(x.shape[1:]) != self.sample_shape or x.shape[0] == 0:
            raise ValueError(f"x: expected shape (B, {', '.join(map(str, self.sample_shape))})"
                             f" with B >= 1, got {tuple(x.shape)}")  # fmt: skip
        if not x.is_floating_point():
            raise TypeError(f"x: expected a floating tensor, got {x.dtype}")
        wdtype = self.final_linear.weight.dtype
        if x.dtype != wdtype:
            raise TypeError(f"x: expected the dtype of the model's weights ({wdtype}), got "
                            f"{x.dtype}; pass x.to({wdtype}) or convert the model with "
                            f".to({x.dtype})")  # fmt: skip
        if not torch.isfinite(x).all():
            raise ValueError("x: must be finite (it holds NaN or inf)")
        if not torch.is_tensor(t):
            raise TypeError(f"t: expected a torch.Tensor of timesteps, got {type(t).__name__}")
        if t.ndim != 1 or t.shape[0] != x.shape[0]:
            raise ValueError(f"t: expected shape ({x.shape[0]},), got {tuple(t.shape)}")
        if not torch.isfinite(t.float()).all() or (t < 0).any():
            raise ValueError("t: timesteps must be finite and >= 0")
        if not torch.is_tensor(y):
            raise TypeError(f"y: expected a LongTensor of labels, got {type(y).__name__}")
        if y.shape != (x.shape[0],) or y.dtype != torch.long:
            raise ValueError(f"y: expected a LongTensor of shape ({x.shape[0]},), got "
                             f"{y.dtype} {tuple(y.shape)}")  # fmt: skip
        if (y < 0).any() or (y > self.num_classes).any():
            raise ValueError(f"y: labels must lie in [0, {self.num_classes}] "
                             f"({self.num_classes} = null label), got values in "
                             f"[{int(y.min())}, {int(y.max())}]")  # fmt: skip

    def sample_ratios(self, t: torch.Tensor, *, routing: str = "none", ratio: float = 0.5,
                      ratios: Sequence[float] = NAR_RATIOS,
                      boundaries: Sequence[float] = NAR_BOUNDARIES,
                      num_timesteps: int = 1000) -> torch.Tensor | None:  # fmt: skip
        """Per-sample routing ratios ``(B,)`` for a routing mode (``None`` for ``"none"``)."""
        check_choice(routing, "routing", ROUTINGS)
        if routing == "none":
            return None
        if routing == "tread":
            return torch.full((len(t),), check_ratio(ratio), device=t.device)
        return noise_aware_ratios(check_timesteps(t, num_timesteps), num_timesteps=num_timesteps,
                                  boundaries=boundaries, ratios=ratios)  # fmt: skip

    # ------------------------------------------------------------------ forward

    def forward(self, x: torch.Tensor, t: torch.Tensor, y: torch.Tensor, *,
                routing: str = "none", ratio: float = 0.5,
                ratios: Sequence[float] = NAR_RATIOS,
                boundaries: Sequence[float] = NAR_BOUNDARIES, num_timesteps: int = 1000,
                generator: torch.Generator | None = None,
                ids_shuffle: torch.Tensor | None = None) -> torch.Tensor:  # fmt: skip
        """Predict the noise ``eps_theta(x_t, t, y)``.

        Parameters
        ----------
        x : Tensor, shape (B, C, H, W)
            Noisy images ``x_t``.
        t : Tensor, shape (B,)
            Timesteps (integers in ``[0, T)`` for noise-aware routing).
        y : LongTensor, shape (B,)
            Labels in ``[0, num_classes]`` (``num_classes``: the null label).
        routing : {"none", "tread", "noise_aware"}
            Token routing of the span in training mode (ignored in ``eval()``).
        ratio : float
            TREAD's ratio ``r`` in ``[0, 1)``.
        ratios, boundaries : sequences of float
            Noise-aware ratios per group and group edges (fractions of ``T``).
        num_timesteps : int
            ``T`` (for the noise groups).
        generator : torch.Generator, optional
            Source of the routing permutations.
        ids_shuffle : LongTensor, shape (B, L), optional
            Explicit per-sample permutations (instead of drawing them).

        Returns
        -------
        Tensor, shape (B, C, H, W)
            The predicted noise.
        """
        self._check_inputs(x, t, y)
        r = self.sample_ratios(t, routing=routing, ratio=ratio, ratios=ratios,
                               boundaries=boundaries, num_timesteps=num_timesteps)  # fmt: skip
        if not self.training:
            r = None  # no routing at inference
        if r is not None and ids_shuffle is not None:
            ids_shuffle = _check_permutations(ids_shuffle, x.shape[0], self.num_tokens)
        c = self.condition(t, y)  # (B, dim)
        h = self.patchify(x)  # (B, L, dim)
        for i in range(self.route_start):
            h = self.blocks[i](h, c)
        h = self.run_span(h, c, r, generator=generator, ids_shuffle=ids_shuffle)
        for i in range(self.route_end + 1, self.depth):
            h = self.blocks[i](h, c)
        shift, scale = self.final_adaLN(c).chunk(2, dim=1)
        out = self.final_linear(modulate(self.final_norm(h), shift, scale))  # (B, L, p*p*C)
        return self.unpatchify(out)

    def run_span(self, h: torch.Tensor, c: torch.Tensor, sample_ratios: torch.Tensor | None,
                 *, generator=None, ids_shuffle=None) -> torch.Tensor:  # fmt: skip
        """Blocks ``route_start .. route_end`` on ``h`` ``(B, L, dim)``, routed per sample.

        Samples with the same ratio form one sub-batch (one token count); a ratio that no
        sample has is simply absent (an empty group is skipped). Outputs are written back
        in the batch's order.
        """
        span = self.blocks[self.route_start : self.route_end + 1]
        return route_span(span, h, sample_ratios, c, generator=generator,
                          ids_shuffle=ids_shuffle)
