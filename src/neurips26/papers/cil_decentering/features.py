"""Frozen features of a trained network for the split-MNIST experiments (torch, on demand).

- :func:`network_features`: penultimate-layer features of any network with a ``features``
  method (e.g. ``neurips26.common.models.MLPClassifier``), batched, without gradients.

The real photos, their views and the pretrained EfficientNet-lite0 backbone live in
``neurips26.common.data`` (``load_photos``, ``photo_views``) and ``neurips26.common.models``
(``load_efficientnet_lite0``, ``efficientnet_features``).
"""

from __future__ import annotations

import numpy as np

from ._validation import check_int


def network_features(model, x, *, batch_size: int = 1024, device: str = "cpu") -> np.ndarray:
    """``model.features(x)`` in eval mode without gradients, as float64 (N, D)."""
    import torch

    from neurips26.common.torch import get_device

    if not hasattr(model, "features"):
        raise TypeError(f"model must have a features(x) method, got {type(model).__name__}")
    batch_size = check_int(batch_size, "batch_size", min_value=1)
    dev = get_device(device)
    x = np.asarray(x, dtype=np.float32)
    model.eval()
    out = []
    with torch.no_grad():
        for start in range(0, len(x), batch_size):
            out.append(model.features(torch.as_tensor(x[start:start + batch_size]).to(dev))
                       .cpu().numpy().astype(np.float64))
    return np.concatenate(out)
