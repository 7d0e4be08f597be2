"""The localisation procedure of changepoint_bandit: oracles, properties, bad input."""

import dataclasses
import math
import warnings

import numpy as np
import pytest

from neurips26.papers.changepoint_bandit import (
    BudgetExhaustedError,
    CallableOracle,
    ChangePointLocalizer,
    LocalizationResult,
    QueryOracle,
    StepFunction,
    localize_change_points,
    localize_in_cells,
    make_step_function,
    noisy_binary_search,
    num_halvings,
)

F2 = StepFunction([0.3, 0.7], [0.0, 1.0, 0.0])


def test_result_api_and_shapes():
    res = localize_change_points(QueryOracle(F2, seed=0), num_change_points=2, eta=0.01)
    assert isinstance(res, LocalizationResult)
    assert res.estimates.shape == (2,) and res.intervals.shape == (2, 2)
    assert res.per_change.shape == (2,) and res.certified_cells.shape == (2, 2)
    assert res.success is True and res.correct(F2.change_points, 0.01)
    assert res.num_queries == (
        res.detection_queries + res.localization_queries + res.verification_queries
    )
    assert np.all(res.intervals[:, 1] - res.intervals[:, 0] <= 0.02 + 1e-12)
    assert np.all(
        (res.intervals[:, 0] < F2.change_points) & (F2.change_points <= res.intervals[:, 1])
    )
    with pytest.raises(dataclasses.FrozenInstanceError):
        res.num_queries = 0  # frozen


def test_num_halvings_closed_form():
    w = np.array([1.0, 0.5, 0.25, 0.3, 0.002, 0.0021])
    expected = [math.ceil(math.log2(x / 0.002)) if x > 0.002 else 0 for x in w]
    assert num_halvings(w, 1e-3).tolist() == expected


def test_binary_search_n1_halvings_and_error_rate():
    # N = 1, a known cell: 2000 independent searches (lockstep cells), each with error
    # budget delta; halvings exactly ceil(log2(width / (2 eta))).
    f = StepFunction([0.4137], [0.0, 0.5])
    M, delta = 2000, 0.1
    cells = np.tile([0.25, 0.5], (M, 1))
    r = noisy_binary_search(
        QueryOracle(f, seed=1),
        cells=cells,
        levels=np.tile([0.0, 0.5], (M, 1)),
        eta=1e-3,
        delta=delta,
    )
    assert np.all(r.num_halvings == math.ceil(math.log2(0.25 / 2e-3)))
    err = np.mean(np.abs(r.estimates - 0.4137) > 1e-3)
    assert err <= delta + 3 * math.sqrt(delta * (1 - delta) / M)
    # the budget matters: a much smaller delta makes errors rarer but costs more
    r2 = noisy_binary_search(
        QueryOracle(f, seed=2),
        cells=cells[:200],
        levels=np.tile([0.0, 0.5], (200, 1)),
        eta=1e-3,
        delta=1e-6,
    )
    assert r2.num_queries.mean() > 2 * r.num_queries.mean()


def test_noise_free_minimum_locations():
    # sigma -> 0: level 1 (3 points) certifies both cells; each cell of width 1/2 is halved
    # ceil(log2(0.5 / 0.002)) = 8 times, one new location per halving.
    f = StepFunction([0.3, 0.7], [0.0, 1.0, 0.0])
    res = localize_change_points(
        QueryOracle(f, sigma=1e-12), num_change_points=2, eta=1e-3, sigma=1e-12
    )
    assert res.detection_level == 1
    assert res.num_locations == 3 + 2 * 8
    assert np.all(np.abs(res.estimates - f.change_points) <= 1e-3)
    assert res.localization_queries == 2 * 8  # one sample per midpoint


