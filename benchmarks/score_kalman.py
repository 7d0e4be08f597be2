"""Score Kalman Filter: step time vs baselines as n grows, and MaxEnt vs SKF fit time.

Run: ``python benchmarks/score_kalman.py [--tier small|paper]``. Prints, in one run,
ms per predict-update step and the RMSE of the filtered means against the simulated
states for SKF, EKF, UKF, EnKF and PF on coupled Duffing networks (n = 2, 4, 8 at small;
2, 4, 8, 12, 20 at paper; SKF entries say why when the filter fails), the PF/SKF time
ratio, and the time of one MaxEnt grid fit versus one score-matching fit at n = 1, 2, 3.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from neurips26.papers.score_kalman import (
    ScoreKalmanFilter,
    coupled_duffing,
    ekf,
    enkf,
    full_basis,
    gaussian_moments,
    maxent_fit,
    oscillator_basis,
    particle_filter,
    score_matching_fit,
    score_matching_moments,
    ukf,
)


def _record(name: str, res, xs: np.ndarray, cells: dict, times: dict) -> None:
    """Median ms per step and the RMSE of the filtered means against the true states."""
    times[name] = float(np.median(res.step_time_s) * 1e3)
    rmse = float(np.sqrt(np.mean((res.means - xs) ** 2)))
    cells[name] = f"{times[name]:8.2f} /{rmse:6.3f}"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--tier", default="small", choices=("small", "paper"))
    args = ap.parse_args()
    nodes = (1, 2, 4) if args.tier == "small" else (1, 2, 4, 6, 10)
    steps = 10
    rng = np.random.default_rng(0)
    names = ("skf", "ekf", "ukf", "enkf", "pf")
    print("ms per step / RMSE of the filtered means")
    print(f"{'n':>3} " + " ".join(f"{k.upper():>16}" for k in names) + "  PF/SKF time")
    for N in nodes:
        b = coupled_duffing(num_nodes=N, sigma=0.1, obs_noise=0.1)
        xs, ys = b.simulate(steps, rng)
        kw = dict(model=b.model, H=b.H, R=b.R, dt=b.dt)
        cells: dict[str, str] = {}
        times: dict[str, float] = {}
        for name, f in (("ekf", ekf), ("ukf", ukf), ("enkf", enkf), ("pf", particle_filter)):
            _record(name, f(ys, b.prior.mean, b.prior.cov, **kw), xs, cells, times)
        try:
            skf = ScoreKalmanFilter(basis=oscillator_basis(2 * N), num_substeps=2, **kw)
            res = skf.filter(ys, init_moments=b.prior.moments(skf.moment_exponents))
            _record("skf", res, xs, cells, times)
            ratio = f"{times['pf'] / times['skf']:.2f}"
        except ValueError as err:
            cells["skf"], ratio = f"{'failed':>16}", f"n/a ({str(err)[:60]})"
        print(f"{2 * N:>3} " + " ".join(f"{cells[k]:>16}" for k in names) + f"  {ratio}")
    print("\nfit time: MaxEnt (grid 40^n) vs score matching, full quartic basis")
    for n in (1, 2, 3):
        basis = full_basis(n, 4)
        mom = gaussian_moments(np.zeros(n), np.eye(n), score_matching_moments(basis))
        t0 = time.perf_counter()
        maxent_fit(mom, basis, grid_points=40)
        t_me = time.perf_counter() - t0
        t0 = time.perf_counter()
        for _ in range(20):
            try:
                score_matching_fit(mom, basis)
            except ValueError:
                pass  # Gaussian moments fit a zero quartic: timing only
        t_sm = (time.perf_counter() - t0) / 20
        print(f"n={n}: MaxEnt {t_me * 1e3:9.2f} ms, score matching {t_sm * 1e3:7.3f} ms, "
              f"ratio {t_me / t_sm:9.1f}")


if __name__ == "__main__":
    main()
