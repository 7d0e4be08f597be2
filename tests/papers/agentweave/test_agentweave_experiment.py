"""Smoke run of the agentweave reproduction and its claims."""

import math

from neurips26.papers.agentweave import experiment
from neurips26.registry import get_paper


def test_smoke_run_is_deterministic_and_sane():
    cfg = experiment.TIERS["smoke"]
    a = experiment.run(cfg)
    b = experiment.run(cfg)
    assert a.stable_metrics() == b.stable_metrics()
    m = a.metrics
    for name in experiment.SERVERS:
        assert m[f"capacity_{name}_rag"] > 0
        assert math.isfinite(m[f"mean_latency_{name}_rag"])
        assert m[f"p90_latency_{name}_rag"] >= m[f"mean_latency_{name}_rag"] * 0.5
        assert 0 < m[f"kv_peak_fraction_{name}_rag"] <= 1
    assert m["capacity_runs_saturated"] is True
    assert math.isfinite(m["throughput_ratio_rag"]) and m["throughput_ratio_ci_rag"] == math.inf
    assert set(a.figures) == {"ratios_by_workload", "servers"}
    assert all(png[:4] == b"\x89PNG" for png in a.figures.values())
    assert {"workload", "server", "capacity", "mean_at_0.7"} <= set(a.tables["servers"][0])
    assert a.tables["best_baselines"][0]["best_throughput"] in experiment.BASELINES


def test_claims_name_metrics_of_the_small_tier():
    paper = get_paper("agentweave")
    keys = {f.name for f in experiment.Config.__dataclass_fields__.values()}
    assert "seed" in keys
    produced = {
        "throughput_ratio_mix_and_3rd_template",
        "mean_latency_ratio",
        "p90_latency_ratio",
        "adaptive_gain_high_overhead",
        "adaptive_vs_always_zero_overhead",
    }
    assert {c.metric for c in paper.claims} == produced
    assert all(c.uncertainty == c.metric + "_ci" for c in paper.claims)
    assert all(c.uncertainty in experiment.METRICS for c in paper.claims)
    assert all(c.tiers == ("small", "paper") for c in paper.claims)


def test_unknown_workload_is_named():
    import pytest

    with pytest.raises(ValueError, match="unknown workload 'chat'"):
        experiment.compare("chat", seed=0, cfg=experiment.TIERS["smoke"])
