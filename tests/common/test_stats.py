"""Tests of the shared statistics against closed forms and scipy/statsmodels."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats as sps

from neurips26.common.stats import fit_power_law, paired_test


def test_pure_power_law_recovers_exponent_and_scale():
    x = np.geomspace(1, 1000, 12)
    fit = fit_power_law(x, 2.5 * x**-0.8)
    assert fit.exponent == pytest.approx(0.8, abs=1e-12)
    assert fit.scale == pytest.approx(2.5, rel=1e-12)
    assert fit.intercept == pytest.approx(np.log(2.5), abs=1e-12)
    assert fit.r2 == pytest.approx(1.0)
    np.testing.assert_allclose(fit(x), 2.5 * x**-0.8, rtol=1e-10)


def test_pure_power_law_matches_scipy_linregress():
    rng = np.random.default_rng(1)
    x = np.geomspace(1, 100, 10)
    y = 3 * x**-0.5 * np.exp(rng.normal(0, 0.2, 10))
    ref = sps.linregress(np.log(x), np.log(y))
    fit = fit_power_law(x, y)
    assert fit.exponent == pytest.approx(-ref.slope, rel=1e-10)
    assert fit.r2 == pytest.approx(ref.rvalue**2, rel=1e-10)


def test_saturating_power_law():
    d = np.array([10.0, 20, 50, 100, 200, 500, 1000])
    fit = fit_power_law(d, 0.85 - 0.6 * d**-0.4, asymptote=True)
    assert (fit.asymptote, fit.scale, fit.exponent) == pytest.approx((0.85, 0.6, 0.4), rel=1e-6)
    np.testing.assert_allclose(fit(d), 0.85 - 0.6 * d**-0.4, rtol=1e-6)


@pytest.mark.parametrize(
    ("x", "y", "kw", "text"),
    [
        ([1.0, 2.0], [1.0], {}, "x and y must have the same length"),
        ([1.0, np.nan], [1.0, 2.0], {}, "x must be finite"),
        ([0.0, 2.0], [1.0, 2.0], {}, "x must be positive"),
        ([1.0, 2.0], [1.0, -2.0], {}, "y must be positive"),
        ([1.0], [1.0], {}, "x needs at least 2 points"),
        ([1.0, 1.0, 2.0], [1.0, 2.0, 3.0], {"asymptote": True}, "x needs at least 3 distinct"),
    ],
)
def test_power_law_refuses(x, y, kw, text):
    with pytest.raises(ValueError, match=text):
        fit_power_law(x, y, **kw)


def test_paired_tests_match_scipy():
    rng = np.random.default_rng(2)
    a = rng.normal(0, 1, 20)
    b = a - 0.3 + rng.normal(0, 0.5, 20)
    t = paired_test(a, b)
    assert t.pvalue == pytest.approx(sps.ttest_rel(a, b).pvalue)
    w = paired_test(a, b, method="wilcoxon")
    assert w.pvalue == pytest.approx(sps.wilcoxon(a, b).pvalue)
    assert w.mean_difference == pytest.approx(np.mean(a - b))
    same = paired_test(a, a)
    assert (same.statistic, same.pvalue) == (0.0, 1.0)
    with pytest.raises(ValueError, match="method must be one of"):
        paired_test(a, b, method="sign")
    with pytest.raises(ValueError, match="a and b must have the same length"):
        paired_test(a, b[:3])


def test_frechet_distance_is_the_closed_form_between_gaussians():
    from scipy import linalg

    from neurips26.common.stats import frechet_distance

    rng = np.random.default_rng(1)
    a = rng.normal(size=(3000, 3)) @ np.diag([1.0, 2.0, 0.5])
    b = rng.normal(size=(2500, 3)) + np.array([1.0, 0.0, -1.0])
    sa, sb = np.cov(a, rowvar=False), np.cov(b, rowvar=False)
    ref = (np.sum((a.mean(0) - b.mean(0)) ** 2) + np.trace(sa) + np.trace(sb)
           - 2 * np.trace(np.real(linalg.sqrtm(sa @ sb))))
    assert frechet_distance(a, b) == pytest.approx(ref, rel=1e-9)
    wide_a, wide_b = rng.normal(size=(5, 40)), rng.normal(size=(6, 40))  # N M <= F^2 path
    sa, sb = np.cov(wide_a, rowvar=False), np.cov(wide_b, rowvar=False)
    ref = (np.sum((wide_a.mean(0) - wide_b.mean(0)) ** 2) + np.trace(sa) + np.trace(sb)
           - 2 * np.trace(np.real(linalg.sqrtm(sa @ sb))))
    assert frechet_distance(wide_a, wide_b) == pytest.approx(ref, rel=1e-6)
    with pytest.raises(ValueError, match="feats_b"):
        frechet_distance(a, b[:, :2])
    with pytest.raises(ValueError, match="feats_a"):
        frechet_distance(a[:1], b)
