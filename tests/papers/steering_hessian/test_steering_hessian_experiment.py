"""steering_hessian: the smoke tier runs on the tiny model and reports every metric."""

from __future__ import annotations

import math

import pytest

from neurips26.papers.steering_hessian.experiment import METRICS, TIERS, VOLATILE, Config, run
from neurips26.registry import get_paper


@pytest.fixture(scope="module")
def smoke():
    return run(TIERS["smoke"])


def test_smoke_metrics(smoke):
    m = smoke.metrics
    assert set(m) <= set(METRICS) and set(VOLATILE) == set(smoke.volatile)
    assert m["num_conditions"] == 2 and len(smoke.tables["conditions"]) == 2
    assert m["check_hessian_fd_error"] <= 1e-3 and m["check_lanczos_error"] <= 1e-5
    assert m["check_closed_form_error"] <= 1e-10 and m["check_zero_steer_error"] == 0
    assert 0 <= m["sharp_share_median"] <= 1 and -1 <= m["removal_cosine_median"] <= 1
    assert 0 <= m["anti_steer_rate_min"] <= 1 and 0 <= m["generation_win_frac"] <= 1
    assert m["num_hvp_per_condition"] == 32  # dense: one HVP per dimension of the tiny model
    # the smoke tier steers one behaviour: the other's unsteered choice accuracy is missing
    assert math.isnan(m["choice_acc_refusal"]) and 0 <= m["choice_acc_sentiment"] <= 1
    finite = {k: v for k, v in m.items() if not k.endswith("_ci") and k != "choice_acc_refusal"}
    assert all(math.isfinite(v) for v in finite.values()), finite
    assert "curvature" in smoke.figures


def test_every_paper_claim_has_its_random_subspace_control(smoke):
    for claim in get_paper("steering_hessian").claims:
        if claim.kind == "paper":
            assert claim.control and claim.control.startswith("random_"), claim.id
            assert math.isfinite(smoke.metrics[claim.control]), claim.control
            assert claim.control in smoke.intervals, claim.control


def test_claims_evaluate_on_smoke(smoke):
    results = get_paper("steering_hessian").evaluate(smoke.metrics, "smoke")
    checks = {r.id: r.verdict for r in results if r.kind == "check" and "smoke" in r.tiers}
    assert checks and all(v == "reproduced" for v in checks.values()), checks


def test_tiers_are_configs():
    assert set(TIERS) == {"smoke", "small", "paper"}
    assert all(isinstance(c, Config) for c in TIERS.values())
    assert TIERS["smoke"].model == "tiny" and TIERS["small"].model == "smollm2"
    assert TIERS["paper"].model == "path" and not hasattr(TIERS["paper"], "device")


def test_premise_diagnostics_are_measured_per_condition(smoke):
    """The choice between the two answers (normalised over both letters) and the behaviour
    of unsteered and randomly steered generations are measured for every condition."""
    for row in smoke.tables["conditions"]:
        assert 0 <= row["choice_correct"] <= row["num_held"]
        for k in ("caa_choice_effect", "random_choice_effect"):
            assert -1 <= row[k] <= 1, k
        for k in ("caa_generation_gain", "random_generation_gain"):
            assert -1 <= row[k] <= 1 and math.isfinite(row[k]), k
    for k in ("caa_choice_effect_median", "random_choice_effect_median",
              "caa_generation_gain_median", "random_generation_gain_median"):
        assert k in smoke.intervals, k
