"""Smoke run of the changepoint_bandit reproduction."""

import math

from neurips26.papers.changepoint_bandit import experiment
from neurips26.registry import get_paper


def test_smoke_run_metrics_and_determinism():
    cfg = experiment.TIERS["smoke"]
    a = experiment.run(cfg)
    b = experiment.run(cfg)
    assert a.stable_metrics() == b.stable_metrics()
    assert a.metrics["correct_rate_ours_min"] >= 0.0
    assert math.isfinite(a.metrics["uniform_ruptures_over_ours_gmean"])
    assert math.isfinite(a.metrics["uniform_ruptures_over_ours_min"])
    assert set(a.figures) == {"queries_by_method", "bound_and_position"}
    assert all(png[:4] == b"\x89PNG" for png in a.figures.values())
    assert {"method", "median_queries", "correct_rate"} <= set(a.tables["settings"][0])
    paper = get_paper("changepoint_bandit")
    assert all("smoke" not in c.tiers for c in paper.claims)
    assert len(paper.evaluate(a.metrics, "smoke")) == len(paper.claims)


def test_small_tier_produces_every_claim_metric():
    cfg = experiment.TIERS["small"]
    import dataclasses

    tiny = dataclasses.replace(cfg, etas=(1e-2,), n_runs=2, n_runs_baselines=1)
    r = experiment.run(tiny)
    for claim in get_paper("changepoint_bandit").claims:
        assert claim.metric in r.metrics, claim.metric
        assert math.isfinite(r.metrics[claim.metric])
        # every paper claim is noisy (medians and rates over runs): it carries a
        # bootstrap half-width, finite and non-negative
        assert claim.uncertainty == f"{claim.metric}_ci"
        assert 0 <= r.metrics[claim.uncertainty] < math.inf
    assert "mcpi_error_excess_max" in r.metrics
