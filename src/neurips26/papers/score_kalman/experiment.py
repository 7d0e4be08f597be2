"""Reproduction: SKF versus EKF, UKF, EnKF and PF on coupled Duffing networks.

For each number of oscillators ``N`` (state dimension ``n = 2N``) and each Monte
Carlo run we simulate a double-well Duffing network, run every filter on the same
observations and record the position RMSE after a burn-in; the RMSE claims pair the
runs (the smallest mean gap over baselines and n with a 95% Student-t interval over the
paired per-run gaps, and a one-sided Wilcoxon signed-rank test per baseline and n, at
least 10 runs at the small tier). An SKF run that raises (undetermined Stein closure,
non-finite moments) counts as failed with an infinite RMSE (so it fails the RMSE claims
instead of leaving them unmeasured), and so does a run that finishes but whose prior
fit had ``cond >= 1e12`` at some step (the spec's criterion; the cond is that of the
Hermite-preconditioned score-matching matrix). ``skf_finished_fraction_n*`` reports the
runs that finished with finite moments whatever the conditioning,
``skf_truncation_gap_max_n*`` the largest K-convergence gap of the Stein posterior
solves, and ``skf_fallback_step_fraction_n*`` the share of steps whose prior fit had to
drop a block's non-Gaussian coefficients (the check ``fallback_rare``). We also check
the Gaussian special case against the information-form Kalman filter with a degree-2
and a quartic basis, and time the MaxEnt grid fit at n = 2 and 3 against the
score-matching fit with the same basis (its control). Times enter only as ratios or
slopes measured in this run (volatile metrics).

Every filter integrates with the same ``num_substeps`` per observation (RK4 for the
SKF's moment ODE, Euler or Euler-Maruyama for the baselines). The RMSE is reported over
three windows: after the burn-in (the spec's, claim ``lower_rmse``), the whole
trajectory (``rmse_full_*``) and the burn-in alone (``rmse_bimodal_*``, claim
``lower_rmse_bimodal_phase``: every position starts in a double-well prior, the phase
where a non-Gaussian filter should help). ``skf_projection_step_fraction_n*`` and
``skf_grid_step_fraction_n*`` give the share of steps that took a Gaussian-projection
fallback or a grid update (see ``skf.py``).

The showcase of the README, ``dx = (x - x^3) dt + 0.5 dW`` with a quartic basis, runs
at observation-noise variances up to 0.5 from the README's prior ``N(0, 0.25)`` and
from ``N(0, 1)`` (beliefs over both wells), each run paired with a UKF at the same
substeps: ``showcase_raised_runs`` counts SKF runs that raised (check
``showcase_never_raises``), ``showcase_rmse_gap_ukf`` is the paired UKF - SKF RMSE gap
(check ``showcase_level_with_ukf``), with its share of fallback and grid steps. The SKF
runs three times on each showcase run: with the library's default closure, with the
paper's Stein closure (``showcase_stein_*``, the second reading) and with a degree-6
basis (``showcase_deg6_*``, a richer family). The exact Bayes filter of the simulated
chain on a grid (a point-mass filter) gives ``showcase_exact_rmse_gap_ukf``, how much any
filter can gain over the UKF on these runs, and ``showcase_*exact_dist_gap_ukf``, how
much closer each SKF's posterior mean stays to the exact one than the UKF's (RMS over a
run, whole run or burn-in, paired over runs): a statistic without the observation
noise that dominates the RMSE against the truth. The check
``predict_closure_resolves_step`` predicts one step from four Gaussian beliefs at 2, 8
and 32 RK4 substeps with each closure and compares the variance with the simulator's
own transition. How far the showcase check can go is bounded by the exact filter: where
exact Bayes itself gains only a few thousandths over the UKF
(``showcase_exact_rmse_gap_ukf``, shown beside the check), "at least level" can be
shown only within that margin, and five runs per setting leave the check's interval
wider than it.

Why the RMSE claims do not reproduce here is not yet diagnosed (the numbers are in the
store and the report). The SKF's RMSE sits within run-to-run noise of the EKF's and
UKF's (the paired tests do separate it from the 2,000-particle PF, which degenerates as
n grows, and at the largest n from the 100-member EnKF, whose sampling error grows with
n); its fitted non-Gaussian coefficients rarely need the fallback. Both RMSE claims take
the worst case over every n and baseline, so a single near-tie decides them. Two
readings of where a non-Gaussian filter should gain are measured and neither shows the
SKF ahead: the burn-in, where every position starts in a double-well prior (claim
``lower_rmse_bimodal_phase``), and a harder regime with five times the observation noise
at n = 2 and 4 (``hard_rmse_min_gap``, shown beside ``lower_rmse``). Longer gaps
between observations, the other regime the abstract leaves open, are not run; we kept
the spec's benchmark rather than tune one until the SKF wins. The paper's n = 20 runs
at the small tier (ten oscillators, 30 steps, 10 paired runs); the paper tier adds
n = 12 and 16 and longer runs.
"""

from __future__ import annotations

import functools
import time
from dataclasses import dataclass

