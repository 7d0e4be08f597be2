"""Reproduction: sample counts and error rates of adaptive change-point localisation.

Synthetic step functions (equal jumps of alternating sign) in a "spread" and a
"clustered" layout (two change points ``clustered_spacing * eta`` apart); our procedure
against uniform sampling with offline segmentation, the simplified MCPI Track-and-Stop
with its heuristic stop (``mcpi``) and with the certified stop (``mcpi_certified``, the
guarantee ours has), and phase 2-3 alone on the true cells (``oracle_cells``), over a grid
of ``N``, jump, ``delta`` and ``eta``. Instances and noise seeds are shared across
``delta`` (common random numbers). See ``paper.py`` for the claims and tiers.

Units: one setting ``(N, jump, layout, delta, eta)`` is a unit of the experiment layer; its
rows are the runs of every method, one per instance. The instances' seeds come from one
generator drawn in grid order (a family's seeds when the family first appears).

Uncertainty: every claim metric and every control carries a 95% percentile bootstrap over
instances (:meth:`neurips26.experiment.Table.bootstrap`): an instance brings its runs at
every ``delta`` and of every method (common random numbers), and instances are redrawn
within their family ``(N, jump, layout, eta)`` and within the block of methods that ran on
them (when ``n_runs`` and ``n_runs_baselines`` differ), so each method keeps its number of
runs.

Controls: the bound claims are measured again against the asymptotic reference ``sum_k 2
sigma^2 / Delta_k^2 log(1 / delta)`` (no position or localisation term: if our counts track
it as well, tracking the non-asymptotic bound says nothing of its extra terms); the
position claim again for phases 2-3 on the true cells (``oracle_cells``: no search for
the change points, so the positions' search cost is absent); the same cells' change of the
ratio with delta is reported (``position_ratio_change_oracle_cells``) but is no control of
the fading claim: with no position effect its true value is the threshold 0.

Claims that do not reproduce, or not clearly (the measured values are in the store and the
report), and why we think so:

- ``bound_constant_factor`` (our medians within a factor 4 of the reference complexity
  across settings) sits near its threshold. Its cause is not yet diagnosed. One candidate
  is measured: the reference of :mod:`.complexity` is our inference and omits the
  logarithm of the grid size that our search for a close pair pays, which would put
  clustered settings higher relative to the reference than spread ones;
  ``bound_ratio_clustered_over_spread`` (the geometric mean of our median over the
  reference in clustered settings over that in spread ones) is above 1 if so.
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

import functools
import itertools
import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from neurips26.common.experiment import param
from neurips26.common.plotting import figure_png, new_figure
from neurips26.experiment import Estimate, Experiment, Table, bootstrap_interval

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
    "bound_loglog_corr_asymptotic",
    "bound_ratio_max",
    "bound_ratio_min",
    "bound_ratio_range",
    "bound_ratio_range_asymptotic",
    "bound_ratio_clustered_over_spread",
    "correct_rate_ours_min",
    "correctness_shortfall_max",
    "oracle_cells_over_ours_gmean",
    "position_ratio_change",
    "position_ratio_change_oracle_cells",
    "position_ratio_large_delta",
    "position_ratio_oracle_cells_large_delta",
    "position_ratio_small_delta",
    "uniform_ruptures_over_ours_min",
    "position_ratio_oracle_cells_delta*",
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
        "with segmentation, MCPI, phase 2-3 on the true cells) (claim beats_uniform); bars: "
        "the median's 95% percentile bootstrap interval over the setting's runs (400 "
        "resamples)."
    ),
    "bound_and_position": (
        "Left: our median queries against the reference complexity bound, one point per "
        "setting (claims bound_constant_factor, bound_loglog_correlation). Right: "
        "clustered / spread median queries as delta shrinks (claims positions_matter, "
        "position_effect_fades)."
    ),
}


#: The metrics the paper claims test, their controls and the diagnostic; each carries a
#: bootstrap interval over instances.
CLAIM_METRICS = (
    "correctness_shortfall_max",
    "bound_ratio_range",
    "bound_loglog_corr",
    "position_ratio_large_delta",
    "position_ratio_change",
    "uniform_ruptures_over_ours_min",
    "bound_ratio_range_asymptotic",
    "bound_loglog_corr_asymptotic",
    "position_ratio_oracle_cells_large_delta",
    "position_ratio_change_oracle_cells",
    "bound_ratio_clustered_over_spread",
)

#: Bootstrap replicates for the claims' uncertainties.
N_BOOTSTRAP = 200


def _med(runs: dict, key: tuple, method: str, field: str = "queries") -> float:
    """Median of ``field`` over the runs of ``method`` in setting ``key``."""
    return float(np.median([r[field] for r in runs[key][method]]))


def _med_interval(runs: dict, key: tuple, method: str, *, seed: int = 0) -> Estimate:
    """:func:`_med` of ``queries`` with its 95% percentile bootstrap over the runs."""
    q = np.array([r["queries"] for r in runs[key][method]], dtype=float)
    return bootstrap_interval(q, np.median, num_resamples=FIGURE_RESAMPLES, seed=seed,
                              unit="runs")


#: Bootstrap resamples of the figure's error bars.
FIGURE_RESAMPLES = 400


def _claim_metrics(runs: dict, grid: list, cfg: Config) -> dict[str, float]:
    """The claim metrics of :data:`CLAIM_METRICS` from per-run records (see ``run``)."""

    med = functools.partial(_med, runs)

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
    # the control: the same against the asymptotic reference (verification alone)
    asym_med = np.array([med(k, "ours", "asymptotic") for k in grid])
    asym = ours_med / asym_med
    out["bound_ratio_range_asymptotic"] = float(asym.max() / asym.min())
    if len(grid) > 2:
        out["bound_loglog_corr"] = float(np.corrcoef(np.log(ours_med), np.log(ref_med))[0, 1])
        out["bound_loglog_corr_asymptotic"] = float(
            np.corrcoef(np.log(ours_med), np.log(asym_med))[0, 1])
    if {"spread", "clustered"} <= set(cfg.layouts):
        # the diagnostic of bound_constant_factor: clustered settings against spread ones
        by = {lay: _gmean(r for k, r in zip(grid, ratio, strict=True) if k[2] == lay)
              for lay in ("clustered", "spread")}
        out["bound_ratio_clustered_over_spread"] = by["clustered"] / by["spread"]
        pos = _position_ratios(med, cfg, "ours")
        # the control: phases 2-3 on the true cells (no search for the change points)
        oracle = _position_ratios(med, cfg, "oracle_cells", all_n=True)
        d_hi, d_lo = max(cfg.deltas), min(cfg.deltas)
        out["position_ratio_large_delta"] = pos[d_hi]
        out["position_ratio_oracle_cells_large_delta"] = oracle[d_hi]
        if d_lo < d_hi:
            out["position_ratio_change"] = pos[d_lo] - pos[d_hi]
            out["position_ratio_change_oracle_cells"] = oracle[d_lo] - oracle[d_hi]
    if "uniform_ruptures" in cfg.baselines:
        keys3 = [k for k in grid if math.isclose(k[4], 1e-3)] or grid
        out["uniform_ruptures_over_ours_min"] = float(
            min(med(k, "uniform_ruptures") / med(k, "ours") for k in keys3)
        )
    return out


def _position_ratios(med, cfg: Config, method: str, all_n: bool = False) -> dict:
    """Clustered / spread median queries of ``method`` per delta (geometric mean over N,
    jump and eta; over ``N >= 2`` unless ``all_n``)."""
    return {
        delta: _gmean(
            med((N, J, "clustered", delta, e), method) / med((N, J, "spread", delta, e), method)
            for N, J, e in itertools.product(cfg.num_change_points, cfg.jumps, cfg.etas)
            if all_n or N >= 2
        )
        for delta in cfg.deltas
    }


def _grid(cfg: Config) -> list[tuple]:
    return list(
        itertools.product(cfg.num_change_points, cfg.jumps, cfg.layouts, cfg.deltas, cfg.etas)
    )


def _methods(cfg: Config) -> list[str]:
    return ["ours", "oracle_cells", *cfg.baselines]


def _n_runs(cfg: Config, method: str) -> int:
    return cfg.n_runs if method in ("ours", "oracle_cells") else cfg.n_runs_baselines


#: The columns naming a setting (a unit of the experiment).
SETTING = ("N", "jump", "layout", "delta", "eta")


class ChangepointBandit(Experiment):
    """Ours against the baselines on every setting; one unit per setting."""

    Config, TIERS, METRICS, CAPTIONS = Config, TIERS, METRICS, CAPTIONS
    UNIT_TABLE = None  # one row per run; the report gets the per-setting table instead

    def setup(self, config, ctx):
        # one sequential generator: a family's instance seeds are drawn when it first
        # appears in the grid, shared by every delta (common random numbers)
        return {"cfg": config, "rng": np.random.default_rng(config.seed), "seeds": {}}

    def grid(self, config):
        return [dict(zip(SETTING, key, strict=True)) for key in _grid(config)]

    def measure(self, unit, state, ctx):
        cfg = state["cfg"]
        N, jump, layout, delta, eta = (unit[c] for c in SETTING)
        # Common random numbers: the same instances and noise seeds at every delta, so the
        # delta-independent detection cost cancels in comparisons across delta.
        family = (N, jump, layout, eta)
        if family not in state["seeds"]:
            state["seeds"][family] = state["rng"].integers(
                0, 2**31 - 1, size=max(cfg.n_runs, cfg.n_runs_baselines)
            )
        rows = []
        for i, s in enumerate(state["seeds"][family]):
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
            for m in _methods(cfg):
                if i >= _n_runs(cfg, m):
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
                rows.append(
                    {
                        "method": m,
                        "run": i,
                        "queries": res.num_queries,
                        "correct": bool(res.correct(f.change_points, eta)),
                        "finished": res.success is not None,
                        "detection": res.detection_queries,
                        "reference": ref.total,
                        "asymptotic": ref.asymptotic,
                    }
                )
        return rows

    def summarize(self, table, config, ctx):
        cfg = config
        grid = _grid(cfg)
        runs = _runs(table, cfg)

        med = functools.partial(_med, runs)

        metrics: dict[str, float | int | bool | Estimate] = {}
        for key in grid:
            N, jump, layout, delta, eta = key
            tag = f"N{N}_J{jump:g}_{layout}_d{delta:g}_e{eta:g}"
            for m in _methods(cfg):
                rr = runs[key][m]
                if not rr:
                    continue
                metrics[f"median_queries_{m}_{tag}"] = med(key, m)
                metrics[f"correct_rate_{m}_{tag}"] = float(np.mean([r["correct"] for r in rr]))
            ours = runs[key]["ours"]
            metrics[f"detection_share_ours_{tag}"] = float(
                np.median([r["detection"] / r["queries"] for r in ours])
            )
            for b in cfg.baselines:
                metrics[f"ratio_{b}_over_ours_{tag}"] = med(key, b) / med(key, "ours")

        # Claim 1: correct at confidence delta in every setting.
        metrics["correct_rate_ours_min"] = float(
            min(np.mean([r["correct"] for r in runs[k]["ours"]]) for k in grid)
        )

        # Claim 2: our medians against the reference bound.
        ratio = np.array([med(k, "ours") / med(k, "ours", "reference") for k in grid])
        metrics["bound_ratio_min"] = float(ratio.min())
        metrics["bound_ratio_max"] = float(ratio.max())

        # Claims 3-4: clustered / spread at equal jumps, per delta.
        if {"spread", "clustered"} <= set(cfg.layouts):
            pos = _position_ratios(med, cfg, "ours")
            oracle = _position_ratios(med, cfg, "oracle_cells", all_n=True)
            for delta in cfg.deltas:
                metrics[f"position_ratio_delta{delta:g}"] = pos[delta]
                metrics[f"position_ratio_oracle_cells_delta{delta:g}"] = oracle[delta]
            metrics["position_ratio_small_delta"] = pos[min(cfg.deltas)]

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
            # Equal confidence means matched error rates: how far the baseline's error
            # rate exceeds its nominal delta (+3 binomial SE, the spec's margin) in its
            # worst setting (> 0: it errs more often than it promises, so its query
            # counts flatter it).
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

        # The claim metrics, controls and diagnostic from one function, each with its
        # bootstrap interval over instances: every one is a median or rate over a few
        # dozen noisy runs.
        metrics.update(_bootstrap(runs, grid, cfg))
        return {k: (v if isinstance(v, (bool, int, Estimate)) else float(v))
                for k, v in metrics.items()}

    def tables(self, table, summary, config):
        runs = _runs(table, config)
        rows = []
        for key in _grid(config):
            N, jump, layout, delta, eta = key
            for m in _methods(config):
                rr = runs[key][m]
                if not rr:
                    continue
                rows.append(
                    {
                        "method": m,
                        "N": N,
                        "jump": jump,
                        "layout": layout,
                        "delta": delta,
                        "eta": eta,
                        "runs": len(rr),
                        "median_queries": float(np.median([r["queries"] for r in rr])),
                        "correct_rate": float(np.mean([r["correct"] for r in rr])),
                        "unfinished": int(sum(not r["finished"] for r in rr)),
                        "median_reference": float(np.median([r["reference"] for r in rr])),
                    }
                )
        return {"settings": rows}

    def figures(self, table, summary, config):
        cfg = config
        grid = _grid(cfg)
        runs = _runs(table, cfg)

        med = functools.partial(_med, runs)

        ours_med = np.array([med(k, "ours") for k in grid])
        ref_med = np.array([med(k, "ours", "reference") for k in grid])
        pos = (_position_ratios(med, cfg, "ours")
               if {"spread", "clustered"} <= set(cfg.layouts) else {})
        med_interval = functools.partial(_med_interval, runs, seed=cfg.seed)
        return _figures(cfg, grid, _methods(cfg), med_interval, ours_med, ref_med, pos)

    def notes(self, table, summary, config):
        cfg = config
        return (
            f"{len(_grid(cfg))} settings, {cfg.n_runs} runs each for ours and oracle_cells, "
            f"{cfg.n_runs_baselines} for {', '.join(cfg.baselines) or 'no baselines'}.",
            "Baselines share our precision grid of spacing 2 eta; uniform_ruptures uses the "
            "exact least-squares segmentation equal to ruptures.Dynp(l2).",
            "MCPI is a simplified Track-and-Stop without a formal delta guarantee; its error "
            "rates are in the table beside its queries, and mcpi_error_excess_max says "
            "whether it errs more often than its nominal delta anywhere (compare queries at "
            "matched error rates).",
        )


def _runs(table: Table, cfg: Config) -> dict[tuple, dict[str, list]]:
    """``setting -> method -> runs`` (in run order) from the table's rows."""
    runs = {key: {m: [] for m in _methods(cfg)} for key in _grid(cfg)}
    for r in table:
        runs[tuple(r[c] for c in SETTING)][r["method"]].append(r)
    return runs


