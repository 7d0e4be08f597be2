"""Benchmark: saved-activation bytes and step time against depth, BLANP vs backprop.

For MLPs of width ``--width`` and depth in ``--depths`` (MNIST-sized 784-d input, batch
``--batch``), one training step of backprop, BLANP and BLANP-Exact is run under
``torch.autograd.graph.saved_tensors_hooks``: the peak of the bytes autograd holds for the
backward pass is counted (deterministic; the claim uses these counts), then ``--repeats``
steps are timed (machine-dependent; printed only as ratios to backprop at the same depth).
BLANP costs two extra forward passes per layer, so on a CPU it is expected to be slower
per step; no pipelining across layers is attempted here.

Usage::

    python benchmarks/blanp.py [--depths 2 4 8 16] [--width 256] [--batch 128]
                               [--repeats 5] [--device cpu|cuda]
"""

from __future__ import annotations

import argparse

import torch

from neurips26.common.torch import get_device
from neurips26.papers.blanp import local_net, make_model, measure_step

METHODS = ("backprop", "blanp", "exact")


def main(argv=None) -> list[dict]:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--depths", type=int, nargs="+", default=[2, 4, 8, 16])
    ap.add_argument("--width", type=int, default=256)
    ap.add_argument("--batch", type=int, default=128)
    ap.add_argument("--input-dim", type=int, default=784)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--device", default="cpu", choices=("cpu", "cuda"))
    args = ap.parse_args(argv)
    dev = get_device(args.device)
    g = torch.Generator().manual_seed(0)
    x = torch.rand(args.batch, args.input_dim, generator=g).to(dev)
    y = torch.randint(0, 10, (args.batch,), generator=g).to(dev)
    rows = []
    for depth in args.depths:
        cost = {}
        for method in METHODS:
            model = make_model("mlp", (args.input_dim,), (args.width,) * depth, 10, seed=0)
            if method != "backprop":
                model = local_net(model, example=x[:2].cpu())
            model.to(dev)
            cost[method] = measure_step(model, x, y, mode=method if method != "backprop"
                                        else "blanp", repeats=args.repeats)  # fmt: skip
        for method in METHODS:
            rows.append({"depth": depth, "method": method,
                         "peak_saved_bytes": cost[method].peak_bytes,
                         "bytes_vs_backprop": cost[method].peak_bytes
                         / cost["backprop"].peak_bytes,
                         "time_vs_backprop": cost[method].seconds
                         / cost["backprop"].seconds})  # fmt: skip
    base = {r["method"]: r["peak_saved_bytes"] for r in rows if r["depth"] == min(args.depths)}
    vs = f"vs depth {min(args.depths)}"
    print(f"{'depth':>5} {'method':>9} {'saved bytes':>12} {vs:>11} {'bytes/bp':>9} {'time/bp':>8}")
    for r in rows:
        print(f"{r['depth']:>5} {r['method']:>9} {r['peak_saved_bytes']:>12,} "
              f"{r['peak_saved_bytes'] / base[r['method']]:>11.2f} "
              f"{r['bytes_vs_backprop']:>9.3f} {r['time_vs_backprop']:>8.2f}")
    return rows


if __name__ == "__main__":
    from _harness import run_pinned

    run_pinned(main)
