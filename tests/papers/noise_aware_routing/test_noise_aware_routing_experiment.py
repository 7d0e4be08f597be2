"""noise_aware_routing: the smoke tier runs, reports every metric and passes its checks."""

from __future__ import annotations

import math

import pytest

from _smoke import smoke_fixture
from neurips26.common.experiment import is_declared
from neurips26.papers.noise_aware_routing import eval_schedule
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
    assert all(math.isfinite(v) for k, v in m.items() if k != "guided_fid_imagenet256")
    # the abstract's guided FID is listed, not measured (ImageNet and Inception offline)
    assert math.isnan(m["guided_fid_imagenet256"])
    assert "ImageNet" in smoke.reasons["guided_fid_imagenet256"]
    # the evaluator's accuracy carries its binomial interval over the test images
    ci = smoke.intervals["clf_test_acc"]
    assert ci["lo"] <= m["clf_test_acc"] <= ci["hi"] and ci["n"] == TIERS["smoke"].num_test
    assert "binomial" in ci["method"]
    cfg = TIERS["smoke"]
    total = int(m["dit_train_steps"])
    assert 1 <= total <= cfg.max_iter and m["dit_plateau_fraction"] in (0.0, 1.0)
    assert m["dit_plateau_fraction"] == 1.0 or total == cfg.max_iter
    # every method is evaluated on the same grid, up to DiT's steps
    grid = eval_schedule(total, cfg.eval_every, cfg.eval_growth)
    assert len(smoke.tables["curves"]) == cfg.num_seeds * len(METHODS) * len(grid)
    assert {r["step"] for r in smoke.tables["curves"]} == set(grid.tolist())
    assert m["max_resolvable_speedup"] == total / cfg.eval_every
    for name in ("route_sensitivity", "route_sensitivity_placebo",
                 "route_sensitivity_untrained"):
        assert len(smoke.tables[name]) == len(cfg.sens_ratios)
    assert {r["ratio"] for r in smoke.tables["route_sensitivity_placebo"]} == {
        cfg.sens_placebo_ratio}


def test_controls_are_measured(smoke):
    """The controls are finite: DiT's own speedup (at most max_iter / first eval step, and
    1 when its FD curve reaches its final value only at the end), the reversed ordering's
    gains, and R(r)'s step on the untrained DiT (not identically zero: its weights are
    moved off adaLN-zero's identity start)."""
    m = smoke.metrics
    cfg = TIERS["smoke"]
    assert 0 < m["dit_speedup_vs_dit"] <= cfg.max_iter / cfg.eval_every
    assert 0 < m["dit_loss_speedup_vs_dit"] <= cfg.max_iter / cfg.eval_every
    for k in ("reversed_fd_gain_vs_tread", "reversed_fd_gain_vs_dit",
              "reversed_acc_gain_vs_dit", "sens_min_step_z_untrained",
              "sens_min_step_z_placebo"):
        assert math.isfinite(m[k]), k
    assert any(r["R"] != 0 for r in smoke.tables["route_sensitivity_untrained"])


def test_tiers_are_configs():
    assert set(TIERS) == {"smoke", "small", "paper"}
    assert all(isinstance(c, Config) for c in TIERS.values())
    assert TIERS["paper"].max_iter > TIERS["small"].max_iter > TIERS["smoke"].max_iter


def test_bad_config_is_refused():
    with pytest.raises(ValueError, match="route_start"):
        run(Config(depth=3, route_start=1, route_end=3))
    with pytest.raises(ValueError, match="methods"):
        run(Config(methods=("nar",)))
