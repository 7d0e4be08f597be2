"""DDPM training objective, DDIM / ancestral samplers and the route-sensitivity diagnostic.

The diffusion is DiT's: ``T = 1000`` steps with linear betas from ``1e-4`` to ``0.02``,
``x_t = sqrt(abar_t) x_0 + sqrt(1 - abar_t) eps`` and the loss
``||eps_theta(x_t, t, y) - eps||^2`` for ``t ~ U{0, ..., T-1}``, with the label replaced by
the null label with probability 0.1 (classifier-free guidance). The samplers follow the
DDIM paper (Song et al., 2021) with the "leading" timestep spacing of ``diffusers``'
``DDIMScheduler`` and the posterior ("fixed small") variance of its ``DDPMScheduler``;
the tests check both against ``diffusers`` step by step.

The route-sensitivity ``R(r) = E_mask[L_routed(theta; r)] - L_full(theta)`` is the
paper's regularizer view of stochastic routing (our formalisation): on the same noisy
inputs, the loss with a random share ``r`` of the tokens skipping the span, minus the loss
of the full model. A second-order expansion says it grows with ``r``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch
from torch import nn

from neurips26.common.validation import check_choice, check_float, check_int

from .routing import MAX_TIMESTEPS, NAR_BOUNDARIES, NAR_RATIOS, check_ratio, check_timesteps

#: Most sampling steps and samples accepted in one call.
MAX_SAMPLE_STEPS, MAX_SAMPLES = 100_000, 1_000_000
#: Largest guidance scale accepted.
MAX_CFG = 100.0
#: Most routing masks per ratio in :func:`route_sensitivity`.
MAX_MASKS = 10_000


@dataclass(frozen=True)
class NoiseSchedule:
    """A DDPM variance schedule.

    Attributes
    ----------
    betas : Tensor, shape (T,)
        ``beta_t``, float64.

    Examples
    --------
    >>> s = NoiseSchedule.linear(1000)
    >>> s.num_timesteps, round(float(s.alphas_cumprod[-1]), 6)
    (1000, 4e-05)
    """

    betas: torch.Tensor

    def __post_init__(self) -> None:
        b = self.betas
        if not torch.is_tensor(b) or b.ndim != 1 or b.numel() == 0:
            raise ValueError("betas: expected a non-empty 1-D tensor")
        if not torch.isfinite(b).all() or (b <= 0).any() or (b >= 1).any():
            raise ValueError("betas: every beta must lie in (0, 1)")
        if b.numel() > MAX_TIMESTEPS:
            raise ValueError(f"betas: at most {MAX_TIMESTEPS} timesteps, got {b.numel()}")
        object.__setattr__(self, "betas", b.double())

    @classmethod
    def linear(cls, num_timesteps: int = 1000, *, beta_start: float = 1e-4,
               beta_end: float = 0.02) -> NoiseSchedule:  # fmt: skip
        """DDPM's linear schedule (DiT's default: 1000 steps, 1e-4 to 0.02)."""
        n = check_int(num_timesteps, "num_timesteps", min=2, max=MAX_TIMESTEPS)
        lo = check_float(beta_start, "beta_start", min=0.0, max=1.0, min_inclusive=False,
                         max_inclusive=False)  # fmt: skip
        hi = check_float(beta_end, "beta_end", min=lo, max=1.0, max_inclusive=False)
        return cls(torch.linspace(lo, hi, n, dtype=torch.float64))

    @property
    def num_timesteps(self) -> int:
        return int(self.betas.numel())

    @property
    def alphas_cumprod(self) -> torch.Tensor:
        """``abar_t = prod_{s <= t} (1 - beta_s)``, shape (T,), float64."""
        return torch.cumprod(1.0 - self.betas, 0)

    def q_sample(self, x0: torch.Tensor, t: torch.Tensor, noise: torch.Tensor) -> torch.Tensor:
        """``x_t = sqrt(abar_t) x0 + sqrt(1 - abar_t) eps`` (DDPM Eq. 4), per sample."""
        t = check_timesteps(t, self.num_timesteps)
        if noise.shape != x0.shape or len(t) != len(x0):
            raise ValueError(f"noise: expected shape {tuple(x0.shape)} and t of length "
                             f"{len(x0)}, got {tuple(noise.shape)} and {len(t)}")  # fmt: skip
        ab = self.alphas_cumprod.to(x0.device)[t].to(x0.dtype)
        ab = ab.view(-1, *([1] * (x0.ndim - 1)))  # (B, 1, 1, 1)
        return ab.sqrt() * x0 + (1 - ab).sqrt() * noise  # Eq. (4) of DDPM


def _check_schedule(schedule) -> NoiseSchedule:
    if schedule is None:
        return NoiseSchedule.linear(1000)
    if not isinstance(schedule, NoiseSchedule):
        raise TypeError(f"schedule: expected a NoiseSchedule, got {type(schedule).__name__}")
    return schedule


def _check_model(model, name: str = "model") -> nn.Module:
    if not isinstance(model, nn.Module):
        raise TypeError(f"{name}: expected a torch.nn.Module, got {type(model).__name__}")
    return model


def _check_images(x0, model, name: str = "x0") -> torch.Tensor:
    if not torch.is_tensor(x0):
        raise TypeError(f"{name}: expected a torch.Tensor (B, C, H, W), got {type(x0).__name__}")
    shape = getattr(model, "sample_shape", None)
    if x0.ndim != 4 or x0.shape[0] == 0 or (shape is not None and tuple(x0.shape[1:]) != shape):
        raise ValueError(f"{name}: expected a non-empty (B, C, H, W) tensor matching the model's "
                         f"{shape}, got {tuple(x0.shape)}")  # fmt: skip
    if not x0.is_floating_point():
        raise TypeError(f"{name}: expected a floating tensor, got {x0.dtype}")
    if not torch.isfinite(x0).all():
        raise ValueError(f"{name}: must be finite (it holds NaN or inf)")
    if isinstance(model, nn.Module):  # computed in the model's dtype (float16/64 inputs too)
        dtype = next((p.dtype for p in model.parameters() if p.is_floating_point()), None)
        if dtype is not None and x0.dtype != dtype:
            x0 = x0.to(dtype)
    return x0


def _check_labels(y, n: int, num_classes: int | None, name: str = "y") -> torch.Tensor:
    if not torch.is_tensor(y):
        raise TypeError(f"{name}: expected a LongTensor of labels, got {type(y).__name__}")
    if y.shape != (n,) or y.dtype != torch.long:
        raise ValueError(f"{name}: expected a LongTensor of shape ({n},), got {y.dtype} "
                         f"{tuple(y.shape)}")  # fmt: skip
    if num_classes is not None and ((y < 0).any() or (y >= num_classes).any()):
        raise ValueError(f"{name}: labels must lie in [0, {num_classes}), got values in "
                         f"[{int(y.min())}, {int(y.max())}]")  # fmt: skip
    return y


def diffusion_loss(model: nn.Module, x0: torch.Tensor, y: torch.Tensor, *,
                   schedule: NoiseSchedule | None = None, routing: str = "none",
                   ratio: float = 0.5, ratios: Sequence[float] = NAR_RATIOS,
                   boundaries: Sequence[float] = NAR_BOUNDARIES, label_dropout: float = 0.1,
                   t: torch.Tensor | None = None, noise: torch.Tensor | None = None,
                   generator: torch.Generator | None = None,
                   routing_generator: torch.Generator | None = None) -> torch.Tensor:  # fmt: skip
    """The DDPM epsilon-prediction loss of a batch, with the model's token routing.

    Parameters
    ----------
    model : MiniDiT
        Called as ``model(x_t, t, y, routing=..., ...)``.
    x0 : Tensor, shape (B, C, H, W)
        Clean images ``x_0`` (scaled to ``[-1, 1]``), cast to the model's dtype.
    y : LongTensor, shape (B,)
        Labels in ``[0, num_classes)``.
    schedule : NoiseSchedule, optional
        Default: linear, ``T = 1000``.
    routing, ratio, ratios, boundaries
        Passed to the model (see :class:`~.dit.MiniDiT`).
    label_dropout : float
        Probability of replacing a label with the null label (CFG training).
    t, noise : Tensor, optional
        Fixed timesteps ``(B,)`` and noise ``eps`` (default: drawn from ``generator``).
    generator : torch.Generator, optional
        Source of ``t``, ``eps`` and the label dropout.
    routing_generator : torch.Generator, optional
        Source of the routing permutations (default: ``generator``); a separate one keeps
        ``t`` and ``eps`` the same whatever the routing.

    Returns
    -------
    Tensor
        The scalar loss ``mean ||eps_theta(x_t, t, y) - eps||^2``.
    """
    model = _check_model(model)
    sched = _check_schedule(schedule)
    x0 = _check_images(x0, model)
    num_classes = getattr(model, "num_classes", None)
    y = _check_labels(y, len(x0), num_classes)
    p_drop = check_float(label_dropout, "label_dropout", min=0.0, max=1.0)
    b = len(x0)
    if t is None:
        t = torch.randint(0, sched.num_timesteps, (b,), generator=generator).to(x0.device)
    t = check_timesteps(t, sched.num_timesteps)
    if len(t) != b:
        raise ValueError(f"t: expected {b} timesteps, got {len(t)}")
    if noise is None:
        noise = torch.randn(x0.shape, generator=generator, dtype=x0.dtype).to(x0.device)
    elif not torch.is_tensor(noise) or noise.shape != x0.shape:
        raise ValueError(f"noise: expected a tensor of shape {tuple(x0.shape)}")
    if p_drop > 0 and num_classes is not None:
        drop = torch.rand(b, generator=generator).to(x0.device) < p_drop
        y = torch.where(drop, torch.full_like(y, num_classes), y)  # the null label
    x_t = sched.q_sample(x0, t, noise)
    eps = model(x_t, t, y, routing=routing, ratio=ratio, ratios=ratios, boundaries=boundaries,
                num_timesteps=sched.num_timesteps,
                generator=generator if routing_generator is None else routing_generator)
    return ((eps - noise) ** 2).mean()


def _guided_eps(model, x, t, y, cfg_scale: float) -> torch.Tensor:
    tt = torch.full((len(x),), int(t), dtype=torch.long, device=x.device)
    if cfg_scale == 1.0:
        return model(x, tt, y)
    null = torch.full_like(y, model.null_label)
    both = model(torch.cat([x, x]), torch.cat([tt, tt]), torch.cat([y, null]))
    cond, uncond = both.chunk(2)
    return uncond + cfg_scale * (cond - uncond)  # classifier-free guidance


def ddim_timesteps(num_timesteps: int, num_steps: int) -> np.ndarray:
    """DDIM's "leading" sub-sequence, decreasing: ``k * (T // S)`` for ``k = S-1 .. 0``.

    The same as ``diffusers``' ``DDIMScheduler(timestep_spacing="leading")``.

    Examples
    --------
    >>> ddim_timesteps(1000, 4).tolist()
    [750, 500, 250, 0]
    """
    num_timesteps = check_int(num_timesteps, "num_timesteps", min=1, max=MAX_TIMESTEPS)
    num_steps = check_int(num_steps, "num_steps", min=1, max=num_timesteps)
    return (np.arange(num_steps) * (num_timesteps // num_steps))[::-1].astype(np.int64)


def _sample_args(model, y, schedule, generator, shape, cfg_scale):
    model = _check_model(model)
    sched = _check_schedule(schedule)
    num_classes = getattr(model, "num_classes", None)
    if not torch.is_tensor(y):
        raise TypeError(f"y: expected a LongTensor of labels, got {type(y).__name__}")
    if y.ndim != 1 or y.numel() == 0:
        raise ValueError(f"y: expected a non-empty 1-D LongTensor, got shape {tuple(y.shape)}")
    check_int(len(y), "y", max=MAX_SAMPLES)
    y = _check_labels(y, len(y), None if num_classes is None else num_classes + 1)
    cfg = check_float(cfg_scale, "cfg_scale", min=0.0, max=MAX_CFG)
    if cfg != 1.0 and not hasattr(model, "null_label"):
        raise ValueError("cfg_scale: guidance needs a model with a null_label")
    if shape is None:
        shape = getattr(model, "sample_shape", None)
        if shape is None:
            raise ValueError("shape: the model has no sample_shape; pass shape=(C, H, W)")
    shape = tuple(check_int(s, "shape", min=1, max=4096) for s in shape)
    device = y.device
    x = torch.randn((len(y), *shape), generator=generator).to(device)  # x_T ~ N(0, I)
    return model, sched, y, cfg, x


@torch.no_grad()
def ddim_sample(model: nn.Module, y: torch.Tensor, *, schedule: NoiseSchedule | None = None,
                num_steps: int = 50, eta: float = 0.0, cfg_scale: float = 1.0,
                clip_denoised: bool = False, generator: torch.Generator | None = None,
                shape: Sequence[int] | None = None) -> torch.Tensor:  # fmt: skip
    """Generate images with DDIM (Song et al., 2021, Eq. 12).

    Parameters
    ----------
    model : nn.Module
        ``model(x_t, t, y) -> eps`` (evaluated in ``eval()`` mode, so never routed).
    y : LongTensor, shape (B,)
        Labels of the samples (``model.null_label`` for unconditional ones).
    schedule : NoiseSchedule, optional
    num_steps : int
        ``S``, the number of denoising steps (``1 <= S <= T``).
    eta : float
        ``eta = 0``: deterministic DDIM; ``eta = 1``: the DDPM posterior variance.
    cfg_scale : float
        Classifier-free guidance scale ``w`` (1: plain conditional).
    clip_denoised : bool
        Clip the predicted ``x_0`` to ``[-1, 1]`` at every step.
    generator : torch.Generator, optional
        Source of ``x_T`` and of the noise when ``eta > 0``.
    shape : (C, H, W), optional
        Default: ``model.sample_shape``.

    Returns
    -------
    Tensor, shape (B, C, H, W)
    """
    model, sched, y, cfg, x = _sample_args(model, y, schedule, generator, shape, cfg_scale)
    eta = check_float(eta, "eta", min=0.0, max=10.0)
    if not isinstance(clip_denoised, bool):
        raise TypeError(f"clip_denoised: expected a bool, got {type(clip_denoised).__name__}")
    steps = ddim_timesteps(sched.num_timesteps, num_steps)
    stride = sched.num_timesteps // len(steps)
    abar = sched.alphas_cumprod
    was_training = model.training
    model.eval()
    try:
        for t in steps:
            eps = _guided_eps(model, x, t, y, cfg)
            a_t = float(abar[t])
            a_prev = float(abar[t - stride]) if t - stride >= 0 else 1.0
            x0 = (x - math.sqrt(1 - a_t) * eps) / math.sqrt(a_t)  # predicted x_0
            if clip_denoised:
                x0 = x0.clamp(-1.0, 1.0)
            # Eq. (16): sigma_t(eta); Eq. (12): the DDIM update.
            var = (1 - a_prev) / (1 - a_t) * (1 - a_t / a_prev)
            sigma = eta * math.sqrt(max(var, 0.0))
            direction = math.sqrt(max(1 - a_prev - sigma**2, 0.0)) * eps
            x = math.sqrt(a_prev) * x0 + direction
            if eta > 0:
                x = x + sigma * torch.randn(x.shape, generator=generator).to(x.device)
    finally:
        model.train(was_training)
    return x


@torch.no_grad()
def ddpm_sample(model: nn.Module, y: torch.Tensor, *, schedule: NoiseSchedule | None = None,
                cfg_scale: float = 1.0, clip_denoised: bool = False,
                generator: torch.Generator | None = None,
                shape: Sequence[int] | None = None) -> torch.Tensor:  # fmt: skip
    """Ancestral DDPM sampling over all ``T`` steps (Ho et al., 2020, Alg. 2).

    ``x_{t-1} = mu_tilde(x_t, x0_hat) + sigma_t z`` with the posterior variance
    ``beta_tilde_t = (1 - abar_{t-1}) / (1 - abar_t) beta_t`` and ``z = 0`` at ``t = 0``.
    Parameters as :func:`ddim_sample`.
    """
    model, sched, y, cfg, x = _sample_args(model, y, schedule, generator, shape, cfg_scale)
    if not isinstance(clip_denoised, bool):
        raise TypeError(f"clip_denoised: expected a bool, got {type(clip_denoised).__name__}")
    abar, betas = sched.alphas_cumprod, sched.betas
    was_training = model.training
    model.eval()
    try:
        for t in range(sched.num_timesteps - 1, -1, -1):
            eps = _guided_eps(model, x, t, y, cfg)
            a_t, a_prev = float(abar[t]), (float(abar[t - 1]) if t > 0 else 1.0)
            beta = float(betas[t])
            x0 = (x - math.sqrt(1 - a_t) * eps) / math.sqrt(a_t)
            if clip_denoised:
                x0 = x0.clamp(-1.0, 1.0)
            # DDPM Eq. (7): the posterior mean of q(x_{t-1} | x_t, x_0).
            c0 = math.sqrt(a_prev) * beta / (1 - a_t)
            ct = math.sqrt(1 - beta) * (1 - a_prev) / (1 - a_t)
            x = c0 * x0 + ct * x
            if t > 0:
                var = (1 - a_prev) / (1 - a_t) * beta
                x = x + math.sqrt(max(var, 1e-20)) * torch.randn(x.shape,
                                                                 generator=generator).to(x.device)
    finally:
        model.train(was_training)
    return x


@dataclass(frozen=True)
class RouteSensitivity:
    """``R(r)`` of one routing ratio, estimated over random routing masks.

    Attributes
    ----------
    ratio : float
        ``r``.
    value : float
        ``R(r) = mean_m L_routed(m) - L_full``.
    std_error : float
        Standard error of the mean over masks.
    full_loss : float
        ``L_full``, the unrouted loss on the same inputs.
    mask_losses : ndarray, shape (M,)
        ``L_routed`` of each mask.
    """

    ratio: float
    value: float
    std_error: float
    full_loss: float
    mask_losses: np.ndarray


@torch.no_grad()
def route_sensitivity(model: nn.Module, x0: torch.Tensor, y: torch.Tensor, *, ratio: float,
                      num_masks: int = 16, schedule: NoiseSchedule | None = None,
                      t: torch.Tensor | None = None, routing: str = "tread",
                      generator: torch.Generator | None = None) -> RouteSensitivity:  # fmt: skip
    """The route-sensitivity ``R(r) = E_mask[L_routed(theta; r)] - L_full(theta)``.

    The noisy inputs (``t``, ``eps``) are drawn once and shared by the full model and
    every mask, so ``R`` measures only the routing's perturbation. Labels are kept (no
    label dropout).

    Parameters
    ----------
    model : MiniDiT
    x0 : Tensor, shape (B, C, H, W)
    y : LongTensor, shape (B,)
    ratio : float
        ``r`` in ``[0, 1)`` (every sample gets it: TREAD routing of the span).
    num_masks : int
        ``M``, the random routings averaged over.
    schedule : NoiseSchedule, optional
    t : LongTensor, shape (B,), optional
        Fixed timesteps (default: uniform, from ``generator``).
    routing : {"tread"}
        Kept for symmetry with the training call.
    generator : torch.Generator, optional

    Returns
    -------
    RouteSensitivity
    """
    model = _check_model(model)
    sched = _check_schedule(schedule)
    x0 = _check_images(x0, model)
    y = _check_labels(y, len(x0), getattr(model, "num_classes", None))
    r = check_ratio(ratio)
    num_masks = check_int(num_masks, "num_masks", min=1, max=MAX_MASKS)
    check_choice(routing, "routing", ("tread",))
    if t is None:
        t = torch.randint(0, sched.num_timesteps, (len(x0),), generator=generator)
    t = check_timesteps(t, sched.num_timesteps).to(x0.device)
    if len(t) != len(x0):
        raise ValueError(f"t: expected {len(x0)} timesteps, got {len(t)}")
    noise = torch.randn(x0.shape, generator=generator).to(x0.device)
    x_t = sched.q_sample(x0, t, noise)
    was_training = model.training
    try:
        model.eval()
        full = float(((model(x_t, t, y) - noise) ** 2).mean())
        model.train()  # routing acts in training mode only (the model has no dropout)
        losses = np.array([float(((model(x_t, t, y, routing="tread", ratio=r,
                                         generator=generator) - noise) ** 2).mean())
                           for _ in range(num_masks)])  # fmt: skip
    finally:
        model.train(was_training)
    se = float(losses.std(ddof=1) / math.sqrt(num_masks)) if num_masks > 1 else math.inf
    return RouteSensitivity(r, float(losses.mean() - full), se, full, losses)
