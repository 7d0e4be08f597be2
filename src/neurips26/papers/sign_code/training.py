"""Training with an optional overlap-disrupting regulariser.

The regulariser (our inferred form of the paper's) pushes the soft sign codes of
same-class inputs apart:

    L = CE + mu * mean_{a != b, y_a = y_b} cos(tanh(z_a / tau), tanh(z_b / tau)),

with ``z`` the concatenated pre-activations of every activation site. ``tanh(z / tau)`` is
a differentiable stand-in for ``sign(z)``. The network can still fit its training set
(memorise), so training accuracy stays high while same-class sign sharing falls.
"""

from __future__ import annotations

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from neurips26.common.torch import make_generator
from neurips26.common.train import TrainResult, array_batches, cosine_schedule, train
from neurips26.common.validation import check_array, check_float, check_int

from .networks import activation_sites

#: The most training steps accepted (more cannot finish on any machine this targets).
MAX_STEPS = 10**8
#: The largest learning rate accepted (AdamW diverges far below it).
MAX_LR = 100.0
#: The largest regulariser strength accepted (the loss overflows long before it).
MAX_PENALTY = 1e6


def same_class_soft_overlap(z: torch.Tensor, y: torch.Tensor, *, tau: float = 0.1) -> torch.Tensor:
    """Mean cosine of ``tanh(z / tau)`` over same-class pairs of a batch (0 if none).

    Parameters
    ----------
    z : (B, D) concatenated pre-activations
    y : (B,) labels
    tau : float
        Temperature of the soft sign.
    """
    if z.ndim != 2 or len(z) != len(y):
        raise ValueError(f"z: expected (B, D) with B = len(y) = {len(y)}, got {tuple(z.shape)}")
    if not tau > 0:
        raise ValueError(f"tau: expected a positive number, got {tau!r}")
    u = F.normalize(torch.tanh(z / tau), dim=1)
    sim = u @ u.T  # (B, B)
    same = (y[:, None] == y[None, :]) & ~torch.eye(len(y), dtype=torch.bool, device=z.device)
    if not same.any():
        return z.new_zeros(())
    return sim[same].mean()


def train_classifier(model: nn.Module, x, y, *, max_iter: int, lr: float = 1e-3,
                     batch_size: int = 128, overlap_penalty: float = 0.0, tau: float = 0.1,
                     seed: int = 0, device: str = "cpu") -> TrainResult:  # fmt: skip
    """Train ``model`` with cross-entropy (plus ``overlap_penalty`` times the regulariser).

    AdamW with a cosine schedule (5% warm-up) over shuffled mini-batches of ``(x, y)``.

    Raises
    ------
    ValueError, TypeError
        For mismatched, empty or non-finite inputs, non-integer labels, a penalty
        outside ``[0, MAX_PENALTY]``, ``tau <= 0``, ``lr`` outside ``(0, MAX_LR]`` or
        ``max_iter`` outside ``[1, MAX_STEPS]`` (the argument is named).
    """
    x = check_array(x, "x").astype(np.float32)
    y = check_array(y, "y", ndim=1, dtype=int)
    if x.ndim < 2 or len(x) != len(y):
        raise ValueError(f"x: expected (N, ...) inputs with N = len(y) = {len(y)}, got {x.shape}")
    check_float(overlap_penalty, "overlap_penalty", min=0.0, max=MAX_PENALTY)
    check_float(tau, "tau", min=0.0, min_inclusive=False)
    check_float(lr, "lr", min=0.0, max=MAX_LR, min_inclusive=False)
    check_int(max_iter, "max_iter", min=1, max=MAX_STEPS)
    check_int(batch_size, "batch_size", min=1)
    sites = [m for _, m in activation_sites(model)]
    captured: list[torch.Tensor] = []
    handles = []
    if overlap_penalty > 0:
        handles = [s.register_forward_hook(lambda m, inp, out: captured.append(inp[0].flatten(1)))
                   for s in sites]  # fmt: skip

    def loss_fn(net, batch):
        xb, yb = batch
        captured.clear()
        loss = F.cross_entropy(net(xb), yb)
        if overlap_penalty > 0:
            z = torch.cat(captured, dim=1)
            loss = loss + overlap_penalty * same_class_soft_overlap(z, yb, tau=tau)
        return loss

    batches = array_batches(x, y.astype(np.int64), batch_size=min(batch_size, len(x)),
                            generator=make_generator(seed), device=device)  # fmt: skip
    try:
        return train(model, batches, max_iter=max_iter, lr=lr, seed=seed, device=device,
                     lr_schedule=cosine_schedule(max_iter, warmup=max(1, max_iter // 20)),
                     loss_fn=loss_fn, desc="sign_code")  # fmt: skip
    finally:
        for h in handles:
            h.remove()
