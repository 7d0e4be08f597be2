"""The margin decomposition at the last hidden layer into a sign part and a remainder.

For an input with true class ``y``, runner-up class ``c`` and last hidden layer
``h = s * a`` (signs ``s``, magnitudes ``a``), the margin without biases is

    m = (w_y - w_c)^T h = a_bar (w_y - w_c)^T s + (w_y - w_c)^T (s * (a - a_bar)),

with ``a_bar`` the mean magnitude of the layer for that input (our choice of constant).
The first term is the sign-only part ``m_sign``, the second the magnitude remainder.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch
from torch import nn

from .codes import _as_inputs


@dataclass(frozen=True)
class MarginParts:
    """Per-input parts of the margin (all shape (B,)).

    Attributes
    ----------
    total : ndarray
        ``(w_y - w_c)^T h``.
    sign_part : ndarray
        ``a_bar (w_y - w_c)^T s``.
    residual : ndarray
        ``(w_y - w_c)^T (s * (a - a_bar))``; ``sign_part + residual == total``.
    bias : ndarray
        ``b_y - b_c`` (not part of ``total``).
    runner_up : ndarray of int
        ``c`` for each input.
    """

    total: np.ndarray
    sign_part: np.ndarray
    residual: np.ndarray
    bias: np.ndarray
    runner_up: np.ndarray


@torch.no_grad()
def margin_decomposition(model: nn.Module, x, y) -> MarginParts:
    """Split each input's margin into the sign part and the magnitude remainder.

    Parameters
    ----------
    model : nn.Module
        Must have ``features(x) -> h`` (B, d) and a linear ``head`` (as
        :class:`SignMLP` and :class:`SignResNet` do).
    x : (B, ...) inputs
    y : (B,) true labels in ``[0, num_classes)``
    """
    head = getattr(model, "head", None)
    if not hasattr(model, "features") or not isinstance(head, nn.Linear):
        raise ValueError("model: needs a features(x) method and a linear `head`")
    x = _as_inputs(x)
    y_arr = np.asarray(y)
    if y_arr.dtype.kind not in "iu":
        raise TypeError(f"y must hold integer labels, got dtype {y_arr.dtype}")
    y = torch.as_tensor(y_arr)
    if y.ndim != 1 or len(y) != len(x):
        raise ValueError(f"y: expected {len(x)} labels (one per row of x), got shape "
                         f"{tuple(y.shape)}")
    k = head.out_features
    if k < 2:
        raise ValueError("model: the head needs at least two classes for a margin")
    if y.dtype.is_floating_point or y.min() < 0 or y.max() >= k:
        raise ValueError(f"y: labels must be integers in [0, {k})")
    model.eval()
    h = model.features(x).double()  # (B, d)
    logits = h @ head.weight.double().T  # (B, K)
    masked = logits.clone()
    masked[torch.arange(len(y)), y] = -torch.inf
    c = masked.argmax(dim=1)  # runner-up
    w = head.weight.double()
    dw = w[y] - w[c]  # (B, d)
    s = torch.where(h >= 0, 1.0, -1.0).double()
    a = h.abs()
    a_bar = a.mean(dim=1, keepdim=True)  # (B, 1)
    sign_part = a_bar.squeeze(1) * (dw * s).sum(1)
    residual = (dw * s * (a - a_bar)).sum(1)
    total = (dw * h).sum(1)
    b = head.bias.double() if head.bias is not None else torch.zeros(k, dtype=torch.float64)
    return MarginParts(total.numpy(), sign_part.numpy(), residual.numpy(),
                       (b[y] - b[c]).numpy(), c.numpy())  # fmt: skip
