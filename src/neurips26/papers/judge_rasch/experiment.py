"""Reproduction: correlation-based vs benchmark-conditional validation of simulated judges.

Each replicate simulates a SummEval-shaped human benchmark (systems x documents x raters x
dimensions, one planted misfitting rater) and six judges (faithful, collapsed, compressed,
system-biased, noisy, shifted), runs the three-stage :class:`JudgeValidator` and the
correlation baseline, and records decisions, fidelity and EMD per judge x dimension cell.
Weak rulers (no real spread between systems, or one rater per summary) are audited in
separate replicates. Claims 1-5 of the spec are computed from these cells.

What the results rest on (the measured values are in the store and the report)
------------------------------------------------------------------------------
The shifted judge is calibrated away and often selected, which is the intended
behaviour, so the framework is not expected to flag all five pathological judges. Our
simulated judges all use their own thresholds, so raw histograms are always off and
calibration lowers the EMD in nearly every cell; the failures-flagged claim then rests
on very few cells and is weak evidence. The ruler's 95% coverage sits near the lower
edge of its band (JMLE and the rare undetected misfitting rater). Of the weak rulers, the
spread-less one is refused and the single-rater one is not (see the deviations).

Deviations from the paper
-------------------------
- Simulated data instead of SummEval / HiTZ-BASSE and real LLM judges (grade C).
- Claim 4's "weak ruler" pools two designs from the spec: ``theta_sd = 0.1`` and a single
  rater per summary. With 16 systems spread 1 logit apart and 100 documents, a one-rater
  ruler still has reliability ~0.98 and resolves most pairs, so the framework (correctly)
  does not refuse it; the pooled refusal share therefore sits near one half and the claim
  does not reproduce as stated. Each design's share is reported separately.
- Claim 5 maps the true parameters into the fit's identification frame (the true ``theta``
  shifted by the mean true severity of the raters kept in the ruler) before computing
  coverage; this is the exact change of frame, not a fit.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np
import pandas as pd

from neurips26.common.experiment import RunResult, param
from neurips26.common.plotting import figure_png, new_figure
from neurips26.common.stats import bootstrap_ci

from . import (
    JudgeValidator,
    audit_ruler,
    correlation_baseline,
    decide,
    fit_mfrm,
    simulate_benchmark,
    simulate_judge,
)

PATHOLOGICAL = ("collapsed", "compressed", "system_biased", "noisy", "shifted")


@dataclass(frozen=True)
class Config:
    """Settings of the reproduction (see ``TIERS``)."""

    num_systems: int = param(16, help="systems rated", min=1)
    num_items: int = param(100, help="items per system", min=1)
    num_raters: int = param(3, help="human raters", min=1)
    num_dimensions: int = param(4, help="rated dimensions", min=1)
    num_categories: int = param(5, help="rating categories", min=1)
    theta_sd: float = param(1.0, help="spread of system quality", min=0.0)
    weak_theta_sd: float = param(0.1, help="spread of system quality on the weak ruler", min=0.0)
    misfit_rate: float = param(0.5, help="fraction of misfitting ratings", min=0.0, max=1.0)
    judges: tuple[str, ...] = param(
        ("faithful", "collapsed", "compressed", "system_biased", "noisy", "shifted"),
        help="simulated LLM judges",
        choices=("faithful", "collapsed", "compressed", "system_biased", "noisy", "shifted"),
    )
    num_replicates: int = param(20, help="replicates per judge", min=1)
    num_weak_replicates: int = param(10, help="replicates on the weak ruler", min=1)
    num_bootstrap: int = param(100, help="bootstrap resamples for intervals", min=1)
    heldout_frac: float = param(
        0.5, help="fraction of items held out for validation", min=0.0, max=1.0
    )
    alpha: float = param(0.05, help="significance level of the tests", min=0.0, max=1.0)
    seed: int = 0


TIERS = {
    "smoke": Config(
        num_systems=6,
        num_items=20,
        num_raters=2,
        num_dimensions=1,
        judges=("faithful", "compressed"),
        num_replicates=1,
        num_weak_replicates=1,
        num_bootstrap=20,
    ),
    "small": Config(),
    "paper": Config(num_replicates=100, num_weak_replicates=50, num_bootstrap=500),
}


def _frame_shifted_theta(bench, dim: int, kept_raters) -> np.ndarray:
    """True theta in the fit's frame: sum delta = 0 (already), sum rho over kept raters = 0."""
    return bench.theta[dim] - bench.rho[np.asarray(kept_raters, dtype=int)].mean()