def test_determinism_under_seed():
    f = make_step_function(num_change_points=3, jump=0.5, seed=4)
    a = localize_change_points(QueryOracle(f, seed=9), num_change_points=3, eta=1e-3)
    b = localize_change_points(QueryOracle(f, seed=9), num_change_points=3, eta=1e-3)
    np.testing.assert_array_equal(a.estimates, b.estimates)
    assert a.num_queries == b.num_queries
    c = localize_change_points(QueryOracle(f, seed=10), num_change_points=3, eta=1e-3)
    assert c.num_queries != a.num_queries


def test_invariance_shift_scale():
    f = make_step_function(num_change_points=2, jump=0.5, seed=1)
    base = localize_change_points(QueryOracle(f, seed=3), num_change_points=2, eta=1e-3)
    shifted = localize_change_points(
        QueryOracle(f.affine(shift=0.5), seed=3), num_change_points=2, eta=1e-3
    )
    scaled = localize_change_points(
        QueryOracle(f.affine(scale=4.0), sigma=4.0, seed=3),
        num_change_points=2,
        eta=1e-3,
        sigma=4.0,
    )
    for other in (shifted, scaled):
        assert other.num_queries == base.num_queries
        np.testing.assert_array_equal(other.estimates, base.estimates)


def test_reflection_reflects_estimates():
    f = StepFunction([0.3141, 0.7777], [0.0, 1.0, 0.0])
    kw = dict(num_change_points=2, eta=1e-3, sigma=1e-9)
    a = localize_change_points(QueryOracle(f, sigma=1e-9), **kw)
    b = localize_change_points(QueryOracle(f.reflect(), sigma=1e-9), **kw)
    np.testing.assert_allclose(np.sort(1 - a.estimates), b.estimates, atol=2e-3)
    assert a.num_queries == b.num_queries


@pytest.mark.parametrize("layout", ["spread", "clustered"])
def test_correct_on_noisy_instances(layout):
    for s in range(5):
        f = make_step_function(
            num_change_points=3, jump=1.0, layout=layout, min_spacing=0.02, seed=s
        )
        res = localize_change_points(QueryOracle(f, seed=s), num_change_points=3, eta=1e-3)
        assert res.success and res.correct(f.change_points, 1e-3)


def test_clustered_costs_more_at_moderate_delta():
    q = {}
    for layout in ("spread", "clustered"):
        q[layout] = np.median(
            [
                localize_change_points(
                    QueryOracle(
                        make_step_function(
                            num_change_points=3, jump=1.0, layout=layout, min_spacing=0.005, seed=s
                        ),
                        seed=s,
                    ),
                    num_change_points=3,
                    eta=1e-3,
                    delta=0.1,
                ).num_queries
                for s in range(5)
            ]
        )
    assert q["clustered"] > 1.5 * q["spread"]


def test_localize_in_cells_and_callable_environment():
    rng = np.random.default_rng(0)
    env = CallableOracle(lambda x: float(x >= 0.62) * 3.0 + rng.normal(0, 0.5), max_queries=10**6)
    res = localize_in_cells(env, cells=[[0.5, 0.75]], eta=0.01, sigma=0.5)
    assert abs(res.estimates[0] - 0.62) <= 0.01 and res.success
    assert res.num_queries == env.num_queries
    # a bare callable works too
    res2 = localize_change_points(
        lambda x: float(x >= 0.62) * 3.0 + rng.normal(0, 0.5),
        num_change_points=1,
        eta=0.01,
        sigma=0.5,
    )
    assert abs(res2.estimates[0] - 0.62) <= 0.01


class _LuckyFirstDraw:
    """A Gaussian oracle whose first draw at ``x_bad`` is shifted by ``shift``."""

    def __init__(self, f, x_bad, shift, seed=0):
        self.inner = QueryOracle(f, seed=seed)
        self.x_bad, self.shift, self.hit = x_bad, shift, False

    @property
    def num_queries(self):
        return self.inner.num_queries

    def sample(self, x, n):
        out = self.inner.sample(x, n)
        at = (np.asarray(x) == self.x_bad) & (np.asarray(n) > 0)
        if not self.hit and at.any():
            out[np.flatnonzero(at)[0]] += self.shift
            self.hit = True
        return out


