"""Rectified-flow / conditional flow matching: the model DRL fine-tunes.

Straight paths ``x_t = (1 - t) x_0 + t x_1`` from noise ``x_0 ~ N(0, I)`` (t = 0) to data
``x_1`` (t = 1) with target velocity ``u_t = x_1 - x_0``; a velocity network
``v_theta(x_t, t, y)`` regresses it (the matching loss the paper argues is a poor proxy for
sample quality). Samples come from integrating ``dx/dt = v_theta`` from t = 0 to 1 (Euler
or midpoint, 32 steps by default); the exact log-likelihood of a point comes from the
instantaneous change of variables ``d log p_t(x_t) / dt = -div v_theta(x_t, t)`` with the
divergence computed exactly (one backward pass per dimension: meant for 2-D mixtures and
other low-dimensional data).
"""

from __future__ import annotations

import inspect
import math
from dataclasses import dataclass

import numpy as np
import torch
from torch import nn

from neurips26.common.torch import make_generator
from neurips26.common.train import TrainResult, train
from neurips26.common.validation import (
    check_array,
    check_choice,
    check_float,
    check_int,
    check_seed,
)

#: Largest dimension for which :func:`exact_log_likelihood` computes the exact divergence.
MAX_EXACT_DIM = 256
#: Largest number of samples or ODE steps one call accepts (beyond: refused, not hung).
MAX_SAMPLES = 10**6
MAX_STEPS = 10**4


def _time_embedding(t: torch.Tensor, dim: int) -> torch.Tensor:
    """Sinusoidal features of ``t`` (B,) -> (B, dim)."""
    half = dim // 2
    freqs = torch.exp(-math.log(1000.0) * torch.arange(half, dtype=t.dtype, device=t.device)
                      / max(1, half - 1))  # fmt: skip
    ang = 2 * math.pi * t[:, None] * freqs[None]
    return torch.cat([torch.sin(ang), torch.cos(ang), t[:, None]], dim=1)