#: Every metric name ``run()`` can return (``*`` stands for a family of names, such as
#: one per size or data set); claims name theirs exactly. Checked by the contract test.
METRICS: tuple[str, ...] = (
    "all_converged",
    "emd_improved_cells",
    "emd_improved_share",
    "failures_flagged_share",
    "faithful_select_rate",
    "faithful_select_rate_ci",
    "num_calibration_failures",
    "num_cells",
    "num_pathological",
    "pathological_flagged",
    "pathological_passing_correlation",
    "raters_dropped_rate",
    "ruler_reliability",
    "ruler_resolvable_fraction",
    "ruler_theta_corr",
    "ruler_theta_coverage",
    "strong_refuse_rate",
    "weak_leaderboard_rate",
    "weak_refuse_rate",
    "refuse_rate_*",
    "reliability_*",
)


#: Figure captions for the report: what is plotted and the claims it illustrates.
CAPTIONS: dict[str, str] = {
    "decisions": (
        "Share of judge x dimension cells each pathological judge passes under the "
        "correlation workflow and is flagged (warn / refuse) by the three-stage framework "
        "(claims correlation_passes_bad_judges, framework_flags_bad_judges)."
    ),
    "emd": (
        "EMD to the human score distribution: raw judge scores against the calibrated "
        "prediction, one point per cell; below the diagonal calibration helps (claims "
        "calibration_improves_emd, failures_where_flagged)."
    ),
    "ruler": (
        "Stage 1 ruler: estimated system measures with 95% intervals against the truth "
        "(checks ruler_recovers_theta, ruler_ci_coverage), and the conditional standard "
        "error over theta."
    ),
}


