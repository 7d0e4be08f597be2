"""Tests of the steppers (torch's optimizer idiom): the same update as the estimators' fit,
in-place updates of a user's tensors and module, dtype, resuming and argument checks."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
import torch

from neurips26.common.models import MLPClassifier
from neurips26.common.torch import seeded
from neurips26.papers.bros import (
    BROS,
    MASOBA,
    SOBA,
    BilevelProblem,
    BROSOptimizer,
    FirstOrderBilevel,
    FirstOrderBilevelOptimizer,
    MASOBAOptimizer,
)
from neurips26.papers.bros.tasks import hyper_cleaning_batches, hyper_cleaning_problem

N_ITER = 6
BROS_KW = dict(lr_x=5.0, lr_y=0.3, lr_z=0.05, theta=0.3, rank_fraction=0.25, probes=2)


def _mlp(seed: int = 0, n: int = 30, dim: int = 5, width: int = 8):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, dim)).astype(np.float32)
    y = rng.integers(0, 3, n)
    with seeded(seed):
        model = MLPClassifier(dim, (width,), 3, activation="tanh")
    return hyper_cleaning_problem(model, x, y, x[:10], y[:10], mu=1e-3), model


def _data():
    return list(itertools.islice(hyper_cleaning_batches(30, 10, 8, seed=1), N_ITER))


def _quadratic(dtype=torch.float32, n: int = 8):
    return BilevelProblem(lambda x, y, b: 0.5 * ((y["w"] - 1) ** 2).sum(),
                          lambda x, y, b: 0.5 * ((y["w"] - x) ** 2).sum(),
                          torch.zeros(n, dtype=dtype),
                          {"w": torch.zeros(n, dtype=dtype)})  # fmt: skip


def _equal(a: dict, b: dict) -> bool:
    return a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)


@pytest.mark.parametrize("seed", [0, 3])
def test_bros_fit_and_a_manual_step_loop_give_identical_iterates(seed):
    prob, model = _mlp()
    data = _data()
    est = BROS(**BROS_KW, max_iter=N_ITER, seed=seed).fit(prob, data)
    # (a) the stepper owning its iterate (copies of the problem's start)
    opt = BROSOptimizer(prob, **BROS_KW, seed=seed)
    for b in data:
        opt.step(b)
    assert torch.equal(opt.x, est.x_) and _equal(opt.y, est.y_) and _equal(opt.z, est.z_)
    assert opt.memory == est.memory_ and opt.n_iter == est.n_iter_ == N_ITER
    # (b) a user's own tensors: x and the module's parameters, updated in place
    x = torch.zeros(30)
    opt = BROSOptimizer((prob.upper_loss, prob.lower_loss), x, model, **BROS_KW, seed=seed)
    for b in data:
        opt.step(b)
    params = dict(model.named_parameters())
    assert torch.equal(x, est.x_) and opt.x is x
    assert _equal({k: v.detach() for k, v in params.items()}, est.y_)
    assert _equal(opt.z, est.z_)
    # a different seed draws other subspaces
    other = BROS(**BROS_KW, max_iter=N_ITER, seed=seed + 1).fit(prob, data)
    assert not torch.equal(other.x_, est.x_)


@pytest.mark.parametrize(("est", "opt"), [
    (MASOBA(lr_x=5.0, lr_y=0.3, lr_z=0.1, theta=0.5, max_iter=N_ITER),
     lambda p: MASOBAOptimizer(p, lr_x=5.0, lr_y=0.3, lr_z=0.1, theta=0.5)),
    (SOBA(lr_x=5.0, lr_y=0.3, lr_z=0.1, max_iter=N_ITER),
     lambda p: MASOBAOptimizer(p, lr_x=5.0, lr_y=0.3, lr_z=0.1, theta=1.0)),
    (FirstOrderBilevel(lr_x=5.0, lr_y=0.3, theta=0.5, max_iter=N_ITER),
     lambda p: FirstOrderBilevelOptimizer(p, lr_x=5.0, lr_y=0.3, theta=0.5)),
])  # fmt: skip
def test_exact_methods_fit_equals_step_loop(est, opt):
    prob, _ = _mlp()
    data = _data()
    est.fit(prob, data)
    o = opt(prob)
    for b in data:
        o.step(b)
    assert torch.equal(o.x, est.x_) and _equal(o.y, est.y_) and _equal(o.z, est.z_)


def test_fit_callback_states_do_not_alias():
    prob = _quadratic()
    seen = []
    BROS(**BROS_KW, max_iter=3).fit(prob, callback=seen.append)
    assert [s.step for s in seen] == [1, 2, 3]
    assert not torch.equal(seen[0].x, seen[2].x)


def test_step_follows_float64_and_converges_on_the_quadratic():
    x, y = torch.zeros(8, dtype=torch.float64), {"w": torch.zeros(8, dtype=torch.float64)}
    prob = _quadratic(torch.float64)
    opt = BROSOptimizer((prob.upper_loss, prob.lower_loss), x, y, lr_x=0.05, lr_y=0.3,
                        lr_z=0.1, theta=0.2, rank_fraction=0.5, sketch_vectors=True)  # fmt: skip
    for _ in range(800):
        stats = opt.step()
    assert x.dtype == y["w"].dtype == opt.z["w"].dtype == opt.h.dtype == torch.float64
    assert float((x - 1).abs().max()) < 0.05 and np.isfinite(stats.upper_loss)
    assert opt.y["w"] is y["w"]


def test_step_reads_the_users_current_values():
    """A change of the user's tensor between steps is what the next step starts from."""
    prob = _quadratic()
    x, y = torch.zeros(8), {"w": torch.zeros(8)}
    opt = MASOBAOptimizer((prob.upper_loss, prob.lower_loss), x, y, lr_y=1.0)
    x.fill_(2.0)
    opt.step()
    assert torch.allclose(y["w"], torch.full((8,), 2.0))  # y+ = y - (y - x) = x


