"""Reproduction of BETA on corrupted MNIST and Fashion-MNIST streams.

For each data set a black box (a BatchNorm CNN) and a much smaller steering model (a
BatchNorm CNN with a fraction of its parameters) are trained on clean training images.
The black box is then reachable only through :class:`BlackBoxAPI` (probabilities out,
every sample counted). For each ImageNet-C-style corruption, severity and seed, a stream of
corrupted test images is adapted to online by: no adaptation, post-hoc EM, zeroth-order
(SPSA) prompt tuning, TENT on the black box (white-box reference), TENT on the steering
model alone (the entropy-only ablation) and BETA. We measure accuracy, API calls per
sample and wall time per sample (within one run, as ratios).

Seeds vary the test subset, the corruption noise and the adaptation's randomness; the
networks are trained once per data set (cached; the cache is never needed). Uncertainties
are 95% Student-t half-widths over seeds (``seed_ci``) of the per-seed means over data sets
and corruptions.

Deviations from the paper
-------------------------
- Scale: the paper adapts ViT-B/16 and CLIP on ImageNet-C/R/Sketch and a commercial API;
  we adapt small CNNs on MNIST / Fashion-MNIST with our own numpy implementation of eight
  ImageNet-C corruptions (blur radii rescaled to 28-pixel images). No ImageNet-C is
  available offline.
- The harmonization (a product of experts), the filtering (TPT-style lowest-entropy
  selection) and the learnable state (an additive input prompt and the steering model's
  BatchNorm affine parameters) are our reading of the abstract.
- The steering model is trained on the same clean source data as the black box (the
  paper's steering model is a pretrained small network; its source is inferred). At the
  small tier the black box has about 15k parameters and the steering model about a tenth
  of that (the spec suggested about 100k and 10k; smaller to fit 2 CPU cores).
- ZOO's step size and SPSA perturbation (Adam, 1e-2; c = 0.05) are our choices.
- Short training (hundreds of steps on a subset) at the small tier.
- The pretrained EfficientNet-lite0 as a second black box on corrupted real photos is not
  run: there is no small white-box model trained on ImageNet to steer it with offline, and
  ZOO's 21 forwards per sample of a 4.6M-parameter network do not fit the small tier.
- The small tier uses severity 5 only and six of the eight corruptions (the paper tier all
  eight at severities 1-5); "negligible latency" is tested on counted FLOPs (torch's
  ``FlopCounterMode``), the wall-clock ratio is reported beside it as a volatile metric.

What does not reproduce at the small tier, and why we think so
----------------------------------------------------------------
- The gain over the unadapted black box is a few points, below the paper's +7.1. Our
  BatchNorm black box trained on clean digits collapses to near chance on strong noise and
  brightness shifts with very confident wrong outputs; in the product of experts such a
  confident anchor outweighs the steering model, and a 256-sample stream gives BETA only
  eight small Adam steps. On MNIST, noise, impulse noise and brightness gain nothing;
  the gains come from blur, contrast and pixelation there, and from every corruption on
  Fashion-MNIST, whose black box collapses less.
- BETA is far behind TENT on the black box. With BatchNorm networks, TENT's test-batch
  statistics repair exactly the shift our corruptions cause (brightness, noise); the
  paper's ViT/CLIP black boxes have LayerNorm, where that effect is absent. The spec
  expected this for small CNNs.
- The wall-clock ratio of BETA's added time to the black box's forward is above 2 (volatile,
  not a verdict): our black box is a tiny CNN, so Python overhead dominates; in counted
  FLOPs BETA adds less than one black-box forward.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from neurips26.common.cache import cache_key, cached_module
from neurips26.common.data import load_digits, load_fashion_mnist, load_mnist
from neurips26.common.experiment import RunResult, param
from neurips26.common.models import SmallCNN
from neurips26.common.plotting import figure_png, new_figure
from neurips26.common.stats import seed_ci
from neurips26.common.torch import make_generator, num_parameters, seeded
from neurips26.common.train import accuracy, array_batches, cosine_schedule, train

from . import (
    BETA,
    CORRUPTIONS,
    TENT,
    BlackBoxAPI,
    NoAdaptation,
    PosthocEM,
    ZOOPrompt,
    corrupt,
    harmonize,
    make_stream,
)

DATASETS = ("digits", "mnist", "fashion_mnist")
#: The small tier's six (shot noise and gaussian blur, near twins of gaussian noise and
#: defocus blur, only at the paper tier, to fit the time budget).
SMALL_CORRUPTIONS = ("gaussian_noise", "impulse_noise", "defocus_blur", "contrast",
                     "brightness", "pixelate")
METHODS = ("source", "em", "zoo", "tent_blackbox", "tent_steering", "beta")


@dataclass(frozen=True)
class Config:
    seed: int = 0
    datasets: tuple[str, ...] = param(("mnist", "fashion_mnist"), help="data sets",
                                      choices=DATASETS)
    corruptions: tuple[str, ...] = param(SMALL_CORRUPTIONS, help="corruptions",
                                         choices=tuple(CORRUPTIONS))
    severities: tuple[int, ...] = param((5,), help="severities (claims use the largest)",
                                        min=1, max=5)
    num_seeds: int = param(3, help="seeds (test subset, noise, adaptation)", min=1)
    num_train: int = param(6000, help="clean training images per data set", min=10)
    train_iter: int = param(500, help="training steps of each network", min=1)
    num_test: int = param(256, help="samples in each test stream", min=1)
    batch_size: int = param(32, help="test batch size", min=1)
    blackbox_channels: tuple[int, ...] = param((16, 32, 32), help="black-box CNN widths",
                                               min=1)
    steering_channels: tuple[int, ...] = param((8, 16), help="steering CNN widths", min=1)
    lr: float = param(1e-3, help="Adam step of BETA and TENT", min=1e-8, max=10.0)
    keep: float = param(0.5, help="BETA's filtering share rho", min=0.01, max=1.0)
    consistency_weight: float = param(1.0, help="lambda_c", min=0.0)
    num_views: int = param(2, help="views V (1 = no consistency)", min=1, max=16)
    prompt_eps: float = param(0.5, help="prompt clip eps", min=0.0, max=1.0)
    zoo_directions: int = param(10, help="SPSA directions q (2q+1 calls/sample)", min=1)
    zoo_lr: float = param(1e-2, help="Adam step of the ZOO prompt", min=1e-8, max=10.0)
    zoo_perturbation: float = param(0.05, help="SPSA perturbation c", min=1e-6, max=1.0)
    device: str = param("cpu", help="torch device", choices=("cpu", "cuda"))


TIERS = {
    "smoke": Config(datasets=("digits",), corruptions=("contrast", "gaussian_noise"),
                    severities=(5,), num_seeds=2, num_train=600, train_iter=150, num_test=64,
                    blackbox_channels=(8, 16), steering_channels=(4,), zoo_directions=2,
                    lr=1e-2),
    "small": Config(),
    "paper": Config(corruptions=tuple(CORRUPTIONS), num_seeds=5, num_train=60000,
                    train_iter=6000, num_test=2000,
                    severities=(1, 2, 3, 4, 5), blackbox_channels=(32, 64, 128),
                    steering_channels=(8, 16)),
}

METRICS = (
    "blackbox_clean_acc", "steering_clean_acc", "param_ratio",
    "source_acc", "em_acc", "zoo_acc", "tent_blackbox_acc", "tent_steering_acc", "beta_acc",
    "beta_gain", "beta_gain_ci", "beta_minus_tent", "beta_minus_tent_ci",
    "beta_minus_zoo", "beta_minus_zoo_ci", "beta_worst_drop", "tent_steering_worst_drop",
    "beta_gain_mild", "beta_calls_per_sample", "zoo_calls_per_sample", "zoo_call_ratio",
    "beta_time_per_sample", "blackbox_time_per_sample", "beta_added_latency_ratio",
    "zoo_added_latency_ratio", "beta_added_flops_ratio", "zoo_added_flops_ratio",
    "check_beta_calls_error", "check_zoo_calls_error", "check_no_grad_leak",
    "check_harmonize_weight0_error",
    "check_corruption_monotone",
)  # fmt: skip

VOLATILE = ("beta_time_per_sample", "blackbox_time_per_sample", "beta_added_latency_ratio",
            "zoo_added_latency_ratio")  # fmt: skip


def _data(name: str, cfg: Config):
    if name == "digits":
        ds = load_digits(16)
        return ds.subset(min(cfg.num_train, len(ds.y_train)), None, seed=0)
    ds = load_mnist() if name == "mnist" else load_fashion_mnist()
    return ds.subset(cfg.num_train, None, seed=0)


def _train_net(name: str, channels, ds, cfg: Config, tag: str):
    def build():
        with seeded(cfg.seed * 7919 + len(channels)):  # the init is a function of the seed
            return SmallCNN(1, channels, ds.num_classes, batch_norm=True)

    def fit(net):
        batches = array_batches(ds.x_train, ds.y_train, batch_size=min(64, len(ds.y_train)),
                                generator=make_generator(cfg.seed), device=cfg.device)
        train(net, batches, max_iter=cfg.train_iter, lr=3e-3, seed=cfg.seed, device=cfg.device,
              lr_schedule=cosine_schedule(cfg.train_iter, warmup=max(1, cfg.train_iter // 20)),
              desc=f"beta_tta {tag}")  # fmt: skip
        net.cpu()
        net.zero_grad(set_to_none=True)

    key = cache_key(f"beta_tta_{tag}", {"data": name, "channels": list(channels),
                                        "num_train": cfg.num_train, "iter": cfg.train_iter},
                    cfg.seed,
                    modules=("neurips26.common.models", "neurips26.papers.beta_tta"))  # fmt: skip
    net, _ = cached_module(f"beta_tta_{tag}", key, build, fit)
    net.zero_grad(set_to_none=True)
    return net.cpu().eval().requires_grad_(False)


@dataclass(frozen=True)
class Row:
    dataset: str
    corruption: str
    severity: int
    seed: int
    acc: dict  # method -> accuracy
    calls: dict  # method -> calls per sample
    time: dict  # method -> wall seconds per sample
    api_time: dict  # method -> seconds inside the black box per sample
    beta_calls_error: int  # max |calls in a BETA batch - batch size|
    grad_leak: bool


class _StrictCounter:
    """Wraps an API; records the largest deviation of any call's count from its batch."""

    def __init__(self, api):
        self.api = api
        self.worst = 0
        self.input_shape = api.input_shape

    def __call__(self, x):
        before = self.api.num_calls
        out = self.api(x)
        self.worst = max(self.worst, abs(self.api.num_calls - before - len(x)))
        return out

    @property
    def num_calls(self):
        return self.api.num_calls

    @property
    def forward_time(self):
        return self.api.forward_time


