"""Samples used by full-matrix Condorcet identification versus its baselines.

Runs every method on the same instances and per-pair duel streams and prints the median
number of duels and the ratio baseline / ours for each instance family (ratios > 1 mean
the baseline needs more duels). Also reports wrong answers and wall time per run. RUCB has
no delta guarantee (its confidence level grows like log t only), so it may use fewer duels.

    python benchmarks/condorcet_dueling.py [--tier smoke|small|paper]
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from neurips26.papers.condorcet_dueling import (
    INSTANCE_KINDS,
    METHODS,
    DuelEnvironment,
    condorcet_winner,
    make_instance,
)

SIZES = {"smoke": ((6,), 3), "small": ((10, 20), 10), "paper": ((20, 50, 100, 200), 50)}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tier", choices=sorted(SIZES), default="small")
    parser.add_argument("--winner-gap", type=float, default=0.01)
    parser.add_argument("--delta", type=float, default=0.05)
    args = parser.parse_args(argv)
    Ks, runs = SIZES[args.tier]
    print(f"tier={args.tier} winner_gap={args.winner_gap} delta={args.delta} runs={runs}")
    header = f"{'family':<18}{'K':>4}  {'method':<12}{'median duels':>14}{'ratio':>9}"
    header += f"{'errors':>8}{'ms/run':>9}"
    print(header)
    for kind in INSTANCE_KINDS:
        for K in Ks:
            stats = {}
            for name, fn in METHODS.items():
                duels, errors, t0 = [], 0, time.perf_counter()
                for s in range(runs):
                    Q = make_instance(kind, num_arms=K, winner_gap=args.winner_gap, seed=s)
                    kw = {"seed": s} if name == "rucb" else {"seed": s, "delta": args.delta}
                    res = fn(DuelEnvironment(Q, seed=s), **kw)
                    duels.append(res.num_duels)
                    errors += res.winner != condorcet_winner(Q)
                ms = 1e3 * (time.perf_counter() - t0) / runs
                stats[name] = (float(np.median(duels)), errors, ms)
            ours = stats["full_matrix"][0]
            for name, (m, errors, ms) in stats.items():
                row = f"{kind:<18}{K:>4}  {name:<12}{m:>14.0f}{m / ours:>9.2f}"
                print(row + f"{errors:>8}{ms:>9.1f}")


if __name__ == "__main__":
    from _harness import run_pinned

    run_pinned(main)
