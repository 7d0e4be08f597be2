"""Training a language model on a byte stream and measuring it (tokens, FLOPs, val NLL).

A thin layer over the common training loop (:func:`neurips26.common.train.train`): random
next-token windows drawn from a seeded generator, AdamW with a linear warm-up and cosine
decay, and the held-out negative log-likelihood measured on fixed, non-overlapping
validation windows along the way, so the curves can be drawn against tokens seen and
against training FLOPs (:func:`~neurips26.papers.state_pred_sep.forward_flops`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from torch import nn

from neurips26.common.data import TokenSplit, random_batches, sequential_windows
from neurips26.common.models import GPT
from neurips26.common.torch import get_device, make_generator
from neurips26.common.train import cosine_schedule, evaluate, train

from ._checks import check_device, check_int, check_positive_float
from .flops import forward_flops
from .sps import SPSTransformer


@dataclass(frozen=True)
class LMTrainResult:
    """What :func:`train_lm` measured.

    Attributes
    ----------
    eval_steps : tuple of int
        Steps after which the validation NLL was measured (the last is ``max_iter``).
    eval_nll : tuple of float
        Validation NLL (nats per token) at those steps.
    train_losses : tuple of float
        Training loss at every step.
    tokens_per_step : int
        ``batch_size x block_size`` input tokens per step.
    flops_per_token : float
        Analytic training FLOPs per input token of the model.
    """

    eval_steps: tuple[int, ...]
    eval_nll: tuple[float, ...]
    train_losses: tuple[float, ...]
    tokens_per_step: int
    flops_per_token: float

    @property
    def val_nll(self) -> float:
        """Validation NLL at the end of training."""
        return self.eval_nll[-1]

    @property
    def tokens_seen(self) -> int:
        return self.eval_steps[-1] * self.tokens_per_step

    @property
    def train_flops(self) -> float:
        return self.tokens_seen * self.flops_per_token

    def tokens_to_reach(self, nll: float) -> float:
        """Tokens seen when the validation curve first reaches ``nll`` (linear between
        evaluations); ``nan`` when it never does."""
        steps, vals = np.array((0, *self.eval_steps)), np.array((np.inf, *self.eval_nll))
        for k in range(1, len(steps)):
            if vals[k] <= nll:
                lo = vals[k - 1] if np.isfinite(vals[k - 1]) else vals[k]
                frac = 1.0 if lo == vals[k] else (lo - nll) / (lo - vals[k])
                step = steps[k - 1] + frac * (steps[k] - steps[k - 1])
                return float(step * self.tokens_per_step)
        return float("nan")


def model_mode(model: nn.Module) -> str:
    """``"standard"`` for the common GPT, else the SPSTransformer's mode."""
    if isinstance(model, SPSTransformer):
        return model.mode
    if isinstance(model, GPT):
        return "standard"
    raise TypeError(f"model must be a common GPT or an SPSTransformer, got {type(model).__name__}")


def val_nll(model: nn.Module, tokens, *, max_windows: int | None = None, batch_size: int = 64,
            device: str = "cpu") -> float:  # fmt: skip
    """Mean next-token NLL (nats per token) on non-overlapping windows of ``tokens``.

    Parameters
    ----------
    model : GPT or SPSTransformer
    tokens : array-like of int, shape (N,)
        Held-out token stream; cut into windows of the model's ``block_size``.
    max_windows : int, optional
        Use only the first windows (the same ones every call).
    """
    model_mode(model)
    check_int("batch_size", batch_size, minimum=1)
    if max_windows is not None:
        check_int("max_windows", max_windows, minimum=1)
    check_device(device)
    if isinstance(tokens, (str, bytes)) or tokens is None:
        raise TypeError(f"tokens must be an array of int token ids, got {type(tokens).__name__}")
    arr = np.asarray(tokens)
    if arr.dtype.kind not in "iu":
        raise TypeError(f"tokens must hold integer token ids, got dtype {arr.dtype}")
    if arr.size and (arr.min() < 0 or arr.max() >= model.cfg.vocab_size):
        raise ValueError(f"tokens hold ids outside [0, vocab_size={model.cfg.vocab_size})")
    x, y = sequential_windows(tokens, block_size=model.cfg.block_size, max_windows=max_windows)
    batches = [(x[i : i + batch_size], y[i : i + batch_size]) for i in range(0, len(x), batch_size)]
    return float(evaluate(model, batches, device=device))


