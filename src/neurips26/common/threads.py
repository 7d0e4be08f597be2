"""One thread limit for BLAS/OpenMP (threadpoolctl) and torch.

Multi-threaded BLAS on the small dense problems of these papers costs far more CPU time
than it saves, and several runs share the machine, so the runner runs every experiment
under :func:`limit_threads` (``run`` and ``reproduce`` alike). Library functions whose
inner loops are many small solves wrap themselves with :func:`single_threaded`, so a user
calling them directly gets the same behaviour.

Examples
--------
>>> with limit_threads(1):
...     pass
>>> @single_threaded
... def f(x):
...     return x + 1
>>> f(1)
2
"""

from __future__ import annotations

import contextlib
import functools
import sys
from collections.abc import Callable, Iterator
from typing import TypeVar

from threadpoolctl import threadpool_limits

from .validation import check_int

__all__ = ["limit_threads", "single_threaded"]

F = TypeVar("F", bound=Callable)


@contextlib.contextmanager
def limit_threads(n: int = 1) -> Iterator[None]:
    """Limit BLAS/OpenMP pools (all of them, via threadpoolctl) and torch to ``n`` threads.

    torch's intra-op pool is limited only if torch is already imported (importing it here
    would cost a second on every run of a paper that does not use it); a paper that imports
    torch inside the block still runs with one BLAS thread, and :func:`limit_threads` sets
    torch's pool when the block is entered after the import. The previous settings are
    restored on exit.

    Parameters
    ----------
    n : int
        Threads, ``>= 1``.

    Raises
    ------
    TypeError, ValueError
        ``n`` not an integer >= 1.
    """
    n = check_int(n, "n", min=1)
    torch = sys.modules.get("torch")
    old_torch = None
    if torch is not None and hasattr(torch, "get_num_threads"):
        old_torch = torch.get_num_threads()
        torch.set_num_threads(n)
    try:
        with threadpool_limits(limits=n):
            yield
    finally:
        if old_torch is not None:
            torch.set_num_threads(old_torch)


def single_threaded(func: F) -> F:
    """Decorator: run ``func`` under ``limit_threads(1)``."""

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        with limit_threads(1):
            return func(*args, **kwargs)

    return wrapper  # type: ignore[return-value]
