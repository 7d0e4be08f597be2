"""beta_tta: oracles (closed forms, autograd, matplotlib's HSV, statistics), the API
boundary (call accounting, no gradient leak, a real HTTP endpoint in another process),
properties and bad input."""

from __future__ import annotations

import math

import matplotlib.colors as mcolors
import numpy as np
import pytest
import torch
from torch import nn

from neurips26.common.models import SmallCNN
from neurips26.papers.beta_tta import (
    BETA,
    CORRUPTIONS,
    TENT,
    BlackBoxAPI,
    BlackBoxServer,
    NoAdaptation,
    PosthocEM,
    ZOOPrompt,
    check_probabilities,
    confidence_filter,
    corrupt,
    disk_kernel,
    entropy,
    harmonize,
    make_stream,
    norm_layers,
    spsa_gradient,
)
from neurips26.papers.beta_tta.corruptions import (
    BRIGHTNESS_SHIFT,
    CONTRAST_FACTOR,
    GAUSSIAN_SIGMA,
    IMPULSE_AMOUNT,
    SHOT_PHOTONS,
)

RNG = np.random.default_rng(0)
IMAGES = np.clip(RNG.normal(0.4, 0.25, size=(6, 1, 12, 12)), 0, 1).astype(np.float32)


def _nets(seed=0, classes=4):
    torch.manual_seed(seed)
    return (SmallCNN(1, (6, 8), classes, batch_norm=True).eval(),
            SmallCNN(1, (3,), classes, batch_norm=True).eval())  # fmt: skip


def _stream(n=24, b=8, seed=1):
    rng = np.random.default_rng(seed)
    return make_stream(rng.random((n, 1, 12, 12), dtype=np.float32), rng.integers(0, 4, n),
                       batch_size=b)  # fmt: skip


# ------------------------------------------------------------------ harmonize


def test_harmonize_weight0_is_log_pf_and_normalised():
    p = torch.softmax(torch.randn(5, 7, dtype=torch.float64), 1)
    z = torch.randn(5, 7, dtype=torch.float64)
    assert torch.allclose(harmonize(p, z, weight=0.0), torch.log(p), atol=1e-12)
    for w in (0.3, 1.0, 4.0):
        assert torch.allclose(torch.logsumexp(harmonize(p, z, weight=w), 1),
                              torch.zeros(5, dtype=torch.float64), atol=1e-12)  # fmt: skip


def test_harmonize_is_the_normalised_product():
    p = torch.softmax(torch.randn(3, 4, dtype=torch.float64), 1)
    z = torch.randn(3, 4, dtype=torch.float64)
    ps = torch.softmax(z, 1)
    prod = p * ps**2
    assert torch.allclose(harmonize(p, z, weight=2.0).exp(), prod / prod.sum(1, keepdim=True))


@pytest.mark.parametrize("w", [0.5, 1.0, 2.5])
def test_harmonize_jacobian_closed_form(w):
    p = torch.softmax(torch.randn(1, 5, dtype=torch.float64), 1)
    z = torch.randn(1, 5, dtype=torch.float64, requires_grad=True)
    jac = torch.autograd.functional.jacobian(lambda t: harmonize(p, t, weight=w)[0], z)[:, 0]
    ph = harmonize(p, z, weight=w).exp()[0].detach()
    closed = w * (torch.eye(5, dtype=torch.float64) - ph[None, :])  # w (delta_kj - p_h[j])
    assert torch.allclose(jac, closed, atol=1e-10)
    assert torch.autograd.gradcheck(lambda t: harmonize(p, t, weight=w), (z,))


def test_harmonize_does_not_differentiate_the_black_box():
    p = torch.softmax(torch.randn(2, 3), 1).requires_grad_(True)
    z = torch.randn(2, 3, requires_grad=True)
    harmonize(p, z).sum().backward()
    assert p.grad is None and z.grad is not None


# ------------------------------------------------------------------ filtering


@pytest.mark.parametrize("b,keep", [(10, 0.5), (7, 0.5), (9, 0.3), (4, 1.0), (5, 0.01)])
def test_confidence_filter_keeps_ceil_lowest_entropy(b, keep):
    lp = torch.log_softmax(torch.randn(b, 6) * 3, 1)
    mask = confidence_filter(lp, keep=keep)
    n = math.ceil(keep * b)
    assert int(mask.sum()) == n
    h = entropy(lp).numpy()
    assert h[mask.numpy()].max() <= np.sort(h)[n - 1] + 1e-7


