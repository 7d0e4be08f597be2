"""Reproduction of ADIS-Law with tiny byte-level GPTs on two real text domains.

General domain: the standard library's Python sources; target domain: the English
prose of ``pydoc_data.topics`` (both ship with Python). For each model width, one base
run goes through the stable phase of the longest budget and is checkpointed; every
injection policy branches from the base run at its injection start
(:mod:`.training`). The law is fitted jointly to the general and target validation
losses of the base run and the policy grid at budget ``S`` (for several widths: of all
widths but the largest), then predicts held-out policies at ``2S`` and ``4S`` (and, for
several widths, at the largest width), never seen in the fit.

Measured: the Spearman correlation across held-out policies of predicted vs observed
target loss (averaged over logged steps at which every held-out policy is injecting),
the within-trajectory Spearman, the tail (final) relative errors, the ranking of the
held-out policies by the utility of Eq. (4) at the largest budget, three baselines, the
two qualitative behaviours, a parameter-recovery check on law-generated trajectories
with the same schedules, and the time of the grid vs the fit plus ranking 1,000
candidates.

Controls: each paper claim is measured again where the law's contribution must be absent.
The trajectory Spearmans with the decoupled law's forecasts in place of the law's; the
tail error with the law's own forecast of the base run (no injection) for every policy;
the ranking with the nearest-configuration baseline (the same policy's grid result at
``S``); the best-policy claim (one Bernoulli trial) with the chance rate of a random pick
among the held-out policies (1/3 for six); the rise-then-fall fraction with each
deviation's time order shuffled (``SHUFFLES`` random orders per run); the log-log
adaptation R^2 with the step count in place of the LR-weighted effective exposure. The
baseline-ratio claim is itself a comparison with the baselines, and R^2 is itself measured
against the content-free predictor (the mean).

What does not reproduce
-----------------------
- The general-domain deviation from the base run does not follow the inferred linear
  forgetting-recovery term: the deviation's R^2 is negative, and the general-loss tail
  error dominates the tail-error claim (``deviation_r2``, ``tail_rel_error_target`` and
  ``tail_rel_error_general``, the tail claim's diagnostics). The other reading, a
  forgetting term that saturates in the exposure (claim ``forgetting_law_fit_saturating``,
  fitted to the same runs), fits the deviation far better than the linear term but still
  short of the claim's R^2. Its diagnostic is the noise ceiling ``deviation_r2_ceiling``:
  every grid policy is trained again from the same checkpoint with other batches (and the
  base anneal from each injection start likewise, ``Config.num_replicates``), and the
  disagreement of the two deviations bounds the R^2 that any law of the policy can reach
  against one seed's deviations. A ceiling below the claim's 0.8 would put the shortfall
  on batch noise at this tier; one well above both fits, on the law's form. In the stored
  small run the ceiling is well above 0.8 and above both fits' R^2: one seed's batch noise
  is not what keeps them below the claim, the forgetting term's form in both of our
  readings is.
- The general-loss deviation rises then falls in fewer injected runs than the claim's
  share, and its time-shuffled placebo does about as often. Two causes are tested on the
  same runs. (a) Too few logged points: at the small tier an injection covers a share
  ``lambda`` of only ``anneal_steps`` steps, logged every ``eval_every``, so the shortest
  injections give a few points and evaluation noise alone can make or break the shape.
  ``rise_fall_fraction_longest`` is the fraction on the runs with the largest ``lambda``
  (the most points), beside ``rise_fall_fraction_shuffled_longest``, its placebo: a
  fraction well above both the claim's and its placebo there would point at the short
  windows (the paper tier anneals four times longer); one no higher would not. (b) No room
  to recover: the recovery comes from general data during the injection, least of it at
  large mix ratios; ``rise_fall_fraction_low_mix`` and
  ``rise_fall_fraction_shuffled_low_mix`` are the same on the runs with the smallest
  ``r``. A fraction there well above the placebo's would support it. Both bootstraps are
  over the runs of the subset.
- Extrapolating the budget needs the pre-training part of both laws (``A S1^-alpha`` and
  ``kappa G``), which the fit sees only through the base run's stable phase up to ``S``;
  the fitted parameters are in the report's table. Whether the asymptotes' identification
  is what makes the forecasts at ``2S`` and ``4S`` miss is not yet diagnosed by a run.
- The ranking Spearman's bootstrap interval over six held-out policies per budget spans
  everything from -1 to 1: six policies bound how narrow it can be. Quadrupling the
  held-out windows of every evaluation (``eval_windows``, 64 at the small tier against 16
  in earlier stored runs) moved the Spearman itself, so evaluation noise does move the
  ranking, but it cannot narrow the interval; whether the law ranks policies well is
  therefore not decided at this tier (more held-out policies per budget would).

Deviations from the paper
-------------------------
- Tiny GPTs (2 layers, widths 16-96, byte tokens, context 64) on Python's own text stand
  in for LLM continual pre-training; the domains are code (general) and English prose
  about Python (target).
- A held-out policy uses the training grid's values at a new budget (a Latin-square
  subset): extrapolation in data budget, not interpolation in the policy space.
- Intervals are percentile bootstraps over the held-out policies, resampled within each
  width and budget (``Table.bootstrap``; one training seed per run; a seed sweep is
  ``--seed`` at the command line), the worst held-out RMSE ratio against the baselines
  included (each baseline fitted once on the grid, its held-out forecasts resampled with
  the law's); the two behaviours and the adaptation R^2 are bootstrapped over the
  injected runs of the fitted grid.
- Model-scale extrapolation runs only in the paper tier (several widths); the small tier
  extrapolates in data budget only.
"""

from __future__ import annotations

import dataclasses
import math
import time
from dataclasses import dataclass
from typing import ClassVar

import numpy as np
from scipy import stats

from neurips26.common.cache import cache_key, cached_arrays
from neurips26.common.experiment import param
from neurips26.common.plotting import figure_png, new_figure
from neurips26.experiment import Estimate, Experiment, binomial_interval

