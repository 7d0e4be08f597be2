"""blanp: estimator oracles (closed forms, autograd), locality, EMA, memory, bad input."""

from __future__ import annotations

import copy
import math

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from sklearn.base import clone
from torch import nn

from neurips26.common.data import load_digits
from neurips26.common.models import SmallCNN
from neurips26.papers.blanp import (
    BLANP,
    DGL,
    MODES,
    Backprop,
    BLANPExact,
    BLANPNet,
    LocalLayer,
    SavedTensorMeter,
    antithetic_grad,
    central_difference,
    forward_difference,
    forward_difference_grad,
    local_net,
    make_model,
    peak_saved_bytes,
    predict_logits,
    split_block,
    train_backprop,
    train_local,
)

D64 = torch.float64


def _quadratic(dim=6, seed=0):
    g = torch.Generator().manual_seed(seed)
    m = torch.randn(dim, dim, generator=g, dtype=D64)
    q = m @ m.T + torch.eye(dim, dtype=D64)
    c = torch.randn(dim, generator=g, dtype=D64)
    return q, c, (lambda a: 0.5 * a @ q @ a + c @ a)


# ---------------------------------------------------------------- estimator oracles


def test_central_difference_exact_on_quadratic_forward_off_by_hessian_term():
    q, c, loss = _quadratic()
    g = torch.Generator().manual_seed(1)
    for sigma in (1e-3, 0.1, 1.0):
        a = torch.randn(6, generator=g, dtype=D64)
        u = torch.randn(6, generator=g, dtype=D64)
        grad = q @ a + c
        cen = central_difference(loss, a, u, sigma=sigma)
        fwd = forward_difference(loss, a, u, sigma=sigma)
        assert abs(float(cen - grad @ u)) < 1e-10
        assert abs(float(fwd - grad @ u - sigma / 2 * (u @ q @ u))) < 1e-9


def test_error_orders_on_softplus_sum():
    """Per probe: central error ~ sigma^2 (slope 2), forward error ~ sigma (slope 1)."""
    g = torch.Generator().manual_seed(2)
    a = torch.randn(8, generator=g, dtype=D64)
    u = torch.randn(8, generator=g, dtype=D64)
    w = torch.randn(8, generator=g, dtype=D64)

    def loss(z):
        return F.softplus(w * z).sum()

    a_req = a.clone().requires_grad_(True)
    (grad,) = torch.autograd.grad(loss(a_req), a_req)
    exact = float(grad @ u)
    sigmas = np.array([0.2, 0.1, 0.05, 0.025])
    ec = [abs(float(central_difference(loss, a, u, sigma=s)) - exact) for s in sigmas]
    ef = [abs(float(forward_difference(loss, a, u, sigma=s)) - exact) for s in sigmas]
    slope_c = np.polyfit(np.log(sigmas), np.log(ec), 1)[0]
    slope_f = np.polyfit(np.log(sigmas), np.log(ef), 1)[0]
    assert abs(slope_c - 2) <= 0.2, slope_c
    assert abs(slope_f - 1) <= 0.2, slope_f


def test_antithetic_mean_within_three_standard_errors_and_less_variance():
    g = torch.Generator().manual_seed(3)
    w = torch.randn(5, generator=g, dtype=D64)
    a0 = torch.randn(5, generator=g, dtype=D64)

    def loss(z):  # one loss per example, (B,)
        return F.softplus(z * w).sum(1) + 0.3 * (z**2).sum(1)

    n = 20000
    a = a0.expand(n, 5).clone()  # 20,000 independent one-probe estimates at a0
    est_c = antithetic_grad(loss, a, sigma=0.05, generator=torch.Generator().manual_seed(4))
    est_f = forward_difference_grad(loss, a, sigma=0.05, generator=torch.Generator().manual_seed(4))
    a_req = a0.clone().requires_grad_(True)
    (grad,) = torch.autograd.grad(loss(a_req[None])[0], a_req)
    se = est_c.std(0) / np.sqrt(n)
    assert bool(((est_c.mean(0) - grad).abs() <= 3 * se).all())
    assert float(est_c.var(0).sum()) <= float(est_f.var(0).sum())


