"""AgentWeave versus disaggregated and aggregated-lockstep serving, side by side.

Every server runs on the simulated clock with KV-cache memory and the one context cost
shared by all architectures. Per workload it prints each server's measured capacity
(the offered mix's completion rate under the same saturating arrivals), and its mean /
P90 latency at 70% of its *own* capacity, with the ratios AgentWeave / baseline
(capacity) and baseline / AgentWeave (latency); ratios > 1 favour AgentWeave. The last
line per workload compares AgentWeave with the best baseline on each metric (the one
with the highest capacity, the lowest mean and the lowest P90 latency, each named),
which is what the paper's 1.81x / 2.45x / 2.04x are measured against. Also prints the
simulator's own speed (simulated requests per CPU second).

    python benchmarks/agentweave.py [--tier smoke|small|paper] [--workloads mix,react]
"""

from __future__ import annotations

import argparse
import time

from neurips26.papers.agentweave import TEMPLATES, AgentWeaveScheduler, poisson_arrivals, simulate
from neurips26.papers.agentweave.experiment import (
    BASELINES,
    SERVERS,
    TIERS,
    best_baselines,
    compare,
)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tier", choices=sorted(TIERS), default="small")
    parser.add_argument("--workloads", default="mix,react,rag,debate,code")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    cfg = TIERS[args.tier]
    workloads = [w for w in args.workloads.split(",") if w]
    if args.tier == "smoke":
        workloads = list(cfg.workloads)
    f = cfg.load
    print(
        f"tier={args.tier} horizon={cfg.horizon:g}s seed={args.seed} "
        f"latency at {f:g} x own capacity"
    )
    head = f"{'workload':<9}{'server':<15}{'cap req/s':>10}{'mean s':>9}{'p90 s':>9}"
    print(head + f"{'cap x':>8}{'mean x':>8}{'p90 x':>8}")
    for w in workloads:
        r = compare(w, seed=args.seed, cfg=cfg, loads=(f,), claim4=False)
        ours = r["adaptive"]
        for name in SERVERS:
            s = r[name]
            mean, p90 = s["latency"][f]
            line = f"{w:<9}{name:<15}{s['throughput']:>10.2f}{mean:>9.2f}{p90:>9.2f}"
            if name in BASELINES:
                line += f"{ours['throughput'] / s['throughput']:>8.2f}"
                line += f"{mean / ours['latency'][f][0]:>8.2f}"
                line += f"{p90 / ours['latency'][f][1]:>8.2f}"
            print(line)
        best = best_baselines(r, f)
        b_thr, b_mean, b_p90 = best["throughput"], best["mean_latency"], best["p90_latency"]
        print(
            f"{w:<9}{'vs best':<15}"
            f"cap x{ours['throughput'] / r[b_thr]['throughput']:.2f} ({b_thr}), "
            f"mean x{r[b_mean]['latency'][f][0] / ours['latency'][f][0]:.2f} ({b_mean}), "
            f"p90 x{r[b_p90]['latency'][f][1] / ours['latency'][f][1]:.2f} ({b_p90}) "
            f"[paper: 1.81 / 2.45 / 2.04; {r['devices']} devices]"
        )
    n = 10_000 if args.tier != "smoke" else 500
    reqs = poisson_arrivals(list(TEMPLATES.values()), rate=4.0, horizon=n / 4.0, seed=args.seed)
    c0 = time.process_time()
    simulate(AgentWeaveScheduler(num_workers=8), reqs, horizon=n / 4.0)
    cpu = time.process_time() - c0
    print(
        f"simulator: {len(reqs)} requests (mix, 8 devices) in {cpu:.1f} CPU s "
        f"= {len(reqs) / cpu:,.0f} requests per CPU second"
    )


if __name__ == "__main__":
    from _harness import run_pinned

    run_pinned(main)