import numpy as np
from scipy import stats

from neurips26.common.experiment import param
from neurips26.common.plotting import figure_png, new_figure
from neurips26.experiment import Estimate, Experiment, Table, t_interval

from . import (
    ScoreKalmanFilter,
    coupled_duffing,
    ekf,
    enkf,
    full_basis,
    gaussian_moments,
    kalman_filter,
    linear_gaussian,
    maxent_fit,
    oscillator_basis,
    particle_filter,
    sample_moments,
    score_matching_fit,
    score_matching_moments,
    ukf,
)


@dataclass(frozen=True)
class Config:
    seed: int = 0
    num_nodes: tuple[int, ...] = param(
        (1, 2, 4, 10), help="oscillators N per network (state dimension n = 2N)", min=1
    )
    num_steps: int = param(30, help="filter steps per run", min=1)
    num_runs: int = param(10, help="independent runs per n (paired across filters)", min=1)
    burn_in: int = param(10, help="steps left out of the error average", min=0)
    sigma: float = param(0.1, help="process-noise standard deviation", min=0.0)
    obs_noise: float = param(0.1, help="observation-noise standard deviation", min=0.0)
    coupling: float = param(0.5, help="coupling strength between nodes")
    num_substeps: int = param(2, help="integration substeps per filter step, the same for "
                                      "the SKF (RK4) and every baseline (Euler)", min=1)
    truncation: int = param(20, help="moment order of the closure", min=1)
    num_members: int = param(100, help="ensemble members of the EnKF", min=1)
    num_particles: int = param(2000, help="particles of the particle filter", min=1)
    kf_check_steps: int = param(50, help="steps of the linear-Gaussian Kalman check", min=0)
    maxent_grid_points: int = param(40, help="grid points per axis of the MaxEnt fit", min=1)
    time_maxent: bool = param(True, help="time the MaxEnt closure against score matching")
    showcase_noise: tuple[float, ...] = param(
        (0.2, 0.3, 0.5), help="observation-noise variances R of the x - x^3 showcase", min=0.0)
    showcase_priors: tuple[float, ...] = param(
        (0.25, 1.0), help="prior variances of the showcase (the README's 0.25; 1.0 spreads "
                          "the belief over both wells)", min=0.0)
    showcase_runs: int = param(5, help="paired SKF/UKF runs per showcase setting", min=0)
    showcase_steps: int = param(40, help="observations per showcase run", min=1)
    hard_nodes: tuple[int, ...] = param(
        (1, 2), help="oscillators N of the harder-regime diagnostic (empty: not run)", min=1,
        allow_empty=True)
    hard_obs_noise: float = param(
        0.5, help="observation-noise standard deviation of the harder-regime diagnostic "
        "(the benchmark's runs otherwise unchanged)", min=0.0)


TIERS = {
    "smoke": Config(num_nodes=(1,), num_steps=10, num_runs=1, burn_in=3, num_particles=500,
                    kf_check_steps=20, time_maxent=False, showcase_noise=(0.5,),
                    showcase_priors=(1.0,), showcase_runs=1, showcase_steps=10,
                    hard_nodes=(1,)),
    "small": Config(),  # n = 2, 4, 8, 20; 30 steps; 10 paired runs
    "paper": Config(num_nodes=(1, 2, 4, 6, 8, 10), num_steps=100, num_runs=50,
                    num_particles=10000, hard_nodes=(1, 2, 4)),
}

BASELINES = ("ekf", "ukf", "enkf", "pf")


def _linear_system(rng: np.random.Generator, n: int, m: int, steps: int):
    A = rng.standard_normal((n, n))
    F = 0.95 * A / np.abs(np.linalg.eigvals(A)).max()
    Q = 0.1 * np.eye(n) + 0.02 * np.ones((n, n))
    H = rng.standard_normal((m, n))
    R = 0.2 * np.eye(m) + 0.05 * np.ones((m, m))
    x = rng.standard_normal(n)
    ys = []
    for _ in range(steps):
        x = F @ x + rng.multivariate_normal(np.zeros(n), Q)
        ys.append(H @ x + rng.multivariate_normal(np.zeros(m), R))
    return F, Q, H, R, np.array(ys)


def _gaussian_check(cfg: Config, rng: np.random.Generator) -> tuple[float, float]:
    """Max |SKF - KF| over means and covariances on linear systems: degree 2 and 4 bases.

    Degree 2 (n = 3): the information-form Kalman filter exactly. Degree 4 (n = 2, at most
    15 steps): the Hermite-preconditioned fit must return the Gaussian itself (no
    reference quartic, no fallback), so the filter is the Kalman filter again.
    """
    out = []
    for n, degree, steps in ((3, 2, cfg.kf_check_steps), (2, 4, min(cfg.kf_check_steps, 15))):
        F, Q, H, R, ys = _linear_system(rng, n, 2 if n == 3 else 1, steps)
        m0, P0 = np.zeros(n), np.eye(n)
        b = kalman_filter(ys, m0, P0, F=F, Q=Q, H=H, R=R)
        skf = ScoreKalmanFilter(basis=full_basis(n, degree), model=linear_gaussian(F, Q), H=H,
                                R=R, dt=1.0)
        a = skf.filter(ys, m0, P0)
        out.append(float(max(np.abs(a.means - b.means).max(), np.abs(a.covs - b.covs).max())))
    return out[0], out[1]


