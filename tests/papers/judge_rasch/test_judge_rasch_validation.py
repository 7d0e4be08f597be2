"""Stages 1-3, the decision rule and the validator: oracles, branches and bad input."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy.stats import wasserstein_distance

from neurips26.papers.judge_rasch import (
    FidelityReport,
    JudgeCalibration,
    JudgeValidator,
    RulerAudit,
    audit_ruler,
    bootstrap_human_measures,
    calibrate_judge,
    correlation_baseline,
    decide,
    emd_categories,
    fit_mfrm,
    holm_reject,
    judge_fidelity,
    nsmf,
    resolvable_pairs,
    simulate_benchmark,
    simulate_judge,
)


@pytest.fixture(scope="module")
def bench():
    return simulate_benchmark(
        num_systems=8, num_items=60, num_raters=3, num_dimensions=1, num_misfit_raters=0, seed=3
    )


@pytest.fixture(scope="module")
def halves(bench):
    human = bench.ratings.drop(columns="dimension")
    cal = human[human.item < 30]
    ho = human[human.item >= 30]
    return fit_mfrm(cal, num_categories=5), fit_mfrm(ho, num_categories=5)


# ---------------------------------------------------------------------------- helpers
def test_nsmf_identity_scaling_and_reversal():
    th = np.array([0.3, -1.0, 2.0, 0.1])
    assert nsmf(th, th) == pytest.approx(1.0)
    assert nsmf(th, 0.4 * th + 3.0) == pytest.approx(0.4)  # shifts do not matter
    assert nsmf(th, -th) == pytest.approx(-1.0)
    with pytest.raises(ValueError, match="same length"):
        nsmf(th, th[:3])
    with pytest.raises(ValueError, match="all equal"):
        nsmf(np.zeros(3), th[:3])


def test_emd_equals_scipy_wasserstein():
    rng = np.random.default_rng(0)
    cats = np.arange(1, 6)
    for _ in range(20):
        p, q = rng.random(5), rng.random(5)
        expected = wasserstein_distance(cats, cats, u_weights=p, v_weights=q)
        assert emd_categories(p, q) == pytest.approx(expected, abs=1e-12)


def test_holm_equals_statsmodels():
    multipletests = pytest.importorskip("statsmodels.stats.multitest").multipletests
    rng = np.random.default_rng(1)
    for _ in range(4):  # statsmodels runs gc.collect on every call: keep this short
        p = rng.random(15) ** 3
        np.testing.assert_array_equal(
            holm_reject(p, 0.05), multipletests(p, alpha=0.05, method="holm")[0]
        )


def test_resolvable_pairs_signs_and_antisymmetry():
    theta = np.array([0.0, 0.05, 3.0])
    res = resolvable_pairs(theta, np.full(3, 0.1))
    np.testing.assert_array_equal(res, -res.T)
    assert res[2, 0] == 1 and res[0, 2] == -1 and res[0, 1] == 0


# ---------------------------------------------------------------------------- stage 1
def test_audit_ruler_reliability_formula(bench):
    fit = fit_mfrm(bench.ratings.drop(columns="dimension"), num_categories=5)
    audit = audit_ruler(fit)
    var = np.var(fit.theta)
    expected = (var - np.mean(fit.theta_se**2)) / var
    assert audit.reliability == pytest.approx(expected)
    assert audit.separation == pytest.approx(np.sqrt(expected / (1 - expected)))
    n_pairs = 8 * 7 // 2
    assert audit.resolvable_fraction == pytest.approx(len(audit.resolvable_pairs) / n_pairs)
    for hi, lo in audit.resolvable_pairs:
        assert fit.theta[hi] > fit.theta[lo]
    # conditional SE is smallest near the middle of the scale, larger at the extremes
    cse = audit.conditional_se
    assert cse.argmin() not in (0, cse.size - 1)
    assert audit.misfitting_raters == []


def test_spread_less_ruler_is_refused():
    weak = simulate_benchmark(
        num_systems=8, num_items=40, num_dimensions=1, theta_sd=0.05, num_misfit_raters=0, seed=4
    )
    audit = audit_ruler(fit_mfrm(weak.ratings.drop(columns="dimension"), num_categories=5))
    assert audit.reliability < 0.7
    assert decide(audit).label == "refuse"


# ---------------------------------------------------------------------------- stage 2
def test_calibration_recovers_shift_and_slope(bench, halves):
    fit_cal, _ = halves
    shifted = simulate_judge("shifted", bench, seed=5, shift=1.0)
    cal = calibrate_judge(fit_cal, shifted[shifted.item < 30])
    assert cal.converged and cal.rho == pytest.approx(1.0, abs=0.2)
    assert abs(cal.tau.sum()) < 1e-10 and cal.slope == 1.0 and not cal.disordered
    comp = simulate_judge("compressed", bench, seed=6, slope=0.3)
    cal = calibrate_judge(fit_cal, comp[comp.item < 30], slope=True)
    faithful = simulate_judge("faithful", bench, seed=6)
    cal_f = calibrate_judge(fit_cal, faithful[faithful.item < 30], slope=True)
    # the discrimination separates compressed from faithful (JMLE attenuates it a little)
    assert 0.15 < cal.slope < 0.4 and 0.75 < cal_f.slope < 1.2
    assert 0 < cal.slope_se < 0.1


def test_collapsed_judge_shows_unused_categories(bench, halves):
    fit_cal, _ = halves
    col = simulate_judge("collapsed", bench, seed=7)
    cal = calibrate_judge(fit_cal, col[col.item < 30])
    assert list(np.flatnonzero(cal.category_counts)) == [2, 3]


# ---------------------------------------------------------------------------- stage 3
def test_fidelity_faithful_vs_compressed(bench, halves):
    fit_cal, fit_ho = halves
    boot = bootstrap_human_measures(fit_ho, num_bootstrap=50, seed=0)
    out = {}
    for kind in ("faithful", "compressed"):
        j = simulate_judge(kind, bench, seed=8)
        cal = calibrate_judge(fit_cal, j[j.item < 30])
        out[kind] = judge_fidelity(fit_ho, cal, j[j.item >= 30], human_bootstrap=boot)
    assert out["faithful"].nsmf == pytest.approx(1.0, abs=0.15)
    assert out["compressed"].nsmf < 0.6
    f = out["faithful"]
    assert f.transfer_intervals.shape == (8, 2)
    assert np.all(f.transfer_intervals[:, 0] <= f.transfer_intervals[:, 1])
    assert f.emd_raw.shape == (8,) and f.mean_emd_calibrated < f.mean_emd_raw


def test_fidelity_emd_matches_direct_computation(bench, halves):
    fit_cal, fit_ho = halves
    j = simulate_judge("shifted", bench, seed=9)
    cal = calibrate_judge(fit_cal, j[j.item < 30])
    jh = j[j.item >= 30]
    rep = judge_fidelity(fit_ho, cal, jh, num_bootstrap=20)
    human = bench.ratings[bench.ratings.item >= 30]
    cats = np.arange(1, 6)
    for s in (0, 5):
        h = np.bincount(human[human.system == s].score, minlength=6)[1:]
        g = np.bincount(jh[jh.system == s].score, minlength=6)[1:]
        assert rep.emd_raw[s] == pytest.approx(
            wasserstein_distance(cats, cats, u_weights=h, v_weights=g)
        )


def test_judge_fidelity_bad_input(bench, halves):
    fit_cal, fit_ho = halves
    j = simulate_judge("faithful", bench, seed=10)
    cal = calibrate_judge(fit_cal, j[j.item < 30])
    with pytest.raises(ValueError, match="absent from the human ratings"):
        judge_fidelity(fit_ho, cal, j, num_bootstrap=20)  # includes calibration items
    with pytest.raises(ValueError, match="no ratings for systems"):
        judge_fidelity(fit_ho, cal, j[(j.item >= 30) & (j.system != 2)], num_bootstrap=20)
    with pytest.raises(ValueError, match="num_bootstrap"):
        judge_fidelity(fit_ho, cal, j[j.item >= 30], num_bootstrap=2)
    with pytest.raises(TypeError, match="JudgeCalibration"):
        judge_fidelity(fit_ho, "cal", j[j.item >= 30])


def test_calibrate_judge_bad_input(halves):
    fit_cal, _ = halves
    good = pd.DataFrame({"system": [0, 1, 2], "item": [0, 1, 2], "score": [1, 3, 5]})
    with pytest.raises(ValueError, match="systems \\[99\\] are absent"):
        calibrate_judge(fit_cal, good.assign(system=[0, 1, 99]))
    with pytest.raises(ValueError, match=r"1\.\.5"):
        calibrate_judge(fit_cal, good.assign(score=[1, 3, 6]))
    with pytest.raises(ValueError, match="missing column"):
        calibrate_judge(fit_cal, good.drop(columns="item"))
    with pytest.raises(TypeError, match="MFRMFit"):
        calibrate_judge("fit", good)


# ---------------------------------------------------------------------------- decision
def _ruler(reliability=0.95, frac=0.8):
    return RulerAudit(
        reliability=reliability,
        separation=4.0,
        resolvable=np.zeros((2, 2)),
        resolvable_pairs=[],
        resolvable_fraction=frac,
        misfitting_raters=[],
        misfitting_items=[],
        theta_grid=np.zeros(1),
        conditional_se=np.zeros(1),
        converged=True,
    )


def _calib(infit=1.0, outfit=1.0, counts=(50, 50, 50, 50, 50), disordered=False):
    return JudgeCalibration(
        rho=0.0,
        rho_se=0.1,
        tau=np.zeros(4),
        tau_se=np.zeros(4),
        slope=1.0,
        slope_se=0.0,
        infit=infit,
        outfit=outfit,
        category_counts=np.array(counts),
        disordered=disordered,
        converged=True,
    )


def _fid(nsmf_value=1.0, fsr=0.0, failures=()):
    z = np.zeros(3)
    return FidelityReport(
        systems=np.arange(3),
        theta_human=z,
        theta_judge=z,
        theta_judge_se=z,
        nsmf=nsmf_value,
        false_separations=0,
        false_separation_rate=fsr,
        judge_resolved_fraction=0.5,
        human_resolved_fraction=0.5,
        transfer_intervals=np.zeros((3, 2)),
        transfer_failures=list(failures),
        emd_raw=z,
        emd_calibrated=z,
    )


@pytest.mark.parametrize(
    ("ruler", "fid", "calib", "label", "reason"),
    [
        (_ruler(reliability=0.5), _fid(), _calib(), "refuse", "reliability"),
        (_ruler(frac=0.1), _fid(), _calib(), "refuse", "resolves"),
        (_ruler(), _fid(), _calib(outfit=1.8), "warn", "outfit"),
        (_ruler(), _fid(), _calib(infit=0.3), "warn", "infit"),
        (_ruler(), _fid(), _calib(counts=(0, 3, 100, 100, 0)), "warn", "collapsed"),
        (_ruler(), _fid(), _calib(disordered=True), "warn", "disordered"),
        (_ruler(), _fid(nsmf_value=0.5), _calib(), "warn", "NSMF"),
        (_ruler(), _fid(fsr=0.2), _calib(), "warn", "false separations"),
        (_ruler(), _fid(failures=(1,)), _calib(), "warn", "transfer"),
        (_ruler(), _fid(), _calib(), "select", None),
    ],
)
def test_decision_branches(ruler, fid, calib, label, reason):
    dec = decide(ruler, fid, calib)
    assert dec.label == label
    if reason is None:
        assert dec.reasons == ()
    else:
        assert any(reason in r for r in dec.reasons)


def test_decision_thresholds_are_keywords_and_checked():
    assert decide(_ruler(), _fid(nsmf_value=0.5), _calib(), min_nsmf=0.4).label == "select"
    with pytest.raises(ValueError, match="fit_range"):
        decide(_ruler(), fit_range=(2.0, 1.0))
    with pytest.raises(ValueError, match="min_reliability"):
        decide(_ruler(), min_reliability=1.5)
    with pytest.raises(TypeError, match="RulerAudit"):
        decide("ruler")


# ---------------------------------------------------------------------------- baseline, class
def test_correlation_baseline_always_returns_leaderboard():
    human = pd.DataFrame({"system": [0, 0, 1, 1, 2, 2], "score": [1, 2, 3, 3, 5, 4]})
    judge = pd.DataFrame({"system": [0, 1, 2], "score": [2, 3, 4]})
    base = correlation_baseline(human, judge)
    assert base.spearman == pytest.approx(1.0) and base.kendall == pytest.approx(1.0)
    assert base.leaderboard == [2, 1, 0]
    with pytest.raises(ValueError, match="at least 3 systems"):
        correlation_baseline(human, judge[judge.system < 2])


def test_validator_report_and_decisions():
    b = simulate_benchmark(num_systems=8, num_items=40, num_dimensions=2, seed=11)
    judges = {k: simulate_judge(k, b, seed=i) for i, k in enumerate(["faithful", "compressed"])}
    v = JudgeValidator(num_bootstrap=30, seed=1).fit(b.ratings, judges)
    assert len(v.report_) == 4
    assert {"decision", "nsmf", "emd_raw", "emd_calibrated", "spearman", "converged"} <= set(
        v.report_.columns
    )
    assert v.report_["converged"].all()
    comp = v.report_[v.report_.judge == "compressed"]
    assert (comp["decision"] == "warn").all()
    dropped = v.dropped_raters_
    assert all(d in ([], [0]) for d in dropped.values()) and [0] in dropped.values()
    # deterministic under the seed
    again = JudgeValidator(num_bootstrap=30, seed=1).fit(b.ratings, judges)
    pd.testing.assert_frame_equal(v.report_, again.report_)


def test_validator_bad_input():
    b = simulate_benchmark(num_systems=5, num_items=6, num_dimensions=1, seed=12)
    j = {"a": simulate_judge("faithful", b, seed=0)}
    with pytest.raises(ValueError, match="heldout_frac"):
        JudgeValidator(heldout_frac=1.5).fit(b.ratings, j)
    with pytest.raises(TypeError, match="non-empty mapping"):
        JudgeValidator().fit(b.ratings, {})
    with pytest.raises(TypeError, match="unknown decision threshold"):
        JudgeValidator(min_nsmff=0.5).fit(b.ratings, j)
    with pytest.raises(ValueError, match="'dimension' column"):
        JudgeValidator().fit(b.ratings, {"a": j["a"].drop(columns="dimension")})
    with pytest.raises(ValueError, match="cannot be split"):
        JudgeValidator(heldout_frac=0.1).fit(b.ratings, j)
    with pytest.raises(ValueError, match="unknown judge kind"):
        simulate_judge("lazy", b)
