"""Event-teacher to RGB-student knowledge distillation, and the baselines' training.

The teacher is a CNN trained on event frames; the student, the same CNN on RGB images,
minimises Hinton et al.'s distillation loss against the teacher's soft labels for the
event frame of the same image (Eq. 1), optionally plus matching of penultimate features
through a linear adapter (Eq. 2).

References
----------
Hinton, Vinyals, Dean. Distilling the knowledge in a neural network. 2015.
Romero et al. FitNets: hints for thin deep nets. ICLR 2015 (feature matching).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch
import torch.nn.functional as F
from sklearn.base import BaseEstimator
from torch import nn

from neurips26.common.models import SmallCNN
from neurips26.common.torch import get_device, make_generator, seeded
from neurips26.common.train import TrainResult, array_batches, cosine_schedule, train
from neurips26.common.validation import check_array, check_float, check_int, check_seed

from .events import event_frames

AUGMENTATIONS = ("none", "grayscale", "noise")
_LUMA = torch.tensor([0.299, 0.587, 0.114])


def make_cnn(in_channels: int, num_classes: int = 8, *,
             channels: tuple[int, ...] = (32, 64, 128, 128), seed: int = 0) -> SmallCNN:
    """The spec's 4-conv CNN (BatchNorm, ReLU, max-pool, global pooling, linear head).

    Examples
    --------
    >>> net = make_cnn(2, 8, channels=(4, 8))
    >>> tuple(net(torch.zeros(1, 2, 32, 32)).shape)
    (1, 8)
    """
    in_channels = check_int(in_channels, "in_channels", min=1, max=64)
    num_classes = check_int(num_classes, "num_classes", min=2, max=100_000)
    if not isinstance(channels, (tuple, list)) or not channels:
        raise ValueError(f"channels must be a non-empty tuple of ints, got {channels!r}")
    for c in channels:
        check_int(c, "channels", min=1, max=4096)
    with seeded(check_seed(seed)):
        return SmallCNN(in_channels, tuple(channels), num_classes, batch_norm=True)


class SobelInput(nn.Module):
    """Baseline input: RGB plus the Sobel gradient magnitude of its luminance, ``(B, 4, H, W)``.

    Wraps a 4-channel network so that it takes RGB ``(B, 3, H, W)``.

    Examples
    --------
    >>> net = SobelInput(make_cnn(4, 8, channels=(4,)))
    >>> tuple(net(torch.zeros(2, 3, 16, 16)).shape)
    (2, 8)
    """

    def __init__(self, net: nn.Module) -> None:
        super().__init__()
        if not isinstance(net, nn.Module):
            raise TypeError(f"net must be a torch.nn.Module, got {type(net).__name__}")
        self.net = net
        k = torch.tensor([[-1.0, 0.0, 1.0], [-2.0, 0.0, 2.0], [-1.0, 0.0, 1.0]]) / 4
        self.register_buffer("kernel", torch.stack([k, k.T])[:, None])  # (2, 1, 3, 3)

    def _check_input(self, x) -> torch.Tensor:
        if not torch.is_tensor(x):
            raise TypeError(f"x must be a (B, 3, H, W) torch.Tensor, got {type(x).__name__}")
        if x.ndim != 4 or x.shape[1] != 3 or x.numel() == 0:
            raise ValueError(f"x must be a non-empty (B, 3, H, W) RGB tensor, got shape "
                             f"{tuple(x.shape)}")
        if x.dtype != self.kernel.dtype:
            raise TypeError(f"x has dtype {x.dtype} but the module's weights are "
                            f"{self.kernel.dtype}; pass x.to({self.kernel.dtype}) or convert "
                            f"the module with .to({x.dtype})")
        return x

    def edges(self, x: torch.Tensor) -> torch.Tensor:
        """The Sobel gradient magnitude of ``x``'s luminance, ``(B, 1, H, W)``."""
        x = self._check_input(x)
        y = torch.einsum("bchw,c->bhw", x, _LUMA.to(x))[:, None]  # (B, 1, H, W)
        g = F.conv2d(F.pad(y, (1, 1, 1, 1), mode="replicate"), self.kernel)  # (B, 2, H, W)
        return g.pow(2).sum(1, keepdim=True).add(1e-8).sqrt()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """The wrapped network on ``[x, edges(x)]``."""
        return self.net(torch.cat([x, self.edges(x)], dim=1))

    def features(self, x: torch.Tensor) -> torch.Tensor:
        """The wrapped network's features on ``[x, edges(x)]``."""
        return self.net.features(torch.cat([x, self.edges(x)], dim=1))


