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
    # one device: every AgentWeave policy and both baselines complete the saturated load
    for name in experiment.SERVERS:
        assert m[f"throughput_{name}_rag"] > 0
        assert math.isfinite(m[f"mean_latency_{name}_rag"])
        assert m[f"p90_latency_{name}_rag"] >= m[f"mean_latency_{name}_rag"] * 0.5
    # lockstep batching blocks: AgentWeave's mean latency is lower at the same load
    assert m["mean_latency_adaptive_rag"] < m["mean_latency_aggregated_rag"]
    assert set(a.figures) == {"ratios_by_workload", "servers"}
    assert all(png[:4] == b"\x89PNG" for png in a.figures.values())
    assert {"workload", "server", "throughput"} <= set(a.tables["servers"][0])


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
    assert all(c.tiers == ("small", "paper") for c in paper.claims)


def test_unknown_workload_is_named():
    import pytest

    with pytest.raises(ValueError, match="unknown workload 'chat'"):
        experiment.compare("chat", seed=0, cfg=experiment.TIERS["smoke"])