def test_localize_in_cells_recovers_from_a_wrong_level_estimate():
    # One extreme first draw at the cell's left end certifies the two ends different at
    # once with a left level far below the truth; the search then halves towards the
    # wrong end and verification fails. A restart must re-estimate the levels (it used to
    # keep the wrong ones and loop until the budget ran out).
    f = StepFunction([0.49], [-0.5, 0.0])
    env = _LuckyFirstDraw(f, x_bad=0.25, shift=-6.0)
    res = localize_in_cells(env, cells=[[0.25, 0.5]], eta=0.01, delta=0.01, max_queries=10**6)
    assert res.success and res.correct(f.change_points, 0.01)
    assert res.num_restarts >= 1 and res.num_queries < 10**5


def test_estimator_wrapper():
    loc = ChangePointLocalizer(num_change_points=2, eta=0.01).fit(QueryOracle(F2, seed=0))
    assert loc.change_points_.shape == (2,) and loc.intervals_.shape == (2, 2)
    assert loc.num_queries_ == loc.result_.num_queries


@pytest.mark.parametrize(
    "kwargs, exc, match",
    [
        ({"delta": 0.0}, ValueError, "delta"),
        ({"delta": 1.0}, ValueError, "delta"),
        ({"eta": 0.0}, ValueError, "eta"),
        ({"eta": -1e-3}, ValueError, "eta"),
        ({"eta": 0.5}, ValueError, "eta"),
        ({"num_change_points": 0}, ValueError, "num_change_points"),
        ({"num_change_points": 1.5}, TypeError, "num_change_points"),
        ({"sigma": 0.0}, ValueError, "sigma"),
        ({"max_queries": 0}, ValueError, "max_queries"),
        ({"on_budget": "ignore"}, ValueError, "on_budget"),
    ],
)
def test_bad_hyperparameters(kwargs, exc, match):
    args = {"num_change_points": 2, "eta": 1e-3, "delta": 0.05}
    args.update(kwargs)
    with pytest.raises(exc, match=match):
        localize_change_points(QueryOracle(F2), **args)


def test_bad_environment_output():
    with pytest.raises(ValueError, match="finite"):
        localize_change_points(lambda x: float("nan"), num_change_points=1, eta=0.01)
    with pytest.raises(TypeError, match="real number"):
        localize_change_points(lambda x: "zero", num_change_points=1, eta=0.01)


def test_budget_exhausted_raises_or_warns():
    f = make_step_function(num_change_points=2, jump=0.25, seed=0)
    with pytest.raises(BudgetExhaustedError, match="budget exhausted") as info:
        localize_change_points(QueryOracle(f), num_change_points=2, max_queries=500)
    assert info.value.result.success is None and info.value.result.num_queries <= 500
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        res = localize_change_points(
            QueryOracle(f), num_change_points=2, max_queries=500, on_budget="warn"
        )
    assert res.success is None and np.all(np.isnan(res.estimates))
    assert any("budget" in str(x.message) for x in w)
    # an environment with its own budget is handled the same way
    with pytest.raises(BudgetExhaustedError, match="environment's own budget"):
        localize_change_points(QueryOracle(f, max_queries=300), num_change_points=2)


def test_bad_cells():
    with pytest.raises(ValueError, match="overlap"):
        localize_in_cells(QueryOracle(F2), cells=[[0.2, 0.5], [0.4, 0.8]])
    with pytest.raises(ValueError, match="a_k < b_k"):
        localize_in_cells(QueryOracle(F2), cells=[[0.5, 0.2]])
    with pytest.raises(ValueError, match="v_L != v_R"):
        noisy_binary_search(QueryOracle(F2), cells=[[0.2, 0.5]], levels=[[1.0, 1.0]])
