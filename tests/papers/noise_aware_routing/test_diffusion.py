"""Diffusion: q_sample moments, DDIM/DDPM step-by-step against diffusers' schedulers,
closed-form Gaussian toy (exact optimal denoiser), route sensitivity, Frechet distance."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from torch import nn

from neurips26.common.models import SmallCNN
from neurips26.common.torch import seeded
from neurips26.papers.noise_aware_routing import (
    Evaluator,
    MiniDiT,
    NoiseSchedule,
    TrainResult,
    ddim_sample,
    ddim_timesteps,
    ddpm_sample,
    diffusion_loss,
    eval_schedule,
    frechet_distance,
    plateaued,
    route_sensitivity,
    train_diffusion,
)

diffusers = pytest.importorskip("diffusers")

SHAPE = (1, 2, 2)


class _Toy(nn.Module):
    """A fixed eps-predictor: the exact one for x0 ~ N(mu, s^2) i.i.d. per pixel.

    eps*(x_t, t) = sqrt(1 - a) (x_t - sqrt(a) mu) / (a s^2 + 1 - a).
    """

    sample_shape = SHAPE

    def __init__(self, schedule, mu=0.7, s=0.3):
        super().__init__()
        self.abar = schedule.alphas_cumprod.float()
        self.mu, self.s = mu, s

    def forward(self, x, t, y):
        a = self.abar[t].view(-1, 1, 1, 1)
        return (1 - a).sqrt() * (x - a.sqrt() * self.mu) / (a * self.s**2 + 1 - a)


def test_q_sample_moments_match_abar():
    sched = NoiseSchedule.linear(1000)
    x0 = torch.full((200_000, 1, 1, 1), 0.8)
    t = torch.full((200_000,), 600)
    xt = sched.q_sample(x0, t, torch.randn(x0.shape, generator=torch.Generator().manual_seed(0)))
    a = float(sched.alphas_cumprod[600])
    assert float(xt.mean()) == pytest.approx(math.sqrt(a) * 0.8, abs=5e-3)
    assert float(xt.var()) == pytest.approx(1 - a, rel=1e-2)


def test_schedule_matches_diffusers():
    ref = diffusers.DDPMScheduler(num_train_timesteps=1000, beta_schedule="linear")
    ours = NoiseSchedule.linear(1000)
    assert torch.allclose(ours.alphas_cumprod.float(), ref.alphas_cumprod, atol=1e-6)
    ddim = diffusers.DDIMScheduler(num_train_timesteps=1000)
    ddim.set_timesteps(50)
    assert ddim.timesteps.tolist() == ddim_timesteps(1000, 50).tolist()


def _diffusers_loop(scheduler, model, n, seed, **step_kw):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn((n, *SHAPE), generator=g)
    y = torch.zeros(n, dtype=torch.long)
    for t in scheduler.timesteps:
        eps = model(x, torch.full((n,), int(t)), y)
        x = scheduler.step(eps, t, x, generator=g, **step_kw).prev_sample
    return x


@pytest.mark.parametrize("eta", [0.0, 1.0])
def test_ddim_equals_diffusers_step_by_step(eta):
    sched = NoiseSchedule.linear(1000)
    model = _Toy(sched)
    ref = diffusers.DDIMScheduler(num_train_timesteps=1000, beta_schedule="linear",
                                  clip_sample=False, set_alpha_to_one=True)  # fmt: skip
    ref.set_timesteps(25)
    want = _diffusers_loop(ref, model, 16, seed=3, eta=eta)
    got = ddim_sample(model, torch.zeros(16, dtype=torch.long), schedule=sched, num_steps=25,
                      eta=eta, generator=torch.Generator().manual_seed(3))  # fmt: skip
    assert torch.allclose(got, want, atol=1e-4, rtol=1e-4)


def test_ddpm_equals_diffusers_step_by_step():
    sched = NoiseSchedule.linear(200)
    model = _Toy(sched)
    ref = diffusers.DDPMScheduler(num_train_timesteps=200, beta_schedule="linear",
                                  beta_end=0.02, clip_sample=False,
                                  variance_type="fixed_small")  # fmt: skip
    ref.set_timesteps(200)
    want = _diffusers_loop(ref, model, 16, seed=4)
    got = ddpm_sample(model, torch.zeros(16, dtype=torch.long), schedule=sched,
                      generator=torch.Generator().manual_seed(4))  # fmt: skip
    assert torch.allclose(got, want, atol=1e-4, rtol=1e-4)


def test_gaussian_toy_samplers_recover_the_data_distribution():
    # With the exact denoiser, DDIM over all 1000 steps (eta = 0: the probability-flow
    # ODE; eta = 1: ancestral DDPM) maps N(0, I) to N(mu, s^2); 50 DDIM steps nearly so.
    sched = NoiseSchedule.linear(1000)
    model = _Toy(sched, mu=0.7, s=0.3)
    y = torch.zeros(1500, dtype=torch.long)
    for kw, tol in (({"num_steps": 1000, "eta": 0.0}, 0.01), ({"num_steps": 1000, "eta": 1.0},
                    0.01), ({"num_steps": 50, "eta": 0.0}, 0.03)):  # fmt: skip
        x = ddim_sample(model, y, schedule=sched, generator=torch.Generator().manual_seed(0),
                        **kw)  # fmt: skip
        assert float(x.mean()) == pytest.approx(0.7, abs=0.01), kw
        assert float(x.std()) == pytest.approx(0.3, abs=tol), kw
    x = ddpm_sample(model, y, schedule=sched, generator=torch.Generator().manual_seed(1))
    assert float(x.mean()) == pytest.approx(0.7, abs=0.01)
    assert float(x.std()) == pytest.approx(0.3, abs=0.01)


def test_wrong_denoiser_fails_the_toy_oracle():
    # The oracle can fail: a denoiser for the wrong variance gives the wrong spread.
    sched = NoiseSchedule.linear(1000)
    x = ddim_sample(_Toy(sched, mu=0.7, s=0.6), torch.zeros(1500, dtype=torch.long),
                    schedule=sched, num_steps=50, generator=torch.Generator().manual_seed(0))
    assert abs(float(x.std()) - 0.3) > 0.1


def _net():
    with seeded(0):
        net = MiniDiT(image_size=8, patch_size=2, dim=16, depth=3, num_heads=2, route_start=1,
                      route_end=2)  # fmt: skip
    with torch.no_grad(), seeded(1):
        for p in net.parameters():
            p.add_(0.1 * torch.randn_like(p))
    return net


def test_diffusion_loss_and_cfg_sampling_run():
    net = _net().train()
    g = torch.Generator().manual_seed(0)
    x0, y = torch.rand(6, 1, 8, 8, generator=g) * 2 - 1, torch.arange(6)
    for routing in ("none", "tread", "noise_aware"):
        loss = diffusion_loss(net, x0, y, routing=routing, generator=g)
        assert loss.ndim == 0 and torch.isfinite(loss)
    out = ddim_sample(net, y, num_steps=5, cfg_scale=2.0, generator=g)
    assert out.shape == (6, 1, 8, 8) and net.training  # mode restored


@pytest.mark.parametrize("dtype", [torch.float16, torch.float64])
def test_images_of_another_float_dtype_are_computed_in_the_models(dtype):
    net = _net().train()
    x0, y, t = torch.rand(4, 1, 8, 8) * 2 - 1, torch.arange(4), torch.tensor([0, 9, 99, 999])
    noise = torch.randn(4, 1, 8, 8)

    def loss(x):
        return diffusion_loss(net, x, y, t=t, noise=noise, label_dropout=0.0)

    got = loss(x0.to(dtype))  # raised "Input type (double) and bias type (float)"
    assert got.dtype == torch.float32
    assert torch.allclose(got, loss(x0.to(dtype).float()))
    rs = route_sensitivity(net, x0.to(dtype), y, ratio=0.5, num_masks=2, t=t,
                           generator=torch.Generator().manual_seed(0))
    assert math.isfinite(rs.full_loss)
    with pytest.raises(TypeError, match=r"^x: expected the dtype of the model's weights"):
        net(x0.to(dtype), t, y)  # the module itself refuses, naming x


def test_route_sensitivity_grows_with_ratio_and_vanishes_at_zero():
    # On a (briefly) trained model routing perturbs it away from a loss minimum: R(r) > 0
    # and grows with r; at r = 0 it vanishes (same tokens, only reordered).
    g = torch.Generator().manual_seed(0)
    x0 = (torch.rand(128, 1, 8, 8, generator=g) > 0.5).float() * 2 - 1
    y = torch.arange(128) % 10
    net = _net()
    net, _ = train_diffusion(net, x0.numpy(), y.numpy(), routing="none", max_iter=80, lr=3e-3,
                             batch_size=64, ema_decay=0.0, seed=0)  # fmt: skip
    vals = [route_sensitivity(net, x0, y, ratio=r, num_masks=8,
                              generator=torch.Generator().manual_seed(1)) for r in (0.0, 0.5, 0.9)]
    assert abs(vals[0].value) < 1e-6
    assert 0 < vals[1].value < vals[2].value
    assert vals[1].std_error > 0 and len(vals[1].mask_losses) == 8


def test_frechet_distance_closed_form():
    rng = np.random.default_rng(0)
    a = rng.normal(size=(20_000, 3))
    b = rng.normal(size=(20_000, 3)) * 2.0  # N(0, 4 I): FD = 3 (1 + 4 - 2 * 2) = 3
    assert frechet_distance(a, b) == pytest.approx(3.0, rel=0.03)
    assert frechet_distance(a, a) == pytest.approx(0.0, abs=1e-6)


def test_bad_sampler_inputs():
    net = _net()
    with pytest.raises(ValueError, match="y"):
        ddim_sample(net, torch.tensor([11]))
    with pytest.raises(ValueError, match="num_steps"):
        ddim_sample(net, torch.tensor([1]), num_steps=0)
    with pytest.raises(ValueError, match="eta"):
        ddim_sample(net, torch.tensor([1]), eta=float("nan"))
    with pytest.raises(ValueError, match="x0"):
        diffusion_loss(net, torch.full((2, 1, 8, 8), float("nan")), torch.tensor([0, 1]))
    with pytest.raises(ValueError, match="y"):
        diffusion_loss(net, torch.zeros(2, 1, 8, 8), torch.tensor([0, 10]))
    with pytest.raises(ValueError, match="t"):
        diffusion_loss(net, torch.zeros(2, 1, 8, 8), torch.tensor([0, 1]),
                       t=torch.tensor([0, 1000]))


def test_eval_schedule_geometric_and_even():
    assert eval_schedule(10, 5).tolist() == [5, 10]
    assert eval_schedule(12, 5).tolist() == [5, 10, 12]
    g = eval_schedule(1000, 4, 1.25)
    assert g[0] == 4 and g[-1] == 1000 and (np.diff(g) >= 1).all()
    # consecutive steps grow by at most the ratio (rounded up), so any speedup
    # max_iter / s >= max_iter / 4 lies between two evaluations a factor ~1.25 apart
    assert (g[1:-1] / g[:-2] <= 1.25 + 1 / g[:-2]).all()
    assert eval_schedule(3, 5).tolist() == [3]
    with pytest.raises(ValueError, match="growth"):
        eval_schedule(10, 2, 0.5)


def test_plateaued_rule():
    # best of the late half against the best of the early half (steps <= s / 2)
    assert not plateaued([4, 8, 16], [1.0, 0.8, 0.7], 0.1)  # 0.7 < 0.9 * 0.8: improving
    assert plateaued([4, 8, 16], [1.0, 0.8, 0.75], 0.1)  # 0.75 > 0.72
    assert not plateaued([4], [1.0], 0.1)  # nothing early yet
    assert not plateaued([4, 5], [1.0, 1.0], 0.1)  # nothing at or before s / 2
    with pytest.raises(ValueError, match="val_loss"):
        plateaued([1, 2], [1.0], 0.1)


def test_steps_to_reach_reads_the_chosen_curve_and_skips_unsampled():
    nan = float("nan")
    r = TrainResult("none", np.array([10, 20, 40]), np.array([9.0, nan, 1.0]),
                    np.array([0.1, nan, 0.2]), np.array([1.0, 0.5, 0.25]), np.zeros(40), 0.0)
    assert r.steps_to_reach(5.0) == pytest.approx(10 + 30 * 4 / 8)  # FD: 10 -> 40
    assert r.steps_to_reach(0.75, "val_loss") == pytest.approx(15.0)
    assert r.steps_to_reach(2.0, "val_loss") == 10.0
    assert r.steps_to_reach(0.1, "val_loss") == float("inf")
    with pytest.raises(ValueError, match="metric"):
        r.steps_to_reach(1.0, "acc")


def test_train_diffusion_stops_on_plateau_and_samples_every_kth():
    g = torch.Generator().manual_seed(0)
    x0 = (torch.rand(64, 1, 8, 8, generator=g) > 0.5).float() * 2 - 1
    y = torch.arange(64) % 10
    with seeded(0):
        clf = SmallCNN(1, (4,), 10).eval()
    ev = Evaluator(clf, x0, x0[:16], y[:16], num_samples=10, num_steps=2)
    kw = {"routing": "none", "batch_size": 16, "lr": 3e-3, "evaluator": ev, "seed": 0,
          "eval_every": 2, "eval_growth": 1.5, "fd_every": 2}
    _, full = train_diffusion(_net(), x0.numpy(), y.numpy(), max_iter=30, **kw)
    assert full.steps.tolist() == eval_schedule(30, 2, 1.5).tolist() and not full.plateau
    sampled = np.isfinite(full.fd)
    assert sampled[::2].all() and not sampled[1:-1:2].any() and sampled[-1]
    assert np.isfinite(full.val_loss).all()
    # a tolerance of 0.99 stops at the first evaluation with an early half
    _, short = train_diffusion(_net(), x0.numpy(), y.numpy(), max_iter=30, plateau_tol=0.99,
                               **kw)  # fmt: skip
    assert short.plateau and len(short.losses) == short.steps[-1] < 30
    assert np.isfinite(short.fd[-1])
    # the same seed gives the same curve up to the stop
    n = len(short.steps)
    np.testing.assert_allclose(short.val_loss, full.val_loss[:n], rtol=1e-5)
    # not before min_iter
    _, late = train_diffusion(_net(), x0.numpy(), y.numpy(), max_iter=30, plateau_tol=0.99,
                              min_iter=10, **kw)  # fmt: skip
    assert late.plateau and late.steps[-1] == 12
