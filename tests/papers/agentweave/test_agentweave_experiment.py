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
    # one seed: the log-scale interval over seeds is unbounded (never zero-width)
    iv = a.intervals["throughput_ratio_rag"]
    assert math.isfinite(m["throughput_ratio_rag"]) and iv["hi"] == math.inf
    assert "log scale" in iv["method"]
    # the latency claims' control: the never-decompose ablation in AgentWeave's place
    assert math.isfinite(m["never_mean_latency_ratio"]) and m["never_throughput_ratio_rag"] > 0
    assert "_r" not in a.tables["servers"][0]
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
    # intervals come from the layer (log scale over seeds), not from *_ci half-widths
    assert all(c.uncertainty is None for c in paper.claims)
    controls = {c.control for c in paper.claims}
    assert controls == {
        "never_throughput_ratio_mix_and_3rd_template",
        "never_mean_latency_ratio",
        "never_p90_latency_ratio",
        "adaptive_gain_zero_overhead",
        "adaptive_vs_always_high_overhead",
    }
    assert controls <= set(experiment.METRICS)
    assert all(c.tiers == ("small", "paper") for c in paper.claims)


def test_unknown_workload_is_named():
    import pytest

    with pytest.raises(ValueError, match="unknown workload 'chat'"):
        experiment.compare("chat", seed=0, cfg=experiment.TIERS["smoke"])


def test_log_mean_of_gains_and_bad_ratios():
    e = experiment._log_mean([1.1, 1.2, 1.15], minus_one=True)
    assert e.lo < e.value < e.hi and abs(e.value - (1.1 * 1.2 * 1.15) ** (1 / 3) + 1) < 1e-12
    assert math.isnan(experiment._log_mean([1.0, 0.0]).value)


def test_every_claim_control_and_diagnostic_on_a_reduced_small_grid():
    """All five workloads, two seeds, claim 4 and a sweep point each, at the smoke's scale."""
    import dataclasses

    cfg = dataclasses.replace(
        experiment.TIERS["smoke"], workloads=("react", "rag", "debate", "code", "mix"),
        num_seeds=2, mix_devices=8, loads=(0.5, 0.7), sweep_cd=(2.0,), sweep_tool_cv=(0.5,),
        claim4=True)
    r = experiment.run(cfg)
    for claim in get_paper("agentweave").claims:
        for name in (claim.metric, claim.control, *claim.diagnostics):
            assert math.isfinite(r.metrics[name]), name
        iv = r.intervals[claim.metric]
        assert iv["n"] == 2 and iv["lo"] <= r.metrics[claim.metric] <= iv["hi"]
        assert r.intervals[claim.control]["n"] == 2
    assert {"sweep_c_d2_throughput_ratio", "sweep_min_p90_latency_ratio"} <= set(r.metrics)
    assert r.tables["sweep"][0]["point"] == "default" and len(r.tables["sweep"]) == 3
    assert len(r.tables["adaptivity"]) == 4 and len(r.tables["load_sweep"]) == 2
    assert set(r.figures) == {"latency_vs_load", "ratios_by_workload", "servers", "sensitivity"}
