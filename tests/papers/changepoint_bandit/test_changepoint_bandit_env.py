"""Step functions and query environments of changepoint_bandit."""

import math

import numpy as np
import pytest

from neurips26.papers.changepoint_bandit import (
    BudgetExhaustedError,
    CallableOracle,
    QueryOracle,
    StepFunction,
    as_environment,
    make_step_function,
)


def test_step_function_evaluation_and_jumps():
    f = StepFunction([0.25, 0.5], [1.0, 3.0, 2.0])
    assert f([0.0, 0.2499, 0.25, 0.49, 0.5, 1.0]).tolist() == [1, 1, 3, 3, 2, 2]
    assert f.jumps.tolist() == [2.0, -1.0]
    assert f.num_change_points == 2 and f.min_spacing == 0.25
    g = f.reflect()
    np.testing.assert_allclose(g.change_points, [0.5, 0.75])
    x = np.linspace(0.01, 0.99, 37)
    x = x[~np.isin(np.round(x, 12), [0.25, 0.5, 0.75])]
    np.testing.assert_array_equal(g(x), f(1 - x))
    h = f.affine(scale=2.0, shift=1.0)
    np.testing.assert_allclose(h.levels, [3.0, 7.0, 5.0])


@pytest.mark.parametrize(
    "cps, levels, match",
    [
        ([0.5, 0.3], [0, 1, 0], "strictly increasing"),
        ([0.3, 0.3], [0, 1, 0], "strictly increasing"),
        ([0.0], [0, 1], "inside"),
        ([1.2], [0, 1], "inside"),
        ([0.4], [1, 1], "not identifiable"),
        ([0.4], [0, 1, 2], "N \\+ 1"),
        ([], [0], "at least one"),
        ([0.4], [0, float("nan")], "finite"),
    ],
)
def test_step_function_bad_input(cps, levels, match):
    with pytest.raises(ValueError, match=match):
        StepFunction(cps, levels)


def test_query_oracle_sums_have_the_right_distribution():
    f = StepFunction([0.5], [0.0, 2.0])
    env = QueryOracle(f, sigma=1.5, seed=3)
    x = np.full(20000, 0.75)
    n = np.full(20000, 9)
    s = env.sample(x, n)
    assert env.num_queries == 180000
    assert abs(s.mean() - 18.0) < 4 * 4.5 / math.sqrt(20000)
    assert abs(s.std() / 4.5 - 1.0) < 0.03  # sd of a sum of 9 is 3 sigma
    one = env.query([0.1, 0.9])
    assert one.shape == (2,) and env.num_queries == 180002


def test_query_oracle_budget_and_bad_locations():
    env = QueryOracle(StepFunction([0.5], [0.0, 1.0]), max_queries=10)
    env.sample([0.2], [10])
    with pytest.raises(BudgetExhaustedError, match="budget exhausted"):
        env.query(0.3)
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        QueryOracle(StepFunction([0.5], [0.0, 1.0])).query(1.5)
    with pytest.raises(ValueError, match="NaN"):
        QueryOracle(StepFunction([0.5], [0.0, 1.0])).query(float("nan"))
    with pytest.raises(TypeError, match="StepFunction"):
        QueryOracle([0.5])


@pytest.mark.parametrize(
    "value, exc, match",
    [
        (float("nan"), ValueError, "finite"),
        (float("inf"), ValueError, "finite"),
        ("1.0", TypeError, "real number"),
        (None, TypeError, "real number"),
        (True, TypeError, "real number"),
    ],
)
def test_callable_oracle_rejects_non_numbers(value, exc, match):
    env = CallableOracle(lambda x: value)
    with pytest.raises(exc, match=match):
        env.sample([0.5], [1])


def test_callable_oracle_counts_and_budget():
    calls = []
    env = CallableOracle(lambda x: calls.append(x) or 2.0 * x, max_queries=5)
    np.testing.assert_allclose(env.sample([0.25, 0.5], [2, 3]), [1.0, 3.0])
    assert env.num_queries == 5 and len(calls) == 5
    with pytest.raises(BudgetExhaustedError, match="max_queries=5"):
        env.query(0.1)
    assert isinstance(as_environment(lambda x: 0.0), CallableOracle)
    with pytest.raises(TypeError, match="callable"):
        as_environment(3)


def test_make_step_function_layouts():
    for s in range(20):
        f = make_step_function(num_change_points=3, jump=0.5, layout="spread", seed=s)
        assert f.min_spacing >= 0.8 / 4 - 1e-12
        np.testing.assert_allclose(np.abs(f.jumps), 0.5)
        assert np.all(f.jumps[1:] * f.jumps[:-1] < 0)  # alternating signs
        g = make_step_function(
            num_change_points=3, jump=0.5, layout="clustered", min_spacing=0.004, seed=s
        )
        assert math.isclose(g.min_spacing, 0.004, rel_tol=1e-9)
    a = make_step_function(seed=1)
    b = make_step_function(seed=1)
    np.testing.assert_array_equal(a.change_points, b.change_points)


def test_make_step_function_bad_input():
    with pytest.raises(ValueError, match="2 \\* eta"):
        make_step_function(num_change_points=2, layout="clustered", min_spacing=0.001, eta=0.001)
    with pytest.raises(ValueError, match=">= 1"):
        make_step_function(num_change_points=0)
    with pytest.raises(ValueError, match="layout"):
        make_step_function(layout="random")
    with pytest.raises(ValueError, match="needs num_change_points"):
        make_step_function(num_change_points=1, layout="clustered")
    with pytest.raises(ValueError, match="jump"):
        make_step_function(jump=0.0)
