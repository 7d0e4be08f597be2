"""AgentWeave versus disaggregated and aggregated-lockstep serving, side by side.

Every server sees the same arrival sequences (common random numbers) on the simulated
clock. Prints, per workload, saturated throughput and mean / P90 latency at 70% of the
aggregated baseline's capacity, and the ratios AgentWeave / baseline (throughput) and
baseline / AgentWeave (latency); ratios > 1 favour AgentWeave. A last line per workload
compares AgentWeave with the strongest baseline on each metric (the highest throughput,
the lowest mean and P90 latency, each named). Also prints the simulator's own speed
(simulated requests per CPU second).

    python benchmarks/agentweave.py [--tier smoke|small|paper] [--workloads mix,react]
"""

from __future__ import annotations

import argparse
import time

from neurips26.papers.agentweave import TEMPLATES, AgentWeaveScheduler, poisson_arrivals, simulate
from neurips26.papers.agentweave.experiment import BASELINES, SERVERS, TIERS, compare


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
    print(f"tier={args.tier} devices={cfg.num_devices} horizon={cfg.horizon:g}s seed={args.seed}")
    head = f"{'workload':<9}{'server':<15}{'thr req/s':>10}{'mean s':>9}{'p90 s':>9}"
    print(head + f"{'thr x':>8}{'mean x':>8}{'p90 x':>8}")
    for w in workloads:
        r = compare(w, seed=args.seed, cfg=cfg)
        ours = r["adaptive"]
        for name in SERVERS:
            s = r[name]
            line = f"{w:<9}{name:<15}{s['throughput']:>10.2f}{s['mean_latency']:>9.2f}"
            line += f"{s['p90_latency']:>9.2f}"
            if name in BASELINES:
                line += f"{ours['throughput'] / s['throughput']:>8.2f}"
                line += f"{s['mean_latency'] / ours['mean_latency']:>8.2f}"
                line += f"{s['p90_latency'] / ours['p90_latency']:>8.2f}"
            print(line)
        best_thr = max(BASELINES, key=lambda b: r[b]["throughput"])
        best_mean = min(BASELINES, key=lambda b: r[b]["mean_latency"])
        best_p90 = min(BASELINES, key=lambda b: r[b]["p90_latency"])
        print(
            f"{w:<9}{'vs best':<15}"
            f"thr x{ours['throughput'] / r[best_thr]['throughput']:.2f} ({best_thr}), "
            f"mean x{r[best_mean]['mean_latency'] / ours['mean_latency']:.2f} ({best_mean}), "
            f"p90 x{r[best_p90]['p90_latency'] / ours['p90_latency']:.2f} ({best_p90})"
        )
    n = 10_000 if args.tier != "smoke" else 500
    reqs = poisson_arrivals(list(TEMPLATES.values()), rate=4.0, horizon=n / 4.0, seed=args.seed)
    c0 = time.process_time()
    simulate(AgentWeaveScheduler(num_workers=4), reqs, horizon=n / 4.0)
    cpu = time.process_time() - c0
    print(
        f"simulator: {len(reqs)} requests (mix, 4 devices, 80% load) in {cpu:.1f} CPU s "
        f"= {len(reqs) / cpu:,.0f} requests per CPU second"
    )


if __name__ == "__main__":
    main()
