"""Spectral training, ordering statistics, QNTK and MLP tests for qnn_spectral."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest
import torch
from scipy import stats

from neurips26.papers.qnn_spectral import (
    MLP,
    QNNConfig,
    ReuploadingQNN,
    SpectralTrace,
    amplitude_profile,
    fourier_target,
    linearized_spectrum,
    ordering_stats,
    partial_spearman,
    path_counts,
    qntk,
    residual_spectrum,
    share_time_linear,
    single_qubit_closed_form,
    spectral_training,
    training_grid,
)

# single-threaded, as the runner runs the paper (tests/conftest.py)
ONE_THREAD = True


def test_residual_spectrum_recovers_amplitudes():
    g = fourier_target(amplitudes=[0.1, 0.3, 0.2], seed=4)
    x = training_grid(32).numpy()
    spec = residual_spectrum(g(x) + 0.05, 3)  # (4,)
    np.testing.assert_allclose(spec, [0.05, 0.1, 0.3, 0.2], atol=1e-12)
    batch = residual_spectrum(np.stack([g(x), 2 * g(x)]), 3)
    np.testing.assert_allclose(batch[1], 2 * batch[0], atol=1e-12)


def test_fourier_target_numpy_and_torch_agree():
    g = fourier_target(amplitudes=[0.2, 0.7], frequencies=[1, 8], phases=[0.3, -1.0])
    x = training_grid(20)
    np.testing.assert_allclose(g(x).numpy(), g(x.numpy()), atol=1e-14)
    expected = 0.2 * np.cos(x.numpy() + 0.3) + 0.7 * np.cos(8 * x.numpy() - 1.0)
    np.testing.assert_allclose(g(x.numpy()), expected, atol=1e-14)
    assert g.max_frequency == 8


@pytest.mark.parametrize("kind", ["flat", "increasing", "decreasing", "shuffled"])
def test_amplitude_profiles(kind):
    A = amplitude_profile(kind, num_frequencies=6, seed=2)
    assert A.shape == (6,) and A.sum() == pytest.approx(0.9)
    dec = amplitude_profile("decreasing", num_frequencies=6)
    if kind == "shuffled":
        np.testing.assert_allclose(np.sort(A), np.sort(dec))
        assert not np.allclose(A, dec)
    if kind == "increasing":
        np.testing.assert_allclose(A / A[0], np.arange(1, 7))


def test_spectral_training_shapes_and_learning_times():
    g = fourier_target(amplitudes=[0.4, 0.3], seed=0)
    tr = spectral_training(
        ReuploadingQNN(QNNConfig(num_layers=3), seed=0),
        g,
        num_points=16,
        max_iter=60,
        record_every=10,
    )
    assert isinstance(tr, SpectralTrace)
    np.testing.assert_array_equal(tr.steps, [0, 10, 20, 30, 40, 50, 60])
    assert tr.residual_spectrum.shape == (7, 3) and tr.rho.shape == (7, 2)
    np.testing.assert_allclose(tr.rho[0], 1.0)
    assert tr.loss[-1] < tr.loss[0] and tr.final_mse == tr.loss[-1]
    for k in range(2):  # tau is the first recorded step below the threshold, or max_iter + 1
        below = np.flatnonzero(tr.rho[:, k] <= 0.1)
        assert tr.tau[k] == (tr.steps[below[0]] if below.size else 61)
    np.testing.assert_allclose(tr.component_loss, tr.residual_spectrum[:, 1:] ** 2 / 2)
    for k in range(2):  # tau_share: removed loss reaches share * L(0) inside its interval
        removed = tr.component_loss[0, k] - tr.component_loss[:, k]
        hit = np.flatnonzero(removed >= 0.01 * tr.loss[0])
        if hit.size:
            assert tr.steps[max(hit[0] - 1, 0)] <= tr.tau_share[k] <= tr.steps[hit[0]]
        else:
            assert tr.tau_share[k] == 61


class _LinearFourier(torch.nn.Module):
    """f(x) = sum_j a_j cos(j x) + b_j sin(j x), from zero: a kernel diagonal in Fourier."""

    def __init__(self, J):
        super().__init__()
        self.a = torch.nn.Parameter(torch.zeros(J, dtype=torch.float64))
        self.b = torch.nn.Parameter(torch.zeros(J, dtype=torch.float64))

    def forward(self, x):
        j = torch.arange(1, len(self.a) + 1, dtype=torch.float64)
        return torch.cos(x[:, None] * j) @ self.a + torch.sin(x[:, None] * j) @ self.b


def test_share_learning_time_depends_on_amplitude_as_the_closed_form_says():
    # Issue 12: with equal per-frequency rates, the amplitude-normalised time rho_k <= 0.1
    # cannot tell components apart; the share-of-total-loss time must. Under GD on the MSE,
    # d loss / d a_k = a_k - A_k cos(phi_k), so every residual decays as (1 - eta)^t and
    # l_k(t) = (A_k^2 / 2) (1 - eta)^{2t}.
    eta, share = 0.05, 0.02
    A = np.array([0.6, 0.2, 0.1])
    g = fourier_target(amplitudes=A, seed=3)
    tr = spectral_training(
        _LinearFourier(3),
        g,
        num_points=16,
        max_iter=200,
        lr=eta,
        optimizer="gd",
        record_every=1,
        share=share,
    )
    L0 = float((A**2).sum() / 2)
    assert tr.loss[0] == pytest.approx(L0, rel=1e-12)
    np.testing.assert_allclose(
        tr.component_loss[:, 1], (A[1] ** 2 / 2) * (1 - eta) ** (2 * tr.steps), rtol=1e-9
    )
    t_star = share_time_linear(A**2 / 2, np.full(3, 1 - eta), share=share, total_loss=L0)
    assert np.all(np.isfinite(t_star)) and t_star[0] < t_star[1] < t_star[2]
    # the measured (interpolated) time lies within the step that crosses the closed form
    assert np.all(tr.tau_share <= np.ceil(t_star) + 1e-9)
    assert np.all(tr.tau_share > np.ceil(t_star) - 1)
    assert tr.tau_share[0] < tr.tau_share[1] < tr.tau_share[2]  # larger amplitude first
    assert len(set(tr.tau.tolist())) == 1  # the relative time is blind to amplitude
    # a component whose whole loss is below share * L(0) never gets there
    assert share_time_linear([0.001], [0.9], share=0.5, total_loss=1.0)[0] == np.inf


def test_centered_training_starts_from_the_target_spectrum():
    A = np.array([0.3, 0.2, 0.1])
    g = fourier_target(amplitudes=A, seed=1)
    model = ReuploadingQNN(QNNConfig(num_qubits=1, num_layers=3), seed=0)
    tr = spectral_training(model, g, num_points=16, max_iter=5, centered=True, record_every=1)
    np.testing.assert_allclose(tr.residual_spectrum[0, 1:], A, atol=1e-12)
    np.testing.assert_allclose(tr.component_loss[0], A**2 / 2, atol=1e-12)
    assert tr.loss[0] == pytest.approx((A**2).sum() / 2, rel=1e-12)
    raw = spectral_training(
        ReuploadingQNN(QNNConfig(num_qubits=1, num_layers=3), seed=0),
        g,
        num_points=16,
        max_iter=5,
    )
    assert not np.allclose(raw.residual_spectrum[0, 1:], A)


def test_mlp_shapes_init_and_parameter_count():
    m = MLP(seed=0)
    assert sum(p.numel() for p in m.parameters()) == 4353
    x = training_grid(8)
    assert m(x).shape == (8,)
    torch.testing.assert_close(MLP(seed=0)(x), m(x))
    assert not torch.equal(MLP(seed=1)(x), m(x))
    ff = MLP(hidden=(8,), fourier_features=3, activation="relu")
    assert ff.net[0].in_features == 6 and ff(x).shape == (8,)


def _trace(tau, amplitudes):
    K = len(tau)
    return SpectralTrace(
        steps=np.arange(2),
        residual_spectrum=np.zeros((2, K + 1)),
        rho=np.ones((2, K)),
        tau=np.asarray(tau),
        tau_absolute=np.asarray(tau),
        tau_share=np.asarray(tau, dtype=float),
        component_loss=np.zeros((2, K)),
        loss=np.zeros(2),
        final_mse=0.0,
        frequencies=np.arange(1, K + 1),
        amplitudes=np.asarray(amplitudes, dtype=float),
        max_iter=100,
        threshold=0.1,
    )


def test_ordering_stats_detect_amplitude_and_frequency_order():
    A = np.array([0.1, 0.3, 0.05, 0.2, 0.15])
    by_amplitude = ordering_stats(_trace(np.argsort(np.argsort(-A)) * 10, A))
    assert by_amplitude.rho_amplitude == pytest.approx(-1.0)
    by_frequency = ordering_stats(_trace([10, 20, 30, 40, 50], A))
    assert by_frequency.rho_frequency == pytest.approx(1.0)
    pc = path_counts(QNNConfig(num_qubits=1, num_layers=5))
    with_paths = ordering_stats(_trace([10, 20, 30, 40, 50], A), path_counts=pc)
    assert with_paths.rho_path_count == pytest.approx(-1.0)
    flat = ordering_stats(_trace([10, 20, 30, 40, 50], np.full(5, 0.1)))
    assert math.isnan(flat.rho_amplitude) and flat.rho_frequency == pytest.approx(1.0)
    tr = dataclasses.replace(
        _trace([10, 20, 30, 40, 50], A), tau_share=np.array([5.0, 4.0, 3.0, 2.0, 1.0])
    )
    assert ordering_stats(tr).rho_frequency == pytest.approx(-1.0)
    assert ordering_stats(tr, metric="relative").rho_frequency == pytest.approx(1.0)


def test_partial_spearman_matches_residual_correlation_of_ranks():
    rng = np.random.default_rng(0)
    z = rng.normal(size=40)
    x = z + rng.normal(size=40)
    y = z + 0.5 * x + rng.normal(size=40)
    ranks = [stats.rankdata(v) for v in (y, x, z)]
    res = [r - np.polyval(np.polyfit(ranks[2], r, 1), ranks[2]) for r in ranks[:2]]
    np.testing.assert_allclose(partial_spearman(y, x, z), np.corrcoef(*res)[0, 1], atol=1e-12)


def test_qntk_symmetric_psd_hermitian():
    for model in (
        ReuploadingQNN(QNNConfig(num_qubits=2, num_layers=2), seed=1),
        MLP(hidden=(16, 16), seed=1),
    ):
        k = qntk(model, training_grid(16))
        assert k.jacobian.shape[0] == 16
        np.testing.assert_allclose(k.K, k.K.T, atol=1e-12)
        assert np.linalg.eigvalsh(k.K).min() > -1e-10
        np.testing.assert_allclose(k.K_hat, k.K_hat.conj().T, atol=1e-10)
        # Trace is basis independent (the DFT is unitary).
        assert np.trace(k.K_hat).real == pytest.approx(np.trace(k.K), rel=1e-10)


def test_qntk_fourier_diagonal_matches_single_qubit_closed_form():
    # L = 1, one qubit: f = a cos x + b sin x + c, so d f / d theta_p = a_p cos x + b_p sin x
    # + c_p and K_hat[0, 0] = N sum_p c_p^2, K_hat[1, 1] = (N / 4) sum_p (a_p^2 + b_p^2);
    # every other frequency has zero kernel.
    N = 16
    cfg = QNNConfig(num_qubits=1, num_layers=1)
    for seed in range(5):
        model = ReuploadingQNN(cfg, seed=seed)
        p = model.weights.detach().reshape(-1)
        da, db, dc = torch.func.jacrev(lambda q: torch.stack(single_qubit_closed_form(q)))(p)
        k = qntk(model, training_grid(N))
        assert k.diag_by_frequency[0] == pytest.approx(N * float((dc**2).sum()), rel=1e-10)
        assert k.diag_by_frequency[1] == pytest.approx(
            N / 4 * float((da**2 + db**2).sum()), rel=1e-10
        )
        np.testing.assert_allclose(k.diag_by_frequency[2:], 0, atol=1e-12)
        np.testing.assert_allclose(k.K_hat[2 : N - 1, :], 0, atol=1e-12)


def test_linearized_spectrum_tracks_gradient_descent_at_small_steps():
    g = fourier_target(amplitudes=[0.3, 0.2], seed=1)
    model = ReuploadingQNN(QNNConfig(num_qubits=1, num_layers=3), seed=2)
    x = training_grid(16)
    kern = qntk(model, x)
    with torch.no_grad():
        r0 = (model(x) - g(x)).numpy()
    pred = linearized_spectrum(kern, r0, lr=1e-3, steps=10, num_frequencies=2)
    tr = spectral_training(
        model, g, num_points=16, max_iter=10, lr=1e-3, optimizer="gd", record_every=1
    )
    np.testing.assert_allclose(pred[0], tr.residual_spectrum[0], atol=1e-12)
    change = np.abs(tr.residual_spectrum[-1] - tr.residual_spectrum[0]).max()
    assert change > 1e-4  # the dynamics moved ...
    assert np.abs(pred - tr.residual_spectrum).max() < 0.02 * change  # ... as linearised


def test_bad_inputs_have_clear_messages():
    with pytest.raises(ValueError, match="rescale the amplitudes"):
        fourier_target(amplitudes=[0.8, 0.5])
    with pytest.raises(ValueError, match="amplitudes contains NaN"):
        fourier_target(amplitudes=[0.1, float("nan")])
    with pytest.raises(ValueError, match="must not be empty"):
        fourier_target(amplitudes=[])
    with pytest.raises(ValueError, match="phases must have shape"):
        fourier_target(amplitudes=[0.1, 0.2], phases=[0.0])
    with pytest.raises(ValueError, match="distinct positive integers"):
        fourier_target(amplitudes=[0.1, 0.2], frequencies=[1, 1.5])
    with pytest.raises(ValueError, match="unknown amplitude profile"):
        amplitude_profile("random", num_frequencies=3)
    g = fourier_target(amplitudes=[0.1, 0.2, 0.3], seed=0)
    model = ReuploadingQNN(QNNConfig(num_layers=2))
    with pytest.raises(ValueError, match="aliases the target"):
        spectral_training(model, g, num_points=6)
    with pytest.raises(ValueError, match="lr must be a positive"):
        spectral_training(model, g, lr=-1.0)
    with pytest.raises(ValueError, match="max_iter must be >= 1"):
        spectral_training(model, g, max_iter=0)
    with pytest.raises(ValueError, match="unknown optimizer"):
        spectral_training(model, g, optimizer="sgd")
    with pytest.raises(ValueError, match="share must be in"):
        spectral_training(model, g, share=1.5)
    with pytest.raises(TypeError, match="centered must be a bool"):
        spectral_training(model, g, centered="yes")
    with pytest.raises(ValueError, match="unknown metric"):
        ordering_stats(_trace([1, 2, 3], [0.1, 0.2, 0.3]), metric="fast")
    with pytest.raises(ValueError, match="decay must lie in"):
        share_time_linear([0.1], [1.5], share=0.1, total_loss=1.0)
    with pytest.raises(ValueError, match="initial_loss and decay must have the same shape"):
        share_time_linear([0.1, 0.2], [0.5], share=0.1, total_loss=1.0)
    with pytest.raises(ValueError, match="total_loss must be"):
        share_time_linear([0.1], [0.5], share=0.1, total_loss=0.0)
    with pytest.raises(TypeError, match="FourierTarget"):
        spectral_training(model, lambda x: x)
    with pytest.raises(TypeError, match=r"nn\.Module"):
        qntk(lambda x: x, training_grid(8))
    with pytest.raises(ValueError, match="unknown activation"):
        MLP(activation="gelu")
    with pytest.raises(ValueError, match="no entry for frequencies"):
        ordering_stats(
            _trace([1, 2, 3], [0.1, 0.2, 0.3]), path_counts=path_counts(QNNConfig(num_layers=2))
        )


@pytest.mark.parametrize("bad", [0, -3, 2.5, True])
def test_training_grid_rejects_non_positive_integer_sizes(bad):
    with pytest.raises(ValueError, match="positive integer"):
        training_grid(bad)
