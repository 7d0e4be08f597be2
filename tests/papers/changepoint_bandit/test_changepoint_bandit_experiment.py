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
        for name in (claim.metric, claim.control, *claim.diagnostics):
            if name is None:
                continue
            assert name in r.metrics, name
            assert math.isfinite(r.metrics[name]), name
            # every claim metric and control is noisy (medians and rates over runs): it
            # carries a bootstrap interval over instances around its value
            iv = r.intervals[name]
            assert iv["lo"] <= r.metrics[name] <= iv["hi"], name
            assert "bootstrap over instances" in iv["method"], name
        assert claim.uncertainty is None
    assert "mcpi_error_excess_max" in r.metrics


def test_bootstrap_redraws_instances_within_family_and_block():
    """With fewer baseline runs than ours, each method keeps its number of runs."""
    import dataclasses

    from neurips26.experiment import Table

    cfg = dataclasses.replace(experiment.TIERS["smoke"], n_runs=3, n_runs_baselines=2)
    grid = experiment._grid(cfg)
    rows = []
    for key in grid:
        for m in experiment._methods(cfg):
            for i in range(experiment._n_runs(cfg, m)):
                rows.append({**dict(zip(experiment.SETTING, key, strict=True)), "method": m,
                             "run": i, "queries": 100, "correct": True, "finished": True,
                             "detection": 10, "reference": 50.0, "asymptotic": 20.0})
    runs = experiment._runs(Table(rows), cfg)
    assert [len(runs[grid[0]][m]) for m in experiment._methods(cfg)] == [3, 3, 2, 2, 2]
    est = experiment._bootstrap(runs, grid, cfg)
    # identical levels in every cell: the shortfall and the bound ratio cannot move
    assert est["bound_ratio_range"].lo == est["bound_ratio_range"].hi == 1.0
    assert "stratified by family, block" in est["bound_ratio_range"].method
