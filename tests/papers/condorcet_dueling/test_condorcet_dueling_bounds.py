"""Confidence sequences and the stopping rule, tested on their own."""

import math

import numpy as np
import pytest

from neurips26.papers.condorcet_dueling import (
    bernoulli_kl,
    certifies,
    confidence_bounds,
    min_certifying_samples,
    threshold,
)


def _paths(q, num_paths, length, seed):
    rng = np.random.default_rng(seed)
    x = rng.random((num_paths, length)) < q  # (P, T)
    n = np.arange(1, length + 1)  # (T,)
    return np.cumsum(x, axis=1), np.broadcast_to(n, (num_paths, length))


@pytest.mark.parametrize("bound", ["hoeffding", "kl"])
@pytest.mark.parametrize("q", [0.5, 0.8])
def test_time_uniform_coverage_by_simulation(bound, q):
    delta = 0.1
    wins, n = _paths(q, 2000, 300, seed=1)
    cb = confidence_bounds(wins, n, delta=delta, num_arms=2, bound=bound)
    covered_always = np.all((cb.lower <= q) & (q <= cb.upper), axis=1)  # (P,)
    assert covered_always.mean() >= 1 - delta


def test_coverage_test_can_fail_for_a_fixed_time_bound():
    # Negative control: a fixed-n Hoeffding interval (no union over time) at the same level
    # is violated at some time on far more than delta of the paths.
    delta, q = 0.1, 0.5
    wins, n = _paths(q, 2000, 600, seed=2)
    r = np.sqrt(math.log(2 / delta) / (2 * n))
    ok = np.all(np.abs(wins / n - q) <= r, axis=1)
    assert ok.mean() < 1 - delta


def test_hoeffding_closed_form_and_threshold():
    beta = threshold(100, delta=0.05, num_arms=10)
    assert beta == pytest.approx(math.log(4 * 100 * 100**2 / 0.05))
    cb = confidence_bounds(60, 100, delta=0.05, num_arms=10)
    assert cb.lower == pytest.approx(0.6 - math.sqrt(beta / 200))
    assert cb.upper == pytest.approx(0.6 + math.sqrt(beta / 200))


def test_kl_bound_is_tighter_and_solves_its_equation():
    wins = np.array([0, 10, 55, 80, 100])
    n = np.full(5, 100)
    h = confidence_bounds(wins, n, delta=0.05, num_arms=5, bound="hoeffding")
    k = confidence_bounds(wins, n, delta=0.05, num_arms=5, bound="kl")
    assert np.all(k.lower >= h.lower - 1e-9)
    assert np.all(k.upper <= h.upper + 1e-9)
    beta = threshold(100, delta=0.05, num_arms=5)
    inner = k.lower > 1e-6
    np.testing.assert_allclose(
        100 * bernoulli_kl(wins[inner] / 100, k.lower[inner]), beta, rtol=1e-6
    )


@pytest.mark.parametrize("bound", ["hoeffding", "kl"])
def test_stopping_rule_agrees_with_lower_bound(bound):
    n = np.arange(1, 300)
    for frac in (0.55, 0.7, 0.9, 1.0):
        wins = np.floor(frac * n).astype(int)
        lcb = confidence_bounds(wins, n, delta=0.01, num_arms=7, bound=bound).lower
        rule = certifies(wins, n, delta=0.01, num_arms=7, bound=bound)
        away = np.abs(lcb - 0.5) > 1e-7  # bisection tolerance
        np.testing.assert_array_equal(rule[away], lcb[away] > 0.5)


@pytest.mark.parametrize("bound", ["hoeffding", "kl"])
def test_min_certifying_samples(bound):
    n0 = min_certifying_samples(delta=0.05, num_arms=4, bound=bound)
    assert certifies(n0, n0, delta=0.05, num_arms=4, bound=bound)
    assert not certifies(n0 - 1, n0 - 1, delta=0.05, num_arms=4, bound=bound)


def test_no_elimination_without_majority():
    assert not certifies(50, 100, delta=0.5, num_arms=2)
    assert not certifies(0, 0, delta=0.5, num_arms=2)


@pytest.mark.parametrize("delta", [0.0, 1.0, -0.1, 1.5, float("nan")])
def test_bad_delta(delta):
    with pytest.raises(
        ValueError, match=r"delta must (lie in the open interval \(0, 1\)|be a finite number)"
    ):
        confidence_bounds(1, 2, delta=delta, num_arms=2)


def test_bad_bound_arms_counts():
    with pytest.raises(ValueError, match="unknown bound"):
        certifies(1, 2, delta=0.1, num_arms=2, bound="bernstein")
    with pytest.raises(ValueError, match="num_arms must be >= 2"):
        threshold(3, delta=0.1, num_arms=1)
    with pytest.raises(ValueError, match="0 <= wins <= n"):
        confidence_bounds(5, 3, delta=0.1, num_arms=2)
    with pytest.raises(TypeError, match="delta"):
        threshold(3, delta="0.1", num_arms=2)