def test_num_probes_averages_pairs():
    def loss(z):
        return (z**3).sum(1)

    a = torch.ones(3, 4, dtype=D64)
    one = antithetic_grad(loss, a, sigma=0.1, num_probes=1,
                          generator=torch.Generator().manual_seed(0))  # fmt: skip
    two = antithetic_grad(loss, a, sigma=0.1, num_probes=2,
                          generator=torch.Generator().manual_seed(0))  # fmt: skip
    gen = torch.Generator().manual_seed(0)
    u1 = torch.randn(a.shape, generator=gen, dtype=D64)
    u2 = torch.randn(a.shape, generator=gen, dtype=D64)
    d1 = central_difference(loss, a, u1, sigma=0.1)[:, None] * u1
    d2 = central_difference(loss, a, u2, sigma=0.1)[:, None] * u2
    assert torch.allclose(one, d1) and torch.allclose(two, (d1 + d2) / 2)


# ---------------------------------------------------------------- locality and the critic


def _net(depth=3, width=12, seed=0, **kw):
    torch.manual_seed(seed)
    blocks = [nn.Sequential(nn.Linear(10 if i == 0 else width, width), nn.ReLU())
              for i in range(depth)]  # fmt: skip
    return BLANPNet.from_blocks(blocks, num_classes=4, example=torch.zeros(2, 10), **kw)


def _batch(seed=0, n=16):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(n, 10, generator=g), torch.randint(0, 4, (n,), generator=g)


def test_exact_update_equals_autograd_of_the_local_loss():
    net = _net()
    x, y = _batch()
    layer = net.layers[1]
    h_in = net.layers[0](x).detach()
    params = list(layer.block.parameters())
    ref = torch.autograd.grad(F.cross_entropy(layer.critic(layer(h_in)), y), params)
    layer.local_step(h_in, y, mode="exact")
    for p, r in zip(params, ref, strict=True):
        assert torch.allclose(p.grad, r, atol=1e-7)
    # The critic is frozen: no gradient, requires_grad False.
    assert all(p.grad is None and not p.requires_grad for p in layer.critic.parameters())


@pytest.mark.parametrize("mode", MODES)
def test_no_gradient_reaches_another_layer(mode):
    net = _net()
    x, y = _batch()
    h = net.layers[0](x)  # NOT detached: layer 0's graph is reachable from h
    net.layers[1].local_step(h, y, mode=mode)
    for i, layer in enumerate(net.layers):
        grads = [p.grad for p in layer.parameters()]
        if i == 1:
            assert any(g is not None and g.abs().sum() > 0 for g in grads)
        else:
            assert all(g is None for g in grads), f"layer {i} got a gradient in mode {mode}"


@pytest.mark.parametrize("mode", ("exact", "dgl", "blanp"))
def test_backbone_gradient_from_another_layers_loss_is_exactly_zero(mode):
    """A full train step's gradient of each block equals that block's own local step."""
    net = _net(seed=1)
    x, y = _batch(1)
    ref = copy.deepcopy(net)
    opt = torch.optim.SGD(net.parameters(), lr=0.0)  # step leaves weights as they are
    net.train_step(x, y, optimizer=opt, mode=mode, generator=torch.Generator().manual_seed(7))
    gen = torch.Generator().manual_seed(7)
    h = x
    for i, layer in enumerate(ref.layers):
        for other in ref.layers:
            other.zero_grad(set_to_none=True)
        h_next, _ = layer.local_step(h, y, mode=mode, generator=gen)
        for j, other in enumerate(ref.layers):
            if j != i:
                assert all(p.grad is None for p in other.parameters())
        for p, q in zip(layer.block.parameters(), net.layers[i].block.parameters(), strict=True):
            assert torch.equal(p.grad, q.grad)
        h = h_next


def test_perturbation_update_is_outer_product_with_the_input():
    """Eq. (5): dW = mean_b ghat_a h_{l-1}', db = mean_b ghat_a for a Linear block."""
    torch.manual_seed(0)
    layer = LocalLayer(nn.Linear(10, 6), nn.Linear(6, 4), activation=nn.ReLU(), sigma=0.05)
    x, y = _batch(2)
    a = layer.block(x).detach()
    scale = 0.05 * float(a.std())

    def loss_fn(z):
        return F.cross_entropy(layer.critic(torch.relu(z)), y, reduction="none")

    ghat = antithetic_grad(loss_fn, a, sigma=scale, generator=torch.Generator().manual_seed(5))
    layer.local_step(x, y, mode="blanp", generator=torch.Generator().manual_seed(5))
    assert torch.allclose(layer.block.weight.grad, ghat.T @ x / len(x), atol=1e-6)
    assert torch.allclose(layer.block.bias.grad, ghat.mean(0), atol=1e-6)