def _rmse(means: np.ndarray, xs: np.ndarray, start: int, stop: int | None = None) -> float:
    """Position RMSE over steps ``start:stop``."""
    return float(np.sqrt(np.mean((means[start:stop, ::2] - xs[start:stop, ::2]) ** 2)))


#: The three error windows: after the burn-in (the spec's), the whole trajectory, and the
#: burn-in alone (the bimodal phase: every position starts in a double-well prior).
WINDOWS = {"": lambda b: (b, None), "full_": lambda b: (0, None),
           "bimodal_": lambda b: (0, max(b, 1))}


#: Every metric name ``run()`` can return (``*`` stands for a family of names, such as
#: one per size or data set); claims name theirs exactly. Checked by the contract test.
METRICS: tuple[str, ...] = (
    "gaussian_kf_max_abs_diff",
    "quartic_kf_max_abs_diff",
    "maxent_time_ratio_n3_n2",
    "rmse_min_gap",
    "rmse_full_min_gap",
    "rmse_bimodal_min_gap",
    "rmse_full_*_n*",
    "rmse_bimodal_*_n*",
    "skf_projection_step_fraction_n*",
    "skf_grid_step_fraction_n*",
    "showcase_raised_runs",
    "showcase_rmse_gap_ukf",
    "showcase_rmse_bimodal_gap_ukf",
    "showcase_stein_rmse_gap_ukf",
    "showcase_exact_dist_gap_ukf",
    "showcase_deg6_exact_dist_gap_ukf",
    "showcase_grid_step_fraction",
    "showcase_rmse_gap_ukf_p*_r*",
    "showcase_*raised_runs",
    "showcase_*fallback_step_fraction",
    "showcase_*rmse_gap_ukf",
    "showcase_*rmse_bimodal_gap_ukf",
    "showcase_*exact_dist_gap_ukf",
    "showcase_*exact_dist_bimodal_gap_ukf",
    "showcase_exact_rmse_gap_ukf",
    "showcase_exact_rmse_bimodal_gap_ukf",
    "closure_var_error_stein",
    "closure_var_error_quadrature",
    "score_matching_time_ratio_n3_n2",
    "skf_fallback_step_fraction",
    "skf_fallback_step_fraction_n*",
    "skf_pf_time_ratio_n*",
    "skf_finite_fraction_largest_n",
    "skf_time_slope",
    "wilcoxon_max_p",
    "rmse_*_n*",
    "skf_finished_fraction_n*",
    "skf_finite_fraction_n*",
    "skf_truncation_gap_max_n*",
    "hard_rmse_min_gap",
    "hard_rmse_*_n*",
    "hard_skf_finite_fraction",
)


#: Figure captions for the report: what is plotted and the claims it illustrates.
CAPTIONS: dict[str, str] = {
    "rmse_time_vs_n": (
        "Left: position RMSE of SKF, EKF, UKF, EnKF and PF against the state dimension n "
        "(claims lower_rmse, lower_rmse_significant), the mean over runs with bars of its 95% "
        "Student-t interval. Right: milliseconds per filter "
        "step, log scale (claim linear_algebra_cost; machine-dependent)."
    ),
}

_FILTERS = ("skf", *BASELINES)


def _bench(state: dict, N: int, obs_noise: float) -> dict:
    """The benchmark of N oscillators at ``obs_noise`` and the SKF built for it (once
    each)."""
    cfg = state["config"]
    if (N, obs_noise) not in state["benches"]:
        bench = coupled_duffing(num_nodes=N, coupling=cfg.coupling, sigma=cfg.sigma,
                                obs_noise=obs_noise, dt=0.1, seed=cfg.seed)
        try:
            skf = ScoreKalmanFilter(basis=oscillator_basis(2 * N), model=bench.model,
                                    H=bench.H, R=bench.R, dt=bench.dt,
                                    num_substeps=cfg.num_substeps, truncation=cfg.truncation)
            init, plan_error = bench.prior.moments(skf.moment_exponents), ""
        except ValueError as err:  # Stein closure not determined at plan time
            skf, init, plan_error = None, None, f"plan: {err}"
        state["benches"][N, obs_noise] = {"bench": bench, "skf": skf, "init": init,
                                          "error": plan_error}
    return state["benches"][N, obs_noise]