def test_entropy_closed_forms():
    uniform = torch.log(torch.full((2, 8), 1 / 8))
    assert torch.allclose(entropy(uniform), torch.full((2,), math.log(8)))
    one_hot = torch.log(torch.tensor([[1.0, 1e-30]]))
    assert float(entropy(one_hot)[0]) < 1e-25


# ------------------------------------------------------------------ corruptions


@pytest.mark.parametrize("kind", sorted(CORRUPTIONS))
def test_corruption_identity_range_and_monotone(kind):
    x = IMAGES
    assert np.array_equal(corrupt(x, kind, 0, rng=np.random.default_rng(0)), x)
    mse = []
    for s in range(6):
        y = corrupt(x, kind, s, rng=np.random.default_rng(3))
        assert y.shape == x.shape and y.dtype == np.float32
        assert y.min() >= 0 and y.max() <= 1
        mse.append(float(((y - x) ** 2).mean()))
    assert np.all(np.diff(mse) > 0), mse


@pytest.mark.parametrize("s", range(1, 6))
def test_contrast_closed_form(s):
    x = IMAGES
    m = x.mean(axis=(1, 2, 3), keepdims=True)
    assert np.allclose(corrupt(x, "contrast", s), (x - m) * CONTRAST_FACTOR[s - 1] + m, atol=1e-6)


@pytest.mark.parametrize("s", [1, 3, 5])
def test_brightness_matches_matplotlib_hsv(s):
    rgb = np.random.default_rng(s).random((4, 3, 5, 5))
    ours = corrupt(rgb, "brightness", s)
    hsv = mcolors.rgb_to_hsv(rgb.transpose(0, 2, 3, 1))
    hsv[..., 2] = np.clip(hsv[..., 2] + BRIGHTNESS_SHIFT[s - 1], 0, 1)
    ref = mcolors.hsv_to_rgb(hsv).transpose(0, 3, 1, 2)
    assert np.allclose(ours, ref, atol=1e-5)
    grey = np.full((1, 1, 3, 3), 0.2)
    assert np.allclose(corrupt(grey, "brightness", s), 0.2 + BRIGHTNESS_SHIFT[s - 1])


def test_noise_statistics():
    x = np.full((200, 1, 20, 20), 0.5)
    n = x.size
    for s in (1, 3):
        r = corrupt(x, "gaussian_noise", s, rng=np.random.default_rng(s)) - 0.5
        sd = GAUSSIAN_SIGMA[s - 1]
        assert abs(r.mean()) < 4 * sd / math.sqrt(n)
        assert abs(r.std() / sd - 1) < 0.01  # no clipping at 0.5 +- 3 sigma for these s
        lam = SHOT_PHOTONS[s - 1]
        y = corrupt(x, "shot_noise", s, rng=np.random.default_rng(s))  # Poisson(0.5 lam)/lam
        assert abs(y.mean() - 0.5) < 4 * math.sqrt(0.5 / lam / n)
        if s == 1:  # Poisson(30) / 60 is (almost) never clipped at 1: variance 0.5 / lam
            assert abs(y.var() / (0.5 / lam) - 1) < 0.02
        z = corrupt(x, "impulse_noise", s, rng=np.random.default_rng(s))
        hit = (z != np.float32(0.5)).mean()
        a = IMPULSE_AMOUNT[s - 1]
        assert abs(hit - a) < 4 * math.sqrt(a * (1 - a) / n)
        assert set(np.unique(z[z != np.float32(0.5)])) <= {0.0, 1.0}


