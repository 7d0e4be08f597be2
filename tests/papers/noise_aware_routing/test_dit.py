"""MiniDiT: shapes, ratio 0 equals the unrouted model, no routing at inference, sub-batch
routing equals a per-sample loop, FLOPs of TREAD vs NAR vs DiT, bad construction."""

from __future__ import annotations

import pytest
import torch

from neurips26.common.torch import seeded
from neurips26.papers.noise_aware_routing import (
    MiniDiT,
    random_permutations,
    training_flops,
)


def _net(**kw):
    cfg = dict(image_size=16, patch_size=4, dim=32, depth=4, num_heads=4, route_start=1,
               route_end=2)  # fmt: skip
    cfg.update(kw)
    with seeded(0):
        net = MiniDiT(**cfg)
    # adaLN-zero starts at the identity: perturb every weight so the blocks do something
    with torch.no_grad(), seeded(1):
        for p in net.parameters():
            p.add_(0.05 * torch.randn_like(p))
    return net


def _batch(b=8, seed=0):
    g = torch.Generator().manual_seed(seed)
    return (torch.randn(b, 1, 16, 16, generator=g), torch.randint(0, 1000, (b,), generator=g),
            torch.randint(0, 10, (b,), generator=g))  # fmt: skip


def test_shapes_and_unpatchify_inverts_patch_layout():
    net = _net()
    x, t, y = _batch()
    assert net(x, t, y).shape == x.shape and net.num_tokens == 16
    tokens = torch.arange(2 * 16 * 16.0).reshape(2, 16, 16)  # (B, L, p*p*C)
    img = net.unpatchify(tokens)
    # the patch at grid (1, 2) holds token 1 * 4 + 2, laid out row-major inside the patch
    assert torch.equal(img[0, 0, 4:8, 8:12].reshape(-1), tokens[0, 6])


@pytest.mark.parametrize("routing", ["tread", "noise_aware"])
def test_ratio_zero_equals_unrouted(routing):
    net = _net().train()
    x, t, y = _batch()
    ref = net(x, t, y, routing="none")
    out = net(x, t, y, routing=routing, ratio=0.0, ratios=(0.0, 0.0, 0.0),
              generator=torch.Generator().manual_seed(3))  # fmt: skip
    assert (out - ref).abs().max() < 1e-6


def test_routing_changes_training_output_but_not_inference():
    net = _net().train()
    x, t, y = _batch()
    ref = net(x, t, y)
    routed = net(x, t, y, routing="tread", ratio=0.5, generator=torch.Generator().manual_seed(0))
    assert (routed - ref).abs().max() > 1e-3
    net.eval()
    for routing in ("tread", "noise_aware"):
        assert torch.equal(net(x, t, y, routing=routing), net(x, t, y))


def test_sub_batch_routing_equals_per_sample_loop():
    net = _net().train()
    x, t, y = _batch(9, seed=5)
    t[:3], t[3:6], t[6:] = t[:3] % 300, 400 + t[3:6] % 200, 700 + t[6:] % 299  # all groups
    perm = random_permutations(9, 16, generator=torch.Generator().manual_seed(6))
    batch = net(x, t, y, routing="noise_aware", ids_shuffle=perm)
    loop = torch.cat([net(x[i : i + 1], t[i : i + 1], y[i : i + 1], routing="noise_aware",
                          ids_shuffle=perm[i : i + 1]) for i in range(9)])  # fmt: skip
    assert (batch - loop).abs().max() < 1e-5


def test_empty_group_is_skipped():
    net = _net().train()
    x, t, y = _batch(4)
    t = torch.tensor([10, 20, 900, 950])  # no middle-noise sample
    out = net(x, t, y, routing="noise_aware", generator=torch.Generator().manual_seed(0))
    assert out.shape == x.shape and torch.isfinite(out).all()


def test_gradients_reach_the_span_and_bypass():
    net = _net().train()
    x, t, y = _batch()
    net(x, t, y, routing="noise_aware").pow(2).mean().backward()
    assert all(p.grad is not None for p in net.blocks[1].parameters())


def test_flops_nar_matches_tread_and_both_save_on_the_span():
    net = _net(image_size=32, dim=32, depth=6, route_start=1, route_end=4)
    f = {r: training_flops(net, routing=r, batch_size=30) for r in ("none", "tread",
                                                                     "noise_aware")}  # fmt: skip
    assert abs(f["noise_aware"] / f["tread"] - 1) < 0.05
    assert f["tread"] < 0.75 * f["none"]  # 4 of 6 blocks at half the tokens: ~0.67
    assert f["tread"] > 0.5 * f["none"]


@pytest.mark.parametrize("kw, word", [
    ({"image_size": 30}, "image_size"),
    ({"route_start": 2, "route_end": 2}, "route_start"),
    ({"route_start": 3, "route_end": 1}, "route_start"),
    ({"route_end": 4}, "route_end"),
    ({"route_start": -1}, "route_start"),
    ({"dim": 30}, "dim"),
])  # fmt: skip
def test_bad_construction(kw, word):
    with pytest.raises(ValueError, match=word):
        _net(**kw)


def test_bad_forward_inputs():
    net = _net()
    x, t, y = _batch()
    with pytest.raises(ValueError, match="y"):
        net(x, t, torch.full_like(y, 11))
    with pytest.raises(ValueError, match="x"):
        net(torch.full_like(x, float("nan")), t, y)
    with pytest.raises(ValueError, match="x"):
        net(x[:, :, :8], t, y)
    with pytest.raises(ValueError, match="ratio"):
        net.train()(x, t, y, routing="tread", ratio=1.0)
    with pytest.raises(ValueError, match="routing"):
        net(x, t, y, routing="random")
    with pytest.raises(ValueError, match="t"):
        net.train()(x, t + 1000, y, routing="noise_aware")