def test_ema_update_matches_hand_computation():
    torch.manual_seed(0)
    layer = LocalLayer(nn.Linear(3, 3), nn.Linear(3, 2), ema_decay=0.9)
    before = layer.critic.weight.detach().clone()
    with torch.no_grad():
        layer.head.weight.add_(1.0)
    head = layer.head.weight.detach().clone()
    layer.update_critic()
    assert torch.allclose(layer.critic.weight, 0.9 * before + 0.1 * head)


def test_critic_changes_only_through_the_ema():
    net = _net()
    x, y = _batch()
    crit0 = [copy.deepcopy(layer.critic.state_dict()) for layer in net.layers]
    head0 = [copy.deepcopy(layer.head.state_dict()) for layer in net.layers]
    opt = torch.optim.Adam(net.parameters(), lr=1e-2)
    net.train_step(x, y, optimizer=opt, mode="exact")
    for layer, c0, h0 in zip(net.layers, crit0, head0, strict=True):
        for k in c0:
            tau = layer.ema_decay
            expect = tau * c0[k] + (1 - tau) * layer.head.state_dict()[k]
            assert torch.allclose(layer.critic.state_dict()[k], expect)
            assert not torch.equal(layer.head.state_dict()[k], h0[k])


def test_same_seed_same_weights_after_ten_steps():
    xtr, ytr, _, _ = load_digits().flat()

    def trained(seed):
        net = local_net(make_model("mlp", (64,), (16, 16), 10, seed=seed), example=xtr[:2])
        train_local(net, xtr, ytr, mode="blanp", max_iter=10, batch_size=32, seed=seed)
        return net.state_dict()

    a, b, c = trained(0), trained(0), trained(1)
    assert all(torch.equal(a[k], b[k]) for k in a)
    assert not all(torch.equal(a[k], c[k]) for k in a)


def test_modes_learn_on_digits():
    xtr, ytr, xte, yte = load_digits().flat()
    for mode in ("blanp", "exact", "dgl"):
        net = local_net(make_model("mlp", (64,), (64,), 10), example=xtr[:2])
        train_local(net, xtr, ytr, mode=mode, max_iter=150, batch_size=64)
        acc = (predict_logits(net, xte).argmax(1) == yte).mean()
        assert acc > 0.6, (mode, acc)


# ---------------------------------------------------------------- user networks


def test_local_net_on_the_shared_cnn_and_a_sequential():
    cnn = SmallCNN(1, (4, 8), 10)
    net = local_net(cnn, example=torch.zeros(2, 1, 8, 8))
    assert len(net.layers) == 2 and isinstance(net.layers[0].activation, nn.Sequential)
    x = torch.rand(6, 1, 8, 8)
    res = net.train_step(x, torch.arange(6), optimizer=torch.optim.Adam(net.parameters()),
                         mode="blanp")  # fmt: skip
    assert len(res.losses) == 2 and tuple(net(x).shape) == (6, 10)
    seq = nn.Sequential(nn.Sequential(nn.Linear(5, 7), nn.Tanh()), nn.Linear(7, 3))
    net2 = local_net(seq, example=torch.zeros(2, 5))
    assert len(net2.layers) == 1 and net2.layers[0].head.out_features == 3
    f, phi = split_block(nn.Sequential(nn.Conv2d(1, 2, 3), nn.ReLU(), nn.MaxPool2d(2)))
    assert isinstance(f[0], nn.Conv2d) and len(phi) == 2


def test_estimators_fit_predict_and_clone():
    xtr, ytr, xte, yte = load_digits().flat()
    for cls in (BLANP, BLANPExact, DGL, Backprop):
        clf = cls(widths=(32,), max_iter=150, batch_size=64)
        assert clone(clf).get_params() == clf.get_params()
        clf.fit(xtr, ytr + 3)  # labels need not start at 0
        pred = clf.predict(xte)
        assert set(np.unique(pred)) <= set(range(3, 13))
        assert clf.score(xte, yte + 3) > 0.3