from .baselines import AdditiveRegression, DecoupledLaw, NearestConfiguration
from .law import ADISFit, Trajectory, fit_adis_law, rank_policies, simulate_trajectory
from .schedule import InjectionPolicy, schedule_features
from .training import TrainSpec, base_runs, continue_base, load_corpora, run_injection


@dataclass(frozen=True)
class Config:
    """Settings of the reproduction (see ``neurips26 info adis_law``)."""

    seed: int = 0
    widths: tuple[int, ...] = param((48,), help="model widths; >1: model-scale extrapolation "
                                     "to the last", min=8)
    num_layers: int = param(2, help="transformer layers", min=1)
    num_heads: int = param(4, help="attention heads (divide every width)", min=1)
    block_size: int = param(64, help="context length in bytes", min=8)
    batch_size: int = param(16, help="sequences per step", min=2)
    peak_lr: float = param(3e-3, help="eta_0, the WSD peak learning rate", min=1e-6, max=1.0)
    anneal_steps: int = param(100, help="annealing steps at budget S (S = 5 x this)", min=5)
    budget_multipliers: tuple[int, ...] = param((2, 4), help="held-out budgets in units of S",
                                                min=2)
    fractions: tuple[float, ...] = param((0.25, 0.5, 1.0), help="grid of lambda", min=0.01,
                                         max=1.0)
    mix_ratios: tuple[float, ...] = param((0.1, 0.3, 0.6), help="grid of r", min=0.01, max=1.0)
    lr_ratios: tuple[float, ...] = param((0.3, 0.6, 1.0), help="grid of eta / eta_0",
                                         min=0.01, max=2.0)
    num_heldout: int = param(6, help="held-out policies per extrapolated budget", min=3)
    eval_every: int = param(10, help="steps between logged validation losses", min=1)
    eval_windows: int = param(64, help="held-out windows per domain per evaluation (forward "
                              "only: more windows, less evaluation noise)", min=1)
    general_chars: int = param(1_000_000, help="characters of stdlib source read", min=20_000)
    num_replicates: int = param(1000, help="grid policies (the first, all when more than the "
                                "grid) rerun with other batches, the base anneal from their "
                                "injection starts too: the deviation R^2's noise ceiling",
                                min=0)
    fit_from_frac: float = param(0.2, help="base-run logs before this share of S are not "
                                 "fitted", min=0.0, max=0.8)
    restarts: int = param(20, help="random restarts of the law fit", min=1)
    mu: float = param(1.0, help="weight of a general-loss regression in the utility", min=0.0)
    num_candidates: int = param(1000, help="random candidate policies ranked by the law", min=1)
    bootstrap: int = param(400, help="bootstrap resamples of held-out policies", min=10)
    recovery_noise: float = param(0.005, help="relative noise of the recovery check", min=0.0,
                                  max=0.1)


TIERS = {
    "smoke": Config(widths=(16,), block_size=32, batch_size=8, anneal_steps=20,
                    budget_multipliers=(2,), fractions=(0.5, 1.0), mix_ratios=(0.2, 0.6),
                    lr_ratios=(0.5, 1.0), num_heldout=4, eval_every=5, eval_windows=8,
                    num_replicates=2,
                    general_chars=200_000, restarts=4, num_candidates=50, bootstrap=50),
    "small": Config(),
    "paper": Config(widths=(32, 48, 64, 96), anneal_steps=400, eval_windows=64,
                    general_chars=4_000_000, bootstrap=1000),
}

METRICS: tuple[str, ...] = (
    "num_fit_runs", "num_heldout_runs", "fit_rmse", "fit_converged",
    "traj_spearman_across", "traj_spearman_within", "tail_rel_error", "tail_rel_error_target",
    "tail_rel_error_general", "rank_spearman", "rank_best_in_top2", "rank_regret",
    "traj_spearman_across_decoupled", "traj_spearman_within_decoupled",
    "tail_rel_error_nopolicy", "rank_best_in_top2_chance",
    "heldout_rmse_target", "rmse_decoupled", "rmse_additive", "rmse_nearest",
    "rmse_ratio_worst", "rank_spearman_decoupled", "rank_spearman_additive",
    "rank_spearman_nearest", "rise_fall_fraction", "rise_fall_fraction_shuffled",
    "rise_fall_fraction_longest", "rise_fall_fraction_shuffled_longest",
    "rise_fall_fraction_low_mix", "rise_fall_fraction_shuffled_low_mix",
    "deviation_r2", "deviation_r2_saturating", "fit_rmse_general",
    "fit_rmse_general_saturating", "deviation_r2_ceiling", "adaptation_loglog_r2",
    "adaptation_loglog_r2_steps",
    "recovery_max_param_rel_error", "recovery_forecast_rel_error", "recovery_rank_spearman",
    "train_steps", "grid_seconds",
    "law_seconds", "law_vs_grid_time_ratio",
)
_VOLATILE = ("grid_seconds", "law_seconds", "law_vs_grid_time_ratio")
#: Offset of the batch seed of the replicate grid runs (``Config.num_replicates``).
REPLICATE_SEED = 7919


# --------------------------------------------------------------------------- runs


def _spec(cfg: Config, device: str = "cpu") -> TrainSpec:
    return TrainSpec(batch_size=cfg.batch_size, block_size=cfg.block_size, peak_lr=cfg.peak_lr,
                     eval_every=cfg.eval_every, eval_windows=cfg.eval_windows, seed=cfg.seed,
                     device=device)


def grid_policies(cfg: Config) -> list[InjectionPolicy]:
    """The full grid of training policies (``lambda x r x eta``)."""
    return [InjectionPolicy(f, r, e * cfg.peak_lr) for f in cfg.fractions for r in cfg.mix_ratios
            for e in cfg.lr_ratios]


