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
    def __call__(self, model: nn.Module, *, sample: bool = True) -> EvalResult:
        """Evaluate ``model`` (in eval mode: never routed).

        With ``sample=False`` only the held-out loss is computed (cheap); ``fd`` and
        ``sample_acc`` are then NaN.
        """
        model = _check_model(model)
        if not isinstance(sample, bool):
            raise TypeError(f"sample: expected a bool, got {type(sample).__name__}")
        was = model.training
        dev = next(model.parameters()).device
        model.eval()
        try:
            fd = acc = math.nan
            if sample:
                x = ddim_sample(model, self.labels.to(dev), schedule=self.schedule,
                                num_steps=self.num_steps, cfg_scale=self.cfg_scale,
                                clip_denoised=True, generator=make_generator(self.seed + 1))
                x = x.cpu()
                feats = self.classifier.features(x).double().numpy()
                acc = float((self.classifier(x).argmax(1) == self.labels).float().mean())
                fd = frechet_distance(feats, self.real_features)
            val = float(diffusion_loss(model, self.x_val.to(dev), self.y_val.to(dev),
                                       schedule=self.schedule, label_dropout=0.0,
                                       t=self.t_val.to(dev), noise=self.noise_val.to(dev)))
        finally:
            model.train(was)
        return EvalResult(fd, acc, val)


@dataclass(frozen=True)
class TrainResult:
    """A training run's evaluation curve.

    Attributes
    ----------
    routing : str
    steps : ndarray, shape (E,)
        Training steps at which the EMA model was evaluated.
    fd, sample_acc, val_loss : ndarray, shape (E,)
        :class:`EvalResult` fields at those steps (``fd`` and ``sample_acc`` NaN at the
        evaluations that drew no samples).
    losses : ndarray, shape (S,)
        The training loss at every step taken.
    wall_time : float
        Seconds spent in training steps (evaluations excluded).
    plateau : bool
        Whether the run stopped on the held-out loss's plateau (else it ran its
        ``max_iter``).
    """

    routing: str
    steps: np.ndarray
    fd: np.ndarray
    sample_acc: np.ndarray
    val_loss: np.ndarray
    losses: np.ndarray
    wall_time: float
    plateau: bool = False

    @property
    def final_fd(self) -> float:
        return float(self.fd[-1])

    def steps_to_reach(self, target: float, metric: str = "fd") -> float:
        """First training step at which the ``metric`` curve reaches ``target``.

        Linear interpolation between the evaluations that measured the metric (the
        curve starts at step 0 from the first evaluation's value); ``inf`` if the run
        never reaches it.

        Parameters
        ----------
        target : float
            The value to reach (at or below).
        metric : {"fd", "val_loss"}
            The curve: Frechet distance or held-out denoising loss.
        """
        target = check_float(target, "target", min=0.0)
        check_choice(metric, "metric", ("fd", "val_loss"))
        values = np.asarray(getattr(self, metric), dtype=float)
        ok = np.isfinite(values)
        steps, values = self.steps[ok], values[ok]
        below = np.nonzero(values <= target)[0]
        if not below.size:
            return math.inf
        i = int(below[0])
        if i == 0:
            return float(steps[0])
        s0, s1, f0, f1 = steps[i - 1], steps[i], values[i - 1], values[i]
        return float(s0 + (s1 - s0) * (f0 - target) / (f0 - f1))


def eval_schedule(max_iter: int, first: int, growth: float = 1.0) -> np.ndarray:
    """Training steps at which a run is evaluated.

    ``growth = 1``: every ``first`` steps; ``growth > 1``: a geometric grid
    ``first, ceil(first * growth), ...`` (each step at least one more than the last), so
    the grid resolves a speedup ``S / s`` within a factor ``growth`` at any scale. The last
    step ``max_iter`` is always included.

    Parameters
    ----------
    max_iter : int
        Training steps of the run.
    first : int
        The first evaluation step (and the spacing when ``growth = 1``).
    growth : float
        Ratio of consecutive evaluation steps, in ``[1, 10]``.

    Returns
    -------
    ndarray of int64, shape (E,)
        Increasing steps in ``[1, max_iter]``, ending at ``max_iter``.

    Examples
    --------
    >>> eval_schedule(40, 4, 1.5).tolist()
    [4, 6, 9, 14, 21, 32, 40]
    """
    max_iter = check_int(max_iter, "max_iter", min=1, max=MAX_ITER)
    first = check_int(first, "first", min=1)
    growth = check_float(growth, "growth", min=1.0, max=10.0)
    out, s = [], first
    while s < max_iter:
        out.append(s)
        s = s + first if growth == 1.0 else max(s + 1, math.ceil(s * growth))
    out.append(max_iter)
    return np.array(out, dtype=np.int64)


