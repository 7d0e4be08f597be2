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

__all__ = ["RSS_METHODS", "MemoryReport", "PeakRSS", "measure_step_memory", "peak_rss"]


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


# --- peak resident memory of a fresh process ------------------------------------------------

#: Methods :func:`peak_rss` can run: MA-SOBA, SOBA, BROS (low-rank reparametrisation), BROS
#: through the projecting reference (the full gradient formed, then projected) and BROS
#: with a full-rank subspace (``rank_fraction = 1``, the control: no saving possible).
RSS_METHODS = ("ma_soba", "soba", "bros", "bros_project", "bros_full_rank")


@dataclass(frozen=True)
class PeakRSS:
    """Resident memory of one fresh process that ran a few iterations of one method.

    Attributes
    ----------
    baseline_kib : int
        Resident set size after the imports and the data, before the model is built.
    peak_kib : int
        The process's resident high-water mark (Linux ``VmHWM``, reset to the baseline
        once the data are loaded, so the loading's transients do not count) after the
        iterations.
    """

    baseline_kib: int
    peak_kib: int

    @property
    def step_peak_kib(self) -> int:
        """``peak - baseline``: the parameters, the iterate and the iterations' transients
        (our stand-in for a GPU's peak allocated memory)."""
        return self.peak_kib - self.baseline_kib


def peak_rss(method: str, width: int, *, batch: int = 128, steps: int = 2,
             rank_fraction: float = 0.125, theta: float = 0.1, num_train: int = 2000,
             num_val: int = 200, mu: float = 1e-4, seed: int = 0,
             timeout: float = 900.0) -> PeakRSS:  # fmt: skip
    """Peak resident memory of ``steps`` iterations of ``method`` in a fresh subprocess.

    The child loads ``num_train + num_val`` full 28x28 MNIST images, runs one iteration of
    the method at width 8 (so the libraries' code is paged in), records its resident set
    size, builds the 784-``width``-``width``-10 MLP hyper-cleaning problem
    (:func:`~.tasks.hyper_cleaning_problem`, half the training labels flipped), releases
    the module's own weight copy (the losses run it through ``functional_call``), runs
    ``steps`` iterations on CPU with one thread and reports the resident high-water mark
    since the baseline (``VmHWM`` after ``/proc/self/clear_refs``; Linux only, else
    ``RuntimeError``). One process per call, so no allocation of another method counts;
    glibc's mmap threshold is fixed at 128 KiB in the child, so freed large blocks leave
    the resident set at once and the peak follows the live memory.

    Parameters
    ----------
    method : str
        One of :data:`RSS_METHODS`.
    width : int >= 1
    batch, steps, num_train, num_val : int >= 1
    rank_fraction : float in (0, 1]
        BROS's ``r / m`` (``"bros_full_rank"`` uses 1).
    theta : float in (0, 1]
    mu : float >= 0
    seed : int
    timeout : float > 0
        Seconds before the child is killed (then ``RuntimeError``).

    Returns
    -------
    PeakRSS
    """
    import json
    import os
    import subprocess
    import sys

    from neurips26.common.validation import check_choice, check_float, check_int

    method = check_choice(method, "method", RSS_METHODS)
    args = {"method": method, "width": check_int(width, "width", min=1, max=65536),
            "batch": check_int(batch, "batch", min=1), "steps": check_int(steps, "steps", min=1),
            "rank_fraction": check_float(rank_fraction, "rank_fraction", min=0.0, max=1.0,
                                         min_inclusive=False),
            "theta": check_float(theta, "theta", min=0.0, max=1.0, min_inclusive=False),
            "num_train": check_int(num_train, "num_train", min=1),
            "num_val": check_int(num_val, "num_val", min=1),
            "mu": check_float(mu, "mu", min=0.0, max=1e6), "seed": check_int(seed, "seed")}
    timeout = check_float(timeout, "timeout", min=0.0, min_inclusive=False)
    # glibc's mmap threshold is fixed, so every block above 128 KiB is returned to the
    # system when freed: the high-water mark then follows live memory (as a GPU
    # allocator's peak allocated bytes do), not the heap's fragmentation.
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p),
               OMP_NUM_THREADS="1", MKL_NUM_THREADS="1",
               MALLOC_MMAP_THRESHOLD_="131072")  # fmt: skip
    code = ("import json, sys; from neurips26.papers.bros.memory import _rss_child; "
            "print(json.dumps(_rss_child(**json.loads(sys.argv[1]))))")  # fmt: skip
    try:
        res = subprocess.run([sys.executable, "-c", code, json.dumps(args)], env=env,
                             capture_output=True, text=True, timeout=timeout,
                             check=False)  # fmt: skip
    except subprocess.TimeoutExpired:
        raise RuntimeError(f"peak_rss({method!r}, {width}) ran past {timeout:g} s") from None
    if res.returncode != 0:
        raise RuntimeError(f"peak_rss({method!r}, {width}) failed: {res.stderr[-2000:]}")
    out = json.loads(res.stdout.strip().splitlines()[-1])
    return PeakRSS(int(out["baseline_kib"]), int(out["peak_kib"]))