def run(config: Config) -> RunResult:
    """Run the reproduction at one tier; see the module docstring."""
    rng = np.random.default_rng(config.seed)
    cells = []
    recovery = []  # (true, est, se) per system per dimension-replicate
    converged = True
    example = None
    for rep in range(config.num_replicates):
        seed_b, seed_v = (int(v) for v in rng.integers(2**31, size=2))
        bench = simulate_benchmark(
            num_systems=config.num_systems,
            num_items=config.num_items,
            num_raters=config.num_raters,
            num_dimensions=config.num_dimensions,
            num_categories=config.num_categories,
            theta_sd=config.theta_sd,
            misfit_rate=config.misfit_rate,
            seed=seed_b,
        )
        judges = {
            kind: simulate_judge(kind, bench, seed=int(rng.integers(2**31)))
            for kind in config.judges
        }
        validator = JudgeValidator(
            num_categories=config.num_categories,
            alpha=config.alpha,
            heldout_frac=config.heldout_frac,
            num_bootstrap=config.num_bootstrap,
            seed=seed_v,
        ).fit(bench.ratings, judges)
        rep_df = validator.report_.assign(replicate=rep)
        cells.append(rep_df)
        converged &= bool(rep_df["converged"].all())
        for j, dim in enumerate(bench.dimensions):
            fit = validator.fits_[dim]
            kept = [r for r in range(config.num_raters) if r not in validator.dropped_raters_[dim]]
            truth = _frame_shifted_theta(bench, j, kept)[np.asarray(fit.systems, dtype=int)]
            recovery.append((truth, fit.theta, fit.theta_se))
        if example is None:
            example = (bench, validator)
    cells = pd.concat(cells, ignore_index=True)

    # ------------------------------------------------------------------ weak rulers
    weak_rows = []
    for variant in ("weak_spread", "single_rater"):
        for _ in range(config.num_weak_replicates):
            bench = simulate_benchmark(
                num_systems=config.num_systems,
                num_items=config.num_items,
                num_raters=config.num_raters,
                num_dimensions=config.num_dimensions,
                num_categories=config.num_categories,
                theta_sd=config.weak_theta_sd if variant == "weak_spread" else config.theta_sd,
                raters_per_item=1 if variant == "single_rater" else None,
                misfit_rate=config.misfit_rate,
                seed=int(rng.integers(2**31)),
            )
            judge = simulate_judge("faithful", bench, seed=int(rng.integers(2**31)))
            for dim in bench.dimensions:
                hd = bench.ratings[bench.ratings["dimension"] == dim].drop(columns="dimension")
                fit = fit_mfrm(hd, num_categories=config.num_categories)
                converged &= bool(fit.converged)
                ruler = audit_ruler(fit, alpha=config.alpha)
                base = correlation_baseline(hd, judge[judge["dimension"] == dim])
                weak_rows.append(
                    {
                        "variant": variant,
                        "decision": decide(ruler).label,
                        "reliability": ruler.reliability,
                        "resolvable_fraction": ruler.resolvable_fraction,
                        "leaderboard_full": len(base.leaderboard) == config.num_systems,
                    }
                )
    weak = pd.DataFrame(weak_rows)

    # ------------------------------------------------------------------ metrics
    metrics: dict[str, float | int | bool] = {}
    cells["flagged"] = cells["decision"] != "select"
    cells["corr_pass"] = cells["spearman"] > 0.8
    per_judge = cells.groupby("judge").agg(
        corr_pass_rate=("corr_pass", "mean"),
        flag_rate=("flagged", "mean"),
        select_rate=("decision", lambda d: float(np.mean(d == "select"))),
        spearman=("spearman", "mean"),
        nsmf=("nsmf", "mean"),
        false_separation_rate=("false_separation_rate", "mean"),
        transfer_failures=("transfer_failures", "mean"),
        judge_infit=("judge_infit", "mean"),
        judge_outfit=("judge_outfit", "mean"),
        emd_raw=("emd_raw", "mean"),
        emd_calibrated=("emd_calibrated", "mean"),
    )
    pathological = [k for k in config.judges if k in PATHOLOGICAL]
    if pathological:
        pj = per_judge.loc[pathological]
        metrics["num_pathological"] = len(pathological)
        metrics["pathological_passing_correlation"] = int((pj["corr_pass_rate"] >= 0.5).sum())
        metrics["pathological_flagged"] = int((pj["flag_rate"] >= 0.5).sum())
    if "faithful" in config.judges:
        metrics["faithful_select_rate"] = float(per_judge.loc["faithful", "select_rate"])
        # replicates are the independent units (the dimensions of one replicate share its
        # benchmark): a percentile bootstrap of the rate over them
        rep_rate = (
            cells.loc[cells["judge"] == "faithful"]
            .groupby("replicate")["decision"]
            .agg(lambda d: float(np.mean(d == "select")))
            .to_numpy()
        )
        metrics["faithful_select_rate_ci"] = bootstrap_ci(
            rep_rate, num_bootstrap=config.num_bootstrap, seed=config.seed
        ).half_width
    improved = cells["emd_calibrated"] < cells["emd_raw"]
    metrics["emd_improved_share"] = float(improved.mean())
    metrics["emd_improved_cells"] = int(improved.sum())
    metrics["num_cells"] = len(cells)
    failed = ~improved
    metrics["num_calibration_failures"] = int(failed.sum())
    if failed.any():
        metrics["failures_flagged_share"] = float(cells.loc[failed, "flagged"].mean())
    for variant in ("weak_spread", "single_rater"):
        sub = weak[weak["variant"] == variant]
        metrics[f"refuse_rate_{variant}"] = float(np.mean(sub["decision"] == "refuse"))
        metrics[f"reliability_{variant}"] = float(sub["reliability"].mean())
    metrics["weak_refuse_rate"] = float(np.mean(weak["decision"] == "refuse"))
    metrics["weak_leaderboard_rate"] = float(weak["leaderboard_full"].mean())
    strong_refuse = cells.groupby(["replicate", "dimension"])["decision"].first() == "refuse"
    metrics["strong_refuse_rate"] = float(strong_refuse.mean())
    truth = np.concatenate([r[0] for r in recovery])
    est = np.concatenate([r[1] for r in recovery])
    se = np.concatenate([r[2] for r in recovery])
    metrics["ruler_theta_corr"] = float(np.mean([np.corrcoef(t, e)[0, 1] for t, e, _ in recovery]))
    metrics["ruler_theta_coverage"] = float(np.mean(np.abs(est - truth) <= 1.959964 * se))
    metrics["ruler_reliability"] = float(cells["reliability"].mean())
    metrics["ruler_resolvable_fraction"] = float(cells["resolvable_fraction"].mean())
    metrics["raters_dropped_rate"] = float(
        cells.groupby(["replicate", "dimension"])["dropped_raters"].first().gt(0).mean()
    )
    metrics["all_converged"] = bool(converged)

    # ------------------------------------------------------------------ tables, figures
    per_judge_table = [
        {"judge": name, **{k: round(float(v), 4) for k, v in row.items()}}
        for name, row in per_judge.iterrows()
    ]
    ruler_table = [
        {
            "ruler": f"strong ({config.num_raters} raters, theta_sd={config.theta_sd:g})",
            "reliability": round(metrics["ruler_reliability"], 4),
            "resolvable_fraction": round(metrics["ruler_resolvable_fraction"], 4),
            "refuse_rate": round(metrics["strong_refuse_rate"], 4),
            "leaderboard_by_correlation": 1.0,
        }
    ]
    for variant, sub in weak.groupby("variant", sort=False):
        ruler_table.append(
            {
                "ruler": variant,
                "reliability": round(float(sub["reliability"].mean()), 4),
                "resolvable_fraction": round(float(sub["resolvable_fraction"].mean()), 4),
                "refuse_rate": round(float(np.mean(sub["decision"] == "refuse")), 4),
                "leaderboard_by_correlation": round(float(sub["leaderboard_full"].mean()), 4),
            }
        )
    reason_rows = []
    for name, sub in cells.groupby("judge", sort=False):
        kinds = {"infit": 0, "outfit": 0, "scale": 0, "NSMF": 0, "false sep": 0, "transfer": 0}
        for text in sub["reasons"]:
            for key, pattern in (
                ("infit", "infit"),
                ("outfit", "outfit"),
                ("scale", "judge scale collapsed|disordered"),
                ("NSMF", "NSMF"),
                ("false sep", "false separations"),
                ("transfer", "transfer"),
            ):
                kinds[key] += bool(re.search(pattern, text))
        reason_rows.append({"judge": name, "cells": len(sub), **kinds})
    figures = {
        "decisions": _fig_decisions(per_judge, config.judges),
        "emd": _fig_emd(cells),
        "ruler": _fig_ruler(example, recovery),
    }
    notes = [
        f"{len(cells)} judge x dimension cells over {config.num_replicates} replicates; "
        f"{len(weak)} weak-ruler audits.",
        "All MFRM fits and judge calibrations converged."
        if converged
        else "Some MFRM fit or judge calibration did not converge (see all_converged).",
        f"Misfitting raters were dropped from the ruler in "
        f"{metrics['raters_dropped_rate']:.0%} of dimension-replicates.",
    ]
    if metrics["refuse_rate_single_rater"] < 0.9:
        notes.append(
            "Single-rater rulers were not refused: with theta_sd=1 they stay reliable "
            f"(mean R={metrics['reliability_single_rater']:.2f}); only the spread-less ruler "
            "is too weak to rank systems."
        )
    return RunResult(
        metrics=metrics,
        tables={"per_judge": per_judge_table, "warn_reasons": reason_rows, "rulers": ruler_table},
        figures=figures,
        captions=CAPTIONS,
        notes=tuple(notes),
    )


