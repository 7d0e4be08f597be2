"""BROS versus MA-SOBA and SOBA: counted step memory by component, and wall time per step.

In one process, on MNIST hyper-data cleaning (784-W-W-10 MLPs, 50% flipped labels), for
each width ``W``: the bytes of one iteration of each method (state + peak saved tensors
+ gradient buffers, counted with ``torch.autograd.graph.saved_tensors_hooks`` and the
tensors' sizes: deterministic) and the mean wall time of a few iterations (volatile,
compared only as a ratio within this run). Prints BROS / MA-SOBA ratios per component.

    python benchmarks/bros.py [--widths 256 1024] [--batch 128] [--steps 5]
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import torch

from neurips26.common.data import load_mnist
from neurips26.common.models import MLPClassifier
from neurips26.common.torch import make_generator, seeded
from neurips26.papers.bros import bros_step, init_state, ma_soba_step, measure_step_memory
from neurips26.papers.bros.tasks import flip_labels, hyper_cleaning_batches, hyper_cleaning_problem


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--widths", type=int, nargs="+", default=[256, 1024])
    parser.add_argument("--batch", type=int, default=128)
    parser.add_argument("--steps", type=int, default=5)
    parser.add_argument("--rank-fraction", type=float, default=0.125)
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    ds = load_mnist().subset(2200, 10, seed=0)
    x, y = ds.x_train.reshape(len(ds.x_train), -1), ds.y_train
    noisy, _ = flip_labels(y[:2000], 0.5, 10, rng=np.random.default_rng(0))
    methods = {
        "soba": (ma_soba_step, {"theta": 1.0}),
        "ma_soba": (ma_soba_step, {"theta": 0.1}),
        "bros": (bros_step, {"theta": 0.1, "rank_fraction": args.rank_fraction}),
    }
    print(f"{'W':>6} {'method':>8} {'state':>11} {'saved':>11} {'grad':>11} {'total':>11} "
          f"{'s/step':>8}")  # fmt: skip
    for w in args.widths:
        with seeded(0):
            model = MLPClassifier(x.shape[1], (w, w), 10)
        prob = hyper_cleaning_problem(model, x[:2000], noisy, x[2000:], y[2000:])
        reports, times = {}, {}
        for name, (fn, kw) in methods.items():
            kw = dict(kw, lr_x=1.0, lr_y=0.1, lr_z=0.01)
            if fn is bros_step:
                kw["generator"] = make_generator(0)
            batches = hyper_cleaning_batches(2000, 200, args.batch, seed=0)
            state = init_state(prob)
            reports[name] = measure_step_memory(fn, state, prob, next(batches), **kw)
            tic = time.perf_counter()
            for _ in range(args.steps):
                state = fn(state, prob, next(batches), **kw)
            times[name] = (time.perf_counter() - tic) / args.steps
            r = reports[name]
            print(f"{w:>6} {name:>8} {r.state_bytes:>11,} {r.saved_tensor_bytes_peak:>11,} "
                  f"{r.grad_buffer_bytes:>11,} {r.total_bytes:>11,} "
                  f"{times[name]:>8.4f}")  # fmt: skip
        ratio = reports["bros"].ratio(reports["ma_soba"])
        print(f"{w:>6} BROS/MA-SOBA: state {ratio['state']:.3f}  saved {ratio['saved']:.3f}  "
              f"grad {ratio['grad']:.3f}  total {ratio['total']:.3f}  "
              f"time {times['bros'] / times['ma_soba']:.3f}  "
              f"(memory saved: {100 * (1 - ratio['total']):.1f}%)")  # fmt: skip


if __name__ == "__main__":
    from _harness import run_pinned

    run_pinned(main)
