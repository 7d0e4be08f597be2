"""Samples used by adaptive change-point localisation versus its baselines.

Runs our procedure, uniform sampling with offline least-squares segmentation
(``uniform_ruptures``) and the simplified MCPI Track-and-Stop on the same instances and
noise seeds, and prints for each instance family the median number of queries, the ratio
method / ours (ratios > 1 mean the method needs more queries than ours), and each method's
empirical error rate beside its nominal ``delta`` (equal precision and confidence means
comparing at matched error rates: a method that errs more often than ``delta`` is flagged).
Each baseline runs at its own best schedule: the uniform baseline tops up in batches
growing by 1.25x (as ours) and certifies with the same stitched confidence sequences and
paired test; MCPI samples at its own tracking proportions. Families: spread change points,
and a clustered pair at several spacings. The last lines say whether the goal of issue 13
(our median queries at most MCPI's in every family, at matched error rates) is met.

    python benchmarks/changepoint_bandit.py [--tier smoke|small|paper]
"""

from __future__ import annotations

import argparse
import math
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
    parser.add_argument("--runs", type=int, default=None, help="runs per family (tier default)")
    args = parser.parse_args(argv)
    eta, runs = SIZES[args.tier]
    runs = args.runs or runs
    N, delta = args.num_change_points, args.delta
    print(f"tier={args.tier} N={N} jump={args.jump} delta={delta} eta={eta} runs={runs}")
    print(
        f"{'family':<16}{'method':<18}{'median queries':>15}{'ratio':>9}{'errors':>8}"
        f"{'err rate':>10}{'ms/run':>9}"
    )
    goal = []
    # an error rate is "above delta" when it exceeds delta by 3 binomial standard errors
    slack = delta + 3 * math.sqrt(delta * (1 - delta) / runs)
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
                    delta=delta,
                    max_queries=10**8,
                    on_budget="warn",
                )
                q.append(res.num_queries)
                errors += not res.correct(f.change_points, eta)
            stats[name] = (float(np.median(q)), errors, 1e3 * (time.perf_counter() - t0) / runs)
        ours = stats["ours"][0]
        for name, (m, errors, ms) in stats.items():
            flag = " >delta" if errors / runs > slack else ""
            print(
                f"{fam:<16}{name:<18}{m:>15.0f}{m / ours:>9.2f}{errors:>8}"
                f"{errors / runs:>10.3f}{ms:>9.1f}{flag}"
            )
        goal.append((fam, stats["mcpi"][0] / ours, stats["ours"][1], stats["mcpi"][1]))
    print()
    for fam, ratio, e_ours, e_mcpi in goal:
        print(
            f"goal {fam:<16} mcpi / ours = {ratio:5.2f}  errors ours {e_ours}/{runs}, "
            f"mcpi {e_mcpi}/{runs}: {'met' if ratio >= 1 else 'NOT met'}"
        )
    met = all(r >= 1 for _, r, _, _ in goal)
    print(
        f"goal (our median queries <= MCPI's in every family at eta={eta:g}, delta={delta:g}): "
        f"{'met' if met else 'NOT met'}"
    )


if __name__ == "__main__":
    main()
