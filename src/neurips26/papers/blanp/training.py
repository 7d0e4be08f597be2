"""Training loops and estimators: local modes on a :class:`BLANPNet`, backprop on the same net.

:func:`local_net` turns the shared :class:`~neurips26.common.models.MLPClassifier` or
:class:`~neurips26.common.models.SmallCNN` (or any list of blocks) into a
:class:`BLANPNet` with a local head per block; the backprop baseline trains the original
model end to end through :func:`neurips26.common.train.train`. :class:`BLANP`,
:class:`BLANPExact`, :class:`DGL` and :class:`Backprop` are scikit-learn style
estimators over these (``fit(X, y)``, ``predict``, ``score``).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import (
    check_consistent_length,
    check_is_fitted,
    column_or_1d,
    validate_data,
)
from torch import nn

from neurips26.common.models import MLPClassifier, SmallCNN
from neurips26.common.plateau import Plateau
from neurips26.common.torch import get_device, make_generator, seeded
from neurips26.common.train import array_batches
from neurips26.common.train import train as common_train
from neurips26.common.validation import check_float, check_int, check_seed

from .estimators import as_tensor
from .local import BLANPNet, check_labels, check_mode, make_head, run_module

#: Most training steps one call accepts.
MAX_ITER = 10**7
ARCHS = ("mlp", "cnn")


def make_model(kind: str, input_shape: Sequence[int], widths: Sequence[int], num_classes: int,
               *, seed: int = 0) -> nn.Module:  # fmt: skip
    """The shared MLP (``Linear -> ReLU`` per width) or small CNN (conv stages), seeded.

    Parameters
    ----------
    kind : {"mlp", "cnn"}
    input_shape : (C, H, W) or (D,)
    widths : sequence of int
        Hidden widths (MLP) or channels per conv stage (CNN).
    num_classes : int
    seed : int
        Seeds the initialisation.

    Examples
    --------
    >>> tuple(make_model("mlp", (1, 8, 8), (16, 16), 10)(torch.zeros(2, 1, 8, 8)).shape)
    (2, 10)
    """
    if kind not in ARCHS:
        raise ValueError(f"kind must be one of {ARCHS}; got unknown kind {kind!r}")
    shape = tuple(check_int(int(s) if isinstance(s, (int, np.integer)) else s, "input_shape",
                            min=1) for s in input_shape)  # fmt: skip
    if not shape:
        raise ValueError("input_shape must not be empty")
    widths = tuple(check_int(w, "widths", min=1, max=1 << 16) for w in widths)
    if not widths:
        raise ValueError("widths must hold at least one width, got none")
    num_classes = check_int(num_classes, "num_classes", min=2, max=1 << 16)
    seed = check_seed(seed)
    with seeded(seed):
        if kind == "mlp":
            return MLPClassifier(int(np.prod(shape)), widths, num_classes)
        if len(shape) != 3:
            raise ValueError(f"input_shape must be (C, H, W) for a CNN, got {shape}")
        return SmallCNN(shape[0], widths, num_classes)


def local_net(model: nn.Module, *, example, sigma: float = 1e-2, ema_decay: float = 0.99,
              num_probes: int = 1, seed: int = 0) -> BLANPNet:  # fmt: skip
    """A :class:`BLANPNet` of ``model``'s blocks, each with a new local head.

    Parameters
    ----------
    model : MLPClassifier, SmallCNN, nn.Sequential or nn.ModuleList
        The user's network. The shared models give their ``layers`` / ``stages`` (the
        MLP's last local head starts as a copy of its ``head``); a ``Sequential`` or
        ``ModuleList`` gives its children as blocks, the last of which is the classifier:
        it becomes the last layer's head itself (the module, not a copy, so training the
        net trains the user's model in place) and the number of classes is read from its
        output.
    example : array_like, shape (B, ...)
        An input batch that sizes the heads.
    sigma, ema_decay, num_probes : see :class:`LocalLayer`.
    seed : int
        Seeds the heads' initialisation.

    Raises
    ------
    ValueError, TypeError
        For a model without the expected layers, or a bad example.
    """
    if not isinstance(model, nn.Module):
        raise TypeError(f"model must be a torch.nn.Module, got {type(model).__name__}")
    example = as_tensor(example, "example", cast=torch.float32)
    seed = check_seed(seed)
    with seeded(seed):
        if isinstance(model, MLPClassifier):
            blocks = [nn.Sequential(nn.Flatten(), *model.layers[0]), *model.layers[1:]]
            num_classes = model.head.out_features
        elif isinstance(model, SmallCNN):
            blocks, num_classes = list(model.stages), model.head.out_features
        elif isinstance(model, (nn.Sequential, nn.ModuleList)):
            blocks = list(model.children())
            if len(blocks) < 2:
                raise ValueError("model must hold at least two blocks (the last is the classifier)")
            with torch.no_grad():
                h = example
                for b in blocks:
                    h = b(h)
            num_classes = int(h.shape[1])
            classifier, blocks = blocks[-1], blocks[:-1]
        else:
            raise ValueError(
                f"model: a {type(model).__name__} has no blocks we can read; pass an "
                "MLPClassifier, SmallCNN, nn.Sequential or nn.ModuleList of blocks"
            )
        heads = None
        if isinstance(model, (nn.Sequential, nn.ModuleList)):
            # The user's own classifier is the last layer's head (trained in place, so the
            # user's model predicts with it); the other layers get new heads.
            heads = []
            with torch.no_grad():
                h = example
                for b in blocks:
                    h = b(h)
                    heads.append(make_head(h, num_classes))
            heads[-1] = classifier
        net = BLANPNet.from_blocks(blocks, num_classes=num_classes, example=example, sigma=sigma,
                                   ema_decay=ema_decay, num_probes=num_probes,
                                   heads=heads)  # fmt: skip
    if isinstance(model, MLPClassifier):  # the last head starts where the model's head does
        net.layers[-1].head.load_state_dict(model.head.state_dict())
        net.layers[-1].critic.load_state_dict(model.head.state_dict())
    return net


@dataclass(frozen=True)
class LocalTrainResult:
    """What :func:`train_local` did.

    Attributes
    ----------
    losses : tuple of float
        The last layer's local loss at every step.
    layer_losses : tuple of float
        Each layer's mean local loss over the last 10% of steps.
    num_steps : int
    """

    losses: tuple[float, ...]
    layer_losses: tuple[float, ...]
    num_steps: int

    @property
    def final_loss(self) -> float:
        k = max(1, len(self.losses) // 10)
        return float(np.mean(self.losses[-k:]))


class PlateauStop:
    """A held-out stopping rule: train until the validation loss stops improving.

    Every ``eval_every`` steps the model's cross-entropy and accuracy on ``(x_val,
    y_val)`` are recorded (the training curve). Training stops once ``patience``
    evaluations in a row fail to improve the best loss so far by more than
    ``min_improvement`` (a relative share); the step cap of the training call still holds.

    Parameters
    ----------
    x_val : array_like, shape (N, ...)
        Held-out inputs (not the test set).
    y_val : array_like, shape (N,)
        Their integer labels.
    eval_every : int
        Steps between evaluations.
    patience : int
        Evaluations without a relative improvement above ``min_improvement`` that stop
        training (the window is ``patience * eval_every`` steps).
    min_improvement : float
        Relative improvement of the best held-out loss that counts, in ``[0, 1)``.

    Attributes
    ----------
    steps, val_loss, val_acc : list
        The curve: the step of each evaluation and the held-out loss and accuracy there.
    stopped : bool
        Whether the rule fired (False: the step cap ended training first).

    Examples
    --------
    >>> import torch
    >>> rule = PlateauStop(torch.zeros(4, 2), torch.tensor([0, 1, 0, 1]), eval_every=1,
    ...                    patience=2)
    >>> net = torch.nn.Linear(2, 2)
    >>> [rule(step, net) for step in range(4)], len(rule.steps)
    ([False, False, True, True], 3)
    """

    def __init__(self, x_val, y_val, *, eval_every: int = 100, patience: int = 5,
                 min_improvement: float = 0.01) -> None:  # fmt: skip
        self.x_val, self.y_val = _check_data(x_val, y_val, "x_val", "y_val")
        self.eval_every = check_int(eval_every, "eval_every", min=1, max=MAX_ITER)
        self.patience = check_int(patience, "patience", min=1, max=MAX_ITER)
        self.min_improvement = check_float(min_improvement, "min_improvement", min=0.0,
                                           max=1.0, max_inclusive=False)  # fmt: skip
        self.steps: list[int] = []
        self.val_loss: list[float] = []
        self.val_acc: list[float] = []
        self._rule = Plateau(self.patience, self.min_improvement)

    @torch.no_grad()
    def evaluate(self, model: nn.Module) -> tuple[float, float]:
        """Held-out cross-entropy and accuracy of ``model`` (left in the mode it was in)."""
        was = model.training
        model.eval()
        dev = next(model.parameters()).device
        logits = torch.cat([model(self.x_val[i : i + 1000].to(dev)).float().cpu()
                            for i in range(0, len(self.x_val), 1000)])  # fmt: skip
        model.train(was)
        y = self.y_val.to(logits.device)
        loss = float(torch.nn.functional.cross_entropy(logits, y))
        return loss, float((logits.argmax(1) == y).float().mean())

    def __call__(self, step: int, model: nn.Module) -> bool:
        """After training step ``step`` (0-based): evaluate when due; True to stop."""
        if self.stopped:
            return True
        if (step + 1) % self.eval_every:
            return False
        loss, acc = self.evaluate(model)
        self.steps.append(step + 1)
        self.val_loss.append(loss)
        self.val_acc.append(acc)
        if not math.isfinite(loss):
            raise ValueError(f"model: non-finite held-out loss at step {step + 1}; lower lr?")
        return self._rule.update(loss)

    @property
    def stopped(self) -> bool:
        """Whether the rule fired (False: the step cap ended training first)."""
        return self._rule.stopped


def _check_stop(stop):
    if stop is not None and not isinstance(stop, PlateauStop):
        raise TypeError(f"stop must be a PlateauStop or None, got {type(stop).__name__}")
    return stop


def _check_data(x, y, name: str = "x", y_name: str = "y"):
    x = as_tensor(x, name, cast=torch.float32)
    if x.ndim < 2:
        raise ValueError(f"{name} must have shape (N, ...), got {tuple(x.shape)}")
    y = check_labels(y, 1 << 30, name=y_name)
    if len(y) != len(x):
        raise ValueError(f"{name} and {y_name} must have the same length, got {len(x)} and "
                         f"{len(y)}")  # fmt: skip
    return x, y


def _check_train_args(max_iter, lr, batch_size, seed, n):
    max_iter = check_int(max_iter, "max_iter", min=1, max=MAX_ITER)
    lr = check_float(lr, "lr", min=0, min_inclusive=False, max=10.0)
    batch_size = check_int(batch_size, "batch_size", min=1)
    if batch_size > n:
        raise ValueError(f"batch_size {batch_size} exceeds the {n} training examples")
    return max_iter, lr, batch_size, check_seed(seed)


def _num_classes(net: nn.Module, x, name: str = "x") -> int:
    with torch.no_grad():
        out = run_module(net, x[:1], name)
    if out.ndim != 2:
        raise ValueError(f"{name}: the model gives outputs of shape {tuple(out.shape)}, not logits")
    return int(out.shape[1])


def _image_layout(model: nn.Module, x: torch.Tensor):
    """The memory format image batches train in: channels-last on the CPU, else unchanged.

    PyTorch's CPU max-pooling is several times faster on channels-last than on NCHW
    tensors, so for 4-D inputs the model's parameters and every batch take that layout.
    The operations are the same; only the convolution's float rounding may differ.
    Returns the format to give each batch, or None to leave batches as they are.
    """
    p = next(model.parameters(), None)
    if x.ndim != 4 or p is None or p.device.type != "cpu":
        return None
    model.to(memory_format=torch.channels_last)
    return torch.channels_last


def _in_layout(batches, fmt):
    """``batches`` of ``(x, y)`` with ``x`` in memory format ``fmt`` (None: unchanged)."""
    for xb, yb in batches:
        yield (xb if fmt is None else xb.contiguous(memory_format=fmt)), yb


def train_local(net: BLANPNet, x, y, *, mode: str = "blanp", max_iter: int, lr: float = 1e-3,
                batch_size: int = 128, seed: int = 0, device: str = "cpu",
                stop: PlateauStop | None = None) -> LocalTrainResult:  # fmt: skip
    """Train ``net`` layer-locally with Adam on shuffled mini-batches of ``(x, y)``.

    Parameters
    ----------
    net : BLANPNet
    x : array_like, shape (N, ...)
    y : array_like, shape (N,)
        Integer labels in ``[0, num_classes)``.
    mode : {"blanp", "blanp_no_ema", "forward", "exact", "dgl"}
    max_iter : int
        Steps (the cap, when ``stop`` is given).
    lr : float
        Adam's learning rate (paper default ``1e-3``, inferred).
    batch_size : int
    seed : int
        Seeds the batch order and the probes.
    device : {"cpu", "cuda"}
    stop : PlateauStop, optional
        A held-out stopping rule (it records the training curve).

    Returns
    -------
    LocalTrainResult

    Notes
    -----
    The loop is the one a user writes with :class:`BLANPOptimizer` (``fused=True``):
    ``zero_grad()``, ``local_backward(x, y)``, ``step()``.

    Examples
    --------
    >>> from neurips26.common.data import load_digits
    >>> xtr, ytr, _, _ = load_digits().flat()
    >>> model = make_model("mlp", (64,), (32,), 10)
    >>> net = local_net(model, example=xtr[:2])
    >>> res = train_local(net, xtr, ytr, mode="exact", max_iter=20, batch_size=64)
    >>> res.num_steps
    20
    """
    if not isinstance(net, BLANPNet):
        raise TypeError(f"net must be a BLANPNet, got {type(net).__name__}")
    mode = check_mode(mode)
    dev = get_device(device)
    x, y = _check_data(x, y)
    max_iter, lr, batch_size, seed = _check_train_args(max_iter, lr, batch_size, seed, len(y))
    net.to(dev)
    y = check_labels(y, _num_classes(net, x.to(dev)), len(x))
    stop = _check_stop(stop)
    from .optim import BLANPOptimizer

    gen = make_generator(seed)
    fmt = _image_layout(net, x)  # before the optimiser sees the parameters
    opt = BLANPOptimizer(net, lr=lr, mode=mode, fused=True, seed=seed + 1)
    batches = _in_layout(array_batches(x, y, batch_size=batch_size, generator=gen, device=dev),
                         fmt)  # fmt: skip
    net.train()
    losses, layer = [], []
    for step in range(max_iter):
        xb, yb = next(batches)
        opt.zero_grad()
        res = opt.local_backward(xb, yb)
        opt.step()
        losses.append(res.loss)
        layer.append(res.losses)
        if stop is not None and stop(step, net):
            break
    net.eval()
    k = max(1, len(layer) // 10)
    layer_losses = tuple(float(v) for v in np.mean(np.asarray(layer[-k:]), axis=0))
    return LocalTrainResult(tuple(losses), layer_losses, len(losses))


def train_backprop(model: nn.Module, x, y, *, max_iter: int, lr: float = 1e-3,
                   batch_size: int = 128, seed: int = 0, device: str = "cpu",
                   stop: PlateauStop | None = None):  # fmt: skip
    """The backprop baseline: ``model`` trained end to end with Adam (fused kernel, as
    :func:`train_local`; no weight decay).

    Same batches (order and size) as :func:`train_local` for the same seed; ``stop`` is
    the same held-out rule. Returns the :class:`~neurips26.common.train.TrainResult` of
    the shared loop.
    """
    if not isinstance(model, nn.Module):
        raise TypeError(f"model must be a torch.nn.Module, got {type(model).__name__}")
    dev = get_device(device)
    x, y = _check_data(x, y)
    max_iter, lr, batch_size, seed = _check_train_args(max_iter, lr, batch_size, seed, len(y))
    model.to(dev)
    y = check_labels(y, _num_classes(model, x.to(dev)), len(x))
    gen = make_generator(seed)
    batches = _in_layout(array_batches(x, y, batch_size=batch_size, generator=gen, device=dev),
                         _image_layout(model, x))  # fmt: skip
    opt = torch.optim.Adam(model.parameters(), lr=lr, fused=True)
    stop = _check_stop(stop)
    callback = None if stop is None else (lambda step, _loss, m: stop(step, m))
    return common_train(model, batches, max_iter=max_iter, lr=lr, seed=seed, device=device,
                        optimizer=opt, progress=False, callback=callback)  # fmt: skip


@torch.no_grad()
def predict_logits(model: nn.Module, x, *, batch_size: int = 1000, device: str = "cpu"):
    """Logits ``(N, K)`` of ``model`` on ``x`` in eval mode, in batches (a numpy array)."""
    if not isinstance(model, nn.Module):
        raise TypeError(f"model must be a torch.nn.Module, got {type(model).__name__}")
    x = as_tensor(x, "x", cast=torch.float32)
    batch_size = check_int(batch_size, "batch_size", min=1)
    dev = get_device(device)
    model.to(dev).eval()
    _num_classes(model, x.to(dev))
    out = [model(x[i : i + batch_size].to(dev)).cpu() for i in range(0, len(x), batch_size)]
    return torch.cat(out).numpy()


def _validated(est, X, *, reset: bool):
    """scikit-learn's ``validate_data`` on ``X`` (``reset``: at fit), its errors prefixed
    by the argument's name (scikit-learn's wording kept after it)."""
    try:
        return validate_data(est, X, reset=reset, allow_nd=True, dtype=[np.float32, np.float64])
    except (ValueError, TypeError) as exc:
        raise type(exc)(f"X: {exc}") from None


class _Estimator(ClassifierMixin, BaseEstimator):
    """Shared ``fit`` / ``predict`` of the estimators; ``_mode`` picks the training rule."""

    _mode = "blanp"

    def __init__(self, *, widths: tuple[int, ...] = (256, 256, 256), kind: str = "mlp",
                 sigma: float = 1e-2, ema_decay: float = 0.99, num_probes: int = 1,
                 max_iter: int = 100, lr: float = 1e-3, batch_size: int = 128, seed: int = 0,
                 device: str = "cpu") -> None:  # fmt: skip
        self.widths = widths
        self.kind = kind
        self.sigma = sigma
        self.ema_decay = ema_decay
        self.num_probes = num_probes
        self.max_iter = max_iter
        self.lr = lr
        self.batch_size = batch_size
        self.seed = seed
        self.device = device

    def fit(self, X, y):
        """Train on ``X`` and labels ``y``.

        Parameters
        ----------
        X : array_like, shape (N, D), or (N, C, H, W) for a CNN
        y : array_like, shape (N,)
            Class labels (any values; at least two classes).

        Returns
        -------
        self
        """
        if y is None:
            raise ValueError(f"y: {type(self).__name__} requires y to be passed, but the "
                             "target y is None")  # fmt: skip
        X = _validated(self, X, reset=True)
        try:
            y = column_or_1d(np.asarray(y), warn=True)
            check_classification_targets(y)
        except (ValueError, TypeError) as exc:
            raise type(exc)(f"y: {exc}") from None
        try:
            check_consistent_length(X, y)
        except ValueError as exc:
            raise ValueError(f"X and y: {exc}") from None
        self.classes_, yi = np.unique(y, return_inverse=True)
        if len(self.classes_) < 2:
            raise ValueError(f"y holds {len(self.classes_)} class; a classifier needs at least "
                             "two classes")  # fmt: skip
        x, yt = _check_data(X, yi, "X")
        model = make_model(self.kind, tuple(x.shape[1:]), self.widths, len(self.classes_),
                           seed=self.seed)  # fmt: skip
        batch = min(self.batch_size, len(yt))
        if self._mode == "backprop":
            res = train_backprop(model, x, yt, max_iter=self.max_iter, lr=self.lr,
                                 batch_size=batch, seed=self.seed, device=self.device)  # fmt: skip
            self.model_ = model
        else:
            net = local_net(model, example=x[:2], sigma=self.sigma, ema_decay=self.ema_decay,
                            num_probes=self.num_probes, seed=self.seed)  # fmt: skip
            res = train_local(net, x, yt, mode=self._mode, max_iter=self.max_iter, lr=self.lr,
                              batch_size=batch, seed=self.seed, device=self.device)  # fmt: skip
            if not math.isfinite(res.final_loss):
                raise ValueError("X: training diverged (non-finite loss)")
            self.model_ = net
        self.n_iter_ = int(res.num_steps)
        return self

    def predict(self, X) -> np.ndarray:
        """Class labels ``(N,)`` of ``X`` ``(N, D)`` (``(N, C, H, W)`` for a CNN)."""
        check_is_fitted(self, "model_")
        X = _validated(self, X, reset=False)
        logits = predict_logits(self.model_, X, device=self.device)
        return self.classes_[logits.argmax(1)]


class BLANP(_Estimator):
    """BLANP: antithetic node perturbation per layer, scored by a frozen EMA critic.

    Parameters
    ----------
    widths : tuple of int
        Hidden widths (MLP) or conv channels (CNN); the paper's MLP is 3 x 256 (inferred).
    kind : {"mlp", "cnn"}
    sigma : float
        Relative probe size (times the pre-activation's batch std).
    ema_decay : float
        ``tau`` of the critic.
    num_probes : int
        Antithetic pairs per step.
    max_iter, lr, batch_size, seed, device
        Adam steps (default 100: quick fits; the experiment trains to a held-out
        plateau instead), learning rate, mini-batch size, seed, torch device.

    Examples
    --------
    >>> from neurips26.common.data import load_digits
    >>> xtr, ytr, xte, yte = load_digits().flat()
    >>> clf = BLANP(widths=(32,), max_iter=30, batch_size=64).fit(xtr, ytr)
    >>> clf.predict(xte[:4]).shape
    (4,)
    """

    _mode = "blanp"


class BLANPExact(_Estimator):
    """BLANP-Exact: exact local gradients through the frozen EMA critic (stop-gradient).

    Parameters are those of :class:`BLANP` (``sigma`` and ``num_probes`` are unused).
    """

    _mode = "exact"


class DGL(_Estimator):
    """Greedy local learning (DGL-style): each block and its head trained on their own loss.

    Parameters are those of :class:`BLANP` (``sigma``, ``ema_decay``, ``num_probes`` unused).
    """

    _mode = "dgl"


class Backprop(_Estimator):
    """The same network trained end to end by backpropagation (one head, on the last layer).

    Parameters are those of :class:`BLANP` (the local ones unused).
    """

    _mode = "backprop"
