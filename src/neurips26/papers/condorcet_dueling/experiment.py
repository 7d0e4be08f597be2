"""Reproduction: sample savings and error rate of full-matrix Condorcet identification.

Three instance families (small winner gap, Bradley-Terry, cyclic non-winners) at several
``K``; our procedure against the winner-gap, round-robin, DKWT-style and RUCB baselines on
the same instances and the same per-pair random streams (common random numbers). Sweeps
over the winner gap and ``delta`` feed the savings trend, the complexity correlation and
the search/verification split. See ``paper.py`` for the claims and tiers.

Uncertainty: the paper claims' metrics (ratios of medians, their trends, Spearman
correlations across settings, the verification-share trend) carry the half-width of a
stratified percentile bootstrap over instances: each setting's runs are redrawn with
replacement, with one draw for every method on the same instances, and the metrics are
recomputed from the copy. The error-rate claim has its binomial margin built in.

Why the verification-share claim does not reproduce (the measured values are in the store
and the report): our sampling rule (an inference, see :mod:`.identify`) runs in doubling
rounds, so the per-pair budgets are quantised. A ``delta`` ten times smaller adds only
``log 10`` to a confidence radius ``beta(n)`` of about 20, which often stays within the
same round, and screening grows with the round as verification does; so the share of duels
spent verifying moves little once ``delta`` is small, and the bootstrap cannot place its
change on either side of zero.
"""

from __future__ import annotations

import functools
import itertools
import math
from dataclasses import dataclass

import numpy as np
from scipy.stats import spearmanr

from neurips26.common.experiment import RunResult, param
from neurips26.common.plotting import figure_png, new_figure

from . import METHODS, DuelEnvironment, condorcet_winner, instance_complexity, make_instance


@dataclass(frozen=True)
class Config:
    """Settings of the reproduction.

    ``num_arms`` x ``kinds`` at ``winner_gap`` and ``delta`` is the main grid (ours with
    ``n_runs_error`` runs for the error rate, baselines with ``n_runs``, RUCB with
    ``n_runs_rucb``); ``winner_gaps`` and ``deltas`` are swept on small-winner-gap instances
    with ``sweep_num_arms`` arms.
    """

    seed: int = 0
    num_arms: tuple[int, ...] = param((10, 20), help="numbers of arms K", min=1)
    kinds: tuple[str, ...] = param(
        ("small_winner_gap", "bradley_terry", "cyclic_nonwinners"),
        help="instance families",
        choices=("small_winner_gap", "bradley_terry", "cyclic_nonwinners"),
    )
    winner_gap: float = param(0.01, help="gap of the Condorcet winner", min=0.0, max=0.5)
    beater_gap: float = param(
        0.3, help="gap of each non-winner's certified beater", min=0.0, max=0.5
    )
    background_gap: float = param(0.05, help="gap of the other pairs", min=0.0, max=0.5)
    delta: float = param(0.05, help="confidence parameter delta", min=0.0, max=1.0)
    winner_gaps: tuple[float, ...] = param(
        (0.005, 0.01, 0.05), help="winner gaps swept", min=0.0, max=0.5
    )
    deltas: tuple[float, ...] = param(
        (0.1, 0.01, 0.001), help="confidence parameters swept", min=0.0, max=1.0
    )
    sweep_num_arms: int = param(20, help="K of the sweeps", min=1)
    n_runs_error: int = param(100, help="runs for the error rate", min=1)
    n_runs: int = param(30, help="runs per setting", min=1)
    n_runs_rucb: int = param(10, help="runs of RUCB", min=1)
    baselines: tuple[str, ...] = param(
        ("winner_gap", "round_robin", "dkwt", "rucb"),
        help="baselines compared",
        choices=("winner_gap", "round_robin", "dkwt", "rucb"),
    )
    max_duels: int = param(10**7, help="duel budget per run", min=1)
    num_bootstrap: int = param(
        1000, help="bootstrap resamples of the runs for the claims' intervals", min=1
    )


TIERS = {
    "smoke": Config(num_arms=(5,), sweep_num_arms=5, n_runs_error=5, n_runs=5, n_runs_rucb=2),
    "small": Config(),
    "paper": Config(
        num_arms=(10, 20, 50, 100, 200),
        sweep_num_arms=50,
        n_runs_error=500,
        n_runs=500,
        n_runs_rucb=20,
        max_duels=10**8,
    ),
}


