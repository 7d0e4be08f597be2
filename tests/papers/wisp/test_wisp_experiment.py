"""wisp: the smoke tier runs, reports every metric and passes its checks."""

from __future__ import annotations

import math

import pytest

from neurips26.common.experiment import is_declared
from neurips26.papers.wisp.experiment import METRICS, TIERS, Config, run
from neurips26.registry import get_paper


@pytest.fixture(scope="module")
def smoke():
    return run(TIERS["smoke"])


def test_smoke_metrics_and_checks(smoke):
    m = smoke.metrics
    assert all(is_declared(k, METRICS) for k in m)
    assert m["check_sparsity_error"] <= 0.002 and m["check_nm_valid"] == 1.0
    assert m["check_block_ppl_error"] < 1e-4 and m["check_dense_restored"] == 0.0
    assert m["check_whisper_lam_limit"] == 1.0
    for meth in ("magnitude", "wanda", "sparsegpt", "wisp", "wisp_plus", "whisper", "wisp_act"):
        assert math.isfinite(m[f"ppl_{meth}_50"]) and math.isfinite(m[f"ppl_{meth}_2of4"])
    assert math.isnan(m["ratio_wisp_wanda_70"]) and "ratio_wisp_wanda_70" in smoke.reasons
    # seeds x seeded methods x sparsities + magnitude per sparsity + seeds x the readings
    # diagnostic (Wisp: 2 other pairings, Wisp+: 1 q, Whisper: 2 lam)
    n_runs = 2 * 6 * 2 + 2 + 2 * 5
    assert math.isfinite(m["ratio_wisp_act_wanda_50"])  # the second reading of Wisp
    assert len(smoke.tables["runs"]) == n_runs
    verdicts = {c.id: c for c in get_paper("wisp").evaluate(m, "smoke", smoke.reasons)}
    for cid in ("exact_sparsity", "nm_valid", "block_ppl_exact", "whisper_lam_limit"):
        assert verdicts[cid].verdict == "reproduced", cid


def test_tiers_are_configs():
    assert set(TIERS) == {"smoke", "small", "paper"}
    assert all(isinstance(c, Config) for c in TIERS.values())
    assert TIERS["small"].model == "smollm2" and TIERS["smoke"].model == "tiny"
    assert TIERS["paper"].num_calib * TIERS["paper"].calib_len == 128 * 2048


def test_paper_tier_needs_a_model_path():
    with pytest.raises(ValueError, match="model_path"):
        run(Config(model="path", model_path=""))


def test_ratios_are_geometric_means_with_log_scale_intervals(smoke):
    iv = smoke.intervals["ratio_wisp_wanda_50"]
    assert "log scale" in iv["method"] and iv["n"] == 2
    assert iv["lo"] > 0 and iv["lo"] <= smoke.metrics["ratio_wisp_wanda_50"] <= iv["hi"]


def test_every_paper_claim_says_why_the_baseline_is_its_comparison():
    for claim in get_paper("wisp").claims:
        if claim.kind == "paper":
            assert claim.control is None and len(claim.no_control) >= 20, claim.id
            assert all(d in METRICS for d in claim.diagnostics), claim.id


def test_readings_diagnostic_varies_each_inferred_choice_once(smoke):
    from neurips26.papers.wisp.experiment import _reading, _readings

    assert _reading("") == {} and _reading("pairing=random") == {"pairing": "random"}
    assert _reading("lam=5.0") == {"lam": 5.0} and _reading("q=0.5") == {"top_frac": 0.5}
    cfg = TIERS["smoke"]
    got = _readings(cfg)
    assert ("wisp", f"pairing={cfg.pairing}") not in got  # the default is the main run
    assert {m for m, _ in got} == {"wisp", "wisp_plus", "whisper"}
    rows = [r for r in smoke.tables["runs"] if r["reading"]]
    assert {(r["method"], r["reading"]) for r in rows} == set(got)
    assert all(r["sparsity"] == "0.5" for r in rows)  # the smoke tier's highest fraction
    m = smoke.metrics
    best = m["reading_best_ratio_whisper_sparsegpt"]
    assert best <= min(m["reading_ratio_whisper_lam_0p5_sparsegpt"],
                       m["reading_ratio_whisper_lam_5p0_sparsegpt"],
                       m["ratio_whisper_sparsegpt_50"]) + 1e-12