def test_state_dict_resumes_bit_identically():
    prob, _ = _mlp()
    data = _data()
    a = BROSOptimizer(prob, **BROS_KW, seed=2)
    for b in data[:3]:
        a.step(b)
    ckpt = a.state_dict()
    for b in data[3:]:
        a.step(b)
    b_ = BROSOptimizer(prob, **BROS_KW, seed=99)
    b_.load_state_dict(ckpt)
    assert b_.n_iter == 3
    for b in data[3:]:
        b_.step(b)
    assert torch.equal(a.x, b_.x) and _equal(a.y, b_.y) and _equal(a.z, b_.z)
    assert torch.equal(a.h, b_.h)


def test_load_state_dict_writes_into_given_tensors_and_casts():
    prob = _quadratic()
    src = BROSOptimizer(prob, rank_fraction=0.5, sketch_vectors=True)
    src.step()
    x, y = torch.zeros(8, dtype=torch.float64), {"w": torch.zeros(8, dtype=torch.float64)}
    dst = BROSOptimizer((prob.upper_loss, prob.lower_loss), x, y, rank_fraction=0.5,
                        sketch_vectors=True)  # fmt: skip
    dst.load_state_dict(src.state_dict())
    assert x.dtype == torch.float64 and torch.equal(x, src.x.double())
    assert dst.z["w"].dtype == torch.float64
    with pytest.raises(ValueError, match="state_dict"):
        dst.load_state_dict({"x": x})
    bad = src.state_dict()
    bad["z"] = {"w": torch.zeros(3)}
    with pytest.raises(ValueError, match=r"state_dict\['z'\]"):
        dst.load_state_dict(bad)
    bad = src.state_dict()
    bad["hyperparameters"]["lr_x"] = -1.0
    with pytest.raises(ValueError, match="lr_x"):
        dst.load_state_dict(bad)


