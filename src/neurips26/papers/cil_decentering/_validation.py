"""Input checks shared by the cil_decentering modules (messages name the argument)."""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from neurips26.common import validation as _common


def check_features(X, *, name: str = "X", dim: int | None = None) -> np.ndarray:
    """``X`` as a finite float64 array of shape (n, d), n >= 1, d >= 1 (and d == dim)."""
    if isinstance(X, (str, bytes)) or X is None:
        raise TypeError(f"{name} must be a 2-D numeric array, got {type(X).__name__}")
    if sp.issparse(X):
        raise TypeError(f"{name} is a sparse matrix: sparse input is not supported, pass "
                        f"{name}.toarray()")
    dtype = getattr(X, "dtype", None)
    if isinstance(dtype, np.dtype) and dtype.kind == "c":
        raise ValueError(f"{name}: Complex data not supported (got a complex array)")
    if getattr(X, "requires_grad", False) is True:  # np.asarray raises a RuntimeError
        raise TypeError(f"{name} is a torch tensor that requires grad; pass {name}.detach() "
                        "(features are computed in numpy, without gradients)")
    try:
        arr = np.asarray(X, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise TypeError(f"{name} must be a 2-D numeric array: {exc}") from exc
    if arr.ndim != 2:
        raise ValueError(f"{name} must be 2-D of shape (num_samples, dim), got shape {arr.shape}; "
                         f"Reshape your data with {name}.reshape(-1, 1) for one feature or "
                         f"{name}.reshape(1, -1) for one sample")
    if arr.shape[0] == 0:
        raise ValueError(f"{name} is empty: found array with 0 sample(s) (shape={arr.shape}) while "
                         "a minimum of 1 is required.")
    if arr.shape[1] == 0:
        raise ValueError(f"{name} is empty: found array with 0 feature(s) (shape={arr.shape}) "
                         "while a minimum of 1 is required.")
    if not np.all(np.isfinite(arr)):
        bad = int(np.sum(~np.isfinite(arr)))
        raise ValueError(f"{name} contains {bad} NaN or infinite entries; clean the features first")
    if dim is not None and arr.shape[1] != dim:
        raise ValueError(f"{name} has {arr.shape[1]} features but the fitted statistics/heads have "
                         f"dim {dim} (feature dimension mismatch)")
    return arr


def check_labels(y, num_samples: int, *, name: str = "y") -> np.ndarray:
    """``y`` as a 1-D integer array of length ``num_samples``."""
    if y is None or isinstance(y, (str, bytes)):
        raise TypeError(f"{name} must be a 1-D array of integer class ids, got {type(y).__name__}")
    arr = np.asarray(y)
    if arr.ndim != 1:
        raise ValueError(f"{name} must be 1-D of shape (num_samples,), got shape {arr.shape}")
    if arr.shape[0] != num_samples:
        raise ValueError(f"X and {name} have mismatched lengths: X has {num_samples} rows, "
                         f"{name} has {arr.shape[0]}")
    if arr.dtype.kind == "f":
        if not np.all(np.isfinite(arr)):
            raise ValueError(f"{name} contains NaN or infinite labels")
        if not np.all(arr == np.round(arr)):
            raise ValueError(f"{name} must hold integer class ids, got non-integer values")
        arr = arr.astype(np.int64)
    elif arr.dtype.kind not in "iu":
        raise TypeError(f"{name} must hold integer class ids, got dtype {arr.dtype}")
    return arr.astype(np.int64)


def check_positive(value, name: str, *, allow_zero: bool = False) -> float:
    """A finite float > 0 (>= 0 with ``allow_zero``)."""
    return _common.check_float(value, name, min=0.0, min_inclusive=allow_zero)


#: Largest size (dimensions, classes, tasks, permutations) the public functions accept.
MAX_SIZE = 100_000
#: Largest scale (of means, offsets, radii) accepted; larger ones overflow squared norms.
MAX_SCALE = 1e100


def check_int(value, name: str, *, min_value: int = 0, max_value: int | None = None) -> int:
    """An integer in ``[min_value, max_value]``."""
    return _common.check_int(value, name, min=min_value, max=max_value)


def check_rng(rng, name: str = "rng") -> np.random.Generator:
    """A numpy ``Generator``."""
    return _common.check_rng(rng, name)


def check_choice(value, name: str, choices: tuple) -> object:
    """``value`` if it is one of ``choices``."""
    return _common.check_choice(value, name, choices)


def check_shrinkage(shrinkage) -> object:
    """``None``, ``"ledoit_wolf"`` or a float in [0, 1]."""
    if shrinkage is None or shrinkage == "ledoit_wolf":
        return shrinkage
    if isinstance(shrinkage, str):
        raise ValueError(f"shrinkage must be None, 'ledoit_wolf' or a float in [0, 1], "
                         f"got {shrinkage!r}")
    value = check_positive(shrinkage, "shrinkage", allow_zero=True)
    if value > 1:
        raise ValueError(f"shrinkage must be in [0, 1], got {value}")
    return value
