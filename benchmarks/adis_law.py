"""ADIS-Law versus a grid search: training the grid against fitting the law and ranking.

In one process: trains the base run and the injection grid of a tier (branching from
the base run's checkpoints), then fits the law and ranks ``--candidates`` random
policies. Prints the grid's training time, the law's fit + ranking time, their ratio
and the time one more grid point would cost, all measured here (no cache).

    python benchmarks/adis_law.py [--tier smoke|small] [--candidates 1000]
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np

from neurips26.common.models import GPTConfig
from neurips26.papers.adis_law import InjectionPolicy, fit_adis_law, rank_policies
from neurips26.papers.adis_law.experiment import TIERS, _spec, grid_policies
from neurips26.papers.adis_law.training import base_runs, load_corpora, run_injection


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tier", choices=("smoke", "small"), default="smoke")
    parser.add_argument("--candidates", type=int, default=1000)
    args = parser.parse_args(argv)
    os.environ["NEURIPS26_NO_CACHE"] = "1"
    import torch

    torch.set_num_threads(1)
    cfg = TIERS[args.tier]
    spec = _spec(cfg)
    s = round(cfg.anneal_steps / spec.anneal_frac)
    corpora = load_corpora(general_chars=cfg.general_chars)
    model_cfg = GPTConfig(vocab_size=256, block_size=cfg.block_size, num_layers=cfg.num_layers,
                          num_heads=cfg.num_heads, dim=cfg.widths[0])
    tic = time.perf_counter()
    base = base_runs(model_cfg, corpora, spec, budgets=[s], fractions=cfg.fractions)
    base_s = time.perf_counter() - tic
    runs, tic = [base.trajectories[s]], time.perf_counter()
    for p in grid_policies(cfg):
        runs.append(run_injection(model_cfg, corpora, p, total_steps=s, base=base, spec=spec))
    grid_s = time.perf_counter() - tic
    rng = np.random.default_rng(0)
    cands = [InjectionPolicy(float(rng.uniform(0.25, 1)), float(rng.uniform(0.05, 0.9)),
                             float(rng.uniform(0.2, 1.2)) * cfg.peak_lr)
             for _ in range(args.candidates)]
    tic = time.perf_counter()
    fit = fit_adis_law(runs, restarts=cfg.restarts)
    fit_s = time.perf_counter() - tic
    tic = time.perf_counter()
    rank_policies(fit, cands, total_steps=4 * s, peak_lr=cfg.peak_lr, mu=cfg.mu)
    rank_s = time.perf_counter() - tic
    n = len(runs) - 1
    print(f"tier {args.tier}: base run {base_s:.1f} s; grid of {n} policies {grid_s:.1f} s "
          f"({grid_s / n:.2f} s a policy at S = {s})")
    print(f"law: fit {fit_s:.2f} s + ranking {args.candidates} candidates at 4S {rank_s:.2f} s")
    print(f"ratio (fit + ranking) / grid training: {(fit_s + rank_s) / grid_s:.3f}; "
          f"ranking cost per candidate / training cost per grid policy at S: "
          f"{rank_s / args.candidates / (grid_s / n):.2e}")


if __name__ == "__main__":
    from _harness import run_pinned

    run_pinned(main)
