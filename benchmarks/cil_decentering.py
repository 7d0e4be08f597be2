"""Post-hoc de-centering versus refitting a joint head: time, in one run, as a ratio.

The correction is evaluation-time: one Cholesky solve with the pooled covariance and a
per-task shift of weights and biases. The alternative that closes the same gap, refitting a
joint softmax head, needs every exemplar and an optimisation. Prints seconds of each (and
the accuracies, to show both close the gap) at d = 512, C = 100 synthetic classes.

    python benchmarks/cil_decentering.py [--dim 512] [--classes 100] [--per-class 100]
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from neurips26.papers.cil_decentering import (
    accumulate_stats,
    concat_heads,
    decenter,
    fit_joint_head,
    fit_within_task_head,
    gaussian_tasks,
)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dim", type=int, default=512)
    parser.add_argument("--classes", type=int, default=100)
    parser.add_argument("--classes-per-task", type=int, default=10)
    parser.add_argument("--per-class", type=int, default=100)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    rng = np.random.default_rng(args.seed)
    T = args.classes // args.classes_per_task
    g = gaussian_tasks(num_tasks=T, classes_per_task=args.classes_per_task, dim=args.dim,
                       task_scale=0.2, class_scale=0.15, rng=rng)
    heads, stats, Xs, ys = [], None, [], []
    for t in range(T):
        X, y = g.sample_task(t, args.per_class, rng)
        heads.append(fit_within_task_head(X, y, task_id=t, max_iter=200))
        stats = accumulate_stats(stats, X, y, task_id=t)
        Xs.append(X)
        ys.append(y)
    X_all, y_all = np.vstack(Xs), np.concatenate(ys)
    X_test, y_test = g.sample(50, rng)

    t0 = time.perf_counter()
    fixed = decenter(heads, stats)
    acc_dec = np.mean(fixed.predict(X_test) == y_test)
    t_dec = time.perf_counter() - t0

    t0 = time.perf_counter()
    joint = fit_joint_head(X_all, y_all, max_iter=200)
    acc_joint = np.mean(joint.predict(X_test) == y_test)
    t_joint = time.perf_counter() - t0

    acc_seq = np.mean(concat_heads(heads).predict(X_test) == y_test)
    print(f"d = {args.dim}, C = {args.classes} ({T} tasks), {args.per_class} per class")
    print(f"accuracy: sequential {acc_seq:.3f}  de-centred {acc_dec:.3f}  joint {acc_joint:.3f}")
    print(f"de-centre + evaluate: {t_dec:.3f} s   refit joint + evaluate: {t_joint:.3f} s")
    print(f"ratio joint / de-centre: {t_joint / t_dec:.1f}x")


if __name__ == "__main__":
    from _harness import run_pinned

    run_pinned(main)
