"""Phase progress of a running experiment, shown by ``neurips26 run`` on a terminal.

An experiment marks its long parts with :func:`phase` (a named step with an optional
count) or :func:`track` (an iterable, like ``tqdm(iterable)``). Nothing is printed unless
somebody :func:`listen`\\ s: the command line does, drawing one tqdm bar per phase on
stderr; ``reproduce``'s worker processes, the tests and library users do not, so the
calls cost a function call and nothing else.

Examples
--------
>>> seen = []
>>> with listen(lambda p: seen.append((p.name, p.done, p.total))):
...     for _ in track(range(2), "seeds"):
...         pass
>>> seen
[('seeds', 0, 2), ('seeds', 1, 2), ('seeds', 2, 2), ('seeds', 2, 2)]
>>> list(track([1, 2], "quiet"))  # no listener: a plain iterator
[1, 2]
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterable, Iterator
from contextvars import ContextVar
from dataclasses import dataclass
from typing import TypeVar

from neurips26.common.validation import check_int

T = TypeVar("T")

_LISTENER: ContextVar[Callable[[Phase], None] | None] = ContextVar("neurips26_progress",
                                                                  default=None)


@dataclass
class Phase:
    """A named part of a run: ``done`` of ``total`` steps (``total`` None if unknown)."""

    name: str
    total: int | None = None
    done: int = 0
    finished: bool = False

    def advance(self, steps: int = 1) -> None:
        """Count ``steps`` more steps done and tell the listener."""
        self.done += steps
        listener = _LISTENER.get()
        if listener is not None:
            listener(self)


def listening() -> bool:
    """True when a listener is installed (e.g. to skip work that only feeds a display)."""
    return _LISTENER.get() is not None


@contextlib.contextmanager
def listen(callback: Callable[[Phase], None]) -> Iterator[None]:
    """Call ``callback(phase)`` when a phase starts, advances and ends, inside the block."""
    if not callable(callback):
        raise TypeError(f"callback must be callable, got {type(callback).__name__}")
    token = _LISTENER.set(callback)
    try:
        yield
    finally:
        _LISTENER.reset(token)


@contextlib.contextmanager
def phase(name: str, total: int | None = None) -> Iterator[Phase]:
    """A named phase of ``total`` steps; call ``.advance()`` as steps finish.

    Parameters
    ----------
    name : str
        What the run is doing ("training the teacher", "seeds").
    total : int, optional
        Number of steps, if known.
    """
    if not isinstance(name, str) or not name:
        raise TypeError(f"name must be a non-empty str, got {name!r}")
    if total is not None:
        total = check_int(total, "total", min=0)
    p = Phase(name, total)
    listener = _LISTENER.get()
    if listener is not None:
        listener(p)
    try:
        yield p
    finally:
        p.finished = True
        if listener is not None:
            listener(p)


def track(iterable: Iterable[T], name: str, total: int | None = None) -> Iterator[T]:
    """Iterate ``iterable`` as one phase, one step per item (``total`` from ``len`` if known)."""
    if total is None:
        try:
            total = len(iterable)  # type: ignore[arg-type]
        except TypeError:
            total = None
    if _LISTENER.get() is None:
        yield from iterable
        return
    with phase(name, total) as p:
        for item in iterable:
            yield item
            p.advance()