def _check_logits(value, name: str) -> torch.Tensor:
    if not torch.is_tensor(value):
        raise TypeError(f"{name} must be a (B, K) torch.Tensor, got {type(value).__name__}")
    if not value.is_floating_point():
        raise TypeError(f"{name} must be a floating-point tensor, got dtype {value.dtype}")
    if value.ndim != 2 or value.shape[0] == 0 or value.shape[1] < 2:
        raise ValueError(f"{name} must be a (B, K) tensor with B >= 1 and K >= 2 classes, "
                         f"got shape {tuple(value.shape)}")
    if not bool(torch.isfinite(value.detach()).all()):
        raise ValueError(f"{name} must be finite; it contains NaN or inf")
    return value


def kd_loss(student_logits, teacher_logits, labels, *, temperature: float = 4.0,
            alpha: float = 0.7) -> torch.Tensor:
    """Hinton's distillation loss (Eq. 1).

    ``(1 - a) CE(y, s) + a T^2 KL(softmax(t / T) || softmax(s / T))``, averaged over the
    batch.

    Parameters
    ----------
    student_logits, teacher_logits : Tensor (B, K) float
        ``s`` and ``t``, finite, on one device. The loss has the student's dtype (the
        teacher's logits are cast to it); gradients flow into ``s`` only.
    labels : Tensor (B,) int
        Class indices in ``[0, K)``.
    temperature : float
        ``T > 0``.
    alpha : float
        ``a`` in [0, 1].

    Returns
    -------
    Tensor
        A scalar.

    Raises
    ------
    TypeError
        A non-tensor argument, non-float logits or non-integer labels.
    ValueError
        Wrong shapes, NaN or inf logits, labels outside ``[0, K)``, ``T <= 0`` or ``a``
        outside [0, 1].

    Examples
    --------
    >>> import math
    >>> s = torch.zeros(2, 3); y = torch.tensor([0, 1])
    >>> round(float(kd_loss(s, s, y, alpha=0.0)), 4) == round(math.log(3), 4)
    True
    """
    T = check_float(temperature, "temperature", min=0, max=1e4, min_inclusive=False)
    a = check_float(alpha, "alpha", min=0, max=1)
    s = _check_logits(student_logits, "student_logits")
    t = _check_logits(teacher_logits, "teacher_logits")
    if t.shape != s.shape:
        raise ValueError(f"teacher_logits must have the shape of student_logits "
                         f"{tuple(s.shape)}, got {tuple(t.shape)}")
    if t.device != s.device:
        raise ValueError(f"teacher_logits must be on the device of student_logits "
                         f"({s.device}), got {t.device}")
    if not torch.is_tensor(labels):
        raise TypeError(f"labels must be a (B,) torch.Tensor of class indices, got "
                        f"{type(labels).__name__}")
    if labels.is_floating_point() or labels.is_complex() or labels.dtype == torch.bool:
        raise TypeError(f"labels must be an integer tensor, got dtype {labels.dtype}")
    if labels.shape != s.shape[:1]:
        raise ValueError(f"labels must have shape ({s.shape[0]},), one per row of the "
                         f"logits, got {tuple(labels.shape)}")
    if labels.device != s.device:
        raise ValueError(f"labels must be on the device of the logits ({s.device}), got "
                         f"{labels.device}")
    lo, hi = int(labels.min()), int(labels.max())
    if lo < 0 or hi >= s.shape[1]:
        raise ValueError(f"labels must lie in [0, {s.shape[1]}) (K = {s.shape[1]} classes), "
                         f"got values in [{lo}, {hi}]")
    return _kd_loss(s, t.to(s.dtype), labels.long(), T, a)


def _kd_loss(s: torch.Tensor, t: torch.Tensor, y: torch.Tensor, T: float,
             a: float) -> torch.Tensor:
    """:func:`kd_loss` on arguments already checked (the training loop's hot path)."""
    ce = F.cross_entropy(s, y)
    log_p_s = F.log_softmax(s / T, dim=-1)
    p_t = F.softmax(t.detach() / T, dim=-1)
    kl = F.kl_div(log_p_s, p_t, reduction="batchmean")  # KL(p_t || p_s)
    return (1 - a) * ce + a * T**2 * kl  # Eq. (1)


