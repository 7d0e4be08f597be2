"""Bad-input property tests shared by the papers' ``test_<slug>_fuzz.py`` modules.

A paper lists its public calls as :class:`Call` (a function and valid keyword arguments;
each tensor among them also gets NaN, inf, requires-grad, float16, float64, integer and
empty tensors: :func:`bad_tensors`);
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


def _is_tensor(x: Any) -> bool:
    return type(x).__module__.startswith("torch") and hasattr(x, "requires_grad")


def bad_tensors(valid: Any, *, arrays: bool = False) -> tuple[Any, ...]:
    """Bad torch values derived from a valid argument ``valid``.

    For a floating-point tensor: a copy holding NaN, one holding inf, a copy that
    requires grad, float16 and float64 copies, an integer copy and an empty slice. For
    an integer tensor: a float copy and an empty slice. With ``arrays``, for a float
    numpy array (which array-taking functions accept as array_like): the array as a
    tensor holding NaN, and as a tensor that requires grad. Anything else: nothing.
    """
    import torch

    if isinstance(valid, np.ndarray):
        if not arrays or valid.dtype.kind != "f" or not valid.size:
            return ()
        nan = torch.from_numpy(valid.copy())
        nan.view(-1)[0] = float("nan")
        return (nan, torch.tensor(valid).requires_grad_(True))
    if not isinstance(valid, torch.Tensor) or valid.numel() == 0 or valid.ndim == 0:
        return ()
    if valid.is_floating_point():
        nan, inf = valid.detach().clone(), valid.detach().clone()
        nan.view(-1)[0] = float("nan")
        inf.view(-1)[-1] = float("inf")
        return (nan, inf, valid.detach().clone().requires_grad_(True), valid.detach().half(),
                valid.detach().double(), valid.detach().long(), valid.detach()[:0])
    if valid.dtype in (torch.int32, torch.int64):
        return (valid.float(), valid[:0])
    return ()


@dataclasses.dataclass(frozen=True)
class Call:
    """A public function and valid keyword arguments; ``bad`` maps argument -> bad values.

    Every tensor in ``kwargs`` also gets :func:`bad_tensors` of its valid value, after
    the listed ones (so the indices of ``KNOWN_GAPS`` stay put); ``tensors=False`` leaves
    them out, ``array_tensors=True`` adds tensor versions of the float numpy arrays too.
    """

    fn: Callable
    kwargs: Mapping[str, Any]
    bad: Mapping[str, tuple[Any, ...]]
    allow_nonfinite: bool = False  # results that may legitimately hold inf (e.g. an SNR)
    tensors: bool = True
    array_tensors: bool = False

    def __post_init__(self) -> None:
        if not self.tensors:
            return
        bad = {k: tuple(v) for k, v in self.bad.items()}
        for arg, valid in self.kwargs.items():
            derived = bad_tensors(valid, arrays=self.array_tensors)
            if derived:
                bad[arg] = (*bad.get(arg, ()), *derived)
        object.__setattr__(self, "bad", bad)

    def __repr__(self) -> str:
        return f"Call({getattr(self.fn, '__qualname__', self.fn)})"


def with_array_tensors(calls: list[Call]) -> list[Call]:
    """``calls`` whose float numpy arguments also get tensor versions holding NaN and
    requiring grad (:func:`bad_tensors` with ``arrays=True``), after every other value."""
    out = []
    for c in calls:
        bad = dict(c.bad)
        for arg, valid in c.kwargs.items():
            if isinstance(valid, np.ndarray):
                extra = bad_tensors(valid, arrays=True)
                if extra:
                    bad[arg] = (*bad.get(arg, ()), *extra)
        out.append(dataclasses.replace(c, bad=bad, tensors=False))  # tensors: already in bad
    return out


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
    if _is_tensor(x):
        import torch

        return x.is_floating_point() and not bool(torch.isfinite(x.detach()).all())
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
    if not call.allow_nonfinite and _nonfinite(out):
        # "new": a result the valid arguments give with NaN (e.g. an undefined statistic)
        # may keep it when a bad value (a float64 copy, say) is accepted.
        with _alarm(CALL_LIMIT_S):
            baseline = call.fn(**call.kwargs)
        assert _nonfinite(baseline), f"{call!r}({arg}={value!r}) returned NaN/inf silently"