def heldout_policies(cfg: Config) -> list[InjectionPolicy]:
    """A Latin-square subset of the grid: cells ``(i, j, (i + j) mod n)``, drawn by seed."""
    n = min(len(cfg.fractions), len(cfg.mix_ratios), len(cfg.lr_ratios))
    cells = [(i, j, (i + j) % n) for i in range(n) for j in range(n)]
    rng = np.random.default_rng(cfg.seed)
    pick = sorted(rng.permutation(len(cells))[: cfg.num_heldout])
    return [InjectionPolicy(cfg.fractions[i], cfg.mix_ratios[j], cfg.lr_ratios[k] * cfg.peak_lr)
            for i, j, k in (cells[p] for p in pick)]


@dataclass(frozen=True)
class Group:
    """The held-out runs of one (width, budget) and that budget's base run."""

    width: int
    budget: int
    base: Trajectory
    runs: tuple[Trajectory, ...]


@dataclass(frozen=True)
class Study:
    fit_runs: tuple[Trajectory, ...]
    groups: tuple[Group, ...]
    base_fit: Trajectory
    train_steps: int
    grid_seconds: float
    #: fit run name -> (steps, general-loss deviation of its replicate from the replicate
    #: base anneal), for the grid runs that were replicated (``Config.num_replicates``)
    replicates: dict = dataclasses.field(default_factory=dict)


def _train_width(cfg: Config, width: int, corpora, fit_width: bool,
                 device: str = "cpu") -> dict[str, np.ndarray]:
    from neurips26.common.models import GPTConfig

    spec = _spec(cfg, device)
    s = round(cfg.anneal_steps / spec.anneal_frac)
    budgets = [s] + [m * s for m in cfg.budget_multipliers]
    model_cfg = GPTConfig(vocab_size=256, block_size=cfg.block_size, num_layers=cfg.num_layers,
                          num_heads=cfg.num_heads, dim=width)
    base = base_runs(model_cfg, corpora, spec, budgets=budgets, fractions=cfg.fractions)
    out: dict[str, np.ndarray] = {"num_params": np.array(base.num_params)}

    def put(key, t):
        out[f"{key}/steps"], out[f"{key}/lg"], out[f"{key}/lt"] = (
            t.steps, t.loss_general, t.loss_target)

    # optimiser steps actually run: the shared stable phase, each base anneal, each branch
    steps = spec.schedule(max(budgets)).anneal_start
    steps += sum(b - spec.schedule(b).anneal_start for b in budgets)
    for b in budgets:
        put(f"base/{b}", base.trajectories[b])
    tic = time.perf_counter()
    if fit_width:
        for k, p in enumerate(grid_policies(cfg)):
            t = run_injection(model_cfg, corpora, p, total_steps=s, base=base, spec=spec)
            put(f"grid/{k}", t)
            steps += s - spec.schedule(s, p).injection_start
    out["grid_seconds"] = np.array(time.perf_counter() - tic)
    replicated = grid_policies(cfg)[:cfg.num_replicates] if fit_width else []
    if replicated:
        # The same grid under other batches (the base anneal too, from each injection start):
        # the replicate deviations bound what any law of the policy can explain.
        rep = dataclasses.replace(spec, seed=spec.seed + REPLICATE_SEED)
        for start in sorted({spec.schedule(s, p).injection_start for p in replicated}):
            put(f"rep_base/{start}", continue_base(model_cfg, corpora, total_steps=s,
                                                   start=start, base=base, spec=rep))
            steps += s - start
        for k, p in enumerate(replicated):
            put(f"rep/{k}", run_injection(model_cfg, corpora, p, total_steps=s, base=base,
                                          spec=rep))
            steps += s - spec.schedule(s, p).injection_start
    held_budgets = budgets[1:] if fit_width else [s]
    for b in held_budgets:
        for k, p in enumerate(heldout_policies(cfg)):
            t = run_injection(model_cfg, corpora, p, total_steps=b, base=base, spec=spec)
            put(f"held/{b}/{k}", t)
            steps += b - spec.schedule(b, p).injection_start
    out["train_steps"] = np.array(int(steps))
    return out


def _fit_widths(cfg: Config) -> tuple[int, ...]:
    return cfg.widths if len(cfg.widths) == 1 else cfg.widths[:-1]


def width_runs(cfg: Config, w: int, device: str = "cpu", corpora=None):
    """Train (or load from the cache) every run of one width: its arrays, whether they came
    from the cache, and the corpora (loaded only when something is trained)."""
    fit_width = w in _fit_widths(cfg)
    key_cfg = {k: v for k, v in dataclasses.asdict(cfg).items()
               if k not in ("restarts", "mu", "num_candidates", "bootstrap",
                            "recovery_noise", "fit_from_frac")}
    key = cache_key("adis_law-runs", {**key_cfg, "width": w, "fit": fit_width,
                                      "code": _training_code()}, cfg.seed,
                    modules=("neurips26.common.train",))
    box = {"corpora": corpora}

    def compute():
        if box["corpora"] is None:
            box["corpora"] = load_corpora(general_chars=cfg.general_chars)
        return _train_width(cfg, w, box["corpora"], fit_width, device)

    arrays, hit = cached_arrays("adis_law", key, compute)
    return arrays, hit, box["corpora"]


