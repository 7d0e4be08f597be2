"""λ6★ item selection: Woodbury path vs the dense K × K path, side by side.

The paper makes no speed claim; this checks the spec's budget and shows why the Woodbury
path matters in the K >> N regime. For each K the same 0/1 score matrix (N models × K
items) goes through ``select_items(..., rule="greedy", solver=...)`` with both solvers
(the greedy rule: the one with a per-step cost; the default strata rule fits λ6★ once); the
dense path
(a K × K inverse and a precomputed K × K covariance) is refused above K = 2000, so at
K = 40,000 only the Woodbury path runs.

Run: ``python benchmarks/lambda6_star.py [--tier smoke|small]``.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from neurips26.papers.lambda6_star import lambda6_star, select_items

TIERS = {
    "smoke": {"num_models": 50, "items": (500, 1000, 4000), "budget": 50},
    "small": {"num_models": 100, "items": (1000, 2000, 40000), "budget": 200},
}
DENSE_MAX = 2000


def _greedy(y: np.ndarray, budget: int, solver: str):
    return select_items(y, budget, rule="greedy", solver=solver)


def _time(fn, repeat: int = 1) -> float:
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


def main(argv: list[str] | None = None) -> list[dict]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tier", choices=sorted(TIERS), default="small")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    cfg = TIERS[args.tier]
    rng = np.random.default_rng(args.seed)
    n, budget = cfg["num_models"], cfg["budget"]
    rows = []
    print(f"N = {n} models, greedy budget k = {budget}")
    header = f"{'K':>7} {'woodbury s':>11} {'dense s':>9} {'dense/woodbury':>15} {'same picks':>10}"
    print(header)
    for k in cfg["items"]:
        theta = rng.normal(size=(n, 1))
        y = (theta + rng.normal(size=(n, k)) > rng.normal(size=(1, k))).astype(float)
        out: dict = {}
        t_w = _time(lambda y=y, out=out: out.update(w=_greedy(y, budget, "woodbury")))
        row = {"num_items": k, "woodbury_s": t_w, "dense_s": None, "ratio": None, "same": None}
        if k <= DENSE_MAX:
            t_d = _time(lambda y=y, out=out: out.update(d=_greedy(y, budget, "dense")))
            same = bool(np.array_equal(out["w"].indices, out["d"].indices))
            row.update(dense_s=t_d, ratio=t_d / t_w, same=same)
            print(f"{k:>7} {t_w:>11.3f} {t_d:>9.3f} {t_d / t_w:>15.1f} {same!s:>10}")
        else:
            print(f"{k:>7} {t_w:>11.3f} {'refused':>9} {'(K > 2000)':>15} {'-':>10}")
        rows.append(row)
    k_big = cfg["items"][-1]
    y = (rng.normal(size=(n, 1)) + rng.normal(size=(n, k_big)) > 0).astype(float)
    t = _time(lambda: lambda6_star(y))
    print(f"lambda6* alone at K = {k_big}: {t:.3f} s (Woodbury, O(K N^2))")
    return rows


if __name__ == "__main__":
    from _harness import run_pinned

    run_pinned(main)
