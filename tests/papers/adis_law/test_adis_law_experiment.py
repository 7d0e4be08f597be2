"""Smoke run of the ADIS-Law reproduction, its claims and its config checks."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest

from neurips26.common.experiment import ConfigError, apply_overrides
from neurips26.papers.adis_law import experiment
from neurips26.registry import NOT_RUN, get_paper


def test_smoke_run_and_claims():
    res = experiment.run(experiment.TIERS["smoke"])
    m = res.metrics
    assert set(m) <= set(experiment.METRICS)
    assert m["num_fit_runs"] == 9 and m["num_heldout_runs"] == 4
    assert m["fit_converged"]
    assert 0 < m["tail_rel_error"] < 1
    assert -1 <= m["traj_spearman_within"] <= 1
    assert {"params", "heldout", "top_candidates"} <= set(res.tables)
    assert "heldout" in res.figures
    # the behaviour statistics carry a bootstrap over the injected fit runs
    for name in ("rise_fall_fraction", "deviation_r2", "adaptation_loglog_r2",
                 "deviation_r2_saturating"):
        iv = res.intervals[name]
        assert iv["lo"] <= m[name] <= iv["hi"] and "bootstrap over runs" in iv["method"]
    assert "stratified by group" in res.intervals["rank_spearman"]["method"]
    # the worst RMSE ratio over the baselines: its value is the ratio of the RMSEs the run
    # reports, its interval resamples the held-out runs
    assert m["rmse_ratio_worst"] == pytest.approx(max(
        m["heldout_rmse_target"] / m[f"rmse_{b}"] for b in experiment.BASELINES), rel=1e-12)
    iv = res.intervals["rmse_ratio_worst"]
    assert iv["lo"] <= m["rmse_ratio_worst"] <= iv["hi"] and iv["n"] == m["num_heldout_runs"]
    assert "bootstrap over runs, stratified by group" in iv["method"]
    # the controls are measured
    for name in ("traj_spearman_across_decoupled", "traj_spearman_within_decoupled",
                 "tail_rel_error_nopolicy", "rise_fall_fraction_shuffled",
                 "adaptation_loglog_r2_steps", "rank_spearman_nearest"):
        assert math.isfinite(m[name]), name
    # one held-out ranking at the smoke tier: 4 policies, chance rate 2/4
    assert m["rank_best_in_top2_chance"] == 0.5 and m["rank_best_in_top2"] in (0.0, 1.0)
    assert res.intervals["rank_best_in_top2"]["n"] == 1
    verdicts = {c.id: c.verdict for c in get_paper("adis_law").evaluate(m, "smoke")}
    assert verdicts["policy_ranking"] == NOT_RUN  # paper claims are small/paper tier only
    assert verdicts["fit_recovers_law"] != NOT_RUN
    # the second run comes from the cache and gives the same stable metrics
    again = experiment.run(experiment.TIERS["smoke"])
    assert again.stable_metrics() == res.stable_metrics()
    assert any("cache" in n for n in again.notes)


def test_heldout_policies_form_a_latin_square():
    cfg = experiment.TIERS["small"]
    held = experiment.heldout_policies(cfg)
    assert len(held) == 6 and len(set(held)) == 6
    grid = set(experiment.grid_policies(cfg))
    assert set(held) <= grid and len(grid) == 27
    # no two held-out policies share all but one coordinate with the same third value
    # (Latin square: each (lambda, r) pair fixes eta)
    pairs = {(p.fraction, p.mix_ratio) for p in held}
    assert len(pairs) == 6
    assert experiment.heldout_policies(cfg) == held
    assert experiment.heldout_policies(dataclasses.replace(cfg, seed=1)) != held


def test_config_ranges():
    cfg = experiment.TIERS["small"]
    with pytest.raises(ConfigError, match="device"):
        apply_overrides(cfg, {"device": "cuda"})  # the device is the runner's, not a field
    with pytest.raises(ConfigError, match="fractions"):
        apply_overrides(cfg, {"fractions": "0.5,1.5"})
    with pytest.raises(ValueError, match="widths"):
        experiment.run(dataclasses.replace(experiment.TIERS["smoke"], widths=(18,)))


@pytest.mark.slow
def test_model_scale_path_runs():
    """Several widths: the law gets the model-scale terms and the last width is held out."""
    cfg = dataclasses.replace(experiment.TIERS["smoke"], widths=(8, 12, 16, 20))
    res = experiment.run(cfg)
    assert res.metrics["num_fit_runs"] == 27  # 3 widths x (base + 8 policies)
    assert res.metrics["num_heldout_runs"] == 16  # 3 widths at 2S + the last width at S
    assert {r["name"] for r in res.tables["params"] if r["law"] == "scale"} == {
        "k_G", "k_T", "gamma"}


def test_deviation_r2_ceiling_is_one_minus_the_replicate_noise_share():
    """d = mu + e, d' = mu + e' (independent, variance s^2): the ceiling estimates
    1 - s^2 / Var(d), the R^2 of the exact expected deviation against d."""
    from neurips26.papers.adis_law.experiment import _deviation_r2, _deviation_r2_ceiling

    rng = np.random.default_rng(0)
    steps = np.linspace(0, 1, 40)
    rows, s = [], 0.3
    for k in range(200):
        mu = (k % 5) * np.sin(3 * steps)
        d = mu + s * rng.standard_normal(steps.size)
        d2 = mu + s * rng.standard_normal(steps.size)
        rows.append({"dev_obs": tuple(d), "dev_rep": tuple(d2), "dev_pred": tuple(mu)})
    do = np.concatenate([r["dev_obs"] for r in rows])
    expected = 1 - s**2 / do.var()
    assert abs(_deviation_r2_ceiling(rows) - expected) < 0.01
    # the exact law's R^2 against one realisation is what the ceiling estimates
    assert abs(_deviation_r2(rows) - expected) < 0.01
    # no replicate noise: the ceiling is 1; runs without a replicate (NaN) are left out
    exact = [dict(r, dev_rep=r["dev_obs"]) for r in rows]
    assert _deviation_r2_ceiling(exact) == 1.0
    part = [dict(r, dev_rep=(np.nan,) * steps.size) if i % 2 else r
            for i, r in enumerate(rows)]
    assert abs(_deviation_r2_ceiling(part) - expected) < 0.02
    assert np.isnan(_deviation_r2_ceiling([dict(r, dev_rep=(np.nan,) * steps.size)
                                           for r in rows]))
