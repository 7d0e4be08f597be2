"""Unit tests of the shared input checks."""

from __future__ import annotations

import numpy as np
import pytest

from neurips26.common import validation as v


@pytest.mark.parametrize(
    ("value", "exc", "text"),
    [
        (True, TypeError, "n must be an integer"),
        (2.0, TypeError, "n must be an integer"),
        ("3", TypeError, "n must be an integer"),
        (None, TypeError, "n must be an integer"),
        (-1, ValueError, "n must lie in [0, 10], got -1"),
        (11, ValueError, "n must lie in [0, 10], got 11"),
    ],
)
def test_check_int_refuses(value, exc, text):
    with pytest.raises(exc) as info:
        v.check_int(value, "n", min=0, max=10)
    assert text in str(info.value)


def test_check_int_accepts_numpy_integers():
    assert v.check_int(np.int32(4), "n", min=0) == 4
    assert type(v.check_int(np.int64(4), "n")) is int


@pytest.mark.parametrize(
    ("value", "kw", "exc", "text"),
    [
        (float("nan"), {}, ValueError, "x must be a finite number"),
        (float("inf"), {}, ValueError, "x must be a finite number"),
        (False, {}, TypeError, "x must be a real number"),
        ("1", {}, TypeError, "x must be a real number"),
        (0.0, {"min": 0, "min_inclusive": False}, ValueError, "x must be > 0"),
        (2.0, {"max": 1}, ValueError, "x must be <= 1"),
        (1.0, {"min": 0, "max": 1, "max_inclusive": False}, ValueError, "x must lie in [0, 1)"),
    ],
)
def test_check_float_refuses(value, kw, exc, text):
    with pytest.raises(exc) as info:
        v.check_float(value, "x", **kw)
    assert text in str(info.value)


def test_check_float_inf_allowed_only_when_asked():
    assert v.check_float(float("inf"), "x", allow_inf=True) == float("inf")
    with pytest.raises(ValueError, match="x must be a finite"):
        v.check_float(float("nan"), "x", allow_inf=True)


@pytest.mark.parametrize("p", [-0.2, 1.5, float("nan")])
def test_check_probability(p):
    with pytest.raises(ValueError, match="p must"):
        v.check_probability(p, "p")
    assert v.check_probability(1.0, "p") == 1.0
    with pytest.raises(ValueError, match=r"p must lie in the open interval \(0, 1\)"):
        v.check_probability(1.0, "p", open=True)


def test_check_probability_vector():
    assert v.check_probability_vector([[0.5, 0.5], [1, 0]], "P", ndim=2).shape == (2, 2)
    with pytest.raises(ValueError, match="P must be nonnegative"):
        v.check_probability_vector([1.5, -0.5], "P")
    with pytest.raises(ValueError, match="P must sum to 1"):
        v.check_probability_vector([[0.5, 0.5], [0.5, 0.4]], "P", ndim=2)
    with pytest.raises(ValueError, match="P must be finite; it contains NaN"):
        v.check_probability_vector([np.nan, 1.0], "P")


@pytest.mark.parametrize(
    ("value", "kw", "exc", "text"),
    [
        (None, {}, TypeError, "X must be an array, got None"),
        ("abc", {}, TypeError, "X must be a numeric array"),
        ([1 + 2j], {}, TypeError, "X must be a numeric array, got dtype complex128"),
        ([object()], {}, TypeError, "X must be a numeric array, got dtype object"),
        ([[1.0], [1.0, 2.0]], {}, ValueError, "X must be a rectangular numeric array"),
        ([], {}, ValueError, "X must not be empty"),
        ([np.nan], {}, ValueError, "X must be finite; it contains NaN or inf"),
        ([1.0, -np.inf], {}, ValueError, "X must be finite; it contains NaN or inf"),
        ([1.0], {"ndim": 2}, ValueError, "X must be a 2-D array, got shape (1,)"),
        ([1.0], {"ndim": (2, 3)}, ValueError, "X must be a 2-D or 3-D array"),
        ([[1.0, 2.0]], {"shape": (2, None)}, ValueError, "X must have shape (2, n1)"),
        (np.zeros(11), {"max_size": 10}, ValueError, "more than the limit of 10"),
        ([1.0, 2.0], {"min_size": 3}, ValueError, "X needs at least 3 elements"),
        ([-1.0, 2.0], {"min": 0}, ValueError, "X must be >= 0 everywhere, got values in [-1, 2]"),
        ([1.0, 2.0], {"max": 1}, ValueError, "X must be <= 1 everywhere"),
    ],
)
def test_check_array_refuses(value, kw, exc, text):
    with pytest.raises(exc) as info:
        v.check_array(value, "X", **kw)
    assert text in str(info.value)


