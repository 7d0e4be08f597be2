"""Where the gradient on the state stream comes from (the paper's gradient analysis).

For the state of token ``i`` entering layer ``l`` (``h_i^l``; the residual stream of step
``i`` in the standard model, of the state step ``x_i`` in the interleaved ones) the total
gradient of the summed next-token losses ``sum_j L_j`` splits into

- the *same-index* part ``g_same = dL_i / dh_i^l``, from the loss that predicts
  ``x_{i+1}`` (read out at step ``i`` in the standard model, at ``rho_i`` in the
  separated one, which reaches ``x_i`` only through attention), and
- the *future* part ``g_future = sum_{j > i} dL_j / dh_i^l``, which arrives through
  the attention of later steps.

The *local* part is the gradient from a loss read out at the state's own step: it is
``g_same`` in the standard model and zero in the interleaved models, whose state
steps carry no loss. We report, per layer,

    local_frac = ||G_local||_F / (||G_local||_F + ||G_future||_F)
    same_frac  = ||G_same||_F  / (||G_same||_F  + ||G_future||_F)
    cross_cos  = mean over states of cos(g_same, g_future)

Deviations from the paper: this is our inferred form of its gradient analysis (its
exact statistic is not in the abstract); ``g_same`` is computed with one backward pass
per token index, exact but ``T`` times the cost of one backward pass.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from neurips26.common.models import GPT

from ._checks import check_targets, check_tokens
from .sps import SPSTransformer


@dataclass(frozen=True)
class GradientSources:
    """Per-layer split of the state-stream gradient (see the module docstring).

    Attributes
    ----------
    local_frac : np.ndarray
        ``(L,)`` share of the gradient norm from the state step's own loss.
    same_frac : np.ndarray
        ``(L,)`` share from the loss that predicts the next token ``x_{i+1}``.
    cross_cos : np.ndarray
        ``(L,)`` mean cosine between the same-index and the future gradients.
    readout_grad_norm : float
        Norm of the gradient on the state steps leaving the last block, which only a
        loss read out at those steps can reach (measured, not assumed: zero when the
        state steps carry no loss).
    mode : str
        ``"standard"``, ``"separated"`` or ``"pause"``.
    """

    local_frac: np.ndarray
    same_frac: np.ndarray
    cross_cos: np.ndarray
    readout_grad_norm: float
    mode: str


def _states_and_logits(model: nn.Module, idx: torch.Tensor):
    """Block inputs ``L x (B, S, C)``, the state-step indices and the logits ``(B, T, V)``."""
    captured: list[torch.Tensor] = []

    def hook(_module, args, kwargs):
        captured.append(args[0] if args else kwargs["x"])

    def out_hook(_module, _args, output):
        captured.append(output[0])  # the residual stream leaving the last block

    handles = [b.register_forward_pre_hook(hook, with_kwargs=True) for b in model.blocks]
    handles.append(model.blocks[-1].register_forward_hook(out_hook))
    try:
        logits = model(idx)[0]
    finally:
        for h in handles:
            h.remove()
    t = idx.shape[1]
    if isinstance(model, SPSTransformer):
        return captured, torch.arange(0, 2 * t, 2), torch.arange(1, 2 * t, 2), logits
    steps = torch.arange(t)
    return captured, steps, steps, logits


def gradient_sources(model: nn.Module, idx: torch.Tensor, targets: torch.Tensor) -> GradientSources:
    """Split the gradient on each layer's state stream into local/same-index/future parts.

    Parameters
    ----------
    model : GPT or SPSTransformer
        The standard model, or a separated or pause model.
    idx, targets : torch.Tensor
        ``(B, T)`` input tokens and next tokens.

    Returns
    -------
    GradientSources

    Examples
    --------
    >>> from neurips26.common.models import GPTConfig
    >>> from neurips26.common.torch import seeded
    >>> with seeded(0):
    ...     sep = SPSTransformer(GPTConfig(block_size=8, num_layers=2, dim=16))
    >>> x = torch.randint(0, 256, (2, 8), generator=torch.Generator().manual_seed(0))
    >>> gradient_sources(sep, x, x).local_frac
    array([0., 0.])
    """
    if isinstance(model, SPSTransformer):
        mode = model.mode
    elif isinstance(model, GPT):
        mode = "standard"
    else:
        raise TypeError(f"model must be a common GPT or an SPSTransformer, got {type(model)}")
    cfg = model.cfg
    idx = check_tokens("idx", idx, vocab_size=cfg.vocab_size, block_size=cfg.block_size)
    targets = check_targets(targets, idx, vocab_size=cfg.vocab_size)
    if int(targets.min()) < 0:
        raise ValueError("targets: every slot must hold a token id (the ignored id -1 is "
                         "not supported by gradient_sources)")
    was_training = model.training
    model.eval()
    try:
        with torch.enable_grad():
            states, state_steps, readout_steps, logits = _states_and_logits(model, idx)
            b, t, v = logits.shape
            losses = F.cross_entropy(logits.reshape(-1, v), targets.reshape(-1),
                                     reduction="none").view(b, t)  # fmt: skip
            total = torch.autograd.grad(losses.sum(), states, retain_graph=True)
            total = [g[:, state_steps] for g in total]  # (L + 1) x (B, T, C)
            readout = float(total.pop().norm())  # the gradient leaving the last block
            same = [torch.zeros_like(g) for g in total]
            for i in range(t):  # g_same: the gradient of L_i alone, at the state of token i
                grads = torch.autograd.grad(losses[:, i].sum(), states[:-1], retain_graph=True)
                for layer, g in enumerate(grads):
                    same[layer][:, i] = g[:, state_steps[i]]
    finally:
        model.train(was_training)
    # a loss is local to a state when it is read out at that state's own step
    is_local = bool(torch.equal(readout_steps, state_steps))
    local_frac, same_frac, cross_cos = [], [], []
    for g_tot, g_same in zip(total, same, strict=True):
        g_fut = g_tot - g_same
        n_same, n_fut = float(g_same.norm()), float(g_fut.norm())
        n_local = n_same if is_local else 0.0
        local_frac.append(n_local / (n_local + n_fut) if n_local + n_fut > 0 else 0.0)
        same_frac.append(n_same / (n_same + n_fut) if n_same + n_fut > 0 else 0.0)
        cos = F.cosine_similarity(g_same[:, :-1], g_fut[:, :-1], dim=-1)  # last has no future
        cross_cos.append(float(cos.mean()))
    return GradientSources(
        local_frac=np.array(local_frac),
        same_frac=np.array(same_frac),
        cross_cos=np.array(cross_cos),
        readout_grad_norm=readout,
        mode=mode,
    )
