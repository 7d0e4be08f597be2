"""Smoke run of the sparse_halfspace reproduction and its registry entry."""

import math

from neurips26.common.experiment import config_from_dict, config_to_dict
from neurips26.papers.sparse_halfspace import experiment
from neurips26.registry import NOT_RUN, get_paper


def test_smoke_run_metrics_figures_and_determinism():
    cfg = experiment.TIERS["smoke"]
    a = experiment.run(cfg)
    b = experiment.run(cfg)
    assert a.stable_metrics() == b.stable_metrics()
    for key in (
        "growth_ours",
        "growth_dense",
        "error_ours_claim_eta",
        "baseline_error_ratio_min",
        "corrupt_weight_over_eta",
        "filter_removed_frac",
    ):
        assert math.isfinite(a.metrics[key]), key
    assert 0 <= a.metrics["error_ours_claim_eta"] <= 0.5
    assert a.metrics["filter_removed_frac"] == 1.0  # spikes are far above the threshold
    assert a.metrics["certified_frac_sdp_dmin"] == 1.0  # d = 10 uses the certified SDP
    assert set(a.figures) == {"sample_need", "robustness", "sdp_cost"}
    assert all(png[:4] == b"\x89PNG" for png in a.figures.values())
    assert {"method", "dim", "n_eps", "censored"} <= set(a.tables["sample_need"][0])
    assert "sdp_seconds_d20" in a.volatile


def test_claims_and_config_round_trip():
    paper = get_paper("sparse_halfspace")
    ids = [c.id for c in paper.claims]
    assert "attribute_efficiency" in ids and "lower_bound" in ids
    lower = next(c for c in paper.claims if c.id == "lower_bound")
    assert paper.evaluate({}, "small")[ids.index("lower_bound")].verdict == NOT_RUN
    assert lower.tiers == ()
    for cfg in experiment.TIERS.values():
        assert config_from_dict(type(cfg), config_to_dict(cfg)) == cfg
