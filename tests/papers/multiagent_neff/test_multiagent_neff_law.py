"""Tests of the law, its fit, the regime classifier and the pilot extrapolation."""

import warnings

import numpy as np
import pytest

from neurips26.papers.multiagent_neff import (
    NeffFit,
    NeffFitWarning,
    classify_regime,
    fit_neff_law,
    kish_neff,
    neff_ratio,
    predict_from_pilot,
)

GRID = np.array([1, 2, 3, 4, 5, 8, 12, 20, 30])


def test_beta_zero_is_kish_design_effect():
    n = np.arange(1, 60)
    for rho in (0.0, 0.05, 0.3, 0.9):
        # Kish (1965): N / (1 + (N - 1) rho), written out independently
        expected = n / (1 + (n - 1) * rho)
        np.testing.assert_allclose(n * neff_ratio(n, rho, 0.0), expected, rtol=1e-14)
        np.testing.assert_allclose(kish_neff(n, rho), expected, rtol=1e-14)


def test_law_regimes_asymptotics():
    n = np.array([1e6, 1e8])
    # hard ceiling 1/c, sublinear ~ N^beta / c, linear when beta = 1: N/(1 + c)
    np.testing.assert_allclose(n * neff_ratio(n, 0.5, 0.0), 2.0, rtol=1e-3)
    np.testing.assert_allclose(n * neff_ratio(n, 0.5, 0.5), n**0.5 / 0.5, rtol=1e-2)
    np.testing.assert_allclose(n * neff_ratio(n, 0.5, 1.0), n / 1.5, rtol=1e-3)
    assert neff_ratio(1, 3.0, 0.7)[0] == 1.0


@pytest.mark.parametrize("c,beta", [(0.2, 0.4), (0.6, 0.0), (0.05, 1.3), (1.5, 0.15)])
def test_noiseless_fit_recovers_parameters(c, beta):
    fit = fit_neff_law(GRID, neff_ratio(GRID, c, beta), num_bootstrap=0)
    assert isinstance(fit, NeffFit)
    assert fit.converged
    assert abs(fit.c - c) < 1e-6 and abs(fit.beta - beta) < 1e-6
    assert fit.r2 == pytest.approx(1.0, abs=1e-10)


def test_fit_with_replicates_gives_percentile_ci_and_regime():
    rng = np.random.default_rng(0)
    truth = neff_ratio(GRID, 0.3, 0.0)
    reps = truth * (1 + 0.01 * rng.standard_normal((200, GRID.size)))
    reps[:, 0] = 1.0
    fit = fit_neff_law(GRID, truth, replicates=reps)
    assert fit.c_ci[0] <= 0.3 <= fit.c_ci[1]
    assert fit.beta_ci[0] <= 1e-3 and fit.regime == "hard_ceiling"
    assert fit.samples.shape == (200, 2)
    fit2 = fit_neff_law(
        GRID,
        neff_ratio(GRID, 0.3, 0.5),
        replicates=reps * 0
        + neff_ratio(GRID, 0.3, 0.5) * (1 + 0.005 * rng.standard_normal((200, GRID.size))),
    )
    assert fit2.regime == "sublinear"


def _coverage(num_curves, num_boot, seed):
    rng = np.random.default_rng(seed)
    c, beta = 0.3, 0.3
    truth = neff_ratio(GRID, c, beta)
    hits = 0
    for _ in range(num_curves):
        noisy = truth * (1 + 0.02 * rng.standard_normal(GRID.size))
        noisy[0] = 1.0
        fit = fit_neff_law(GRID, noisy, num_bootstrap=num_boot, seed=int(rng.integers(1e9)))
        hits += fit.c_ci[0] <= c <= fit.c_ci[1]
    return hits / num_curves


def test_residual_bootstrap_ci_covers_truth_quick():
    # 30 noisy curves: the 95% CI of c covers the truth most of the time
    assert _coverage(30, 40, seed=1) >= 0.7  # residual bootstrap on 8 points is liberal


@pytest.mark.slow
def test_residual_bootstrap_ci_coverage_200_fits():
    cov = _coverage(200, 200, seed=2)
    assert 0.8 <= cov <= 1.0


def test_r2_uses_only_n_ge_2():
    ratio = neff_ratio(GRID, 0.3, 0.0)
    bumped = ratio.copy()
    bumped[1:] += 0.01 * np.sin(np.arange(1, GRID.size))
    fit = fit_neff_law(GRID, bumped, num_bootstrap=0)
    m = GRID >= 2
    pred = neff_ratio(GRID, fit.c, fit.beta)
    r2 = 1 - np.sum((bumped[m] - pred[m]) ** 2) / np.sum((bumped[m] - bumped[m].mean()) ** 2)
    assert fit.r2 == pytest.approx(r2, rel=1e-10)


