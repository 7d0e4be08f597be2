"""BETA against zeroth-order prompt tuning: API calls, accuracy and latency per sample.

In one process: trains (or loads from the cache) a tier's black box and steering model
for one data set, corrupts one test stream, and adapts to it with no adaptation, BETA and
ZOO at q in {5, 10, 25}. Prints, per method, the counted API calls per sample, accuracy,
wall time per sample, the time it adds to the black box's own forward, and that added
time as a multiple of the black box's forward time per sample (all measured here, so only
the ratios are comparable across machines; the call counts are exact). With ``--http``
the black box runs in another process behind a local HTTP endpoint.

    python benchmarks/beta_tta.py [--tier smoke|small] [--corruption contrast]
                                  [--severity 5] [--http]
"""

from __future__ import annotations

import argparse

import numpy as np
import torch

from neurips26.papers.beta_tta import (
    BETA,
    CORRUPTIONS,
    BlackBoxAPI,
    BlackBoxServer,
    NoAdaptation,
    ZOOPrompt,
    corrupt,
    make_stream,
)
from neurips26.papers.beta_tta.experiment import TIERS, _data, _train_net, _tune


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tier", choices=("smoke", "small"), default="smoke")
    parser.add_argument("--corruption", choices=tuple(CORRUPTIONS), default="defocus_blur")
    parser.add_argument("--severity", type=int, default=5)
    parser.add_argument("--http", action="store_true", help="black box behind HTTP")
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    cfg = TIERS[args.tier]
    name = cfg.datasets[0]
    ds = _data(name, cfg)
    black = _train_net(name, cfg.blackbox_channels, ds, cfg, "blackbox")
    steer = _train_net(name, cfg.steering_channels, ds, cfg, "steering")
    tuned = _tune(ds, black, steer, cfg, "cpu")  # each method's step size, on tuning seeds
    rng = np.random.default_rng(0)
    idx = rng.choice(len(ds.y_test), size=min(cfg.num_test, len(ds.y_test)), replace=False)
    x = corrupt(ds.x_test[idx], args.corruption, args.severity, rng=rng)
    stream = make_stream(x, ds.y_test[idx], batch_size=cfg.batch_size)
    shape = ds.image_shape

    def measure(make_api):
        methods = [("none", lambda a: NoAdaptation(a)),
                   ("BETA", lambda a: BETA(a, steer, lr=tuned["beta"], keep=cfg.keep,
                                           num_views=cfg.num_views, steps=cfg.beta_steps,
                                           seed=0))]
        methods += [(f"ZOO q={q}", lambda a, q=q: ZOOPrompt(a, num_directions=q,
                                                            lr=tuned["zoo"][0],
                                                            perturbation=tuned["zoo"][1],
                                                            seed=0))
                    for q in (5, 10, 25)]  # fmt: skip
        rows = []
        for label, make in methods:
            make(make_api()).run(stream[:1])  # warm-up: torch's lazy autograd/optimizer set-up
            res = make(make_api()).run(stream)
            rows.append((label, res))
        return rows

    if args.http:
        with BlackBoxServer(black, input_shape=shape) as server:
            rows = measure(server.client)
    else:
        rows = measure(lambda: BlackBoxAPI(black, input_shape=shape))
    fwd = rows[0][1].api_time_per_sample  # the black box's own forward (or round trip)
    beta_calls = rows[1][1].calls_per_sample
    where = "HTTP endpoint" if args.http else "in-process API"
    print(f"{name}, {args.corruption} severity {args.severity}, {rows[0][1].num_samples} "
          f"samples, black box via {where}: forward {1e3 * fwd:.3f} ms/sample")
    print(f"{'method':<10} {'calls/sample':>12} {'acc':>6} {'ms/sample':>10} "
          f"{'added ms':>9} {'added/fwd':>9} {'calls/BETA':>10}")
    for label, r in rows:
        added = r.time_per_sample - fwd  # what the method costs beyond one forward
        print(f"{label:<10} {r.calls_per_sample:>12.1f} {r.accuracy:>6.3f} "
              f"{1e3 * r.time_per_sample:>10.3f} {1e3 * added:>9.3f} {added / fwd:>9.2f} "
              f"{r.calls_per_sample / beta_calls:>10.1f}")


if __name__ == "__main__":
    from _harness import run_pinned

    run_pinned(main)
