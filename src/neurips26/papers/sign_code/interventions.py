"""Interventions inside the forward pass: random magnitudes with true signs, sign flips.

Both are context managers that install forward hooks on every activation site and remove
them on exit. A site's output ``h = phi(z)`` is replaced by

- magnitude randomisation: ``sign(z) * |xi|``, ``xi ~ N(0, sigma_l^2)`` with ``sigma_l``
  the training RMS of ``h`` at that site (``mode="gaussian"``); or ``sign(z)`` times the
  true magnitudes shuffled across the units of the site, per input (``mode="shuffle"``);
  or ``sign(z) * |h|`` itself (``mode="true"``, an identity for sign-preserving ``phi``);
- sign flipping: ``-h`` on each unit independently with probability ``fraction``.

In a ResNet the hooks act in every block, residual branches included.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import dataclass, field

import numpy as np
import torch
from torch import nn

from neurips26.common.torch import make_generator
from neurips26.common.validation import check_float

from .codes import _as_inputs
from .networks import activation_sites, is_sign_preserving

MODES = ("gaussian", "shuffle", "true")


def _sign(z: torch.Tensor) -> torch.Tensor:
    return torch.where(z >= 0, 1.0, -1.0).to(z.dtype)


@torch.no_grad()
def calibrate_magnitudes(model: nn.Module, x, *, batch_size: int = 512) -> tuple[float, ...]:
    """The RMS of each activation site's output ``h`` over inputs ``x`` (``sigma_l``)."""
    x = _as_inputs(x)
    sites = [m for _, m in activation_sites(model)]
    sq = [0.0] * len(sites)
    cnt = [0] * len(sites)
    handles = []
    for i, s in enumerate(sites):

        def hook(m, inp, out, i=i):
            sq[i] += float(out.double().pow(2).sum())
            cnt[i] += out.numel()

        handles.append(s.register_forward_hook(hook))
    was = model.training
    model.eval()
    device = next(model.parameters()).device
    try:
        for start in range(0, len(x), batch_size):
            model(x[start : start + batch_size].to(device))
    finally:
        for h in handles:
            h.remove()
        model.train(was)
    return tuple(float(np.sqrt(s / c)) for s, c in zip(sq, cnt, strict=True))


@contextlib.contextmanager
def randomize_magnitudes(model: nn.Module, rms: tuple[float, ...] | None = None, *,
                         mode: str = "gaussian", seed: int = 0,
                         allow_non_sign_preserving: bool = False,
                         only: tuple[int, ...] | None = None) -> Iterator[None]:  # fmt: skip
    """Replace every site's magnitudes while keeping the signs of its pre-activations.

    Parameters
    ----------
    model : nn.Module
    rms : tuple of float, optional
        ``sigma_l`` per site (from :func:`calibrate_magnitudes`); needed for ``"gaussian"``.
    mode : {"gaussian", "shuffle", "true"}
    seed : int
        Seeds the noise (a fresh generator, so the same seed gives the same noise).
    allow_non_sign_preserving : bool
        ReLU sites are refused unless this is set (their outputs carry no sign).
    only : tuple of int, optional
        Indices (into :func:`activation_sites`' order) of the sites to randomise; the
        others keep their outputs. Default: every site.

    Examples
    --------
    >>> from neurips26.papers.sign_code import make_mlp
    >>> net = make_mlp(dim_in=4, width=8, num_classes=3)
    >>> x = torch.randn(6, 4)
    >>> with randomize_magnitudes(net, mode="true"):
    ...     same = net(x)
    >>> bool(torch.allclose(same, net(x)))
    True
    """
    if mode not in MODES:
        raise ValueError(f"mode: {mode!r} is not one of {MODES}")
    sites = [m for _, m in activation_sites(model)]
    if not allow_non_sign_preserving:
        bad = [type(m).__name__ for m in sites if not is_sign_preserving(m)]
        if bad:
            raise ValueError(
                f"model: activations {sorted(set(bad))} are not sign-preserving; pass "
                "allow_non_sign_preserving=True to randomise them anyway"
            )
    if mode == "gaussian":
        if rms is None or len(rms) != len(sites):
            raise ValueError(f"rms: expected {len(sites)} per-site RMS values for mode='gaussian'")
        if not all(np.isfinite(r) and r >= 0 for r in rms):
            raise ValueError("rms: values must be finite and >= 0")
    if only is not None:
        if isinstance(only, (str, bytes)) or not all(
                isinstance(i, (int, np.integer)) and not isinstance(i, bool) for i in only):
            raise TypeError("only: expected a tuple of site indices (int)")
        only = tuple(int(i) for i in only)
        if any(not 0 <= i < len(sites) for i in only):
            raise ValueError(f"only: site indices must lie in [0, {len(sites)}), got {only}")
    gen = make_generator(seed)
    handles = []
    for i, s in enumerate(sites):
        if only is not None and i not in only:
            continue

        def hook(m, inp, out, i=i):
            sign = _sign(inp[0])
            if mode == "true":
                return sign * out.abs()
            if mode == "gaussian":
                noise = torch.randn(out.shape, generator=gen, dtype=out.dtype)
                return sign * (rms[i] * noise).abs().to(out.device)
            flat = out.abs().flatten(1)  # shuffle magnitudes across units, per input
            perm = torch.argsort(torch.rand(flat.shape, generator=gen), dim=1)
            return sign * flat.gather(1, perm.to(out.device)).view_as(out)

        handles.append(s.register_forward_hook(hook))
    try:
        yield
    finally:
        for h in handles:
            h.remove()


@dataclass
class FlipRecord:
    """Units seen and flipped per site during a :func:`flip_signs` block."""

    seen: list[int] = field(default_factory=list)
    flipped: list[int] = field(default_factory=list)

    def fractions(self) -> list[float]:
        return [f / s if s else float("nan") for f, s in zip(self.flipped, self.seen, strict=True)]


@contextlib.contextmanager
def flip_signs(model: nn.Module, *, fraction: float = 0.2, seed: int = 0) -> Iterator[FlipRecord]:
    """Flip the sign of each unit's output independently with probability ``fraction``.

    Yields a :class:`FlipRecord` with the units seen and flipped at every site.
    """
    fraction = check_float(fraction, "fraction", min=0.0, max=1.0)
    sites = [m for _, m in activation_sites(model)]
    gen = make_generator(seed)
    record = FlipRecord([0] * len(sites), [0] * len(sites))
    handles = []
    for i, s in enumerate(sites):

        def hook(m, inp, out, i=i):
            mask = torch.rand(out.shape, generator=gen) < fraction
            record.seen[i] += mask.numel()
            record.flipped[i] += int(mask.sum())
            return torch.where(mask.to(out.device), -out, out)

        handles.append(s.register_forward_hook(hook))
    try:
        yield record
    finally:
        for h in handles:
            h.remove()
