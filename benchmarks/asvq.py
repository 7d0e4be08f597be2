"""Quantizer cost side by side: ASVQ against SimVQ, vanilla VQ and EMA VQ.

For each codebook size K (default 2,048 and 8,192; d = 32, a batch of 32 x 16 latents):
learned parameters of the quantizer, forward+backward FLOPs counted by torch, and the
median seconds of a forward+backward step (interleaved repeats), with ratios to SimVQ.
Also seconds per training step of a full 16x16 image tokenizer with each quantizer.

    python benchmarks/asvq.py [--sizes 2048 8192] [--repeats 30] [--dim 32]
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import torch
from torch.utils.flop_counter import FlopCounterMode

from neurips26.common.threads import limit_threads
from neurips26.papers.asvq import VQAutoencoder, train_vqae
from neurips26.papers.asvq.experiment import make_quantizer

METHODS = ("vanilla", "ema", "simvq", "asvq")


def _step(q, z0):
    z = z0.clone().requires_grad_(True)
    out = q(z)
    (out.quantized.square().mean() + out.loss).backward()


def quantizer_costs(k: int, dim: int, repeats: int) -> dict:
    z0 = torch.randn(32, 16, dim, generator=torch.Generator().manual_seed(0))
    qs = {m: make_quantizer(m, dim, k, seed=0, commitment_weight=0.25).train()
          for m in METHODS}  # fmt: skip
    out = {}
    for m, q in qs.items():
        with FlopCounterMode(display=False) as fc:
            _step(q, z0)
        out[m] = {"params": q.num_extra_parameters, "flops": fc.get_total_flops(), "sec": []}
    for _ in range(repeats):
        for m, q in qs.items():
            t0 = time.perf_counter()
            _step(q, z0)
            out[m]["sec"].append(time.perf_counter() - t0)
    for m in out:
        out[m]["sec"] = float(np.median(out[m]["sec"]))
    return out


def tokenizer_step_seconds(k: int, dim: int, steps: int) -> dict:
    x = np.random.default_rng(0).random((256, 1, 16, 16)).astype(np.float32)
    res = {}
    for m in METHODS:
        q = make_quantizer(m, dim, k, seed=0, commitment_weight=0.25)
        ae = VQAutoencoder(1, quantizer=q, dim=dim, hidden=32)
        res[m] = train_vqae(ae, x, max_iter=steps, batch_size=32).sec_per_step
    return res


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[2048, 8192])
    ap.add_argument("--dim", type=int, default=32)
    ap.add_argument("--repeats", type=int, default=30)
    ap.add_argument("--steps", type=int, default=20)
    args = ap.parse_args()
    with limit_threads(1):
        for k in args.sizes:
            c = quantizer_costs(k, args.dim, args.repeats)
            t = tokenizer_step_seconds(k, args.dim, args.steps)
            ref = c["simvq"]
            print(f"K = {k}, d = {args.dim}")
            print(f"  {'method':8s} {'params':>8s} {'MFLOPs':>9s} {'xSimVQ':>7s} "
                  f"{'ms/step':>8s} {'xSimVQ':>7s} {'AE ms/step':>11s} {'xSimVQ':>7s}")
            for m in METHODS:
                r = c[m]
                print(f"  {m:8s} {r['params']:8d} {r['flops'] / 1e6:9.2f} "
                      f"{r['flops'] / ref['flops']:7.3f} {1e3 * r['sec']:8.3f} "
                      f"{r['sec'] / ref['sec']:7.3f} {1e3 * t[m]:11.2f} "
                      f"{t[m] / t['simvq']:7.3f}")  # fmt: skip


if __name__ == "__main__":
    from _harness import run_pinned

    run_pinned(main)
