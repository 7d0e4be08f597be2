"""The fitter recovers known parameters; ranking and the DataFrame path."""

from __future__ import annotations

import dataclasses
import itertools

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from neurips26.papers.adis_law import (
    GENERAL_PARAMS,
    TARGET_PARAMS,
    ADISFit,
    ADISLaw,
    ADISParams,
    InjectionPolicy,
    PolicyScore,
    adis_predict,
    fit_adis_law,
    rank_policies,
    schedule_features,
    simulate_trajectory,
    trajectories_from_frame,
    trajectories_to_frame,
    wsd_schedule,
)

ETA0, S = 1e-3, 500
TRUTH = ADISParams(general=dict(L0=1.2, A=4.0, alpha=0.35, C=2e-3, F=0.015, R=0.004),
                   target=dict(E_T=1.0, B=6.0, beta=0.3, kappa=0.3, C_T=3e-3), lr_ref=ETA0)
GRID = [InjectionPolicy(lam, r, e * ETA0) for lam in (0.25, 0.5, 1.0) for r in (0.1, 0.3, 0.6)
        for e in (0.3, 0.6, 1.0)]


def _runs(params, noise, seed, every=5, num_params=None, policies=GRID, total=S):
    rng = np.random.default_rng(seed)
    base = wsd_schedule(total, peak_lr=ETA0)
    runs = [simulate_trajectory(params, base, steps=range(every * 2, total, every), noise=noise,
                                rng=rng, num_params=num_params, name=f"base-{num_params}")]
    for p in policies:
        sch = wsd_schedule(total, peak_lr=ETA0, policy=p)
        runs.append(simulate_trajectory(params, sch, noise=noise, rng=rng, num_params=num_params,
                                        steps=range(sch.injection_start + every - 1, total, every)))
    return runs


@pytest.fixture(scope="module")
def noisy_fit():
    return fit_adis_law(_runs(TRUTH, noise=0.005, seed=0), restarts=20, seed=0)


def test_recovers_parameters_from_noisy_trajectories(noisy_fit):
    assert isinstance(noisy_fit, ADISFit) and noisy_fit.converged
    for group, keys in (("general", GENERAL_PARAMS), ("target", TARGET_PARAMS)):
        for k in keys:
            got, want = getattr(noisy_fit.params, group)[k], getattr(TRUTH, group)[k]
            assert got == pytest.approx(want, rel=0.05), (group, k, got, want)
    # the residual is the noise (0.5% of losses near 1.5-2.2)
    assert 0.004 < noisy_fit.rmse < 0.015


def test_recovered_ranking_matches_truth_exactly(noisy_fit):
    for total in (2 * S, 4 * S):
        true = [p.policy for p in rank_policies(TRUTH, GRID, total_steps=total, peak_lr=ETA0)]
        got = [p.policy for p in rank_policies(noisy_fit, GRID, total_steps=total, peak_lr=ETA0)]
        assert got == true


def test_wrong_law_is_detected():
    """The oracle can fail: data from a different exponent is not fit to the truth."""
    other = dataclasses.replace(TRUTH, target={**TRUTH.target, "beta": 0.6})
    fit = fit_adis_law(_runs(other, noise=0.0, seed=1, every=10), restarts=4)
    assert fit.params.target["beta"] == pytest.approx(0.6, rel=1e-3)
    assert fit.params.target["beta"] != pytest.approx(TRUTH.target["beta"], rel=0.05)


def test_huber_with_huge_scale_is_least_squares():
    runs = _runs(TRUTH, noise=0.003, seed=2, every=10)
    ols = fit_adis_law(runs, loss="linear", restarts=1, seed=3, x0=TRUTH)
    hub = fit_adis_law(runs, loss="huber", f_scale=1e8, restarts=1, seed=3, x0=TRUTH)
    np.testing.assert_allclose(hub.params.as_vector(), ols.params.as_vector(), rtol=1e-6)


def test_model_scale_terms_are_recovered():
    scaled = ADISParams(general=TRUTH.general, target=TRUTH.target, lr_ref=ETA0,
                        scale=dict(k_G=0.8, k_T=0.6, gamma=0.5), num_params_ref=1e4)
    pols = GRID[::3]
    runs = [r for n in (1e4, 2e4, 4e4) for r in _runs(scaled, 0.0, 0, every=10,
                                                       num_params=n, policies=pols)]
    fit = fit_adis_law(runs, restarts=6)
    assert fit.rmse < 1e-5
    for k, v in scaled.scale.items():
        assert fit.params.scale[k] == pytest.approx(v, rel=1e-3)
    # extrapolation to a larger model is exact for data from the law
    f = schedule_features(wsd_schedule(S, peak_lr=ETA0, policy=pols[0]))
    a = adis_predict(scaled, f, num_params=1.6e5)
    b = adis_predict(fit.params, f, num_params=1.6e5)
    np.testing.assert_allclose(b.loss_target, a.loss_target, rtol=1e-4)


