"""Input checks shared by the public functions of state_pred_sep (one place, one wording)."""

from __future__ import annotations

import math

import torch

MODES = ("standard", "separated", "pause")


def check_tokens(name: str, idx: object, *, vocab_size: int, block_size: int) -> torch.Tensor:
    """``idx``: an integer tensor ``(B, T)``, ``1 <= T <= block_size``, ids in ``[0, V)``."""
    if not isinstance(idx, torch.Tensor):
        raise TypeError(f"{name} must be a torch.Tensor of token ids, got {type(idx).__name__}")
    if idx.dtype.is_floating_point or idx.dtype.is_complex or idx.dtype == torch.bool:
        raise TypeError(f"{name} must hold integer token ids, got dtype {idx.dtype}")
    if idx.ndim != 2:
        raise ValueError(f"{name} must have shape (B, T), got {tuple(idx.shape)}")
    b, t = idx.shape
    if b == 0 or t == 0:
        raise ValueError(f"{name} must be non-empty, got shape {tuple(idx.shape)}")
    if t > block_size:
        raise ValueError(
            f"{name} has length T={t}, longer than the context block_size={block_size}"
        )
    lo, hi = int(idx.min()), int(idx.max())
    if lo < 0 or hi >= vocab_size:
        raise ValueError(f"{name} holds ids in [{lo}, {hi}], outside [0, vocab_size={vocab_size})")
    return idx.long()


def check_targets(targets: object, idx: torch.Tensor, *, vocab_size: int) -> torch.Tensor:
    """``targets`` must be an integer tensor of ``idx``'s shape (``-1`` marks an ignored slot)."""
    if not isinstance(targets, torch.Tensor):
        raise TypeError(f"targets must be a torch.Tensor, got {type(targets).__name__}")
    if targets.dtype.is_floating_point or targets.dtype.is_complex or targets.dtype == torch.bool:
        raise TypeError(f"targets must hold integer token ids, got dtype {targets.dtype}")
    if tuple(targets.shape) != tuple(idx.shape):
        raise ValueError(
            f"targets must have the shape of idx {tuple(idx.shape)}, got {tuple(targets.shape)}"
        )
    if int(targets.min()) < -1 or int(targets.max()) >= vocab_size:
        raise ValueError(f"targets hold ids outside [-1, vocab_size={vocab_size})")
    return targets.long()


def check_mode(mode: object, allowed: tuple[str, ...] = MODES) -> str:
    if mode not in allowed:
        raise ValueError(f"mode must be one of {allowed}, got {mode!r}")
    return mode  # type: ignore[return-value]


#: Largest count (steps, windows, batch size, sequence length) accepted: larger ones
#: could not finish or would not fit in memory.
MAX_COUNT = 10**7


def check_int(name: str, value: object, *, minimum: int, maximum: int = MAX_COUNT) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{name} must be an integer, got {value!r}")
    if value < minimum:
        raise ValueError(f"{name} must be >= {minimum}, got {value}")
    if value > maximum:
        raise ValueError(f"{name} must be <= {maximum}, got {value}")
    return value


def check_device(device: object) -> torch.device:
    """A torch device that exists here (``device`` named in the error otherwise)."""
    if not isinstance(device, (str, torch.device)):
        raise TypeError(f"device must be a str or torch.device, got {type(device).__name__}")
    try:
        dev = torch.device(device)
    except RuntimeError as exc:
        raise ValueError(f"device: {device!r} is not a torch device ({exc})") from None
    if dev.type == "cuda" and not torch.cuda.is_available():
        raise ValueError(f"device: {device!r} asked for, but no CUDA device is available")
    if dev.type not in ("cpu", "cuda"):
        raise ValueError(f"device must be cpu or cuda, got {device!r}")
    return dev


def check_positive_float(name: str, value: object) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f"{name} must be a number, got {value!r}")
    if not math.isfinite(value) or value <= 0:
        raise ValueError(f"{name} must be a finite number > 0, got {value!r}")
    return float(value)
