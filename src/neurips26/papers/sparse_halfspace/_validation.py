"""Input checks shared by the sparse_halfspace modules (clear messages, no I/O)."""

from __future__ import annotations

import numbers

import numpy as np


def check_matrix(X, *, name: str = "X") -> np.ndarray:
    """Return ``X`` as a finite float64 array of shape (n, d) with n, d >= 1."""
    if isinstance(X, (str, bytes)):
        raise TypeError(f"{name} must be a 2-D numeric array, got {type(X).__name__}")
    try:
        arr = np.asarray(X, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise TypeError(f"{name} must be a 2-D numeric array: {exc}") from exc
    if arr.ndim != 2:
        raise ValueError(f"{name} must be 2-D of shape (num_samples, dim), got shape {arr.shape}")
    if arr.shape[0] == 0 or arr.shape[1] == 0:
        raise ValueError(
            f"{name} is empty (shape {arr.shape}); need at least one sample and feature"
        )
    if not np.all(np.isfinite(arr)):
        bad = int(np.sum(~np.isfinite(arr)))
        raise ValueError(
            f"{name} contains {bad} NaN or infinite entries; clean or impute them first"
        )
    return arr


def check_labels(y, num_samples: int, *, allow_01: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """Return ``(y_pm, classes)``: labels mapped to {-1, +1} and the original label values.

    Labels must be in {-1, +1}; {0, 1} is accepted only with ``allow_01=True``.
    """
    arr = np.asarray(y)
    if arr.ndim != 1:
        raise ValueError(f"y must be 1-D of shape (num_samples,), got shape {arr.shape}")
    if arr.shape[0] != num_samples:
        raise ValueError(
            f"X and y have mismatched lengths: X has {num_samples} rows, y has {arr.shape[0]}"
        )
    try:
        num = arr.astype(np.float64)
    except (TypeError, ValueError) as exc:
        raise TypeError(f"y must hold numeric labels in {{-1, +1}}: {exc}") from exc
    if not np.all(np.isfinite(num)):
        raise ValueError("y contains NaN or infinite labels; labels must be -1 or +1")
    values = set(np.unique(num).tolist())
    if values <= {-1.0, 1.0}:
        return num, np.array([-1, 1])
    if values <= {0.0, 1.0}:
        if allow_01:
            return 2.0 * num - 1.0, np.array([0, 1])
        raise ValueError(
            "labels must be in {-1, +1}; got {0, 1}. Map them yourself (y = 2*y - 1) or pass "
            "allow_01_labels=True"
        )
    shown = sorted(values)[:6]
    raise ValueError(f"labels must be in {{-1, +1}}, got values {shown}")


def check_sparsity(sparsity, dim: int) -> int:
    """An integer s with 1 <= s <= dim."""
    if isinstance(sparsity, bool) or not isinstance(sparsity, numbers.Integral):
        raise TypeError(f"sparsity must be an integer, got {sparsity!r}")
    if not 1 <= int(sparsity) <= dim:
        raise ValueError(f"sparsity s must satisfy 1 <= s <= dim = {dim}, got {sparsity}")
    return int(sparsity)


def check_positive(value, name: str) -> float:
    """A finite float > 0 (Python ints too large for a float are refused)."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a number, got {value!r}")
    try:
        as_float = float(value)
    except OverflowError:
        raise ValueError(f"{name} must be a finite number > 0, got {value}") from None
    if not np.isfinite(as_float) or as_float <= 0:
        raise ValueError(f"{name} must be a finite number > 0, got {value}")
    return float(value)


def check_noise_rate(eta) -> float:
    """A noise rate eta in [0, 1/2)."""
    if isinstance(eta, bool) or not isinstance(eta, numbers.Real):
        raise TypeError(f"noise_rate must be a number, got {eta!r}")
    if not 0.0 <= float(eta) < 0.5:
        raise ValueError(
            f"noise_rate eta must be in [0, 0.5) (at eta >= 1/2 no learner can tell the clean "
            f"halfspace apart), got {eta}"
        )
    return float(eta)


def check_fraction(xi, name: str = "xi") -> float:
    """A fraction in [0, 1)."""
    if isinstance(xi, bool) or not isinstance(xi, numbers.Real):
        raise TypeError(f"{name} must be a number, got {xi!r}")
    if not 0.0 <= float(xi) < 1.0:
        raise ValueError(f"{name} must be in [0, 1), got {xi}")
    return float(xi)


def check_int(value, name: str, *, minimum: int = 0) -> int:
    """An integer >= minimum."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name} must be an integer, got {value!r}")
    if int(value) < minimum:
        raise ValueError(f"{name} must be >= {minimum}, got {value}")
    return int(value)
