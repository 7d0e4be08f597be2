"""Smoke run of the monoculture experiment and its claims."""

import numpy as np

from neurips26.registry import get_paper


def test_smoke_run_deterministic_and_claims_evaluate():
    paper = get_paper("monoculture")
    exp = paper.experiment()
    cfg = exp.TIERS["smoke"]
    a = exp.run(cfg)
    b = exp.run(cfg)
    assert a.stable_metrics() == b.stable_metrics()
    assert a.metrics["synth_accuracy_mean_excess"] > 0
    assert "mean_excess_by_null" in a.figures
    assert len(paper.evaluate(a.metrics, "smoke")) == len(paper.claims)
    for control in ("synth_equal_difficulty_accuracy_ci_low", "planted_reduction",
                    "synth_independent_shift_ratio", "zoo_random_item_split_separation",
                    "zoo_shuffled_clone_shift_ratio"):
        assert np.isfinite(a.metrics[control]), control
    # equally difficult items leave the accuracy null nothing to mistake for monoculture
    assert a.metrics["synth_equal_difficulty_accuracy_ci_low"] < a.metrics[
        "synth_accuracy_ci_low"]