def _runs(method, kind, K, wg, delta, n, seeds, cfg):
    """Run ``method`` on ``n`` fresh instances; return per-run records."""
    out = []
    for s in seeds[:n]:
        s = int(s)
        Q = make_instance(
            kind,
            num_arms=K,
            winner_gap=wg,
            beater_gap=cfg.beater_gap,
            background_gap=cfg.background_gap,
            seed=s,
        )
        env = DuelEnvironment(Q, seed=s)
        kwargs = {"max_duels": cfg.max_duels, "seed": s}
        if method != "rucb":
            kwargs["delta"] = delta
        res = METHODS[method](env, **kwargs)
        out.append(
            {
                "correct": res.winner == condorcet_winner(Q),
                "certified": res.certified,
                "duels": res.num_duels,
                "verification_share": res.verification_share,
                "H_full": instance_complexity(Q, delta=delta).H_full,
                "H_winner": instance_complexity(Q, delta=delta).H_winner,
            }
        )
    return out


#: Paper-claim metrics that carry a stratified bootstrap half-width, ``<name>_ci``.
BOOTSTRAPPED: tuple[str, ...] = (
    "savings_ratio_small_gap",
    "savings_ratio_trend",
    "log2_ratio_bradley_terry",
    "spearman_full",
    "spearman_full_minus_winner",
    "verification_share_trend",
)

#: Every metric name ``run()`` can return (``*`` stands for a family of names, such as
#: one per size or data set); claims name theirs exactly. Checked by the contract test.
METRICS: tuple[str, ...] = (
    "error_rate_excess_max",
    "log2_ratio_bradley_terry",
    "num_settings_correlated",
    "ratio_bradley_terry",
    "savings_ratio_small_gap",
    "savings_ratio_trend",
    "spearman_full",
    "spearman_full_minus_winner",
    "spearman_winner",
    "verification_share_trend",
    *(f"{name}_ci" for name in BOOTSTRAPPED),
    "error_rate_*",
    "median_duels_*_*_K*",
    "median_duels_full_matrix_*_K*",
    "ratio_*_*_K*",
    "savings_ratio_wg*",
    "verification_share_delta*",
)


#: Figure captions for the report: what is plotted and the claims it illustrates.
CAPTIONS: dict[str, str] = {
    "duels_by_method": (
        "Median duels to identify the Condorcet winner, per instance family and number of "
        "arms K, for the full-matrix procedure and the baselines."
    ),
    "savings_and_complexity": (
        "Left: winner-gap elimination over ours (median duels) as the winner gap shrinks "
        "(claims savings_small_winner_gap, savings_grow_as_gap_shrinks). Right: our "
        "median duels against the complexity proxies H_full and H_w (claims "
        "complexity_tracks_full_matrix, full_matrix_beats_winner_gap_complexity)."
    ),
    "verification_share": (
        "Median share of duels spent verifying the certifying pairs as delta decreases "
        "(claim verification_share_grows)."
    ),
}


