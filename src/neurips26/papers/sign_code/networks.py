"""Networks with sign-preserving activations: MLPs and small pre-activation ResNets.

Every nonlinearity is its own ``nn.Module`` (an *activation site*), so the sign code can
be read and the magnitudes replaced by hooks on exactly those modules. A site's input is
the pre-activation ``z``; its output is ``h = phi(z)``. For a sign-preserving ``phi``
(LeakyReLU, tanh, ELU, GELU, SiLU) ``sign(h) = sign(z)``; ReLU maps negatives to 0 and is
included only as a labelled negative control. GELU and SiLU are ``z Phi(z)`` and
``z sigmoid(z)``: negative for every negative ``z`` (the sign code is read from ``z``
itself, so an output that underflows to ``-0`` changes nothing).
"""

from __future__ import annotations

import itertools

import torch
from torch import nn

from neurips26.common.torch import seeded
from neurips26.common.validation import check_bool, check_int

#: Activation name -> module factory. ``leaky_relu`` uses the spec's slope 0.1.
ACTIVATIONS = {
    "leaky_relu": lambda: nn.LeakyReLU(0.1),
    "tanh": nn.Tanh,
    "elu": nn.ELU,
    "gelu": nn.GELU,
    "silu": nn.SiLU,
    "relu": nn.ReLU,
}
#: Activations with ``sign(phi(z)) == sign(z)`` for every ``z != 0``.
SIGN_PRESERVING = ("leaky_relu", "tanh", "elu", "gelu", "silu")
SITE_TYPES = (nn.LeakyReLU, nn.Tanh, nn.ELU, nn.GELU, nn.SiLU, nn.ReLU)


def _check_activation(activation: str) -> None:
    if activation not in ACTIVATIONS:
        raise ValueError(f"activation: {activation!r} is not one of {tuple(ACTIVATIONS)}")


#: The largest width, depth or class count accepted (larger cannot be built in memory).
MAX_SIZE = 1_000_000


def _positive(name: str, v) -> int:
    return check_int(v, name, min=1, max=MAX_SIZE)


def is_sign_preserving(module: nn.Module) -> bool:
    """Whether an activation module keeps the sign of its input (ReLU does not)."""
    return isinstance(module, (nn.LeakyReLU, nn.Tanh, nn.ELU, nn.GELU, nn.SiLU)) and (
        not isinstance(module, nn.LeakyReLU) or module.negative_slope > 0
    )


def activation_sites(model: nn.Module) -> list[tuple[str, nn.Module]]:
    """The activation modules of ``model`` in forward-definition order, with their names.

    Raises
    ------
    ValueError
        When the model has none (there is nothing to read a sign code from).
    """
    if not isinstance(model, nn.Module):
        raise TypeError(f"model: expected a torch.nn.Module, got {type(model).__name__}")
    sites = [(n, m) for n, m in model.named_modules() if isinstance(m, SITE_TYPES)]
    if not sites:
        raise ValueError(
            "model: has no activation modules (nn.LeakyReLU, nn.Tanh, nn.ELU, nn.GELU, nn.SiLU, "
            "nn.ReLU) to hook; "
            "functional activations (F.relu) cannot be read"
        )
    return sites


class SignMLP(nn.Module):
    """``depth`` hidden layers ``Linear -> phi`` of width ``d``, then a linear head.

    With ``norm=True`` each hidden layer is ``Linear -> BatchNorm1d -> phi``: every
    pre-activation standardised per unit over the batch, as the ResNet's are (a
    diagnostic: normalisation's part in a result).

    Attributes
    ----------
    hidden : nn.ModuleList of nn.Linear
    norms : nn.ModuleList of nn.BatchNorm1d, or None (``norm=False``, the default)
    acts : nn.ModuleList of activation modules (the sites)
    head : nn.Linear, weights ``W`` (K, d) whose rows are the ``w_k`` of the margin split
    """

    def __init__(self, dim_in: int, width: int, num_classes: int, *, depth: int = 3,
                 activation: str = "leaky_relu", norm: bool = False) -> None:  # fmt: skip
        super().__init__()
        _check_activation(activation)
        norm = check_bool(norm, "norm")
        _positive("dim_in", dim_in)
        _positive("width", width)
        _positive("num_classes", num_classes)
        _positive("depth", depth)
        dims = [dim_in] + [width] * depth
        self.hidden = nn.ModuleList(nn.Linear(a, b) for a, b in itertools.pairwise(dims))
        self.norms = nn.ModuleList(nn.BatchNorm1d(width) for _ in range(depth)) if norm else None
        self.acts = nn.ModuleList(ACTIVATIONS[activation]() for _ in range(depth))
        self.head = nn.Linear(width, num_classes)
        self.activation = activation
        self.dim_in = dim_in

    def features(self, x: torch.Tensor) -> torch.Tensor:
        """The last hidden layer ``h`` (B, d), the input of the head."""
        x = x.flatten(1)
        if x.shape[1] != self.dim_in:
            raise ValueError(f"x: expected {self.dim_in} input features, got {x.shape[1]}")
        for k, (lin, act) in enumerate(zip(self.hidden, self.acts, strict=True)):
            x = lin(x)
            x = act(x if self.norms is None else self.norms[k](x))
        return x

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.features(x))