class ScoreKalman(Experiment):
    """The reproduction on the experiment layer (see the module docstring).

    Units: each (N, run) of the benchmark, then the Kalman special cases and the MaxEnt /
    score-matching timing. One generator seeded by the run's seed is drawn from in unit
    order (the ``setup`` state), as the monolithic run drew it, so every unit sees the
    same random numbers as before.
    """

    Config, TIERS, METRICS = Config, TIERS, METRICS
    CAPTIONS = CAPTIONS
    VOLATILE = ("skf_pf_time_ratio_n*", "skf_time_slope", "maxent_time_ratio_n3_n2",
                "score_matching_time_ratio_n3_n2")

    def setup(self, config: Config, ctx):
        return {"config": config, "rng": np.random.default_rng(config.seed), "benches": {}}

    def grid(self, config: Config):
        units = [{"part": "run", "n": 2 * N, "N": N, "run": r}
                 for N in config.num_nodes for r in range(config.num_runs)]
        units += [{"part": "showcase", "p0": p0, "r": r, "run": k}
                  for p0 in config.showcase_priors for r in config.showcase_noise
                  for k in range(config.showcase_runs)]
        units.append({"part": "kalman"})
        if config.showcase_runs:
            units.append({"part": "closure"})  # draws no random numbers
        if config.time_maxent:
            units.append({"part": "timing"})
        # last, so that every unit above draws the same random numbers as without it
        units += [{"part": "hard", "n": 2 * N, "N": N, "run": r}
                  for N in config.hard_nodes for r in range(config.num_runs)]
        return units

    def measure(self, unit, state, ctx):
        cfg, rng = state["config"], state["rng"]
        if unit["part"] == "kalman":
            if not cfg.kf_check_steps:
                return {}
            g2, g4 = _gaussian_check(cfg, rng)
            return {"gaussian_kf_max_abs_diff": g2, "quartic_kf_max_abs_diff": g4}
        if unit["part"] == "timing":
            return _timing(cfg)
        if unit["part"] == "closure":
            return _closure_check(cfg)
        if unit["part"] == "showcase":
            return _showcase(cfg, unit, rng)
        hard = unit["part"] == "hard"
        b = _bench(state, unit["N"], cfg.hard_obs_noise if hard else cfg.obs_noise)
        bench, skf = b["bench"], b["skf"]
        common = dict(model=bench.model, H=bench.H, R=bench.R, dt=bench.dt,
                      num_substeps=cfg.num_substeps)  # equal substeps for every filter
        xs, ys = bench.simulate(cfg.num_steps, rng)
        samples = bench.prior.sample(max(cfg.num_particles, cfg.num_members), rng)
        mean0, cov0 = bench.prior.mean, bench.prior.cov
        fseed = int(rng.integers(2**31))
        out = {
            "ekf": ekf(ys, mean0, cov0, **common),
            "ukf": ukf(ys, mean0, cov0, **common),
            "enkf": enkf(ys, mean0, cov0, **common, num_members=cfg.num_members,
                         seed=fseed, init_samples=samples),
            "pf": particle_filter(ys, mean0, cov0, **common,
                                  num_particles=cfg.num_particles, seed=fseed,
                                  init_samples=samples),
        }
        row: dict = {"rmse_skf": np.inf, "failure": b["error"]}  # a failed run ranks worst
        if skf is not None:
            try:
                sres = skf.filter(ys, init_moments=b["init"])
                for w, win in WINDOWS.items():
                    row[f"rmse_{w}skf"] = _rmse(sres.means, xs, *win(cfg.burn_in))
                row["projected"] = float(np.mean((sres.fallback & ~16) != 0))
                row["grid"] = float(np.mean((sres.fallback & 16) != 0))
                row["time_skf"] = float(np.median(sres.step_time_s))
                row["finished"] = int(np.all(np.isfinite(sres.means)))
                row["truncation_gap"] = float(np.max(sres.truncation_gap))
                if sres.regularised is not None:
                    row["regularised"] = float(np.mean(sres.regularised))
                ok = np.all(np.isfinite(sres.means)) and np.all(sres.cond < 1e12)
                if not ok:
                    row["failure"] = "cond(A) >= 1e12"
                    for w in WINDOWS:
                        row[f"rmse_{w}skf"] = np.inf
            except ValueError as err:
                row["failure"] = str(err)
        for w in WINDOWS:
            row.setdefault(f"rmse_{w}skf", np.inf)
        for k, v in out.items():
            for w, win in WINDOWS.items():
                row[f"rmse_{w}{k}"] = _rmse(v.means, xs, *win(cfg.burn_in))
            row[f"time_{k}"] = float(np.median(v.step_time_s))
        return row

    def summarize(self, table: Table, config: Config, ctx) -> dict:
        cfg = config
        metrics: dict = {}
        runs = table.where(part="run")
        min_gap, min_gap_est, max_p = np.inf, None, 0.0
        fallback_max = 0.0
        finite_frac_last = np.nan
        skf_time: dict[int, float] = {}
        win_gap = {w: (np.inf, None) for w in ("full_", "bimodal_")}
        for n, g in runs.groups("n").items():
            failures = [r["failure"] for r in g if r["failure"]]
            frac = 1.0 - len(failures) / cfg.num_runs
            finite_frac_last = frac
            metrics[f"skf_finite_fraction_n{n}"] = float(frac)
            metrics[f"skf_finished_fraction_n{n}"] = (
                sum(r.get("finished", 0) for r in g) / cfg.num_runs)  # finite, any cond
            gaps = [r["truncation_gap"] for r in g if "truncation_gap" in r]
            if gaps:
                metrics[f"skf_truncation_gap_max_n{n}"] = float(max(gaps))
            regularised = [r["regularised"] for r in g if "regularised" in r]
            if regularised:
                # steps whose prior fit had to drop a block's non-Gaussian coefficients
                # (the block-wise reduction to the Gaussian sub-family, the fallback)
                metrics[f"skf_fallback_step_fraction_n{n}"] = float(np.mean(regularised))
                fallback_max = max(fallback_max, float(np.mean(regularised)))
            for key, name in (("projected", "projection"), ("grid", "grid")):
                v = [r[key] for r in g if key in r]
                if v:
                    metrics[f"skf_{name}_step_fraction_n{n}"] = float(np.mean(v))
            for k in _FILTERS:
                for w in WINDOWS:
                    metrics[f"rmse_{w}{k}_n{n}"] = float(np.mean(g.column(f"rmse_{w}{k}")))
            for w in ("full_", "bimodal_"):
                skf_w = g.column(f"rmse_{w}skf")
                for k in BASELINES:
                    d = g.column(f"rmse_{w}{k}") - skf_w  # paired per-run gaps
                    gap = float(np.mean(d))
                    if gap < win_gap[w][0] or not np.isfinite(win_gap[w][0]):
                        win_gap[w] = (gap, _paired_gap(d))
            skf_r = g.column("rmse_skf")
            for k in BASELINES:
                base = g.column(f"rmse_{k}")
                gap = float(base.mean() - skf_r.mean())  # -inf if any SKF run failed
                if gap < min_gap or not np.isfinite(min_gap):
                    min_gap = gap
                    min_gap_est = _paired_gap(base - skf_r)  # paired per-run gaps
                if np.isfinite(skf_r).all() and len(skf_r) > 1 and np.any(skf_r != base):
                    p = float(stats.wilcoxon(skf_r, base, alternative="less").pvalue)
                else:
                    p = 1.0  # a failed SKF run loses every pairing
                max_p = max(max_p, p)
            times = [r["time_skf"] for r in g if "time_skf" in r]
            if times:
                skf_time[n] = float(np.median(times))
                metrics[f"skf_pf_time_ratio_n{n}"] = skf_time[n] / float(
                    np.median(g.column("time_pf")))
        if len(cfg.num_nodes):
            metrics["rmse_min_gap"] = min_gap_est
            metrics["rmse_full_min_gap"] = win_gap["full_"][1]
            metrics["rmse_bimodal_min_gap"] = win_gap["bimodal_"][1]
            metrics["skf_fallback_step_fraction"] = float(fallback_max)
        if np.isfinite(max_p) and len(cfg.num_nodes) and max_p > 0:
            metrics["wilcoxon_max_p"] = float(max_p)
        metrics["skf_finite_fraction_largest_n"] = float(finite_frac_last)
        hard = table.where(part="hard")
        if len(hard):
            metrics.update(_hard_metrics(hard))
        metrics.update(_showcase_metrics(table.where(part="showcase"), cfg))
        for r in table.where(part="closure"):
            metrics.update({k: v for k, v in r.items() if k.startswith("closure_var_error_")})
        (kal,) = table.where(part="kalman").rows
        for k in ("gaussian_kf_max_abs_diff", "quartic_kf_max_abs_diff"):
            metrics[k] = kal.get(k, float("nan"))
        if len(skf_time) >= 2:
            ns = np.array(sorted(skf_time))
            slope = np.polyfit(np.log(ns), np.log([skf_time[k] for k in ns]), 1)[0]
            metrics["skf_time_slope"] = float(slope)
        for r in table.where(part="timing"):
            metrics["maxent_time_ratio_n3_n2"] = r["maxent_time_ratio_n3_n2"]
            metrics["score_matching_time_ratio_n3_n2"] = r["score_matching_time_ratio_n3_n2"]
        return metrics

    def tables(self, table: Table, summary: dict, config: Config) -> dict:
        rows, time_rows = [], []
        hard = [{"n": n, "obs_noise": config.hard_obs_noise,
                 **{f"rmse_{k}": float(np.mean(g.column(f"rmse_{k}"))) for k in _FILTERS}}
                for n, g in table.where(part="hard").groups("n").items()]  # fmt: skip
        for n, g in table.where(part="run").groups("n").items():
            fails = sum(1 for r in g if r["failure"])
            finished = sum(r.get("finished", 0) for r in g)
            row = {"n": n, "skf_ok": f"{config.num_runs - fails}/{config.num_runs}",
                   "skf_finished": f"{finished}/{config.num_runs}"}
            for k in _FILTERS:
                row[f"rmse_{k}"] = float(np.mean(g.column(f"rmse_{k}")))
            skf_r = g.column("rmse_skf")
            for k in BASELINES:
                base = g.column(f"rmse_{k}")
                if np.isfinite(skf_r).all() and len(skf_r) > 1 and np.any(skf_r != base):
                    row[f"wilcoxon_p_{k}"] = float(
                        stats.wilcoxon(skf_r, base, alternative="less").pvalue)
                else:
                    row[f"wilcoxon_p_{k}"] = 1.0
            rows.append(row)
            trow = {"n": n}
            for k in _FILTERS:
                v = [r[f"time_{k}"] for r in g if f"time_{k}" in r]
                trow[f"step_ms_{k}"] = float(np.median(v) * 1e3) if v else float("nan")
            time_rows.append(trow)
        out = {"rmse": rows, "step_time": time_rows}
        if hard:
            out["rmse_harder_regime"] = hard
        return out

    def figures(self, table: Table, summary: dict, config: Config) -> dict:
        time_rows = self.tables(table, summary, config)["step_time"]
        groups = table.where(part="run").groups("n")
        ns = sorted(groups)
        fig, axes = new_figure(2)
        for k in _FILTERS:
            vals, err = [], []
            for n in ns:
                v = groups[n].column(f"rmse_{k}")
                e = t_interval(v, unit="runs") if np.isfinite(v).all() else None
                vals.append(np.nan if e is None else e.value)
                ok = e is not None and np.isfinite([e.lo, e.hi]).all()
                err.append([e.value - e.lo, e.hi - e.value] if ok else [0.0, 0.0])
            # failed SKF runs (infinite RMSE) are not drawn
            axes[0].errorbar(ns, vals, yerr=np.array(err).T.reshape(2, len(ns)), fmt="o-",
                             capsize=2, label=k.upper())
            tv = [r[f"step_ms_{k}"] for r in time_rows]
            axes[1].plot(ns, tv, "o-", label=k.upper())
        axes[0].set(xlabel="state dimension n", ylabel="position RMSE", title="RMSE vs n")
        axes[1].set(xlabel="state dimension n", ylabel="ms per step", yscale="log",
                    title="time per predict-update step")
        axes[0].legend()
        return {"rmse_time_vs_n": figure_png(fig)}

    def notes(self, table: Table, summary: dict, config: Config) -> tuple:
        out = []
        for part, what in (("run", ""), ("hard", " (harder regime)")):
            for n, g in table.where(part=part).groups("n").items():
                failures = [r["failure"] for r in g if r["failure"]]
                if failures:
                    out.append(f"n={n}{what}: {len(failures)}/{config.num_runs} SKF runs "
                               f"failed; first: {failures[0][:200]}")
        return tuple(out)


