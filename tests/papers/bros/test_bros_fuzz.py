"""Bad-input property tests for bros (issue 10; see tests/_fuzz.py).

Each public call gets NaN, inf, empty, wrong-shape, wrong-dtype, negative and huge values,
one argument at a time: it must refuse them with a ValueError/TypeError naming the
argument, or return a result without new NaN/inf, and never hang.
"""

from __future__ import annotations

import numpy as np
import torch

from _fuzz import (
    BAD_ARRAYS,
    BAD_SCALARS,
    Call,
    cases,
    check_bad_argument,
    fuzz_tests,
    key,
    with_array_tensors,
)
from neurips26.common.models import MLPClassifier
from neurips26.papers.bros import (
    BROS,
    MASOBA,
    BilevelProblem,
    BROSOptimizer,
    bros_step,
    cross_term,
    draw_subspace,
    first_order_step,
    hessian_action,
    init_state,
    ma_soba_step,
    measure_step_memory,
    rademacher_sketch,
    single_probe_expectation,
    squared_norm,
)
from neurips26.papers.bros.tasks import (
    QuadraticBilevel,
    data_mixture_problem,
    flip_labels,
    hyper_cleaning_batches,
    hyper_cleaning_problem,
)

A, S = BAD_ARRAYS, BAD_SCALARS
PROB = QuadraticBilevel.random(dim_x=2, dim_y=4, seed=0).problem()
STATE = init_state(PROB)
TRIPLE = (None, None, None)
Y = {"y": torch.zeros(4, dtype=torch.float64)}
X = torch.zeros(2, dtype=torch.float64)
GEN = torch.Generator().manual_seed(0)
RNG_X = np.random.default_rng(0).normal(size=(12, 6)).astype(np.float32)
LAB = np.arange(12) % 3
NET = MLPClassifier(6, (4,), 3)


def bros_fit(problem, max_iter=3, lr_x=0.01, lr_y=0.1, lr_z=0.1, theta=0.1, rank_fraction=0.5,
             probes=2, seed=0):  # fmt: skip
    return BROS(max_iter=max_iter, lr_x=lr_x, lr_y=lr_y, lr_z=lr_z, theta=theta,
                rank_fraction=rank_fraction, probes=probes, seed=seed,
                sketch_vectors=True).fit(problem).x_.numpy()  # fmt: skip


def masoba_fit(problem, max_iter=3, lr_x=0.01, theta=0.1, seed=0, data=None):
    est = MASOBA(max_iter=max_iter, lr_x=lr_x, theta=theta, seed=seed)
    return est.fit(problem, data).x_.numpy()


def bros_optimizer_steps(problem=PROB, x=None, y=None, lr_x=0.01, lr_y=0.1, lr_z=0.1,
                         theta=0.1, rank_fraction=0.5, probes=2, seed=0, batch=None):  # fmt: skip
    # The optimizer updates x and y in place: copies keep the shared valid values intact.
    if isinstance(x, torch.Tensor):
        x = x.detach().clone().requires_grad_(x.requires_grad)
    if isinstance(y, dict):
        y = {k: v.detach().clone().requires_grad_(v.requires_grad)
             if isinstance(v, torch.Tensor) and v.is_floating_point() else v
             for k, v in y.items()}  # fmt: skip
    opt = BROSOptimizer(problem, x, y, lr_x=lr_x, lr_y=lr_y, lr_z=lr_z, theta=theta,
                        rank_fraction=rank_fraction, probes=probes, sketch_vectors=True,
                        seed=seed)  # fmt: skip
    opt.step(batch)
    opt.step(batch)
    return opt.x.detach().numpy()


def problem_of(x0, y0, upper_loss=PROB.upper_loss, lower_loss=PROB.lower_loss):
    return BilevelProblem(upper_loss, lower_loss, x0, y0)


def quadratic_random(dim_x=2, dim_y=4, mu=0.5, lam=0.1, noise=1.0, seed=0):
    return QuadraticBilevel.random(dim_x=dim_x, dim_y=dim_y, mu=mu, lam=lam, noise=noise,
                                   seed=seed).hypergradient(np.zeros(dim_x))  # fmt: skip


def batches_of(num_train=10, num_val=5, batch_size=4, seed=0):
    return [t.numpy() for t in next(hyper_cleaning_batches(num_train, num_val, batch_size,
                                                           seed=seed))]  # fmt: skip


def cleaning(model=NET, x_train=RNG_X, y_train=LAB, x_val=RNG_X, y_val=LAB, mu=1e-3):
    prob = hyper_cleaning_problem(model, x_train, y_train, x_val, y_val, mu=mu)
    return float(prob.lower_loss(prob.x0, prob.y0, None))


def mixture(model=NET, x_train=RNG_X, y_train=LAB, domains=LAB, x_val=RNG_X, y_val=LAB,
            mu=1e-3):
    prob = data_mixture_problem(model, x_train, y_train, domains, x_val, y_val, mu=mu)
    return float(prob.lower_loss(prob.x0, prob.y0, None))


BAD_T = (*A, torch.tensor([float("nan"), 1.0]), torch.zeros(0), torch.zeros(7, dtype=torch.float64))
BAD_Y = (*A, {}, {"y": torch.full((4,), float("nan"), dtype=torch.float64)},
         {"y": torch.zeros(3, dtype=torch.float64)}, {"z": torch.zeros(4, dtype=torch.float64)})

