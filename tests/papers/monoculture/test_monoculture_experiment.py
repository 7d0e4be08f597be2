"""Smoke run of the monoculture experiment and its claims."""

import numpy as np
import pytest

from neurips26.common.experiment import ConfigError
from neurips26.papers.monoculture import experiment as mono
from neurips26.registry import get_paper
from neurips26.runner import resolve_config


def test_smoke_run_claims_evaluate():
    # determinism (two runs, same stable metrics) is the paper contract's test for every paper
    paper = get_paper("monoculture")
    exp = paper.experiment()
    cfg = exp.TIERS["smoke"]
    a = exp.run(cfg)
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
    # the reduction claim and its control carry a bootstrap over items, both nulls
    # refitted on each draw (the point values are the reductions on all items)
    for key, items in (("zoo_max_reduction", 178), ("planted_reduction", cfg.num_items)):
        iv = a.intervals[key]
        assert iv["method"].startswith("percentile bootstrap over items"), key
        assert iv["n"] == items and iv["level"] == 0.95, key
        assert np.isfinite(iv["lo"]) and np.isfinite(iv["hi"]), key
        assert iv["lo"] <= a.metrics[key] <= iv["hi"] and iv["lo"] < iv["hi"], key
    assert a.metrics["zoo_max_reduction"] == a.metrics["zoo_wine_reduction"]


# ---------------------------------------------------------------- config values (--set)
@pytest.mark.parametrize("overrides, key, allowed", [
    ({"zoo_size": "huge"}, "zoo_size", "'full', 'tiny'"),
    ({"zoo_size": "Full"}, "zoo_size", "'full', 'tiny'"),
    ({"clone_a": "bogus"}, "clone_a", "'logreg_C1'"),
    ({"clone_b": "bogus"}, "clone_b", "'linear_svc'"),
    # rbf_svc is in the full zoo but not in the tiny one the smoke tier uses
    ({"clone_a": "rbf_svc"}, "clone_a", "'knn7'"),
    ({"clone_b": "logreg_C1"}, "clone_b", "clone_a"),
])
def test_bad_zoo_values_are_refused_before_the_run(overrides, key, allowed, monkeypatch):
    # nothing may be measured: a run that started would call measure
    monkeypatch.setattr(mono.MonocultureExperiment, "measure",
                        lambda *a, **k: pytest.fail("the run started"))
    with pytest.raises(ConfigError, match=key) as info:
        resolve_config("monoculture", "smoke", overrides=overrides)
    assert isinstance(info.value, ValueError)
    assert allowed in str(info.value)


def test_good_zoo_values_are_accepted():
    _, cfg = resolve_config("monoculture", "small", overrides={
        "zoo_size": "full", "clone_a": "rbf_svc", "clone_b": "knn3"})
    assert (cfg.zoo_size, cfg.clone_a, cfg.clone_b) == ("full", "rbf_svc", "knn3")
    _, cfg = resolve_config("monoculture", "smoke", overrides={"zoo_size": "tiny"})
    assert cfg.clone_a in mono.zoo_members("tiny")
    for tier in mono.TIERS.values():  # every tier's own config is valid
        assert tier.clone_a in mono.zoo_members(tier.zoo_size)


def test_zoo_members_name_the_zoo():
    assert tuple(mono._zoo("full", 0)) == mono.ZOO_MODELS
    assert tuple(mono._zoo("tiny", 0)) == mono.zoo_members("tiny")
    assert set(mono.zoo_members("tiny")) < set(mono.ZOO_MODELS)
    with pytest.raises(ValueError, match="size"):
        mono.zoo_members("huge")
    with pytest.raises(ConfigError, match="zoo_size"):  # the Python API refuses it too
        mono.Config(zoo_size="huge")
