"""Reproduction: sample savings and error rate of full-matrix Condorcet identification.

Three instance families (small winner gap, Bradley-Terry, cyclic non-winners) at several
``K``; our procedure against the winner-gap, round-robin, DKWT-style and RUCB baselines on
the same instances and the same per-pair random streams (common random numbers). Sweeps
over the winner gap and ``delta`` feed the savings trend, the complexity correlation and
the search/verification split. See ``paper.py`` for the claims and tiers.

Units: one setting (method, instance family, K, winner gap, delta) is a unit of the
experiment layer; its rows are the runs, one per instance. The instances' seeds come from
one generator drawn in grid order (a setting's seeds are drawn when its instances first
appear), so every method sees the same instances.

Uncertainty: the paper claims' metrics (ratios of medians, their trends, Spearman
correlations across settings, the verification-share trend) and their controls carry a
stratified percentile bootstrap over instances (:meth:`neurips26.experiment.Table.bootstrap`):
an instance brings the runs of every method on it, and instances are redrawn within their
setting and within the block of methods that ran on them (the first ``n_runs_rucb``
instances of a setting run every method, the next up to ``n_runs`` every method but RUCB,
the rest ours alone), so each method keeps its number of runs and methods stay paired.
The error rates carry Wilson binomial intervals; the error-rate claim compares the largest
excess over the spec's margin ``delta + 3`` binomial standard errors under ``P(error) =
delta``.

Controls: the savings claim is measured again on Bradley-Terry instances (strong
stochastic transitivity: the winner has the largest gap against every arm, so no other
arm certifies cheaper); the no-loss claim again on small-winner-gap instances (where the
two procedures must differ); the complexity correlation again with ``H_winner`` in place
of ``H_full``; the ``H_full``-over-``H_winner`` margin and the verification-share trend
again for winner-gap elimination's duels (run on the delta sweep for this).

Why the verification-share claim does not reproduce: not yet diagnosed. The run measures
one candidate cause, the doubling round in which runs end (``round_trend``: the smallest
increase, from one delta to the next smaller one, of the median of ``ceil(log2)`` of the
largest per-pair duel count): our sampling rule (an inference, see :mod:`.identify`) runs
in doubling rounds, so a ``delta`` ten times smaller, which adds only ``log 10`` to a
confidence radius ``beta(n)`` of about 20, may end in the same round, where screening grows
with the round as verification does.
"""

from __future__ import annotations

import functools
import itertools
import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from scipy.stats import spearmanr

from neurips26.common.experiment import param
from neurips26.common.plotting import figure_png, new_figure
from neurips26.experiment import (
    Estimate,
    Experiment,
    Table,
    binomial_interval,
    bootstrap_interval,
)

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


def _records(method, kind, K, wg, delta, seeds, cfg):
    """Run ``method`` on the instances seeded ``seeds``; return per-run records."""
    out = []
    for s in seeds:
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
        cx = instance_complexity(Q, delta=delta)
        most = int(np.max(res.duels_per_pair)) if res.num_duels else 0
        out.append(
            {
                "instance_seed": s,
                "correct": bool(res.winner == condorcet_winner(Q)),
                "certified": bool(res.certified),
                "duels": int(res.num_duels),
                "verification_share": float(res.verification_share),
                "H_full": float(cx.H_full),
                "H_winner": float(cx.H_winner),
                "final_round": math.ceil(math.log2(most)) if most > 0 else 0,
            }
        )
    return out


#: The columns of a run's record (what :func:`_sweep_stats` and the figures read).
RECORD = ("correct", "certified", "duels", "verification_share", "H_full", "H_winner",
          "final_round")

#: The columns naming a setting (a unit of the experiment).
SETTING = ("method", "kind", "K", "winner_gap", "delta")

#: Paper-claim and control metrics that carry the stratified bootstrap over instances.
BOOTSTRAPPED: tuple[str, ...] = (
    "savings_ratio_small_gap",
    "savings_ratio_trend",
    "log2_ratio_bradley_terry",
    "spearman_full",
    "spearman_winner",
    "spearman_full_minus_winner",
    "baseline_spearman_full_minus_winner",
    "verification_share_trend",
    "baseline_verification_share_trend",
)