CALLS = [
    Call(rademacher_sketch, {"dim": 4, "rank": 2, "generator": GEN},
         {"dim": S, "rank": S, "generator": (None, "x", 3)}),
    Call(draw_subspace, {"y": Y, "rank_fraction": 0.5, "generator": GEN},
         {"y": BAD_Y, "rank_fraction": S, "sketch_vectors": ("x", None, 1)}),
    Call(hessian_action, {"problem": PROB, "x": X, "y": Y, "v": Y, "batch": None},
         {"problem": (None, "x"), "x": BAD_T, "y": BAD_Y, "v": BAD_Y,
          "sketch_s": ("x", {"y": torch.zeros(3, 2, dtype=torch.float64)}, {})}),
    Call(cross_term, {"problem": PROB, "x": X, "y": Y, "v": Y, "batch": None},
         {"x": BAD_T, "y": BAD_Y, "v": BAD_Y, "sketch_t": ("x", {})}),
    Call(single_probe_expectation, {"hessian": torch.eye(3), "rank": 1},
         {"hessian": (*A, torch.zeros(2, 3), torch.full((2, 2), float("nan"))), "rank": S}),
    Call(init_state, {"problem": PROB}, {"problem": (None, "x", 3)}),
    Call(ma_soba_step, {"state": STATE, "problem": PROB, "batches": TRIPLE},
         {"state": (None, "x"), "problem": (None, "x"), "batches": A, "lr_x": S, "lr_y": S,
          "lr_z": S, "theta": S}),
    Call(bros_step, {"state": STATE, "problem": PROB, "batches": TRIPLE, "generator": GEN,
                     "sketch_vectors": True},
         {"batches": A, "lr_x": S, "lr_z": S, "theta": S, "rank_fraction": S, "probes": S,
          "generator": (None, "x"), "sketch": ("x", None, 1), "subspace": ("x", None, 1)}),
    Call(squared_norm, {"t": torch.ones(3, 2)}, {"t": (None, "x", 3, [1.0])}),
    Call(first_order_step, {"state": STATE, "problem": PROB, "batches": TRIPLE},
         {"batches": A, "lr_x": S, "lr_y": S, "theta": S}),
    Call(measure_step_memory, {"step_fn": ma_soba_step, "state": STATE, "problem": PROB,
                               "batches": TRIPLE},
         {"step_fn": (None, "x", 3), "state": (None, "x")}),
    Call(bros_fit, {"problem": PROB},
         {"problem": (None, "x"), "max_iter": S, "lr_x": S, "lr_y": S, "lr_z": S, "theta": S,
          "rank_fraction": S, "probes": S, "seed": S}),
    Call(masoba_fit, {"problem": PROB},
         {"max_iter": S, "lr_x": S, "theta": S, "seed": S, "data": (3, [], "")}),
    Call(bros_optimizer_steps, {"x": X.clone(), "y": {"y": Y["y"].clone()}},
         {"problem": (None, "x", 3), "x": BAD_T, "y": BAD_Y, "lr_x": S, "lr_y": S, "lr_z": S,
          "theta": S, "rank_fraction": S, "probes": S, "seed": S, "batch": (*A, "x", (1,))}),
    Call(problem_of, {"x0": X, "y0": Y},
         {"x0": BAD_T, "y0": BAD_Y, "upper_loss": (None, 3), "lower_loss": (None, "x")}),
    Call(quadratic_random, {},
         {"dim_x": S, "dim_y": S, "mu": S, "lam": S, "noise": S, "seed": S}),
    Call(flip_labels, {"labels": LAB, "fraction": 0.5, "num_classes": 3,
                       "rng": np.random.default_rng(0)},
         {"labels": A, "fraction": S, "num_classes": S, "rng": (None, "x", 1.5)}),
    Call(batches_of, {}, {"num_train": S, "num_val": S, "batch_size": S, "seed": S}),
    Call(cleaning, {},
         {"model": (None, "x", torch.nn.Identity()), "x_train": A, "y_train": A,
          "x_val": A, "y_val": A, "mu": S}),
    Call(mixture, {},
         {"model": (None, "x", torch.nn.Identity()), "x_train": A, "y_train": A,
          "domains": (*A, LAB - 1, np.zeros(12, int) + 1, np.arange(12) * 10**6),
          "x_val": A, "y_val": A, "mu": S}),
]  # fmt: skip
# Float numpy arguments also get tensors holding NaN and tensors requiring grad.
CALLS = with_array_tensors(CALLS)

# Bad inputs not yet refused with a message naming the argument (issue 10); each is an
# xfail(strict) below, so fixing one makes the test say to remove it from this list.
KNOWN_GAPS: frozenset = frozenset()


test_bad_arguments_are_refused, test_known_gaps = fuzz_tests(CALLS, KNOWN_GAPS, deadline=None)


def test_every_case_passes():
    """The hypothesis test samples; this runs every case once, deterministically."""
    failures = []
    for case in cases(CALLS, KNOWN_GAPS):
        try:
            check_bad_argument(*case)
        except AssertionError as exc:
            failures.append(f"{key(*case)}: {exc}")
        except Exception as exc:
            failures.append(f"{key(*case)}: {type(exc).__name__}: {exc}")
    assert not failures, "\n".join(failures)
