"""Training a DiT with or without routing, and evaluating it with a frozen classifier.

:func:`train_diffusion` runs AdamW on the DDPM loss (through ``neurips26.common.train``),
keeps an exponential moving average (EMA) of the weights, and every ``eval_every`` steps
evaluates the EMA model with an :class:`Evaluator`: DDIM samples for a fixed, balanced set
of labels from a fixed ``x_T`` (the same for every model, so that comparisons share their
sampling noise), scored by a frozen classifier: the Frechet distance (FD) between its
penultimate features of the samples and of real images, the classifier's accuracy on the
samples w.r.t. their labels, and a held-out denoising loss on fixed ``(t, eps)``.
:meth:`TrainResult.steps_to_reach` gives the training steps a run needed to reach a
target FD (the paper's convergence-speed measure, with FID).
"""

from __future__ import annotations

import copy
import math
import time
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch
from torch import nn

from neurips26.common.stats import frechet_distance
from neurips26.common.torch import make_generator
from neurips26.common.train import array_batches, train
from neurips26.common.validation import (
    check_array,
    check_choice,
    check_float,
    check_int,
    check_seed,
)

from .diffusion import (
    NoiseSchedule,
    _check_images,
    _check_labels,
    _check_model,
    _check_schedule,
    ddim_sample,
    diffusion_loss,
)
from .dit import ROUTINGS
from .routing import NAR_BOUNDARIES, NAR_RATIOS, check_groups, check_ratio

#: Most training steps accepted.
MAX_ITER = 10_000_000


@dataclass(frozen=True)
class EvalResult:
    """One evaluation of a generator.

    Attributes
    ----------
    fd : float
        Frechet distance in the classifier's feature space (lower is better).
    sample_acc : float
        The classifier's accuracy on the samples w.r.t. their labels.
    val_loss : float
        Held-out denoising loss on fixed ``(t, eps)``.
    """

    fd: float
    sample_acc: float
    val_loss: float


class Evaluator:
    """Scores a class-conditional generator with a frozen classifier.

    Parameters
    ----------
    classifier : nn.Module
        With ``features(x) -> (B, D)`` and ``forward(x) -> logits``, on images in ``[-1, 1]``.
    x_real : Tensor, shape (N, C, H, W)
        Real images for the reference feature statistics.
    x_val, y_val : Tensor, shape (M, C, H, W) and (M,)
        Held-out images and labels for the denoising loss.
    num_samples : int
        Samples generated per evaluation (labels balanced over classes).
    num_steps : int
        DDIM steps per sample.
    cfg_scale : float
        Guidance scale of the samples.
    seed : int
        Seeds ``x_T``, the labels and the held-out ``(t, eps)``: every evaluation (and
        every model) sees the same ones.
    schedule : NoiseSchedule, optional
    """

    def __init__(self, classifier: nn.Module, x_real: torch.Tensor, x_val: torch.Tensor,
                 y_val: torch.Tensor, *, num_samples: int = 256, num_steps: int = 20,
                 cfg_scale: float = 1.0, seed: int = 0,
                 schedule: NoiseSchedule | None = None, num_classes: int = 10) -> None:  # fmt: skip
        self.classifier = _check_model(classifier, "classifier").eval().requires_grad_(False)
        self.schedule = _check_schedule(schedule)
        x_real = _check_images(x_real, None, "x_real")
        self.x_val = _check_images(x_val, None, "x_val")
        self.num_classes = check_int(num_classes, "num_classes", min=1)
        self.y_val = _check_labels(y_val, len(x_val), self.num_classes, "y_val")
        self.num_samples = check_int(num_samples, "num_samples", min=2, max=100_000)
        self.num_steps = check_int(num_steps, "num_steps", min=1,
                                   max=self.schedule.num_timesteps)  # fmt: skip
        self.cfg_scale = check_float(cfg_scale, "cfg_scale", min=0.0, max=100.0)
        self.seed = check_seed(seed)
        with torch.no_grad():
            self.real_features = self.classifier.features(x_real).double().numpy()
        g = make_generator(self.seed)
        self.labels = (torch.arange(self.num_samples) % self.num_classes)[
            torch.randperm(self.num_samples, generator=g)]  # fmt: skip
        self.t_val = torch.randint(0, self.schedule.num_timesteps, (len(x_val),), generator=g)
        self.noise_val = torch.randn(self.x_val.shape, generator=g)

    @torch.no_grad()
    def __call__(self, model: nn.Module) -> EvalResult:
        """Evaluate ``model`` (in eval mode: never routed)."""
        model = _check_model(model)
        was = model.training
        dev = next(model.parameters()).device
        model.eval()
        try:
            x = ddim_sample(model, self.labels.to(dev), schedule=self.schedule,
                            num_steps=self.num_steps, cfg_scale=self.cfg_scale,
                            clip_denoised=True, generator=make_generator(self.seed + 1))
            x = x.cpu()
            feats = self.classifier.features(x).double().numpy()
            acc = float((self.classifier(x).argmax(1) == self.labels).float().mean())
            val = float(diffusion_loss(model, self.x_val.to(dev), self.y_val.to(dev),
                                       schedule=self.schedule, label_dropout=0.0,
                                       t=self.t_val.to(dev), noise=self.noise_val.to(dev)))
        finally:
            model.train(was)
        return EvalResult(frechet_distance(feats, self.real_features), acc, val)


