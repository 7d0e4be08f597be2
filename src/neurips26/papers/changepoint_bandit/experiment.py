"""Reproduction: sample counts and error rates of adaptive change-point localisation.

Synthetic step functions (equal jumps of alternating sign) in a "spread" and a
"clustered" layout (two change points ``clustered_spacing * eta`` apart); our procedure
against uniform sampling with offline segmentation, the simplified MCPI Track-and-Stop
with its heuristic stop (``mcpi``) and with the certified stop (``mcpi_certified``, the
guarantee ours has), and phase 2-3 alone on the true cells (``oracle_cells``), over a grid
of ``N``, jump, ``delta`` and ``eta``. Instances and noise seeds are shared across
``delta`` (common random numbers). See ``paper.py`` for the claims and tiers. Every claim
metric carries a 95% bootstrap half-width (runs resampled within each instance family).

Claims that do not reproduce, or not clearly (the measured values are in the store and the
report), and why we think so:

- ``bound_constant_factor`` (our medians within a factor 4 of the reference complexity
  across settings) sits near its threshold, and its bootstrap interval straddles it. The
  reference of :mod:`.complexity` is our inference: its position term charges each of
  the ``2^{j*}`` points of a dyadic sweep ``sigma^2 / Delta^2`` samples, whereas our
  detection searches that grid for a short piece (a close pair) by segmentation and
  focused sampling, whose cost carries a logarithm of the grid size that the reference
  omits; its verification term ``2 sigma^2 / Delta^2 log(1 / delta)`` omits the stitched
  boundary's constants and ``log log`` term that our paired certificate pays. So clustered
  settings sit higher relative to the reference than spread ones.
- The MCPI comparison (the spec's claim 6, reported without a threshold): at
  ``eta = 1e-3`` our median queries are at most the simplified MCPI's in most settings;
  where MCPI is cheaper (a lone close pair at moderate ``delta``) it also errs more often
  than its nominal ``delta`` in our runs, though not by a margin our 30 runs can
  establish (``mcpi_error_excess_max`` uses 3 binomial standard errors). It compares each
  boundary arm with a pooled level as if that level were known and stops at a heuristic
  GLR threshold, so it needs about half the samples per boundary point of our paired
  two-point certificate, which holds without knowing the levels. At ``eta = 1e-2`` (50
  grid arms, the smoke tier and the benchmark's smoke tier) exploring the whole grid is
  cheap and that difference dominates, so MCPI uses fewer queries than ours there. Given
  the true cells (``oracle_cells``) our localisation and a certificate from fresh draws
  alone cost more than MCPI's whole run at ``eta = 1e-2`` on the benchmark's spread
  instances, so there no detection phase followed by fresh verification could close the
  gap while the certificate stays valid; verifying from detection's own draws
  (``reuse_share``) narrows it but does not remove a factor the heuristic stop saves.
  ``mcpi_certified`` (MCPI's sampling, stopped by the same paired time-uniform
  certificate as ours, with a union over the grid's cells) is the comparison at equal
  confidence; its ratios are stored beside MCPI's.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass

import numpy as np

from neurips26.common.experiment import RunResult, param
from neurips26.common.plotting import figure_png, new_figure

from . import (
    METHODS,
    QueryOracle,
    StepFunction,
    localize_in_cells,
    make_step_function,
    reference_complexity,
)


@dataclass(frozen=True)
class Config:
    """Settings of the reproduction.

    Every combination of ``num_change_points`` x ``jumps`` x ``layouts`` x ``deltas`` x
    ``etas`` is a setting; ``n_runs`` fresh instances per setting for our method and the
    oracle-cells reference, ``n_runs_baselines`` for the baselines (``baselines``).
    """

    seed: int = 0
    num_change_points: tuple[int, ...] = param((2, 3), help="numbers of change points N", min=1)
    jumps: tuple[float, ...] = param((0.5,), help="jump sizes of the step function", min=0.0)
    layouts: tuple[str, ...] = param(
        ("spread", "clustered"), help="change-point layouts", choices=("spread", "clustered")
    )
    deltas: tuple[float, ...] = param(
        (0.1, 1e-8), help="confidence parameters delta", min=0.0, max=1.0
    )
    etas: tuple[float, ...] = param((1e-3,), help="localisation precisions eta", min=0.0)
    clustered_spacing: float = param(
        4.0, help="spacing of clustered change points, in units of eta", min=0.0
    )
    sigma: float = param(1.0, help="noise standard deviation", min=0.0)
    n_runs: int = param(30, help="runs per setting (ours and the oracle-cells reference)", min=1)
    n_runs_baselines: int = param(30, help="runs per setting of the baselines", min=1)
    baselines: tuple[str, ...] = param(
        ("uniform_ruptures", "mcpi", "mcpi_certified"),
        help="baselines compared",
        choices=("uniform_ruptures", "mcpi", "mcpi_certified"),
    )
    max_queries: int = param(10**8, help="query budget per run", min=1)


TIERS = {
    "smoke": Config(
        num_change_points=(2,),
        layouts=("spread",),
        deltas=(0.1,),
        etas=(1e-2,),
        n_runs=3,
        n_runs_baselines=3,
    ),
    "small": Config(),
    "paper": Config(
        num_change_points=(2, 3, 5),
        jumps=(0.25, 0.5, 1.0),
        deltas=(0.1, 1e-2, 1e-4, 1e-8),
        etas=(1e-2, 1e-3),
        n_runs=200,
        n_runs_baselines=200,
    ),
}


def _true_cells(f: StepFunction) -> np.ndarray:
    """Coarsest dyadic cells holding one change point each, shape (N, 2)."""
    x = f.change_points
    j = 1
    while True:
        k = np.floor(x * 2**j)
        if np.all(np.diff(k) > 0):
            return np.stack([k / 2**j, (k + 1) / 2**j], axis=1)
        j += 1


def _gmean(values) -> float:
    v = np.asarray(list(values), dtype=float)
    return float(np.exp(np.mean(np.log(v)))) if v.size else math.nan


#: Every metric name ``run()`` can return (``*`` stands for a family of names, such as
#: one per size or data set); claims name theirs exactly. Checked by the contract test.
METRICS: tuple[str, ...] = (
    "bound_loglog_corr",
    "bound_loglog_corr_ci",
    "bound_ratio_max",
    "bound_ratio_min",
    "bound_ratio_range",
    "bound_ratio_range_ci",
    "correct_rate_ours_min",
    "correctness_shortfall_max",
    "correctness_shortfall_max_ci",
    "oracle_cells_over_ours_gmean",
    "position_ratio_change",
    "position_ratio_change_ci",
    "position_ratio_large_delta",
    "position_ratio_large_delta_ci",
    "position_ratio_oracle_cells_large_delta",
    "position_ratio_small_delta",
    "uniform_ruptures_over_ours_min",
    "uniform_ruptures_over_ours_min_ci",
    "*_over_ours_gmean",
    "*_over_ours_max",
    "*_over_ours_min",
    "*_error_excess_max",
    "correct_rate_*_*",
    "correct_rate_*_min",
    "detection_share_ours_*",
    "median_queries_*_*",
    "position_ratio_delta*",
    "ratio_*_over_ours_*",
)


#: Figure captions for the report: what is plotted and the claims it illustrates.
CAPTIONS: dict[str, str] = {
    "queries_by_method": (
        "Median queries per setting for our procedure and the baselines (uniform sampling "
        "with segmentation, MCPI, phase 2-3 on the true cells) (claim beats_uniform)."
    ),
    "bound_and_position": (
        "Left: our median queries against the reference complexity bound, one point per "
        "setting (claims bound_constant_factor, bound_loglog_correlation). Right: "
        "clustered / spread median queries as delta shrinks (claims positions_matter, "
        "position_effect_fades)."
    ),
}


#: The metrics the paper claims test; each gets a bootstrap half-width ``<metric>_ci``.
CLAIM_METRICS = (
    "correctness_shortfall_max",
    "bound_ratio_range",
    "bound_loglog_corr",
    "position_ratio_large_delta",
    "position_ratio_change",
    "uniform_ruptures_over_ours_min",
)

#: Bootstrap replicates for the claims' uncertainties.
N_BOOTSTRAP = 200


def _claim_metrics(runs: dict, grid: list, cfg: Config) -> dict[str, float]:
    """The claim metrics of :data:`CLAIM_METRICS` from per-run records (see ``run``)."""

    def med(key, m, field="queries"):
        return float(np.median([r[field] for r in runs[key][m]]))

    out = {k: math.nan for k in CLAIM_METRICS}
    excess = []
    for key in grid:
        delta = key[3]
        ours = runs[key]["ours"]
        rate = float(np.mean([r["correct"] for r in ours]))
        excess.append((1 - delta - 3 * math.sqrt(delta * (1 - delta) / len(ours))) - rate)
    out["correctness_shortfall_max"] = float(max(excess))
    ours_med = np.array([med(k, "ours") for k in grid])
    ref_med = np.array([med(k, "ours", "reference") for k in grid])
    ratio = ours_med / ref_med
    out["bound_ratio_range"] = float(ratio.max() / ratio.min())
    if len(grid) > 2:
        out["bound_loglog_corr"] = float(np.corrcoef(np.log(ours_med), np.log(ref_med))[0, 1])
    if {"spread", "clustered"} <= set(cfg.layouts):
        pos = {
            delta: _gmean(
                med((N, J, "clustered", delta, e), "ours") / med((N, J, "spread", delta, e), "ours")
                for N, J, e in itertools.product(cfg.num_change_points, cfg.jumps, cfg.etas)
                if N >= 2
            )
            for delta in cfg.deltas
        }
        d_hi, d_lo = max(cfg.deltas), min(cfg.deltas)
        out["position_ratio_large_delta"] = pos[d_hi]
        if d_lo < d_hi:
            out["position_ratio_change"] = pos[d_lo] - pos[d_hi]
    if "uniform_ruptures" in cfg.baselines:
        keys3 = [k for k in grid if math.isclose(k[4], 1e-3)] or grid
        out["uniform_ruptures_over_ours_min"] = float(
            min(med(k, "uniform_ruptures") / med(k, "ours") for k in keys3)
        )
    return out


def _bootstrap_halves(runs: dict, grid: list, cfg: Config, seed: int) -> dict[str, float]:
    """Half-widths of 95% percentile-bootstrap intervals of the claim metrics.

    Runs are resampled with replacement within each instance family ``(N, jump, layout,
    eta)``, with the same draw for every ``delta`` and method (the seeds are shared there:
    common random numbers), and the claim metrics recomputed on each replicate.
    """
    rng = np.random.default_rng([seed, 13])
    reps = {k: [] for k in CLAIM_METRICS}
    families = sorted({(k[0], k[1], k[2], k[4]) for k in grid})
    for _ in range(N_BOOTSTRAP):
        draw = {fam: rng.random(max(cfg.n_runs, cfg.n_runs_baselines)) for fam in families}
        view = {}
        for key in grid:
            u = draw[(key[0], key[1], key[2], key[4])]
            view[key] = {
                m: [rr[int(x * len(rr))] for x in u[: len(rr)]] for m, rr in runs[key].items()
            }
        for k, v in _claim_metrics(view, grid, cfg).items():
            reps[k].append(v)
    halves = {}
    for k, v in reps.items():
        v = np.asarray(v, dtype=float)
        v = v[np.isfinite(v)]
        halves[f"{k}_ci"] = (
            float((np.quantile(v, 0.975) - np.quantile(v, 0.025)) / 2) if v.size else math.nan
        )
    return halves


def run(config: Config) -> RunResult:
    """Run the reproduction at ``config``; see the module docstring."""
    cfg = config
    rng = np.random.default_rng(cfg.seed)
    methods = ["ours", "oracle_cells", *cfg.baselines]
    grid = list(
        itertools.product(cfg.num_change_points, cfg.jumps, cfg.layouts, cfg.deltas, cfg.etas)
    )
    runs: dict[tuple, dict[str, list[dict]]] = {}
    seed_bank: dict[tuple, np.ndarray] = {}
    for key in grid:
        N, jump, layout, delta, eta = key
        # Common random numbers: the same instances and noise seeds at every delta, so the
        # delta-independent detection cost cancels in comparisons across delta.
        family = (N, jump, layout, eta)
        if family not in seed_bank:
            seed_bank[family] = rng.integers(
                0, 2**31 - 1, size=max(cfg.n_runs, cfg.n_runs_baselines)
            )
        seeds = seed_bank[family]
        per = {m: [] for m in methods}
        for i, s in enumerate(seeds):
            s = int(s)
            f = make_step_function(
                num_change_points=N,
                jump=jump,
                min_spacing=cfg.clustered_spacing * eta,
                layout=layout,
                eta=eta,
                seed=s,
            )
            ref = reference_complexity(f, eta=eta, delta=delta, sigma=cfg.sigma)
            for m in methods:
                if i >= (cfg.n_runs if m in ("ours", "oracle_cells") else cfg.n_runs_baselines):
                    continue
                env = QueryOracle(f, sigma=cfg.sigma, seed=s)
                kw = dict(
                    eta=eta,
                    delta=delta,
                    sigma=cfg.sigma,
                    max_queries=cfg.max_queries,
                    on_budget="warn",
                )
                if m == "oracle_cells":
                    res = localize_in_cells(env, cells=_true_cells(f), **kw)
                else:
                    res = METHODS[m](env, num_change_points=N, **kw)
                per[m].append(
                    {
                        "queries": res.num_queries,
                        "correct": res.correct(f.change_points, eta),
                        "finished": res.success is not None,
                        "detection": res.detection_queries,
                        "reference": ref.total,
                        "asymptotic": ref.asymptotic,
                    }
                )
        runs[key] = per

    def med(key, m, field="queries"):
        return float(np.median([r[field] for r in runs[key][m]]))

    metrics: dict[str, float | int | bool] = {}
    rows = []
    excess = []
    for key in grid:
        N, jump, layout, delta, eta = key
        tag = f"N{N}_J{jump:g}_{layout}_d{delta:g}_e{eta:g}"
        for m in methods:
            rr = runs[key][m]
            if not rr:
                continue
            rate = float(np.mean([r["correct"] for r in rr]))
            rows.append(
                {
                    "method": m,
                    "N": N,
                    "jump": jump,
                    "layout": layout,
                    "delta": delta,
                    "eta": eta,
                    "runs": len(rr),
                    "median_queries": med(key, m),
                    "correct_rate": rate,
                    "unfinished": int(sum(not r["finished"] for r in rr)),
                    "median_reference": med(key, m, "reference"),
                }
            )
            metrics[f"median_queries_{m}_{tag}"] = med(key, m)
            metrics[f"correct_rate_{m}_{tag}"] = rate
        ours = runs[key]["ours"]
        rate = float(np.mean([r["correct"] for r in ours]))
        se = math.sqrt(delta * (1 - delta) / len(ours))
        excess.append((1 - delta - 3 * se) - rate)
        metrics[f"detection_share_ours_{tag}"] = float(
            np.median([r["detection"] / r["queries"] for r in ours])
        )
        for b in cfg.baselines:
            metrics[f"ratio_{b}_over_ours_{tag}"] = med(key, b) / med(key, "ours")

    # Claim 1: correct at confidence delta in every setting.
    metrics["correct_rate_ours_min"] = float(
        min(np.mean([r["correct"] for r in runs[k]["ours"]]) for k in grid)
    )
    metrics["correctness_shortfall_max"] = float(max(excess))

    # Claim 2: our medians track the reference bound (constant factor, log-log correlation).
    ours_med = np.array([med(k, "ours") for k in grid])
    ref_med = np.array([med(k, "ours", "reference") for k in grid])
    ratio = ours_med / ref_med
    metrics["bound_ratio_min"] = float(ratio.min())
    metrics["bound_ratio_max"] = float(ratio.max())
    metrics["bound_ratio_range"] = float(ratio.max() / ratio.min())
    metrics["bound_loglog_corr"] = (
        float(np.corrcoef(np.log(ours_med), np.log(ref_med))[0, 1]) if len(grid) > 2 else math.nan
    )

    # Claims 3-4: clustered / spread at equal jumps, per delta (geometric mean over N, jump, eta).
    pos = {}
    if {"spread", "clustered"} <= set(cfg.layouts):
        for delta in cfg.deltas:
            vals = [
                med((N, J, "clustered", delta, e), "ours") / med((N, J, "spread", delta, e), "ours")
                for N, J, e in itertools.product(cfg.num_change_points, cfg.jumps, cfg.etas)
                if N >= 2
            ]
            pos[delta] = _gmean(vals)
            metrics[f"position_ratio_delta{delta:g}"] = pos[delta]
        d_hi, d_lo = max(cfg.deltas), min(cfg.deltas)
        metrics["position_ratio_large_delta"] = pos[d_hi]
        metrics["position_ratio_small_delta"] = pos[d_lo]
        metrics["position_ratio_change"] = pos[d_lo] - pos[d_hi] if d_lo < d_hi else math.nan
        metrics["position_ratio_oracle_cells_large_delta"] = _gmean(
            med((N, J, "clustered", d_hi, e), "oracle_cells")
            / med((N, J, "spread", d_hi, e), "oracle_cells")
            for N, J, e in itertools.product(cfg.num_change_points, cfg.jumps, cfg.etas)
        )

    # Claims 5-6: baselines / ours (geometric mean over the settings at eta = 1e-3).
    keys3 = [k for k in grid if math.isclose(k[4], 1e-3)] or grid
    for b in cfg.baselines:
        r = [med(k, b) / med(k, "ours") for k in keys3]
        metrics[f"{b}_over_ours_gmean"] = _gmean(r)
        metrics[f"{b}_over_ours_min"] = float(min(r))
        metrics[f"{b}_over_ours_max"] = float(max(r))
        metrics[f"correct_rate_{b}_min"] = float(
            min(np.mean([x["correct"] for x in runs[k][b]]) for k in grid)
        )
        # Equal confidence means matched error rates: how far the baseline's error rate
        # exceeds its nominal delta (+3 binomial SE) in its worst setting (> 0: it errs
        # more often than it promises, so its query counts flatter it).
        metrics[f"{b}_error_excess_max"] = float(
            max(
                (1 - np.mean([x["correct"] for x in runs[k][b]]))
                - k[3]
                - 3 * math.sqrt(k[3] * (1 - k[3]) / len(runs[k][b]))
                for k in grid
            )
        )
    metrics["oracle_cells_over_ours_gmean"] = _gmean(
        med(k, "oracle_cells") / med(k, "ours") for k in grid
    )

    # The claim metrics once more from one function (same values), with their bootstrap
    # half-widths: every claim is a median or rate over a few dozen noisy runs.
    metrics.update(_claim_metrics(runs, grid, cfg))
    metrics.update(_bootstrap_halves(runs, grid, cfg, cfg.seed))
    metrics = {k: (v if isinstance(v, (bool, int)) else float(v)) for k, v in metrics.items()}
    figures = _figures(cfg, grid, methods, med, ours_med, ref_med, pos)
    notes = (
        f"{len(grid)} settings, {cfg.n_runs} runs each for ours and oracle_cells, "
        f"{cfg.n_runs_baselines} for {', '.join(cfg.baselines) or 'no baselines'}.",
        "Baselines share our precision grid of spacing 2 eta; uniform_ruptures uses the exact "
        "least-squares segmentation equal to ruptures.Dynp(l2).",
        "MCPI is a simplified Track-and-Stop without a formal delta guarantee; its error "
        "rates are in the table beside its queries, and mcpi_error_excess_max says whether "
        "it errs more often than its nominal delta anywhere (compare queries at matched "
        "error rates).",
    )
    return RunResult(
        metrics=metrics,
        tables={"settings": rows},
        figures=figures,
        captions=CAPTIONS,
        notes=notes,
    )


def _figures(cfg, grid, methods, med, ours_med, ref_med, pos):
    figs = {}
    fig, axes = new_figure(1, width=max(5.0, 0.9 * len(grid)))
    ax = axes[0]
    w = 0.8 / len(methods)
    for i, m in enumerate(methods):
        ax.bar(np.arange(len(grid)) + i * w, [med(k, m) for k in grid], w, label=m)
    labels = [f"N{k[0]} {k[2][:5]}\nd={k[3]:g} e={k[4]:g}" for k in grid]
    ax.set_xticks(np.arange(len(grid)) + 0.4 - w / 2, labels, fontsize=7)
    ax.set_yscale("log")
    ax.set_ylabel("median queries")
    ax.legend(fontsize=7)
    ax.set_title("samples used: ours vs baselines", fontsize=9)
    figs["queries_by_method"] = figure_png(fig)

    fig, axes = new_figure(2, width=4.5)
    axes[0].loglog(ref_med, ours_med, "o")
    axes[0].set_xlabel("reference complexity (total)")
    axes[0].set_ylabel("our median queries")
    axes[0].set_title("theory vs simulation (one point per setting)", fontsize=9)
    axes[0].minorticks_off()
    ds = sorted(pos)
    axes[1].plot(ds, [pos[d] for d in ds], "o-")
    axes[1].axhline(1.0, color="grey", lw=0.8)
    if ds:
        axes[1].set_xscale("log")
    axes[1].set_xlabel("delta")
    axes[1].set_ylabel("median queries clustered / spread")
    axes[1].set_title("position effect vs delta", fontsize=9)
    figs["bound_and_position"] = figure_png(fig)
    return figs