def _bootstrap(runs: dict, grid: list, cfg: Config) -> dict[str, Estimate]:
    """95% percentile-bootstrap intervals of the claim metrics (:data:`CLAIM_METRICS`).

    An instance (a family ``(N, jump, layout, eta)`` and a run index) brings its runs at
    every delta and of every method (the seeds are shared there: common random numbers);
    instances are redrawn within their family and within the block of methods run on them,
    and the claim metrics recomputed on each replicate.
    """
    families = list(dict.fromkeys((k[0], k[1], k[2], k[4]) for k in grid))
    counts = {m: _n_runs(cfg, m) for m in _methods(cfg)}
    rows = []
    for f, _ in enumerate(families):
        for i in range(max(counts.values())):
            block = "+".join(m for m, n in counts.items() if i < n)
            rows.append({"family": f, "block": block, "instance": (f, i), "run": i})
    inst = Table(rows)
    keys_of = {f: [k for k in grid if (k[0], k[1], k[2], k[4]) == fam]
               for f, fam in enumerate(families)}
    cache: dict[tuple, dict[str, float]] = {}

    def stats_of(drawn: Table) -> dict[str, float]:
        drawn_key = tuple((r["family"], r["run"]) for r in drawn)
        if drawn_key not in cache:
            view = {key: {m: [] for m in runs[key]} for key in grid}
            for f, i in drawn_key:
                for key in keys_of[f]:
                    for m, rr in runs[key].items():
                        if i < len(rr):
                            view[key][m].append(rr[i])
            cache[drawn_key] = _claim_metrics(view, grid, cfg)
        return cache[drawn_key]

    def statistic(name: str) -> Callable[[Table], float]:
        return lambda drawn: stats_of(drawn)[name]

    point = stats_of(inst)
    out: dict[str, Estimate] = {}
    for name in CLAIM_METRICS:
        if math.isnan(point[name]):
            out[name] = Estimate.missing(f"{name} is not defined at this grid")
            continue
        out[name] = inst.bootstrap(statistic(name), unit="instance",
                                   strata=("family", "block"),
                                   num_resamples=N_BOOTSTRAP, seed=cfg.seed)
    return out


def _figures(cfg, grid, methods, med_interval, ours_med, ref_med, pos):
    figs = {}
    fig, axes = new_figure(1, width=max(5.0, 0.9 * len(grid)))
    ax = axes[0]
    w = 0.8 / len(methods)
    for i, m in enumerate(methods):
        est = [med_interval(k, m) for k in grid]
        err = np.array([[e.value - e.lo, e.hi - e.value] if np.isfinite([e.lo, e.hi]).all()
                        else [0.0, 0.0] for e in est]).T  # fmt: skip
        ax.bar(np.arange(len(grid)) + i * w, [e.value for e in est], w, label=m, yerr=err,
               capsize=2, error_kw={"lw": 0.8})
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


EXPERIMENT = ChangepointBandit()
run = EXPERIMENT.run
