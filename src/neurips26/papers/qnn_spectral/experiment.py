"""Reproduction: learning order of Fourier components in QNNs and MLPs, and the QNTK.

For every architecture (data re-uploading circuits, tanh/ReLU MLPs) and every amplitude
profile (flat, increasing, decreasing, shuffled) over ``K`` frequencies, models are trained
on the same seeded targets with full-batch Adam; the learning time ``tau_k`` of each
frequency is read off the residual spectrum and rank-correlated with the amplitudes ``A_k``,
the frequency index ``k`` and the number of circuit paths feeding frequency ``k``. The
tangent kernel is projected on Fourier modes at initialisation (the theory's per-frequency
learning rates) and the linearised gradient-descent prediction is compared with a plain
gradient-descent run. A high-frequency task ``0.2 cos x + 0.7 cos 8x`` compares final errors.

What the results show, and why claims 1, 4 and 5 do not reproduce
------------------------------------------------------------------
(The measured values are in the store and the report.) The single-qubit ``L = 8``
circuit learns frequencies in order of the number of circuit paths that feed them
(``C(16, 8 + k)``, falling with ``k``), not in order of amplitude: on the shuffled
profile learning times follow frequency much more than amplitude (amplitude matters a
little once frequency is held fixed), and the same holds for 3 qubits ``L = 3``. The fits
themselves succeed; the order is the point. On ``0.2 cos x + 0.7 cos 8x`` neither circuit
moves the ``cos 8x`` component in 400 steps (frequency 8 is the top frequency of the
``L = 8`` qubit, fed by one path), so the QNN does no better than the MLPs; a
Fourier-feature MLP (context) solves it. The circuit's QNTK diagonal decays with
frequency even faster than the tanh MLP's and tracks the path count (figure
``theory_vs_simulation``, left). The linearised QNTK prediction follows gradient descent
for the first steps and then departs (non-lazy regime; right panel). Degeneracy control:
with exponential (ternary) encoding scales the path count is not monotone in ``k``, and
learning times then correlate with the path count more than with ``k``, and not with
amplitude in the predicted direction. This agrees with the later attribution of QNN
frequency preferences to path degeneracy.

Deviations from the paper
-------------------------
- Circuit family, initialisation (angles uniform in ``[0, 2 pi)``), ``K = 6`` target
  frequencies, the ``rho_k <= 0.1`` learning-time threshold and the MLP baselines are the
  spec's inferences; the paper's exact architectures are not given in the abstract.
- The training loops use our torch statevector simulator (checked against PennyLane
  ``default.qubit`` and a dense numpy simulator in the tests), not PennyLane itself.
- The degeneracy control (path counts, the exponential-encoding single-qubit model) is ours.
- Teacher-circuit ("quantum-advantage") tasks of the paper tier are not implemented.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from neurips26.common.experiment import RunResult, param
from neurips26.common.plotting import figure_png, new_figure

from . import (
    MLP,
    QNNConfig,
    ReuploadingQNN,
    amplitude_profile,
    fourier_target,
    linearized_spectrum,
    num_parameters,
    ordering_stats,
    path_counts,
    qntk,
    spectral_training,
    training_grid,
)


@dataclass(frozen=True)
class Config:
    """Settings of the reproduction (see ``TIERS``).

    ``qnn_qubits[i]`` and ``qnn_layers[i]`` define the i-th circuit; the first is the
    primary model of the claims. ``control_layers > 0`` adds a single-qubit circuit with
    exponential (ternary) encoding scales, whose path count is not monotone in ``k``.
    """

    qnn_qubits: tuple[int, ...] = param((1, 3), help="qubits of each QNN", min=1)
    qnn_layers: tuple[int, ...] = param(
        (8, 3), help="data re-uploading layers of each QNN (same length as qnn_qubits)", min=1
    )
    control_layers: int = param(3, help="layers of the control QNN", min=0)
    num_frequencies: int = param(6, help="Fourier frequencies of the target", min=0)
    profiles: tuple[str, ...] = param(
        ("flat", "increasing", "decreasing", "shuffled"),
        help="amplitude profiles of the targets",
        choices=("flat", "shuffled", "increasing", "decreasing"),
    )
    num_seeds: int = param(3, help="seeds per setting", min=1)
    max_iter: int = param(400, help="training steps", min=1)
    qnn_lr: float = param(0.05, help="QNN learning rate", min=0.0)
    mlp_lr: float = param(1e-3, help="MLP learning rate", min=0.0)
    mlp_width: int = param(64, help="hidden width of the MLP baseline", min=1)
    mlp_small_width: int = param(4, help="hidden width of the small MLP baseline", min=1)
    mlp_activations: tuple[str, ...] = param(
        ("tanh", "relu"), help="activations of the MLP baselines", choices=("tanh", "relu")
    )
    fourier_features: int = param(8, help="random Fourier features of the feature baseline", min=1)
    num_points: int = param(64, help="training points on [0, 2 pi)", min=1)
    record_every: int = param(5, help="steps between recorded coefficients", min=1)
    threshold: float = param(
        0.1, help="relative error at which a frequency counts as learned", min=0.0, max=1.0
    )
    hf_amplitudes: tuple[float, ...] = param(
        (0.2, 0.7), help="amplitudes of the high-frequency probe", min=0.0
    )
    hf_frequencies: tuple[int, ...] = param(
        (1, 8), help="frequencies of the high-frequency probe", min=0
    )
    gd_lr: float = param(0.05, help="learning rate of the analytic gradient-descent model", min=0.0)
    gd_steps: int = param(200, help="steps of the analytic gradient-descent model", min=1)
    seed: int = 0


TIERS = {
    "smoke": Config(
        qnn_qubits=(1,),
        qnn_layers=(3,),
        control_layers=0,
        num_frequencies=3,
        profiles=("flat", "shuffled"),
        num_seeds=1,
        max_iter=30,
        mlp_activations=("tanh",),
        num_points=32,
        gd_steps=20,
    ),
    "small": Config(),
    "paper": Config(
        qnn_qubits=(1, 2, 3, 4),
        qnn_layers=(12, 6, 4, 3),
        control_layers=3,
        num_frequencies=10,
        num_seeds=5,
        max_iter=2000,
    ),
}


def _label(cfg: QNNConfig) -> str:
    tag = "exp_" if cfg.scaling == "exponential" else ""
    return f"qnn_{tag}{cfg.num_qubits}q_L{cfg.num_layers}"


def _mean(values) -> float:
    arr = np.asarray(values, dtype=float)
    arr = arr[np.isfinite(arr)]
    return float(arr.mean()) if arr.size else float("nan")


def _put(metrics: dict, name: str, value) -> None:
    """Store finite values only (NaN breaks the same-seed equality of metrics)."""
    value = float(value)
    if np.isfinite(value):
        metrics[name] = value


#: Every metric name ``run()`` can return (``*`` stands for a family of names, such as
#: one per size or data set); claims name theirs exactly. Checked by the contract test.
METRICS: tuple[str, ...] = (
    "hf_mse_best_mlp",
    "hf_mse_qnn",
    "hf_mse_ratio",
    "linearized_early_error",
    "linearized_max_error",
    "mlp_shuffled_rho_frequency",
    "qnn_amplitude_priority_margin",
    "qnn_flat_rho_frequency",
    "qnn_shuffled_amplitude_minus_frequency",
    "qnn_shuffled_rho_amplitude",
    "qnn_shuffled_rho_frequency",
    "qntk_ratio_mlp",
    "qntk_ratio_qnn",
    "rate_log_corr",
    "*_*_final_mse",
    "*_decreasing_*",
    "*_flat_*",
    "*_increasing_*",
    "*_shuffled_*",
    "hf_mse_*",
    "qntk_ratio_*",
)


#: Figure captions for the report: what is plotted and the claims it illustrates.
CAPTIONS: dict[str, str] = {
    "theory_vs_simulation": (
        "Left: predicted per-frequency learning rates from the Fourier-projected QNTK / "
        "NTK at initialisation (claims qntk_flat_in_frequency, mlp_ntk_decays). Right: "
        "per-frequency residuals under gradient descent (solid) against the linearised "
        "QNTK prediction (dashed)."
    ),
    "learning_order": (
        "Per-frequency residuals during training on the shuffled-amplitude target, for "
        "the QNN and the MLP: which components are learned first (claims "
        "amplitude_priority, mlp_frequency_order, flat_frequency_order)."
    ),
    "high_frequency": (
        "Training MSE on 0.2 cos x + 0.7 cos 8x for the QNNs and the MLPs (claim "
        "qnn_beats_mlp_high_frequency)."
    ),
}


def run(config: Config) -> RunResult:
    """Run the reproduction at one tier; see the module docstring."""
    if len(config.qnn_qubits) != len(config.qnn_layers) or not config.qnn_qubits:
        raise ValueError("qnn_qubits and qnn_layers must be non-empty and of equal length")
    return _run(config)


def _run(config: Config) -> RunResult:
    rng = np.random.default_rng(config.seed)
    seeds = rng.integers(2**31, size=(config.num_seeds, 2))  # (model seed, target seed)
    K = config.num_frequencies
    qnns = [
        QNNConfig(num_qubits=n, num_layers=L)
        for n, L in zip(config.qnn_qubits, config.qnn_layers, strict=True)
    ]
    if config.control_layers > 0:
        qnns.append(
            QNNConfig(num_qubits=1, num_layers=config.control_layers, scaling="exponential")
        )
    primary = _label(qnns[0])
    mlps = {}
    for act in config.mlp_activations:
        mlps[f"mlp_{act}_{config.mlp_width}"] = dict(hidden=(config.mlp_width,) * 2, activation=act)
        if config.mlp_small_width:
            mlps[f"mlp_{act}_{config.mlp_small_width}"] = dict(
                hidden=(config.mlp_small_width,) * 2, activation=act
            )
    main_mlp = f"mlp_{config.mlp_activations[0]}_{config.mlp_width}"

    def make(name: str, seed: int):
        if name.startswith("qnn"):
            cfg = next(c for c in qnns if _label(c) == name)
            return ReuploadingQNN(cfg, seed=seed), config.qnn_lr
        return MLP(**mlps[name], seed=seed), config.mlp_lr

    train_kw = dict(
        num_points=config.num_points,
        max_iter=config.max_iter,
        record_every=config.record_every,
        threshold=config.threshold,
    )
    models = [_label(c) for c in qnns] + list(mlps)
    counts = {_label(c): path_counts(c) for c in qnns}

    # ------------------------------------------------------------ learning order
    rows, traces = [], {}
    metrics: dict[str, float | int | bool] = {}
    for name in models:
        for profile in config.profiles:
            stats, stats_abs, mse = [], [], []
            for i, (s_model, s_target) in enumerate(seeds):
                A = amplitude_profile(profile, num_frequencies=K, seed=int(s_target))
                target = fourier_target(amplitudes=A, seed=int(s_target))
                model, lr = make(name, int(s_model))
                tr = spectral_training(model, target, lr=lr, **train_kw)
                pc = counts.get(name)
                if pc is not None and max(pc) < K:
                    pc = None  # the circuit cannot produce every target frequency
                stats.append(ordering_stats(tr, path_counts=pc))
                stats_abs.append(ordering_stats(tr, absolute=True))
                mse.append(tr.final_mse)
                if i == 0:
                    traces[name, profile] = tr
            row = {"model": name, "profile": profile}
            for field in (
                "rho_amplitude",
                "rho_frequency",
                "partial_amplitude",
                "partial_frequency",
                "rho_path_count",
                "partial_amplitude_given_paths",
            ):
                value = _mean([getattr(s, field) for s in stats])
                row[field] = round(value, 4)
                _put(metrics, f"{name}_{profile}_{field}", value)
            row["rho_amplitude_abs"] = round(_mean([s.rho_amplitude for s in stats_abs]), 4)
            row["rho_frequency_abs"] = round(_mean([s.rho_frequency for s in stats_abs]), 4)
            row["final_mse"] = float(np.mean(mse))
            _put(metrics, f"{name}_{profile}_final_mse", row["final_mse"])
            rows.append(row)

    def get(name, profile, field):
        return metrics.get(f"{name}_{profile}_{field}", float("nan"))

    # Claim metrics (primary circuit, main MLP).
    if "shuffled" in config.profiles:
        _put(metrics, "qnn_shuffled_rho_amplitude", get(primary, "shuffled", "rho_amplitude"))
        _put(metrics, "qnn_shuffled_rho_frequency", get(primary, "shuffled", "rho_frequency"))
        rho_a = get(primary, "shuffled", "rho_amplitude")
        rho_k = get(primary, "shuffled", "rho_frequency")
        _put(metrics, "qnn_shuffled_amplitude_minus_frequency", rho_a - rho_k)
        # Claim 1 holds when rho_A < -0.6 and rho_A < rho_k, i.e. when this is negative.
        _put(metrics, "qnn_amplitude_priority_margin", max(rho_a + 0.6, rho_a - rho_k))
        _put(metrics, "mlp_shuffled_rho_frequency", get(main_mlp, "shuffled", "rho_frequency"))
    if "flat" in config.profiles:
        _put(metrics, "qnn_flat_rho_frequency", get(primary, "flat", "rho_frequency"))

    # ------------------------------------------------------------ high-frequency task
    hf_target = fourier_target(
        amplitudes=config.hf_amplitudes,
        frequencies=config.hf_frequencies,
        phases=np.zeros(len(config.hf_amplitudes)),
    )
    hf_models = [_label(c) for c in qnns] + list(mlps) + ["mlp_fourier_features"]
    hf_rows, hf_traces = [], {}
    hf_mse = {}
    for name in hf_models:
        mses = []
        for i, (s_model, _) in enumerate(seeds):
            if name == "mlp_fourier_features":
                model, lr = (
                    MLP(
                        hidden=(config.mlp_width,) * 2,
                        activation="tanh",
                        fourier_features=config.fourier_features,
                        seed=int(s_model),
                    ),
                    config.mlp_lr,
                )
            else:
                model, lr = make(name, int(s_model))
            tr = spectral_training(model, hf_target, lr=lr, **train_kw)
            mses.append(tr.final_mse)
            if i == 0:
                hf_traces[name] = tr
        hf_mse[name] = float(np.mean(mses))
        hf_rows.append(
            {
                "model": name,
                "num_parameters": sum(p.numel() for p in model.parameters()),
                "final_mse": hf_mse[name],
                "R_high_final": float(tr.residual_spectrum[-1, -1]),
                "role": "context" if name == "mlp_fourier_features" else "compared",
            }
        )
        _put(metrics, f"hf_mse_{name}", hf_mse[name])
    best_mlp = min(hf_mse[m] for m in mlps)
    _put(metrics, "hf_mse_qnn", hf_mse[primary])
    _put(metrics, "hf_mse_best_mlp", best_mlp)
    _put(metrics, "hf_mse_ratio", hf_mse[primary] / best_mlp)

    # ------------------------------------------------------------ QNTK at initialisation
    x = training_grid(config.num_points)
    k_hi = K
    ratio_rows, diag_curves = [], {}
    for name in [_label(c) for c in qnns] + [main_mlp]:
        curves = []
        for s_model, _ in seeds:
            model, _ = make(name, int(s_model))
            curves.append(qntk(model, x).diag_by_frequency)
        curves = np.asarray(curves)  # (seeds, N//2+1)
        ratios = curves[:, k_hi] / curves[:, 1]
        diag_curves[name] = np.median(curves / curves[:, 1:2], 0)
        ratio_rows.append(
            {
                "model": name,
                "median_ratio_K_over_1": float(np.median(ratios)),
                "min_ratio": float(ratios.min()),
                "max_ratio": float(ratios.max()),
            }
        )
        _put(metrics, f"qntk_ratio_{name}", float(np.median(ratios)))
    _put(metrics, "qntk_ratio_qnn", metrics.get(f"qntk_ratio_{primary}", float("nan")))
    _put(metrics, "qntk_ratio_mlp", metrics.get(f"qntk_ratio_{main_mlp}", float("nan")))
    qntk_table = []
    for k in range(min(config.num_points // 2, 2 * K) + 1):
        row = {"k": k}
        for name, curve in diag_curves.items():
            row[f"{name}_Khat_kk_over_k1"] = float(curve[k])
        for name, pc in counts.items():
            row[f"{name}_paths"] = int(pc.get(k, 0))
        qntk_table.append(row)

    # ------------------------------------------------------------ linearised theory vs GD
    profile = "shuffled" if "shuffled" in config.profiles else config.profiles[0]
    s_model, s_target = (int(v) for v in seeds[0])
    A = amplitude_profile(profile, num_frequencies=K, seed=s_target)
    target = fourier_target(amplitudes=A, seed=s_target)
    model, _ = make(primary, s_model)
    kern0 = qntk(model, x)
    with torch.no_grad():
        r0 = (model(x) - target(x)).numpy()
    predicted = linearized_spectrum(
        kern0, r0, lr=config.gd_lr, steps=config.gd_steps, num_frequencies=K
    )  # (T+1, K+1)
    gd = spectral_training(
        model,
        target,
        num_points=config.num_points,
        max_iter=config.gd_steps,
        lr=config.gd_lr,
        optimizer="gd",
        record_every=1,
        threshold=config.threshold,
    )
    kern_t = qntk(model, x)
    observed = gd.residual_spectrum  # (T+1, K+1)
    scale = observed[0, 1:].max()
    lin_err = np.abs(predicted[:, 1:] - observed[:, 1:]).max(0) / scale
    _put(metrics, "linearized_max_error", float(lin_err.max()))
    early = max(1, config.gd_steps // 10)
    _put(
        metrics,
        "linearized_early_error",
        float(np.abs(predicted[: early + 1, 1:] - observed[: early + 1, 1:]).max() / scale),
    )
    # Per-frequency rate: predicted 2 eta / N * K_hat[k, k] vs observed -log(R_k(t)/R_k(0))/t.
    pred_rate = 2 * config.gd_lr / config.num_points * kern0.diag_by_frequency[1 : K + 1]
    obs_rate = -np.log(np.maximum(observed[early, 1:] / observed[0, 1:], 1e-300)) / early
    rate_rows = [
        {
            "k": k + 1,
            "A_k": round(float(A[k]), 4),
            "paths": counts[primary].get(k + 1, 0),
            "predicted_rate": float(pred_rate[k]),
            "observed_rate": float(obs_rate[k]),
        }
        for k in range(K)
    ]
    with np.errstate(all="ignore"):
        good = (pred_rate > 1e-8) & (obs_rate > 1e-8)
        if good.sum() >= 2:
            _put(
                metrics,
                "rate_log_corr",
                float(np.corrcoef(np.log(pred_rate[good]), np.log(obs_rate[good]))[0, 1]),
            )

    # ------------------------------------------------------------ tables, figures, notes
    order_rows = []
    for name in (primary, _label(qnns[-1]), main_mlp):
        tr = traces.get((name, "shuffled"))
        if tr is None:
            continue
        for k in range(K):
            order_rows.append(
                {
                    "model": name,
                    "k": int(tr.frequencies[k]),
                    "A_k": round(float(tr.amplitudes[k]), 4),
                    "paths": int(counts.get(name, {}).get(k + 1, 0)),
                    "tau": int(tr.tau[k]),
                    "tau_absolute": int(tr.tau_absolute[k]),
                }
            )
    figures = {
        "theory_vs_simulation": _fig_theory(
            diag_curves, counts, primary, kern_t, predicted, observed, K
        ),
        "learning_order": _fig_order(traces, counts, primary, _label(qnns[-1]), main_mlp, K),
        "high_frequency": _fig_hf(hf_traces, primary, main_mlp, config),
    }
    notes = [
        f"Primary circuit {primary} ({num_parameters(qnns[0])} parameters); main MLP "
        f"{main_mlp}; {config.num_seeds} seeds x {len(config.profiles)} profiles, K = {K}.",
        "Learning times never reached are set to max_iter + 1 (ties in the rank statistics).",
        f"Path counts per frequency of {primary}: "
        + ", ".join(f"{k}:{counts[primary].get(k, 0)}" for k in range(1, K + 1))
        + ".",
    ]
    if max(counts[primary]) < max(config.hf_frequencies):
        notes.append(
            f"{primary} cannot represent frequency {max(config.hf_frequencies)} of the "
            "high-frequency task at this tier."
        )
    return RunResult(
        metrics=metrics,
        tables={
            "ordering": rows,
            "high_frequency_task": hf_rows,
            "qntk_ratio": ratio_rows,
            "qntk_diagonal": qntk_table,
            "linearized_rates": rate_rows,
            "learning_times_shuffled": order_rows,
        },
        figures=figures,
        captions=CAPTIONS,
        notes=tuple(notes),
    )


def _fig_theory(diag_curves, counts, primary, kern_t, predicted, observed, K) -> bytes:
    fig, axes = new_figure(2, width=5.2)
    ks = np.arange(1, 2 * K + 1)
    for i, (name, curve) in enumerate(diag_curves.items()):
        axes[0].semilogy(
            ks,
            np.maximum(curve[ks], 1e-12),
            "o-",
            ms=3,
            color=f"C{i}",
            label=f"{name}: K_hat[k,k]/K_hat[1,1] (init)",
        )
    trained = kern_t.diag_by_frequency / kern_t.diag_by_frequency[1]
    axes[0].semilogy(
        ks, np.maximum(trained[ks], 1e-12), "x:", color="C0", label=f"{primary} after GD"
    )
    pc = counts[primary]
    axes[0].semilogy(
        ks,
        [max(pc.get(k, 0) / pc[1], 1e-12) for k in ks],
        "k--",
        lw=0.8,
        label=f"{primary} path count / count at k=1",
    )
    axes[0].axvline(K, color="grey", lw=0.5)
    axes[0].set_ylim(1e-6, 1e2)
    axes[0].set_xlabel("frequency k")
    axes[0].set_ylabel("relative per-frequency kernel strength")
    axes[0].set_title("Predicted per-frequency learning rates (QNTK)")
    axes[0].legend(fontsize=6)
    T = np.arange(observed.shape[0])
    for k in range(1, K + 1):
        axes[1].plot(T, observed[:, k] / observed[0, k], color=f"C{k - 1}", label=f"k={k}")
        axes[1].plot(T, predicted[:, k] / observed[0, k], "--", color=f"C{k - 1}")
    axes[1].set_xlabel("gradient-descent step")
    axes[1].set_ylabel("rho_k(t) = R_k(t)/R_k(0)")
    axes[1].set_title(f"{primary}: simulation (solid) vs linearised QNTK (dashed)")
    axes[1].legend(fontsize=6, ncol=2)
    return figure_png(fig)


def _fig_order(traces, counts, primary, control, mlp, K) -> bytes:
    fig, axes = new_figure(3, width=4.0)
    for ax, name in zip(axes, (primary, control, mlp), strict=True):
        tr = traces.get((name, "shuffled"))
        if tr is None:
            ax.set_visible(False)
            continue
        ax.scatter(tr.frequencies, tr.tau, s=20 + 400 * tr.amplitudes, alpha=0.7)
        for k, a, t in zip(tr.frequencies, tr.amplitudes, tr.tau, strict=True):
            label = f"A={a:.2f}"
            if name in counts:
                label += f"\np={counts[name].get(int(k), 0)}"
            ax.annotate(label, (k, t), fontsize=6, xytext=(3, 3), textcoords="offset points")
        ax.axhline(tr.max_iter + 1, color="grey", lw=0.5, ls=":")
        ax.set_xlabel("frequency k (marker size ~ amplitude)")
        ax.set_ylabel("learning time tau_k")
        ax.set_title(f"{name}, shuffled amplitudes", fontsize=9)
    return figure_png(fig)


def _fig_hf(hf_traces, primary, mlp, config) -> bytes:
    fig, axes = new_figure(2, width=4.6)
    for i, name in enumerate((primary, mlp, "mlp_fourier_features")):
        tr = hf_traces.get(name)
        if tr is None:
            continue
        for ax, w in zip(axes, tr.frequencies, strict=False):
            ax.semilogy(
                tr.steps, np.maximum(tr.residual_spectrum[:, w], 1e-8), color=f"C{i}", label=name
            )
    for ax, a, w in zip(axes, config.hf_amplitudes, config.hf_frequencies, strict=False):
        ax.set_title(f"component {a:g} cos({w}x)")
        ax.set_xlabel("Adam step")
        ax.set_ylabel("residual amplitude R_k(t)")
        ax.legend(fontsize=7)
    return figure_png(fig)
