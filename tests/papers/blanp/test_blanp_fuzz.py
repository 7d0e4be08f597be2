"""Bad-input property tests for blanp (issue 10; see tests/_fuzz.py).

Each public call gets NaN, inf, empty, wrong-shape, wrong-dtype, negative and huge values,
one argument at a time: it must refuse them with a ValueError/TypeError naming the
argument, or return a result without new NaN/inf, and never hang.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
from torch import nn

from _fuzz import BAD_ARRAYS, BAD_SCALARS, Call, cases, check_bad_argument, fuzz_tests, key
from neurips26.papers.blanp import (
    BLANP,
    BLANPNet,
    BLANPOptimizer,
    LocalLayer,
    PlateauStop,
    antithetic_grad,
    central_difference,
    forward_difference,
    forward_difference_grad,
    local_net,
    make_model,
    measure_step,
    predict_logits,
    train_backprop,
    train_local,
)

A, S = BAD_ARRAYS, BAD_SCALARS
RNG = np.random.default_rng(0)
X = RNG.normal(size=(12, 6)).astype(np.float32)
Y = np.arange(12) % 3
A0 = torch.zeros(4, 3)
U0 = torch.ones(4, 3)


def _loss(z):
    return (z**2).flatten(1).sum(1) if z.ndim > 1 else (z**2).sum()


def _net():
    return local_net(make_model("mlp", (6,), (5,), 3), example=X[:2])


def _layer_step(**kw):
    torch.manual_seed(0)
    layer = LocalLayer(nn.Linear(6, 5), nn.Linear(5, 3), activation=nn.ReLU())
    return layer.local_step(**kw)


def _local_layer(**kw):
    return LocalLayer(nn.Linear(6, 5), nn.Linear(5, 3), **kw)


def _local_backward(**kw):
    return BLANPOptimizer(_net()).local_backward(**kw)


def _plateau_call(**kw):
    return PlateauStop(**kw)(0, _net())


def _from_blocks(**kw):
    return BLANPNet.from_blocks([nn.Sequential(nn.Linear(6, 5), nn.ReLU())], **kw)


CALLS = [
    Call(antithetic_grad, {"loss_fn": _loss, "a": A0, "sigma": 0.1},
         {"a": A, "sigma": S, "num_probes": S, "loss_fn": (None, 3)}),
    Call(forward_difference_grad, {"loss_fn": _loss, "a": A0, "sigma": 0.1},
         {"a": A, "sigma": S, "num_probes": S, "generator": (3, "x")}),
    Call(central_difference, {"loss_fn": _loss, "a": A0, "u": U0, "sigma": 0.1},
         {"a": A, "u": A, "sigma": S}),
    Call(forward_difference, {"loss_fn": _loss, "a": A0, "u": U0, "sigma": 0.1},
         {"a": A, "u": A, "sigma": S}),
    Call(_local_layer, {}, {"sigma": S, "ema_decay": S, "num_probes": S}),
    Call(_layer_step, {"h_in": X, "y": Y, "mode": "blanp"},
         {"h_in": A, "y": A, "mode": ("x", None, 3)}),
    Call(_from_blocks, {"num_classes": 3, "example": X[:2]},
         {"num_classes": S, "example": A, "sigma": S}),
    Call(make_model, {"kind": "mlp", "input_shape": (6,), "widths": (4,), "num_classes": 3},
         {"kind": ("x", None), "input_shape": ((), (0,), (-1,)), "widths": ((), (0,), (10**9,)),
          "num_classes": S, "seed": S}),
    Call(train_local, {"net": _net(), "x": X, "y": Y, "max_iter": 2, "batch_size": 4},
         {"x": A, "y": A, "max_iter": S, "lr": S, "batch_size": S, "seed": S,
          "mode": ("x", None), "device": ("tpu", None, 3)}),
    Call(train_backprop, {"model": make_model("mlp", (6,), (4,), 3), "x": X, "y": Y,
                          "max_iter": 2, "batch_size": 4},
         {"x": A, "y": A, "max_iter": S, "lr": S, "batch_size": S, "seed": S}),
    Call(predict_logits, {"model": _net(), "x": X}, {"x": A, "batch_size": S}),
    Call(measure_step, {"model": _net(), "x": torch.as_tensor(X), "y": torch.as_tensor(Y),
                        "repeats": 1},
         {"x": A, "y": A, "repeats": S, "mode": ("x", None)}),
    Call(lambda **kw: BLANP(widths=(4,), max_iter=2, batch_size=4).fit(**kw), {"X": X, "y": Y},
         {"X": A, "y": A}),
    Call(local_net, {"model": make_model("mlp", (6,), (4,), 3), "example": X[:2]},
         {"example": A, "sigma": S, "model": (None, nn.Linear(6, 3), "x")}),
    Call(BLANPOptimizer, {"model": _net()},
         {"lr": S, "eps": S, "weight_decay": S, "seed": S, "mode": ("x", None),
          "betas": (None, (0.9,), (0.9, 2.0)), "model": (None, "x")}),
    Call(_local_backward, {"x": X, "y": Y}, {"x": A, "y": A}),
    Call(_plateau_call, {"x_val": X, "y_val": Y, "eval_every": 1},
         {"x_val": A, "y_val": A, "eval_every": S, "patience": S, "min_improvement": S}),
]  # fmt: skip

# Bad inputs not yet refused with a message naming the argument; each would be an
# xfail(strict), so fixing one makes the test say to remove it from this list. None left:
# the probe estimators refuse a huge a or sigma (their finite differences overflowed).
KNOWN_GAPS: frozenset = frozenset()


@pytest.mark.parametrize("case", cases(CALLS, KNOWN_GAPS),
                         ids=lambda c: "-".join(map(str, key(*c))))  # fmt: skip
def test_every_bad_argument(case):
    check_bad_argument(*case)


test_bad_arguments_are_refused, test_known_gaps = fuzz_tests(CALLS, KNOWN_GAPS, deadline=None)
