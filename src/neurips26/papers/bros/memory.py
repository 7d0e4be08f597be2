"""Counted memory of one iteration: state, peak saved tensors, gradient buffers (bytes).

GPU peak memory depends on the allocator; we count bytes instead, which is deterministic:

* ``state_bytes``: the iterate ``(x, y, z, h)`` after the step;
* ``saved_tensor_bytes_peak``: the largest total, over the step, of the tensors autograd
  holds for backward (seen through :func:`torch.autograd.graph.saved_tensors_hooks`; a
  tensor is counted once per storage, and storages of the state are not counted again).
  BROS's sketches ``S`` and ``T`` are saved by every graph of the step, so they are
  counted here (once each), not in the state;
* ``grad_buffer_bytes``: every gradient and Hessian-action buffer the step produced.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable
from dataclasses import dataclass

import torch

from neurips26.common.validation import check_callable

from .steps import BilevelState

__all__ = ["MemoryReport", "measure_step_memory"]


@dataclass(frozen=True)
class MemoryReport:
    """Bytes of one iteration, by component.

    Attributes
    ----------
    state_bytes : int
    saved_tensor_bytes_peak : int
    grad_buffer_bytes : int
    """

    state_bytes: int
    saved_tensor_bytes_peak: int
    grad_buffer_bytes: int

    @property
    def total_bytes(self) -> int:
        """The sum of the three components (our stand-in for peak memory)."""
        return self.state_bytes + self.saved_tensor_bytes_peak + self.grad_buffer_bytes

    def ratio(self, other: MemoryReport) -> dict[str, float]:
        """Each component of ``self`` divided by ``other``'s (and the total's)."""
        if not isinstance(other, MemoryReport):
            raise TypeError(f"other must be a MemoryReport, got {type(other).__name__}")

        def div(a, b):
            return a / b if b else float("nan")

        return {
            "state": div(self.state_bytes, other.state_bytes),
            "saved": div(self.saved_tensor_bytes_peak, other.saved_tensor_bytes_peak),
            "grad": div(self.grad_buffer_bytes, other.grad_buffer_bytes),
            "total": div(self.total_bytes, other.total_bytes),
        }


def _storage_key(t: torch.Tensor):
    return (t.device.type, t.untyped_storage().data_ptr())


class _Ledger:
    """Live bytes of saved tensors, counted once per storage."""

    def __init__(self, exclude: set) -> None:
        self.exclude = exclude
        self.live: dict = {}  # storage key -> [bytes, references]
        self.current = 0
        self.peak = 0

    def pack(self, t: torch.Tensor):
        key = _storage_key(t)
        if key in self.exclude or t.numel() == 0:
            return t
        entry = self.live.get(key)
        if entry is None:
            nbytes = t.untyped_storage().nbytes()
            self.live[key] = [nbytes, 1]
            self.current += nbytes
            self.peak = max(self.peak, self.current)
        else:
            entry[1] += 1
        box = _Box(t)
        weakref.finalize(box, self._release, key)
        return box

    def _release(self, key) -> None:
        entry = self.live.get(key)
        if entry is None:
            return
        entry[1] -= 1
        if entry[1] == 0:
            self.current -= entry[0]
            del self.live[key]

    @staticmethod
    def unpack(obj):
        return obj.tensor if isinstance(obj, _Box) else obj


class _Box:
    __slots__ = ("__weakref__", "tensor")

    def __init__(self, tensor: torch.Tensor) -> None:
        self.tensor = tensor


def measured_step(step_fn: Callable, state: BilevelState, *args, **kwargs):
    """Run ``step_fn(state, *args, **kwargs)`` and count its memory; ``(state, report)``."""
    check_callable(step_fn, "step_fn")
    if not isinstance(state, BilevelState):
        raise TypeError(f"state must be a BilevelState, got {type(state).__name__}")
    exclude = {_storage_key(t) for t in state.tensors()}
    ledger = _Ledger(exclude)
    with torch.autograd.graph.saved_tensors_hooks(ledger.pack, ledger.unpack):
        new = step_fn(state, *args, **kwargs)
    if not isinstance(new, BilevelState):
        raise TypeError(f"step_fn must return a BilevelState, got {type(new).__name__}")
    state_bytes = sum(t.numel() * t.element_size() for t in new.tensors())
    report = MemoryReport(int(state_bytes), int(ledger.peak), int(new.stats.grad_buffer_bytes))
    return new, report


def measure_step_memory(step_fn: Callable, state: BilevelState, *args, **kwargs) -> MemoryReport:
    """Counted bytes of one iteration ``step_fn(state, *args, **kwargs)``.

    Parameters
    ----------
    step_fn : callable
        :func:`~neurips26.papers.bros.ma_soba_step`, :func:`~neurips26.papers.bros.bros_step`
        or any function of a :class:`BilevelState` returning the next one.
    state : BilevelState
    *args, **kwargs
        Passed to ``step_fn``.

    Returns
    -------
    MemoryReport

    Examples
    --------
    >>> import torch
    >>> from neurips26.papers.bros import BilevelProblem, init_state, ma_soba_step
    >>> prob = BilevelProblem(lambda x, y, b: 0.5 * ((y["w"] - 1) ** 2).sum(),
    ...                       lambda x, y, b: 0.5 * ((y["w"] - x) ** 2).sum(),
    ...                       torch.zeros(4), {"w": torch.zeros(4)})
    >>> rep = measure_step_memory(ma_soba_step, init_state(prob), prob, (None, None, None))
    >>> rep.state_bytes  # x, h, y, z: 4 float32 each
    64
    """
    return measured_step(step_fn, state, *args, **kwargs)[1]