def _paired_gap(d: np.ndarray) -> Estimate:
    """The mean of the paired per-run gaps ``d`` (baseline - SKF) with its Student-t
    interval over runs; a failed SKF run (an infinite RMSE) leaves it unbounded."""
    if np.isfinite(d).all():
        return t_interval(d, unit="runs (paired)")
    return Estimate(float(np.mean(d)), -np.inf, np.inf, "t over runs (paired): a failed SKF run",
                    0.95, len(d))


def _hard_metrics(hard: Table) -> dict:
    """The harder-regime diagnostic: the RMSE claim's statistic (smallest mean paired gap
    baseline - SKF after the burn-in over baselines and n, Student-t over runs) at the
    broader observation noise, each filter's mean RMSE, and the SKF's finite share."""
    out: dict = {}
    best = (np.inf, None)
    for n, g in hard.groups("n").items():
        skf_r = g.column("rmse_skf")
        for k in _FILTERS:
            out[f"hard_rmse_{k}_n{n}"] = float(np.mean(g.column(f"rmse_{k}")))
        for k in BASELINES:
            d = g.column(f"rmse_{k}") - skf_r
            gap = float(np.mean(d))
            if gap < best[0] or best[1] is None:
                best = (gap, _paired_gap(d))
    out["hard_rmse_min_gap"] = best[1]
    out["hard_skf_finite_fraction"] = float(np.mean(np.isfinite(hard.column("rmse_skf"))))
    return out


