"""TREAD token routing and the noise-aware per-sample routing ratios.

TREAD (Krause et al., 2025) lets a random share ``r`` of a sequence's tokens *bypass* a
span of the transformer's middle blocks during training: at ``route_start`` each sample's
tokens are shuffled, the first ``K = ceil((1 - r) L)`` go through the span, and at
``route_end`` the ``L - K`` others are put back in their original positions with the
activation they had before the span. Noise-Aware Routing (NAR) gives each sample its own
ratio from its diffusion timestep: the batch is split into low-, middle- and high-noise
groups (``t`` in ``[0, T/3)``, ``[T/3, 2T/3)``, ``[2T/3, T)``) with increasing ratios
``(0.25, 0.5, 0.75)``, whose mean over uniform ``t`` is TREAD's default 0.5.

Everything here works on ``(B, L, C)`` token tensors and is independent of the model.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass

import torch

from neurips26.common.validation import check_float, check_int

#: Largest number of timesteps accepted (a schedule of more steps cannot be sampled here).
MAX_TIMESTEPS = 1_000_000
#: Most noise groups accepted.
MAX_GROUPS = 64

#: The paper's (inferred) default ratios of the low-, middle- and high-noise groups.
NAR_RATIOS = (0.25, 0.5, 0.75)
#: The group boundaries, as fractions of the number of timesteps ``T``.
NAR_BOUNDARIES = (1 / 3, 2 / 3)


@dataclass(frozen=True)
class RouteInfo:
    """How a batch was routed by :func:`route_start`.

    Attributes
    ----------
    ids_shuffle : LongTensor, shape (B, L)
        Each sample's permutation of its token positions; the first ``num_keep`` go
        through the routed span.
    ids_keep : LongTensor, shape (B, K)
        Positions of the tokens that go through the span (``ids_shuffle[:, :K]``).
    ids_restore : LongTensor, shape (B, L)
        The inverse permutation: ``ids_shuffle.gather(1, ids_restore)`` is ``arange(L)``.
    num_keep : int
        ``K = ceil((1 - r) L)``.
    """

    ids_shuffle: torch.Tensor
    ids_keep: torch.Tensor
    ids_restore: torch.Tensor
    num_keep: int

    @property
    def num_tokens(self) -> int:
        """``L``, the full sequence length."""
        return int(self.ids_shuffle.shape[1])

    @property
    def ids_bypass(self) -> torch.Tensor:
        """Positions of the tokens that skip the span, shape ``(B, L - K)``."""
        return self.ids_shuffle[:, self.num_keep :]


def check_ratio(ratio, name: str = "ratio") -> float:
    """A routing ratio ``r`` in ``[0, 1)`` (``r = 1`` would route every token away)."""
    return check_float(ratio, name, min=0.0, max=1.0, max_inclusive=False)


def check_tokens(x, name: str = "x") -> torch.Tensor:
    """A finite floating ``(B, L, C)`` tensor with ``B, L, C >= 1``."""
    if not torch.is_tensor(x):
        raise TypeError(f"{name}: expected a torch.Tensor of shape (B, L, C), got "
                        f"{type(x).__name__}")  # fmt: skip
    if x.ndim != 3 or 0 in x.shape:
        raise ValueError(f"{name}: expected a non-empty (B, L, C) tensor, got {tuple(x.shape)}")
    if not x.is_floating_point():
        raise TypeError(f"{name}: expected a floating tensor, got {x.dtype}")
    if not torch.isfinite(x).all():
        raise ValueError(f"{name}: must be finite (it holds NaN or inf)")
    return x


def num_kept(num_tokens: int, ratio: float) -> int:
    """``K = ceil((1 - r) L)``: how many of ``L`` tokens go through the routed span.

    Examples
    --------
    >>> num_kept(64, 0.5), num_kept(64, 0.75), num_kept(64, 0.0), num_kept(3, 0.5)
    (32, 16, 64, 2)
    """
    num_tokens = check_int(num_tokens, "num_tokens", min=1)
    ratio = check_ratio(ratio)
    # round() first so that (1 - 0.75) * 64 = 16.000000000000004 keeps 16, not 17.
    return max(1, math.ceil(round((1.0 - ratio) * num_tokens, 9)))


def _check_permutations(ids_shuffle, batch: int, length: int) -> torch.Tensor:
    if not torch.is_tensor(ids_shuffle):
        raise TypeError(f"ids_shuffle: expected a LongTensor (B, L), got "
                        f"{type(ids_shuffle).__name__}")  # fmt: skip
    if ids_shuffle.shape != (batch, length):
        raise ValueError(f"ids_shuffle: expected shape {(batch, length)}, got "
                         f"{tuple(ids_shuffle.shape)}")  # fmt: skip
    if ids_shuffle.dtype != torch.long:
        raise TypeError(f"ids_shuffle: expected dtype torch.long, got {ids_shuffle.dtype}")
    ok = torch.equal(ids_shuffle.sort(1).values.cpu(),
                     torch.arange(length).expand(batch, length))  # fmt: skip
    if not ok:
        raise ValueError("ids_shuffle: each row must be a permutation of 0..L-1")
    return ids_shuffle


def random_permutations(batch: int, length: int, *, generator: torch.Generator | None = None,
                        device=None) -> torch.Tensor:  # fmt: skip
    """One uniform random permutation of ``0..L-1`` per sample, shape ``(B, L)``.

    As in TREAD (and MAE): the argsort of i.i.d. uniform noise.
    """
    batch = check_int(batch, "batch", min=1, max=10**7)
    length = check_int(length, "length", min=1, max=10**6)
    noise = torch.rand(batch, length, generator=generator, device=device)
    return noise.argsort(dim=1)


def route_start(x: torch.Tensor, ratio: float, *, generator: torch.Generator | None = None,
                ids_shuffle: torch.Tensor | None = None
                ) -> tuple[torch.Tensor, RouteInfo]:  # fmt: skip
    """Keep ``K = ceil((1 - r) L)`` random tokens of each sample for the routed span.

    Parameters
    ----------
    x : Tensor, shape (B, L, C)
        Token activations entering the span.
    ratio : float
        The routing ratio ``r`` in ``[0, 1)``: the share of tokens that bypass the span.
    generator : torch.Generator, optional
        Source of the permutations.
    ids_shuffle : LongTensor, shape (B, L), optional
        Use these permutations instead of drawing them.

    Returns
    -------
    x_routed : Tensor, shape (B, K, C)
        The kept tokens, in the order of ``ids_shuffle``.
    info : RouteInfo

    Examples
    --------
    >>> x = torch.arange(8.0).reshape(1, 4, 2)
    >>> xr, info = route_start(x, 0.5, ids_shuffle=torch.tensor([[2, 0, 3, 1]]))
    >>> xr.tolist(), info.num_keep
    ([[[4.0, 5.0], [0.0, 1.0]]], 2)
    """
    x = check_tokens(x)
    b, length, c = x.shape
    k = num_kept(length, ratio)
    if ids_shuffle is None:
        ids_shuffle = random_permutations(b, length, generator=generator, device=x.device)
    else:
        ids_shuffle = _check_permutations(ids_shuffle, b, length).to(x.device)
    ids_restore = ids_shuffle.argsort(dim=1)  # (B, L): the inverse permutation
    ids_keep = ids_shuffle[:, :k]  # (B, K)
    x_routed = x.gather(1, ids_keep.unsqueeze(-1).expand(b, k, c))  # (B, K, C)
    return x_routed, RouteInfo(ids_shuffle, ids_keep, ids_restore, k)


def route_end(x_routed: torch.Tensor, info: RouteInfo, x_before: torch.Tensor) -> torch.Tensor:
    """Put the routed tokens back in place; the bypassing ones keep ``x_before``.

    Parameters
    ----------
    x_routed : Tensor, shape (B, K, C)
        The kept tokens after the span.
    info : RouteInfo
        From the :func:`route_start` call that opened the span.
    x_before : Tensor, shape (B, L, C)
        The activations that entered the span (the bypassing tokens' values).

    Returns
    -------
    Tensor, shape (B, L, C)
        Position ``ids_keep[b, j]`` holds ``x_routed[b, j]``; every other position holds
        ``x_before``.

    Examples
    --------
    >>> x = torch.arange(8.0).reshape(1, 4, 2)
    >>> xr, info = route_start(x, 0.5, ids_shuffle=torch.tensor([[2, 0, 3, 1]]))
    >>> route_end(xr + 100, info, x)[0, :, 0].tolist()
    [100.0, 2.0, 104.0, 6.0]
    """
    if not isinstance(info, RouteInfo):
        raise TypeError(f"info: expected a RouteInfo, got {type(info).__name__}")
    x_routed = check_tokens(x_routed, "x_routed")
    x_before = check_tokens(x_before, "x_before")
    b, length, c = x_before.shape
    if x_routed.shape != (b, info.num_keep, c):
        raise ValueError(f"x_routed: expected shape {(b, info.num_keep, c)}, got "
                         f"{tuple(x_routed.shape)}")  # fmt: skip
    if info.ids_shuffle.shape != (b, length):
        raise ValueError(f"x_before: shape {tuple(x_before.shape)} does not match the "
                         f"routing of {tuple(info.ids_shuffle.shape)} tokens")  # fmt: skip
    bypass = info.ids_bypass  # (B, L - K)
    x_bypass = x_before.gather(1, bypass.unsqueeze(-1).expand(b, length - info.num_keep, c))
    x_shuffled = torch.cat([x_routed, x_bypass], dim=1)  # (B, L, C) in shuffled order
    return x_shuffled.gather(1, info.ids_restore.unsqueeze(-1).expand(b, length, c))


def route_span(blocks, x: torch.Tensor, ratios, *per_sample: torch.Tensor,
               generator: torch.Generator | None = None,
               ids_shuffle: torch.Tensor | None = None) -> torch.Tensor:
    """Run a span of a user's transformer blocks with per-sample token routing.

    Samples that share a ratio ``r`` form one sub-batch: each keeps ``K = ceil((1 - r) L)``
    random tokens (:func:`route_start`), the blocks run on those only, and the bypassing
    tokens rejoin with their value from before the span (:func:`route_end`). Outputs are
    written back in the batch's order, so the span stays a drop-in replacement for
    ``for blk in blocks: x = blk(x, *per_sample)``. This is what
    :meth:`~neurips26.papers.noise_aware_routing.MiniDiT.run_span` does for our DiT.

    Parameters
    ----------
    blocks : sequence of callables
        The span, each called as ``blk(x, *per_sample)`` on a sub-batch: a
        ``torch.nn.ModuleList`` of DiT blocks taking ``(x, c)``, or wrappers such as
        ``lambda x, temb: blk(x, temb=temb)`` around diffusers blocks.
    x : Tensor, shape (B, L, C)
        Token activations entering the span.
    ratios : Tensor (B,), float, or None
        Each sample's routing ratio in ``[0, 1)`` (e.g. :func:`noise_aware_ratios`); a
        float routes every sample alike; ``None`` runs the span unrouted.
    *per_sample : Tensor, leading dimension B
        Further per-sample inputs of every block (the conditioning), sliced per group.
    generator : torch.Generator, optional
        Source of the permutations.
    ids_shuffle : LongTensor (B, L), optional
        Use these permutations instead of drawing them.

    Returns
    -------
    Tensor, shape (B, L, C)

    Examples
    --------
    >>> blocks = [lambda x: x + 1.0]
    >>> x = torch.zeros(2, 4, 3)
    >>> out = route_span(blocks, x, torch.tensor([0.0, 0.5]))
    >>> out[0].sum().item(), out[1].sum().item()  # every token / half the tokens moved
    (12.0, 6.0)
    """
    x = check_tokens(x)
    b, length, _ = x.shape
    if hasattr(blocks, "__iter__") and not isinstance(blocks, (str, bytes, torch.Tensor)):
        blocks = list(blocks)
    elif callable(blocks):
        blocks = [blocks]  # one block
    else:
        raise TypeError(f"blocks: expected a sequence of callables, got {type(blocks).__name__}")
    for i, blk in enumerate(blocks):
        if not callable(blk):
            raise TypeError(f"blocks[{i}]: not callable ({type(blk).__name__})")
    for i, t in enumerate(per_sample):
        if not torch.is_tensor(t) or t.ndim == 0 or t.shape[0] != b:
            raise ValueError(f"per_sample[{i}]: expected a tensor with leading dimension {b}, "
                             f"got {getattr(t, 'shape', type(t).__name__)}")
    if ratios is None:
        for blk in blocks:
            x = blk(x, *per_sample)
        return x
    if isinstance(ratios, (int, float)) and not isinstance(ratios, bool):
        ratios = torch.full((b,), check_ratio(ratios, "ratios"))
    if not torch.is_tensor(ratios) or ratios.shape != (b,) or not ratios.is_floating_point():
        raise ValueError(f"ratios: expected a float tensor of shape ({b},), a float or None, "
                         f"got {getattr(ratios, 'shape', type(ratios).__name__)}")
    values = torch.unique(ratios).tolist()
    for v in values:
        check_ratio(v, "ratios")
    if ids_shuffle is None:
        ids_shuffle = random_permutations(b, length, generator=generator, device=x.device)
    else:
        ids_shuffle = _check_permutations(ids_shuffle, b, length).to(x.device)
    out = torch.empty_like(x)
    for value in values:
        idx = (ratios == value).nonzero(as_tuple=True)[0]  # (B_g,)
        xg = x[idx]
        args = [t[idx] for t in per_sample]
        xr, info = route_start(xg, value, ids_shuffle=ids_shuffle[idx])  # (B_g, K_g, C)
        for blk in blocks:
            xr = blk(xr, *args)
        out[idx] = route_end(xr, info, xg)  # bypassing tokens keep their pre-span value
    return out


def check_timesteps(t, num_timesteps: int, name: str = "t") -> torch.Tensor:
    """Integer timesteps ``(B,)`` in ``[0, T)`` as a LongTensor."""
    if not torch.is_tensor(t):
        raise TypeError(f"{name}: expected a torch.Tensor of timesteps, got {type(t).__name__}")
    if t.ndim != 1 or t.numel() == 0:
        raise ValueError(f"{name}: expected a non-empty 1-D tensor, got shape {tuple(t.shape)}")
    if t.is_floating_point():
        if not torch.isfinite(t).all() or not torch.equal(t, t.round()):
            raise ValueError(f"{name}: timesteps must be integers")
        t = t.long()
    elif t.dtype == torch.bool or t.is_complex():
        raise TypeError(f"{name}: expected integer timesteps, got {t.dtype}")
    if int(t.min()) < 0 or int(t.max()) >= num_timesteps:
        raise ValueError(f"{name}: timesteps must lie in [0, {num_timesteps}), got values in "
                         f"[{int(t.min())}, {int(t.max())}]")  # fmt: skip
    return t.long()


def check_groups(boundaries: Sequence[float], ratios: Sequence[float]
                 ) -> tuple[tuple[float, ...], tuple[float, ...]]:  # fmt: skip
    """Boundaries strictly increasing in ``(0, 1)``; one ratio in ``[0, 1)`` per group."""
    if isinstance(boundaries, (str, bytes)) or not isinstance(boundaries, Sequence):
        raise TypeError(f"boundaries: expected a sequence of floats, got "
                        f"{type(boundaries).__name__}")  # fmt: skip
    if isinstance(ratios, (str, bytes)) or not isinstance(ratios, Sequence):
        raise TypeError(f"ratios: expected a sequence of floats, got {type(ratios).__name__}")
    if len(boundaries) > MAX_GROUPS:
        raise ValueError(f"boundaries: at most {MAX_GROUPS} boundaries, got {len(boundaries)}")
    bounds = tuple(check_float(b, "boundaries", min=0.0, max=1.0, min_inclusive=False,
                               max_inclusive=False) for b in boundaries)  # fmt: skip
    if any(b >= a for b, a in itertools.pairwise(bounds)):
        raise ValueError(f"boundaries: must be strictly increasing, got {bounds}")
    rs = tuple(check_ratio(r, "ratios") for r in ratios)
    if len(rs) != len(bounds) + 1:
        raise ValueError(f"ratios: expected {len(bounds) + 1} ratios (one per group between "
                         f"the {len(bounds)} boundaries), got {len(rs)}")  # fmt: skip
    return bounds, rs


def noise_groups(t: torch.Tensor, *, num_timesteps: int = 1000,
                 boundaries: Sequence[float] = NAR_BOUNDARIES) -> torch.Tensor:  # fmt: skip
    """The noise group of each sample: ``g = #{b : t >= b T}`` (0 = lowest noise).

    A timestep exactly on a boundary belongs to the group above it.

    Examples
    --------
    >>> noise_groups(torch.tensor([0, 332, 333, 665, 666, 998]), num_timesteps=999).tolist()
    [0, 0, 1, 1, 2, 2]
    """
    num_timesteps = check_int(num_timesteps, "num_timesteps", min=1, max=MAX_TIMESTEPS)
    if isinstance(boundaries, (str, bytes)) or not isinstance(boundaries, Sequence):
        raise TypeError(f"boundaries: expected a sequence of floats, got "
                        f"{type(boundaries).__name__}")  # fmt: skip
    bounds, _ = check_groups(boundaries, (0.0,) * (len(boundaries) + 1))
    t = check_timesteps(t, num_timesteps)
    # Integer thresholds ceil(b T): t >= b T  <=>  t >= ceil(b T) for integer t (the small
    # slack keeps 1/3 * 999 = 332.99999999999994 at 333).
    thresholds = torch.tensor([math.ceil(round(b * num_timesteps, 9)) for b in bounds],
                              dtype=torch.long, device=t.device)  # fmt: skip
    return (t.unsqueeze(1) >= thresholds).sum(1)


def noise_aware_ratios(t: torch.Tensor, *, num_timesteps: int = 1000,
                       boundaries: Sequence[float] = NAR_BOUNDARIES,
                       ratios: Sequence[float] = NAR_RATIOS) -> torch.Tensor:  # fmt: skip
    """Per-sample routing ratios by noise level (the method's allocation rule).

    Parameters
    ----------
    t : LongTensor, shape (B,)
        Diffusion timesteps in ``[0, T)``; larger ``t`` means more noise.
    num_timesteps : int
        ``T``.
    boundaries : sequence of float
        Group edges as fractions of ``T``, strictly increasing in ``(0, 1)``.
    ratios : sequence of float
        One ratio in ``[0, 1)`` per group, lowest noise first (NAR: increasing).

    Returns
    -------
    Tensor, shape (B,)
        ``ratios[g(t)]``, float32.

    Examples
    --------
    >>> noise_aware_ratios(torch.tensor([0, 400, 999])).tolist()
    [0.25, 0.5, 0.75]
    """
    bounds, rs = check_groups(boundaries, ratios)
    g = noise_groups(t, num_timesteps=num_timesteps, boundaries=bounds)
    return torch.tensor(rs, dtype=torch.float32, device=g.device)[g]


def expected_ratio(*, num_timesteps: int = 1000, boundaries: Sequence[float] = NAR_BOUNDARIES,
                   ratios: Sequence[float] = NAR_RATIOS) -> float:  # fmt: skip
    """Mean per-sample ratio under uniform ``t`` on ``{0, ..., T-1}`` (exact).

    Examples
    --------
    >>> round(expected_ratio(num_timesteps=999), 12)
    0.5
    """
    t = torch.arange(check_int(num_timesteps, "num_timesteps", min=1, max=MAX_TIMESTEPS))
    return float(noise_aware_ratios(t, num_timesteps=num_timesteps, boundaries=boundaries,
                                    ratios=ratios).double().mean())  # fmt: skip