def test_divergence_leaves_the_iterate_unchanged():
    prob = _quadratic()
    x, y = torch.full((8,), 3.0), {"w": torch.zeros(8)}
    # a finite loss (0 at y = 0) whose step overflows float32: y+ = -1e6 * 1e35
    bad = BilevelProblem(prob.upper_loss, lambda x, y, b: 1e35 * (y["w"] * x).sum(), x, y)
    opt = MASOBAOptimizer(bad, x, y, lr_y=1e6)
    with pytest.raises(ValueError, match="diverged at iteration 1"):
        opt.step()
    assert torch.equal(x, torch.full((8,), 3.0)) and torch.equal(y["w"], torch.zeros(8))
    assert opt.n_iter == 0


def test_zero_grad_clears_given_tensors():
    prob = _quadratic()
    x = torch.zeros(8, requires_grad=True)
    y = {"w": torch.zeros(8, requires_grad=True)}
    (x.sum() + y["w"].sum()).backward()
    opt = BROSOptimizer((prob.upper_loss, prob.lower_loss), x, y, rank_fraction=0.5)
    opt.zero_grad(set_to_none=False)
    assert float(x.grad.abs().sum()) == 0.0
    opt.zero_grad()
    assert x.grad is None and y["w"].grad is None
    opt.step()  # in-place updates of leaves requiring grad
    assert x.requires_grad and x.is_leaf


def test_arguments_are_checked_by_name():
    prob = _quadratic()
    fns = (prob.upper_loss, prob.lower_loss)
    with pytest.raises(TypeError, match="problem"):
        BROSOptimizer("f")
    with pytest.raises(TypeError, match="x and y"):
        BROSOptimizer(fns)
    with pytest.raises(TypeError, match="y"):
        BROSOptimizer(fns, torch.zeros(2), [torch.zeros(2)])
    with pytest.raises(TypeError, match="x"):
        BROSOptimizer(fns, np.zeros(2), {"w": torch.zeros(2)})
    with pytest.raises(ValueError, match="x must have"):
        BROSOptimizer(prob, torch.zeros(3))
    with pytest.raises(ValueError, match="y"):
        BROSOptimizer(prob, y={"v": torch.zeros(8)})
    with pytest.raises(ValueError, match="y"):
        BROSOptimizer(fns, torch.zeros(2), torch.nn.Linear(2, 2).requires_grad_(False))
    for kw, name in [({"lr_x": 0.0}, "lr_x"), ({"lr_z": float("nan")}, "lr_z"),
                     ({"theta": 2.0}, "theta"), ({"rank_fraction": 0.0}, "rank_fraction"),
                     ({"probes": 3}, "probes"), ({"seed": -1}, "seed")]:  # fmt: skip
        with pytest.raises(ValueError, match=name):
            BROSOptimizer(prob, **kw)
    with pytest.raises(TypeError, match="sketch_vectors"):
        BROSOptimizer(prob, sketch_vectors="yes")
    opt = BROSOptimizer(prob)
    with pytest.raises(ValueError, match="batch"):
        opt.step((None, None))
    with pytest.raises(TypeError, match="state_dict"):
        opt.load_state_dict([1])
    with pytest.raises(TypeError, match="set_to_none"):
        opt.zero_grad(set_to_none="no")
    assert "BROSOptimizer(lr_x=" in repr(opt)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_bros_optimizer_follows_a_cuda_device():
    prob = _quadratic()
    x, y = torch.zeros(8, device="cuda"), {"w": torch.zeros(8, device="cuda")}
    opt = BROSOptimizer((prob.upper_loss, prob.lower_loss), x, y, rank_fraction=0.5,
                        sketch_vectors=True)  # fmt: skip
    for _ in range(3):
        opt.step()
    assert opt.generator.device.type == "cuda" and opt.z["w"].device.type == "cuda"
    assert x.device.type == "cuda" and opt.h.device.type == "cuda"
    assert bool(torch.isfinite(x).all()) and bool(torch.isfinite(y["w"]).all())
    with pytest.raises(ValueError, match="one device"):
        BROSOptimizer((prob.upper_loss, prob.lower_loss), torch.zeros(8), y)
