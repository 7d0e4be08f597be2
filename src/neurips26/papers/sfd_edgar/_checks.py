"""Argument checks shared by the public functions of sfd_edgar (messages name the argument)."""

from __future__ import annotations

import math
from typing import Any


def check_choice(name: str, value: Any, choices: tuple[str, ...]) -> str:
    """``value`` if it is one of ``choices``; else a ValueError naming ``name``."""
    if not isinstance(value, str):
        raise TypeError(f"{name} must be a str, got {type(value).__name__}")
    if value not in choices:
        raise ValueError(f"{name} must be one of {choices}, got {value!r}")
    return value


def check_int(name: str, value: Any, *, lo: int | None = None, hi: int | None = None) -> int:
    """``value`` if it is an int (not bool) within ``[lo, hi]``."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{name} must be an int, got {type(value).__name__}")
    if lo is not None and value < lo:
        raise ValueError(f"{name} must be >= {lo}, got {value}")
    if hi is not None and value > hi:
        raise ValueError(f"{name} must be <= {hi}, got {value}")
    return value


def check_float(name: str, value: Any, *, lo: float, hi: float) -> float:
    """``value`` as a float if it is a finite real within ``[lo, hi]``."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f"{name} must be a number, got {type(value).__name__}")
    value = float(value)
    if math.isnan(value) or not lo <= value <= hi:
        raise ValueError(f"{name} must lie in [{lo}, {hi}], got {value}")
    return value


def check_bool(name: str, value: Any) -> bool:
    if not isinstance(value, bool):
        raise TypeError(f"{name} must be a bool, got {type(value).__name__}")
    return value


def check_grids(name: str, value: Any) -> list:
    """``value`` as a list if it is a list or tuple of ``TableGrid``."""
    from .tables import TableGrid

    if not isinstance(value, (list, tuple)):
        raise TypeError(f"{name} must be a list of TableGrid, got {type(value).__name__}")
    for i, g in enumerate(value):
        if not isinstance(g, TableGrid):
            raise TypeError(f"{name}[{i}] must be a TableGrid, got {type(g).__name__}")
    return list(value)


def check_grid(name: str, value: Any):
    """``value`` if it is a ``TableGrid``."""
    from .tables import TableGrid

    if not isinstance(value, TableGrid):
        raise TypeError(f"{name} must be a TableGrid, got {type(value).__name__}")
    return value


def check_text(name: str, value: Any) -> str:
    """``value`` if it is a str."""
    if not isinstance(value, str):
        raise TypeError(f"{name} must be a str, got {type(value).__name__}")
    return value