def test_blur_and_pixelate_properties():
    const = np.full((2, 1, 14, 14), 0.3)
    for kind in ("defocus_blur", "gaussian_blur", "pixelate"):
        assert np.allclose(corrupt(const, kind, 5), 0.3, atol=1e-6)
    k = disk_kernel(2.0)
    assert math.isclose(k.sum(), 1.0) and np.allclose(k, k.T) and np.allclose(k, k[::-1])
    # Pixelation is a projection: pixelating a pixelated image changes nothing.
    p = corrupt(IMAGES, "pixelate", 4)
    assert np.allclose(corrupt(p, "pixelate", 4), p, atol=1e-6)
    # ... that preserves each image's mean for a grid that divides the image evenly.
    x = np.random.default_rng(1).random((3, 1, 20, 20))
    assert np.allclose(corrupt(x, "pixelate", 2).mean(axis=(1, 2, 3)), x.mean(axis=(1, 2, 3)),
                       atol=1e-6)  # fmt: skip


def test_corrupt_bad_input():
    with pytest.raises(ValueError, match="kind"):
        corrupt(IMAGES, "fog", 3)
    with pytest.raises(ValueError, match="severity"):
        corrupt(IMAGES, "contrast", 6)
    with pytest.raises(TypeError, match="rng"):
        corrupt(IMAGES, "gaussian_noise", 2, rng=None)
    with pytest.raises(ValueError, match="images"):
        corrupt(IMAGES[0], "contrast", 2)
    with pytest.raises(ValueError, match="images"):
        corrupt(IMAGES + 2, "contrast", 2)


# ------------------------------------------------------------------ SPSA


def test_spsa_mean_matches_autograd():
    theta0 = np.array([0.3, -0.7, 1.1, 0.2])
    a = np.array([[2.0, 0.3, 0, 0], [0.3, 1.0, 0, 0], [0, 0, 0.5, 0.1], [0, 0, 0.1, 3.0]])

    def f_np(t):  # (n, 4) -> (n,)
        return np.sin(t).sum(1) + np.einsum("ni,ij,nj->n", t, a, t) + np.exp(0.3 * t[:, 0])

    t = torch.tensor(theta0, requires_grad=True)
    (torch.sin(t).sum() + t @ torch.tensor(a) @ t + torch.exp(0.3 * t[0])).backward()
    rng = np.random.default_rng(0)
    est = np.stack([spsa_gradient(f_np, theta0, num_directions=1, perturbation=1e-3, rng=rng)
                    for _ in range(5000)])  # fmt: skip
    se = est.std(0, ddof=1) / math.sqrt(len(est))
    assert np.all(np.abs(est.mean(0) - t.grad.numpy()) < 3 * se + 1e-6)


# ------------------------------------------------------------------ the API boundary


def test_api_returns_numpy_probabilities_and_counts():
    black, _ = _nets()
    api = BlackBoxAPI(black, input_shape=(1, 12, 12))
    p = api(IMAGES)
    assert isinstance(p, np.ndarray) and p.shape == (6, 4)
    assert np.allclose(p.sum(1), 1) and api.num_calls == 6 and api.num_requests == 1
    api.reset()
    assert api.num_calls == 0
    with pytest.raises(ValueError, match="x"):
        api(np.zeros((2, 1, 10, 10), np.float32))


class OncePerBatch:
    """An API wrapper that raises on a second call for the same batch."""

    def __init__(self, api):
        self.api, self.seen = api, set()
        self.input_shape = api.input_shape

    def __call__(self, x):
        key = np.asarray(x).tobytes()
        if key in self.seen:
            raise AssertionError("second call for the same batch")
        self.seen.add(key)
        return self.api(x)

    @property
    def num_calls(self):
        return self.api.num_calls

    @property
    def forward_time(self):
        return self.api.forward_time


def test_beta_calls_the_api_once_per_sample_and_leaks_no_gradient():
    black, steer = _nets()
    api = BlackBoxAPI(black, input_shape=(1, 12, 12))
    beta = BETA(OncePerBatch(api), steer, num_views=3, lr=1e-2)
    for x, _ in _stream():
        before = api.num_calls
        out = beta.step(x)
        assert api.num_calls - before == len(x) == out.api_calls
    assert all(p.grad is None for p in black.parameters())
    assert beta.prompt_.abs().max() > 0  # it adapted
    res = BETA(api, steer).run(_stream())
    assert res.calls_per_sample == 1.0 and res.api_calls == res.num_samples == 24


class CountOnly:
    """A user's API: callable with a num_calls counter and nothing else (no forward_time)."""

    def __init__(self, api):
        self.api = api

    def __call__(self, x):
        return self.api(x)

    @property
    def num_calls(self):
        return self.api.num_calls


