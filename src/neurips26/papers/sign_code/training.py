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

from .networks import activation_sites


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
    ValueError
        For mismatched or non-finite inputs, a negative penalty or ``tau <= 0``.
    """
    x = np.asarray(x, dtype=np.float32)
    y = np.asarray(y)
    if len(x) != len(y) or len(x) == 0:
        raise ValueError(f"x, y: expected equal non-zero lengths, got {len(x)} and {len(y)}")
    if not np.isfinite(x).all():
        raise ValueError("x: contains NaN or infinite values")
    if not np.issubdtype(y.dtype, np.integer):
        raise TypeError(f"y: expected integer labels, got dtype {y.dtype}")
    if not (np.isfinite(overlap_penalty) and overlap_penalty >= 0):
        raise ValueError(f"overlap_penalty: expected a finite value >= 0, got {overlap_penalty!r}")
    if not tau > 0:
        raise ValueError(f"tau: expected a positive number, got {tau!r}")
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
