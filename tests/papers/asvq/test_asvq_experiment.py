"""asvq: the smoke tier runs, its checks hold and it reports declared metrics only."""

from __future__ import annotations

import math

import pytest

from _smoke import smoke_fixture
from neurips26.common.experiment import is_declared
from neurips26.papers.asvq.experiment import (
    METHODS,
    METRICS,
    TIERS,
    VOLATILE,
    Config,
    make_quantizer,
    run,
)

smoke = smoke_fixture(run, TIERS["smoke"])


def test_smoke_metrics(smoke):
    m = smoke.metrics
    assert all(is_declared(k, METRICS) for k in m)
    assert set(VOLATILE) == set(smoke.volatile)
    cfg = TIERS["smoke"]
    # every method, the frozen-codebook control and the variants, on every seed
    assert len(smoke.tables["tokenizers"]) == (len(METHODS) + 1 + len(cfg.variants)) * \
        cfg.num_seeds
    for method in METHODS:
        assert 0 < m[f"usage_digits_{method}_k256"] <= 1
        assert 1 <= m[f"perplexity_digits_{method}_k256"] <= 256
        assert m[f"mse_digits_{method}_k256"] > 0
    assert m["asvq_extra_params"] == 2 * cfg.dim and m["simvq_extra_params"] == cfg.dim**2
    assert m["check_assign_mismatches"] == 0 and m["check_decoupling_leak"] == 0
    assert m["check_straight_through_error"] < 1e-6
    assert 0 < m["flops_ratio_simvq"] < 1.0  # ASVQ skips SimVQ's K x d x d product
    assert all(math.isfinite(v) for v in m.values())
    # the controls: the frozen codebook (mu, sigma never trained) in ASVQ's place
    for name in ("usage_ratio_vanilla_frozen", "mse_ratio_simvq_worst_frozen",
                 "mse_std_ratio_worst_frozen", "spikes_excess_worst_frozen",
                 "frozen_vs_best_variant"):
        assert name in m, name
    # the spike excess is paired by seed: its value is the difference of the two means
    assert m["spikes_excess_worst"] == pytest.approx(
        m["spikes_digits_asvq_k256"] - m["spikes_digits_vanilla_k256"], abs=1e-12)
    assert smoke.intervals["spikes_excess_worst"]["method"] == "t over seeds (paired)"
    # ratios are geometric means over seeds, intervalled on the log scale
    iv = smoke.intervals["usage_ratio_vanilla"]
    assert iv["method"] == "t over seeds on the log scale" and iv["n"] == cfg.num_seeds
    assert 0 < iv["lo"] <= m["usage_ratio_vanilla"] <= iv["hi"]


def test_frozen_control_trains_no_codebook_parameter():
    q = make_quantizer("asvq_frozen", 4, 8, seed=0, commitment_weight=0.25)
    assert not any(p.requires_grad for p in q.parameters())
    assert q.codebook.shape == (8, 4)


def test_make_quantizer_names_every_variant():
    for name in (*METHODS, "asvq_diag", "asvq_per_code", "asvq_ema_stats"):
        q = make_quantizer(name, 4, 8, seed=0, commitment_weight=0.25)
        assert q.codebook.shape == (8, 4)
    assert make_quantizer("asvq_per_code", 4, 8, seed=0, commitment_weight=0.25).scale == \
        "per_code"


def test_tiers_are_configs():
    assert set(TIERS) == {"smoke", "small", "paper"}
    assert all(isinstance(c, Config) for c in TIERS.values())
    assert max(TIERS["paper"].codebook_sizes) == 8192
    assert TIERS["paper"].max_iter > TIERS["small"].max_iter > TIERS["smoke"].max_iter