def test_backprop_baseline_learns():
    xtr, ytr, xte, yte = load_digits().flat()
    model = make_model("mlp", (64,), (32,), 10)
    train_backprop(model, xtr, ytr, max_iter=100, batch_size=64)
    assert (predict_logits(model, xte).argmax(1) == yte).mean() > 0.8


# ---------------------------------------------------------------- memory


def test_meter_counts_saved_bytes_once_per_storage():
    lin1, lin2 = nn.Linear(10, 20), nn.Linear(20, 5)
    x = torch.ones(4, 10)
    with SavedTensorMeter() as m:
        h = torch.relu(lin1(x))  # saves x (160 B) and h (320 B); lin2 saves h again
        lin2(h).sum().backward()
    assert m.peak_bytes == 4 * 10 * 4 + 4 * 20 * 4
    assert m.live_bytes == 0


def _step_bytes(depth, mode):
    torch.manual_seed(0)
    x, y = torch.randn(32, 10), torch.randint(0, 4, (32,))
    if mode == "backprop":
        model = nn.Sequential(*[nn.Sequential(nn.Linear(10 if i == 0 else 64, 64), nn.ReLU())
                                for i in range(depth)], nn.Linear(64, 4))  # fmt: skip
        return peak_saved_bytes(lambda: F.cross_entropy(model(x), y).backward())
    net = _net(depth=depth, width=64)
    opt = torch.optim.SGD(net.parameters(), lr=0.1)
    return peak_saved_bytes(lambda: net.train_step(x, y, optimizer=opt, mode=mode))


def test_local_step_memory_is_flat_in_depth_backprop_grows():
    for mode in ("blanp", "exact", "dgl"):
        assert _step_bytes(2, mode) == _step_bytes(8, mode) > 0
    b2, b4, b8 = (_step_bytes(d, "backprop") for d in (2, 4, 8))
    assert b8 - b4 == 2 * (b4 - b2) > 0  # linear in depth


# ---------------------------------------------------------------- bad input


@pytest.mark.parametrize("kw, name", [
    ({"sigma": 0.0}, "sigma"), ({"sigma": -1.0}, "sigma"), ({"ema_decay": 1.0}, "ema_decay"),
    ({"ema_decay": -0.1}, "ema_decay"), ({"num_probes": 0}, "num_probes"),
])  # fmt: skip
def test_bad_hyperparameters(kw, name):
    with pytest.raises(ValueError, match=name):
        LocalLayer(nn.Linear(2, 2), nn.Linear(2, 2), **kw)


def test_bad_inputs_name_the_argument():
    net = _net()
    x, y = _batch()
    layer = net.layers[0]
    with pytest.raises(ValueError, match="mode"):
        layer.local_step(x, y, mode="backprop")
    with pytest.raises(ValueError, match="y"):
        layer.local_step(x, y + 10, mode="exact")
    with pytest.raises(ValueError, match="y"):
        layer.local_step(x, y[:3], mode="blanp")
    bad = x.clone()
    bad[0, 0] = float("nan")
    with pytest.raises(ValueError, match="h_in"):
        layer.local_step(bad, y, mode="blanp")
    with pytest.raises(ValueError, match="widths"):
        make_model("mlp", (10,), (), 4)
    with pytest.raises(ValueError, match="model"):
        local_net(nn.Linear(3, 3), example=torch.zeros(2, 3))
    with pytest.raises(ValueError, match="sigma"):
        antithetic_grad(lambda z: z.sum(), torch.zeros(3), sigma=0.0)
    with pytest.raises(ValueError, match="loss_fn"):
        antithetic_grad(lambda z: z, torch.zeros(3, 2), sigma=0.1)
    with pytest.raises(ValueError, match="blocks"):
        BLANPNet.from_blocks([], num_classes=3, example=torch.zeros(2, 3))


def test_non_finite_local_loss_names_layer_and_step():
    net = _net()
    x, y = _batch()
    with torch.no_grad():
        net.layers[1].critic.weight.fill_(float("inf"))
    opt = torch.optim.SGD(net.parameters(), lr=0.1)
    with pytest.raises(ValueError, match=r"layer 1: non-finite .* at step 0"):
        net.train_step(x, y, optimizer=opt, mode="exact")