def test_rank_policies_order_invariant_and_deterministic(noisy_fit):
    shuffled = [GRID[i] for i in np.random.default_rng(0).permutation(len(GRID))]
    a = rank_policies(noisy_fit, GRID, total_steps=2 * S, peak_lr=ETA0)
    b = rank_policies(noisy_fit, shuffled, total_steps=2 * S, peak_lr=ETA0)
    assert a == b and isinstance(a[0], PolicyScore)
    assert all(x.utility <= y.utility for x, y in itertools.pairwise(a))
    again = fit_adis_law(_runs(TRUTH, noise=0.005, seed=0), restarts=20, seed=0)
    assert again.params == noisy_fit.params


def test_utility_penalises_general_regressions():
    r = rank_policies(TRUTH, GRID, total_steps=S, peak_lr=ETA0, mu=0.0)
    assert all(p.utility == p.loss_target for p in r)
    r1 = rank_policies(TRUTH, GRID, total_steps=S, peak_lr=ETA0, mu=1.0)
    assert all(p.utility >= p.loss_target for p in r1)
    assert any(p.utility > p.loss_target for p in r1)


def test_frame_round_trip_is_exact_when_logged_every_step():
    runs = []
    for p in GRID[:7]:
        sch = wsd_schedule(120, peak_lr=ETA0, policy=p)
        runs.append(simulate_trajectory(TRUTH, sch, steps=range(120)))
    frame = trajectories_to_frame(runs)
    assert list(frame.columns[:6]) == ["run", "step", "lr", "domain_fraction", "loss_general",
                                       "loss_target"]
    back = trajectories_from_frame(frame)
    for a, b in zip(runs, back, strict=True):
        np.testing.assert_array_equal(a.lrs, b.lrs)
        np.testing.assert_array_equal(a.mix, b.mix)
        np.testing.assert_array_equal(a.loss_target, b.loss_target)
    law = ADISLaw(restarts=3).fit(frame)
    assert law.fit_.rmse < 1e-6
    pred = law.predict(back[0])
    np.testing.assert_allclose(pred.loss_target, runs[0].loss_target, rtol=1e-6)


def test_frame_interpolates_between_logged_rows():
    frame = pd.DataFrame({"run": ["a"] * 3, "step": [0, 10, 20], "lr": [1.0, 1.0, 0.0],
                          "domain_fraction": [0.0, 0.5, 0.5], "loss_general": [3.0, 2.0, 1.9],
                          "loss_target": [3.0, 2.5, 2.0]})
    (t,) = trajectories_from_frame(frame)
    assert t.total_steps == 21
    np.testing.assert_allclose(t.lrs[10:], np.linspace(1.0, 0.0, 11))
    assert t.mix[0] == 0.0 and np.all(t.mix[1:] == 0.5)


def test_estimator_conventions():
    from sklearn.base import clone

    law = ADISLaw(restarts=3, seed=2)
    assert clone(law).get_params() == law.get_params()
    with pytest.raises(RuntimeError, match="fit"):
        law.predict(wsd_schedule(100, peak_lr=1.0))
    law.fit(_runs(TRUTH, noise=0.0, seed=0, every=25))
    ranked = law.rank(GRID[:4], total_steps=S, peak_lr=ETA0)
    assert len(ranked) == 4
    pred = law.predict(wsd_schedule(S, peak_lr=ETA0))
    assert stats.spearmanr(pred.loss_general[200:400], np.arange(200)).statistic < 0


SAT_TRUTH = ADISParams(general={**TRUTH.general, "F": 0.05, "Q": 8.0}, target=TRUTH.target,
                       lr_ref=ETA0, forgetting="saturating")


def test_saturating_forgetting_recovers_its_parameters():
    """The saturating reading's fit recovers F and Q from data generated with it."""
    fit = fit_adis_law(_runs(SAT_TRUTH, noise=0.0, seed=4, every=10), restarts=4,
                       forgetting="saturating")
    assert fit.params.forgetting == "saturating" and fit.rmse < 1e-5
    for k in ("F", "R", "Q"):
        assert fit.params.general[k] == pytest.approx(SAT_TRUTH.general[k], rel=1e-3), k
    assert fit.params.names()[-1] == "Q" and fit.params.as_vector().size == 12


def test_saturating_forgetting_is_linear_for_a_huge_q_and_bends_otherwise():
    f = schedule_features(wsd_schedule(S, peak_lr=ETA0, policy=GRID[-1]))
    huge = dataclasses.replace(SAT_TRUTH, general={**TRUTH.general, "Q": 1e9})
    np.testing.assert_allclose(adis_predict(huge, f).loss_general,
                               adis_predict(TRUTH, f).loss_general, rtol=1e-7)
    bent = dataclasses.replace(SAT_TRUTH, general={**TRUTH.general, "Q": 1.0})
    assert (adis_predict(bent, f).loss_general < adis_predict(TRUTH, f).loss_general - 1e-4).any()


def test_forgetting_form_is_checked():
    with pytest.raises(ValueError, match="forgetting"):
        fit_adis_law(_runs(TRUTH, noise=0.0, seed=0, every=20), forgetting="log")
    with pytest.raises(ValueError, match="forgetting"):
        ADISParams(general=TRUTH.general, target=TRUTH.target, forgetting="log")
    with pytest.raises(ValueError, match="general"):
        ADISParams(general=TRUTH.general, target=TRUTH.target, forgetting="saturating")