#: The showcase's SDE, ``dx = (x - x^3) dt + 0.5 dW``, and the Euler-Maruyama substeps
#: of its simulated truth (over the 0.1 time units between observations).
SHOWCASE_DRIFT, SHOWCASE_DIFFUSION, SHOWCASE_DT, SHOWCASE_TRUTH_SUBSTEPS = (
    {(1,): 1.0, (3,): -1.0}, 0.5, 0.1, 20)


def _showcase_model():
    from . import PolySDE

    return PolySDE([SHOWCASE_DRIFT], np.array([[SHOWCASE_DIFFUSION]]))


def _point_mass_chain(drift, diffusion: float, *, dt: float, num_substeps: int,
                      half_width: float = 4.0, num_points: int = 801):
    """Grid nodes (P,) and the transition matrix (P, P) of a 1-D Euler-Maruyama chain.

    ``num_substeps`` steps ``x + h f(x) + sqrt(h) g N(0, 1)`` over ``dt``, as a
    row-stochastic matrix on ``num_points`` nodes over ``[-half_width, half_width]``
    (mass that would leave the grid is renormalised onto it).
    """
    g = np.linspace(-half_width, half_width, num_points)
    h = dt / num_substeps
    f = sum(c * g ** a[0] for a, c in drift.items())
    K = np.exp(-((g[None, :] - (g + h * f)[:, None]) ** 2) / (2 * diffusion**2 * h))
    K /= K.sum(axis=1, keepdims=True)
    return g, np.linalg.matrix_power(K, num_substeps)


