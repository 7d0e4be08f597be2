"""discriminator_rl: oracles for the flow, the discriminator, the tilt and the metrics."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from scipy import linalg
from torch import nn

from neurips26.common.models import MLPClassifier
from neurips26.papers.discriminator_rl import (
    ClassifierFeatures,
    DiscriminatorGuidedRL,
    VelocityMLP,
    conditional_path,
    discriminator_rl,
    drl_round,
    eight_gaussians,
    exact_log_likelihood,
    flow_matching_loss,
    frechet_distance,
    precision_recall,
    sample,
    tilt_weights,
    train_discriminator,
    train_flow_matching,
    two_moons,
)


class Linear(nn.Module):
    """``v(x, t) = a + B x``: a flow whose time-1 map is affine and Gaussian-to-Gaussian."""

    def __init__(self, a, b):
        super().__init__()
        self.a = nn.Parameter(torch.as_tensor(a, dtype=torch.float64))
        self.b = nn.Parameter(torch.as_tensor(b, dtype=torch.float64))
        self.dim = len(a)
        self.num_classes = None

    def forward(self, x, t, y=None):
        return self.a + x @ self.b.T


def test_fm_path_and_loss_match_torchcfm():
    from torchcfm.conditional_flow_matching import ConditionalFlowMatcher

    g = torch.Generator().manual_seed(0)
    x0, x1, t = torch.randn(64, 5, generator=g), torch.randn(64, 5, generator=g), torch.rand(
        64, generator=g)  # fmt: skip
    t_cfm, xt_cfm, ut_cfm = ConditionalFlowMatcher(sigma=0.0).sample_location_and_conditional_flow(
        x0, x1, t=t)  # fmt: skip
    xt, ut = conditional_path(x0, x1, t)
    torch.testing.assert_close(xt, xt_cfm)
    torch.testing.assert_close(ut, ut_cfm)
    torch.manual_seed(0)
    net = VelocityMLP(dim=5, hidden=16)
    ref = torch.mean((net(xt_cfm, t_cfm) - ut_cfm) ** 2)  # torchcfm's examples' loss
    torch.testing.assert_close(flow_matching_loss(net, x0, x1, t), ref)
    w = torch.rand(64, generator=g)
    weighted = ((net(xt, t) - ut) ** 2).mean(1) @ w / w.sum()
    torch.testing.assert_close(flow_matching_loss(net, x0, x1, t, sample_weight=w), weighted)


def test_exact_log_likelihood_of_linear_flow_is_gaussian():
    a = np.array([0.5, -1.0])
    b = np.array([[0.3, -0.4], [0.2, -0.1]])
    model = Linear(a, b)
    # x_1 = e^B x_0 + B^{-1}(e^B - I) a, x_0 ~ N(0, I): a Gaussian with known mean and cov.
    eb = linalg.expm(b)
    mean = np.linalg.solve(b, (eb - np.eye(2)) @ a)
    cov = eb @ eb.T
    x = np.random.default_rng(0).normal(size=(50, 2)) * 2
    from scipy.stats import multivariate_normal

    truth = multivariate_normal(mean, cov).logpdf(x)
    np.testing.assert_allclose(exact_log_likelihood(model, x, num_steps=64), truth, atol=1e-6)
    # ...and samples of the same flow have that mean and covariance
    s = sample(model, num_samples=20000, num_steps=64, method="midpoint", seed=1)
    np.testing.assert_allclose(s.x.mean(0), mean, atol=0.05)
    np.testing.assert_allclose(np.cov(s.x.T), cov, atol=0.06)


def test_exact_log_likelihood_matches_torchdiffeq_cnf():
    from torchdiffeq import odeint

    torch.manual_seed(3)
    net = VelocityMLP(dim=2, hidden=32).double()
    x = torch.as_tensor(np.random.default_rng(1).normal(size=(40, 2)))

    def aug(t, state):  # an independent CNF: (x, int div) backwards in time with dopri5
        z = state[:, :2].detach().requires_grad_(True)
        with torch.enable_grad():
            v = net(z, t.expand(len(z)))
            div = sum(torch.autograd.grad(v[:, i].sum(), z, retain_graph=True)[0][:, i]
                      for i in range(2))  # fmt: skip
        return torch.cat([v, div[:, None]], 1).detach()

    state = torch.cat([x, torch.zeros(len(x), 1, dtype=x.dtype)], 1)
    out = odeint(aug, state, torch.tensor([1.0, 0.0], dtype=x.dtype), rtol=1e-9, atol=1e-9)[-1]
    z0, neg_int = out[:, :2], out[:, 2]  # integrating 1 -> 0 gives -int_0^1 div dt
    ref = (-0.5 * (z0**2).sum(1) - np.log(2 * np.pi) + neg_int).numpy()
    np.testing.assert_allclose(exact_log_likelihood(net, x.numpy(), num_steps=64), ref,
                               atol=1e-5)  # fmt: skip


@pytest.mark.parametrize("dtype", [torch.float16, torch.float64])
def test_flow_inputs_of_another_float_dtype_are_computed_in_the_models(dtype):
    from neurips26.papers.discriminator_rl.flow import integrate

    net = VelocityMLP(dim=2, hidden=8, depth=1)
    g = torch.Generator().manual_seed(0)
    x0, x1, t = torch.randn(6, 2, generator=g), torch.randn(6, 2, generator=g), torch.rand(6)
    ref = flow_matching_loss(net, x0, x1, t)
    got = flow_matching_loss(net, x0.to(dtype), x1.to(dtype), t)  # raised a torch dtype error
    assert got.dtype == torch.float32
    assert torch.allclose(got, ref, rtol=1e-2 if dtype == torch.float16 else 1e-6)
    out = integrate(net, x0.to(dtype), num_steps=2)
    assert out.dtype == torch.float32
    assert torch.allclose(out, integrate(net, x0, num_steps=2), atol=1e-2)


def test_flow_matching_learns_a_gaussian():
    rng = np.random.default_rng(0)
    mean, sd = np.array([2.0, -1.0]), np.array([0.5, 1.0])
    data = mean + sd * rng.standard_normal((4000, 2))
    torch.manual_seed(0)
    net = VelocityMLP(dim=2, hidden=64, depth=2)
    train_flow_matching(net, data, max_iter=1500, lr=3e-3, batch_size=256, seed=0)
    s = sample(net, num_samples=4000, seed=1).x
    np.testing.assert_allclose(s.mean(0), mean, atol=0.05 * np.abs(mean).max())
    np.testing.assert_allclose(s.std(0), sd, rtol=0.05)


def test_logistic_discriminator_recovers_gaussian_log_ratio():
    rng = np.random.default_rng(0)
    cov = np.array([[1.0, 0.3], [0.3, 0.5]])
    mu1, mu0 = np.array([0.8, -0.2]), np.array([-0.2, 0.4])
    chol = np.linalg.cholesky(cov)
    a = mu1 + rng.standard_normal((20000, 2)) @ chol.T
    b = mu0 + rng.standard_normal((20000, 2)) @ chol.T
    d = train_discriminator(a, b, hidden=0, weight_decay=0.0, max_iter=3000, lr=0.02,
                            batch_size=4096, patience=20, seed=0)  # fmt: skip
    # The analytic log-ratio: w = Sigma^-1 (mu1 - mu0), c = -(mu1' S^-1 mu1 - mu0' S^-1 mu0) / 2
    w = np.linalg.solve(cov, mu1 - mu0)
    c = -0.5 * (mu1 @ np.linalg.solve(cov, mu1) - mu0 @ np.linalg.solve(cov, mu0))
    grid = rng.normal(size=(200, 2))
    coef, *_ = np.linalg.lstsq(np.c_[grid, np.ones(200)], d.logit(grid), rcond=None)
    np.testing.assert_allclose(coef[:2], w, rtol=0.05)
    assert abs(coef[2] - c) < 0.05 * np.abs(w).max()


def test_discriminator_collapse_warns_caps_or_raises():
    rng = np.random.default_rng(0)
    a, b = rng.normal(10, 0.1, (200, 2)), rng.normal(-10, 0.1, (200, 2))
    with pytest.warns(RuntimeWarning, match="not a usable log-ratio"):
        d = train_discriminator(a, b, hidden=8, max_iter=200, lr=1e-2, seed=0)
    assert d.collapsed_ and np.abs(d.logit(np.array([[100.0, 100.0]]))).max() <= d.max_logit
    with pytest.raises(RuntimeError, match="held-out accuracy"):
        train_discriminator(a, b, hidden=8, max_iter=200, lr=1e-2, strict=True, seed=0)


def test_tilt_weights_reproduce_tilted_expectation():
    rng = np.random.default_rng(0)
    x = rng.standard_normal(200000)  # p_ref = N(0, 1)
    a, beta = 0.8, 2.0
    tw = tilt_weights(a * x, beta=beta, clip=1e9)  # p_ref exp(a x / beta) = N(a / beta, 1)
    assert abs(tw.weights @ x - a / beta) < 4 / np.sqrt(tw.ess)
    assert abs(tw.weights @ x**2 - (1 + (a / beta) ** 2)) < 8 / np.sqrt(tw.ess)
    clipped = tilt_weights(5 * x, beta=1.0, clip=20.0)
    assert clipped.weights.max() <= 20.0 / len(x) * (1 + 1e-9)
    assert abs(clipped.weights.sum() - 1) < 1e-12 and clipped.ess > tw.ess * 0 + 20


def test_zero_reward_round_is_flow_matching_on_own_samples():
    data = eight_gaussians().sample(2000, np.random.default_rng(0))
    torch.manual_seed(0)
    net = VelocityMLP(dim=2, hidden=64, depth=2)
    train_flow_matching(net, data, max_iter=300, lr=3e-3, seed=0)
    before = sample(net, num_samples=2000, seed=5).x
    noise_level = frechet_distance(before, sample(net, num_samples=2000, seed=6).x)
    res = drl_round(net, data, reward_fn=lambda x: np.zeros(len(x)), num_samples=1024,
                    steps_per_round=100, lr=1e-4, seed=0)  # fmt: skip
    assert res.ess == pytest.approx(1024)  # r = 0: uniform weights
    after = sample(net, num_samples=2000, seed=5).x
    assert frechet_distance(before, after) < 3 * noise_level + 1e-3


def test_drl_moves_a_2d_model_towards_the_data():
    mix = eight_gaussians()
    rng = np.random.default_rng(0)
    data, held = mix.sample(3000, rng), mix.sample(500, rng)
    torch.manual_seed(0)
    net = VelocityMLP(dim=2, hidden=64, depth=2)
    train_flow_matching(net, data, max_iter=150, lr=3e-3, seed=0)  # under-trained
    nll0 = -exact_log_likelihood(net, held, num_steps=16).mean()
    est = DiscriminatorGuidedRL(num_rounds=3, num_samples=1024, steps_per_round=100,
                                lr=1e-3).fit(net, data, disc_kw={"max_iter": 300, "hidden": 64})
    nll1 = -exact_log_likelihood(est.model_, held, num_steps=16).mean()
    assert nll1 < nll0 - 0.05
    assert len(est.history_) == 3 and all(0.5 <= h.disc_accuracy <= 1 for h in est.history_)
    assert net is not est.model_  # fit works on a copy


def test_policy_gradient_round_follows_the_reward():
    torch.manual_seed(0)
    net = VelocityMLP(dim=2, hidden=32, depth=2)
    data = np.random.default_rng(0).normal(size=(500, 2))
    train_flow_matching(net, data, max_iter=200, lr=3e-3, seed=0)
    target = np.array([1.5, 0.0])
    before = sample(net, num_samples=1000, seed=3).x.mean(0)
    for s in range(3):
        drl_round(net, data, reward_fn=lambda x: -((x - target) ** 2).sum(1),
                  algorithm="policy_gradient", num_samples=256, steps_per_round=30, lr=3e-3,
                  num_steps=8, beta=0.01, seed=s)  # fmt: skip
    after = sample(net, num_samples=1000, seed=3).x.mean(0)
    assert np.linalg.norm(after - target) < np.linalg.norm(before - target) - 0.1


def test_low_ess_warns():
    net = VelocityMLP(dim=2, hidden=8)
    data = np.zeros((64, 2))
    with pytest.warns(RuntimeWarning, match="effective sample size"):
        drl_round(net, data, reward_fn=lambda x: 1e3 * x[:, 0], clip=1e6, num_samples=256,
                  steps_per_round=1, num_steps=2)  # fmt: skip


def test_frechet_distance_matches_sqrtm_formula_and_pot():
    import ot

    rng = np.random.default_rng(0)
    a = rng.normal(size=(500, 4)) @ rng.normal(size=(4, 4))
    b = rng.normal(size=(400, 4)) @ rng.normal(size=(4, 4)) + 1.0
    ma, mb, ca, cb = a.mean(0), b.mean(0), np.cov(a.T), np.cov(b.T)
    direct = ((ma - mb) ** 2).sum() + np.trace(ca + cb - 2 * np.real(linalg.sqrtm(ca @ cb)))
    assert frechet_distance(a, b) == pytest.approx(direct, rel=1e-9)
    w2 = float(ot.gaussian.bures_wasserstein_distance(ma, mb, ca, cb)) ** 2
    assert frechet_distance(a, b) == pytest.approx(w2, rel=1e-6)
    # diagonal Gaussians: sum (mu_a - mu_b)^2 + sum (sd_a - sd_b)^2
    x = rng.standard_normal((200000, 3))
    closed = 4.0 + (2.0 - 0.5) ** 2 * 3
    assert frechet_distance(x * 2.0, x[::-1] * 0.5 + [2.0, 0, 0]) == pytest.approx(closed, rel=0.02)


def test_frechet_distance_with_fewer_samples_than_features():
    """The nuclear-norm route (n * m <= F^2) equals the sqrtm formula."""
    rng = np.random.default_rng(1)
    a, b = rng.normal(size=(30, 60)), rng.normal(size=(25, 60)) * 1.5 + 0.3
    ma, mb, ca, cb = a.mean(0), b.mean(0), np.cov(a.T), np.cov(b.T)
    direct = ((ma - mb) ** 2).sum() + np.trace(ca + cb - 2 * np.real(linalg.sqrtm(ca @ cb)))
    assert frechet_distance(a, b) == pytest.approx(direct, rel=1e-6)
    assert frechet_distance(a, a) == pytest.approx(0.0, abs=1e-8)


def test_precision_recall_limits():
    x = np.random.default_rng(0).normal(size=(300, 2))
    y = np.random.default_rng(1).normal(size=(300, 2))
    pr = precision_recall(x, y)
    assert pr.precision > 0.85 and pr.recall > 0.85
    half = precision_recall(x, y[y[:, 0] > 0])  # covers half the real manifold
    assert half.precision > 0.85 and half.recall < 0.75


def test_mixture_density_normalises_and_moons_shape():
    mix = eight_gaussians()
    g = np.linspace(-4, 4, 401)
    xx, yy = np.meshgrid(g, g)
    p = np.exp(mix.log_prob(np.c_[xx.ravel(), yy.ravel()]))
    assert p.sum() * (g[1] - g[0]) ** 2 == pytest.approx(1.0, abs=1e-3)
    assert two_moons(100, rng=np.random.default_rng(0)).shape == (100, 2)


def test_shapes_conditional_sampling_and_features():
    torch.manual_seed(0)
    net = VelocityMLP(dim=64, hidden=32, num_classes=10)
    y = np.arange(10)
    s = sample(net, num_samples=10, num_steps=4, y=y, seed=0)
    assert s.x.shape == (10, 64) and s.y.tolist() == y.tolist()
    assert np.array_equal(s.x, sample(net, num_samples=10, num_steps=4, y=y, seed=0).x)
    phi = ClassifierFeatures(MLPClassifier(64, (16,), 10), (1, 8, 8))
    assert phi(s.x).shape == (10, 16) and phi.probabilities(s.x).shape == (10, 10)
    with pytest.raises(ValueError, match="y"):
        sample(net, num_samples=10)
    res = discriminator_rl(net, np.random.default_rng(0).uniform(-1, 1, (64, 64)), phi,
                           y=np.arange(64) % 10, num_rounds=1, num_samples=32,
                           steps_per_round=2, num_steps=2, disc_kw={"max_iter": 5})  # fmt: skip
    assert np.isfinite(res.history[0].fd_phi)


def test_phi_returning_nan_is_refused():
    net = VelocityMLP(dim=2, hidden=8)
    with pytest.raises(ValueError, match="phi"):
        drl_round(net, np.zeros((32, 2)), lambda x: np.full((len(x), 3), np.nan),
                  num_samples=8, steps_per_round=1, num_steps=2)  # fmt: skip
