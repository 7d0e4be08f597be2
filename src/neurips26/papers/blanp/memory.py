"""Counting the activation bytes autograd keeps for the backward pass.

:class:`SavedTensorMeter` installs ``torch.autograd.graph.saved_tensors_hooks``: every
tensor an operation saves for backward is counted (once per storage, however many
operations save it) from the moment it is saved until the graph that holds it is freed.
Parameters (leaf tensors that require grad) and their views (a transposed weight) are
not activations and are not counted. The
peak of the live total over a training step is the step's activation memory, a count of
bytes that does not depend on the machine or the allocator.
"""

from __future__ import annotations

import time
import weakref
from collections.abc import Callable
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from neurips26.common.validation import check_int


class _Packed:
    """What the pack hook hands to autograd: the tensor plus a ticket for the meter."""

    __slots__ = ("__weakref__", "tensor")

    def __init__(self, tensor: Tensor) -> None:
        self.tensor = tensor


class SavedTensorMeter:
    """Live and peak bytes of the tensors saved for backward inside a ``with`` block.

    Attributes
    ----------
    peak_bytes : int
        The largest live total seen.
    live_bytes : int
        Bytes saved and not yet freed.
    num_saved : int
        Tensors saved (counting repeats).

    Examples
    --------
    >>> lin = torch.nn.Linear(10, 10)
    >>> with SavedTensorMeter() as meter:
    ...     loss = torch.relu(lin(torch.ones(4, 10))).sum()
    ...     loss.backward()
    >>> meter.peak_bytes  # the input (4x10) and relu's output (4x10), float32
    320
    >>> meter.live_bytes
    0
    """

    def __init__(self) -> None:
        self.peak_bytes = 0
        self.live_bytes = 0
        self.num_saved = 0
        self._refs: dict[int, list[int]] = {}  # storage pointer -> [bytes, count]
        self._ctx = None

    def _release(self, key: int) -> None:
        entry = self._refs.get(key)
        if entry is None:
            return
        entry[1] -= 1
        if entry[1] == 0:
            self.live_bytes -= entry[0]
            del self._refs[key]

    def _pack(self, t: Tensor):
        self.num_saved += 1
        packed = _Packed(t)
        base = t._base if t._base is not None else t
        if base.is_leaf and base.requires_grad:  # a parameter (or its view), not an activation
            return packed
        storage = t.untyped_storage()
        key = storage.data_ptr()
        entry = self._refs.get(key)
        if entry is None:
            self._refs[key] = [storage.nbytes(), 1]
            self.live_bytes += storage.nbytes()
            self.peak_bytes = max(self.peak_bytes, self.live_bytes)
        else:
            entry[1] += 1
        weakref.finalize(packed, self._release, key)
        return packed

    @staticmethod
    def _unpack(packed: _Packed) -> Tensor:
        return packed.tensor

    def __enter__(self) -> SavedTensorMeter:
        self._ctx = torch.autograd.graph.saved_tensors_hooks(self._pack, self._unpack)
        self._ctx.__enter__()
        return self

    def __exit__(self, *exc) -> None:
        self._ctx.__exit__(*exc)
        self._ctx = None


def peak_saved_bytes(fn: Callable[[], object]) -> int:
    """Peak bytes of saved activations while ``fn()`` runs (one training step, say).

    Examples
    --------
    >>> lin = torch.nn.Linear(3, 2)
    >>> peak_saved_bytes(lambda: lin(torch.ones(5, 3)).sum().backward())
    60
    """
    if not callable(fn):
        raise TypeError(f"fn must be callable, got {type(fn).__name__}")
    with SavedTensorMeter() as meter:
        fn()
    return meter.peak_bytes


@dataclass(frozen=True)
class StepCost:
    """The cost of one training step.

    Attributes
    ----------
    peak_bytes : int
        Peak saved-activation bytes (:class:`SavedTensorMeter`); deterministic.
    seconds : float
        Fastest wall time of the timed repeats, the least disturbed by other load
        (machine-dependent: compare as ratios).
    """

    peak_bytes: int
    seconds: float


def measure_step(model: nn.Module, x: Tensor, y: Tensor, *, mode: str = "blanp",
                 repeats: int = 3) -> StepCost:  # fmt: skip
    """Peak saved bytes and fastest wall time of a training step of ``model`` on ``(x, y)``.

    Parameters
    ----------
    model : BLANPNet or nn.Module
        A :class:`BLANPNet` takes a local step in ``mode``; any other module takes a
        backprop step (``mode`` is then ignored) with cross-entropy on its logits.
    x : Tensor, shape (B, ...)
    y : Tensor, shape (B,)
    mode : str
        A local mode (:data:`MODES`).
    repeats : int
        Timed steps after the measured one (the fastest is reported).

    Examples
    --------
    >>> net = torch.nn.Sequential(torch.nn.Linear(4, 3))
    >>> measure_step(net, torch.ones(2, 4), torch.tensor([0, 1]), repeats=1).peak_bytes
    76

    (the 2x4 input, the 2x3 log-softmax, the int64 labels and the loss's weight total).
    """
    from .estimators import as_tensor
    from .local import BLANPNet, check_labels, check_mode, run_module

    if not isinstance(model, nn.Module):
        raise TypeError(f"model must be a torch.nn.Module, got {type(model).__name__}")
    x = as_tensor(x, "x", cast=torch.float32)
    if x.ndim < 2:
        raise ValueError(f"x must have shape (B, ...), got {tuple(x.shape)}")
    with torch.no_grad():
        out = run_module(model, x[:1], "x")
    y = check_labels(y, int(out.shape[1]) if out.ndim == 2 else 1 << 30, x.shape[0])
    repeats = check_int(repeats, "repeats", min=1, max=1000)
    params = [p for p in model.parameters() if p.requires_grad]
    opt = torch.optim.SGD(params, lr=0.0)  # measure without moving the weights
    if isinstance(model, BLANPNet):
        check_mode(mode)

        def step():
            model.train_step(x, y, optimizer=opt, mode=mode)
    else:

        def step():
            opt.zero_grad(set_to_none=True)
            F.cross_entropy(model(x), y).backward()
            opt.step()

    peak = peak_saved_bytes(step)  # also the warm-up of the timed steps
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        step()
        times.append(time.perf_counter() - t0)
    return StepCost(peak, float(min(times)))
