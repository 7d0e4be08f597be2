"""noise_aware_routing: the smoke tier runs, reports every metric and passes its checks."""

from __future__ import annotations

import math

import pytest

from _smoke import smoke_fixture
from neurips26.common.experiment import is_declared
from neurips26.papers.noise_aware_routing.experiment import (
    METHODS,
    METRICS,
    TIERS,
    VOLATILE,
    Config,
    run,
)

smoke = smoke_fixture(run, TIERS["smoke"])


def test_smoke_metrics(smoke):
    m = smoke.metrics
    assert all(is_declared(k, METRICS) for k in m)
    assert set(smoke.volatile) <= set(VOLATILE)
    assert m["check_round_trip_error"] == 0 and m["check_ratio0_error"] < 1e-6
    assert m["check_subbatch_error"] < 1e-5
    assert m["nar_vs_tread_flops_error"] < 0.05 and m["nar_vs_dit_span_flops"] < 0.75
    assert m["flops_tread"] < m["flops_dit"]
    for meth in METHODS:
        assert m[f"{meth}_final_fd"] >= 0 and 0 <= m[f"{meth}_final_acc"] <= 1
    assert all(math.isfinite(v) for k, v in m.items() if not k.endswith("_ci"))
    # the evaluator's accuracy carries its binomial half-width over the test images
    assert 0 <= m["clf_test_acc_ci"] < 0.5
    cfg = TIERS["smoke"]
    assert len(smoke.tables["curves"]) == cfg.num_seeds * len(METHODS) * (
        cfg.max_iter // cfg.eval_every)
    assert len(smoke.tables["route_sensitivity"]) == len(cfg.sens_ratios)


def test_tiers_are_configs():
    assert set(TIERS) == {"smoke", "small", "paper"}
    assert all(isinstance(c, Config) for c in TIERS.values())
    assert TIERS["paper"].max_iter > TIERS["small"].max_iter > TIERS["smoke"].max_iter


def test_bad_config_is_refused():
    with pytest.raises(ValueError, match="route_start"):
        run(Config(depth=3, route_start=1, route_end=3))
    with pytest.raises(ValueError, match="methods"):
        run(Config(methods=("nar",)))