class VelocityMLP(nn.Module):
    """A velocity field ``v_theta(x, t, y)``: an MLP on ``[x, emb(t), emb(y)]``.

    Parameters
    ----------
    dim : int
        ``D``, the data dimension (64 for 8x8 digits, 196 for 14x14 MNIST, 2 for mixtures).
    hidden : int
        Width of the hidden layers.
    depth : int
        Number of hidden layers.
    num_classes : int or None
        Class-conditional with a learned label embedding when given.
    time_dim : int
        Width of the sinusoidal time embedding.

    Examples
    --------
    >>> net = VelocityMLP(dim=2, hidden=16)
    >>> tuple(net(torch.zeros(5, 2), torch.rand(5)).shape)
    (5, 2)
    """

    def __init__(self, *, dim: int, hidden: int = 256, depth: int = 3,
                 num_classes: int | None = None, time_dim: int = 32) -> None:  # fmt: skip
        super().__init__()
        self.dim = check_int(dim, "dim", min=1, max=10**6)
        hidden = check_int(hidden, "hidden", min=1, max=10**5)
        depth = check_int(depth, "depth", min=1, max=64)
        self.time_dim = check_int(time_dim, "time_dim", min=2, max=4096)
        self.num_classes = (None if num_classes is None
                            else check_int(num_classes, "num_classes", min=1, max=10**6))
        emb = 0
        if self.num_classes is not None:
            emb = min(64, hidden)
            self.label_embedding = nn.Embedding(self.num_classes, emb)
        width = dim + 2 * (self.time_dim // 2) + 1 + emb
        layers: list[nn.Module] = []
        for _ in range(depth):
            layers += [nn.Linear(width, hidden), nn.SiLU()]
            width = hidden
        layers.append(nn.Linear(width, dim))
        self.net = nn.Sequential(*layers)

    def forward(self, x: torch.Tensor, t: torch.Tensor, y: torch.Tensor | None = None
                ) -> torch.Tensor:  # fmt: skip
        """Velocity at ``x`` (B, D), times ``t`` (B,) and labels ``y`` (B,) -> (B, D)."""
        if x.ndim != 2 or x.shape[1] != self.dim:
            raise ValueError(f"x: expected shape (B, {self.dim}), got {tuple(x.shape)}")
        t = t.reshape(-1).to(x.dtype).expand(len(x)) if t.numel() == 1 else t.to(x.dtype)
        if t.shape != (len(x),):
            raise ValueError(f"t: expected shape ({len(x)},), got {tuple(t.shape)}")
        parts = [x, _time_embedding(t, self.time_dim)]
        if self.num_classes is not None:
            if y is None:
                raise ValueError("y: this model is class-conditional; labels are required")
            parts.append(self.label_embedding(y.reshape(-1).long()))
        elif y is not None:
            raise ValueError("y: this model is unconditional (num_classes=None); got labels")
        return self.net(torch.cat(parts, dim=1))


_TIME_FIRST = ("t", "time", "times", "timestep", "timesteps", "sigma")
SIGNATURES = ("x_t", "t_x")


class VelocityAdapter(nn.Module):
    """A user's velocity network in the call convention this module uses.

    Every function here calls ``model(x, t, y)`` (``x`` ``(B, D)``, ``t`` ``(B,)``,
    ``y`` labels or None) and reads the data dimension from ``model.dim``. A torchcfm /
    torchdyn style network ``forward(t, x)`` or a plain ``forward(x, t)`` without a
    ``dim`` attribute is wrapped here; the wrapper shares the network's parameters, so
    training it trains the network in place. The functions of this module wrap a network
    themselves when its ``forward`` names ``t`` (or ``time``, ``timestep``) first, or
    takes ``(x, t)`` without labels; wrap it yourself to give ``dim`` (needed by
    :func:`sample`) or to state the order.

    Parameters
    ----------
    model : nn.Module
        The velocity network.
    dim : int, optional
        The data dimension ``D`` (from ``model.dim`` if it has one).
    signature : {"auto", "x_t", "t_x"}
        The order of ``model``'s first two arguments; ``auto`` reads the name of its
        ``forward``'s first parameter (``t``, ``time``, ``timestep`` ... mean ``t_x``).
    num_classes : int, optional
        Classes of a class-conditional network (labels are passed as its third argument
        ``y``); from ``model.num_classes`` if it has one.

    Examples
    --------
    >>> class TorchCFMStyle(nn.Module):
    ...     def __init__(self):
    ...         super().__init__()
    ...         self.lin = nn.Linear(3, 2)
    ...     def forward(self, t, x):
    ...         return self.lin(torch.cat([x, t[:, None]], dim=1))
    >>> v = VelocityAdapter(TorchCFMStyle(), dim=2)
    >>> v.signature, v(torch.zeros(4, 2), torch.zeros(4)).shape
    ('t_x', torch.Size([4, 2]))
    """

    def __init__(self, model: nn.Module, *, dim: int | None = None, signature: str = "auto",
                 num_classes: int | None = None) -> None:
        super().__init__()
        if not isinstance(model, nn.Module):
            raise TypeError(f"model must be a torch.nn.Module, got {type(model).__name__}")
        check_choice(signature, "signature", ("auto", *SIGNATURES))
        if dim is None:
            dim = getattr(model, "dim", None)
        if dim is not None:
            dim = check_int(dim, "dim", min=1, max=10**6)
        if num_classes is None:
            num_classes = getattr(model, "num_classes", None)
        if num_classes is not None:
            num_classes = check_int(num_classes, "num_classes", min=1, max=10**6)
        self.model = model
        self.dim = dim
        self.num_classes = num_classes
        self.signature = _read_signature(model) if signature == "auto" else signature

    def forward(self, x: torch.Tensor, t: torch.Tensor, y: torch.Tensor | None = None
                ) -> torch.Tensor:  # fmt: skip
        args = (t, x) if self.signature == "t_x" else (x, t)
        return self.model(*args) if y is None else self.model(*args, y)


def _forward_params(model: nn.Module) -> list[inspect.Parameter]:
    try:
        params = inspect.signature(model.forward).parameters.values()
    except (TypeError, ValueError):
        return []
    return [p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]


def _read_signature(model: nn.Module) -> str:
    params = _forward_params(model)
    if params and params[0].name.lower() in _TIME_FIRST:
        return "t_x"
    return "x_t"


def _check_model(model) -> nn.Module:
    """``model`` in the ``model(x, t, y)`` convention: as given when it follows it (it
    has a ``dim`` or takes a third argument), else wrapped in :class:`VelocityAdapter`."""
    if not isinstance(model, nn.Module):
        raise TypeError(f"model must be a torch.nn.Module (a velocity network called as "
                        f"model(x, t[, y]) or, torchcfm style, model(t, x)), got "
                        f"{type(model).__name__}")
    if isinstance(model, VelocityAdapter):
        return model
    params = _forward_params(model)
    if params and params[0].name.lower() in _TIME_FIRST:
        return VelocityAdapter(model, signature="t_x")
    if len(params) == 2 and not hasattr(model, "dim"):
        return VelocityAdapter(model, signature="x_t")  # forward(x, t): no labels
    return model


def _model_dtype(model: nn.Module, default: torch.dtype) -> torch.dtype:
    """The dtype of the model's first floating parameter (``default`` if it has none):
    inputs of another float dtype are cast to it, as numpy inputs are."""
    for p in model.parameters():
        if p.is_floating_point():
            return p.dtype
    return default


def _model_dim(model) -> int | None:
    return getattr(model, "dim", None)


def _labels(y, n: int, model, name: str = "y") -> torch.Tensor | None:
    classes = getattr(model, "num_classes", None)
    if y is None:
        if classes is not None:
            raise ValueError(f"{name}: the model is class-conditional; labels are required")
        return None
    arr = np.asarray(y.detach().cpu() if torch.is_tensor(y) else y)
    if arr.dtype.kind not in "iu" or arr.ndim != 1 or len(arr) != n:
        raise ValueError(f"{name}: expected {n} integer labels, got shape {arr.shape} "
                         f"dtype {arr.dtype}")  # fmt: skip
    if classes is None:
        raise ValueError(f"{name}: the model is unconditional; labels must be None")
    if arr.min() < 0 or arr.max() >= classes:
        raise ValueError(f"{name}: labels must lie in [0, {classes}), got {arr.min()}..{arr.max()}")
    return torch.as_tensor(arr, dtype=torch.long)


def _data_array(data, model, name: str = "data") -> np.ndarray:
    if torch.is_tensor(data):
        data = data.detach().cpu().numpy()
    x = check_array(data, name, ndim=2, max_size=10**9)
    d = _model_dim(model)
    if d is not None and x.shape[1] != d:
        raise ValueError(f"{name}: has {x.shape[1]} dimensions, the model expects {d}")
    if np.abs(x).max() > 1e6:
        raise ValueError(f"{name}: values must be of moderate size (|x| <= 1e6)")
    return x.astype(np.float32)


def _tensor(value, name: str, ndim: int) -> torch.Tensor:
    """A finite float tensor of ``ndim`` dimensions with moderate values."""
    if torch.is_tensor(value):
        t = value
        if not t.is_floating_point():
            t = t.float()
        if t.ndim != ndim or t.numel() == 0:
            raise ValueError(f"{name}: expected a non-empty {ndim}-d tensor, got shape "
                             f"{tuple(t.shape)}")  # fmt: skip
        if not torch.isfinite(t).all():
            raise ValueError(f"{name}: must be finite")
    else:
        t = torch.as_tensor(check_array(value, name, ndim=ndim), dtype=torch.float32)
    if t.abs().max() > 1e6:
        raise ValueError(f"{name}: values must be of moderate size (|x| <= 1e6)")
    return t


def conditional_path(x0: torch.Tensor, x1: torch.Tensor, t: torch.Tensor
                     ) -> tuple[torch.Tensor, torch.Tensor]:  # fmt: skip
    """The straight conditional path and its velocity.

    Parameters
    ----------
    x0 : Tensor (B, D)
        Noise ``x_0``.
    x1 : Tensor (B, D)
        Data ``x_1``.
    t : Tensor (B,)
        Times in [0, 1].

    Returns
    -------
    xt : Tensor (B, D)
        ``(1 - t) x_0 + t x_1``.
    ut : Tensor (B, D)
        ``x_1 - x_0``.

    Examples
    --------
    >>> xt, ut = conditional_path(torch.zeros(1, 2), torch.ones(1, 2), torch.tensor([0.25]))
    >>> xt.tolist(), ut.tolist()
    ([[0.25, 0.25]], [[1.0, 1.0]])
    """
    x0, x1, t = _tensor(x0, "x0", 2), _tensor(x1, "x1", 2), _tensor(t, "t", 1)
    if x0.shape != x1.shape:
        raise ValueError(f"x0, x1: expected equal shapes (B, D), got {tuple(x0.shape)} and "
                         f"{tuple(x1.shape)}")  # fmt: skip
    if t.shape != (len(x0),):
        raise ValueError(f"t: expected shape ({len(x0)},), got {tuple(t.shape)}")
    tt = t[:, None].to(x0.dtype)
    return (1 - tt) * x0 + tt * x1, x1 - x0  # x_t, u_t = x_1 - x_0


def flow_matching_loss(model: nn.Module, x0: torch.Tensor, x1: torch.Tensor, t: torch.Tensor,
                       y: torch.Tensor | None = None,
                       sample_weight: torch.Tensor | None = None) -> torch.Tensor:  # fmt: skip
    """The (weighted) conditional flow-matching loss.

    ``L = sum_i w_i mean_d (v_theta(x_t^i, t_i, y_i) - (x_1^i - x_0^i))_d^2 / sum_i w_i``
    (uniform ``w`` by default: the mean squared error, as torchcfm's examples use).

    Parameters
    ----------
    model : nn.Module
        ``model(x, t, y) -> (B, D)``.
    x0, x1 : Tensor (B, D)
        Noise and data (cast to the model's parameter dtype).
    t : Tensor (B,)
    y : Tensor (B,), optional
        Labels of a class-conditional model.
    sample_weight : Tensor (B,), optional
        Non-negative per-pair weights.

    Returns
    -------
    Tensor
        A scalar.
    """
    model = _check_model(model)
    xt, ut = conditional_path(x0, x1, t)
    dtype = _model_dtype(model, xt.dtype)
    xt, ut = xt.to(dtype), ut.to(dtype)
    if y is not None:
        y = _labels(y, len(xt), model)
    err = ((model(xt, _tensor(t, "t", 1).to(xt.dtype), y) - ut) ** 2).mean(dim=1)  # (B,)
    if sample_weight is None:
        return err.mean()
    w = _tensor(sample_weight, "sample_weight", 1).to(err.dtype)
    if w.shape != err.shape or (w < 0).any() or w.sum() <= 0:
        raise ValueError("sample_weight: expected B finite non-negative weights, not all 0")
    return (w * err).sum() / w.sum()


def train_flow_matching(model: nn.Module, data, *, y=None, max_iter: int, lr: float = 1e-3,
                        batch_size: int = 256, seed: int = 0, noise=None,
                        sample_weight=None, device: str = "cpu",
                        desc: str = "flow matching") -> TrainResult:  # fmt: skip
    """Train (or continue training) ``model`` in place by conditional flow matching.

    Parameters
    ----------
    model : nn.Module
        A velocity field, e.g. :class:`VelocityMLP`.
    data : array (N, D)
        Targets ``x_1``.
    y : array (N,) of int, optional
        Labels (required for a class-conditional model).
    max_iter : int
        Optimiser (AdamW) steps.
    lr : float
    batch_size : int
    seed : int
        Seeds the batches, the times and the noise.
    noise : array (N, D), optional
        Fixed noise ``x_0^i`` paired with each target (a coupling, as DRL uses for the
        model's own samples); fresh ``N(0, I)`` noise per step when omitted.
    sample_weight : array (N,), optional
        Non-negative weights: batches are drawn with probability proportional to them
        (importance resampling, so the loss targets the weighted distribution).
    device : {"cpu", "cuda"}

    Returns
    -------
    TrainResult
        The loss of every step.

    Examples
    --------
    >>> net = VelocityMLP(dim=2, hidden=16)
    >>> res = train_flow_matching(net, np.ones((32, 2)), max_iter=3, batch_size=8)
    >>> res.num_steps
    3
    """
    model = _check_model(model)
    x = _data_array(data, model)
    n = len(x)
    labels = _labels(y, n, model)
    check_int(max_iter, "max_iter", min=1, max=10**7)
    check_float(lr, "lr", min=0, max=10.0, min_inclusive=False)
    check_int(batch_size, "batch_size", min=1, max=10**6)
    check_seed(seed)
    x0_fixed = None
    if noise is not None:
        x0_fixed = torch.as_tensor(_data_array(noise, model, "noise"))
        if len(x0_fixed) != n:
            raise ValueError(f"noise: expected {n} rows like data, got {len(x0_fixed)}")
    probs = None
    if sample_weight is not None:
        w = check_array(sample_weight, "sample_weight", ndim=1, min=0.0)
        if len(w) != n or w.sum() <= 0:
            raise ValueError(f"sample_weight: expected {n} non-negative weights, not all 0")
        probs = torch.as_tensor(w / w.sum(), dtype=torch.float64)
    gen = make_generator(seed)
    xt_all = torch.as_tensor(x)
    bs = min(batch_size, n) if probs is None else batch_size

    def batches():
        while True:
            if probs is None:
                idx = torch.randperm(n, generator=gen)[:bs]
            else:
                idx = torch.multinomial(probs, bs, replacement=True, generator=gen)
            x1 = xt_all[idx]
            x0 = (x0_fixed[idx] if x0_fixed is not None
                  else torch.randn(x1.shape, generator=gen))  # fmt: skip
            t = torch.rand(len(idx), generator=gen)
            yield (x0, x1, t, labels[idx] if labels is not None else None)

    def loss_fn(m, batch):
        x0, x1, t, yb = batch
        return flow_matching_loss(m, x0, x1, t, yb)

    return train(model, batches(), max_iter=max_iter, lr=lr, seed=seed, device=device,
                 loss_fn=loss_fn, grad_clip=1.0, desc=desc)  # fmt: skip


@dataclass(frozen=True)
class Samples:
    """Samples of a flow model.

    Attributes
    ----------
    x : ndarray (B, D)
        ``x_1``, the samples.
    noise : ndarray (B, D)
        ``x_0``, the noise each sample was integrated from.
    y : ndarray (B,) or None
        Their labels (class-conditional models).
    """

    x: np.ndarray
    noise: np.ndarray
    y: np.ndarray | None


@torch.no_grad()
def integrate(model: nn.Module, x0: torch.Tensor, *, y: torch.Tensor | None = None,
              num_steps: int = 32, method: str = "euler") -> torch.Tensor:  # fmt: skip
    """Integrate ``dx/dt = v_theta(x, t, y)`` from t = 0 to 1 starting at ``x0`` (B, D).

    ``x0`` is cast to the dtype of the model's parameters.

    Returns
    -------
    Tensor (B, D)
        ``x_1``, in the model's dtype.
    """
    model = _check_model(model)
    x0 = _tensor(x0, "x0", 2)
    x0 = x0.to(_model_dtype(model, x0.dtype))
    if y is not None:
        y = _labels(y, len(x0), model)
    check_int(num_steps, "num_steps", min=1, max=MAX_STEPS)
    check_choice(method, "method", ("euler", "midpoint"))
    dt = 1.0 / num_steps
    x = x0
    for k in range(num_steps):
        t = torch.full((len(x),), k * dt, dtype=x.dtype)
        v = model(x, t, y)
        if method == "midpoint":
            v = model(x + 0.5 * dt * v, t + 0.5 * dt, y)
        x = x + dt * v
    return x


def sample(model: nn.Module, *, num_samples: int, num_steps: int = 32, y=None, seed: int = 0,
           method: str = "euler", batch_size: int = 4096) -> Samples:  # fmt: skip
    """Draw samples by integrating the flow ODE from Gaussian noise.

    Parameters
    ----------
    model : nn.Module
        A velocity field with attribute ``dim``.
    num_samples : int
        ``B``.
    num_steps : int
        ODE steps (32, as the spec's sampler).
    y : array (B,) of int, optional
        Labels for a class-conditional model.
    seed : int
        Seeds the noise.
    method : {"euler", "midpoint"}
    batch_size : int
        Samples integrated at once.

    Returns
    -------
    Samples

    Examples
    --------
    >>> s = sample(VelocityMLP(dim=2, hidden=8), num_samples=4, num_steps=2)
    >>> s.x.shape, s.noise.shape
    ((4, 2), (4, 2))
    """
    model = _check_model(model)
    dim = _model_dim(model)
    if dim is None:
        raise TypeError("model must have a `dim` attribute (its data dimension): wrap it as "
                        "VelocityAdapter(model, dim=D)")
    n = check_int(num_samples, "num_samples", min=1, max=MAX_SAMPLES)
    check_int(num_steps, "num_steps", min=1, max=MAX_STEPS)
    check_choice(method, "method", ("euler", "midpoint"))
    check_seed(seed)
    check_int(batch_size, "batch_size", min=1, max=10**6)
    check_int(n * dim, "num_samples * dim", max=10**9)
    labels = _labels(y, n, model)
    x0 = torch.randn((n, dim), generator=make_generator(seed))
    was = model.training
    model.eval()
    first = next(model.parameters(), None)
    dev = first.device if first is not None else torch.device("cpu")
    x0 = x0.to(first.dtype if first is not None else torch.float32)
    out = []
    for s in range(0, n, batch_size):
        yb = labels[s:s + batch_size].to(dev) if labels is not None else None
        out.append(integrate(model, x0[s:s + batch_size].to(dev), y=yb, num_steps=num_steps,
                             method=method).cpu())  # fmt: skip
    model.train(was)
    return Samples(torch.cat(out).numpy().astype(np.float64), x0.numpy().astype(np.float64),
                   None if labels is None else labels.numpy())  # fmt: skip


def _divergence(v: torch.Tensor, x: torch.Tensor, create_graph: bool = False) -> torch.Tensor:
    """Exact ``div v = sum_d dv_d / dx_d`` (B,), one backward pass per dimension."""
    div = torch.zeros(len(x), dtype=x.dtype)
    for d in range(x.shape[1]):
        g = torch.autograd.grad(v[:, d].sum(), x, retain_graph=True, create_graph=create_graph)[0]
        div = div + g[:, d]
    return div


def exact_log_likelihood(model: nn.Module, x, *, y=None, num_steps: int = 64) -> np.ndarray:
    """``log p_theta(x)`` under the flow, by the instantaneous change of variables.

    The ODE is integrated backwards from ``x_1 = x`` at t = 1 to ``x_0`` at t = 0 with
    fixed-step RK4 on the augmented state ``(x_t, l_t)``, ``dl/dt = -div v_theta(x_t, t)``
    (divergence exact, one backward pass per dimension), and
    ``log p_1(x) = log N(x_0; 0, I) - int_0^1 div v_theta(x_t, t) dt``.

    Parameters
    ----------
    model : nn.Module
    x : array (B, D)
        Points, ``D <= MAX_EXACT_DIM``.
    y : array (B,) of int, optional
    num_steps : int
        RK4 steps.

    Returns
    -------
    ndarray (B,)
        Log-densities (nats).

    Examples
    --------
    >>> class Zero(nn.Module):
    ...     dim = 1
    ...     def forward(self, x, t, y=None):
    ...         return 0 * x
    >>> float(exact_log_likelihood(Zero(), np.zeros((1, 1)), num_steps=2)[0])  # N(0, 1) at 0
    -0.9189385332046727
    """
    model = _check_model(model)
    arr = _data_array(x, model, "x").astype(np.float64)
    if arr.shape[1] > MAX_EXACT_DIM:
        raise ValueError(f"x: exact divergence is limited to {MAX_EXACT_DIM} dimensions, "
                         f"got {arr.shape[1]}")  # fmt: skip
    check_int(num_steps, "num_steps", min=1, max=MAX_STEPS)
    labels = _labels(y, len(arr), model)
    dtype = next(model.parameters(), torch.zeros(1, dtype=torch.float64)).dtype

    def f(t: float, z: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        with torch.enable_grad():
            z = z.detach().requires_grad_(True)
            tt = torch.full((len(z),), t, dtype=z.dtype)
            v = model(z, tt, labels)
            return v.detach(), _divergence(v, z).detach()

    was = model.training
    model.eval()
    z = torch.as_tensor(arr, dtype=dtype)
    integral = torch.zeros(len(z), dtype=dtype)  # int_0^1 div v dt, accumulated backwards
    h = 1.0 / num_steps
    for k in range(num_steps, 0, -1):  # RK4 from t = k h to (k - 1) h
        t = k * h
        v1, d1 = f(t, z)
        v2, d2 = f(t - h / 2, z - h / 2 * v1)
        v3, d3 = f(t - h / 2, z - h / 2 * v2)
        v4, d4 = f(t - h, z - h * v3)
        z = z - h / 6 * (v1 + 2 * v2 + 2 * v3 + v4)
        integral = integral + h / 6 * (d1 + 2 * d2 + 2 * d3 + d4)
    model.train(was)
    dim = z.shape[1]
    log_p0 = -0.5 * (z.double() ** 2).sum(1) - 0.5 * dim * math.log(2 * math.pi)
    return (log_p0 - integral.double()).numpy()  # log p_1(x) = log p_0(x_0) - int div v dt
