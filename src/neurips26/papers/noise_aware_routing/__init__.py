"""Noise-Aware Routing: timestep-conditioned token-routing ratios for DiT training.

TREAD-style routing (a random share of each sample's tokens skips a span of middle
blocks) inside a small class-conditional DiT, with per-sample ratios by noise level
(low / middle / high timesteps get 0.25 / 0.5 / 0.75 by default, the same mean compute as
TREAD at 0.5); the DDPM loss, DDIM / ancestral samplers, the route-sensitivity diagnostic,
and training with an EMA and a frozen-classifier evaluation (Frechet distance, conditional
accuracy, held-out loss).
"""

from .diffusion import (
    NoiseSchedule,
    RouteSensitivity,
    ddim_sample,
    ddim_timesteps,
    ddpm_sample,
    diffusion_loss,
    route_sensitivity,
)
from .dit import ROUTINGS, DiTBlock, MiniDiT, sincos_2d, timestep_embedding
from .routing import (
    NAR_BOUNDARIES,
    NAR_RATIOS,
    RouteInfo,
    expected_ratio,
    noise_aware_ratios,
    noise_groups,
    num_kept,
    random_permutations,
    route_end,
    route_span,
    route_start,
)
from .training import (
    EvalResult,
    Evaluator,
    TrainResult,
    ema_update,
    eval_schedule,
    frechet_distance,
    plateaued,
    train_diffusion,
    training_flops,
)

__all__ = [
    "NAR_BOUNDARIES",
    "NAR_RATIOS",
    "ROUTINGS",
    "DiTBlock",
    "EvalResult",
    "Evaluator",
    "MiniDiT",
    "NoiseSchedule",
    "RouteInfo",
    "RouteSensitivity",
    "TrainResult",
    "ddim_sample",
    "ddim_timesteps",
    "ddpm_sample",
    "diffusion_loss",
    "ema_update",
    "eval_schedule",
    "expected_ratio",
    "frechet_distance",
    "noise_aware_ratios",
    "noise_groups",
    "num_kept",
    "plateaued",
    "random_permutations",
    "route_end",
    "route_sensitivity",
    "route_span",
    "route_start",
    "sincos_2d",
    "timestep_embedding",
    "train_diffusion",
    "training_flops",
]