@dataclass(frozen=True)
class DistillResult:
    """What :func:`distill` returns: the trained student and its training trace."""

    student: nn.Module
    adapter: nn.Module | None
    train: TrainResult


def _check_images(x, name, channels):
    arr = check_array(x, name, ndim=4, dtype=np.float32)
    if arr.shape[1] != channels:
        raise ValueError(f"{name} must have shape (N, {channels}, H, W), got {arr.shape}")
    return arr


def _check_labels(y, name, n):
    arr = check_array(y, name, shape=(n,), dtype=None)
    if arr.dtype.kind not in "iu" or arr.min() < 0:
        raise ValueError(f"{name} must hold non-negative integer class labels")
    return arr.astype(np.int64)


def _check_label_range(y: np.ndarray, name: str, model: nn.Module, x: np.ndarray) -> None:
    """Labels below the number of classes the model outputs (a forward of one example)."""
    was = model.training
    dev = next((p.device for p in model.parameters()), torch.device("cpu"))
    with torch.no_grad():
        k = model.eval()(torch.as_tensor(x[:1]).to(dev)).shape[-1]
    model.train(was)
    if y.max() >= k:
        raise ValueError(f"{name} must lie in [0, {k}) (the model has {k} outputs), got a "
                         f"maximum of {int(y.max())}")


