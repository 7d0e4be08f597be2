"""Samples used by adaptive change-point localisation versus its baselines.

Runs our procedure, uniform sampling with offline least-squares segmentation
(``uniform_ruptures``) and the simplified MCPI Track-and-Stop on the same instances and
noise seeds, and prints for each instance family the median number of queries and the ratio
method / ours (ratios > 1 mean the method needs more queries), with wrong answers and wall
time per run. Families: spread change points, and a clustered pair at several spacings.

    python benchmarks/changepoint_bandit.py [--tier smoke|small|paper]
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from neurips26.papers.changepoint_bandit import METHODS, QueryOracle, make_step_function

SIZES = {"smoke": (1e-2, 3), "small": (1e-3, 10), "paper": (1e-3, 100)}


def families(eta: float):
    yield "spread", {"layout": "spread", "min_spacing": 0.1}
    for k in (4, 16, 64):
        if k * eta > 0.1:  # the pair must fit between its neighbours
            continue
        yield f"clustered {k}eta", {"layout": "clustered", "min_spacing": k * eta}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tier", choices=sorted(SIZES), default="small")
    parser.add_argument("--num-change-points", type=int, default=3)
    parser.add_argument("--jump", type=float, default=0.5)
    parser.add_argument("--delta", type=float, default=0.01)
    args = parser.parse_args(argv)
    eta, runs = SIZES[args.tier]
    N = args.num_change_points
    print(f"tier={args.tier} N={N} jump={args.jump} delta={args.delta} eta={eta} runs={runs}")
    print(
        f"{'family':<16}{'method':<18}{'median queries':>15}{'ratio':>9}{'errors':>8}{'ms/run':>9}"
    )
    for fam, kw in families(eta):
        stats = {}
        for name, fn in METHODS.items():
            q, errors, t0 = [], 0, time.perf_counter()
            for s in range(runs):
                f = make_step_function(num_change_points=N, jump=args.jump, seed=s, **kw)
                res = fn(
                    QueryOracle(f, seed=s),
                    num_change_points=N,
                    eta=eta,
                    delta=args.delta,
                    max_queries=10**8,
                    on_budget="warn",
                )
                q.append(res.num_queries)
                errors += not res.correct(f.change_points, eta)
            stats[name] = (float(np.median(q)), errors, 1e3 * (time.perf_counter() - t0) / runs)
        ours = stats["ours"][0]
        for name, (m, errors, ms) in stats.items():
            print(f"{fam:<16}{name:<18}{m:>15.0f}{m / ours:>9.2f}{errors:>8}{ms:>9.1f}")


if __name__ == "__main__":
    main()