def test_cuda_is_refused_without_a_device():
    if torch.cuda.is_available():
        pytest.skip("a CUDA device is present")
    xtr, ytr, _, _ = load_digits().flat()
    net = local_net(make_model("mlp", (64,), (8,), 10), example=xtr[:2])
    with pytest.raises(ValueError, match="device"):
        train_local(net, xtr, ytr, max_iter=1, device="cuda")


# ---------------------------------------------------------------- the experiment


def test_smoke_run():
    from neurips26.common.experiment import is_declared
    from neurips26.papers.blanp.experiment import METRICS, TIERS, run

    res = run(TIERS["smoke"])
    assert all(is_declared(m, METRICS) for m in res.metrics)
    assert res.metrics["check_antithetic_quadratic_error"] < 1e-8
    assert res.metrics["check_cross_layer_grad_max"] == 0.0
    # the directional-error ratio carries its bootstrap interval over the examples
    r, iv = res.metrics["directional_error_ratio"], res.intervals["directional_error_ratio"]
    assert 0.0 < iv["lo"] <= r <= iv["hi"] < math.inf and "bootstrap" in iv["method"]
    # the controls: the untrained network's paired gaps and backprop's memory ratio
    for k in ("untrained_minus_bp_min", "untrained_minus_blanp_min", "untrained_minus_dgl_cnn",
              "mem_ratio_backprop_8_2"):
        assert math.isfinite(res.metrics[k]), k
    assert res.metrics["untrained_minus_bp_min"] < 0  # backprop learns something
    assert res.intervals["blanp_minus_bp_min"]["method"] == "t over seeds (paired)"


def test_accuracy_figure_with_equal_seeds():
    """An arm whose seeds tie (the untrained CNN at chance) draws a zero-length range."""
    from neurips26.papers.blanp.experiment import _fig_acc

    png = _fig_acc({("untrained", "digits", "cnn"): [0.1, 0.1, 0.1],
                    ("blanp", "digits", "mlp"): [0.5, 0.6, 0.7]})
    assert png[:4] == b"\x89PNG"


def test_probe_estimate_keeps_a_channels_last_point_channels_last():
    """The batched probes of a channels-last 4-D point reach the scorer channels-last (the
    fast CPU pooling layout) and give the estimate of the same point in NCHW."""
    from neurips26.papers.blanp.estimators import probe_estimate

    a = torch.randn(4, 3, 6, 6, generator=torch.Generator().manual_seed(0), dtype=D64)
    y = torch.tensor([0, 1, 2, 0])
    w = torch.randn(3, 3, dtype=D64)
    seen = []

    def loss(z, yy):
        seen.append(z.is_contiguous(memory_format=torch.channels_last) and not z.is_contiguous())
        logits = F.max_pool2d(torch.relu(z), 2).mean((2, 3)) @ w
        return F.cross_entropy(logits, yy, reduction="none")

    out = [probe_estimate(loss, p, y, sigma=1e-3, num_probes=3,
                          generator=torch.Generator().manual_seed(1))
           for p in (a, a.contiguous(memory_format=torch.channels_last))]  # fmt: skip
    assert seen == [False, True]
    torch.testing.assert_close(out[1][0], out[0][0], rtol=1e-10, atol=1e-12)
    assert float(out[1][1]) == pytest.approx(float(out[0][1]), rel=1e-12)


def test_cnn_training_runs_channels_last_and_matches_nchw_predictions():
    """train_local / train_backprop on image inputs move a CPU model to channels-last; the
    trained net predicts NCHW inputs as the same net does when its weights are NCHW."""
    x, y = np.random.default_rng(0).random((64, 1, 8, 8), dtype=np.float32), np.arange(64) % 3
    for train in ("local", "backprop"):
        model = make_model("cnn", (1, 8, 8), (4, 4), 3, seed=0)
        if train == "local":
            net = local_net(model, example=x[:2])
            train_local(net, x, y, mode="exact", max_iter=3, batch_size=16)
        else:
            net = model
            train_backprop(net, x, y, max_iter=3, batch_size=16)
        convs = [m for m in net.modules() if isinstance(m, nn.Conv2d)]
        assert convs and all(c.weight.is_contiguous(memory_format=torch.channels_last)
                             for c in convs)  # fmt: skip
        nchw = copy.deepcopy(net).to(memory_format=torch.contiguous_format)
        np.testing.assert_allclose(predict_logits(net, x), predict_logits(nchw, x), atol=1e-5)
