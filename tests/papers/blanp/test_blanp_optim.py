"""blanp in a user's own training loop: BLANPOptimizer in torch's optimizer idiom."""

from __future__ import annotations

import copy

import numpy as np
import pytest
import torch
from torch import nn

from neurips26.common.data import load_digits
from neurips26.common.threads import limit_threads
from neurips26.papers.blanp import BLANPOptimizer, PlateauStop, local_net, make_model, train_local


@pytest.fixture(autouse=True)
def _one_thread():
    """Tiny tensors: torch's thread pool costs more than it saves on a shared machine."""
    with limit_threads(1):
        yield


def _user_model(seed=0):
    torch.manual_seed(seed)
    return nn.Sequential(nn.Sequential(nn.Linear(64, 48), nn.ReLU()),
                         nn.Sequential(nn.Linear(48, 48), nn.ReLU()),
                         nn.Linear(48, 10))  # fmt: skip


@pytest.mark.parametrize("mode", ["blanp", "exact"])
def test_trains_a_user_built_model_in_a_plain_loop(mode):
    xtr, ytr, xte, yte = load_digits().flat()
    xtr, ytr = torch.as_tensor(xtr), torch.as_tensor(ytr)
    model = _user_model()
    before = copy.deepcopy(model)
    opt = BLANPOptimizer(model, example=xtr[:2], lr=1e-2, mode=mode)
    assert isinstance(opt, torch.optim.Optimizer)
    g = torch.Generator().manual_seed(0)
    for _epoch in range(3):
        for idx in torch.randperm(len(ytr), generator=g).split(64):
            opt.zero_grad()
            opt.local_backward(xtr[idx], ytr[idx])
            opt.step()
    # The user's own model is what was trained, and it predicts without any wrapper.
    with torch.no_grad():
        acc = float((model(torch.as_tensor(xte)).argmax(1).numpy() == yte).mean())
        acc0 = float((before(torch.as_tensor(xte)).argmax(1).numpy() == yte).mean())
    assert acc > 0.6 and acc0 < 0.3, (acc, acc0)
    assert opt.net.layers[-1].head is model[2]


def test_zero_grad_and_local_backward_follow_torch_semantics():
    xtr, ytr, _, _ = load_digits().flat()
    x, y = torch.as_tensor(xtr[:32]), torch.as_tensor(ytr[:32])
    model = _user_model()
    opt = BLANPOptimizer(model, example=x[:2], mode="exact")
    opt.local_backward(x, y)
    g1 = model[0][0].weight.grad.clone()
    opt.local_backward(x, y)  # accumulates, as loss.backward() does
    torch.testing.assert_close(model[0][0].weight.grad, 2 * g1)
    opt.zero_grad()
    assert all(p.grad is None for p in opt.net.parameters())
    w = model[0][0].weight.detach().clone()
    opt.step()  # no gradients: Adam moves nothing
    torch.testing.assert_close(model[0][0].weight, w)


def test_step_equals_the_nets_own_train_step_and_closure_returns_loss():
    xtr, ytr, _, _ = load_digits().flat()
    x, y = torch.as_tensor(xtr[:64]), torch.as_tensor(ytr[:64])
    m = make_model("mlp", (64,), (16, 16), 10, seed=3)
    net_a = local_net(m, example=x[:2], seed=3)
    net_b = copy.deepcopy(net_a)
    opt_a = BLANPOptimizer(net_a, lr=1e-2, mode="blanp", seed=5)
    adam_b = torch.optim.Adam(net_b.parameters(), lr=1e-2)
    gen_b = torch.Generator().manual_seed(5)
    for _ in range(5):
        loss = opt_a.step(lambda: (opt_a.zero_grad(), opt_a.local_backward(x, y).loss)[1])
        res = net_b.train_step(x, y, optimizer=adam_b, mode="blanp", generator=gen_b)
        assert loss == res.loss
    for pa, pb in zip(net_a.state_dict().values(), net_b.state_dict().values(), strict=True):
        torch.testing.assert_close(pa, pb, rtol=0, atol=0)
    # The critics moved towards the heads (the EMA update runs inside step()).
    layer = net_a.layers[0]
    assert not torch.equal(layer.critic.weight, local_net(m, example=x[:2], seed=3)
                           .layers[0].critic.weight)  # fmt: skip


