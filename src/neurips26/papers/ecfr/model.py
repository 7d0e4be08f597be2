"""The ECFR network: AFIR gating, HAC blocks and cross-modal decoders.

Inputs are frozen feature maps of two modalities on one grid, ``F_rgb (B, C_r, H, W)``
and ``F_d (B, C_d, H, W)``. Each is projected to width ``D`` by a 1x1 convolution (Step 1),
gated by the other modality in AFIR (Step 2), passed through HAC blocks (Step 3) and
decoded into the *other* modality's features (Step 4):
``F_rgb_hat = Dec_r(HAC(X_d'))`` and ``F_d_hat = Dec_d(HAC(X_r'))``.

``cross_mode`` selects where each decoder's input comes from:

- ``"gated"`` (ECFR's default): the source stream after AFIR; the target modality reaches
  it only through AFIR's channel and spatial gates.
- ``"strict"``: AFIR's gates of each stream come from that stream alone, so
  ``F_rgb_hat`` is a function of ``F_d`` only (and vice versa).
- ``"fused"``: both decoders read the fused ``Z = conv1x1([X_r'; X_d'])`` (the
  shortcut-prone ablation: each modality can copy itself through ``Z``).
- ``"same"``: each decoder reads its *own* stream (the same-modality, UniAD-like
  baseline with the identical body).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

from neurips26.common.validation import check_bool, check_choice, check_float, check_int

CROSS_MODES = ("gated", "strict", "fused", "same")


def _check_map(x, name: str, channels: int | None = None) -> torch.Tensor:
    if not isinstance(x, torch.Tensor):
        raise TypeError(f"{name} must be a torch.Tensor, got {type(x).__name__}")
    if x.ndim != 4:
        raise ValueError(f"{name} must have shape (B, C, H, W), got {tuple(x.shape)}")
    if channels is not None and x.shape[1] != channels:
        raise ValueError(f"{name} must have {channels} channels, got {x.shape[1]}")
    if x.numel() == 0:
        raise ValueError(f"{name} must not be empty, got shape {tuple(x.shape)}")
    if not torch.isfinite(x).all():
        raise ValueError(f"{name} must be finite (features contain NaN or inf)")
    return x


def _check_pair(a, b, name_a: str, name_b: str, ca=None, cb=None):
    a = _check_map(a, name_a, ca)
    b = _check_map(b, name_b, cb)
    if a.shape[0] != b.shape[0]:
        raise ValueError(f"{name_a} and {name_b} must have the same batch size, got "
                         f"{a.shape[0]} and {b.shape[0]}")  # fmt: skip
    if a.shape[2:] != b.shape[2:]:
        raise ValueError(f"{name_a} and {name_b} must share their spatial size, got "
                         f"{tuple(a.shape[2:])} and {tuple(b.shape[2:])}")  # fmt: skip
    return a, b


class AFIR(nn.Module):
    """Adaptive Feature Interaction and Recalibration (our reading; CBAM-style gating).

    Channel gates from both streams' global averages, a spatial gate of each stream from
    the *other* stream's channel mean and max, a residual recalibration and a 1x1 fusion.

    Parameters
    ----------
    dim : int
        Width ``D`` of both streams.
    reduction : int
        Hidden width of the channel-gate MLP is ``2 D / reduction``.
    spatial_kernel : int
        Odd kernel size of the spatial-gate convolution.

    Examples
    --------
    >>> afir = AFIR(8)
    >>> xr, xd = torch.randn(2, 8, 4, 4), torch.randn(2, 8, 4, 4)
    >>> out = afir(xr, xd)
    >>> tuple(out[0].shape), tuple(out[2].shape)
    ((2, 8, 4, 4), (2, 8, 4, 4))
    """

    def __init__(self, dim: int, *, reduction: int = 4, spatial_kernel: int = 7):
        super().__init__()
        dim = check_int(dim, "dim", min=1, max=1 << 14)
        reduction = check_int(reduction, "reduction", min=1, max=dim * 2)
        k = check_int(spatial_kernel, "spatial_kernel", min=1, max=31)
        if k % 2 == 0:
            raise ValueError(f"spatial_kernel must be odd, got {k}")
        hidden = max(1, 2 * dim // reduction)
        self.dim = dim
        # g_c = sigmoid(MLP([GAP(X_r); GAP(X_d)])): one MLP per gated stream.
        self.channel_rgb = nn.Sequential(nn.Linear(2 * dim, hidden), nn.GELU(),
                                         nn.Linear(hidden, dim))  # fmt: skip
        self.channel_depth = nn.Sequential(nn.Linear(2 * dim, hidden), nn.GELU(),
                                           nn.Linear(hidden, dim))  # fmt: skip
        # s = sigmoid(conv7x7([mean_c X; max_c X])) of the other stream.
        self.spatial_from_rgb = nn.Conv2d(2, 1, k, padding=k // 2, padding_mode="replicate")
        self.spatial_from_depth = nn.Conv2d(2, 1, k, padding=k // 2, padding_mode="replicate")
        self.fuse = nn.Conv2d(2 * dim, dim, 1)

    @staticmethod
    def _pool_stats(x: torch.Tensor) -> torch.Tensor:
        return torch.cat([x.mean(1, keepdim=True), x.amax(1, keepdim=True)], 1)  # (B, 2, H, W)

    def forward(self, x_rgb: torch.Tensor, x_depth: torch.Tensor, *,
                cross: bool = True) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:  # fmt: skip
        """Recalibrated streams and their fusion.

        Parameters
        ----------
        x_rgb, x_depth : Tensor (B, D, H, W)
            Projected streams ``X_r``, ``X_d``.
        cross : bool
            With False each stream's gates come from itself only (the strict mode).

        Returns
        -------
        x_rgb_prime, x_depth_prime, z : Tensor (B, D, H, W) each
            ``X_r'``, ``X_d'`` and ``Z = conv1x1([X_r'; X_d'])``.
        """
        x_rgb, x_depth = _check_pair(x_rgb, x_depth, "x_rgb", "x_depth", self.dim, self.dim)
        check_bool(cross, "cross")
        gap_r, gap_d = x_rgb.mean((2, 3)), x_depth.mean((2, 3))  # (B, D)
        if cross:
            both = torch.cat([gap_r, gap_d], 1)  # (B, 2D)
            in_r, in_d = both, both
            stats_for_r, stats_for_d = self._pool_stats(x_depth), self._pool_stats(x_rgb)
            s_r = torch.sigmoid(self.spatial_from_depth(stats_for_r))  # s^d gates RGB
            s_d = torch.sigmoid(self.spatial_from_rgb(stats_for_d))  # s^r gates depth
        else:
            in_r, in_d = torch.cat([gap_r, gap_r], 1), torch.cat([gap_d, gap_d], 1)
            s_r = torch.sigmoid(self.spatial_from_depth(self._pool_stats(x_rgb)))
            s_d = torch.sigmoid(self.spatial_from_rgb(self._pool_stats(x_depth)))
        g_r = torch.sigmoid(self.channel_rgb(in_r))[..., None, None]  # (B, D, 1, 1)
        g_d = torch.sigmoid(self.channel_depth(in_d))[..., None, None]
        xr = x_rgb * g_r * s_r + x_rgb  # X_r' = X_r * g_c^r * s^d + X_r
        xd = x_depth * g_d * s_d + x_depth  # X_d' = X_d * g_c^d * s^r + X_d
        z = self.fuse(torch.cat([xr, xd], 1))  # Z = conv1x1([X_r'; X_d'])
        return xr, xd, z


class _ChannelNorm(nn.LayerNorm):
    """LayerNorm over the channel axis of (B, C, H, W)."""

    def forward(self, x):
        return super().forward(x.permute(0, 2, 3, 1)).permute(0, 3, 1, 2)


class WindowAttention(nn.Module):
    """Multi-head self-attention inside non-overlapping ``window x window`` windows.

    The grid is padded (replicate) up to a multiple of the window and cropped back.
    """

    def __init__(self, dim: int, *, window_size: int = 4, num_heads: int = 4):
        super().__init__()
        self.dim = check_int(dim, "dim", min=1, max=1 << 14)
        self.window = check_int(window_size, "window_size", min=1, max=256)
        self.heads = check_int(num_heads, "num_heads", min=1, max=dim)
        if dim % num_heads:
            raise ValueError(f"num_heads must divide dim, got num_heads={num_heads}, dim={dim}")
        self.qkv = nn.Linear(dim, 3 * dim)
        self.proj = nn.Linear(dim, dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        B, C, H, W = x.shape
        w = self.window
        ph, pw = (-H) % w, (-W) % w
        if ph or pw:
            x = F.pad(x, (0, pw, 0, ph), mode="replicate")
        Hp, Wp = H + ph, W + pw
        t = x.view(B, C, Hp // w, w, Wp // w, w).permute(0, 2, 4, 3, 5, 1)
        t = t.reshape(-1, w * w, C)  # (B * windows, w^2, C)
        q, k, v = self.qkv(t).view(t.shape[0], w * w, 3, self.heads, C // self.heads).unbind(2)
        q, k, v = (a.transpose(1, 2) for a in (q, k, v))  # (Bw, heads, w^2, C/h)
        att = (q @ k.transpose(-2, -1)) * (C // self.heads) ** -0.5
        o = (att.softmax(-1) @ v).transpose(1, 2).reshape(t.shape[0], w * w, C)
        o = self.proj(o).view(B, Hp // w, Wp // w, w, w, C).permute(0, 5, 1, 3, 2, 4)
        return o.reshape(B, C, Hp, Wp)[:, :, :H, :W]


class HAC(nn.Module):
    """Hybrid Attention Convolution block (our reading).

    ``x = x + DWConv(LN(x)) + WMSA(LN(x))``; ``x = x + MLP(LN(x))``: a depthwise-convolution
    branch (local texture) in parallel with window self-attention (context within a window),
    summed with a residual, then a LayerNorm-MLP residual. Padding is ``replicate``, so an
    input constant over space gives an output constant over space.

    Parameters
    ----------
    dim : int
    window_size : int
    num_heads : int
    kernel_size : int
        Odd size of the depthwise convolution.
    mlp_ratio : float

    Examples
    --------
    >>> hac = HAC(8, num_heads=2)
    >>> tuple(hac(torch.randn(1, 8, 6, 6)).shape)
    (1, 8, 6, 6)
    """

    def __init__(self, dim: int, *, window_size: int = 4, num_heads: int = 4,
                 kernel_size: int = 3, mlp_ratio: float = 2.0):  # fmt: skip
        super().__init__()
        dim = check_int(dim, "dim", min=1, max=1 << 14)
        k = check_int(kernel_size, "kernel_size", min=1, max=31)
        if k % 2 == 0:
            raise ValueError(f"kernel_size must be odd, got {k}")
        mlp_ratio = check_float(mlp_ratio, "mlp_ratio", min=0.01, max=64)
        self.dim = dim
        self.norm1 = _ChannelNorm(dim)
        self.dw = nn.Sequential(
            nn.Conv2d(dim, dim, k, padding=k // 2, groups=dim, padding_mode="replicate"),
            nn.GELU(), nn.Conv2d(dim, dim, 1))  # fmt: skip
        self.attn = WindowAttention(dim, window_size=window_size, num_heads=num_heads)
        self.norm2 = _ChannelNorm(dim)
        hidden = max(1, round(dim * mlp_ratio))
        self.mlp = nn.Sequential(nn.Conv2d(dim, hidden, 1), nn.GELU(), nn.Conv2d(hidden, dim, 1))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = _check_map(x, "x", self.dim)
        h = self.norm1(x)
        x = x + self.dw(h) + self.attn(h)  # local (DW conv) + windowed global (W-MSA)
        return x + self.mlp(self.norm2(x))


class ConvBlock(nn.Module):
    """The plain residual convolution block that replaces HAC in the ablation."""

    def __init__(self, dim: int, *, mlp_ratio: float = 2.0):
        super().__init__()
        self.dim = check_int(dim, "dim", min=1, max=1 << 14)
        hidden = max(1, round(dim * check_float(mlp_ratio, "mlp_ratio", min=0.01, max=64)))
        self.body = nn.Sequential(nn.Conv2d(dim, hidden, 3, padding=1, padding_mode="replicate"),
                                  nn.GELU(), nn.Conv2d(hidden, dim, 1))  # fmt: skip

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + self.body(_check_map(x, "x", self.dim))


@dataclass(frozen=True)
class Reconstruction:
    """Reconstructed features: ``rgb_hat (B, C_r, H, W)`` and ``depth_hat (B, C_d, H, W)``."""

    rgb_hat: torch.Tensor
    depth_hat: torch.Tensor


class ECFR(nn.Module):
    """Efficient Cross-modal Feature Reconstruction head.

    Parameters
    ----------
    rgb_channels, depth_channels : int
        ``C_r`` and ``C_d`` of the input feature maps.
    dim : int
        Width ``D`` after projection.
    num_blocks : int
        HAC blocks per decoder path.
    cross_mode : {"gated", "strict", "fused", "same"}
        See the module docstring (``"same"`` is the same-modality baseline).
    use_afir, use_hac : bool
        Ablations: without AFIR the streams pass ungated (``X' = X``, ``Z`` a 1x1 fusion);
        without HAC its blocks are plain residual convolution blocks.
    window_size, num_heads : int
        HAC's window attention.

    Examples
    --------
    >>> m = ECFR(6, 5, dim=8, num_blocks=1, num_heads=2)
    >>> r = m(torch.randn(2, 6, 8, 8), torch.randn(2, 5, 8, 8))
    >>> tuple(r.rgb_hat.shape), tuple(r.depth_hat.shape)
    ((2, 6, 8, 8), (2, 5, 8, 8))
    """

    def __init__(self, rgb_channels: int, depth_channels: int, *, dim: int = 64,
                 num_blocks: int = 2, cross_mode: str = "gated", use_afir: bool = True,
                 use_hac: bool = True, window_size: int = 4, num_heads: int = 4):  # fmt: skip
        super().__init__()
        self.rgb_channels = check_int(rgb_channels, "rgb_channels", min=1, max=1 << 16)
        self.depth_channels = check_int(depth_channels, "depth_channels", min=1, max=1 << 16)
        dim = check_int(dim, "dim", min=1, max=1 << 14)
        num_blocks = check_int(num_blocks, "num_blocks", min=0, max=64)
        self.cross_mode = check_choice(cross_mode, "cross_mode", CROSS_MODES)
        self.use_afir = check_bool(use_afir, "use_afir")
        self.use_hac = check_bool(use_hac, "use_hac")
        self.proj_rgb = nn.Conv2d(rgb_channels, dim, 1)  # Step 1: 1x1 projections
        self.proj_depth = nn.Conv2d(depth_channels, dim, 1)
        self.afir = AFIR(dim) if use_afir else None
        self.fuse = None if use_afir else nn.Conv2d(2 * dim, dim, 1)

        def body():
            if use_hac:
                return nn.Sequential(*[HAC(dim, window_size=window_size, num_heads=num_heads)
                                       for _ in range(num_blocks)])  # fmt: skip
            return nn.Sequential(*[ConvBlock(dim) for _ in range(num_blocks)])

        self.body_to_rgb, self.body_to_depth = body(), body()
        self.dec_rgb = nn.Sequential(nn.Conv2d(dim, dim, 1), nn.GELU(),
                                     nn.Conv2d(dim, rgb_channels, 1))  # fmt: skip
        self.dec_depth = nn.Sequential(nn.Conv2d(dim, dim, 1), nn.GELU(),
                                       nn.Conv2d(dim, depth_channels, 1))  # fmt: skip

    def forward(self, f_rgb: torch.Tensor, f_depth: torch.Tensor) -> Reconstruction:
        """Reconstruct both modalities' features.

        Parameters
        ----------
        f_rgb : Tensor (B, C_r, H, W)
        f_depth : Tensor (B, C_d, H, W)

        Returns
        -------
        Reconstruction
        """
        f_rgb, f_depth = _check_pair(f_rgb, f_depth, "f_rgb", "f_depth", self.rgb_channels,
                                     self.depth_channels)  # fmt: skip
        xr, xd = self.proj_rgb(f_rgb), self.proj_depth(f_depth)  # (B, D, H, W)
        if self.afir is not None:
            xr, xd, z = self.afir(xr, xd, cross=self.cross_mode != "strict")
        else:
            z = self.fuse(torch.cat([xr, xd], 1))
        src_for_rgb, src_for_depth = {
            "gated": (xd, xr), "strict": (xd, xr), "fused": (z, z), "same": (xr, xd),
        }[self.cross_mode]  # fmt: skip
        rgb_hat = self.dec_rgb(self.body_to_rgb(src_for_rgb))  # F_rgb_hat = Dec_r(HAC(X_d'))
        depth_hat = self.dec_depth(self.body_to_depth(src_for_depth))  # Dec_d(HAC(X_r'))
        return Reconstruction(rgb_hat, depth_hat)


def cosine_distance(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """Per-pixel ``1 - cos(a, b)`` over channels: (B, C, H, W) x2 -> (B, H, W)."""
    return 1.0 - F.cosine_similarity(a, b, dim=1, eps=1e-8)


def reconstruction_loss(model: nn.Module, f_rgb: torch.Tensor, f_depth: torch.Tensor, *,
                        l2_weight: float = 0.0) -> torch.Tensor:  # fmt: skip
    """``L = sum_m mean_pixels (1 - cos(F_hat_m, F_m))`` (+ ``l2_weight`` x the MSE)."""
    r = model(f_rgb, f_depth)
    loss = cosine_distance(r.rgb_hat, f_rgb).mean() + cosine_distance(r.depth_hat, f_depth).mean()
    if l2_weight:
        loss = loss + l2_weight * (F.mse_loss(r.rgb_hat, f_rgb) + F.mse_loss(r.depth_hat, f_depth))
    return loss
