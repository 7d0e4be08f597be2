"""Smoke run of the qnn_spectral reproduction, determinism and the claims' wiring."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from neurips26.papers.qnn_spectral import experiment
from neurips26.registry import get_paper

# single-threaded, as the runner runs the paper (tests/conftest.py)
ONE_THREAD = True


@pytest.fixture(scope="module")
def smoke():
    return experiment.run(experiment.TIERS["smoke"])


#: A config smaller than the smoke tier (few steps, one profile), for the determinism test.
TINY = dataclasses.replace(
    experiment.TIERS["smoke"], profiles=("shuffled",), max_iter=8, gd_steps=4, qntk_seeds=2,
    mlp_width=8, fourier_features=2, num_points=24, hf_frequencies=(1, 3))


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


def test_run_is_deterministic(monkeypatch):
    # (the contract test runs the smoke tier twice; here a smaller config, without the
    # figures, which cost more than its trainings, keeps it fast)
    monkeypatch.setattr(experiment.QnnSpectral, "figures", lambda self, *a: {})
    first = experiment.run(TINY)
    again = experiment.run(TINY)
    assert again.stable_metrics() == first.stable_metrics()
    other = experiment.run(dataclasses.replace(TINY, seed=1))
    assert other.stable_metrics() != first.stable_metrics()


def test_claims_name_metrics_the_experiment_produces(smoke):
    paper = get_paper("qnn_spectral")
    names = {
        "qnn_rel_priority_margin",
        "pauli_rel_priority_margin",
        "mlp_shuffled_rel_rho_frequency",
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
            if iv["method"] == "not measured":  # 30 smoke steps: the MLP may reach no 10%
                assert iv["reason"], claim.id
            else:
                assert iv["lo"] <= smoke.metrics[claim.control] <= iv["hi"], claim.id
    # the MLP's margins are the same statistics as the QNNs', on the same targets
    assert smoke.intervals["mlp_amplitude_priority_margin"]["method"] == (
        smoke.intervals["qnn_amplitude_priority_margin"]["method"]
    )
    for name in ("qnn_rel_priority_margin", "pauli_rel_priority_margin"):
        assert smoke.intervals[name]["method"] == "t over seeds"


def _trace(A, tau):
    """A SpectralTrace with the given amplitudes and relative learning times."""
    from neurips26.papers.qnn_spectral import SpectralTrace

    K = len(A)
    z = np.zeros((2, K))
    return SpectralTrace(
        steps=np.arange(2), residual_spectrum=np.zeros((2, K + 1)), rho=z, tau=np.asarray(tau),
        tau_absolute=np.asarray(tau), tau_share=np.asarray(tau, dtype=float),
        component_loss=z, loss=np.zeros(2), final_mse=0.0, frequencies=np.arange(1, K + 1),
        amplitudes=np.asarray(A, dtype=float), max_iter=10, threshold=0.1)


def test_priority_margin_fails_a_frequency_ordered_learner():
    # The claim's criterion on the relative time: a learner whose times follow the
    # frequency whatever the amplitudes fails it; one whose times follow the amplitudes
    # passes it.
    from neurips26.papers.qnn_spectral import ordering_stats

    A = [0.1, 0.4, 0.05, 0.3, 0.2, 0.15]
    by_frequency = _trace(A, [1, 2, 3, 4, 5, 6])
    by_amplitude = _trace(A, np.argsort(np.argsort(-np.asarray(A))) + 1)
    assert experiment._margin(ordering_stats(by_frequency, metric="relative")) > 0.5
    assert experiment._margin(ordering_stats(by_amplitude, metric="relative")) < -0.3