def study_of(cfg: Config, arrays_by_width: dict) -> Study:
    """The :class:`Study` (fit runs and held-out groups) from every width's arrays."""
    spec = _spec(cfg)
    s = round(cfg.anneal_steps / spec.anneal_frac)
    fit_widths = _fit_widths(cfg)
    fit_runs, groups, replicates = [], [], {}
    grid_seconds, train_steps, base_fit = 0.0, 0, None
    for w in cfg.widths:
        fit_width = w in fit_widths
        arrays = arrays_by_width[w]
        n_params = float(arrays["num_params"])

        def traj(k, budget, policy, name, arrays=arrays, n_params=n_params):
            sch = spec.schedule(budget, policy)
            return Trajectory.from_schedule(sch, arrays[f"{k}/steps"], arrays[f"{k}/lg"],
                                            arrays[f"{k}/lt"], name=name, num_params=n_params)

        train_steps += int(arrays["train_steps"])
        if fit_width:
            grid_seconds += float(arrays["grid_seconds"])
            base = traj(f"base/{s}", s, None, f"w={w} base S={s}")
            keep = base.steps >= cfg.fit_from_frac * s
            base = dataclasses.replace(base, steps=base.steps[keep],
                                       loss_general=base.loss_general[keep],
                                       loss_target=base.loss_target[keep])
            base_fit = base_fit or base
            fit_runs.append(base)
            for k, p in enumerate(grid_policies(cfg)):
                fit_runs.append(traj(f"grid/{k}", s, p, f"w={w} S={s} {_label(p, cfg)}"))
                start = spec.schedule(s, p).injection_start
                if f"rep/{k}/steps" in arrays and f"rep_base/{start}/steps" in arrays:
                    replicates[fit_runs[-1].name] = _replicate_deviation(
                        arrays, f"rep/{k}", f"rep_base/{start}")
            held_budgets = [m * s for m in cfg.budget_multipliers]
        else:
            held_budgets = [s]
        for b in held_budgets:
            runs = tuple(traj(f"held/{b}/{k}", b, p, f"w={w} S={b} {_label(p, cfg)}")
                         for k, p in enumerate(heldout_policies(cfg)))
            groups.append(Group(w, b, traj(f"base/{b}", b, None, f"w={w} base S={b}"), runs))
    if len(cfg.widths) == 1:
        fit_runs = [dataclasses.replace(t, num_params=None) for t in fit_runs]
        groups = [Group(g.width, g.budget, dataclasses.replace(g.base, num_params=None),
                        tuple(dataclasses.replace(t, num_params=None) for t in g.runs))
                  for g in groups]
        base_fit = dataclasses.replace(base_fit, num_params=None)
    return Study(tuple(fit_runs), tuple(groups), base_fit, train_steps, grid_seconds,
                 replicates)


def _replicate_deviation(arrays, run: str, base: str) -> tuple[np.ndarray, np.ndarray]:
    """``(steps, deviation)`` of a replicate run from the replicate base, at their common
    logged steps."""
    at = dict(zip(arrays[f"{base}/steps"].tolist(), arrays[f"{base}/lg"].tolist(),
                  strict=True))  # fmt: skip
    steps = arrays[f"{run}/steps"]
    keep = np.array([x in at for x in steps.tolist()], dtype=bool)
    dev = arrays[f"{run}/lg"][keep] - np.array([at[x] for x in steps[keep].tolist()])
    return steps[keep], dev


def _training_code() -> str:
    """Hash of the sources that decide a trained run (not the analysis in this file)."""
    import hashlib
    from pathlib import Path

    here = Path(__file__).parent
    h = hashlib.sha256()
    for name in ("training.py", "schedule.py"):
        h.update((here / name).read_bytes())
    return h.hexdigest()[:16]


def _label(p: InjectionPolicy, cfg: Config) -> str:
    return f"lam={p.fraction:g} r={p.mix_ratio:g} eta={p.peak_lr / cfg.peak_lr:g}eta0"


# --------------------------------------------------------------------------- measures


def _predict(fit: ADISFit, t: Trajectory):
    from .law import adis_predict

    f = schedule_features(t.lrs, mix=t.mix, zeta=fit.zeta)
    p = adis_predict(fit.params, f, num_params=t.num_params)
    return p.loss_general[t.steps], p.loss_target[t.steps]


@dataclass(frozen=True)
class Row:
    """One held-out run: observed and predicted logs and final losses."""

    group: int
    name: str
    policy: InjectionPolicy
    steps: np.ndarray
    obs_t: np.ndarray
    pred_t: np.ndarray
    obs_g: np.ndarray
    pred_g: np.ndarray
    base_obs_g: float
    base_pred_g: float
    base_pred_t: float = math.nan


def heldout_rows(fit: ADISFit, study: Study) -> list[Row]:
    """Every held-out run with the law's forecasts (and the law's base-run forecast)."""
    rows = []
    for gi, g in enumerate(study.groups):
        bg, bt = _predict(fit, g.base)
        for t in g.runs:
            pg, pt = _predict(fit, t)
            rows.append(Row(gi, t.name, t.policy, t.steps, t.loss_target, pt, t.loss_general,
                            pg, float(g.base.loss_general[-1]), float(bg[-1]), float(bt[-1])))
    return rows


_ARRAYS = ("steps", "obs_t", "pred_t", "obs_g", "pred_g")


def _row_dict(r: Row, run: int) -> dict:
    return {"kind": "heldout", "run": run, "group": r.group, "name": r.name,
            **{k: tuple(np.asarray(getattr(r, k)).tolist()) for k in _ARRAYS},
            "base_obs_g": r.base_obs_g, "base_pred_g": r.base_pred_g,
            "base_pred_t": r.base_pred_t}  # fmt: skip


def _rows_of(table, pred_t: str = "pred_t") -> list[Row]:
    """The held-out :class:`Row` s of a table (``pred_t`` names the target forecast column:
    the law's, or a baseline's)."""
    return [Row(r["group"], r["name"], None, np.asarray(r["steps"]), np.asarray(r["obs_t"]),
                np.asarray(r[pred_t]), np.asarray(r["obs_g"]), np.asarray(r["pred_g"]),
                r["base_obs_g"], r["base_pred_g"], r["base_pred_t"])
            for r in table]


def _spearman(a, b) -> float:
    if np.ptp(a) == 0 or np.ptp(b) == 0:
        return float("nan")
    return float(stats.spearmanr(a, b).statistic)


def _across(rows: list[Row]) -> float:
    """Mean over groups of the mean over shared logged steps of the cross-policy Spearman."""
    vals = []
    for gi in sorted({r.group for r in rows}):
        grp = [r for r in rows if r.group == gi]
        common = set(grp[0].steps.tolist())
        for r in grp[1:]:
            common &= set(r.steps.tolist())
        per_step = []
        for s in sorted(common):
            obs = [r.obs_t[np.searchsorted(r.steps, s)] for r in grp]
            pred = [r.pred_t[np.searchsorted(r.steps, s)] for r in grp]
            rho = _spearman(obs, pred)
            if np.isfinite(rho):
                per_step.append(rho)
        if per_step:
            vals.append(np.mean(per_step))
    return float(np.mean(vals)) if vals else float("nan")


