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
    assert verdicts["replayable"] == "reproduced"
    assert verdicts["completion_drop"] == "not run"
    assert e.TIERS["small"].num_tasks == 25
    # every bootstrapped statistic carries its task-cluster half-width
    for k in e.BOOTSTRAPPED:
        assert f"{k}_ci" in m
    # the replicates carry each drawn task's call records, so a measured recovery rate
    # gets a finite half-width (smoke may inject no transient fault: then NaN and inf)
    if m["recovery_transient"] == m["recovery_transient"]:
        assert 0 <= m["recovery_transient_ci"] < 1
    else:
        assert m["recovery_transient_ci"] == float("inf")