def test_run_accepts_an_api_without_forward_time():
    black, steer = _nets()
    api = BlackBoxAPI(black, input_shape=(1, 12, 12))
    for method in (BETA(CountOnly(api), steer), NoAdaptation(CountOnly(api)),
                   ZOOPrompt(CountOnly(api), num_directions=1)):  # fmt: skip
        res = method.run(_stream())
        assert res.num_samples == 24 and 0 <= res.accuracy <= 1
        assert math.isnan(res.api_time_per_sample) and math.isnan(res.added_latency_per_sample)
        assert res.time_per_sample > 0


def test_beta_leaves_the_steering_model_untouched_and_is_deterministic():
    black, steer = _nets()
    before = {k: v.clone() for k, v in steer.state_dict().items()}
    runs = [BETA(BlackBoxAPI(black), steer, seed=3, lr=1e-2).run(_stream()) for _ in range(2)]
    assert np.array_equal(runs[0].predictions, runs[1].predictions)
    assert all(torch.equal(before[k], v) for k, v in steer.state_dict().items())


def test_beta_episodic_resets():
    black, steer = _nets()
    beta = BETA(BlackBoxAPI(black), steer, episodic=True, lr=0.1)
    x = _stream()[0][0]
    a, b = beta.step(x), beta.step(x)
    assert np.allclose(a.probs, b.probs)


def test_beta_weight0_predicts_like_the_prompted_black_box():
    black, steer = _nets()
    out = BETA(BlackBoxAPI(black), steer, harmonize_weight=0.0).step(IMAGES)
    ref = BlackBoxAPI(black)(IMAGES)  # the prompt is still zero on the first batch
    assert np.allclose(out.probs, ref, atol=1e-6)


def test_zoo_calls_2q_plus_1_per_sample():
    black, _ = _nets()
    for q in (1, 3):
        res = ZOOPrompt(BlackBoxAPI(black), num_directions=q).run(_stream())
        assert res.calls_per_sample == 2 * q + 1


def test_baselines_run_and_count():
    black, _ = _nets()
    s = _stream()
    assert NoAdaptation(BlackBoxAPI(black)).run(s).calls_per_sample == 1
    assert PosthocEM(BlackBoxAPI(black)).run(s).calls_per_sample == 1
    t = TENT(black)
    res = t.run(s)
    assert res.calls_per_sample == 1 and t.num_calls == 24
    assert all(p.grad is None for p in black.parameters())  # TENT adapts a copy


def test_posthoc_em_recovers_a_shifted_prior():
    # Two 1-D Gaussian classes (means -1, +1, sd 1) with a uniform training prior; the test
    # prior is (0.8, 0.2). The API's posteriors are exact; EM must find the test prior.
    rng = np.random.default_rng(0)
    y = (rng.random(4000) < 0.2).astype(int)
    t = rng.normal(np.where(y == 1, 1.0, -1.0), 1.0)
    logits = np.stack([-(t + 1) ** 2 / 2, -(t - 1) ** 2 / 2], 1)  # uniform-prior log posterior
    api = BlackBoxAPI(nn.Flatten(), input_shape=(1, 1, 2))
    em = PosthocEM(api, max_iter=500, tol=1e-10)
    out = None
    for xb, _ in make_stream(logits[:, None, None, :], y, batch_size=1000):
        out = em.step(xb)
    w = api(logits[:, None, None, :]) * 0  # (unused) keeps the API's counter honest
    assert w.shape == (4000, 2)
    prior = out.probs[:, 1].mean()  # posterior mean under the estimated prior ~ prior
    assert abs(prior - 0.2) < 0.03


def test_http_black_box_in_another_process():
    black, steer = _nets()
    stream = _stream()
    local = BETA(BlackBoxAPI(black, input_shape=(1, 12, 12)), steer, seed=1).run(stream)
    with BlackBoxServer(black, input_shape=(1, 12, 12)) as server:
        client = server.client()
        p = client(IMAGES)
        assert isinstance(p, np.ndarray)
        assert np.allclose(p, BlackBoxAPI(black)(IMAGES), atol=1e-6)
        remote = BETA(client, steer, seed=1).run(stream)
        stats = client.server_stats()
        assert stats["num_calls"] == client.num_calls == 6 + 24
        assert stats["num_requests"] == 1 + len(stream)
        with pytest.raises(ValueError, match="x"):
            client(np.zeros((2, 1, 5, 5), np.float32))  # the server refuses the shape
    assert np.array_equal(local.predictions, remote.predictions)
    assert remote.calls_per_sample == 1.0