def _within(rows: list[Row]) -> float:
    vals = [_spearman(r.obs_t, r.pred_t) for r in rows if r.steps.size >= 3]
    vals = [v for v in vals if np.isfinite(v)]
    return float(np.mean(vals)) if vals else float("nan")


def _tail(rows: list[Row]) -> tuple[float, float, float]:
    et = np.array([abs(r.pred_t[-1] - r.obs_t[-1]) / r.obs_t[-1] for r in rows])
    eg = np.array([abs(r.pred_g[-1] - r.obs_g[-1]) / r.obs_g[-1] for r in rows])
    return float(np.mean(np.r_[et, eg])), float(et.mean()), float(eg.mean())


def _utility(lt, lg, lg_base, mu):
    return lt + mu * np.maximum(0.0, lg - lg_base)


def _ranking(rows: list[Row], mu: float) -> tuple[float, bool, float]:
    """At the last group (largest budget / width): Spearman, best-in-top-2, regret."""
    last = max(r.group for r in rows)
    grp = [r for r in rows if r.group == last]
    u_obs = np.array([_utility(r.obs_t[-1], r.obs_g[-1], r.base_obs_g, mu) for r in grp])
    u_pred = np.array([_utility(r.pred_t[-1], r.pred_g[-1], r.base_pred_g, mu) for r in grp])
    best = int(np.argmin(u_pred))
    top2 = set(np.argsort(u_obs, kind="stable")[:2].tolist())
    return _spearman(u_obs, u_pred), best in top2, float(u_obs[best] - u_obs.min())


#: The uncoupled approaches of claim beats_baselines, in the order they are fitted.
BASELINES = ("additive", "nearest", "decoupled")


def _rmse(pred, obs) -> float:
    """Root-mean-square error of ``pred`` against ``obs`` (1-D, one entry per run)."""
    return float(np.sqrt(np.mean((np.asarray(pred) - np.asarray(obs)) ** 2)))


def _rmse_ratio_worst(rows) -> float:
    """The law's held-out RMSE of the final target loss over each baseline's, the largest
    (claim beats_baselines). ``rows``: held-out row dicts carrying the observed and the
    law's target curves (``obs_t``, ``pred_t``) and each baseline's final forecast
    (``final_pred_<baseline>``), so a resample of held-out runs recomputes every RMSE."""
    obs = [r["obs_t"][-1] for r in rows]
    law = _rmse([r["pred_t"][-1] for r in rows], obs)
    ratios = []
    for name in BASELINES:
        rmse = _rmse([r[f"final_pred_{name}"] for r in rows], obs)
        ratios.append(law / rmse if rmse > 0 else float("inf"))
    return float(max(ratios))


def _baselines(study: Study, rows: list[Row], cfg: Config, mu: float,
               dec: DecoupledLaw) -> tuple[dict[str, float], dict[str, np.ndarray]]:
    """The law's and the baselines' held-out RMSEs and the baselines' ranking Spearmans,
    and each baseline's final (target, general) forecast per held-out row, (rows, 2)
    (the worst RMSE ratio is :func:`_rmse_ratio_worst` on the held-out rows)."""
    grid = [t for t in study.fit_runs if t.policy is not None]
    pols = [t.policy for t in grid]
    finals = np.array([[t.loss_target[-1], t.loss_general[-1]] for t in grid])
    held = [r.policy for r in rows]
    obs = np.array([r.obs_t[-1] for r in rows])
    preds = {}
    preds["additive"] = AdditiveRegression(lr_ref=cfg.peak_lr).fit(pols, finals).predict(held)
    preds["nearest"] = NearestConfiguration().fit(pols, finals).predict(held)
    by_name = {t.name: t for g in study.groups for t in g.runs}
    dec_rows = []
    for r in rows:
        p = dec.predict(by_name[r.name])
        dec_rows.append([p.loss_target[-1], p.loss_general[-1]])
    preds["decoupled"] = np.array(dec_rows)
    out = {}
    out["heldout_rmse_target"] = _rmse([r.pred_t[-1] for r in rows], obs)
    last = max(r.group for r in rows)
    idx = [i for i, r in enumerate(rows) if r.group == last]
    u_obs = np.array([_utility(rows[i].obs_t[-1], rows[i].obs_g[-1], rows[i].base_obs_g, mu)
                      for i in idx])
    for name, p in preds.items():
        out[f"rmse_{name}"] = _rmse(p[:, 0], obs)
        # the baselines' general "base" is their own prediction for a no-injection run
        base_g = np.array([rows[i].base_obs_g for i in idx]) if name != "decoupled" else \
            p[idx, 1]
        u_pred = _utility(p[idx, 0], p[idx, 1], base_g, mu)
        out[f"rank_spearman_{name}"] = _spearman(u_obs, u_pred)
    return out, preds


def _deviation(fit: ADISFit, t: Trajectory, keep: np.ndarray, base: Trajectory) -> np.ndarray:
    """The law's general-loss deviation of run ``t`` from its forecast of the base run, at
    the base run's logged steps (``keep``: which of ``t``'s steps those are)."""
    bpred, _ = _predict(fit, base)
    bpred_at = dict(zip(base.steps.tolist(), bpred, strict=True))
    pg, _ = _predict(fit, t)
    return pg[keep] - np.array([bpred_at[s] for s in t.steps[keep].tolist()])


