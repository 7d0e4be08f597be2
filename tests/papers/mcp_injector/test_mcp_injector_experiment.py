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