def _steps(n, batch_size, epochs):
    return max(1, (n // batch_size) * epochs)


def _augment(x: torch.Tensor, augment: str, g: torch.Generator, noise_std: float):
    if augment == "grayscale":  # each image greyed with probability 1/2
        grey = torch.einsum("bchw,c->bhw", x, _LUMA)[:, None].expand_as(x)
        pick = torch.rand(len(x), 1, 1, 1, generator=g) < 0.5
        return torch.where(pick, grey, x)
    if augment == "noise":  # white Gaussian noise of a random strength up to noise_std
        s = torch.rand(len(x), 1, 1, 1, generator=g) * noise_std
        return (x + s * torch.randn(x.shape, generator=g)).clamp(0, 1)
    return x


def train_classifier(model: nn.Module, x, y, *, epochs: int = 3, batch_size: int = 64,
                     lr: float = 2e-3, augment: str = "none", noise_std: float = 0.1,
                     seed: int = 0, device: str = "cpu") -> TrainResult:
    """Train ``model`` with cross-entropy (teachers and the RGB baselines), in place.

    Parameters
    ----------
    model : nn.Module
        Maps ``x`` batches to logits.
    x : ndarray (N, C, H, W) float
    y : ndarray (N,) int
    epochs, batch_size, lr : int, int, float
    augment : {"none", "grayscale", "noise"}
        Grayscale (probability 1/2) or Gaussian-noise augmentation (baselines).
    noise_std : float
        Largest noise standard deviation of ``augment="noise"``.
    seed : int
    """
    if not isinstance(model, nn.Module):
        raise TypeError(f"model must be a torch.nn.Module, got {type(model).__name__}")
    x = check_array(x, "x", ndim=4, dtype=np.float32)
    y = _check_labels(y, "y", len(x))
    epochs = check_int(epochs, "epochs", min=1, max=10_000)
    batch_size = check_int(batch_size, "batch_size", min=1, max=len(x))
    lr = check_float(lr, "lr", min=0, max=10, min_inclusive=False)
    noise_std = check_float(noise_std, "noise_std", min=0, max=10)
    if augment not in AUGMENTATIONS:
        raise ValueError(f"augment must be one of {AUGMENTATIONS}, got {augment!r}")
    seed = check_seed(seed)
    get_device(device)
    _check_label_range(y, "y", model, x)
    g = make_generator(seed)
    aug_g = make_generator(seed + 1)
    n_steps = _steps(len(x), batch_size, epochs)

    def loss_fn(m, batch):
        xb, yb = batch
        return F.cross_entropy(m(_augment(xb, augment, aug_g, noise_std)), yb)

    return train(model, array_batches(x, y, batch_size=batch_size, generator=g),
                 max_iter=n_steps, lr=lr, seed=seed, device=device, loss_fn=loss_fn,
                 lr_schedule=cosine_schedule(n_steps, warmup=min(20, n_steps // 10)))


class _KD(nn.Module):
    def __init__(self, student, adapter):
        super().__init__()
        self.student = student
        self.adapter = adapter


def distill(teacher: nn.Module, student: nn.Module, images, labels, teacher_inputs, *,
            temperature: float = 4.0, alpha: float = 0.7, feature_weight: float = 0.0,
            epochs: int = 3, batch_size: int = 64, lr: float = 2e-3, seed: int = 0,
            device: str = "cpu") -> DistillResult:
    """Distil ``teacher`` (on event frames) into ``student`` (on RGB), in place.

    Parameters
    ----------
    teacher : nn.Module
        Trained; frozen during distillation. Maps ``teacher_inputs`` to logits ``t``.
    student : nn.Module
        Maps ``images`` to logits ``s``; same number of classes as the teacher.
    images : ndarray (N, 3, H, W) float
    labels : ndarray (N,) int
    teacher_inputs : ndarray (N, C_e, H, W) float
        The event frame ``E(x)`` of each image.
    temperature, alpha : float
        ``T`` and ``a`` of Eq. (1).
    feature_weight : float
        Weight ``b`` of the feature-matching term (Eq. 2); needs ``features()`` on both.
    epochs, batch_size, lr, seed, device
        Training.

    Returns
    -------
    DistillResult
    """
    for name, m in (("teacher", teacher), ("student", student)):
        if not isinstance(m, nn.Module):
            raise TypeError(f"{name} must be a torch.nn.Module, got {type(m).__name__}")
    x = check_array(images, "images", ndim=4, dtype=np.float32)
    y = _check_labels(labels, "labels", len(x))
    e = check_array(teacher_inputs, "teacher_inputs", ndim=4, dtype=np.float32)
    if len(e) != len(x):
        raise ValueError(f"teacher_inputs must have one frame per image, got {len(e)} "
                         f"for {len(x)} images")
    check_float(temperature, "temperature", min=0, max=1e4, min_inclusive=False)
    check_float(alpha, "alpha", min=0, max=1)
    fw = check_float(feature_weight, "feature_weight", min=0, max=1e3)
    epochs = check_int(epochs, "epochs", min=1, max=10_000)
    batch_size = check_int(batch_size, "batch_size", min=1, max=len(x))
    lr = check_float(lr, "lr", min=0, max=10, min_inclusive=False)
    seed = check_seed(seed)
    get_device(device)
    teacher.eval()
    with torch.no_grad():
        t_out = teacher(torch.as_tensor(e[:2]))
        s_out = student.eval()(torch.as_tensor(x[:2]))
    if t_out.shape[-1] != s_out.shape[-1]:
        raise ValueError(f"teacher and student must have the same number of classes, got "
                         f"{t_out.shape[-1]} and {s_out.shape[-1]}")
    if y.max() >= s_out.shape[-1]:
        raise ValueError(f"labels must lie in [0, {s_out.shape[-1]}) (the models' classes), "
                         f"got a maximum of {int(y.max())}")
    adapter = None
    if fw > 0:
        with torch.no_grad():
            ft, fs = teacher.features(torch.as_tensor(e[:2])), student.features(
                torch.as_tensor(x[:2]))
        with seeded(seed):
            adapter = nn.Linear(fs.shape[-1], ft.shape[-1])
    for p in teacher.parameters():
        p.requires_grad_(False)
    module = _KD(student, adapter)
    T, a = float(temperature), float(alpha)
    g = make_generator(seed)
    n_steps = _steps(len(x), batch_size, epochs)

    def loss_fn(m, batch):
        xb, yb, eb = batch
        with torch.no_grad():
            t_logits = teacher(eb)
        loss = _kd_loss(m.student(xb), t_logits, yb, T, a)  # Eq. (1), inputs checked above
        if m.adapter is not None:
            with torch.no_grad():
                ft = teacher.features(eb)
            loss = loss + fw * F.mse_loss(m.adapter(m.student.features(xb)), ft)  # Eq. (2)
        return loss

    teacher.to(device)
    result = train(module, array_batches(x, y, e, batch_size=batch_size, generator=g),
                   max_iter=n_steps, lr=lr, seed=seed, device=device, loss_fn=loss_fn,
                   lr_schedule=cosine_schedule(n_steps, warmup=min(20, n_steps // 10)))
    teacher.eval()
    return DistillResult(student, adapter, result)


class EventDistiller(BaseEstimator):
    """Simulate events, train an event teacher, distil it into an RGB student.

    Parameters
    ----------
    temperature, alpha, feature_weight : float
        Of :func:`distill`.
    contrast_threshold, threshold_jitter : float
        Of the event simulator (:func:`~.events.event_frames`).
    num_steps, amplitude : int, float
        The saccade.
    channels : tuple of int
        CNN widths of teacher and student.
    epochs, batch_size, lr : int, int, float
    seed : int

    Attributes
    ----------
    teacher_, student_ : nn.Module
    classes_ : ndarray

    Examples
    --------
    >>> from neurips26.papers.event_distill import make_dataset
    >>> d = make_dataset(num_samples=32, seed=0)
    >>> kd = EventDistiller(channels=(4, 8), epochs=1, batch_size=16).fit(d.x, d.shape_y)
    >>> kd.predict(d.x[:3]).shape
    (3,)
    """

    def __init__(self, *, temperature: float = 4.0, alpha: float = 0.7,
                 feature_weight: float = 0.0, contrast_threshold: float = 0.15,
                 threshold_jitter: float = 0.0, num_steps: int = 6, amplitude: float = 1.0,
                 channels: tuple[int, ...] = (32, 64, 128, 128), epochs: int = 3,
                 batch_size: int = 64, lr: float = 2e-3, seed: int = 0) -> None:
        self.temperature = temperature
        self.alpha = alpha
        self.feature_weight = feature_weight
        self.contrast_threshold = contrast_threshold
        self.threshold_jitter = threshold_jitter
        self.num_steps = num_steps
        self.amplitude = amplitude
        self.channels = channels
        self.epochs = epochs
        self.batch_size = batch_size
        self.lr = lr
        self.seed = seed

    def fit(self, images, labels) -> EventDistiller:
        """Fit on RGB ``images`` (N, 3, H, W) in [0, 1] and integer ``labels`` (N,)."""
        x = check_array(images, "images", ndim=4, dtype=np.float32)
        if x.shape[1] != 3:
            raise ValueError(f"images must have shape (N, 3, H, W), got {x.shape}")
        y = check_array(labels, "labels", shape=(len(x),), dtype=None)
        self.classes_, yi = np.unique(y, return_inverse=True)
        if len(self.classes_) < 2:
            raise ValueError("labels must hold at least two classes")
        ev = event_frames(x, contrast_threshold=self.contrast_threshold,
                          threshold_jitter=self.threshold_jitter, num_steps=self.num_steps,
                          amplitude=self.amplitude, seed=self.seed)
        K = len(self.classes_)
        self.teacher_ = make_cnn(2, K, channels=self.channels, seed=self.seed)
        train_classifier(self.teacher_, ev, yi, epochs=self.epochs, batch_size=self.batch_size,
                         lr=self.lr, seed=self.seed)
        self.student_ = make_cnn(3, K, channels=self.channels, seed=self.seed + 1)
        distill(self.teacher_, self.student_, x, yi, ev, temperature=self.temperature,
                alpha=self.alpha, feature_weight=self.feature_weight, epochs=self.epochs,
                batch_size=self.batch_size, lr=self.lr, seed=self.seed)
        return self

    @torch.no_grad()
    def predict(self, images) -> np.ndarray:
        """Student's predicted labels for RGB ``images`` (N, 3, H, W)."""
        if not hasattr(self, "student_"):
            raise ValueError("images: call fit before predict")
        x = check_array(images, "images", ndim=4, dtype=np.float32)
        self.student_.eval()
        return self.classes_[self.student_(torch.as_tensor(x)).argmax(-1).numpy()]


def predict_logits(model: nn.Module, x, *, batch_size: int = 512) -> np.ndarray:
    """Logits ``(N, K)`` of ``model`` on ``x`` (N, C, H, W), in eval mode, no gradients."""
    if not isinstance(model, nn.Module):
        raise TypeError(f"model must be a torch.nn.Module, got {type(model).__name__}")
    x = check_array(x, "x", ndim=4, dtype=np.float32)
    batch_size = check_int(batch_size, "batch_size", min=1, max=1 << 20)
    model.eval()
    out = []
    with torch.no_grad():
        for s in range(0, len(x), batch_size):
            out.append(model(torch.as_tensor(x[s:s + batch_size])).numpy())
    res = np.concatenate(out)
    if not np.all(np.isfinite(res)):
        raise ValueError("x: the model gave non-finite logits")
    return res

