"""BROS versus MA-SOBA and SOBA: peak resident memory, counted step memory, time per step.

On MNIST hyper-data cleaning (784-W-W-10 MLPs, 50% flipped labels), for each width ``W``
and method (SOBA, MA-SOBA, BROS with its low-rank subspace step, BROS through the
projecting reference that forms the full gradient, and BROS with a full-rank subspace):

* the peak resident memory of a few iterations in a fresh subprocess per method
  (:func:`~neurips26.papers.bros.memory.peak_rss`: Linux ``VmHWM`` reset once the data are
  loaded, glibc's mmap threshold fixed so freed blocks leave the resident set), as the
  rise above the process's size before the model is built;
* the counted bytes of one iteration (state + peak saved tensors + gradient buffers,
  deterministic) in this process;
* the mean wall time of a few iterations in this process (volatile, compared only as a
  ratio within this run).

Prints BROS / MA-SOBA ratios of each.

    python benchmarks/bros.py [--widths 1024 4096] [--batch 128] [--steps 2]
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
from neurips26.papers.bros.memory import peak_rss
from neurips26.papers.bros.tasks import flip_labels, hyper_cleaning_batches, hyper_cleaning_problem


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--widths", type=int, nargs="+", default=[1024, 4096])
    parser.add_argument("--batch", type=int, default=128)
    parser.add_argument("--steps", type=int, default=2)
    parser.add_argument("--rank-fraction", type=float, default=0.125)
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    ds = load_mnist().subset(2200, 10, seed=0)
    x, y = ds.x_train.reshape(len(ds.x_train), -1), ds.y_train
    noisy, _ = flip_labels(y[:2000], 0.5, 10, rng=np.random.default_rng(0))
    rf = args.rank_fraction
    methods = {
        "soba": (ma_soba_step, {"theta": 1.0}),
        "ma_soba": (ma_soba_step, {"theta": 0.1}),
        "bros": (bros_step, {"theta": 0.1, "rank_fraction": rf}),
        "bros_project": (bros_step, {"theta": 0.1, "rank_fraction": rf, "subspace": "project"}),
        "bros_full_rank": (bros_step, {"theta": 0.1, "rank_fraction": 1.0}),
    }
    print(f"{'W':>6} {'method':>14} {'peak RSS MiB':>12} {'counted MiB':>11} {'s/step':>8}")
    for w in args.widths:
        with seeded(0):
            model = MLPClassifier(x.shape[1], (w, w), 10)
        prob = hyper_cleaning_problem(model, x[:2000], noisy, x[2000:], y[2000:])
        rss, counted, times = {}, {}, {}
        for name, (fn, kw) in methods.items():
            rss[name] = peak_rss(name, w, batch=args.batch, steps=args.steps, rank_fraction=rf)
            kw = dict(kw, lr_x=1.0, lr_y=0.1, lr_z=0.1)
            if fn is bros_step:
                kw["generator"] = make_generator(0)
            batches = hyper_cleaning_batches(2000, 200, args.batch, seed=0)
            state = init_state(prob)
            counted[name] = measure_step_memory(fn, state, prob, next(batches), **kw)
            tic = time.perf_counter()
            for _ in range(args.steps):
                state = fn(state, prob, next(batches), **kw)
            times[name] = (time.perf_counter() - tic) / args.steps
            print(f"{w:>6} {name:>14} {rss[name].step_peak_kib / 1024:>12.1f} "
                  f"{counted[name].total_bytes / 2**20:>11.1f} {times[name]:>8.4f}")  # fmt: skip
        ma = rss["ma_soba"].step_peak_kib
        for name in ("bros", "bros_project", "bros_full_rank"):
            print(f"{w:>6} {name}/MA-SOBA: peak RSS {rss[name].step_peak_kib / ma:.3f}  "
                  f"counted {counted[name].ratio(counted['ma_soba'])['total']:.3f}  "
                  f"time {times[name] / times['ma_soba']:.3f}")  # fmt: skip


if __name__ == "__main__":
    from _harness import run_pinned

    run_pinned(main)
