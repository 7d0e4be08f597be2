"""Small MLPs and CNNs for image papers (inputs ``(B, C, H, W)`` or ``(B, D)``)."""

from __future__ import annotations

import itertools
from collections.abc import Sequence

import torch
from torch import nn

from neurips26.common.validation import check_int

ACTIVATIONS = {"relu": nn.ReLU, "gelu": nn.GELU, "tanh": nn.Tanh, "silu": nn.SiLU}


def _positive_int(name: str, v) -> int:
    return check_int(v, name, min=1)


class MLPClassifier(nn.Module):
    """``Linear -> act`` layers then a linear head; flattens image inputs.

    Parameters
    ----------
    in_features : int
        ``D`` (``C * H * W`` for images).
    hidden : sequence of int
        Widths of the hidden layers (empty: a linear model).
    num_classes : int
    activation : {"relu", "gelu", "tanh", "silu"}

    Attributes
    ----------
    layers : nn.ModuleList
        One ``nn.Sequential(Linear, act)`` per hidden layer (hook these for features).
    head : nn.Linear

    Examples
    --------
    >>> net = MLPClassifier(64, (32, 16), 10)
    >>> tuple(net(torch.zeros(5, 1, 8, 8)).shape)
    (5, 10)
    """

    def __init__(self, in_features: int, hidden: Sequence[int], num_classes: int, *,
                 activation: str = "relu", bias: bool = True) -> None:  # fmt: skip
        super().__init__()
        _positive_int("in_features", in_features)
        _positive_int("num_classes", num_classes)
        if activation not in ACTIVATIONS:
            raise ValueError(f"activation: {activation!r} is not one of {tuple(ACTIVATIONS)}")
        widths = [in_features, *[_positive_int("hidden", int(h)) for h in hidden]]
        self.layers = nn.ModuleList(
            nn.Sequential(nn.Linear(a, b, bias=bias), ACTIVATIONS[activation]())
            for a, b in itertools.pairwise(widths)
        )
        self.head = nn.Linear(widths[-1], num_classes, bias=bias)
        self.in_features = in_features

    def features(self, x: torch.Tensor) -> torch.Tensor:
        """The last hidden layer's activations ``(B, hidden[-1])``."""
        x = x.flatten(1)
        if x.shape[1] != self.in_features:
            raise ValueError(f"x: expected {self.in_features} features, got {x.shape[1]}")
        for layer in self.layers:
            x = layer(x)
        return x

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.features(x))


class SmallCNN(nn.Module):
    """``[conv3x3 -> BN? -> ReLU -> maxpool2]`` x len(channels), global pool, linear head.

    Parameters
    ----------
    in_channels : int
    channels : sequence of int
        Output channels of each conv stage.
    num_classes : int
    batch_norm : bool

    Examples
    --------
    >>> net = SmallCNN(1, (8, 16), 10)
    >>> tuple(net(torch.zeros(2, 1, 28, 28)).shape)
    (2, 10)
    """

    def __init__(self, in_channels: int, channels: Sequence[int], num_classes: int, *,
                 batch_norm: bool = False) -> None:  # fmt: skip
        super().__init__()
        _positive_int("in_channels", in_channels)
        _positive_int("num_classes", num_classes)
        if not channels:
            raise ValueError("channels: expected at least one conv stage")
        stages = []
        c_in = in_channels
        for c in channels:
            c = _positive_int("channels", int(c))
            parts: list[nn.Module] = [nn.Conv2d(c_in, c, 3, padding=1)]
            if batch_norm:
                parts.append(nn.BatchNorm2d(c))
            parts += [nn.ReLU(), nn.MaxPool2d(2)]
            stages.append(nn.Sequential(*parts))
            c_in = c
        self.stages = nn.ModuleList(stages)
        self.head = nn.Linear(c_in, num_classes)
        self.in_channels = in_channels

    def features(self, x: torch.Tensor) -> torch.Tensor:
        """Globally average-pooled features of the last stage ``(B, channels[-1])``."""
        if x.ndim != 4 or x.shape[1] != self.in_channels:
            raise ValueError(
                f"x: expected shape (B, {self.in_channels}, H, W), got {tuple(x.shape)}"
            )
        for stage in self.stages:
            x = stage(x)
        return x.mean(dim=(2, 3))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.features(x))