class PreActBlock(nn.Module):
    """Pre-activation residual block: ``x + conv(phi(bn(conv(phi(bn(x))))))`` (He et al. 2016).

    With ``skip=False`` the block is the residual branch alone (no skip path and no 1x1
    shortcut convolution): ``conv(phi(bn(conv(phi(bn(x))))))``, a plain feed-forward
    stack of the same activation sites. With ``norm=False`` every ``bn`` is the identity.
    """

    def __init__(self, c_in: int, c_out: int, stride: int, activation: str, *,
                 skip: bool = True, norm: bool = True) -> None:  # fmt: skip
        super().__init__()
        self.skip = check_bool(skip, "skip")
        norm = check_bool(norm, "norm")
        self.bn1 = nn.BatchNorm2d(c_in) if norm else nn.Identity()
        self.act1 = ACTIVATIONS[activation]()
        self.conv1 = nn.Conv2d(c_in, c_out, 3, stride=stride, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(c_out) if norm else nn.Identity()
        self.act2 = ACTIVATIONS[activation]()
        self.conv2 = nn.Conv2d(c_out, c_out, 3, padding=1, bias=False)
        self.shortcut = None
        if self.skip and (stride != 1 or c_in != c_out):
            self.shortcut = nn.Conv2d(c_in, c_out, 1, stride=stride, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = self.act1(self.bn1(x))
        path = None
        if self.skip:
            path = x if self.shortcut is None else self.shortcut(out)
        out = self.conv1(out)
        out = self.conv2(self.act2(self.bn2(out)))
        return out if path is None else out + path


class SignResNet(nn.Module):
    """A small pre-activation ResNet: a stem, 3 stages of ``blocks`` blocks, pool, head.

    Parameters
    ----------
    in_channels : int
    num_classes : int
    channels : tuple of 3 int
        Widths of the stages (the spec: 16, 32, 64); stages 2 and 3 halve the resolution.
    blocks : int
        Blocks per stage.
    activation : str
    skip : bool
        Whether the blocks add their skip path (default). ``False`` removes every skip
        path and shortcut convolution, leaving a plain CNN of the same depth, widths and
        activation sites (a diagnostic: the residual additions' part in a result).
    norm : bool
        Whether a BatchNorm precedes every activation (default). ``False`` makes every
        BatchNorm the identity (a diagnostic: normalisation's part in a result).
    """

    def __init__(self, in_channels: int, num_classes: int, *,
                 channels: tuple[int, ...] = (16, 32, 64), blocks: int = 2,
                 activation: str = "leaky_relu", skip: bool = True,
                 norm: bool = True) -> None:  # fmt: skip
        super().__init__()
        _check_activation(activation)
        skip = check_bool(skip, "skip")
        norm = check_bool(norm, "norm")
        _positive("in_channels", in_channels)
        _positive("num_classes", num_classes)
        _positive("blocks", blocks)
        if len(channels) < 1:
            raise ValueError("channels: expected at least one stage width")
        for c in channels:
            _positive("channels", int(c))
        self.stem = nn.Conv2d(in_channels, channels[0], 3, padding=1, bias=False)
        layers = []
        c_in = channels[0]
        for s, c in enumerate(channels):
            for b in range(blocks):
                layers.append(PreActBlock(c_in, c, 2 if (s > 0 and b == 0) else 1, activation,
                                          skip=skip, norm=norm))
                c_in = c
        self.blocks = nn.Sequential(*layers)
        self.bn = nn.BatchNorm2d(c_in) if norm else nn.Identity()
        self.act = ACTIVATIONS[activation]()
        self.head = nn.Linear(c_in, num_classes)
        self.activation = activation
        self.in_channels = in_channels
        self.skip = skip
        self.norm = norm

    def features(self, x: torch.Tensor) -> torch.Tensor:
        """Pooled final activations ``h`` (B, channels[-1])."""
        if x.ndim != 4 or x.shape[1] != self.in_channels:
            raise ValueError(
                f"x: expected shape (B, {self.in_channels}, H, W), got {tuple(x.shape)}"
            )
        out = self.act(self.bn(self.blocks(self.stem(x))))
        return out.mean(dim=(2, 3))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.features(x))


def make_mlp(*, dim_in: int, width: int, num_classes: int, depth: int = 3,
             activation: str = "leaky_relu", seed: int = 0,
             norm: bool = False) -> SignMLP:  # fmt: skip
    """A :class:`SignMLP` whose initial weights are a function of ``seed`` only
    (``norm=True``: BatchNorm before every activation, see :class:`SignMLP`)."""
    with seeded(seed):
        return SignMLP(dim_in, width, num_classes, depth=depth, activation=activation,
                       norm=norm)


def make_resnet(*, in_channels: int, num_classes: int, channels=(16, 32, 64), blocks: int = 2,
                activation: str = "leaky_relu", seed: int = 0, skip: bool = True,
                norm: bool = True) -> SignResNet:  # fmt: skip
    """A :class:`SignResNet` whose initial weights are a function of ``seed`` only
    (``skip=False``: the same network without skip paths; ``norm=False``: without
    BatchNorm; see :class:`SignResNet`)."""
    with seeded(seed):
        return SignResNet(in_channels, num_classes, channels=tuple(channels), blocks=blocks,
                          activation=activation, skip=skip, norm=norm)  # fmt: skip