@functools.cache
def _showcase_chain():
    """The showcase simulator's chain over one observation interval (built once)."""
    return _point_mass_chain(SHOWCASE_DRIFT, SHOWCASE_DIFFUSION, dt=SHOWCASE_DT,
                             num_substeps=SHOWCASE_TRUTH_SUBSTEPS)


def _point_mass_filter(ys: np.ndarray, chain, prior_mean: float, prior_var: float,
                       r: float):
    """Posterior means (T,) of the exact Bayes filter of the simulator on a grid.

    ``chain`` is the simulator's own Euler-Maruyama chain ``(nodes, transition)``
    (:func:`_point_mass_chain`), the update the Gaussian likelihood ``N(y; x, r)``: the
    reference of what any filter can gain on the 1-D showcase.
    """
    g, Kt = chain
    p = np.exp(-((g - prior_mean) ** 2) / (2 * prior_var))
    p /= p.sum()
    means = np.empty(len(ys))
    for t, y in enumerate(np.asarray(ys, dtype=float).reshape(-1)):
        p = p @ Kt
        p = p * np.exp(-((y - g) ** 2) / (2 * r))
        p /= p.sum()
        means[t] = p @ g
    return means


#: Gaussian beliefs (mean, variance) from which the closure diagnostic predicts one step.
CLOSURE_BELIEFS = ((0.0, 0.25), (-0.2, 0.24), (0.5, 0.25), (1.0, 0.1))
CLOSURE_SUBSTEPS = (2, 8, 32)


def _closure_check(cfg: Config) -> dict:
    """Largest relative error of the predicted variance over one showcase step, per closure.

    From each Gaussian of :data:`CLOSURE_BELIEFS`, the SKF's predict (quartic basis) at
    each of :data:`CLOSURE_SUBSTEPS` RK4 substeps against the simulator's own transition
    on a grid; a predict that raises counts as an infinite error. A closure whose moment
    ODE resolves the step agrees at every substep count.
    """
    from . import gaussian_moments, predict, score_matching_moments

    basis, model = full_basis(1, 4), _showcase_model()
    g, Kt = _showcase_chain()
    out = {}
    for closure in ("stein", "quadrature"):
        worst = 0.0
        for mean, var in CLOSURE_BELIEFS:
            p = np.exp(-((g - mean) ** 2) / (2 * var))
            p = (p / p.sum()) @ Kt
            exact = p @ g**2 - (p @ g) ** 2
            m0 = gaussian_moments([mean], [[var]], score_matching_moments(basis))
            for ns in CLOSURE_SUBSTEPS:
                try:
                    m = predict(m0, model, basis, dt=SHOWCASE_DT, num_substeps=ns,
                                closure=closure)
                    err = abs(m[(2,)] - m[(1,)] ** 2 - exact) / exact
                except ValueError:
                    err = np.inf
                worst = max(worst, float(err))
        out[f"closure_var_error_{closure}"] = worst
    return out


#: SKF readings of the showcase: (closure, basis degree, metric prefix). The library's
#: default (quartic basis), the paper's Stein closure, and a degree-6 basis.
SHOWCASE_READINGS = (("auto", 4, ""), ("stein", 4, "stein_"), ("auto", 6, "deg6_"))