def _measure(dname, ds, black, steer, kind, sev, s, cfg: Config) -> Row:
    seed = 1000 * cfg.seed + s
    rng = np.random.default_rng([seed, sev, list(CORRUPTIONS).index(kind)])
    idx = rng.choice(len(ds.y_test), size=min(cfg.num_test, len(ds.y_test)), replace=False)
    x = corrupt(ds.x_test[idx], kind, sev, rng=rng)
    stream = make_stream(x, ds.y_test[idx], batch_size=cfg.batch_size)
    acc, calls, times, api_times = {}, {}, {}, {}

    def record(name, res):
        acc[name], calls[name] = res.accuracy, res.calls_per_sample
        times[name], api_times[name] = res.time_per_sample, res.api_time_per_sample

    shape = ds.image_shape
    record("source", NoAdaptation(BlackBoxAPI(black, input_shape=shape)).run(stream))
    record("em", PosthocEM(BlackBoxAPI(black, input_shape=shape)).run(stream))
    record("zoo", ZOOPrompt(BlackBoxAPI(black, input_shape=shape),
                            num_directions=cfg.zoo_directions, lr=cfg.zoo_lr,
                            perturbation=cfg.zoo_perturbation, prompt_eps=cfg.prompt_eps,
                            seed=seed).run(stream))  # fmt: skip
    record("tent_blackbox", TENT(black, lr=cfg.lr, device=cfg.device).run(stream))
    record("tent_steering", TENT(steer, lr=cfg.lr, device=cfg.device).run(stream))
    strict = _StrictCounter(BlackBoxAPI(black, input_shape=shape))
    beta = BETA(strict, steer, lr=cfg.lr, keep=cfg.keep,
                consistency_weight=cfg.consistency_weight, num_views=cfg.num_views,
                prompt_eps=cfg.prompt_eps, seed=seed, device=cfg.device)  # fmt: skip
    record("beta", beta.run(stream))
    leak = any(p.grad is not None for p in black.parameters())
    return Row(dname, kind, sev, s, acc, calls, times, api_times, strict.worst, leak)


