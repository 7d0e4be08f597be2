"""sign_code: the smoke tier runs on the layer and measures every control."""

from __future__ import annotations

import math

import pytest

from neurips26.common.experiment import is_declared
from neurips26.papers.sign_code.experiment import METRICS, TIERS, run
from neurips26.registry import get_paper


@pytest.fixture(scope="module")
def smoke():
    return run(TIERS["smoke"])


def test_smoke_metrics_and_tables(smoke):
    m = smoke.metrics
    assert all(is_declared(k, METRICS) for k in m)
    assert {"models", "width_sweep", "regulariser"} <= set(smoke.tables)
    assert len(smoke.tables["width_sweep"]) == len(TIERS["smoke"].widths)


def test_every_paper_claim_has_a_control_or_a_reason(smoke):
    for claim in get_paper("sign_code").claims:
        if claim.kind != "paper":
            continue
        assert claim.control or len(claim.no_control) >= 20, claim.id
        if claim.control and claim.control != "overlap_spearman_dataset_only":
            assert math.isfinite(float(smoke.metrics[claim.control])), claim.control
    # one data set at smoke: the data set alone cannot order the models
    assert "overlap_spearman_dataset_only" in smoke.reasons


def test_the_untrained_margin_control_differs_from_the_trained_one(smoke):
    m = smoke.metrics
    assert m["untrained_margin_slope_error"] != m["margin_slope_error"]
    assert "untrained_margin_slope_error" in smoke.intervals