def _showcase(cfg: Config, unit: dict, rng: np.random.Generator) -> dict:
    """One paired SKF/UKF run on the README's showcase ``dx = (x - x^3) dt + 0.5 dW``.

    Truth from ``N(0, p0)``, the filters' prior the same Gaussian, observations ``x + v``
    with ``v ~ N(0, r)`` every 0.1 time units, both filters at ``cfg.num_substeps``; a
    quartic basis. The SKF runs with the library's default closure and, as the second
    reading, with the paper's Stein closure (``closure="stein"``); the exact Bayes filter
    of the simulator (:func:`_point_mass_filter`) is the reference of what any filter can
    gain over the UKF. An SKF run that raises counts in ``raised`` (``stein_raised``).
    """
    from . import ukf

    model = _showcase_model()
    p0, r = float(unit["p0"]), float(unit["r"])
    x, xs = np.sqrt(p0) * rng.standard_normal((1, 1)), []
    for _ in range(cfg.showcase_steps):
        x = model.sample_transition(x, SHOWCASE_DT, SHOWCASE_TRUTH_SUBSTEPS, rng)
        xs.append(x[0])
    xs = np.array(xs)
    ys = xs + np.sqrt(r) * rng.standard_normal(xs.shape)
    kw = dict(model=model, H=np.eye(1), R=r * np.eye(1), dt=SHOWCASE_DT,
              num_substeps=cfg.num_substeps)
    u = ukf(ys, np.zeros(1), p0 * np.eye(1), **kw)
    bim = max(cfg.burn_in, 1)
    exact = _point_mass_filter(ys, _showcase_chain(), 0.0, p0, r)[:, None]
    row = {"rmse_ukf": _rmse(u.means, xs, 0), "rmse_bimodal_ukf": _rmse(u.means, xs, 0, bim),
           "rmse_exact": _rmse(exact, xs, 0), "rmse_bimodal_exact": _rmse(exact, xs, 0, bim),
           "dist_ukf": _rmse(u.means, exact, 0), "dist_bimodal_ukf": _rmse(u.means, exact, 0, bim)}
    for closure, degree, pre in SHOWCASE_READINGS:
        row.update({f"{pre}{k}": np.nan for k in ("rmse_skf", "rmse_bimodal_skf", "fallback",
                                                  "grid", "dist_skf", "dist_bimodal_skf")})
        row[f"{pre}raised"] = 0
        skf = ScoreKalmanFilter(basis=full_basis(1, degree), truncation=cfg.truncation,
                                closure=closure, **kw)
        try:
            res = skf.filter(ys, np.zeros(1), p0 * np.eye(1))
        except ValueError:
            row[f"{pre}raised"] = 1
            continue
        row.update({f"{pre}rmse_skf": _rmse(res.means, xs, 0),
                    f"{pre}rmse_bimodal_skf": _rmse(res.means, xs, 0, bim),
                    f"{pre}dist_skf": _rmse(res.means, exact, 0),
                    f"{pre}dist_bimodal_skf": _rmse(res.means, exact, 0, bim),
                    f"{pre}fallback": float(np.mean((res.fallback & ~16) != 0)),
                    f"{pre}grid": float(np.mean((res.fallback & 16) != 0))})
    return row


def _showcase_metrics(rows: Table, cfg: Config) -> dict:
    if not len(rows):
        return {}
    unit = "runs (paired, all settings)"
    out: dict = {"showcase_exact_rmse_gap_ukf": t_interval(
                     rows.column("rmse_ukf") - rows.column("rmse_exact"), unit=unit),
                 "showcase_exact_rmse_bimodal_gap_ukf": t_interval(
                     rows.column("rmse_bimodal_ukf") - rows.column("rmse_bimodal_exact"),
                     unit=unit)}
    for _, _, pre in SHOWCASE_READINGS:
        raised = int(np.sum(rows.column(f"{pre}raised")))
        ok = rows.where(**{f"{pre}raised": 0})
        out[f"showcase_{pre}raised_runs"] = Estimate.exact(raised)
        if not len(ok):
            continue
        out[f"showcase_{pre}fallback_step_fraction"] = float(np.mean(ok.column(f"{pre}fallback")))
        d = ok.column("rmse_ukf") - ok.column(f"{pre}rmse_skf")  # > 0 when the SKF wins
        out[f"showcase_{pre}rmse_gap_ukf"] = t_interval(d, unit=unit)
        out[f"showcase_{pre}rmse_bimodal_gap_ukf"] = t_interval(
            ok.column("rmse_bimodal_ukf") - ok.column(f"{pre}rmse_bimodal_skf"), unit=unit)
        # distance of the posterior mean to the exact filter's (> 0: the SKF is closer)
        for w in ("", "bimodal_"):
            out[f"showcase_{pre}exact_dist_{w}gap_ukf"] = t_interval(
                ok.column(f"dist_{w}ukf") - ok.column(f"{pre}dist_{w}skf"), unit=unit)
        if not pre:
            out["showcase_grid_step_fraction"] = float(np.mean(ok.column("grid")))
            for (p0, r), g in ok.groups("p0", "r").items():
                out[f"showcase_rmse_gap_ukf_p{p0:g}_r{r:g}"] = float(
                    np.mean(g.column("rmse_ukf") - g.column("rmse_skf")))
    return out


def _timing(cfg: Config) -> dict:
    """Seconds of the MaxEnt grid fit (a standard Gaussian) and of the score-matching fit
    (the SKF's closure; a uniform belief's sample moments) with a quartic basis, n = 3 over
    n = 2 (the score-matching fit is repeated 20 times to rise above the clock's
    resolution)."""
    mt, st = {}, {}
    for n in (2, 3):
        basis = full_basis(n, 4)
        mom = gaussian_moments(np.zeros(n), np.eye(n), basis.exponents)
        t0 = time.perf_counter()
        maxent_fit(mom, basis, grid_points=cfg.maxent_grid_points)
        mt[n] = time.perf_counter() - t0
        # a light-tailed (uniform) belief: a Gaussian's quartic coefficients vanish and
        # its fit is, rightly, refused as not integrable
        box = np.random.default_rng(n).uniform(-1.5, 1.5, size=(20_000, n))
        smom = sample_moments(box, score_matching_moments(basis))
        t0 = time.perf_counter()
        for _ in range(20):
            score_matching_fit(smom, basis)
        st[n] = time.perf_counter() - t0
    return {"maxent_time_ratio_n3_n2": float(mt[3] / mt[2]),
            "score_matching_time_ratio_n3_n2": float(st[3] / st[2])}


EXPERIMENT = ScoreKalman()
run = EXPERIMENT.run