def test_check_array_conversion_and_options():
    out = v.check_array([[1, 2], [3, 4]], "X", shape=(2, 2))
    assert out.dtype == np.float64
    ints = v.check_array([1, 2], "X", dtype=None)
    assert ints.dtype.kind == "i"
    assert np.isnan(v.check_array([np.nan], "X", finite=False)[0])
    assert v.check_array([], "X", min_size=0).size == 0
    src = np.ones(3)
    assert v.check_array(src, "X") is src
    assert v.check_array(src, "X", copy=True) is not src
    assert v.check_array(np.array([True, False]), "X").dtype == np.float64


def test_rng_and_seed():
    assert isinstance(v.check_rng(np.random.default_rng(0)), np.random.Generator)
    with pytest.raises(TypeError, match="rng must be a numpy Generator"):
        v.check_rng(np.random.RandomState(0))
    with pytest.raises(TypeError, match="gen must be a numpy Generator"):
        v.check_rng(3, "gen")
    assert v.check_seed(0) == 0
    with pytest.raises(ValueError, match="seed must lie in"):
        v.check_seed(-5)
    with pytest.raises(ValueError, match="seed must lie in"):
        v.check_seed(99999999999999999999999)
    with pytest.raises(TypeError, match="seed must be an integer"):
        v.check_seed(1.5)
    a, b = v.as_rng(5), v.as_rng(np.random.default_rng(5))
    assert a.random() == b.random()
    with pytest.raises(TypeError, match="rng must be a seed"):
        v.as_rng(None)


def test_choice_bool_callable_size_length():
    assert v.check_choice("a", "mode", ("a", "b")) == "a"
    with pytest.raises(ValueError, match="mode must be one of 'a', 'b'; got unknown mode 'c'"):
        v.check_choice("c", "mode", ("a", "b"))
    with pytest.raises(ValueError, match="mode must be one of"):
        v.check_choice(np.array([1, 2]), "mode", ("a",))
    with pytest.raises(ValueError, match="mode must be one of"):
        v.check_choice([1], "mode", ("a",))
    assert v.check_bool(False, "flag") is False
    with pytest.raises(TypeError, match="flag must be a bool"):
        v.check_bool(1, "flag")
    with pytest.raises(TypeError, match="fn must be callable"):
        v.check_callable(3, "fn")
    assert v.check_size(5, "n", limit=5) == 5
    with pytest.raises(ValueError, match=r"n asks for 1.38e\+09 partitions, more than the limit"):
        v.check_size(1.382958545e9, "n", limit=10**6, what="partitions")
    with pytest.raises(ValueError, match="n gives an undefined amount"):
        v.check_size(float("nan"), "n", limit=5)
    with pytest.raises(ValueError, match="a and b must have the same length, got 2 and 3"):
        v.check_same_length("a", [1, 2], "b", [1, 2, 3])


def test_check_array_refuses_tensors_numpy_cannot_read_naming_the_argument():
    import torch

    x = torch.ones(3, requires_grad=True)
    with pytest.raises(TypeError, match=r"^w is a torch tensor that requires grad"):
        v.check_array(x, "w")
    assert v.check_array(x.detach(), "w").tolist() == [1.0, 1.0, 1.0]
    assert v.check_array(torch.ones(2, dtype=torch.float16), "w").dtype == np.float64
    with pytest.raises(TypeError, match=r"^w must be a real"):
        v.check_array(torch.ones(2, dtype=torch.complex64), "w")
    with pytest.raises(ValueError, match=r"^w must be finite"):
        v.check_array(torch.tensor([1.0, float("nan")]), "w")


def test_check_array_refuses_a_huge_broadcast_view_before_converting_it():
    view = np.broadcast_to(np.float32(1.0), (10**6, 10**6))  # 10^12 elements, no memory
    with pytest.raises(ValueError, match=r"^x has 1000000000000 elements, more than"):
        v.check_array(view, "x")