def _warm_up(ds, black, steer, cfg: Config) -> None:
    """One discarded batch, so torch's one-off lazy set-up is not timed as BETA's latency."""
    stream = make_stream(ds.x_test[: cfg.batch_size], ds.y_test[: cfg.batch_size],
                         batch_size=cfg.batch_size)  # fmt: skip
    BETA(BlackBoxAPI(black), steer, num_views=cfg.num_views, device=cfg.device).run(stream)
    TENT(black, device=cfg.device).run(stream)


def _flops(ds, black, steer, cfg: Config) -> dict:
    """FLOPs per sample of one step of each method, counted by torch (machine-free)."""
    from torch.utils.flop_counter import FlopCounterMode

    x = ds.x_test[: cfg.batch_size]
    shape = ds.image_shape
    makers = {
        "source": lambda: NoAdaptation(BlackBoxAPI(black, input_shape=shape)),
        "beta": lambda: BETA(BlackBoxAPI(black, input_shape=shape), steer, lr=cfg.lr,
                             keep=cfg.keep, num_views=cfg.num_views, device=cfg.device),
        "zoo": lambda: ZOOPrompt(BlackBoxAPI(black, input_shape=shape),
                                 num_directions=cfg.zoo_directions, lr=cfg.zoo_lr),
    }  # fmt: skip
    out = {}
    for name, make in makers.items():
        method = make()
        with FlopCounterMode(display=False) as fc:
            method.step(x)
        out[name] = fc.get_total_flops() / len(x)
    return out


