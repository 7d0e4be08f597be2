"""Bad-input property tests shared by the papers' ``test_<slug>_fuzz.py`` modules.

A paper lists its public calls as :class:`Call` (a function and valid keyword arguments);
:func:`check_bad_argument` replaces one argument with a bad value and asserts the contract
of issue 10: a ``ValueError`` or ``TypeError`` whose message names the argument, or a
result with no new NaN or inf; never a hang (a per-call alarm), never another exception.
"""

from __future__ import annotations

import dataclasses
import math
import re
import signal
from collections.abc import Callable, Mapping
from contextlib import contextmanager
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

#: Seconds one call may take before it counts as a hang.
CALL_LIMIT_S = 20.0

#: Bad values for an array argument (and most scalars).
BAD_ARRAYS: tuple[Any, ...] = (
    None,
    "abc",
    np.array([]),
    np.array([np.nan, 1.0, 2.0]),
    np.array([np.inf, 1.0, 2.0]),
    np.array([[[1.0]]]),
    np.array([object(), object()], dtype=object),
    np.array([-1.0, -2.0, -3.0]),
    np.array([1e308, 1e308, 1e308]),
)

#: Bad values for a scalar argument.
BAD_SCALARS: tuple[Any, ...] = (
    None,
    "abc",
    float("nan"),
    float("inf"),
    -float("inf"),
    -1,
    -1.5,
    0,
    10**30,
    1e308,
    [1.0, 2.0],
)


@dataclasses.dataclass(frozen=True)
class Call:
    """A public function and valid keyword arguments; ``bad`` maps argument -> bad values."""

    fn: Callable
    kwargs: Mapping[str, Any]
    bad: Mapping[str, tuple[Any, ...]]
    allow_nonfinite: bool = False  # results that may legitimately hold inf (e.g. an SNR)

    def __repr__(self) -> str:
        return f"Call({getattr(self.fn, '__qualname__', self.fn)})"


def key(call: Call, arg: str, index: int) -> tuple[str, str, int]:
    """``(function name, argument, index of the bad value)``: how KNOWN_GAPS name a case."""
    return (getattr(call.fn, "__name__", repr(call.fn)), arg, index)


def cases(calls: list[Call], skip=frozenset()) -> list[tuple[Call, str, int]]:
    """Every (call, argument, index of the bad value) whose :func:`key` is not in ``skip``."""
    out = [(c, arg, i) for c in calls for arg, vals in c.bad.items() for i in range(len(vals))]
    return [case for case in out if key(*case) not in skip]


def gaps(calls: list[Call], known) -> list[tuple[Call, str, int]]:
    """The cases listed in ``known`` (bad inputs not yet refused properly)."""
    return [case for case in cases(calls) if key(*case) in known]


def strategy(calls: list[Call], skip=frozenset()):
    """A hypothesis strategy over :func:`cases`."""
    return st.sampled_from(cases(calls, skip))


def fuzz_tests(calls: list[Call], known=frozenset(), **hypothesis_settings):
    """The two tests of a paper's bad-input module, for ``calls`` and its ``known`` gaps.

    ``test_bad_arguments_are_refused`` draws every case not in ``known`` (hypothesis, one
    example per case); ``test_known_gaps`` runs each known gap as a strict xfail, so fixing
    one makes the suite say to remove it from the list. Extra keywords go to hypothesis'
    ``settings`` (e.g. ``deadline=None``). In a module::

        test_bad_arguments_are_refused, test_known_gaps = fuzz_tests(CALLS, KNOWN_GAPS)
    """

    @settings(max_examples=len(cases(calls, known)), **hypothesis_settings)
    @given(strategy(calls, known))
    def test_bad_arguments_are_refused(case):
        check_bad_argument(*case)

    @pytest.mark.xfail(strict=True, reason="known gap: not yet refused well (issue 10)")
    @pytest.mark.parametrize("case", gaps(calls, known),
                             ids=lambda c: "-".join(map(str, key(*c))))
    def test_known_gaps(case):
        check_bad_argument(*case)

    return test_bad_arguments_are_refused, test_known_gaps


class Hang(Exception):
    pass


@contextmanager
def _alarm(seconds: float):
    def handler(signum, frame):
        raise Hang(f"call ran past {seconds} s")

    old = signal.signal(signal.SIGALRM, handler)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)


def _nonfinite(x: Any, depth: int = 0) -> bool:
    if depth > 4:
        return False
    if isinstance(x, bool | int | str | bytes) or x is None:
        return False
    if isinstance(x, float):
        return not math.isfinite(x)
    if isinstance(x, np.ndarray):
        return x.dtype.kind == "f" and not np.all(np.isfinite(x))
    if isinstance(x, np.floating):
        return not np.isfinite(x)
    if isinstance(x, Mapping):
        return any(_nonfinite(v, depth + 1) for v in x.values())
    if isinstance(x, tuple | list):
        return any(_nonfinite(v, depth + 1) for v in x[:50])
    if dataclasses.is_dataclass(x):
        return any(_nonfinite(getattr(x, f.name), depth + 1) for f in dataclasses.fields(x))
    return False


def check_bad_argument(call: Call, arg: str, index: int) -> None:
    """Call ``call`` with ``arg`` replaced by its ``index``-th bad value; assert the contract."""
    value = call.bad[arg][index]
    kwargs = dict(call.kwargs)
    kwargs[arg] = value
    try:
        with _alarm(CALL_LIMIT_S):
            out = call.fn(**kwargs)
    except (ValueError, TypeError) as exc:
        msg = str(exc)
        # the name as a word (so "x" is not found inside "expected")
        named = re.search(rf"(?<![A-Za-z0-9_]){re.escape(arg)}(?![A-Za-z0-9_])", msg)
        assert named, f"{call!r}({arg}={value!r}) raised {exc!r}, not naming {arg!r}"
        return
    except Hang as exc:  # pragma: no cover - a failure
        raise AssertionError(f"{call!r}({arg}={value!r}) hung") from exc
    if not call.allow_nonfinite:
        assert not _nonfinite(out), f"{call!r}({arg}={value!r}) returned NaN/inf silently"
