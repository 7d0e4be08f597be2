"""FLOPs and wall time per DiT training step: no routing (DiT), TREAD and Noise-Aware Routing.

FLOPs of one training step (forward + backward, a batch with timesteps spread evenly over
``[0, T)``) are counted with ``torch.utils.flop_counter.FlopCounterMode``; wall time per
step is the median of timed AdamW steps on random data, all methods in one process and
interleaved, so the ratios compare like with like. NAR runs the routed span once per noise
group (three sub-batches), TREAD once: on a CPU the extra kernel launches can cost more
than the attention FLOPs NAR saves or spends, which the wall-time column shows.

    python benchmarks/noise_aware_routing.py [--dim 64] [--depth 4] [--batch-size 32]
"""

from __future__ import annotations

import argparse
import statistics
import time

import torch

from neurips26.common.torch import seeded
from neurips26.papers.noise_aware_routing import MiniDiT, diffusion_loss, training_flops

METHODS = {
    "DiT": ("none", (0.0, 0.0, 0.0)),
    "TREAD": ("tread", (0.5, 0.5, 0.5)),
    "NAR": ("noise_aware", (0.25, 0.5, 0.75)),
    "NAR reversed": ("noise_aware", (0.75, 0.5, 0.25)),
}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dim", type=int, default=64)
    parser.add_argument("--depth", type=int, default=4)
    parser.add_argument("--heads", type=int, default=4)
    parser.add_argument("--patch-size", type=int, default=4)
    parser.add_argument("--image-size", type=int, default=32)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--steps", type=int, default=20, help="timed steps per method")
    args = parser.parse_args(argv)
    nets = {}
    for name in METHODS:
        with seeded(0):
            nets[name] = MiniDiT(image_size=args.image_size, patch_size=args.patch_size,
                                 dim=args.dim, depth=args.depth, num_heads=args.heads,
                                 route_start=1, route_end=args.depth - 2)  # fmt: skip
    flops = {n: training_flops(nets[n], routing=r, ratio=0.5, ratios=rs,
                               batch_size=args.batch_size) for n, (r, rs) in METHODS.items()}
    opts = {n: torch.optim.AdamW(nets[n].parameters(), lr=1e-4) for n in METHODS}
    g = torch.Generator().manual_seed(0)
    times: dict[str, list[float]] = {n: [] for n in METHODS}
    for step in range(args.steps + 3):  # interleaved; the first 3 rounds warm up
        x0 = torch.randn(args.batch_size, 1, args.image_size, args.image_size, generator=g)
        y = torch.randint(0, 10, (args.batch_size,), generator=g)
        for name, (routing, ratios) in METHODS.items():
            net = nets[name].train()
            t0 = time.perf_counter()
            loss = diffusion_loss(net, x0, y, routing=routing, ratio=0.5, ratios=ratios,
                                  generator=torch.Generator().manual_seed(step))  # fmt: skip
            opts[name].zero_grad(set_to_none=True)
            loss.backward()
            opts[name].step()
            if step >= 3:
                times[name].append(time.perf_counter() - t0)
    sec = {n: statistics.median(v) for n, v in times.items()}
    print(f"MiniDiT dim {args.dim}, depth {args.depth} (blocks 1..{args.depth - 2} routed), "
          f"{(args.image_size // args.patch_size) ** 2} tokens, batch {args.batch_size}")
    print(f"{'method':<14}{'GFLOPs/step':>12}{'ms/step':>9}{'FLOPs/DiT':>11}{'time/DiT':>10}"
          f"{'FLOPs/TREAD':>13}{'time/TREAD':>12}")
    for n in METHODS:
        print(f"{n:<14}{flops[n] / 1e9:>12.3f}{1e3 * sec[n]:>9.1f}"
              f"{flops[n] / flops['DiT']:>11.3f}{sec[n] / sec['DiT']:>10.3f}"
              f"{flops[n] / flops['TREAD']:>13.3f}{sec[n] / sec['TREAD']:>12.3f}")


if __name__ == "__main__":
    from _harness import run_pinned

    run_pinned(main)
