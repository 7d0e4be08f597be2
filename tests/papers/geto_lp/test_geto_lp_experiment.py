"""Smoke run of the GETO-LP reproduction and its claims."""

from __future__ import annotations

from neurips26.papers.geto_lp import experiment
from neurips26.registry import REPRODUCED, get_paper


def test_smoke_run_and_claims():
    res = experiment.run(experiment.TIERS["smoke"])
    m = res.metrics
    assert m["num_instances"] == 2 and m["num_full_solved"] == 2
    assert m["varcount_max_abs_error"] == 0
    assert {"barycenters", "scaling"} <= set(res.figures)
    assert {"instances", "entropic"} <= set(res.tables)
    paper = get_paper("geto_lp")
    verdicts = {c.id: c.verdict for c in paper.evaluate(m, "smoke")}
    for cid in ("exactness", "plan_marginals", "plan_cost", "variable_count", "variable_ratio"):
        assert verdicts[cid] == REPRODUCED, (cid, m)
    assert verdicts["solve_time_32"] == "not run"
    again = experiment.run(experiment.TIERS["smoke"])
    assert again.stable_metrics() == res.stable_metrics()
    # the blur claim's control (the full LP's exact barycenter) and diagnostic are measured
    assert 0 < m["exact_lp_min_support_ratio"] < 3
    assert m["entropic_min_support_ratio_largest_reg"] >= m["entropic_min_support_ratio"]
    # the time ratio is an estimate over GETO's repeats, on the log scale
    iv = res.intervals["solve_time_ratio_largest"]
    assert iv["n"] == experiment.TIERS["smoke"].time_repeats
    assert "log scale" in iv["method"] and iv["lo"] <= m["solve_time_ratio_largest"] <= iv["hi"]
    assert "solve_time_ratio_largest_ci" not in m
