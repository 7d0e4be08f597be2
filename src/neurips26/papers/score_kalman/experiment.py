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
and a quartic basis, and time the MaxEnt grid fit at n = 2 and 3. Times enter only as
ratios or slopes measured in this run (volatile metrics).

Why the RMSE claims do not reproduce here (the numbers are in the store and the
report): with the spec's noise levels (process 0.1, observations 0.1 every 0.1 time
units) the sharp position observations resolve the double well within the burn-in, and
from then on every posterior is close to Gaussian; the SKF's fitted non-Gaussian
coefficients are then small (the fallback is rare: the beliefs are representable, just
nearly Gaussian), so the SKF behaves like a well-closed Gaussian filter and its RMSE
sits within run-to-run noise of the EKF's and UKF's (the paired tests do separate it
from the 2,000-particle PF, which degenerates as n grows, and at the largest n from
the 100-member EnKF, whose sampling error grows with n). Both RMSE claims take the
worst case over every n and baseline, so a single near-tie (typically the UKF or EKF
at small n, where a Gaussian filter is nearly exact for these sharp observations)
decides them. The paper's margin may come from harder regimes (broader observation
noise, longer gaps between observations, bimodal posteriors) whose exact settings the
abstract does not give; we kept the spec's benchmark rather than tune one until the
SKF wins. The paper's n = 20 runs at the small tier (ten oscillators, 30 steps, 10
paired runs); the paper tier adds n = 12 and 16 and longer runs.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np
from scipy import stats

from neurips26.common.experiment import RunResult, param
from neurips26.common.plotting import figure_png, new_figure
from neurips26.common.stats import seed_ci

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
    num_substeps: int = param(2, help="integration substeps per filter step", min=1)
    truncation: int = param(20, help="moment order of the closure", min=1)
    baseline_substeps: int = param(10, help="integration substeps of the baselines", min=1)
    num_members: int = param(100, help="ensemble members of the EnKF", min=1)
    num_particles: int = param(2000, help="particles of the particle filter", min=1)
    kf_check_steps: int = param(50, help="steps of the linear-Gaussian Kalman check", min=0)
    maxent_grid_points: int = param(40, help="grid points per axis of the MaxEnt fit", min=1)
    time_maxent: bool = param(True, help="time the MaxEnt closure against score matching")