def _behaviour_rows(fit: ADISFit, study: Study, seed: int,
                    fit_saturating: ADISFit | None = None) -> list[dict]:
    """One row per injected fit run (at least 3 logged points): the rise-then-fall flag of
    its general deviation from the base run (and the mean flag of the same deviation with
    its time order shuffled, the placebo), the observed and predicted deviations, and the
    log-log R^2 of its target adaptation against the effective exposure (and, the control,
    against the step). With ``fit_saturating``, the saturating reading's predicted deviation
    too."""
    base = study.base_fit
    base_at = dict(zip(base.steps.tolist(), base.loss_general, strict=True))
    rng = np.random.default_rng(seed + 2)
    p = fit.params
    rows = []
    for t in study.fit_runs:
        if t.policy is None or t.steps.size < 3:
            continue
        keep = np.array([s in base_at for s in t.steps.tolist()])
        steps = t.steps[keep]
        d = t.loss_general[keep] - np.array([base_at[s] for s in steps.tolist()])
        dp = _deviation(fit, t, keep, base)
        dp_sat = (_deviation(fit_saturating, t, keep, base) if fit_saturating is not None
                  else np.full(dp.shape, np.nan))
        rep = study.replicates.get(t.name)
        rep_at = ({} if rep is None
                  else dict(zip(rep[0].tolist(), rep[1].tolist(), strict=True)))
        d_rep = np.array([rep_at.get(x, math.nan) for x in steps.tolist()])
        flag, shuffled = math.nan, math.nan
        if d.size >= 3:
            flag = _rise_fall(d)
            shuffled = float(np.mean([_rise_fall(rng.permutation(d))
                                      for _ in range(SHUFFLES)]))  # fmt: skip
        f = schedule_features(t.lrs, mix=t.mix, zeta=fit.zeta)
        ref = p.lr_ref
        u = (f.e_domain + p.target["kappa"] * f.general_exposure)[t.steps] / ref
        y = t.loss_target + p.target["C_T"] * f.s2[t.steps] / ref - p.target["E_T"]
        ok = bool((y > 0).all())
        r2 = stats.linregress(np.log(u), np.log(y)).rvalue ** 2 if ok else math.nan
        r2_steps = (stats.linregress(np.log(t.steps), np.log(y)).rvalue ** 2
                    if ok and (t.steps > 0).all() else math.nan)
        rows.append({"kind": "fit_run", "run": len(rows), "fraction": t.policy.fraction,
                     "mix_ratio": t.policy.mix_ratio, "rise_fall": flag,
                     "rise_fall_shuffled": shuffled, "dev_obs": tuple(d.tolist()),
                     "dev_pred": tuple(dp.tolist()), "dev_pred_sat": tuple(dp_sat.tolist()),
                     "dev_rep": tuple(d_rep.tolist()),
                     "r2": r2, "r2_steps": r2_steps})
    return rows


#: Random time orders per run of the rise-then-fall placebo.
SHUFFLES = 20


def _rise_fall(d: np.ndarray) -> float:
    """1 when the deviation peaks strictly inside and ends 10% of its range below the peak."""
    k = int(np.argmax(d))
    return float(0 < k < d.size - 1 and d[-1] < d[k] - 0.1 * np.ptp(d))


def _rise_fall_fraction(t) -> float:
    v = t.column("rise_fall")
    v = v[np.isfinite(v)]
    return float(np.mean(v)) if v.size else math.nan


def _deviation_r2(t, column: str = "dev_pred") -> float:
    do = np.concatenate([np.asarray(r["dev_obs"]) for r in t])
    dp = np.concatenate([np.asarray(r[column]) for r in t])
    ss = np.sum((do - do.mean()) ** 2)
    return float(1.0 - np.sum((do - dp) ** 2) / ss) if ss > 0 else math.nan


def _deviation_r2_ceiling(t) -> float:
    """The R^2 that the noise between replicates leaves to any law of the policy.

    With a replicate ``d'`` of each observed deviation ``d`` (the same policy and base
    checkpoint, other batches), ``E[(d - d')^2] = 2 sigma^2`` per logged point, and a law
    that gave every point's expected deviation exactly would keep a residual of about
    ``sum(d - d')^2 / 2``: its R^2 against the observed ``d`` (as ``deviation_r2``) is at
    most ``1 - sum(d - d')^2 / (2 sum(d - mean d)^2)``, over the replicated points.
    """
    do = np.concatenate([np.asarray(r["dev_obs"], dtype=float) for r in t])
    dr = np.concatenate([np.asarray(r["dev_rep"], dtype=float) for r in t])
    ok = np.isfinite(dr)
    if ok.sum() < 2:
        return math.nan
    do, dr = do[ok], dr[ok]
    ss = np.sum((do - do.mean()) ** 2)
    return float(1.0 - np.sum((do - dr) ** 2) / (2.0 * ss)) if ss > 0 else math.nan


def _finite(t, column: str) -> np.ndarray:
    v = t.column(column)
    return v[np.isfinite(v)]


def _median_finite(t, column: str) -> float:
    v = _finite(t, column)
    return float(np.median(v)) if v.size else math.nan


def _mean_finite(t, column: str) -> float:
    v = _finite(t, column)
    return float(np.mean(v)) if v.size else math.nan


def _recovery(fit: ADISFit, study: Study, cfg: Config) -> dict[str, float]:
    """Refit the law to law-generated copies of the fit runs (same schedules and steps)."""
    rng = np.random.default_rng(cfg.seed + 1)
    synth = []
    spec = _spec(cfg)
    for t in study.fit_runs:
        sch = spec.schedule(t.total_steps, t.policy)
        synth.append(simulate_trajectory(fit.params, sch, steps=t.steps,
                                         noise=cfg.recovery_noise, rng=rng, zeta=fit.zeta,
                                         num_params=t.num_params, name=t.name))
    refit = fit_adis_law(synth, restarts=cfg.restarts, seed=cfg.seed, zeta=fit.zeta)
    a, b = fit.params.as_vector(), refit.params.as_vector()
    errs = []
    for g in study.groups:  # forecasts of the held-out schedules, generating vs refitted law
        for t in g.runs:
            ga, ta = _predict(fit, t)
            gb, tb = _predict(refit, t)
            errs += [abs(gb[-1] / ga[-1] - 1), abs(tb[-1] / ta[-1] - 1)]
    budget = max(g.budget for g in study.groups)
    grid = grid_policies(cfg)
    n = study.groups[-1].runs[0].num_params

    def utilities(f):
        ranked = rank_policies(f, grid, total_steps=budget, peak_lr=cfg.peak_lr, mu=cfg.mu,
                               num_params=n)
        return [x.utility for x in sorted(ranked, key=lambda x: x.policy)]

    return {"recovery_max_param_rel_error": float(np.max(np.abs(b / a - 1))),
            "recovery_forecast_rel_error": float(np.max(errs)),
            "recovery_rank_spearman": _spearman(utilities(fit), utilities(refit))}