#: Every metric name the run can return (``*`` stands for a family of names, such as
#: one per size or data set); claims name theirs exactly. Checked by the contract test.
METRICS: tuple[str, ...] = (
    "error_rate_excess_max",
    "log2_ratio_bradley_terry",
    "log2_savings_ratio_small_gap",
    "num_settings_correlated",
    "ratio_bradley_terry",
    "savings_ratio_small_gap",
    "savings_ratio_trend",
    "spearman_full",
    "spearman_full_minus_winner",
    "spearman_winner",
    "baseline_spearman_full",
    "baseline_spearman_winner",
    "baseline_spearman_full_minus_winner",
    "verification_share_trend",
    "baseline_verification_share_trend",
    "round_trend",
    "error_rate_*",
    "median_duels_*_*_K*",
    "median_duels_full_matrix_*_K*",
    "ratio_*_*_K*",
    "savings_ratio_wg*",
    "verification_share_delta*",
    "baseline_verification_share_delta*",
    "median_round_delta*",
)
#: Figure captions for the report: what is plotted and the claims it illustrates.
CAPTIONS: dict[str, str] = {
    "duels_by_method": (
        "Median duels to identify the Condorcet winner, per instance family and number of "
        "arms K, for the full-matrix procedure and the baselines; bars: the median's 95% "
        "percentile bootstrap interval over the setting's runs (400 resamples)."
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


def _sweep_keys(cfg: Config) -> list[tuple]:
    """The settings of the grid, in the order the old sequential generator met them."""
    keys: list[tuple] = []
    seen: set[tuple] = set()

    def add(method, kind, K, wg, delta, n):
        key = (method, kind, K, wg, delta)
        if key not in seen:
            seen.add(key)
            keys.append((*key, n))

    for kind in cfg.kinds:
        for K in cfg.num_arms:
            add("full_matrix", kind, K, cfg.winner_gap, cfg.delta, cfg.n_runs_error)
            for b in cfg.baselines:
                add(b, kind, K, cfg.winner_gap, cfg.delta,
                    cfg.n_runs_rucb if b == "rucb" else cfg.n_runs)
    Ks = cfg.sweep_num_arms
    for wg in cfg.winner_gaps:
        for method in ("full_matrix", "winner_gap"):
            add(method, "small_winner_gap", Ks, wg, cfg.delta, cfg.n_runs)
    for d in cfg.deltas:
        add("full_matrix", "small_winner_gap", Ks, cfg.winner_gap, d, cfg.n_runs)
        # the control of the verification-share and complexity claims: winner-gap
        # elimination on the same delta sweep (its instances' seeds are drawn already)
        add("winner_gap", "small_winner_gap", Ks, cfg.winner_gap, d, cfg.n_runs)
    return keys


class CondorcetDueling(Experiment):
    """Full-matrix identification against the baselines; one unit per setting."""

    Config, TIERS, METRICS, CAPTIONS = Config, TIERS, METRICS, CAPTIONS
    UNIT_TABLE = None  # one row per run; the report gets the per-setting table instead

    def setup(self, config, ctx):
        # one sequential generator: a setting's instance seeds are drawn when its
        # (kind, K, winner gap, delta) first appears in the grid
        return {"cfg": config, "rng": np.random.default_rng(config.seed), "seeds": {},
                "n_max": max(config.n_runs_error, config.n_runs, config.n_runs_rucb)}

    def grid(self, config):
        return [dict(zip((*SETTING, "runs"), key, strict=True))
                for key in _sweep_keys(config)]

    def measure(self, unit, state, ctx):
        base = (unit["kind"], unit["K"], unit["winner_gap"], unit["delta"])
        if base not in state["seeds"]:
            state["seeds"][base] = state["rng"].integers(0, 2**31 - 1, size=state["n_max"])
        seeds = state["seeds"][base][: unit["runs"]]
        recs = _records(unit["method"], *base, seeds, state["cfg"])
        return [{"run": i, **r} for i, r in enumerate(recs)]

    def summarize(self, table, config, ctx):
        cfg = config
        settings = _settings(table)
        med = functools.partial(_median, settings)
        out: dict[str, Estimate | float | int] = {}

        # Claim 1: error rate of ours at delta, per kind (pooled over K), vs delta + 3 SE
        # (the spec's margin under P(error) = delta).
        excess = []
        for kind in cfg.kinds:
            runs = [r for K in cfg.num_arms
                    for r in settings[("full_matrix", kind, K, cfg.winner_gap, cfg.delta)]]
            errors = sum(not (r["correct"] and r["certified"]) for r in runs)
            out[f"error_rate_{kind}"] = binomial_interval(errors, len(runs), unit="runs")
            se = math.sqrt(cfg.delta * (1 - cfg.delta) / len(runs))
            excess.append(errors / len(runs) - (cfg.delta + 3 * se))
        out["error_rate_excess_max"] = float(max(excess))

        # Main grid: medians and ratios baseline / ours.
        for kind in cfg.kinds:
            for K in cfg.num_arms:
                ours = med(("full_matrix", kind, K, cfg.winner_gap, cfg.delta))
                out[f"median_duels_full_matrix_{kind}_K{K}"] = ours
                for b in cfg.baselines:
                    mb = med((b, kind, K, cfg.winner_gap, cfg.delta))
                    out[f"median_duels_{b}_{kind}_K{K}"] = mb
                    out[f"ratio_{b}_{kind}_K{K}"] = mb / ours

        point = _sweep_stats(settings, cfg)[0]
        out.update({k: float(v) for k, v in point.items()})
        est = _bootstrap(table, settings, cfg)
        out.update(est)
        # the controls' scales: the Bradley-Terry ratio itself (claim 2's test) and the
        # small-gap savings in log2 (claim 3's test); the ends map monotonically
        if "log2_ratio_bradley_terry" in est:
            out["ratio_bradley_terry"] = _mapped(
                est["log2_ratio_bradley_terry"], point["ratio_bradley_terry"], math.exp2)
        out["log2_savings_ratio_small_gap"] = _mapped(
            est["savings_ratio_small_gap"], math.log2(point["savings_ratio_small_gap"]),
            math.log2)
        return {k: (float(v) if not isinstance(v, (bool, int, Estimate)) else v)
                for k, v in out.items()}

    def tables(self, table, summary, config):
        settings = _settings(table)
        med = functools.partial(_median, settings)
        rows = []
        for key, runs in settings.items():
            method, kind, K, wg, d = key
            rows.append(
                {
                    "method": method,
                    "kind": kind,
                    "K": K,
                    "winner_gap": wg,
                    "delta": d,
                    "runs": len(runs),
                    "median_duels": med(key),
                    "wrong_arm_rate": float(np.mean([not r["correct"] for r in runs])),
                    "uncertified_or_wrong_rate": float(
                        np.mean([not (r["correct"] and r["certified"]) for r in runs])),
                    "median_verification_share": med(key, "verification_share"),
                    "median_H_full": med(key, "H_full"),
                    "median_H_winner": med(key, "H_winner"),
                }
            )
        return {"settings": rows}

    def figures(self, table, summary, config):
        settings = _settings(table)
        _, ratios, shares, ours_keys, duels, hf, hw = _sweep_stats(settings, config)
        return _figures(config, settings, ratios, shares, ours_keys, duels, hf, hw)

    def notes(self, table, summary, config):
        return (
            f"{len(_settings(table))} settings; common random numbers: every method sees the "
            "same instances and per-pair duel streams.",
            "Error = wrong arm or uncertified return (ours); baselines that hit max_duels "
            f"({config.max_duels}) are counted with the duels they used (censored).",
        )


def _mapped(e: Estimate, value: float, fn: Callable[[float], float]) -> Estimate:
    """``e`` under the increasing map ``fn``, with the point value computed directly."""
    lo, hi = fn(e.lo), fn(e.hi)
    return Estimate(value, min(lo, value), max(hi, value), e.method, e.level, e.n)


def _settings(table: Table) -> dict[tuple, list[dict]]:
    """The runs of every setting, ``(method, kind, K, winner gap, delta) -> records``."""
    out: dict[tuple, list[dict]] = {}
    for r in table:
        out.setdefault(tuple(r[c] for c in SETTING), []).append(r)
    return out


def _instances(settings: dict[tuple, list[dict]]) -> tuple[Table, list[tuple], list[dict]]:
    """One row per instance: ``instance`` (the unit), ``setting and block`` (the stratum:
    its setting of instances and the methods that ran on it) and ``key`` (``(base index,
    run index)``, which the bootstrap's relabelling of the unit leaves alone); with the
    bases and their methods' run counts. Three columns: the bootstrap copies every row of
    every draw."""
    counts: dict[tuple, dict[str, int]] = {}
    for key, runs in settings.items():
        counts.setdefault(key[1:], {})[key[0]] = len(runs)
    bases = list(counts)
    rows = []
    for b, base in enumerate(bases):
        for i in range(max(counts[base].values())):
            block = "+".join(m for m, n in counts[base].items() if i < n)
            rows.append({"instance": (b, i), "setting and block": (b, block), "key": (b, i)})
    return Table(rows), bases, [counts[b] for b in bases]


def _bootstrap(table: Table, settings, cfg) -> dict[str, Estimate]:
    """The stratified bootstrap over instances of the metrics in :data:`BOOTSTRAPPED`."""
    inst, bases, counts = _instances(settings)
    cache: dict[tuple, dict[str, float]] = {}

    def stats_of(drawn: Table) -> dict[str, float]:
        key = tuple(r["key"] for r in drawn)
        if key not in cache:
            copy: dict[tuple, list[dict]] = {}
            for b, i in key:
                for method, n in counts[b].items():
                    if i < n:
                        k = (method, *bases[b])
                        copy.setdefault(k, []).append(settings[k][i])
            cache[key] = _sweep_stats(copy, cfg)[0]
        return cache[key]

    def statistic(name: str) -> Callable[[Table], float]:
        return lambda drawn: stats_of(drawn).get(name, math.nan)

    point = stats_of(inst)
    out = {}
    for name in BOOTSTRAPPED:
        if name in point:
            out[name] = inst.bootstrap(statistic(name), unit="instance",
                                       strata="setting and block",
                                       num_resamples=cfg.num_bootstrap, seed=cfg.seed)
    return out


#: Bootstrap resamples of the error bars of the duels-by-method figure.
FIGURE_RESAMPLES = 400


def _median_interval(settings: dict[tuple, list[dict]], key: tuple, seed: int) -> Estimate:
    """The median duels of setting ``key`` with its 95% percentile bootstrap over the
    setting's runs (NaN and no interval for a setting not run)."""
    runs = settings.get(key)
    if not runs:
        return Estimate.missing("setting not run")
    duels = np.array([r["duels"] for r in runs], dtype=float)
    return bootstrap_interval(duels, np.median, num_resamples=FIGURE_RESAMPLES, seed=seed,
                              unit="runs")


def _median(settings: dict[tuple, list[dict]], key: tuple, field: str = "duels") -> float:
    """Median of ``field`` over the runs of setting ``key`` (NaN for a setting not run)."""
    runs = settings.get(key)
    if not runs:
        return math.nan
    # np.median's value (the mean of the two middle values for an even count), without
    # its overhead: the bootstrap takes thousands of medians of a few runs each
    v = sorted(r[field] for r in runs)
    if any(x != x for x in v):  # NaN, as np.median gives
        return math.nan
    m = len(v) // 2
    return float(v[m]) if len(v) % 2 else (float(v[m - 1]) + float(v[m])) / 2.0


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
    # Control of claim 4's margin: the same correlations for winner-gap elimination's duels
    # (it pays the winner's gaps: H_full must not explain it better than H_winner).
    base_keys = [k for k in settings if k[0] == "winner_gap"]
    if len(base_keys) > 1:
        b_duels = [med(k) for k in base_keys]
        b_f = float(spearmanr(b_duels, [med(k, "H_full") for k in base_keys]).statistic)
        b_w = float(spearmanr(b_duels, [med(k, "H_winner") for k in base_keys]).statistic)
        metrics["baseline_spearman_full"] = b_f
        metrics["baseline_spearman_winner"] = b_w
        metrics["baseline_spearman_full_minus_winner"] = b_f - b_w

    # Claim 5: verification share grows as delta shrinks.
    shares = {}
    for d in sorted(cfg.deltas, reverse=True):
        shares[d] = med(
            ("full_matrix", "small_winner_gap", Ks, cfg.winner_gap, d), "verification_share"
        )
        metrics[f"verification_share_delta{d:g}"] = shares[d]
    ds = sorted(shares, reverse=True)  # decreasing delta
    metrics["verification_share_trend"] = _trend(shares)
    # Its control: the same trend for winner-gap elimination on the same instances; and
    # the diagnostic: the doubling round in which our runs end, against delta.
    b_shares, rounds = {}, {}
    for d in ds:
        key = ("small_winner_gap", Ks, cfg.winner_gap, d)
        if ("winner_gap", *key) in settings:
            b_shares[d] = med(("winner_gap", *key), "verification_share")
            metrics[f"baseline_verification_share_delta{d:g}"] = b_shares[d]
        rounds[d] = med(("full_matrix", *key), "final_round")
        metrics[f"median_round_delta{d:g}"] = rounds[d]
    if len(b_shares) == len(ds):
        metrics["baseline_verification_share_trend"] = _trend(b_shares)
    metrics["round_trend"] = _trend(rounds)

    return metrics, ratios, shares, ours_keys, duels, hf, hw


def _trend(by_delta: dict[float, float]) -> float:
    """The smallest change from one delta to the next smaller one (NaN with one delta)."""
    ds = sorted(by_delta, reverse=True)
    if len(ds) < 2:
        return math.nan
    return float(min(by_delta[b] - by_delta[a] for a, b in itertools.pairwise(ds)))


def _figures(cfg, settings, ratios, shares, ours_keys, duels, hf, hw):
    figs = {}
    methods = ["full_matrix", *cfg.baselines]
    fig, axes = new_figure(len(cfg.kinds), width=4.2)
    K = max(cfg.num_arms)
    for ax, kind in zip(axes, cfg.kinds, strict=True):
        est = [_median_interval(settings, (m, kind, K, cfg.winner_gap, cfg.delta), cfg.seed)
               for m in methods]  # fmt: skip
        err = np.array([[e.value - e.lo, e.hi - e.value] if np.isfinite([e.lo, e.hi]).all()
                        else [0.0, 0.0] for e in est]).T  # fmt: skip
        ax.bar(range(len(methods)), [e.value for e in est], yerr=err, capsize=3,
               color=["C3"] + ["C0"] * len(cfg.baselines), error_kw={"lw": 0.8})
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


EXPERIMENT = CondorcetDueling()
run = EXPERIMENT.run