def test_classify_regime_constructed_cases():
    assert classify_regime((0.0, 0.1)) == "hard_ceiling"
    assert classify_regime((0.0005, 0.4)) == "hard_ceiling"
    assert classify_regime((0.2, 0.6)) == "sublinear"
    assert classify_regime((0.8, 1.2)) == "linear"
    assert classify_regime((1.1, 1.5)) == "linear"
    assert classify_regime((0.0, 1.5)) == "indeterminate"
    with pytest.raises(ValueError, match="lower <= upper"):
        classify_regime((0.5, 0.1))


def test_nonconvergence_is_reported_not_silent():
    ratio = neff_ratio(GRID, 0.3, 0.4) * (1 + 0.05 * np.cos(np.arange(GRID.size)))
    with pytest.warns(NeffFitWarning, match="did not converge"):
        fit = fit_neff_law(GRID, ratio, num_bootstrap=0, max_iter=1)
    assert fit.converged is False


def test_converged_fit_emits_no_warning():
    with warnings.catch_warnings():
        warnings.simplefilter("error", NeffFitWarning)
        assert fit_neff_law(GRID, neff_ratio(GRID, 0.3, 0.4), num_bootstrap=5).converged


def test_pilot_prediction_closed_form():
    pilot = np.arange(1, 6)
    pred = predict_from_pilot(pilot, neff_ratio(pilot, 0.25, 0.0), target_N=30, num_bootstrap=0)
    assert pred.neff == pytest.approx(30 / (1 + 29 * 0.25), rel=1e-6)
    assert pred.ratio == pytest.approx(pred.neff / 30)
    pred2 = predict_from_pilot(pilot, neff_ratio(pilot, 0.25, 0.6), target_N=30, num_bootstrap=30)
    assert pred2.neff == pytest.approx(30 * neff_ratio(30, 0.25, 0.6)[0], rel=1e-5)
    assert pred2.interval[0] - 1e-6 <= pred2.neff <= pred2.interval[1] + 1e-6


@pytest.mark.parametrize(
    "N,ratio,match",
    [
        ([1, 2], [1, 0.8], "under-determined"),
        ([1, 3, 2, 4], [1, 0.8, 0.7, 0.6], "strictly increasing"),
        ([1, 2.5, 3, 4], [1, 0.8, 0.7, 0.6], "integer"),
        ([0, 1, 2, 3], [1, 1, 0.8, 0.7], ">= 1"),
        ([1, 2, 3, 4], [1, 0.8, np.nan, 0.6], "NaN"),
        ([1, 2, 3, 4], [1, 0.8, 0.7], "shape"),
        ([1, 2, 3, 4], [1, 0.8, -0.7, 0.6], "positive"),
        ([], [], "empty"),
    ],
)
def test_fit_bad_input(N, ratio, match):
    with pytest.raises(ValueError, match=match):
        fit_neff_law(N, ratio, num_bootstrap=0)


def test_law_bad_parameters():
    with pytest.raises(ValueError, match="c must be"):
        neff_ratio(GRID, -0.1, 0.0)
    with pytest.raises(ValueError, match="beta must be"):
        neff_ratio(GRID, 0.1, np.nan)
    with pytest.raises(ValueError, match="ci must be"):
        fit_neff_law(GRID, neff_ratio(GRID, 0.3, 0.0), ci=1.5)
    with pytest.raises(ValueError, match="replicates must have shape"):
        fit_neff_law(GRID, neff_ratio(GRID, 0.3, 0.0), replicates=np.ones((3, 2)))
    with pytest.raises(ValueError, match="target_N"):
        predict_from_pilot([1, 2, 3], [1, 0.8, 0.7], target_N=0)


def test_warm_start_fit_matches_default_and_refuses_bad_start():
    r = neff_ratio(GRID, 0.3, 0.45)
    cold = fit_neff_law(GRID, r, num_bootstrap=0)
    warm = fit_neff_law(GRID, r, num_bootstrap=0, start=(0.25, 0.5))
    assert warm.converged
    np.testing.assert_allclose([warm.c, warm.beta], [0.3, 0.45], atol=1e-8)
    np.testing.assert_allclose([warm.c, warm.beta], [cold.c, cold.beta], atol=1e-8)
    # a start outside the bounds is clipped into them, not refused
    assert fit_neff_law(GRID, r, num_bootstrap=0, start=(0.3, 5.0)).converged
    for bad in ((0.3,), (np.nan, 0.4), ("a", 0.4)):
        with pytest.raises((ValueError, TypeError), match="start"):
            fit_neff_law(GRID, r, num_bootstrap=0, start=bad)