# --------------------------------------------------------------------------- figures


def _figure(rows: list[Row]) -> bytes:
    fig, (ax1, ax2) = new_figure(2)
    last = max(r.group for r in rows)
    for r in rows:
        if r.group != last:
            continue
        (line,) = ax1.plot(r.steps, r.obs_t, "o", ms=3)
        ax1.plot(r.steps, r.pred_t, "-", color=line.get_color(), lw=1)
    ax1.set_xlabel("step")
    ax1.set_ylabel("target (pydoc) validation loss")
    ax1.set_title("held-out policies at the largest budget: observed (dots), law (lines)",
                  fontsize=8)
    obs = [r.obs_t[-1] for r in rows]
    pred = [r.pred_t[-1] for r in rows]
    ax2.plot(obs, pred, "o")
    lo, hi = min(obs + pred), max(obs + pred)
    ax2.plot([lo, hi], [lo, hi], "k:", lw=1)
    ax2.set_xlabel("observed final target loss")
    ax2.set_ylabel("predicted")
    return figure_png(fig)


# --------------------------------------------------------------------------- the experiment


class ADISLawExperiment(Experiment):
    """Units: each width's runs (trained, or loaded from the cache), then the analysis:
    the joint fit of the law and its forecasts, whose rows are the held-out runs (the
    bootstrap's unit, within each width and budget) and the injected fit runs (the unit of
    the behaviours' bootstrap)."""

    Config, TIERS, METRICS = Config, TIERS, METRICS
    VOLATILE = _VOLATILE
    UNIT_TABLE = None
    CAPTIONS: ClassVar[dict[str, str]] = {
        "heldout": "Observed and law-predicted general and target losses of the held-out "
                   "injection policies over training: the paper's fit-and-extrapolate "
                   "figure."}  # fmt: skip

    def setup(self, cfg: Config, ctx) -> dict:
        import torch

        for w in cfg.widths:
            if w % cfg.num_heads:
                raise ValueError(f"widths: {w} is not divisible by num_heads={cfg.num_heads}")
        torch.set_num_threads(1)
        return {"cfg": cfg, "corpora": None, "arrays": {}}

    def grid(self, cfg: Config):
        return [*({"part": "width", "width": w} for w in cfg.widths), {"part": "analysis"}]

    def measure(self, unit, state, ctx):
        cfg = state["cfg"]
        if unit["part"] == "width":
            w = unit["width"]
            arrays, hit, state["corpora"] = width_runs(cfg, w, ctx.device, state["corpora"])
            state["arrays"][w] = arrays
            return {"kind": "width", "cached": hit}
        return _analysis(cfg, study_of(cfg, state["arrays"]))

    def summarize(self, table, cfg: Config, ctx) -> dict:
        (m,) = [{k: v for k, v in r.items() if k not in ("kind", "part", "unit_seconds")}
                for r in table.where(kind="scalars")]
        held = table.where(kind="heldout")
        rows = _rows_of(held)

        def boot(fn):
            # Held-out runs resampled within each (width, budget) group, as before the port.
            return held.bootstrap(lambda t: fn(_rows_of(t)), unit="run", strata="group",
                                  num_resamples=cfg.bootstrap, seed=cfg.seed)

        m["traj_spearman_across"] = boot(_across)
        m["traj_spearman_within"] = boot(_within)
        m["tail_rel_error"] = boot(lambda r: _tail(r)[0])
        _, m["tail_rel_error_target"], m["tail_rel_error_general"] = _tail(rows)
        m["rank_spearman"] = boot(lambda r: _ranking(r, cfg.mu)[0])
        # the worst RMSE ratio over the baselines, the held-out runs resampled as above
        m["rmse_ratio_worst"] = held.bootstrap(
            lambda t: _rmse_ratio_worst(list(t)), unit="run", strata="group",
            num_resamples=cfg.bootstrap, seed=cfg.seed + 20)
        _, top2, m["rank_regret"] = _ranking(rows, cfg.mu)
        # One held-out ranking: a single Bernoulli trial, whose chance rate (a uniformly
        # random pick among the last group's policies landing in the observed top 2) is
        # the control.
        n_last = sum(r.group == max(x.group for x in rows) for r in rows)
        m["rank_best_in_top2"] = binomial_interval(int(top2), 1, unit="held-out rankings")
        m["rank_best_in_top2_chance"] = Estimate.exact(
            min(2, n_last) / n_last,
            method=f"exact: a uniformly random pick among {n_last} held-out policies")
        # The controls of the trajectory and tail claims: the decoupled law's trajectories,
        # and the law's own forecast of the base run (no injection) for every policy.
        dec = _rows_of(held, "pred_t_decoupled")
        m["traj_spearman_across_decoupled"] = _across(dec)
        m["traj_spearman_within_decoupled"] = _within(dec)
        m["tail_rel_error_nopolicy"] = _tail([dataclasses.replace(
            r, pred_t=np.full_like(r.pred_t, r.base_pred_t),
            pred_g=np.full_like(r.pred_g, r.base_pred_g)) for r in rows])[0]
        runs = table.where(kind="fit_run")
        behaviours = (("rise_fall_fraction", _rise_fall_fraction),
                      ("deviation_r2", _deviation_r2),
                      ("adaptation_loglog_r2", lambda t: _median_finite(t, "r2")),
                      ("deviation_r2_saturating", lambda t: _deviation_r2(t, "dev_pred_sat")),
                      ("deviation_r2_ceiling", _deviation_r2_ceiling))
        for k, (name, stat) in enumerate(behaviours):
            m[name] = (runs.bootstrap(stat, unit="run", num_resamples=cfg.bootstrap,
                                      seed=cfg.seed + k) if len(runs)
                       else Estimate.missing("no injected fit run with 3 logged points"))
        m["rise_fall_fraction_shuffled"] = _mean_finite(runs, "rise_fall_shuffled")
        # Its diagnostics: the same fraction (and placebo) on the runs with the longest
        # injection (the most logged points of the deviation) and on those with the
        # smallest mix ratio (the most general data during injection, room to recover).
        for sub, col, pick in (("longest", "fraction", max), ("low_mix", "mix_ratio", min)):
            part = runs.where(**{col: pick(runs.column(col))}) if len(runs) else runs
            m[f"rise_fall_fraction_{sub}"] = (
                part.bootstrap(_rise_fall_fraction, unit="run", num_resamples=cfg.bootstrap,
                               seed=cfg.seed + 10) if len(part)
                else Estimate.missing("no injected fit run with 3 logged points"))
            m[f"rise_fall_fraction_shuffled_{sub}"] = _mean_finite(part, "rise_fall_shuffled")
        m["adaptation_loglog_r2_steps"] = _median_finite(runs, "r2_steps")
        return {k: m[k] for k in METRICS if k in m}

    def tables(self, table, summary, cfg: Config) -> dict:
        (extra,) = table.where(kind="tables").rows
        held = [{"run": r["name"], "obs_final_target": r["obs_t"][-1],
                 "pred_final_target": r["pred_t"][-1], "obs_final_general": r["obs_g"][-1],
                 "pred_final_general": r["pred_g"][-1]} for r in table.where(kind="heldout")]
        return {"params": list(extra["params"]), "heldout": held,
                "top_candidates": list(extra["top"])}

    def figures(self, table, summary, cfg: Config) -> dict:
        return {"heldout": _figure(_rows_of(table.where(kind="heldout")))}

    def notes(self, table, summary, cfg: Config):
        notes = [f"width {r['width']}: runs loaded from the cache (grid time is the original)"
                 for r in table.where(kind="width") if r["cached"]]
        (extra,) = table.where(kind="tables").rows
        return (*notes, extra["note"])


