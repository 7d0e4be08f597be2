"""Torch helpers shared by the deep-learning papers: device, generators, determinism.

Import this module only where torch is needed; nothing in ``neurips26.common`` imports it
implicitly, so papers without torch never pay for it.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator

import torch

from neurips26.common.validation import check_int

DEVICES = ("cpu", "cuda")


def get_device(device: str | torch.device | None = "cpu") -> torch.device:
    """The torch device to run on.

    Parameters
    ----------
    device : {"cpu", "cuda", "cuda:N"}, torch.device or None
        ``"cpu"`` (the default, also for ``None``) or a CUDA device. A CUDA device is
        returned only when one is present; asking for it on a machine without one is
        an error, never a silent fall-back to the CPU.

    Raises
    ------
    ValueError
        For an unknown device name, or ``"cuda"`` without a CUDA device.

    Examples
    --------
    >>> get_device("cpu")
    device(type='cpu')
    >>> get_device("tpu")
    Traceback (most recent call last):
    ...
    ValueError: device: 'tpu' is not one of ('cpu', 'cuda') (or 'cuda:N')
    """
    if device is None:
        return torch.device("cpu")
    if isinstance(device, torch.device):
        name = device.type
        dev = device
    elif isinstance(device, str):
        name = device.split(":", 1)[0]
        if name not in DEVICES:
            raise ValueError(f"device: {device!r} is not one of {DEVICES} (or 'cuda:N')")
        try:
            dev = torch.device(device)
        except RuntimeError as exc:
            raise ValueError(f"device: {device!r} is not a valid device ({exc})") from None
    else:
        raise TypeError(f"device: expected a str or torch.device, got {type(device).__name__}")
    if name == "cuda" and not torch.cuda.is_available():
        raise ValueError(
            "device: 'cuda' was asked for but no CUDA device is available; use device='cpu'"
        )
    return dev


def make_generator(seed: int, device: str | torch.device = "cpu") -> torch.Generator:
    """A ``torch.Generator`` seeded with ``seed`` (the run's only source of torch randomness).

    Examples
    --------
    >>> g1, g2 = make_generator(3), make_generator(3)
    >>> bool(torch.equal(torch.rand(4, generator=g1), torch.rand(4, generator=g2)))
    True
    """
    seed = check_int(seed, "seed", min=0)
    gen = torch.Generator(device=get_device(device))
    gen.manual_seed(seed % 2**63)
    return gen


def set_deterministic(seed: int | None = None) -> None:
    """Ask torch for deterministic kernels (and seed its global generator when given).

    Our code draws from explicit generators; this covers third-party layers that use the
    global one (weight initialisation in ``nn.Linear``, dropout) and CUDA kernels with
    non-deterministic reductions.
    """
    os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
    torch.use_deterministic_algorithms(True, warn_only=True)
    if torch.backends.cudnn.is_available():
        torch.backends.cudnn.benchmark = False
    if seed is not None:
        torch.manual_seed(seed % 2**63)


@contextlib.contextmanager
def seeded(seed: int) -> Iterator[None]:
    """Run a block with torch's global generator seeded, restoring its state afterwards.

    Use it around module construction so ``nn.Linear``'s default initialisation is a
    function of ``seed`` without touching the caller's global state.

    Examples
    --------
    >>> with seeded(0):
    ...     a = torch.nn.Linear(2, 2).weight.detach().clone()
    >>> with seeded(0):
    ...     b = torch.nn.Linear(2, 2).weight.detach().clone()
    >>> bool(torch.equal(a, b))
    True
    """
    state = torch.random.get_rng_state()
    cuda_states = torch.cuda.get_rng_state_all() if torch.cuda.is_available() else None
    torch.manual_seed(seed % 2**63)
    try:
        yield
    finally:
        torch.random.set_rng_state(state)
        if cuda_states is not None:
            torch.cuda.set_rng_state_all(cuda_states)


def num_parameters(module: torch.nn.Module, trainable_only: bool = False) -> int:
    """Number of parameters of ``module`` (only those with ``requires_grad`` if asked)."""
    if not isinstance(module, torch.nn.Module):
        raise TypeError(f"module: expected a torch.nn.Module, got {type(module).__name__}")
    return sum(p.numel() for p in module.parameters() if p.requires_grad or not trainable_only)