TIERS = {
    "smoke": Config(num_nodes=(1,), num_steps=10, num_runs=1, burn_in=3, num_particles=500,
                    kf_check_steps=20, time_maxent=False),
    "small": Config(),  # n = 2, 4, 8, 20; 30 steps; 10 paired runs
    "paper": Config(num_nodes=(1, 2, 4, 6, 8, 10), num_steps=100, num_runs=50,
                    num_particles=10000),
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


def _rmse(means: np.ndarray, xs: np.ndarray, burn: int) -> float:
    return float(np.sqrt(np.mean((means[burn:, ::2] - xs[burn:, ::2]) ** 2)))


#: Every metric name ``run()`` can return (``*`` stands for a family of names, such as
#: one per size or data set); claims name theirs exactly. Checked by the contract test.
METRICS: tuple[str, ...] = (
    "gaussian_kf_max_abs_diff",
    "quartic_kf_max_abs_diff",
    "maxent_time_ratio_n3_n2",
    "rmse_min_gap",
    "rmse_min_gap_ci",
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
)


#: Figure captions for the report: what is plotted and the claims it illustrates.
CAPTIONS: dict[str, str] = {
    "rmse_time_vs_n": (
        "Left: position RMSE of SKF, EKF, UKF, EnKF and PF against the state dimension n "
        "(claims lower_rmse, lower_rmse_significant). Right: milliseconds per filter "
        "step, log scale (claim linear_algebra_cost; machine-dependent)."
    ),
}


def run(config: Config) -> RunResult:
    cfg = config
    rng = np.random.default_rng(cfg.seed)
    metrics: dict = {}
    volatile: list[str] = []
    notes: list[str] = []
    rows, time_rows = [], []
    rmse_all: dict[int, dict[str, list[float]]] = {}
    skf_time: dict[int, float] = {}
    min_gap, max_p, gap_ci = np.inf, 0.0, np.inf
    fallback_max = 0.0
    finite_frac_last = np.nan
    for N in cfg.num_nodes:
        n = 2 * N
        bench = coupled_duffing(num_nodes=N, coupling=cfg.coupling, sigma=cfg.sigma,
                                obs_noise=cfg.obs_noise, dt=0.1, seed=cfg.seed)
        common = dict(model=bench.model, H=bench.H, R=bench.R, dt=bench.dt,
                      num_substeps=cfg.baseline_substeps)
        res = {k: [] for k in ("skf", *BASELINES)}
        times = {k: [] for k in ("skf", *BASELINES)}
        failures: list[str] = []
        try:
            skf = ScoreKalmanFilter(basis=oscillator_basis(n), model=bench.model, H=bench.H,
                                    R=bench.R, dt=bench.dt, num_substeps=cfg.num_substeps,
                                    truncation=cfg.truncation)
            init = bench.prior.moments(skf.moment_exponents)
        except ValueError as err:  # Stein closure not determined at plan time
            skf, init = None, None
            failures = [f"plan: {err}"] * cfg.num_runs
        paired = {k: [] for k in BASELINES}
        finished, gaps, regularised = 0, [], []
        for _run in range(cfg.num_runs):
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
            skf_rmse = np.inf  # a failed run is ranked worst
            if skf is not None:
                try:
                    sres = skf.filter(ys, init_moments=init)
                    skf_rmse = _rmse(sres.means, xs, cfg.burn_in)
                    times["skf"].append(float(np.median(sres.step_time_s)))
                    finished += int(np.all(np.isfinite(sres.means)))
                    gaps.append(float(np.max(sres.truncation_gap)))
                    if sres.regularised is not None:
                        regularised.append(float(np.mean(sres.regularised)))
                    ok = np.all(np.isfinite(sres.means)) and np.all(sres.cond < 1e12)
                    if not ok:
                        failures.append("cond(A) >= 1e12")
                        skf_rmse = np.inf
                except ValueError as err:
                    failures.append(str(err))
            for k, v in out.items():
                res[k].append(_rmse(v.means, xs, cfg.burn_in))
                times[k].append(float(np.median(v.step_time_s)))
                paired[k].append((skf_rmse, res[k][-1]))
            res["skf"].append(skf_rmse)
        rmse_all[n] = res
        frac = 1.0 - len(failures) / cfg.num_runs
        finite_frac_last = frac
        metrics[f"skf_finite_fraction_n{n}"] = float(frac)
        if failures:
            notes.append(f"n={n}: {len(failures)}/{cfg.num_runs} SKF runs failed; first: "
                         f"{failures[0][:200]}")
        metrics[f"skf_finished_fraction_n{n}"] = finished / cfg.num_runs  # finite, any cond
        if gaps:
            metrics[f"skf_truncation_gap_max_n{n}"] = float(max(gaps))
        if regularised:
            # steps whose prior fit had to drop a block's non-Gaussian coefficients
            # (the block-wise reduction to the Gaussian sub-family, the fallback)
            metrics[f"skf_fallback_step_fraction_n{n}"] = float(np.mean(regularised))
            fallback_max = max(fallback_max, float(np.mean(regularised)))
        row = {"n": n, "skf_ok": f"{cfg.num_runs - len(failures)}/{cfg.num_runs}",
               "skf_finished": f"{finished}/{cfg.num_runs}"}
        for k, v in res.items():
            arr = np.asarray(v, dtype=float)
            row[f"rmse_{k}"] = float(np.mean(arr))
            metrics[f"rmse_{k}_n{n}"] = row[f"rmse_{k}"]
        for k in BASELINES:
            pr = np.asarray(paired[k])
            gap = float(pr[:, 1].mean() - pr[:, 0].mean())  # -inf if any SKF run failed
            if gap < min_gap or not np.isfinite(min_gap):
                min_gap = gap
                d = pr[:, 1] - pr[:, 0]  # paired per-run gaps
                gap_ci = seed_ci(d).half_width if np.isfinite(d).all() else np.inf
            if np.isfinite(pr[:, 0]).all() and len(pr) > 1 and np.any(pr[:, 0] != pr[:, 1]):
                p = float(stats.wilcoxon(pr[:, 0], pr[:, 1], alternative="less").pvalue)
            else:
                p = 1.0  # a failed SKF run loses every pairing
            max_p = max(max_p, p)
            row[f"wilcoxon_p_{k}"] = p
        rows.append(row)
        trow = {"n": n}
        for k, v in times.items():
            trow[f"step_ms_{k}"] = float(np.median(v) * 1e3) if v else float("nan")
        if times["skf"]:
            skf_time[n] = float(np.median(times["skf"]))
            metrics[f"skf_pf_time_ratio_n{n}"] = skf_time[n] / float(np.median(times["pf"]))
            volatile.append(f"skf_pf_time_ratio_n{n}")
        time_rows.append(trow)
    if len(cfg.num_nodes):
        metrics["rmse_min_gap"] = float(min_gap)
        metrics["rmse_min_gap_ci"] = float(gap_ci)
        metrics["skf_fallback_step_fraction"] = float(fallback_max)
    if np.isfinite(max_p) and len(cfg.num_nodes) and max_p > 0:
        metrics["wilcoxon_max_p"] = float(max_p)
    metrics["skf_finite_fraction_largest_n"] = float(finite_frac_last)
    if cfg.kf_check_steps:
        g2, g4 = _gaussian_check(cfg, rng)
        metrics["gaussian_kf_max_abs_diff"] = g2
        metrics["quartic_kf_max_abs_diff"] = g4
    else:
        metrics["gaussian_kf_max_abs_diff"] = metrics["quartic_kf_max_abs_diff"] = float("nan")
    if len(skf_time) >= 2:
        ns = np.array(sorted(skf_time))
        slope = np.polyfit(np.log(ns), np.log([skf_time[k] for k in ns]), 1)[0]
        metrics["skf_time_slope"] = float(slope)
        volatile.append("skf_time_slope")
    if cfg.time_maxent:
        mt = {}
        for n in (2, 3):
            basis = full_basis(n, 4)
            mom = gaussian_moments(np.zeros(n), np.eye(n), basis.exponents)
            t0 = time.perf_counter()
            maxent_fit(mom, basis, grid_points=cfg.maxent_grid_points)
            mt[n] = time.perf_counter() - t0
        metrics["maxent_time_ratio_n3_n2"] = float(mt[3] / mt[2])
        volatile.append("maxent_time_ratio_n3_n2")
    figures = {}
    fig, axes = new_figure(2)
    ns = sorted(rmse_all)
    for k in ("skf", *BASELINES):
        vals = [np.mean(rmse_all[n][k]) if np.isfinite(rmse_all[n][k]).all() else np.nan
                for n in ns]  # failed SKF runs (infinite RMSE) are not drawn
        axes[0].plot(ns, vals, "o-", label=k.upper())
        tv = [r[f"step_ms_{k}"] for r in time_rows]
        axes[1].plot(ns, tv, "o-", label=k.upper())
    axes[0].set(xlabel="state dimension n", ylabel="position RMSE", title="RMSE vs n")
    axes[1].set(xlabel="state dimension n", ylabel="ms per step", yscale="log",
                title="time per predict-update step")
    axes[0].legend()
    figures["rmse_time_vs_n"] = figure_png(fig)
    return RunResult(metrics=metrics, volatile=tuple(volatile),
                     tables={"rmse": rows, "step_time": time_rows}, figures=figures,
                     captions=CAPTIONS,
                     notes=tuple(notes))
