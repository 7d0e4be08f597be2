"""Smoke run of the condorcet_dueling reproduction."""

import dataclasses
import math

import numpy as np

from neurips26.experiment import Table
from neurips26.papers.condorcet_dueling import experiment
from neurips26.registry import get_paper


def test_smoke_run_metrics_and_claims():
    # determinism (two runs, same stable metrics) is the paper contract's test for every paper
    cfg = experiment.TIERS["smoke"]
    a = experiment.run(cfg)
    paper = get_paper("condorcet_dueling")
    for claim in paper.claims:
        assert claim.metric in a.metrics, claim.metric
        assert math.isfinite(a.metrics[claim.metric])
    assert a.metrics["error_rate_small_winner_gap"] <= 1.0
    assert a.metrics["savings_ratio_small_gap"] > 1.0
    assert set(a.figures) == {"duels_by_method", "savings_and_complexity", "verification_share"}
    assert all(png[:4] == b"\x89PNG" for png in a.figures.values())
    assert {"method", "median_duels"} <= set(a.tables["settings"][0])
    assert "error_rate_small_winner_gap" in a.intervals  # a Wilson interval


def _record(duels, share=0.5, method="full_matrix", run=0):
    base = {"method": method, "kind": "small_winner_gap", "K": 5, "winner_gap": 0.01,
            "delta": 0.05, "run": run}
    return {**base, "correct": True, "certified": True, "duels": duels,
            "verification_share": share, "H_full": float(duels), "H_winner": 1.0,
            "final_round": 3}


def test_bootstrap_keeps_methods_on_the_same_instances_paired():
    rows = ([_record(d, run=d) for d in range(10)]
            + [_record(100 + d, method="winner_gap", run=d) for d in range(6)]
            + [_record(200 + d, method="rucb", run=d) for d in range(3)])
    settings = experiment._settings(Table(rows))
    inst, bases, counts = experiment._instances(settings)
    assert len(inst) == 10 and len(bases) == 1
    assert counts == [{"full_matrix": 10, "winner_gap": 6, "rucb": 3}]
    # instances 0-2 ran every method, 3-5 all but RUCB, 6-9 ours alone: three strata
    assert [len(g) for g in inst.groups("setting and block").values()] == [3, 3, 4]
    seen = []

    def statistic(drawn):
        key = [r["key"] for r in drawn]
        seen.append(key)
        return float(len(key))

    inst.bootstrap(statistic, unit="instance", strata="setting and block", num_resamples=30)
    for key in seen:
        runs = [i for _, i in key]
        assert sum(i < 3 for i in runs) == 3 and sum(3 <= i < 6 for i in runs) == 3
        assert len(runs) == 10  # each method keeps its number of runs


def test_sweep_intervals_are_zero_on_identical_runs_and_open_on_noisy_ones():
    cfg = dataclasses.replace(experiment.TIERS["smoke"], num_bootstrap=50)
    rows = []
    for i, wg in enumerate(cfg.winner_gaps):
        for run in range(5):
            for method, d in (("full_matrix", 10 + i), ("winner_gap", 1000 // (i + 1))):
                rows.append({**_record(d, method=method, run=run), "winner_gap": wg,
                             "K": cfg.sweep_num_arms})
    table = Table(rows)
    est = experiment._bootstrap(table, experiment._settings(table), cfg)
    for name in ("savings_ratio_small_gap", "savings_ratio_trend"):
        assert est[name].lo == est[name].value == est[name].hi, name
        assert "stratified" in est[name].method
    # the smoke run's runs differ from instance to instance: its savings interval is open
    res = experiment.run(cfg)
    iv = res.intervals["savings_ratio_small_gap"]
    assert iv["lo"] < iv["hi"]
    for name in experiment.BOOTSTRAPPED:
        assert res.intervals[name]["lo"] <= res.metrics[name] <= res.intervals[name]["hi"]


def test_smoke_run_measures_every_control_and_diagnostic():
    res = experiment.run(experiment.TIERS["smoke"])
    for claim in get_paper("condorcet_dueling").claims:
        for name in ((claim.control,) if claim.control else ()) + claim.diagnostics:
            assert math.isfinite(res.metrics[name]), name
            if claim.control:
                assert name in res.intervals or name == "round_trend", name
    # the controls' scales are the claims' own: a ratio and a log2 ratio
    assert math.isclose(res.metrics["ratio_bradley_terry"],
                        2 ** res.metrics["log2_ratio_bradley_terry"])
    assert math.isclose(res.metrics["log2_savings_ratio_small_gap"],
                        math.log2(res.metrics["savings_ratio_small_gap"]))


def test_median_is_numpys():
    rng = np.random.default_rng(0)
    for n in (1, 2, 5, 8):
        v = [int(x) for x in rng.integers(0, 10**6, n)]
        got = experiment._median({"k": [{"duels": x} for x in v]}, "k")
        assert got == float(np.median(v))
    assert math.isnan(experiment._median({"k": [{"duels": math.nan}]}, "k"))