def _checks(ds) -> dict:
    rng = np.random.default_rng(0)
    p = torch.softmax(torch.as_tensor(rng.normal(size=(16, ds.num_classes))), 1)
    z = torch.as_tensor(rng.normal(size=(16, ds.num_classes)))
    err = float((harmonize(p, z, weight=0.0) - torch.log(p)).abs().max())
    x = ds.x_test[:32]
    mono = []
    for kind in CORRUPTIONS:
        mse = [float(((corrupt(x, kind, s, rng=np.random.default_rng(1)) - x) ** 2).mean())
               for s in range(6)]  # fmt: skip
        mono.append(bool(np.all(np.diff(mse) > 0)))
    return {"check_harmonize_weight0_error": err,
            "check_corruption_monotone": float(np.mean(mono))}  # fmt: skip


def _seed_stat(rows, fn, cfg):
    """Per-seed mean of ``fn(row)`` over data sets and corruptions; mean and CI half-width."""
    per_seed = [np.mean([fn(r) for r in rows if r.seed == s]) for s in range(cfg.num_seeds)]
    ci = seed_ci(per_seed)
    return float(ci.estimate), float(ci.half_width)


def run(cfg: Config) -> RunResult:
    rows: list[Row] = []
    clean, steer_clean, ratios, flops = [], [], [], []
    for dname in cfg.datasets:
        ds = _data(dname, cfg)
        black = _train_net(dname, cfg.blackbox_channels, ds, cfg, "blackbox")
        steer = _train_net(dname, cfg.steering_channels, ds, cfg, "steering")
        clean.append(accuracy(black, ds.x_test, ds.y_test))
        steer_clean.append(accuracy(steer, ds.x_test, ds.y_test))
        ratios.append(num_parameters(black) / num_parameters(steer))
        _warm_up(ds, black, steer, cfg)
        flops.append(_flops(ds, black, steer, cfg))
        for kind in cfg.corruptions:
            for sev in cfg.severities:
                for s in range(cfg.num_seeds):
                    rows.append(_measure(dname, ds, black, steer, kind, sev, s, cfg))
    top = max(cfg.severities)
    hard = [r for r in rows if r.severity == top]
    mild = [r for r in rows if r.severity != top]
    m: dict = {"blackbox_clean_acc": float(np.mean(clean)),
               "steering_clean_acc": float(np.mean(steer_clean)),
               "param_ratio": float(min(ratios))}  # fmt: skip
    for meth in METHODS:
        m[f"{meth}_acc"] = float(np.mean([r.acc[meth] for r in hard]))
    m["beta_gain"], m["beta_gain_ci"] = _seed_stat(
        hard, lambda r: r.acc["beta"] - r.acc["source"], cfg)
    m["beta_minus_tent"], m["beta_minus_tent_ci"] = _seed_stat(
        hard, lambda r: r.acc["beta"] - r.acc["tent_blackbox"], cfg)
    m["beta_minus_zoo"], m["beta_minus_zoo_ci"] = _seed_stat(
        hard, lambda r: r.acc["beta"] - r.acc["zoo"], cfg)
    m["beta_gain_mild"] = (float(np.mean([r.acc["beta"] - r.acc["source"] for r in mild]))
                           if mild else float("nan"))  # fmt: skip
    m["beta_worst_drop"] = float(max(r.acc["source"] - r.acc["beta"] for r in rows))
    m["tent_steering_worst_drop"] = float(max(r.acc["source"] - r.acc["tent_steering"]
                                              for r in rows))  # fmt: skip
    m["beta_calls_per_sample"] = float(np.mean([r.calls["beta"] for r in rows]))
    m["zoo_calls_per_sample"] = float(np.mean([r.calls["zoo"] for r in rows]))
    m["zoo_call_ratio"] = m["zoo_calls_per_sample"] / m["beta_calls_per_sample"]
    # Added compute: FLOPs per sample beyond the black box's forward, over that forward.
    m["beta_added_flops_ratio"] = float(max((f["beta"] - f["source"]) / f["source"]
                                            for f in flops))  # fmt: skip
    m["zoo_added_flops_ratio"] = float(max((f["zoo"] - f["source"]) / f["source"]
                                           for f in flops))  # fmt: skip
    # Added latency: a method's wall time per sample beyond the black box's own forward.
    src_t = float(np.mean([r.api_time["source"] for r in rows]))
    m["beta_time_per_sample"] = float(np.mean([r.time["beta"] for r in rows]))
    m["blackbox_time_per_sample"] = src_t
    m["beta_added_latency_ratio"] = (m["beta_time_per_sample"] - src_t) / src_t
    m["zoo_added_latency_ratio"] = (float(np.mean([r.time["zoo"] for r in rows])) - src_t) / src_t
    m["check_beta_calls_error"] = float(max(r.beta_calls_error for r in rows)
                                        + abs(m["beta_calls_per_sample"] - 1.0))  # fmt: skip
    m["check_zoo_calls_error"] = m["zoo_calls_per_sample"] - (2 * cfg.zoo_directions + 1)
    m["check_no_grad_leak"] = float(not any(r.grad_leak for r in rows))
    m.update(_checks(_data(cfg.datasets[0], cfg)))
    table = [{"dataset": r.dataset, "corruption": r.corruption, "severity": r.severity,
              "seed": r.seed, **{f"{k}_acc": v for k, v in r.acc.items()}} for r in rows]
    return RunResult(
        metrics=m, volatile=VOLATILE, tables={"streams": table},
        figures={"accuracy": _figure(rows, top)},
        captions={"accuracy": f"Accuracy at severity {top} per corruption (mean over data "
                  "sets and seeds) for each method: BETA against no adaptation, post-hoc EM, "
                  "ZOO, TENT on the black box (white-box reference) and on the steering "
                  "model alone (the paper's ImageNet-C table)."},
        reasons=({"beta_gain_mild": "only one severity at this tier"} if not mild else {}),
        notes=(f"{len(rows)} streams of {cfg.num_test} samples; networks trained once per "
               "data set",),
    )  # fmt: skip


def _figure(rows, top) -> bytes:
    fig, (ax,) = new_figure(width=7.0)
    kinds = sorted({r.corruption for r in rows})
    xs = np.arange(len(kinds))
    w = 0.8 / len(METHODS)
    for i, meth in enumerate(METHODS):
        vals = [np.mean([r.acc[meth] for r in rows if r.corruption == k and r.severity == top])
                for k in kinds]  # fmt: skip
        ax.bar(xs + (i - len(METHODS) / 2 + 0.5) * w, vals, width=w, label=meth)
    ax.set_xticks(xs, kinds, rotation=30, ha="right", fontsize=8)
    ax.set_ylabel("accuracy")
    ax.legend(fontsize=7, ncol=3)
    return figure_png(fig)
