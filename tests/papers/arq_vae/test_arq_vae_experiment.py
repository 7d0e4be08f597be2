"""arq_vae: the smoke tier runs, its checks hold and it reports every declared metric."""

from __future__ import annotations

import math

from _smoke import smoke_fixture
from neurips26.common.experiment import is_declared
from neurips26.papers.arq_vae.experiment import METRICS, TIERS, VOLATILE, Config, run
from neurips26.papers.arq_vae.paper import PAPER

smoke = smoke_fixture(run, TIERS["smoke"])


def test_smoke_metrics(smoke):
    m = smoke.metrics
    assert all(is_declared(k, METRICS) for k in m)
    assert set(VOLATILE) == set(smoke.volatile)
    assert m["check_truncation_mismatch"] == 0
    assert m["check_bytes_mismatch"] == 0
    assert m["check_budget_violations"] == 0
    assert m["check_prefix_decode_error"] <= 1e-5
    for den in (4, 8):
        assert m[f"bytes_arq_b{den}"] <= m[f"bytes_pca_b{den}"] * 10
        for meth in ("arq", "fixed", "pca", "subsample", "kmeans"):
            assert 0 <= m[f"f1_{meth}_b{den}"] <= 100
    assert 0 <= m["f1_orig"] <= 100 and 0 <= m["frame_acc_logistic"] <= 1
    assert math.isnan(m["real_acc_ratio"]) and "real_acc_ratio" in smoke.reasons
    nan = [k for k, v in m.items() if isinstance(v, float) and math.isnan(v)]
    assert all(k in smoke.reasons for k in nan)
    # seeds x budgets x methods, and the shuffled-pairing control at the smallest budget;
    # the second noise reading: the smallest budget, the memory (with and without
    # fine-tuning, shuffled pairing) and k-means
    assert len(smoke.tables["memories"]) == 2 * 2 * 6 + 2 + 2 * 4
    # MS-TCN ran under the plateau rule: every training within the cap
    assert 0 < m["mstcn_steps_max"] <= TIERS["smoke"].mstcn_iter
    assert 0 <= m["mstcn_plateau_fraction"] <= 1


def test_controls_are_measured(smoke):
    """Each control is finite on the smoke run, with its interval over the two seeds."""
    m, iv = smoke.metrics, smoke.intervals
    for k in ("extreme_f1_ratio_kmeans", "finetune_error_drop_shuffled",
              "finetune_f1_gain_shuffled", "unsup_edit_gap_shuffled",
              "extreme_f1_ratio_kmeans_noise2", "finetune_error_drop_shuffled_noise2",
              "finetune_f1_gain_shuffled_noise2"):
        assert math.isfinite(m[k]), k
        assert iv[k]["n"] == 2 and iv[k]["lo"] <= m[k] <= iv[k]["hi"], k
    for c in PAPER.claims:
        if c.control:
            assert is_declared(c.control, METRICS) and c.control in m
    # the fine-tuning drop is 1 - the geometric-mean error ratio: at most 1
    assert iv["finetune_error_drop"]["hi"] <= 1


def test_claims_name_declared_metrics():
    for c in PAPER.claims:
        assert is_declared(c.metric, METRICS)
        if c.uncertainty:
            assert is_declared(c.uncertainty, METRICS)


def test_tiers_are_configs():
    assert set(TIERS) == {"smoke", "small", "paper"}
    assert all(isinstance(c, Config) for c in TIERS.values())
    assert TIERS["paper"].num_videos > TIERS["small"].num_videos > TIERS["smoke"].num_videos


def test_incremental_unit_measures_every_arm():
    """The incremental unit trains task 1, then task 2 with float32, memory and no replay;
    every F1 is a percentage and the memory is within its budget."""
    from dataclasses import replace

    from neurips26.papers.arq_vae.experiment import _incremental

    cfg = replace(TIERS["smoke"], num_videos=24, num_test=8, num_val=8, incremental=True,
                  mstcn_iter=10)
    row = _incremental(cfg, 0, "cpu")
    for k in ("before", "full", "arq", "none"):
        assert 0 <= row[f"f1_t1_{k}"] <= 100, k
    assert row["arq_bytes"] <= row["float32_bytes"] * cfg.incr_budget
    assert 0 < row["steps_max"] <= cfg.mstcn_iter