@dataclass(frozen=True)
class TrainResult:
    """A training run's evaluation curve.

    Attributes
    ----------
    routing : str
    steps : ndarray, shape (E,)
        Training steps at which the EMA model was evaluated.
    fd, sample_acc, val_loss : ndarray, shape (E,)
        :class:`EvalResult` fields at those steps.
    losses : ndarray, shape (max_iter,)
        The training loss at every step.
    wall_time : float
        Seconds spent in training steps (evaluations excluded).
    """

    routing: str
    steps: np.ndarray
    fd: np.ndarray
    sample_acc: np.ndarray
    val_loss: np.ndarray
    losses: np.ndarray
    wall_time: float

    @property
    def final_fd(self) -> float:
        return float(self.fd[-1])

    def steps_to_reach(self, target_fd: float) -> float:
        """First training step at which the FD curve reaches ``target_fd``.

        Linear interpolation between evaluations (the curve starts at step 0 from the
        first evaluation's value); ``inf`` if the run never reaches it.
        """
        target = check_float(target_fd, "target_fd", min=0.0)
        below = np.nonzero(self.fd <= target)[0]
        if not below.size:
            return math.inf
        i = int(below[0])
        if i == 0:
            return float(self.steps[0])
        s0, s1, f0, f1 = self.steps[i - 1], self.steps[i], self.fd[i - 1], self.fd[i]
        return float(s0 + (s1 - s0) * (f0 - target) / (f0 - f1))


def _check_data(x, y, num_classes) -> tuple[torch.Tensor, torch.Tensor]:
    x = torch.as_tensor(check_array(x, "x", ndim=4, dtype=np.float32, max_size=10**9))
    y_arr = check_array(y, "y", ndim=1, dtype=None)
    if y_arr.dtype.kind not in "iu":
        raise TypeError(f"y: expected integer labels, got dtype {y_arr.dtype}")
    y = torch.as_tensor(y_arr.astype(np.int64))
    if len(x) != len(y):
        raise ValueError(f"y: expected {len(x)} labels like x, got {len(y)}")
    if (y < 0).any() or (y >= num_classes).any():
        raise ValueError(f"y: labels must lie in [0, {num_classes})")
    return x, y


@torch.no_grad()
def ema_update(ema: nn.Module, model: nn.Module, decay: float) -> None:
    """``theta_ema <- decay * theta_ema + (1 - decay) * theta`` for every parameter."""
    ema, model = _check_model(ema, "ema"), _check_model(model)
    decay = check_float(decay, "decay", min=0.0, max=1.0)
    if [p.shape for p in ema.parameters()] != [p.shape for p in model.parameters()]:
        raise ValueError("ema: its parameters do not match the model's")
    for pe, p in zip(ema.parameters(), model.parameters(), strict=True):
        pe.mul_(decay).add_(p.detach(), alpha=1 - decay)


