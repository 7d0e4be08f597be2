"""One training loop for the deep-learning papers.

``train(model, batches, max_iter=..., lr=..., seed=...)`` runs AdamW (or a given optimizer)
over an iterable of batches, with an optional learning-rate schedule, gradient clipping,
a callback per step and a tqdm bar on stderr for long runs, and returns a frozen
:class:`TrainResult`. Nothing in it reads the clock, so the same seed gives the same losses.
"""

from __future__ import annotations

import contextlib
import math
import sys
from collections.abc import Callable, Iterable
from dataclasses import dataclass

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from neurips26.common.torch import get_device, make_generator
from neurips26.common.validation import check_int


@dataclass(frozen=True)
class TrainResult:
    """What :func:`train` did.

    Attributes
    ----------
    losses : tuple of float
        The training loss at every step, in order.
    num_steps : int
        Steps taken (fewer than ``max_iter`` when the callback stopped early or the
        batches ran out).
    stopped_early : bool
    """

    losses: tuple[float, ...]
    num_steps: int
    stopped_early: bool

    @property
    def final_loss(self) -> float:
        """Mean loss of the last 10% of steps (at least one): less noisy than the last."""
        if not self.losses:
            return float("nan")
        k = max(1, len(self.losses) // 10)
        return float(np.mean(self.losses[-k:]))


def default_loss(model: nn.Module, batch) -> torch.Tensor:
    """Mean loss of a batch ``(x, y)``.

    Uses the model's own loss when ``model(x, y)`` returns ``(output, loss)`` (as
    :class:`~neurips26.common.models.GPT` does), else the cross-entropy of ``model(x)``.
    """
    x, y = batch
    if getattr(model, "returns_loss", False):
        out = model(x, y)
        if isinstance(out, tuple) and len(out) >= 2 and out[1] is not None:
            return out[1]
    return F.cross_entropy(model(x), y)


def cosine_schedule(max_iter: int, *, warmup: int = 0, min_ratio: float = 0.1):
    """A multiplier ``step -> [0, 1]``: linear warm-up, then cosine decay to ``min_ratio``."""
    if max_iter < 1 or warmup < 0 or warmup > max_iter:
        raise ValueError(f"warmup: expected 0 <= warmup <= max_iter={max_iter}, got {warmup}")
    if not 0.0 <= min_ratio <= 1.0:
        raise ValueError(f"min_ratio: expected a value in [0, 1], got {min_ratio!r}")

    def schedule(step: int) -> float:
        if step < warmup:
            return (step + 1) / warmup
        frac = (step - warmup) / max(1, max_iter - warmup)
        return min_ratio + (1.0 - min_ratio) * 0.5 * (1.0 + math.cos(math.pi * min(frac, 1.0)))

    return schedule


def array_batches(*arrays, batch_size: int, generator: torch.Generator, device="cpu"):
    """Endless shuffled mini-batches of equal-length arrays (one permutation per epoch).

    Yields
    ------
    tuple of torch.Tensor
        One tensor per array, each ``(batch_size, ...)``; the last batch of an epoch
        is dropped when incomplete.
    """
    tensors = [torch.as_tensor(np.asarray(a)) for a in arrays]
    if not tensors:
        raise ValueError("arrays: expected at least one array")
    n = len(tensors[0])
    if any(len(t) != n for t in tensors):
        raise ValueError(f"arrays: lengths differ: {[len(t) for t in tensors]}")
    check_int(batch_size, "batch_size", min=1)
    if batch_size > n:
        raise ValueError(f"batch_size: {batch_size} exceeds the {n} examples")
    while True:
        perm = torch.randperm(n, generator=generator)
        for start in range(0, n - batch_size + 1, batch_size):
            idx = perm[start : start + batch_size]
            yield tuple(t[idx].to(device) for t in tensors)


def train(
    model: nn.Module,
    batches: Iterable,
    *,
    max_iter: int,
    lr: float = 1e-3,
    seed: int = 0,
    device: str = "cpu",
    weight_decay: float = 0.0,
    betas: tuple[float, float] = (0.9, 0.999),
    optimizer: torch.optim.Optimizer | None = None,
    lr_schedule: Callable[[int], float] | None = None,
    loss_fn: Callable[[nn.Module, object], torch.Tensor] = default_loss,
    grad_clip: float | None = None,
    callback: Callable[[int, float, nn.Module], bool | None] | None = None,
    progress: bool | None = None,
    desc: str = "train",
) -> TrainResult:
    """Train ``model`` in place for ``max_iter`` steps.

    Parameters
    ----------
    model : nn.Module
    batches : iterable
        Yields batches (tuples of tensors) that ``loss_fn`` understands.
    max_iter : int
        Number of optimisation steps.
    lr : float
        Peak learning rate (multiplied by ``lr_schedule(step)`` when given).
    seed : int
        Seeds torch's global generator for layers that draw from it (dropout).
    device : {"cpu", "cuda"}
        Where the model and batches go.
    weight_decay, betas : float, (float, float)
        AdamW's (ignored when ``optimizer`` is given).
    optimizer : torch.optim.Optimizer, optional
        Use this optimizer instead of AdamW.
    lr_schedule : callable, optional
        ``step -> multiplier`` of ``lr`` (e.g. :func:`cosine_schedule`).
    loss_fn : callable
        ``(model, batch) -> scalar tensor`` (default: :func:`default_loss`).
    grad_clip : float, optional
        Clip the global gradient norm to this value.
    callback : callable, optional
        ``(step, loss, model) -> stop?`` after each step; returning True stops.
    progress : bool, optional
        A tqdm bar on stderr; default: when stderr is a terminal and ``max_iter >= 200``.

    Raises
    ------
    ValueError
        For ``max_iter < 1``, a non-positive or non-finite ``lr``, or a non-finite loss
        (the step and the loss are named).
    """
    if not isinstance(model, nn.Module):
        raise TypeError(f"model: expected a torch.nn.Module, got {type(model).__name__}")
    check_int(max_iter, "max_iter", min=1)
    if not (isinstance(lr, (int, float)) and math.isfinite(lr) and lr > 0):
        raise ValueError(f"lr: expected a positive finite number, got {lr!r}")
    if grad_clip is not None and not grad_clip > 0:
        raise ValueError(f"grad_clip: expected a positive number, got {grad_clip!r}")
    dev = get_device(device)
    make_generator(seed)  # validates the seed
    torch.manual_seed(seed % 2**63)
    model.to(dev)
    model.train()
    params = [p for p in model.parameters() if p.requires_grad]
    if not params and optimizer is None:
        raise ValueError("model: has no trainable parameters")
    opt = optimizer or torch.optim.AdamW(params, lr=lr, betas=betas, weight_decay=weight_decay)
    base_lrs = [g.get("lr", lr) for g in opt.param_groups]
    from neurips26.common.progress import listening, phase

    stack = contextlib.ExitStack()
    shown = None  # a phase for the command line's bar, when it listens
    if progress is None:
        if listening():
            shown = stack.enter_context(phase(desc or "training", max_iter))
        progress = shown is None and sys.stderr.isatty() and max_iter >= 200
    bar = None
    if progress:
        from tqdm.auto import tqdm

        bar = tqdm(total=max_iter, desc=desc, file=sys.stderr, leave=False)
    losses: list[float] = []
    stopped = False
    it = iter(batches)
    try:
        for step in range(max_iter):
            try:
                batch = next(it)
            except StopIteration:
                break
            if lr_schedule is not None:
                mult = float(lr_schedule(step))
                if not (math.isfinite(mult) and mult >= 0):
                    raise ValueError(f"lr_schedule: step {step} gave {mult!r}")
                for g, base in zip(opt.param_groups, base_lrs, strict=True):
                    g["lr"] = base * mult
            if isinstance(batch, (tuple, list)):
                batch = type(batch)(b.to(dev) if torch.is_tensor(b) else b for b in batch)
            loss = loss_fn(model, batch)
            value = float(loss.detach())
            if not math.isfinite(value):
                raise ValueError(f"loss: non-finite value {value} at step {step}; lower lr?")
            opt.zero_grad(set_to_none=True)
            loss.backward()
            if grad_clip is not None:
                torch.nn.utils.clip_grad_norm_(params, grad_clip)
            opt.step()
            losses.append(value)
            if bar is not None:
                bar.update(1)
                bar.set_postfix(loss=f"{value:.4g}", refresh=False)
            if shown is not None:
                shown.advance()
            if callback is not None and callback(step, value, model):
                stopped = True
                break
    finally:
        if bar is not None:
            bar.close()
        stack.close()
    model.eval()
    return TrainResult(tuple(losses), len(losses), stopped)


@torch.no_grad()
def evaluate(model: nn.Module, batches: Iterable, *, loss_fn=default_loss,
             device: str = "cpu") -> float:  # fmt: skip
    """Mean of ``loss_fn`` over ``batches`` (weighted by batch size), in eval mode."""
    dev = get_device(device)
    model.eval()
    total, count = 0.0, 0
    for batch in batches:
        batch = tuple(b.to(dev) if torch.is_tensor(b) else b for b in batch)
        n = len(batch[0])
        total += float(loss_fn(model, batch)) * n
        count += n
    if count == 0:
        raise ValueError("batches: no batch to evaluate")
    return total / count


@torch.no_grad()
def accuracy(model: nn.Module, x, y, *, batch_size: int = 1024, device: str = "cpu") -> float:
    """Top-1 accuracy of a classifier on arrays ``x`` (N, ...) and labels ``y`` (N,)."""
    dev = get_device(device)
    x = torch.as_tensor(np.asarray(x))
    y = torch.as_tensor(np.asarray(y))
    if len(x) != len(y) or len(x) == 0:
        raise ValueError(f"x, y: expected equal non-zero lengths, got {len(x)} and {len(y)}")
    model.eval()
    correct = 0
    for start in range(0, len(x), batch_size):
        pred = model(x[start : start + batch_size].to(dev)).argmax(-1).cpu()
        correct += int((pred == y[start : start + batch_size]).sum())
    return correct / len(x)