def _fig_decisions(per_judge: pd.DataFrame, judges) -> bytes:
    fig, (ax,) = new_figure(1, width=6.5)
    names = [j for j in judges if j in per_judge.index]
    x = np.arange(len(names))
    ax.bar(
        x - 0.2,
        per_judge.loc[names, "corr_pass_rate"],
        0.4,
        label="correlation workflow passes (Spearman > 0.8)",
    )
    ax.bar(x + 0.2, per_judge.loc[names, "flag_rate"], 0.4, label="framework flags (warn/refuse)")
    ax.set_xticks(x, names, rotation=20)
    ax.set_ylabel("share of judge x dimension cells")
    ax.set_ylim(0, 1.05)
    ax.legend(fontsize=7, loc="lower right")
    ax.set_title("Correlation passes pathological judges; the framework flags them")
    return figure_png(fig)


def _fig_emd(cells: pd.DataFrame) -> bytes:
    fig, (ax,) = new_figure(1, width=5.0, height=4.4)
    for name, sub in cells.groupby("judge", sort=False):
        ax.scatter(sub["emd_raw"], sub["emd_calibrated"], s=10, label=name, alpha=0.7)
    hi = float(max(cells["emd_raw"].max(), cells["emd_calibrated"].max())) * 1.05
    ax.plot([0, hi], [0, hi], "k--", lw=0.8)
    ax.set_xlabel("EMD to human ratings: raw judge scores")
    ax.set_ylabel("EMD: calibrated prediction")
    ax.set_title("Calibration lowers distributional distance (below diagonal)")
    ax.legend(fontsize=7)
    return figure_png(fig)


def _fig_ruler(example, recovery) -> bytes:
    fig, axes = new_figure(2, width=4.6)
    truth, est, se = recovery[0]
    axes[0].errorbar(truth, est, yerr=1.96 * se, fmt="o", ms=3, capsize=2)
    lo, hi = float(min(truth.min(), est.min())), float(max(truth.max(), est.max()))
    axes[0].plot([lo, hi], [lo, hi], "k--", lw=0.8)
    axes[0].set_xlabel("true theta (fit frame)")
    axes[0].set_ylabel("estimated theta +/- 1.96 SE")
    axes[0].set_title("Stage 1 ruler: parameter recovery")
    if example is not None:
        _, validator = example
        ruler = next(iter(validator.rulers_.values()))
        axes[1].plot(ruler.theta_grid, ruler.conditional_se)
        fit = next(iter(validator.fits_.values()))
        axes[1].scatter(fit.theta, fit.theta_se, s=10, color="C1", label="systems")
        axes[1].set_xlabel("theta")
        axes[1].set_ylabel("conditional SE")
        axes[1].set_title(
            f"R = {ruler.reliability:.2f}, {ruler.resolvable_fraction:.0%} pairs resolvable"
        )
        axes[1].legend(fontsize=7)
    return figure_png(fig)