def test_state_dict_round_trip_resumes_identically():
    xtr, ytr, _, _ = load_digits().flat()
    x, y = torch.as_tensor(xtr[:64]), torch.as_tensor(ytr[:64])
    opt = BLANPOptimizer(_user_model(), example=x[:2], lr=1e-2, mode="exact")
    for _ in range(3):
        opt.zero_grad()
        opt.local_backward(x, y)
        opt.step()
    opt2 = BLANPOptimizer(copy.deepcopy(opt.net), lr=1e-2, mode="exact")
    opt2.load_state_dict(copy.deepcopy(opt.state_dict()))  # as torch.save / torch.load
    for o in (opt, opt2):
        o.zero_grad()
        o.local_backward(x, y)
        o.step()
    for pa, pb in zip(opt.net.parameters(), opt2.net.parameters(), strict=True):
        torch.testing.assert_close(pa, pb)


def test_train_local_with_a_plateau_rule_stops_and_records_its_curve():
    xtr, ytr, _, _ = load_digits().flat()
    net = local_net(make_model("mlp", (64,), (32,), 10), example=xtr[:2])
    stop = PlateauStop(xtr[1200:], ytr[1200:], eval_every=20, patience=3, min_improvement=0.02)
    res = train_local(net, xtr[:1200], ytr[:1200], mode="exact", max_iter=5000, lr=3e-3,
                      batch_size=64, stop=stop)  # fmt: skip
    assert stop.stopped and res.num_steps < 5000 and res.num_steps == stop.steps[-1]
    assert len(stop.val_loss) == len(stop.steps) == len(stop.val_acc)
    best = np.minimum.accumulate(stop.val_loss)
    # The rule fired: the last `patience` evaluations improved the best by <= 2% in all.
    assert best[-1] >= best[-4] * (1 - 0.02)
    assert stop.val_acc[-1] > 0.8


@pytest.mark.parametrize(("kwargs", "word"), [
    ({"lr": -1.0}, "lr"), ({"mode": "sgd"}, "mode"), ({"betas": (0.9, 1.5)}, "betas"),
    ({"eps": float("nan")}, "eps"), ({"example": None}, "example"),
])  # fmt: skip
def test_bad_arguments_name_themselves(kwargs, word):
    kw = {"example": torch.zeros(2, 64), **kwargs}
    with pytest.raises((ValueError, TypeError), match=word):
        BLANPOptimizer(_user_model(), **kw)
    with pytest.raises(TypeError, match="model"):
        BLANPOptimizer([nn.Linear(2, 2)], example=torch.zeros(2, 2))
    opt = BLANPOptimizer(_user_model(), example=torch.zeros(2, 64))
    with pytest.raises(ValueError, match="y"):
        opt.local_backward(torch.zeros(4, 64), torch.tensor([0, 1, 2, 11]))
    with pytest.raises(ValueError, match="x"):
        opt.local_backward(torch.full((4, 64), float("nan")), torch.arange(4))
    with pytest.raises(TypeError, match="closure"):
        opt.step(closure=3)


def test_fused_kernel_is_the_same_update_up_to_rounding():
    xtr, ytr, _, _ = load_digits().flat()
    x, y = torch.as_tensor(xtr[:64]), torch.as_tensor(ytr[:64])
    net = local_net(make_model("mlp", (64,), (16,), 10, seed=1), example=x[:2], seed=1)
    nets = [net, copy.deepcopy(net)]
    opts = [BLANPOptimizer(n, lr=1e-2, mode="exact", fused=f)
            for n, f in zip(nets, (False, True), strict=True)]
    for _ in range(5):
        for o in opts:
            o.zero_grad()
            o.local_backward(x, y)
            o.step()
    moved = False
    for pa, pb, p0 in zip(nets[0].parameters(), nets[1].parameters(),
                          local_net(make_model("mlp", (64,), (16,), 10, seed=1), example=x[:2],
                                    seed=1).parameters(), strict=True):  # fmt: skip
        torch.testing.assert_close(pa, pb, rtol=1e-5, atol=1e-6)
        moved |= not torch.equal(pa, p0)
    assert moved
    with pytest.raises(TypeError, match="fused"):
        BLANPOptimizer(copy.deepcopy(net), fused="yes")
