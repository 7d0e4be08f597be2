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
    assert 0.0 <= m["matcher_test_accuracy_ci"] <= 0.5  # a bootstrap over test queries
    assert {"learning_curve", "attacks"} <= set(res.tables)
    verdicts = {c.id: c.verdict for c in get_paper("seagram").evaluate(m, "smoke")}
    for cid in ("no_solver_at_test", "vf2_matches_bruteforce", "monotonicity_rules",
                "planted_relevant"):
        assert verdicts[cid] == REPRODUCED, (cid, m)
    assert verdicts["active_learning_saves_calls"] == NOT_RUN