def _analysis(cfg: Config, study: Study) -> list[dict]:
    """Fit the law, forecast the held-out runs, and measure everything that is not
    resampled: one row per held-out run, one per injected fit run, one of scalars and one
    carrying the report's tables (tuples of row dicts)."""
    tic = time.perf_counter()
    fit = fit_adis_law(list(study.fit_runs), restarts=cfg.restarts, seed=cfg.seed)
    law_seconds = time.perf_counter() - tic
    # The second reading of the forgetting term (saturating in E_d), fitted to the same runs.
    fit_sat = fit_adis_law(list(study.fit_runs), restarts=cfg.restarts, seed=cfg.seed,
                           forgetting="saturating")
    tic = time.perf_counter()
    rng = np.random.default_rng(cfg.seed)
    cands = [InjectionPolicy(float(rng.uniform(0.25, 1.0)), float(rng.uniform(0.05, 0.9)),
                             float(rng.uniform(0.2, 1.2)) * cfg.peak_lr)
             for _ in range(cfg.num_candidates)]
    big = study.groups[-1]
    ranked = rank_policies(fit, cands, total_steps=big.budget, peak_lr=cfg.peak_lr, mu=cfg.mu,
                           num_params=big.runs[0].num_params)
    law_seconds += time.perf_counter() - tic
    rows = heldout_rows(fit, study)
    m: dict = {"kind": "scalars", "num_fit_runs": len(study.fit_runs),
               "num_heldout_runs": len(rows), "fit_rmse": fit.rmse,
               "fit_converged": fit.converged, "fit_rmse_general": fit.rmse_general,
               "fit_rmse_general_saturating": fit_sat.rmse_general}
    dec = DecoupledLaw(seed=cfg.seed).fit(list(study.fit_runs))
    base_out, base_preds = _baselines(study, rows, cfg, cfg.mu, dec)
    m.update(base_out)
    m.update(_recovery(fit, study, cfg))
    m["train_steps"] = study.train_steps
    m["grid_seconds"] = study.grid_seconds
    m["law_seconds"] = law_seconds
    m["law_vs_grid_time_ratio"] = (law_seconds / study.grid_seconds if study.grid_seconds
                                   else float("nan"))
    by_name = {t.name: t for g in study.groups for t in g.runs}
    out = []
    for i, r in enumerate(rows):
        d = _row_dict(r, i)
        pred = np.asarray(dec.predict(by_name[r.name]).loss_target)
        d["pred_t_decoupled"] = tuple(pred.tolist())
        d |= {f"final_pred_{name}": float(base_preds[name][i, 0]) for name in BASELINES}
        out.append(d)
    out += _behaviour_rows(fit, study, cfg.seed, fit_sat)
    params = [{"law": "general", "name": k, "value": v} for k, v in fit.params.general.items()]
    params += [{"law": "target", "name": k, "value": v} for k, v in fit.params.target.items()]
    params += [{"law": "scale", "name": k, "value": v} for k, v in fit.params.scale.items()]
    top = [{"rank": i + 1, "fraction": s.policy.fraction, "mix_ratio": s.policy.mix_ratio,
            "peak_lr": s.policy.peak_lr, "utility": s.utility} for i, s in enumerate(ranked[:10])]
    note = (f"Law fitted on {len(study.fit_runs)} runs ({fit.num_points} logged points "
            f"per domain); {'converged' if fit.converged else 'NOT converged'}.")
    return [*out, m, {"kind": "tables", "params": tuple(params), "top": tuple(top),
                      "note": note}]


EXPERIMENT = ADISLawExperiment()
run = EXPERIMENT.run
