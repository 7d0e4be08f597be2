"""Smoke run of the SEAGRAM reproduction and its claims."""

from __future__ import annotations

from neurips26.papers.seagram import experiment
from neurips26.registry import NOT_RUN, REPRODUCED, get_paper


def test_smoke_run_and_claims():
    res = experiment.run(experiment.TIERS["smoke"])
    m = res.metrics
    assert set(m) == set(experiment.METRICS)
    assert m["attack_solver_calls"] == 0
    assert m["oracle_attack_solver_calls"] >= 0
    assert 0.0 <= m["label_preserved"] <= 1.0
    acc = res.intervals["matcher_test_accuracy"]  # a bootstrap over test queries
    assert acc["method"] == "percentile bootstrap over test queries"
    assert acc["lo"] <= m["matcher_test_accuracy"] <= acc["hi"]
    # label preservation: resampled by query (a query's pairs are not independent)
    kept = res.intervals["label_preserved"]
    assert kept["method"] == "percentile bootstrap over queries"
    assert kept["n"] == experiment.TIERS["smoke"].num_queries
    assert kept["lo"] <= m["label_preserved"] <= kept["hi"]
    # the controls are measured with their intervals
    for k in ("map_drop_random", "drop_ratio_oracle_random", "label_preserved_unconstrained"):
        assert k in res.intervals and 0.0 <= res.intervals[k]["hi"], k
    for c in get_paper("seagram").claims:
        if c.kind == "paper":
            assert c.control in m if c.control else len(c.no_control) >= 20
    assert {"learning_curve", "attacks"} <= set(res.tables)
    verdicts = {c.id: c.verdict for c in get_paper("seagram").evaluate(m, "smoke")}
    for cid in ("no_solver_at_test", "vf2_matches_bruteforce", "monotonicity_rules",
                "planted_relevant"):
        assert verdicts[cid] == REPRODUCED, (cid, m)
    assert verdicts["active_learning_saves_calls"] == NOT_RUN