def train_lm(
    model: nn.Module,
    data: TokenSplit,
    *,
    max_iter: int,
    lr: float = 3e-3,
    batch_size: int = 16,
    seed: int = 0,
    warmup: int = 20,
    num_evals: int = 4,
    eval_windows: int | None = 64,
    device: str = "cpu",
) -> LMTrainResult:
    """Train ``model`` in place on ``data.train``; measure validation NLL on ``data.val``.

    Parameters
    ----------
    model : GPT or SPSTransformer
        Trained on windows of its ``block_size``.
    data : TokenSplit
        Training and held-out token streams.
    max_iter : int
        Optimisation steps (``>= 1``).
    lr : float
        Peak AdamW learning rate (linear warm-up over ``warmup`` steps, cosine decay to
        ``0.1 lr`` at ``max_iter``).
    batch_size : int
        Windows per step.
    seed : int
        Seed of the window sampler (the same seed gives every model the same batches).
    num_evals : int
        Validation measurements, evenly spaced; the last at ``max_iter``.
    eval_windows : int, optional
        Validation windows per measurement (None: the whole held-out stream).
    device : {"cpu", "cuda"}

    Returns
    -------
    LMTrainResult

    Raises
    ------
    ValueError
        For ``max_iter < 1`` (naming it), a non-positive ``lr``, ``warmup > max_iter``,
        or a data split too short for the model's context.
    """
    mode = model_mode(model)
    check_int("max_iter", max_iter, minimum=1)
    check_int("batch_size", batch_size, minimum=1)
    check_int("num_evals", num_evals, minimum=1, maximum=10**6)
    check_int("warmup", warmup, minimum=0)
    if eval_windows is not None:
        check_int("eval_windows", eval_windows, minimum=1)
    check_device(device)
    lr = check_positive_float("lr", lr)
    if not isinstance(data, TokenSplit):
        raise TypeError(f"data must be a TokenSplit, got {type(data).__name__}")
    if warmup > max_iter:
        raise ValueError(f"warmup={warmup} exceeds max_iter={max_iter}")
    block = model.cfg.block_size
    if data.vocab_size != model.cfg.vocab_size:
        raise ValueError(f"data.vocab_size={data.vocab_size} != model vocab {model.cfg.vocab_size}")
    if len(data.train) <= block or len(data.val) <= block:
        raise ValueError(
            f"data: the train ({len(data.train)}) and val ({len(data.val)}) streams must be "
            f"longer than block_size={block}"
        )
    dev = get_device(device)
    model.to(dev)
    gen = make_generator(seed)
    batches = random_batches(data.train, batch_size=batch_size, block_size=block, generator=gen,
                             device=dev)  # fmt: skip
    at = sorted({math.ceil(max_iter * (k + 1) / num_evals) for k in range(num_evals)})
    evals: list[float] = []

    def callback(step: int, _loss: float, m: nn.Module) -> None:
        if step + 1 in at:
            evals.append(val_nll(m, data.val, max_windows=eval_windows, device=str(dev)))
            m.train()

    result = train(model, batches, max_iter=max_iter, lr=lr, seed=seed, device=str(dev),
                   lr_schedule=cosine_schedule(max_iter, warmup=warmup), grad_clip=1.0,
                   callback=callback, weight_decay=0.0)  # fmt: skip
    return LMTrainResult(
        eval_steps=tuple(at),
        eval_nll=tuple(evals),
        train_losses=tuple(result.losses),
        tokens_per_step=batch_size * block,
        flops_per_token=forward_flops(model.cfg, mode=mode).training_per_token,
    )