def train_diffusion(model: nn.Module, x, y, *, routing: str = "noise_aware",
                    ratio: float = 0.5, ratios: Sequence[float] = NAR_RATIOS,
                    boundaries: Sequence[float] = NAR_BOUNDARIES, max_iter: int = 1000,
                    lr: float = 1e-4, batch_size: int = 64, eval_every: int = 100,
                    evaluator: Evaluator | None = None, ema_decay: float = 0.999,
                    label_dropout: float = 0.1, schedule: NoiseSchedule | None = None,
                    seed: int = 0, device: str = "cpu"
                    ) -> tuple[nn.Module, TrainResult]:  # fmt: skip
    """Train ``model`` in place on the DDPM loss with a routing mode.

    Parameters
    ----------
    model : MiniDiT
    x : array_like, shape (N, C, H, W)
        Training images in ``[-1, 1]``.
    y : array_like, shape (N,)
        Integer labels.
    routing : {"none", "tread", "noise_aware"}
        DiT baseline, TREAD (one ratio) or Noise-Aware Routing (per noise group).
    ratio, ratios, boundaries
        The routing ratios (see :class:`~.dit.MiniDiT`).
    max_iter, lr, batch_size : int, float, int
        AdamW steps, learning rate, batch size.
    eval_every : int
        Evaluate the EMA model every this many steps (and at the last step).
    evaluator : Evaluator, optional
        Without one, the curve arrays are empty.
    ema_decay : float
        EMA decay, warmed up as ``min(decay, (1 + s) / (10 + s))``.
    label_dropout : float
        Null-label probability (CFG training).
    schedule : NoiseSchedule, optional
    seed : int
        Seeds the batches, the timesteps and noise, and the routing (three generators, so
        runs with different routings see the same batches, timesteps and noise).
    device : {"cpu", "cuda"}

    Returns
    -------
    ema_model : nn.Module
        The EMA copy (eval mode).
    result : TrainResult
    """
    model = _check_model(model)
    check_choice(routing, "routing", ROUTINGS)
    check_ratio(ratio)
    check_groups(boundaries, ratios)
    x, y = _check_data(x, y, getattr(model, "num_classes", 10**9))
    max_iter = check_int(max_iter, "max_iter", min=1, max=MAX_ITER)
    lr = check_float(lr, "lr", min=0.0, max=10.0, min_inclusive=False)
    batch_size = check_int(batch_size, "batch_size", min=1, max=len(x))
    eval_every = check_int(eval_every, "eval_every", min=1)
    decay = check_float(ema_decay, "ema_decay", min=0.0, max=1.0)
    seed = check_seed(seed)
    if evaluator is not None and not isinstance(evaluator, Evaluator):
        raise TypeError(f"evaluator: expected an Evaluator, got {type(evaluator).__name__}")
    sched = _check_schedule(schedule)
    gen, route_gen = make_generator(seed + 1), make_generator(seed + 2)
    ema = copy.deepcopy(model).eval().requires_grad_(False)
    steps, evals = [], []
    clock = [0.0, time.perf_counter()]

    def loss_fn(net, batch):
        xb, yb = batch
        return diffusion_loss(net, xb, yb, schedule=sched, routing=routing, ratio=ratio,
                              ratios=ratios, boundaries=boundaries,
                              label_dropout=label_dropout, generator=gen,
                              routing_generator=route_gen)  # fmt: skip

    def callback(step, loss, net):
        clock[0] += time.perf_counter() - clock[1]
        ema_update(ema, net, min(decay, (1 + step) / (10 + step)))
        done = step + 1
        if evaluator is not None and (done % eval_every == 0 or done == max_iter):
            steps.append(done)
            evals.append(evaluator(ema))
        clock[1] = time.perf_counter()
        return False

    batches = array_batches(x, y, batch_size=batch_size, generator=make_generator(seed),
                            device=device)  # fmt: skip
    res = train(model, batches, max_iter=max_iter, lr=lr, seed=seed, device=device,
                loss_fn=loss_fn, callback=callback,
                desc=f"noise_aware_routing {routing}")  # fmt: skip
    result = TrainResult(
        routing, np.array(steps, dtype=np.int64),
        np.array([e.fd for e in evals]), np.array([e.sample_acc for e in evals]),
        np.array([e.val_loss for e in evals]), np.array(res.losses), clock[0])  # fmt: skip
    return ema, result


def training_flops(model: nn.Module, *, routing: str = "none", ratio: float = 0.5,
                   ratios: Sequence[float] = NAR_RATIOS,
                   boundaries: Sequence[float] = NAR_BOUNDARIES, batch_size: int = 64,
                   schedule: NoiseSchedule | None = None, seed: int = 0,
                   span_only: bool = False) -> float:  # fmt: skip
    """FLOPs of one training step (forward and backward), counted by torch.

    The batch's timesteps are spread evenly over ``[0, T)`` (stratified), so the
    noise-aware groups have their expected sizes. With ``span_only``, the forward FLOPs
    of the routed span alone (``model.run_span``), where routing saves its compute.

    Returns
    -------
    float
        ``torch.utils.flop_counter.FlopCounterMode``'s total (matmuls, attention, convs).
    """
    from torch.utils.flop_counter import FlopCounterMode

    model = _check_model(model)
    check_choice(routing, "routing", ROUTINGS)
    batch_size = check_int(batch_size, "batch_size", min=1, max=100_000)
    sched = _check_schedule(schedule)
    g = make_generator(check_seed(seed))
    shape = getattr(model, "sample_shape", None)
    if shape is None:
        raise ValueError("model: needs a sample_shape (C, H, W)")
    x0 = torch.randn((batch_size, *shape), generator=g)
    y = torch.zeros(batch_size, dtype=torch.long)
    t = ((torch.arange(batch_size) + 0.5) * sched.num_timesteps / batch_size).long()
    if not isinstance(span_only, bool):
        raise TypeError(f"span_only: expected a bool, got {type(span_only).__name__}")
    was = model.training
    model.train()
    try:
        if span_only:
            with torch.no_grad():
                r = model.sample_ratios(t, routing=routing, ratio=ratio, ratios=ratios,
                                        boundaries=boundaries,
                                        num_timesteps=sched.num_timesteps)  # fmt: skip
                c, h = model.condition(t, y), model.patchify(x0)
                with FlopCounterMode(display=False) as fc:
                    model.run_span(h, c, r, generator=g)
            return float(fc.get_total_flops())
        with FlopCounterMode(display=False) as fc:
            loss = diffusion_loss(model, x0, y, schedule=sched, routing=routing, ratio=ratio,
                                  ratios=ratios, boundaries=boundaries, label_dropout=0.0,
                                  t=t, generator=g)  # fmt: skip
            loss.backward()
    finally:
        model.zero_grad(set_to_none=True)
        model.train(was)
    return float(fc.get_total_flops())