def run(config: Config) -> RunResult:
    """Run the reproduction at ``config``; see the module docstring."""
    cfg = config
    rng = np.random.default_rng(cfg.seed)
    n_max = max(cfg.n_runs_error, cfg.n_runs, cfg.n_runs_rucb)
    settings: dict[tuple, list[dict]] = {}  # (method, kind, K, wg, delta) -> runs

    def setting(method, kind, K, wg, delta, n):
        key = (kind, K, wg, delta)
        if key not in seed_bank:
            seed_bank[key] = rng.integers(0, 2**31 - 1, size=n_max)
        settings[(method, *key)] = _runs(method, kind, K, wg, delta, n, seed_bank[key], cfg)

    seed_bank: dict[tuple, np.ndarray] = {}
    for kind in cfg.kinds:
        for K in cfg.num_arms:
            setting("full_matrix", kind, K, cfg.winner_gap, cfg.delta, cfg.n_runs_error)
            for b in cfg.baselines:
                n = cfg.n_runs_rucb if b == "rucb" else cfg.n_runs
                setting(b, kind, K, cfg.winner_gap, cfg.delta, n)
    Ks = cfg.sweep_num_arms
    for wg in cfg.winner_gaps:
        for method in ("full_matrix", "winner_gap"):
            if (method, "small_winner_gap", Ks, wg, cfg.delta) not in settings:
                setting(method, "small_winner_gap", Ks, wg, cfg.delta, cfg.n_runs)
    for d in cfg.deltas:
        if ("full_matrix", "small_winner_gap", Ks, cfg.winner_gap, d) not in settings:
            setting("full_matrix", "small_winner_gap", Ks, cfg.winner_gap, d, cfg.n_runs)

    med = functools.partial(_median, settings)

    metrics: dict[str, float | int | bool] = {}
    rows = []
    for key, runs in settings.items():
        method, kind, K, wg, d = key
        err = float(np.mean([not (r["correct"] and r["certified"]) for r in runs]))
        wrong = float(np.mean([not r["correct"] for r in runs]))
        rows.append(
            {
                "method": method,
                "kind": kind,
                "K": K,
                "winner_gap": wg,
                "delta": d,
                "runs": len(runs),
                "median_duels": med(key),
                "wrong_arm_rate": wrong,
                "uncertified_or_wrong_rate": err,
                "median_verification_share": med(key, "verification_share"),
                "median_H_full": med(key, "H_full"),
                "median_H_winner": med(key, "H_winner"),
            }
        )

    # Claim 1: error rate of ours at delta, per kind (pooled over K), vs delta + 3 SE.
    excess = []
    for kind in cfg.kinds:
        runs = [
            r
            for K in cfg.num_arms
            for r in settings[("full_matrix", kind, K, cfg.winner_gap, cfg.delta)]
        ]
        err = float(np.mean([not (r["correct"] and r["certified"]) for r in runs]))
        se = math.sqrt(cfg.delta * (1 - cfg.delta) / len(runs))
        metrics[f"error_rate_{kind}"] = err
        excess.append(err - (cfg.delta + 3 * se))
    metrics["error_rate_excess_max"] = float(max(excess))

    # Main grid: medians and ratios baseline / ours.
    for kind in cfg.kinds:
        for K in cfg.num_arms:
            ours = med(("full_matrix", kind, K, cfg.winner_gap, cfg.delta))
            metrics[f"median_duels_full_matrix_{kind}_K{K}"] = ours
            for b in cfg.baselines:
                mb = med((b, kind, K, cfg.winner_gap, cfg.delta))
                metrics[f"median_duels_{b}_{kind}_K{K}"] = mb
                metrics[f"ratio_{b}_{kind}_K{K}"] = mb / ours

    sweep, ratios, shares, ours_keys, duels, hf, hw = _sweep_stats(settings, cfg)
    metrics.update(sweep)
    # Stratified bootstrap over instances: each setting's runs are resampled, with the same
    # draw for every method on the same instances (common random numbers keep the pairing)
    brng = np.random.default_rng([cfg.seed, 1])
    reps = {k: [] for k in sweep}
    for _ in range(cfg.num_bootstrap):
        rep, *_ = _sweep_stats(_resample(settings, brng), cfg)
        for k, v in rep.items():
            reps[k].append(v)
    for k in BOOTSTRAPPED:
        v = np.asarray(reps.get(k, []), dtype=float)
        v = v[np.isfinite(v)]
        metrics[f"{k}_ci"] = (
            float(np.subtract(*np.percentile(v, [97.5, 2.5])) / 2) if v.size >= 2 else math.inf
        )

    metrics = {k: (float(v) if not isinstance(v, (bool, int)) else v) for k, v in metrics.items()}

    figures = _figures(cfg, settings, ratios, shares, ours_keys, duels, hf, hw, med)
    notes = (
        f"{len(settings)} settings; common random numbers: every method sees the same "
        "instances and per-pair duel streams.",
        "Error = wrong arm or uncertified return (ours); baselines that hit max_duels "
        f"({cfg.max_duels}) are counted with the duels they used (censored).",
    )
    return RunResult(
        metrics=metrics,
        tables={"settings": rows},
        figures=figures,
        captions=CAPTIONS,
        notes=notes,
    )


def _median(settings: dict[tuple, list[dict]], key: tuple, field: str = "duels") -> float:
    """Median of ``field`` over the runs of setting ``key`` (NaN for a setting not run)."""
    runs = settings.get(key)
    return float(np.median([r[field] for r in runs])) if runs else math.nan


def _resample(settings: dict[tuple, list[dict]], rng: np.random.Generator):
    """One bootstrap copy of ``settings``: each setting's runs drawn with replacement.

    Methods on the same instances (same kind, K, winner gap and delta) share one uniform
    draw, so settings with equally many runs get the same indices and stay paired.
    """
    n_max: dict[tuple, int] = {}
    for key, runs in settings.items():
        n_max[key[1:]] = max(n_max.get(key[1:], 0), len(runs))
    u = {base: rng.random(n) for base, n in n_max.items()}
    out = {}
    for key, runs in settings.items():
        n = len(runs)
        idx = (u[key[1:]][:n] * n).astype(int)
        out[key] = [runs[i] for i in idx]
    return out


