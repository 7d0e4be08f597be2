"""Input checks shared by every public function of the paper (one place, one wording)."""

from __future__ import annotations

import math
from numbers import Integral, Real

import numpy as np


def check_int(name: str, value, *, min_value: int | None = None,
              max_value: int | None = None) -> int:
    """An integer (not a bool) in ``[min_value, max_value]``."""
    if isinstance(value, bool) or not isinstance(value, Integral):
        raise TypeError(f"{name} must be an integer, got {value!r}")
    value = int(value)
    if min_value is not None and value < min_value:
        raise ValueError(f"{name} must be >= {min_value}, got {value}")
    if max_value is not None and value > max_value:
        raise ValueError(f"{name} must be <= {max_value}, got {value}")
    return value


#: Longest schedule accepted (steps); a longer one cannot be laid out in memory here.
MAX_STEPS = 10**8
#: Largest learning rate accepted (far above any real one; keeps the schedule finite).
MAX_LR = 1e6


def check_real(
    name: str,
    value,
    *,
    low: float | None = None,
    high: float | None = None,
    low_open: bool = False,
    high_open: bool = False,
) -> float:
    """A finite real number in the interval given by ``low``/``high`` (open or closed ends)."""
    if isinstance(value, bool) or not isinstance(value, Real):
        raise TypeError(f"{name} must be a real number, got {value!r}")
    value = float(value)
    if not math.isfinite(value):
        raise ValueError(f"{name} must be finite, got {value}")
    left = "(" if low_open else "["
    right = ")" if high_open else "]"
    lo_txt = "-inf" if low is None else f"{low:g}"
    hi_txt = "inf" if high is None else f"{high:g}"
    interval = f"{left}{lo_txt}, {hi_txt}{right}"
    if low is not None and (value < low or (low_open and value == low)):
        raise ValueError(f"{name} must lie in {interval}, got {value:g}")
    if high is not None and (value > high or (high_open and value == high)):
        raise ValueError(f"{name} must lie in {interval}, got {value:g}")
    return value


def check_array(name: str, value, *, ndim: int = 1, min_len: int = 1) -> np.ndarray:
    """A finite float array with ``ndim`` dimensions and at least ``min_len`` entries."""
    try:
        arr = np.asarray(value, dtype=float)
    except (TypeError, ValueError) as err:
        raise TypeError(f"{name} must be numeric, got {type(value).__name__}") from err
    if arr.ndim != ndim:
        raise ValueError(f"{name} must be {ndim}-D, got shape {arr.shape}")
    if arr.shape[0] < min_len:
        raise ValueError(f"{name} must have at least {min_len} entries, got {arr.shape[0]}")
    bad = ~np.isfinite(arr)
    if bad.any():
        first = int(np.argwhere(bad)[0][0])
        raise ValueError(f"{name} has a non-finite value (NaN or inf) at index {first}")
    return arr