def _status_kib(field: str) -> int | None:
    try:
        with open("/proc/self/status") as fh:
            for line in fh:
                if line.startswith(field + ":"):
                    return int(line.split()[1])
    except OSError:
        pass
    return None


def _reset_peak() -> bool:
    """Reset the kernel's high-water mark ``VmHWM`` to the current RSS (Linux)."""
    try:
        with open("/proc/self/clear_refs", "w") as fh:
            fh.write("5")
        return True
    except OSError:
        return False


def _rss_child(method, width, batch, steps, rank_fraction, theta, num_train, num_val, mu,
               seed) -> dict:  # fmt: skip
    """The body of :func:`peak_rss`'s subprocess."""
    import gc

    import numpy as np

    from neurips26.common.data import load_mnist
    from neurips26.common.models import MLPClassifier
    from neurips26.common.torch import make_generator, seeded

    from .steps import bros_step, init_state, ma_soba_step
    from .tasks import flip_labels, hyper_cleaning_batches, hyper_cleaning_problem

    torch.set_num_threads(1)
    ds = load_mnist().subset(num_train + num_val, 10, seed=seed)
    x = torch.as_tensor(ds.x_train).flatten(1)
    labels = np.asarray(ds.y_train)
    noisy, _ = flip_labels(labels[:num_train], 0.5, 10, rng=np.random.default_rng(seed))
    xtr, xva, yva = x[:num_train].clone(), x[num_train:].clone(), labels[num_train:]
    del ds, x
    gc.collect()
    kw: dict = {"lr_x": 1.0, "lr_y": 0.1, "lr_z": 0.1, "theta": 1.0 if method == "soba" else theta}
    if method.startswith("bros"):
        kw.update(rank_fraction=1.0 if method == "bros_full_rank" else rank_fraction,
                  subspace="project" if method == "bros_project" else "factor")  # fmt: skip
    fn = bros_step if method.startswith("bros") else ma_soba_step

    def run(w: int, n: int) -> None:
        with seeded(seed):
            model = MLPClassifier(xtr.shape[1], (w, w), 10)
        prob = hyper_cleaning_problem(model, xtr, noisy, xva, yva, mu=mu)
        with torch.no_grad():  # functional_call supplies the weights: drop the module's copy
            for p in model.parameters():
                p.data = torch.empty(0)
        gc.collect()
        state = init_state(prob)
        batches = hyper_cleaning_batches(num_train, num_val, batch, seed=seed)
        extra = {"generator": make_generator(seed)} if fn is bros_step else {}
        for _ in range(n):
            state = fn(state, prob, next(batches), **kw, **extra)

    run(8, 1)  # a tiny warm-up: the libraries' code and buffers are paged in before the baseline
    gc.collect()
    baseline = _status_kib("VmRSS")
    if baseline is None or not _reset_peak():  # loading the data must not set the peak
        raise RuntimeError("peak_rss needs Linux's /proc/self/status and clear_refs")
    run(width, steps)
    peak = _status_kib("VmHWM")  # the high-water mark since the reset above
    return {"baseline_kib": baseline, "peak_kib": peak}
