"""Smoke run of the sparse_halfspace reproduction and its registry entry."""

import math

from neurips26.common.experiment import config_from_dict, config_to_dict
from neurips26.papers.sparse_halfspace import experiment
from neurips26.registry import NOT_RUN, get_paper


def test_smoke_run_metrics_and_figures():
    # determinism (two runs, same stable metrics) is the paper contract's test for every paper
    cfg = experiment.TIERS["smoke"]
    a = experiment.run(cfg)
    paper = get_paper("sparse_halfspace")
    for claim in paper.claims:
        if not claim.tiers:
            continue
        assert math.isfinite(a.metrics[claim.metric]), claim.metric
        # every noisy claim carries an interval around its value
        iv = a.intervals[claim.metric]
        assert iv["lo"] <= a.metrics[claim.metric] <= iv["hi"], claim.metric
        if claim.control:
            assert math.isfinite(a.metrics[claim.control]), claim.control
    # the paired difference is the baselines' error minus 1.5 times ours, draw by draw
    assert "paired" in a.intervals["baseline_error_excess_min"]["method"]
    assert "baseline_error_ratio_min" in a.metrics  # reported, not claimed
    assert 0 <= a.metrics["error_ours_claim_eta"] <= 0.5
    assert a.metrics["certified_frac_sdp_dmin"] == 1.0  # d = 10 uses the certified SDP
    assert a.metrics["localization_rounds_mean"] >= 1  # the band rounds ran
    assert "error_single_round_claim_eta" in a.metrics
    assert {"n_eps_ours_s1", "n_eps_ours_s2", "sparsity_slope_ours"} <= set(a.metrics)
    assert set(a.figures) == {"sample_need", "robustness", "sdp_cost"}
    assert all(png[:4] == b"\x89PNG" for png in a.figures.values())
    assert {"method", "dim", "sparsity", "n_eps", "censored_seeds"} <= set(
        a.tables["sample_need"][0]
    )
    assert "sdp_seconds_d20" in a.volatile


def test_claims_and_config_round_trip():
    paper = get_paper("sparse_halfspace")
    ids = [c.id for c in paper.claims]
    assert {"attribute_efficiency", "sample_need_sparsity", "lower_bound"} <= set(ids)
    lower = next(c for c in paper.claims if c.id == "lower_bound")
    assert paper.evaluate({}, "small")[ids.index("lower_bound")].verdict == NOT_RUN
    assert lower.tiers == ()
    kinds = {c.id: c.kind for c in paper.claims}
    assert kinds["outlier_removal_downweights"] == kinds["filter_removes_large_norm"] == "check"
    assert kinds["robust_error"] == kinds["beats_baselines"] == "paper"
    for cfg in experiment.TIERS.values():
        assert config_from_dict(type(cfg), config_to_dict(cfg)) == cfg
