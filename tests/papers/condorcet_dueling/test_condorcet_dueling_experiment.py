"""Smoke run of the condorcet_dueling reproduction."""

import math

from neurips26.papers.condorcet_dueling import experiment
from neurips26.registry import get_paper


def test_smoke_run_metrics_claims_and_determinism():
    cfg = experiment.TIERS["smoke"]
    a = experiment.run(cfg)
    b = experiment.run(cfg)
    assert a.stable_metrics() == b.stable_metrics()
    paper = get_paper("condorcet_dueling")
    for claim in paper.claims:
        assert claim.metric in a.metrics, claim.metric
        assert math.isfinite(a.metrics[claim.metric])
    assert a.metrics["error_rate_small_winner_gap"] <= 1.0
    assert a.metrics["savings_ratio_small_gap"] > 1.0
    assert set(a.figures) == {"duels_by_method", "savings_and_complexity", "verification_share"}
    assert all(png[:4] == b"\x89PNG" for png in a.figures.values())
    assert {"method", "median_duels"} <= set(a.tables["settings"][0])
