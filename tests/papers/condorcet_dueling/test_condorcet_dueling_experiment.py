"""Smoke run of the condorcet_dueling reproduction."""

import dataclasses
import math

import numpy as np

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


def _record(duels, share=0.5):
    return {"correct": True, "certified": True, "duels": duels, "verification_share": share,
            "H_full": float(duels), "H_winner": 1.0}


def test_resample_keeps_methods_on_the_same_instances_paired():
    base = ("small_winner_gap", 5, 0.01, 0.05)
    settings = {
        ("full_matrix", *base): [_record(d) for d in range(10)],
        ("winner_gap", *base): [_record(100 + d) for d in range(10)],
        ("rucb", *base): [_record(200 + d) for d in range(4)],
    }
    rng = np.random.default_rng(0)
    for _ in range(20):
        rep = experiment._resample(settings, rng)
        ours = [r["duels"] for r in rep[("full_matrix", *base)]]
        theirs = [r["duels"] for r in rep[("winner_gap", *base)]]
        assert [t - 100 for t in theirs] == ours  # the same instances, drawn together
        assert len(rep[("rucb", *base)]) == 4
        assert all(200 <= r["duels"] < 204 for r in rep[("rucb", *base)])


def test_sweep_intervals_are_zero_on_identical_runs_and_positive_on_noisy_ones():
    cfg = experiment.TIERS["smoke"]
    # identical records in every run: every resample gives the point estimate
    sweep_keys = [("small_winner_gap", cfg.sweep_num_arms, wg, cfg.delta)
                  for wg in cfg.winner_gaps]
    settings = {}
    for i, key in enumerate(sweep_keys):
        settings[("full_matrix", *key)] = [_record(10 + i)] * 5
        settings[("winner_gap", *key)] = [_record(1000 // (i + 1))] * 5
    point, *_ = experiment._sweep_stats(settings, cfg)
    rep, *_ = experiment._sweep_stats(experiment._resample(settings, np.random.default_rng(1)),
                                      cfg)
    finite = [k for k in experiment.BOOTSTRAPPED if k in point and math.isfinite(point[k])]
    assert "savings_ratio_small_gap" in finite and "savings_ratio_trend" in finite
    assert all(rep[k] == point[k] for k in finite)
    # the smoke run's runs differ from instance to instance: its savings interval is open
    res = experiment.run(dataclasses.replace(cfg, num_bootstrap=50))
    assert res.metrics["savings_ratio_small_gap_ci"] > 0.0
    for name in experiment.BOOTSTRAPPED:
        assert res.metrics[f"{name}_ci"] >= 0.0, name
