"""sign_code: the smoke tier runs on the layer and measures every control."""

from __future__ import annotations

import math

import numpy as np
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


def test_the_margin_ratio_claim_and_its_control_carry_a_bootstrap(smoke):
    # one network per width: whether the ratio grows at every step is resampled over the
    # test inputs, so a flip of the test sample cannot pass as a verdict
    for key in ("margin_ratio_increasing", "untrained_margin_ratio_increasing"):
        iv = smoke.intervals[key]
        assert "bootstrap over test inputs" in iv["method"], key
        assert iv["n"] > 1 and iv["lo"] <= iv["value"] <= iv["hi"]
        assert iv["value"] in (0.0, 1.0) and 0.0 <= iv["lo"] <= iv["hi"] <= 1.0


def test_ratio_increasing_reads_sign_parts_then_residuals():
    from neurips26.papers.sign_code.experiment import _ratio_increasing

    ones = np.ones((5, 1))
    # |sign| means 1, 2, 3 over |residual| means 1: the ratio increases at every step
    assert _ratio_increasing(np.hstack([ones, 2 * ones, 3 * ones, ones, ones, ones])) == 1.0
    # residuals growing faster than the sign part: the ratio falls
    assert _ratio_increasing(np.hstack([ones, 2 * ones, 3 * ones, ones, 4 * ones,
                                        9 * ones])) == 0.0


def test_the_resnet_diagnostic_has_a_no_skip_network_and_sign_propagation(smoke):
    m, tables = smoke.metrics, smoke.tables
    rows = {r["variant"]: r for r in tables["resnet_diagnostic"]}
    assert rows["noskip"]["skip"] is False and rows["base"]["skip"] is True
    assert rows["noskip"]["channels"] == rows["base"]["channels"]
    assert rows["noskip"]["steps"] == rows["base"]["steps"]
    for v in ("base", "noskip"):
        for key in (f"resnet_diag_next_sign_kept_{v}", f"resnet_diag_last_sign_kept_{v}"):
            assert 0.0 <= m[key] <= 1.0, key
    assert m["resnet_diag_drop_noskip"] == rows["noskip"]["test_acc"] - rows["noskip"][
        "magnitude_acc"]
    prop = tables["resnet_sign_propagation"]
    names = {v: [r["name"] for r in prop if r["variant"] == v] for v in ("base", "noskip")}
    # the same sites in both networks, every one but the last (nothing after it)
    assert names["base"] == names["noskip"] and len(names["base"]) > 1
    assert [r["site"] for r in prop if r["variant"] == "base"] == list(range(len(names["base"])))


def test_sign_propagation_equals_sign_codes_read_under_the_same_noise():
    import torch

    from neurips26.papers.sign_code import (
        calibrate_magnitudes,
        make_resnet,
        randomize_magnitudes,
        sign_code,
    )
    from neurips26.papers.sign_code.experiment import Config, _sign_propagation

    net = make_resnet(in_channels=1, num_classes=3, channels=(2, 4), blocks=1, seed=0).eval()
    x = torch.randn(20, 1, 6, 6, generator=torch.Generator().manual_seed(0)).numpy()
    rms = calibrate_magnitudes(net, x)
    cfg = Config(magnitude_draws=1)
    rows = _sign_propagation(net, x, rms, cfg, 3, "base")
    n = len(rms)
    assert [r["site"] for r in rows] == list(range(n - 1))
    for r in rows:
        i = r["site"]
        clean_next, clean_last = sign_code(net, x, layers=[i + 1]), sign_code(net, x,
                                                                              layers=[-1])
        with randomize_magnitudes(net, rms, seed=3000, only=(i,)):
            noisy_next = sign_code(net, x, layers=[i + 1])
        with randomize_magnitudes(net, rms, seed=3000, only=(i,)):
            noisy_last = sign_code(net, x, layers=[-1])
        assert r["next_kept"] == pytest.approx(float((noisy_next == clean_next).double().mean()))
        assert r["last_kept"] == pytest.approx(float((noisy_last == clean_last).double().mean()))
    # a site's noise changes some signs after it somewhere in this network
    assert min(r["next_kept"] for r in rows) < 1.0
