"""Confidence bounds and the certification rule of changepoint_bandit."""

import math

import numpy as np
import pytest
import scipy.special

from neurips26.papers.changepoint_bandit import (
    certified_different,
    confidence_bounds,
    confidence_radius,
    min_samples_to_separate,
)


def test_radius_closed_form():
    # Howard et al. (2021), Theorem 1 with eta = 2, s = 1.4, m = 1, two-sided (alpha / 2)
    n = np.array([1, 10, 1000])
    r = confidence_radius(n, delta=0.01, sigma=2.0)
    k1 = (2**0.25 + 2**-0.25) / math.sqrt(2)
    c = scipy.special.zeta(1.4) / math.log(2) ** 1.4
    ell = 1.4 * np.log(np.log(2 * n)) + np.log(c / (0.01 / 2))
    np.testing.assert_allclose(r, 2.0 * k1 * np.sqrt(ell / n), rtol=1e-12)
    assert np.isinf(confidence_radius(0, delta=0.1))
    # their Eq. (11) rounds the same boundary to 1.7 sqrt(V (loglog 2V + 0.72 log(5.2/a)))
    rounded = 2.0 * 1.7 * np.sqrt((np.log(np.log(2 * n)) + 0.72 * np.log(5.2 / 0.005)) / n)
    np.testing.assert_allclose(r, rounded, rtol=0.02)


def test_stitched_radius_is_tighter_than_the_old_union_bound():
    # The landed r(n) = sigma sqrt(2 log(pi^2 n^2 / (6 delta)) / n) (a union over n, and
    # one-sided per n, so in truth a level-2 delta interval): the stitched boundary is
    # smaller from n = 10 on and, at the counts the procedures stop at (n >= 100), needs
    # over a quarter fewer samples for the same gap (the ratio of radii squared).
    n = np.arange(10, 10**5)
    old = np.sqrt(2 * np.log(math.pi**2 / 6 * n**2 / 1e-3) / n)
    new = confidence_radius(n, delta=1e-3)
    assert np.all(new < old)
    assert np.all((new[90:] / old[90:]) ** 2 < 0.75)


def test_radius_scales_with_sigma_and_shrinks_with_n():
    r1 = confidence_radius(np.arange(1, 200), delta=0.05)
    assert np.all(np.diff(r1) < 0)
    np.testing.assert_allclose(confidence_radius(50, delta=0.05, sigma=3.0), 3 * r1[49])


@pytest.mark.parametrize("delta", [0.2, 0.05])
def test_anytime_coverage_by_simulation(delta):
    # 4000 paths of 300 Gaussian samples: the interval must hold at every n on at least a
    # 1 - delta fraction of paths (the bound is anytime, not pointwise).
    rng = np.random.default_rng(0)
    paths, T = 4000, 300
    y = rng.standard_normal((paths, T)) * 1.5 + 0.7
    sums = np.cumsum(y, axis=1)
    n = np.arange(1, T + 1)
    cb = confidence_bounds(sums, np.broadcast_to(n, sums.shape), delta=delta, sigma=1.5)
    miss = np.any((cb.lower > 0.7) | (cb.upper < 0.7), axis=1)
    se = math.sqrt(delta * (1 - delta) / paths)
    assert miss.mean() <= delta + 3 * se
    # ... and it is not vacuous: a pointwise 1-sigma band would miss far more often
    assert np.any(np.abs(sums / n - 0.7) > 1.5 / np.sqrt(n), axis=1).mean() > 0.5


def test_certified_different_and_min_samples():
    n = min_samples_to_separate(1.0, delta=0.05)
    assert 2 * confidence_radius(n, delta=0.05) < 1.0 <= 2 * confidence_radius(n - 1, delta=0.05)
    a = confidence_bounds([0.0], [n], delta=0.05)
    b = confidence_bounds([float(n)], [n], delta=0.05)  # means 0 and 1
    assert certified_different(a, b).tolist() == [True]
    c = confidence_bounds([float(n - 1)], [n - 1], delta=0.05)
    d = confidence_bounds([0.0], [n - 1], delta=0.05)
    assert certified_different(c, d).tolist() == [False]


@pytest.mark.parametrize("delta", [0.0, 1.0, -0.1, 1.5, float("nan")])
def test_bad_delta(delta):
    with pytest.raises(ValueError, match="delta"):
        confidence_radius(10, delta=delta)


def test_bad_inputs():
    with pytest.raises(ValueError, match="sigma"):
        confidence_radius(10, delta=0.1, sigma=0.0)
    with pytest.raises(ValueError, match=">= 0"):
        confidence_radius(-1, delta=0.1)
    with pytest.raises(ValueError, match="same shape"):
        confidence_bounds([1.0, 2.0], [1], delta=0.1)
    with pytest.raises(ValueError, match="finite"):
        confidence_bounds([float("nan")], [1], delta=0.1)
    with pytest.raises(ValueError, match="gap"):
        min_samples_to_separate(0.0, delta=0.1)