def plateaued(steps, val_loss, tol: float) -> bool:
    """The stopping rule: the held-out loss improved by less than ``tol`` (relative) over
    the last half of the run.

    At the last evaluation step ``s``, the best loss of the evaluations in ``(s/2, s]`` is
    compared with the best up to ``s/2``: the run has plateaued when
    ``best_late > (1 - tol) * best_early``. Doubling the training gained less than ``tol``.

    Parameters
    ----------
    steps : array_like of int, shape (E,)
        Evaluation steps, increasing.
    val_loss : array_like, shape (E,)
        Held-out loss at those steps.
    tol : float
        Relative improvement below which the run has plateaued, in ``[0, 1)``.

    Returns
    -------
    bool
        False while no evaluation lies at or before ``s/2``.

    Examples
    --------
    >>> plateaued([10, 20, 40], [1.0, 0.5, 0.49], 0.05)
    True
    >>> plateaued([10, 20, 40], [1.0, 0.5, 0.4], 0.05)
    False
    """
    steps = check_array(steps, "steps", ndim=1, dtype=np.float64)
    loss = check_array(val_loss, "val_loss", ndim=1, dtype=np.float64)
    if len(loss) != len(steps):
        raise ValueError(f"val_loss: expected {len(steps)} values like steps, got {len(loss)}")
    tol = check_float(tol, "tol", min=0.0, max=1.0, max_inclusive=False)
    early = steps <= steps[-1] / 2
    if not early.any() or early.all():
        return False
    return bool(loss[~early].min() > (1.0 - tol) * loss[early].min())


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
                    seed: int = 0, device: str = "cpu", eval_growth: float = 1.0,
                    fd_every: int = 1, plateau_tol: float | None = None,
                    min_iter: int = 1) -> tuple[nn.Module, TrainResult]:  # fmt: skip
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
        Evaluate the EMA model every this many steps (and at the last step); with
        ``eval_growth > 1`` the first evaluation step of a geometric grid
        (:func:`eval_schedule`).
    evaluator : Evaluator, optional
        Without one, the curve arrays are empty and no plateau is detected.
    ema_decay : float
        EMA decay, warmed up as ``min(decay, (1 + s) / (10 + s))``.
    label_dropout : float
        Null-label probability (CFG training).
    schedule : NoiseSchedule, optional
    seed : int
        Seeds the batches, the timesteps and noise, and the routing (three generators, so
        runs with different routings see the same batches, timesteps and noise).
    device : {"cpu", "cuda"}
    eval_growth : float
        Ratio of consecutive evaluation steps (1: evenly spaced).
    fd_every : int
        Draw samples (FD and sample accuracy) at every this many evaluations and at the
        last one; the held-out loss is computed at every evaluation.
    plateau_tol : float, optional
        The stopping rule (:func:`plateaued`): stop at the first evaluation where the
        held-out loss improved by less than this fraction over the last half of the
        run; ``max_iter`` is then a cap. None: run ``max_iter`` steps.
    min_iter : int
        The rule is not applied before this step (the EMA loss is flat at the start,
        before it drops).

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
    eval_growth = check_float(eval_growth, "eval_growth", min=1.0, max=10.0)
    grid = set(eval_schedule(max_iter, eval_every, eval_growth).tolist())
    min_iter = check_int(min_iter, "min_iter", min=1, max=MAX_ITER)
    fd_every = check_int(fd_every, "fd_every", min=1)
    if plateau_tol is not None:
        plateau_tol = check_float(plateau_tol, "plateau_tol", min=0.0, max=1.0,
                                  max_inclusive=False)  # fmt: skip
    decay = check_float(ema_decay, "ema_decay", min=0.0, max=1.0)
    seed = check_seed(seed)
    if evaluator is not None and not isinstance(evaluator, Evaluator):
        raise TypeError(f"evaluator: expected an Evaluator, got {type(evaluator).__name__}")
    sched = _check_schedule(schedule)
    gen, route_gen = make_generator(seed + 1), make_generator(seed + 2)
    ema = copy.deepcopy(model).eval().requires_grad_(False)
    steps, evals = [], []
    clock = [0.0, time.perf_counter()]
    stop = [False]

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
        if evaluator is not None and done in grid:
            steps.append(done)
            ev = evaluator(ema, sample=False)
            evals.append(ev)
            if plateau_tol is not None and done >= min_iter:
                stop[0] = plateaued(steps, [e.val_loss for e in evals], plateau_tol)
            if stop[0] or done == max_iter or (len(evals) - 1) % fd_every == 0:
                evals[-1] = evaluator(ema)
        clock[1] = time.perf_counter()
        return stop[0]

    batches = array_batches(x, y, batch_size=batch_size, generator=make_generator(seed),
                            device=device)  # fmt: skip
    res = train(model, batches, max_iter=max_iter, lr=lr, seed=seed, device=device,
                loss_fn=loss_fn, callback=callback,
                desc=f"noise_aware_routing {routing}")  # fmt: skip
    result = TrainResult(
        routing, np.array(steps, dtype=np.int64),
        np.array([e.fd for e in evals]), np.array([e.sample_acc for e in evals]),
        np.array([e.val_loss for e in evals]), np.array(res.losses), clock[0],
        stop[0])  # fmt: skip
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