def _sweep_stats(settings: dict[tuple, list[dict]], cfg: Config):
    """Claims 2-5 from per-run records: savings, their trend, Bradley-Terry, complexity,
    verification share (and what the figures plot)."""

    med = functools.partial(_median, settings)

    metrics: dict[str, float] = {}
    Ks = cfg.sweep_num_arms
    # Claim 2: savings on small-winner-gap instances and their trend in the winner gap.
    ratios = {}
    for wg in cfg.winner_gaps:
        key = ("small_winner_gap", Ks, wg, cfg.delta)
        ratios[wg] = med(("winner_gap", *key)) / med(("full_matrix", *key))
        metrics[f"savings_ratio_wg{wg:g}"] = ratios[wg]
    metrics["savings_ratio_small_gap"] = ratios.get(cfg.winner_gap, math.nan)
    wgs = sorted(ratios)  # increasing gap: the ratio should decrease
    metrics["savings_ratio_trend"] = (
        float(min(ratios[a] / ratios[b] for a, b in itertools.pairwise(wgs)))
        if len(wgs) > 1
        else math.nan
    )

    # Claim 3: no loss on SST (Bradley-Terry) instances.
    Kbt = Ks if Ks in cfg.num_arms else max(cfg.num_arms)
    bt = ("bradley_terry", Kbt, cfg.winner_gap, cfg.delta)
    if ("winner_gap", *bt) in settings:
        r_bt = med(("winner_gap", *bt)) / med(("full_matrix", *bt))
        metrics["ratio_bradley_terry"] = r_bt
        metrics["log2_ratio_bradley_terry"] = float(math.log2(r_bt))

    # Claim 4: our median duels track H_full better than H_winner across settings.
    ours_keys = [k for k in settings if k[0] == "full_matrix"]
    duels = [med(k) for k in ours_keys]
    hf = [med(k, "H_full") for k in ours_keys]
    hw = [med(k, "H_winner") for k in ours_keys]
    rho_f = float(spearmanr(duels, hf).statistic)
    rho_w = float(spearmanr(duels, hw).statistic)
    metrics["spearman_full"] = rho_f
    metrics["spearman_winner"] = rho_w
    metrics["spearman_full_minus_winner"] = rho_f - rho_w
    metrics["num_settings_correlated"] = len(ours_keys)

    # Claim 5: verification share grows as delta shrinks.
    shares = {}
    for d in sorted(cfg.deltas, reverse=True):
        shares[d] = med(
            ("full_matrix", "small_winner_gap", Ks, cfg.winner_gap, d), "verification_share"
        )
        metrics[f"verification_share_delta{d:g}"] = shares[d]
    ds = sorted(shares, reverse=True)  # decreasing delta
    metrics["verification_share_trend"] = (
        float(min(shares[b] - shares[a] for a, b in itertools.pairwise(ds)))
        if len(ds) > 1
        else math.nan
    )

    return metrics, ratios, shares, ours_keys, duels, hf, hw


def _figures(cfg, settings, ratios, shares, ours_keys, duels, hf, hw, med):
    figs = {}
    methods = ["full_matrix", *cfg.baselines]
    fig, axes = new_figure(len(cfg.kinds), width=4.2)
    K = max(cfg.num_arms)
    for ax, kind in zip(axes, cfg.kinds, strict=True):
        vals = [med((m, kind, K, cfg.winner_gap, cfg.delta)) for m in methods]
        ax.bar(range(len(methods)), vals, color=["C3"] + ["C0"] * len(cfg.baselines))
        ax.set_yscale("log")
        ax.set_xticks(range(len(methods)), methods, rotation=30, ha="right", fontsize=8)
        ax.set_title(f"{kind}, K={K}", fontsize=9)
        ax.set_ylabel("median duels")
    figs["duels_by_method"] = figure_png(fig)

    fig, axes = new_figure(2, width=4.5)
    wgs = sorted(ratios)
    axes[0].plot(wgs, [ratios[w] for w in wgs], "o-")
    axes[0].set_xscale("log")
    axes[0].set_yscale("log")
    axes[0].set_xlabel("winner gap")
    axes[0].set_ylabel("winner-gap elim. / ours (median duels)")
    axes[0].set_title(f"savings, small winner gap, K={cfg.sweep_num_arms}", fontsize=9)
    axes[1].loglog(hf, duels, "o", label="vs H_full")
    axes[1].loglog(hw, duels, "x", label="vs H_winner")
    axes[1].set_xlabel("complexity proxy")
    axes[1].set_ylabel("our median duels")
    axes[1].legend(fontsize=8)
    figs["savings_and_complexity"] = figure_png(fig)

    fig, axes = new_figure(1)
    ds = sorted(shares)
    axes[0].plot(ds, [shares[d] for d in ds], "o-")
    axes[0].set_xscale("log")
    axes[0].set_xlabel("delta")
    axes[0].set_ylabel("median verification share of duels")
    axes[0].set_title("search vs verification", fontsize=9)
    figs["verification_share"] = figure_png(fig)
    return figs
