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
    for meth in ("magnitude", "wanda", "sparsegpt", "wisp", "wisp_plus", "whisper"):
        assert math.isfinite(m[f"ppl_{meth}_50"]) and math.isfinite(m[f"ppl_{meth}_2of4"])
    assert math.isnan(m["ratio_wisp_wanda_70"]) and "ratio_wisp_wanda_70" in smoke.reasons
    n_runs = 2 * 5 * 2 + 2  # seeds x seeded methods x sparsities + magnitude per sparsity
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
