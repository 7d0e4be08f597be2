"""qc_a2s: the smoke tier runs on a tiny random LLaMA-layout model and passes its checks."""

from __future__ import annotations

import math

import pytest

from neurips26.common.experiment import is_declared
from neurips26.papers.qc_a2s.experiment import METRICS, TIERS, Config, run
from neurips26.registry import get_paper


@pytest.fixture(scope="module")
def smoke():
    return run(TIERS["smoke"])


def test_smoke_metrics(smoke):
    m = smoke.metrics
    assert all(is_declared(k, METRICS) for k in m)
    assert m["snn_ann_max_abs_diff"] == 0.0 and m["closed_form_mismatch"] == 0.0
    assert m["max_spikes_per_neuron"] == 1 and 0 < m["spikes_per_neuron"] <= 1
    assert m["num_stages"] == 4 and m["qc_latency_steps"] == m["qc_min_steps"] * 4
    cfg = TIERS["smoke"]
    for meth in ("qc", "nocalib", "floor", "cont"):
        for t in cfg.steps:
            assert math.isfinite(m[f"ppl_{meth}_t{t}"])
    assert "ppl_cont_t64" in m and "ppl_qc_t64" not in m
    extra_seeds = cfg.num_seeds - 1  # float + QC-A2S and its two ablations at claim_steps
    assert len(smoke.tables["perplexity"]) == 1 + 4 * len(cfg.steps) + 1 + extra_seeds * (1 + 3)
    assert set(smoke.figures) == {"ppl_vs_T"} and smoke.figures["ppl_vs_T"][:4] == b"\x89PNG"


def test_smoke_claims_checks_hold(smoke):
    for c in get_paper("qc_a2s").evaluate(smoke.metrics, "smoke"):
        if "smoke" in c.tiers:
            assert c.verdict == "reproduced", c


def test_tiers_are_configs():
    assert set(TIERS) == {"smoke", "small", "paper"}
    assert all(isinstance(c, Config) for c in TIERS.values())
    assert TIERS["small"].model == "smollm2" and TIERS["smoke"].model == "tiny"
    assert TIERS["small"].claim_steps in TIERS["small"].steps