# ------------------------------------------------------------------ bad input


class _LogitAPI:
    num_calls = 0
    forward_time = 0.0
    input_shape = None

    def __init__(self, fill):
        self.fill = fill

    def __call__(self, x):
        self.num_calls += len(x)
        return np.full((len(x), 4), self.fill)


def test_beta_bad_input():
    black, steer = _nets()
    api = BlackBoxAPI(black, input_shape=(1, 12, 12))
    with pytest.raises(ValueError, match="x"):
        BETA(api, steer).step(IMAGES[:, 0])  # 3-D
    with pytest.raises(ValueError, match="x"):
        BETA(api, steer).step(np.zeros((2, 1, 8, 8), np.float32))  # not the API's shape
    nan = IMAGES.copy()
    nan[0, 0, 0, 0] = np.nan
    with pytest.raises(ValueError, match="x"):
        BETA(api, steer).step(nan)
    with pytest.raises(ValueError, match="logits"):
        BETA(_LogitAPI(3.0), steer).step(IMAGES)
    beta = BETA(_LogitAPI(np.nan), steer, lr=0.1)
    with pytest.raises(ValueError, match="api output"):
        beta.step(IMAGES)
    assert beta.prompt_.abs().max() == 0  # nothing adapted on NaN outputs
    for kw, name in [({"keep": 0.0}, "keep"), ({"keep": 1.5}, "keep"),
                     ({"num_views": 0}, "num_views"), ({"lr": -1.0}, "lr"),
                     ({"steps": 0}, "steps"),
                     ({"lr": float("nan")}, "lr"), ({"prompt_eps": -1.0}, "prompt_eps")]:
        with pytest.raises(ValueError, match=name):
            BETA(api, steer, **kw)
    with pytest.raises(ValueError, match="steering_model"):
        BETA(api, SmallCNN(1, (3,), 5, batch_norm=True)).step(IMAGES)  # 5 classes, API 4
    with pytest.raises(ValueError, match="steering_model"):
        BETA(api, SmallCNN(1, (3,), 4))  # no norm layers to adapt
    with pytest.raises(TypeError, match="api"):
        BETA(object(), steer)
    with pytest.raises(ValueError, match="model"):
        TENT(SmallCNN(1, (3,), 4))
    with pytest.raises(ValueError, match="lr"):
        ZOOPrompt(api, lr=0.0)
    with pytest.raises(ValueError, match="lr"):
        TENT(black, lr=0.0)


def test_check_probabilities_hints_at_logits():
    with pytest.raises(ValueError, match="softmax"):
        check_probabilities(np.array([[2.0, -1.0]]))
    with pytest.raises(ValueError, match="probs"):
        check_probabilities(np.array([[0.5, np.nan]]))


def test_lr0_control_moves_nothing_and_steps_add_no_calls():
    black, steer = _nets()
    # lr 0: the harmonized prediction without adaptation; prompt and affine stay put.
    beta0 = BETA(BlackBoxAPI(black), steer, lr=0.0, steps=3)
    beta0.run(_stream())
    assert float(beta0.prompt_.detach().abs().max()) == 0.0
    src = [p.detach() for p in norm_layers(steer)[0].parameters()]
    for a, b in zip(norm_layers(beta0.steering_)[0].parameters(), src, strict=True):
        assert torch.equal(a.detach(), b)
    # More steps per batch: still one call per sample, and the prompt moves further.
    moved = []
    for steps in (1, 4):
        api = BlackBoxAPI(black)
        beta = BETA(api, steer, lr=1e-2, steps=steps, seed=1)
        res = beta.run(_stream())
        assert res.calls_per_sample == 1.0 and api.num_calls == res.num_samples
        moved.append(float(beta.prompt_.detach().pow(2).mean().sqrt()))
    assert moved[1] > 1.5 * moved[0] > 0, moved
