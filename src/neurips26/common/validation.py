"""Input checks shared by every paper: one way to refuse bad input.

Every check takes the value first and the argument's name second, returns the value
converted to its canonical type (``int``, ``float``, ``numpy.ndarray``, ...) and raises

* :class:`TypeError` when the value has the wrong kind (a string where a number is
  expected, a bool where an integer is expected, an object array, ``None``), and
* :class:`ValueError` when the kind is right but the value is not (out of range, NaN,
  wrong shape, empty, too large to finish).

The message always starts with the argument's name and says what was expected and what
was got, e.g. ``"delta must lie in (0, 1), got 1.5"``. Size limits name the limit, so a
user who really wants a larger problem knows which knob refuses it.

Examples
--------
>>> check_int(3, "num_arms", min=2)
3
>>> check_int(1, "num_arms", min=2)
Traceback (most recent call last):
...
ValueError: num_arms must be >= 2, got 1
>>> check_array([[1, 2], [3, 4]], "X", ndim=2).dtype
dtype('float64')
>>> check_probability(1.5, "delta")
Traceback (most recent call last):
...
ValueError: delta must lie in [0, 1], got 1.5
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Callable, Iterable, Sequence
from typing import Any

import numpy as np

__all__ = [
    "MAX_ELEMENTS",
    "as_rng",
    "check_array",
    "check_bool",
    "check_callable",
    "check_choice",
    "check_float",
    "check_int",
    "check_probability",
    "check_probability_vector",
    "check_rng",
    "check_same_length",
    "check_seed",
    "check_size",
]

#: Default upper bound on the number of elements of an array argument (10^9 doubles is 8 GB).
MAX_ELEMENTS = 10**9

#: Largest seed accepted: what a signed 64-bit integer (the store's column) can hold.
MAX_SEED = 2**63 - 1


def _type_name(value: Any) -> str:
    return type(value).__name__


def _fmt(v) -> str:
    return str(v) if isinstance(v, numbers.Integral) else f"{float(v):g}"


def _range_text(min, max, min_inclusive: bool, max_inclusive: bool) -> str:
    if min is not None and max is not None:
        lo = "[" if min_inclusive else "("
        hi = "]" if max_inclusive else ")"
        kind = "the open interval " if not (min_inclusive or max_inclusive) else ""
        return f"lie in {kind}{lo}{_fmt(min)}, {_fmt(max)}{hi}"
    if min is not None:
        return f"be {'>=' if min_inclusive else '>'} {_fmt(min)}"
    return f"be {'<=' if max_inclusive else '<'} {_fmt(max)}"


def _check_range(value, name, min, max, min_inclusive, max_inclusive) -> None:
    bad_lo = min is not None and (value < min if min_inclusive else value <= min)
    bad_hi = max is not None and (value > max if max_inclusive else value >= max)
    if bad_lo or bad_hi:
        text = _range_text(min, max, min_inclusive, max_inclusive)
        raise ValueError(f"{name} must {text}, got {value!r}")


def check_int(
    value: Any,
    name: str,
    *,
    min: int | None = None,
    max: int | None = None,
) -> int:
    """An integer (not a bool, not a float) in ``[min, max]``.

    Parameters
    ----------
    value : int
        Python or numpy integer. Floats, even integral ones, are refused (``TypeError``).
    name : str
        The argument's name, used in the message.
    min, max : int or None
        Inclusive bounds (``None``: unbounded).

    Returns
    -------
    int

    Examples
    --------
    >>> check_int(np.int64(5), "n", min=0, max=10)
    5
    >>> check_int(2.0, "n")
    Traceback (most recent call last):
    ...
    TypeError: n must be an integer, got float 2.0
    """
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name} must be an integer, got {_type_name(value)} {value!r}")
    value = int(value)
    _check_range(value, name, min, max, True, True)
    return value


def check_float(
    value: Any,
    name: str,
    *,
    min: float | None = None,
    max: float | None = None,
    min_inclusive: bool = True,
    max_inclusive: bool = True,
    allow_inf: bool = False,
) -> float:
    """A real number (int or float, not a bool), finite unless ``allow_inf``, in range.

    Parameters
    ----------
    value : float
    name : str
    min, max : float or None
        Bounds; ``min_inclusive`` / ``max_inclusive`` choose ``[`` or ``(``.
    allow_inf : bool
        Accept ``+-inf`` (NaN is always refused).

    Returns
    -------
    float

    Examples
    --------
    >>> check_float(0.5, "sigma", min=0, min_inclusive=False)
    0.5
    >>> check_float(float("nan"), "sigma")
    Traceback (most recent call last):
    ...
    ValueError: sigma must be a finite number, got nan
    >>> check_float(0, "sigma", min=0, min_inclusive=False)
    Traceback (most recent call last):
    ...
    ValueError: sigma must be > 0, got 0.0
    """
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a real number, got {_type_name(value)} {value!r}")
    value = float(value)
    if math.isnan(value) or (math.isinf(value) and not allow_inf):
        raise ValueError(f"{name} must be a finite number, got {value!r}")
    _check_range(value, name, min, max, min_inclusive, max_inclusive)
    return value


def check_probability(value: Any, name: str, *, open: bool = False) -> float:
    """A probability: a real number in ``[0, 1]`` (``(0, 1)`` with ``open=True``).

    Examples
    --------
    >>> check_probability(0.05, "alpha", open=True)
    0.05
    >>> check_probability(0, "alpha", open=True)
    Traceback (most recent call last):
    ...
    ValueError: alpha must lie in the open interval (0, 1), got 0.0
    """
    return check_float(value, name, min=0, max=1, min_inclusive=not open, max_inclusive=not open)


def check_bool(value: Any, name: str) -> bool:
    """A bool (Python or numpy); ``0``/``1`` and strings are refused.

    Examples
    --------
    >>> check_bool(np.True_, "dense")
    True
    """
    if not isinstance(value, (bool, np.bool_)):
        raise TypeError(f"{name} must be a bool, got {_type_name(value)} {value!r}")
    return bool(value)


def check_choice(value: Any, name: str, choices: Iterable[Any]) -> Any:
    """One of ``choices`` (compared with ``==``; unhashable values are refused too).

    Examples
    --------
    >>> check_choice("kl", "bound", ("hoeffding", "kl"))
    'kl'
    >>> check_choice("x", "bound", ("hoeffding", "kl"))
    Traceback (most recent call last):
    ...
    ValueError: bound must be one of 'hoeffding', 'kl'; got unknown bound 'x'
    """
    choices = tuple(choices)
    try:
        ok = bool(value in choices)
    except (TypeError, ValueError):  # arrays, unhashables with odd __eq__
        ok = False
    if not ok:
        valid = ", ".join(repr(c) for c in choices)
        raise ValueError(f"{name} must be one of {valid}; got unknown {name} {value!r}")
    return value


def check_callable(value: Any, name: str) -> Callable:
    """A callable."""
    if not callable(value):
        raise TypeError(f"{name} must be callable, got {_type_name(value)} {value!r}")
    return value


def check_seed(value: Any, name: str = "seed") -> int:
    """A seed for ``np.random.default_rng``: an integer in ``[0, 2**63 - 1]``.

    Examples
    --------
    >>> check_seed(7)
    7
    >>> check_seed(-1)
    Traceback (most recent call last):
    ...
    ValueError: seed must lie in [0, 9223372036854775807], got -1
    """
    return check_int(value, name, min=0, max=MAX_SEED)


def check_rng(value: Any, name: str = "rng") -> np.random.Generator:
    """A ``numpy.random.Generator`` (not a seed, not the legacy ``RandomState``).

    Examples
    --------
    >>> check_rng(np.random.default_rng(0)).__class__.__name__
    'Generator'
    >>> check_rng(0)
    Traceback (most recent call last):
    ...
    TypeError: rng must be a numpy Generator (np.random.default_rng(seed)), got int
    """
    if not isinstance(value, np.random.Generator):
        raise TypeError(
            f"{name} must be a numpy Generator (np.random.default_rng(seed)), "
            f"got {_type_name(value)}"
        )
    return value


def as_rng(value: Any, name: str = "rng") -> np.random.Generator:
    """A Generator from a Generator or a seed (``None`` is refused: runs must be seeded).

    Examples
    --------
    >>> int(as_rng(3).integers(10)) == int(np.random.default_rng(3).integers(10))
    True
    """
    if isinstance(value, np.random.Generator):
        return value
    if isinstance(value, numbers.Integral) and not isinstance(value, (bool, np.bool_)):
        return np.random.default_rng(check_seed(value, name))
    raise TypeError(
        f"{name} must be a seed (int >= 0) or a numpy Generator, got {_type_name(value)}"
    )


def check_size(count: Any, name: str, *, limit: int, what: str = "elements") -> int:
    """Refuse work that cannot finish: ``count`` (an int or float) must be ``<= limit``.

    Parameters
    ----------
    count : int or float
        The amount of work or memory the call would need (may be a float estimate, e.g.
        a Bell number computed in floating point).
    name : str
        The argument that drives it.
    limit : int
        The largest accepted amount; named in the message.
    what : str
        The unit of ``count`` (``"elements"``, ``"partitions"``, ...).

    Examples
    --------
    >>> check_size(10, "num_bootstrap", limit=100)
    10
    >>> check_size(10**9, "num_bootstrap", limit=10**6, what="resamples")
    Traceback (most recent call last):
    ...
    ValueError: num_bootstrap asks for 1000000000 resamples, more than the limit of 1000000
    """
    if isinstance(count, float) and math.isnan(count):
        raise ValueError(f"{name} gives an undefined amount of {what} (NaN)")
    if count > limit:
        shown = count if isinstance(count, numbers.Integral) else f"{float(count):.3g}"
        raise ValueError(f"{name} asks for {shown} {what}, more than the limit of {limit}")
    return int(count) if not isinstance(count, float) or math.isfinite(count) else count


def check_array(
    value: Any,
    name: str,
    *,
    ndim: int | Sequence[int] | None = None,
    shape: Sequence[int | None] | None = None,
    dtype: type | str | None = float,
    finite: bool = True,
    min_size: int = 1,
    max_size: int = MAX_ELEMENTS,
    min: float | None = None,
    max: float | None = None,
    copy: bool = False,
) -> np.ndarray:
    """A numeric array of the expected shape, finite and non-empty by default.

    Parameters
    ----------
    value : array_like
        Anything ``np.asarray`` turns into a numeric (bool, int or float) array.
        ``None``, strings, objects, complex numbers and ragged lists are refused
        (``TypeError``, or ``ValueError`` for ragged lists).
    name : str
        The argument's name.
    ndim : int or sequence of int or None
        Accepted numbers of dimensions.
    shape : sequence of (int or None) or None
        Expected shape; ``None`` entries match any length. Implies ``ndim``.
    dtype : type or str or None
        Convert to this dtype (default ``float``); ``None`` keeps the numeric dtype.
    finite : bool
        Refuse NaN and inf (default).
    min_size : int
        Fewest elements accepted (default 1: refuse empty arrays).
    max_size : int
        Most elements accepted (default :data:`MAX_ELEMENTS`).
    min, max : float or None
        Inclusive bounds every element must satisfy.
    copy : bool
        Return a copy even when no conversion was needed.

    Returns
    -------
    numpy.ndarray

    Examples
    --------
    >>> check_array([1.0, 2.0], "x", shape=(2,)).tolist()
    [1.0, 2.0]
    >>> check_array([1.0, float("inf")], "x")
    Traceback (most recent call last):
    ...
    ValueError: x must be finite; it contains NaN or inf (1 of 2 entries)
    >>> check_array([[1.0, 2.0]], "x", shape=(None, 3))
    Traceback (most recent call last):
    ...
    ValueError: x must have shape (n0, 3), got (1, 2)
    >>> check_array("abc", "x")
    Traceback (most recent call last):
    ...
    TypeError: x must be a numeric array, got str
    """
    if value is None:
        raise TypeError(f"{name} must be an array, got None")
    if isinstance(value, (str, bytes)):
        raise TypeError(f"{name} must be a numeric array, got {_type_name(value)}")
    if _is_tensor(value):
        _check_tensor_for_numpy(value, name, max_size)
    # Sizes first: a broadcast view of 10^12 elements costs nothing until it is converted.
    size = getattr(value, "size", None)
    if isinstance(size, numbers.Integral) and size > max_size:
        raise ValueError(f"{name} has {size} elements, more than the limit of {max_size}")
    try:
        arr = np.asarray(value)
    except (ValueError, TypeError, RuntimeError) as exc:  # ragged lists, odd objects
        raise ValueError(f"{name} must be a rectangular numeric array ({exc})") from None
    if arr.dtype.kind not in "biuf":
        raise TypeError(f"{name} must be a numeric array, got dtype {arr.dtype}")
    if arr.size > max_size:
        raise ValueError(
            f"{name} has {arr.size} elements, more than the limit of {max_size}"
        )
    if dtype is not None:
        arr = arr.astype(dtype, copy=copy)
    elif copy:
        arr = arr.copy()
    if shape is not None:
        shape = tuple(shape)
        ok = arr.ndim == len(shape) and all(
            s is None or int(s) == a for s, a in zip(shape, arr.shape, strict=False)
        )
        if not ok:
            want = ", ".join(f"n{i}" if s is None else str(s) for i, s in enumerate(shape))
            want = f"({want},)" if len(shape) == 1 else f"({want})"
            raise ValueError(f"{name} must have shape {want}, got {arr.shape}")
    elif ndim is not None:
        dims = (ndim,) if isinstance(ndim, numbers.Integral) else tuple(ndim)
        if arr.ndim not in dims:
            want = " or ".join(f"{d}-D" for d in dims)
            raise ValueError(f"{name} must be a {want} array, got shape {arr.shape}")
    if arr.size < min_size:
        if min_size == 1:
            raise ValueError(f"{name} must not be empty, got shape {arr.shape}")
        raise ValueError(f"{name} needs at least {min_size} elements, got {arr.size}")
    if arr.size > max_size:
        raise ValueError(
            f"{name} has {arr.size} elements, more than the limit of {max_size}"
        )
    if finite and arr.dtype.kind == "f":
        bad = ~np.isfinite(arr)
        if bad.any():
            raise ValueError(
                f"{name} must be finite; it contains NaN or inf ({int(bad.sum())} of "
                f"{arr.size} entries)"
            )
    if (min is not None or max is not None) and arr.size:
        lo, hi = np.nanmin(arr), np.nanmax(arr)
        if (min is not None and lo < min) or (max is not None and hi > max):
            text = _range_text(min, max, True, True)
            raise ValueError(f"{name} must {text} everywhere, got values in [{lo:g}, {hi:g}]")
    return arr


def _is_tensor(value: Any) -> bool:
    """Whether ``value`` is a torch tensor (without importing torch)."""
    return type(value).__module__.startswith("torch") and hasattr(value, "requires_grad")


def _check_tensor_for_numpy(value: Any, name: str, max_size: int) -> None:
    """Refuse a tensor that numpy cannot read as it is, naming the argument."""
    if value.requires_grad:
        raise TypeError(
            f"{name} is a torch tensor that requires grad; pass {name}.detach() (this "
            "function computes in numpy and would not propagate gradients)"
        )
    if value.numel() > max_size:
        raise ValueError(f"{name} has {value.numel()} elements, more than the limit of "
                         f"{max_size}")
    if value.device.type != "cpu":
        raise TypeError(f"{name} is a torch tensor on {value.device}; pass {name}.cpu()")
    if value.is_complex():
        raise TypeError(f"{name} must be a real numeric array, got dtype {value.dtype}")


def check_probability_vector(
    value: Any, name: str, *, axis: int = -1, ndim: int | Sequence[int] = 1, atol: float = 1e-8
) -> np.ndarray:
    """Non-negative entries that sum to 1 along ``axis`` (within ``atol``).

    Examples
    --------
    >>> check_probability_vector([0.25, 0.75], "p").tolist()
    [0.25, 0.75]
    >>> check_probability_vector([0.5, 0.6], "p")
    Traceback (most recent call last):
    ...
    ValueError: p must sum to 1 (within 1e-08), got a sum of 1.1
    """
    arr = check_array(value, name, ndim=ndim)
    if np.any(arr < 0):
        raise ValueError(f"{name} must be nonnegative, got a minimum of {float(arr.min())!r}")
    sums = arr.sum(axis=axis)
    worst = np.max(np.abs(sums - 1.0))
    if worst > atol:
        shown = float(np.ravel(sums)[np.argmax(np.abs(np.ravel(sums) - 1.0))])
        raise ValueError(f"{name} must sum to 1 (within {atol:g}), got a sum of {shown:.6g}")
    return arr


def check_same_length(name_a: str, a: Any, name_b: str, b: Any) -> int:
    """``len(a) == len(b)``; returns the common length.

    Examples
    --------
    >>> check_same_length("x", [1, 2], "y", [3])
    Traceback (most recent call last):
    ...
    ValueError: x and y must have the same length, got 2 and 1
    """
    la, lb = len(a), len(b)
    if la != lb:
        raise ValueError(f"{name_a} and {name_b} must have the same length, got {la} and {lb}")
    return la
