"""Frozen representations ``phi`` for flattened images in [-1, 1].

The flow models work on flattened grey images scaled to [-1, 1] (``(N, H * W)``). A
representation maps such an array to features ``(N, F)``:

- :class:`ClassifierFeatures`: a classifier's penultimate features (an in-repo
  :class:`~neurips26.common.models.SmallCNN` or MLP trained on the data, then frozen: the
  spec's semantic space);
- :class:`EfficientNetFeatures`: the pooled 1,280-d features of the ImageNet-pretrained
  EfficientNet-lite0 (a real pretrained network, our stand-in for FID's Inception and for
  DINOv3), on images repeated to RGB and resized.
"""

from __future__ import annotations

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from neurips26.common.validation import check_array, check_int


def _images(x, image_shape: tuple[int, int, int], name: str = "x") -> torch.Tensor:
    """Flattened [-1, 1] images (N, C*H*W) -> float32 (N, C, H, W) in [0, 1]."""
    if torch.is_tensor(x):
        x = x.detach().cpu().numpy()
    arr = check_array(x, name, ndim=2)
    c, h, w = image_shape
    if arr.shape[1] != c * h * w:
        raise ValueError(f"{name}: expected {c * h * w} columns for images {image_shape}, "
                         f"got {arr.shape[1]}")  # fmt: skip
    img = (np.clip(arr, -1.0, 1.0) + 1.0) / 2.0
    return torch.as_tensor(img.reshape(len(arr), c, h, w), dtype=torch.float32)


def _shape(image_shape) -> tuple[int, int, int]:
    if not (isinstance(image_shape, tuple) and len(image_shape) == 3):
        raise ValueError(f"image_shape: expected (C, H, W), got {image_shape!r}")
    return tuple(check_int(v, "image_shape", min=1, max=4096) for v in image_shape)


class ClassifierFeatures:
    """``phi(x) = net.features(image(x))``: a frozen classifier's penultimate features.

    Parameters
    ----------
    net : nn.Module
        Has ``features(images (N, C, H, W) in [0, 1]) -> (N, F)`` (``SmallCNN``,
        ``MLPClassifier``).
    image_shape : (C, H, W)
    batch_size : int

    Examples
    --------
    >>> from neurips26.common.models import SmallCNN
    >>> phi = ClassifierFeatures(SmallCNN(1, (4, 8), 10), (1, 8, 8))
    >>> phi(np.zeros((3, 64))).shape
    (3, 8)
    """

    def __init__(self, net: nn.Module, image_shape: tuple[int, int, int], *,
                 batch_size: int = 1024) -> None:  # fmt: skip
        if not isinstance(net, nn.Module) or not hasattr(net, "features"):
            raise TypeError(f"net must be a torch module with features(), got "
                            f"{type(net).__name__}")  # fmt: skip
        self.net = net.eval().requires_grad_(False)
        self.image_shape = _shape(image_shape)
        self.batch_size = check_int(batch_size, "batch_size", min=1, max=10**6)

    @torch.no_grad()
    def __call__(self, x) -> np.ndarray:
        img = _images(x, self.image_shape)
        out = [self.net.features(img[s:s + self.batch_size]) for s in range(0, len(img),
                                                                              self.batch_size)]
        return torch.cat(out).double().numpy()

    @torch.no_grad()
    def probabilities(self, x) -> np.ndarray:
        """The classifier's softmax ``(N, num_classes)`` (the preference proxy's input)."""
        img = _images(x, self.image_shape)
        return torch.softmax(self.net(img), 1).double().numpy()


class EfficientNetFeatures:
    """``phi(x)``: EfficientNet-lite0's pooled features of the images as RGB, resized.

    Parameters
    ----------
    model : nn.Module
        From :func:`neurips26.common.models.load_efficientnet_lite0`.
    image_shape : (C, H, W)
        ``C`` is 1 (repeated to RGB) or 3.
    size : int
        Side the images are resized to (bilinear) before the network.
    batch_size : int
    """

    def __init__(self, model: nn.Module, image_shape: tuple[int, int, int], *,
                 size: int = 32, batch_size: int = 256) -> None:  # fmt: skip
        if not hasattr(model, "extract_features"):
            raise TypeError(f"model must have extract_features(), got {type(model).__name__}")
        self.model = model
        self.image_shape = _shape(image_shape)
        if self.image_shape[0] not in (1, 3):
            raise ValueError(f"image_shape: 1 or 3 channels, got {self.image_shape[0]}")
        self.size = check_int(size, "size", min=8, max=512)
        self.batch_size = check_int(batch_size, "batch_size", min=1, max=10**5)

    def __call__(self, x) -> np.ndarray:
        from neurips26.common.models.vision import efficientnet_features

        img = _images(x, self.image_shape)
        if img.shape[-1] != self.size:
            img = F.interpolate(img, size=(self.size, self.size), mode="bilinear",
                                align_corners=False)  # fmt: skip
        img = img.expand(-1, 3, -1, -1) if img.shape[1] == 1 else img
        u8 = (img.clamp(0, 1) * 255).round().to(torch.uint8).permute(0, 2, 3, 1).numpy()
        return efficientnet_features(self.model, u8, batch_size=self.batch_size)
