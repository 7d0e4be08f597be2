"""delta_mem: the smoke tier runs, declares its metrics and passes its checks."""

from __future__ import annotations

import dataclasses

from neurips26.common.experiment import is_declared
from neurips26.papers.delta_mem import experiment
from neurips26.papers.delta_mem.paper import PAPER


def test_smoke_run_metrics_and_checks():
    cfg = dataclasses.replace(experiment.TIERS["smoke"], seed=2)
    res = experiment.run(cfg)
    m = res.metrics
    assert all(is_declared(k, experiment.METRICS) for k in m)
    for claim in PAPER.claims:
        assert is_declared(claim.metric, experiment.METRICS)
    assert m["state_floats_per_layer"] == 64
    assert m["check_zero_init_error"] == 0.0
    assert m["check_backbone_unchanged"] == 1.0
    assert m["check_scan_error"] < 1e-9
    assert m["lora_param_mismatch"] < 0.05
    for meth in experiment.METHODS:
        assert 0.0 <= m[f"{meth}_avg"] <= 1.0
    assert m["train_loss_last"] < m["train_loss_first"]
    assert res.intervals["lm_loss_ratio"]["hi"] == float("inf")  # one seed: no spread known
    for name in ("ratio_vs_frozen_in_context", "untrained_ratio_vs_frozen_in_context",
                 "in_context_heavy_over_single"):  # the controls and the fair baseline
        assert name in m and name in res.intervals
    assert res.tables["accuracy"] and "accuracy" in res.figures


def test_a_window_too_short_for_the_whole_dialogue_leaves_the_in_context_baseline_unmeasured():
    """Where the dialogue does not fit the window, the in-context baseline (and the claim
    judged against it) is NaN with a reason; every other metric is still measured."""
    cfg = dataclasses.replace(experiment.TIERS["smoke"], window=16, num_eval=3, num_oracle=1,
                              train_iter=2, lora_iter=1)
    res = experiment.run(cfg)
    m = res.metrics
    assert m["ratio_vs_frozen_in_context"] != m["ratio_vs_frozen_in_context"]  # NaN
    assert "window" in res.reasons["ratio_vs_frozen_in_context"]
    assert "window" in res.reasons["oracle_avg"]
    assert 0.0 <= m["delta_avg"] <= 1.0 and "ratio_vs_best" in res.intervals
