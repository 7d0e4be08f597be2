"""Smoke run of the qnn_spectral reproduction, determinism and the claims' wiring."""

from __future__ import annotations

import dataclasses

import pytest

from neurips26.papers.qnn_spectral import experiment
from neurips26.registry import get_paper


@pytest.fixture(scope="module")
def smoke():
    return experiment.run(experiment.TIERS["smoke"])


def test_smoke_run_metrics_tables_figures(smoke):
    m = smoke.metrics
    for key in (
        "qnn_shuffled_rho_amplitude",
        "qnn_flat_rho_frequency",
        "hf_mse_ratio",
        "qntk_ratio_qnn",
        "qntk_ratio_mlp",
        "linearized_early_error",
        "flat_band_path_spread",
        "spectrum_headroom",
    ):
        assert key in m
    # the primary circuit is degeneracy-flat on the targets and its spectrum goes beyond
    assert m["flat_band_path_spread"] == 0 and m["spectrum_headroom"] > 0
    assert all(isinstance(v, (int, float, bool)) for v in m.values())
    assert m["linearized_early_error"] < 0.05  # linearisation holds for the first steps
    assert set(smoke.figures) == {"theory_vs_simulation", "learning_order", "high_frequency"}
    assert all(png.startswith(b"\x89PNG") for png in smoke.figures.values())
    assert {"ordering", "high_frequency_task", "qntk_diagonal"} <= set(smoke.tables)
    assert not smoke.volatile  # the runner owns wall and CPU time; no metric reads a clock


def test_smoke_run_is_deterministic(smoke):
    again = experiment.run(experiment.TIERS["smoke"])
    assert again.stable_metrics() == smoke.stable_metrics()
    other = experiment.run(dataclasses.replace(experiment.TIERS["smoke"], seed=1))
    assert other.stable_metrics() != smoke.stable_metrics()


def test_claims_name_metrics_the_experiment_produces(smoke):
    paper = get_paper("qnn_spectral")
    names = {
        "qnn_amplitude_priority_margin",
        "mlp_shuffled_rho_frequency",
        "qnn_flat_rho_frequency",
        "hf_mse_ratio",
        "qntk_log10_ratio_qnn",
        "qntk_log10_ratio_mlp",
        "flat_band_path_spread",
        "spectrum_headroom",
        "linearized_early_error",
    }
    assert {c.metric for c in paper.claims} == names
    for claim in paper.claims:
        if claim.kind == "paper":
            assert claim.tiers == ("small", "paper")
            assert claim.uncertainty is None and claim.metric in smoke.intervals
            assert claim.control or claim.no_control
        else:
            assert claim.uncertainty is None
    assert names <= set(smoke.metrics)
    assert set(experiment.TIERS) == {"smoke", "small", "paper"}


def test_bad_config():
    with pytest.raises(ValueError, match="equal length"):
        experiment.run(dataclasses.replace(experiment.TIERS["smoke"], qnn_layers=(3, 2)))


def test_controls_are_measured_with_intervals(smoke):
    paper = get_paper("qnn_spectral")
    for claim in paper.claims:
        if claim.kind == "paper" and claim.control:
            assert claim.control in smoke.metrics, claim.id
            iv = smoke.intervals[claim.control]
            assert iv["lo"] <= smoke.metrics[claim.control] <= iv["hi"], claim.id
    # the MLP's margin is the same statistic as the QNN's, on the same targets
    assert smoke.intervals["mlp_amplitude_priority_margin"]["method"] == (
        smoke.intervals["qnn_amplitude_priority_margin"]["method"]
    )
