"""Smoke run of the reproduction and its claims."""

from neurips26.papers.mcp_injector import experiment as e
from neurips26.registry import get_paper


def test_smoke_run_and_claims():
    r = e.run(e.TIERS["smoke"])
    m = r.metrics
    assert m["replay_ok"] is True
    assert m["fidelity_min_p"] > 0.01 and m["intermittent_abs_z"] <= 3
    assert m["num_cells"] == 8
    assert set(r.figures) == {"completion", "recovery"}
    paper = get_paper("mcp_injector")
    verdicts = {c.id: c.verdict for c in paper.evaluate(m, "smoke")}
    kinds = {c.id: c.kind for c in paper.claims}
    assert kinds["large_better_without_faults"] == kinds["large_meets_more_faults"] == "check"
    assert verdicts["replayable"] == "reproduced"
    assert verdicts["completion_drop"] == "not run"
    assert e.TIERS["small"].num_tasks == 25
    # every bootstrapped statistic the smoke grid measures carries its task-cluster interval
    for k in e.BOOTSTRAPPED:
        if k in m and m[k] == m[k]:
            iv = r.intervals[k]
            assert iv["lo"] <= m[k] <= iv["hi"] and "bootstrap over tasks" in iv["method"], k
    # the control of large_worse_under_faults: the same difference without faults
    assert m["small_minus_large_none"] == -m["large_minus_small_none"]
    # the replicates carry each drawn task's call records, so a measured recovery rate
    # gets a finite interval (smoke may inject no transient fault: then NaN, no interval)
    if m["recovery_transient"] == m["recovery_transient"]:
        iv = r.intervals["recovery_transient"]
        assert 0 <= iv["lo"] <= iv["hi"] <= 1
    else:
        assert "recovery_transient" not in r.intervals


def test_p_value_diagnostics_leave_the_grid_metrics_alone():
    """The p-value claims' diagnostics are measured on a reduced grid, and running the
    extra tasks (their own seed) changes no other metric."""
    import dataclasses

    cfg = dataclasses.replace(
        e.TIERS["smoke"], stacks=("plan_execute", "obs_loop"),
        conditions=("none", "calibrated", "uniform_severe"), num_tasks=3, num_extra_tasks=2)
    with_extra = e.run(cfg)
    without = e.run(dataclasses.replace(cfg, num_extra_tasks=0))
    m = with_extra.metrics
    for claim in get_paper("mcp_injector").claims:
        if claim.id in ("completion_drop_significant", "stack_size_interaction"):
            assert claim.diagnostics
            for name in claim.diagnostics:
                assert 0 <= m[name] <= 1, name
    assert m["num_cells_more_cells"] == m["num_cells"] + 3 * 2 * 2 * 2
    new = {"mannwhitney_p_more_cells", "interaction_p_more_cells", "num_cells_more_cells"}
    assert set(m) - set(without.metrics) == new
    stable = without.stable_metrics()
    assert {k: v for k, v in with_extra.stable_metrics().items() if k not in new} == stable
