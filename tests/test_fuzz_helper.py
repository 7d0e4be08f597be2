"""The shared bad-input helper (tests/_fuzz.py) puts NaN, inf, gradients, other dtypes and
empty tensors inside torch arguments, and sees NaN/inf inside returned tensors."""

import numpy as np
import pytest
import torch

from _fuzz import Call, bad_tensors, cases, check_bad_argument, with_array_tensors


def _silent_mean(x):
    return x.mean()  # no check: NaN in, NaN out


def _checked_mean(x):
    if not torch.is_tensor(x) or not x.is_floating_point() or x.numel() == 0:
        raise TypeError("x must be a non-empty float tensor")
    if x.dtype != torch.float32 or x.requires_grad:
        raise TypeError("x must be float32 without grad")
    if not bool(torch.isfinite(x).all()):
        raise ValueError("x must be finite")
    return x.mean()


def test_a_float_tensor_argument_gets_every_bad_tensor():
    valid = torch.ones(2, 3)
    got = bad_tensors(valid)
    assert torch.isnan(got[0]).any() and torch.isinf(got[1]).any()
    assert got[2].requires_grad and torch.equal(got[2].detach(), valid)
    assert [t.dtype for t in got[3:6]] == [torch.float16, torch.float64, torch.int64]
    assert got[6].numel() == 0
    assert not valid.requires_grad and torch.isfinite(valid).all()  # the valid one untouched
    assert [t.dtype for t in bad_tensors(torch.tensor([0, 1]))] == [torch.float32, torch.int64]
    assert bad_tensors(np.ones(3)) == () and len(bad_tensors(np.ones(3), arrays=True)) == 2


def test_calls_get_the_tensors_after_their_listed_values():
    call = Call(_silent_mean, {"x": torch.ones(3)}, {"x": (None,)})
    assert len(call.bad["x"]) == 1 + 7 and call.bad["x"][0] is None  # KNOWN_GAPS indices kept
    assert len(Call(_silent_mean, {"x": torch.ones(3)}, {}, tensors=False).bad) == 0
    arr = with_array_tensors([Call(np.mean, {"a": np.ones(3)}, {"a": (None,)})])[0]
    assert len(arr.bad["a"]) == 3 and arr.bad["a"][2].requires_grad


def test_nan_returned_inside_a_tensor_is_caught():
    call = Call(_silent_mean, {"x": torch.ones(3)}, {})
    with pytest.raises(AssertionError, match="returned NaN/inf silently"):
        check_bad_argument(call, "x", 0)  # the NaN copy
    checked = Call(_checked_mean, {"x": torch.ones(3)}, {})
    for case in cases([checked]):
        check_bad_argument(*case)  # every bad tensor refused by name


def _undefined_statistic(x):
    if not torch.is_tensor(x) or not x.is_floating_point() or x.numel() == 0:
        raise TypeError("x must be a non-empty float tensor")
    if not bool(torch.isfinite(x).all()):
        raise ValueError("x must be finite")
    return {"mean": float(x.detach().mean()), "undefined": float("nan")}


def test_nan_the_valid_arguments_give_too_is_not_new():
    call = Call(_undefined_statistic, {"x": torch.ones(3)}, {})
    check_bad_argument(call, "x", 4)  # a float64 copy: accepted, its NaN field not new
