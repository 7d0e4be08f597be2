"""Reproduction of Noise-Aware Routing on class-conditional MNIST (padded to 32x32).

For each seed, four copies of the same tiny DiT (patch 4: 64 tokens) are trained with the
same batches, timesteps and noise: the DiT baseline (no routing, trained until its
held-out denoising loss improves by less than ``plateau_tol`` over the last half of its
run, checked from ``plateau_min_iter`` and capped at ``max_iter``), and for as many steps
TREAD (ratio 0.5 for
every sample), NAR (0.25 / 0.5 / 0.75 for the low / middle / high-noise thirds of the
timesteps) and the reversed ordering (0.75 / 0.5 / 0.25). On a geometric grid of steps
(from ``eval_every``, ratio ``eval_growth``) the EMA model's held-out loss is computed, and
at every ``fd_every``-th evaluation and the last the model is evaluated by a frozen
in-repo classifier (a small CNN trained once on the same data and cached):
the Frechet distance (FD) of its penultimate features between DDIM
samples and real test images, its accuracy on the samples w.r.t. their labels, and a
held-out denoising loss. The paper's convergence measure becomes: the training steps NAR
needs to reach the DiT baseline's final FD (and, second reading, its final held-out
loss), against the baseline's total steps; the geometric grid resolves any ratio up to
DiT's steps over the first evaluation (``max_resolvable_speedup``). On the
trained DiT baseline of the first seed, the route sensitivity ``R(r)`` is measured at
ratios 0.1 .. 0.75; FLOPs per training step are counted by torch for each method.

A unit is one seed (every method trained on that seed's batches, timesteps and noise),
plus one each for the classifier, the route sensitivity, the FLOP counts and the checks.
Intervals are 95% Student-t over seeds, paired on the seed for differences; speedups
are geometric means on the log scale (Student-t on the raw scale when a seed never
reaches the target, speedup 0); the classifier's accuracy has a Wilson interval over the
test images.

Controls: the speedup claims against DiT's own speedup (its curve against its own final
FD: above 1 only when the FD curve is not monotone, so a speedup that noise alone can
give); the quality claims against the reversed ordering, which routes the same mean
share of tokens with the claimed assignment inverted (if it also beats TREAD or DiT,
the gain is routing, not noise-aware routing); ``R(r)``'s growth against the same
statistic on the same model with every ratio held at ``sens_placebo_ratio`` (each
position its own draws: a placebo where no growth exists, so a pass there means the
standard errors understate the noise). The untrained DiT's statistic is a diagnostic.

Deviations from the paper
-------------------------
- Scale: DiT-XL/2 on ImageNet-256/512 latents for 400K+ steps shrinks to a pixel-space
  DiT of a few hundred thousand parameters (small tier: width 64, depth 4) trained for a
  few hundred steps on MNIST at 32x32 (padded from 28x28), to fit about three minutes on
  two CPU cores. The measured iteration speedup is a statement about that scale only.
- FID (Inception features, 50K samples) becomes a Frechet distance in the features of a
  small CNN classifier trained on the same data set, on a few hundred DDIM samples
  (10 steps at the small tier instead of DiT's 250 DDPM / 50 DDIM steps), no guidance.
- Learning rate 1e-3 (DiT: 1e-4) and an EMA decay of 0.99 with the usual warm-up
  (DiT: 0.9999) because the runs are a few hundred steps long.
- The group boundaries (thirds of ``T``) and ratios (0.25, 0.5, 0.75) are inferred from
  the abstract; their mean equals TREAD's 0.5, so the expected compute is the same.
  The uniform-random-ratio ablation of the spec is not run.
- The route-sensitivity functional ``R(r)`` is our formalisation of the paper's
  "implicit route-sensitivity regularizer", measured on the trained DiT baseline with
  256 held-out images and 16 masks per ratio (spec: 512 images).
- The routed span is blocks 1 .. depth-2 (TREAD's layout); TREAD re-inserts the
  bypassing tokens with their pre-span activations, as here.
- Fashion-MNIST is available through ``--set dataset=fashion_mnist``; the small tier
  runs MNIST only (time budget).

What does not reproduce at the small tier, and why we think so
----------------------------------------------------------------
The verdicts are in the store and the report. Our reading of the small-tier runs:

- Quality is not measurable at this scale. After a few hundred steps the tiny DiT's
  samples are not yet digits: the frozen classifier's conditional accuracy on the
  samples (``dit_final_acc``, ``nar_final_acc``, diagnostics) stays at chance for every
  method, and the FD moves non-monotonically between evaluations. So the FD- and
  accuracy-based paper claims (speedup, better than TREAD, better than DiT, ordering)
  are inconclusive or not reproduced, with seed intervals far wider than the
  differences; whether longer training of a larger model changes that is not yet
  diagnosed. The held-out denoising loss is reported beside the FD
  (``nar_loss_gain_vs_dit``) and read as the convergence measure of the second
  speedup reading; ``dit_plateau_fraction`` says whether the cap or the plateau ended
  the DiT runs.
- The guided FID of 2.67 (ImageNet-256) is listed as a claim and not run.
- Route sensitivity: ``R(r)`` grows with ``r`` on the trained baseline; the untrained
  control says whether that growth is specific to a trained model.
- Compute: NAR's counted FLOPs per step are within a fraction of a percent of TREAD's
  (slightly above: attention is quadratic in the kept tokens, and NAR's groups keep
  48, 32 and 16 of 64); on a CPU NAR's three sub-batches make a step somewhat slower
  than TREAD's one (the volatile time ratios; ``benchmarks/noise_aware_routing.py``).
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass
from typing import ClassVar

import numpy as np
import torch

from neurips26.common.cache import cache_key, cached_arrays, cached_module
from neurips26.common.data import load_digits, load_fashion_mnist, load_mnist
from neurips26.common.experiment import param
from neurips26.common.models import SmallCNN
from neurips26.common.plotting import figure_png, new_figure
from neurips26.common.progress import track
from neurips26.common.torch import make_generator, seeded
from neurips26.common.train import accuracy, array_batches, cosine_schedule, train
from neurips26.experiment import (
    Estimate,
    Experiment,
    binomial_interval,
    ratio_t_interval,
    t_interval,
)

from . import (
    Evaluator,
    MiniDiT,
    TrainResult,
    expected_ratio,
    random_permutations,
    route_end,
    route_sensitivity,
    route_start,
    train_diffusion,
    training_flops,
)

#: method -> (routing, ratios of the low / middle / high-noise groups)
METHODS = {
    "dit": ("none", (0.0, 0.0, 0.0)),
    "tread": ("tread", (0.5, 0.5, 0.5)),
    "nar": ("noise_aware", (0.25, 0.5, 0.75)),
    "reversed": ("noise_aware", (0.75, 0.5, 0.25)),
}


@dataclass(frozen=True)
class Config:
    seed: int = 0
    dataset: str = param("mnist", help="data set (MNIST / Fashion-MNIST padded to 32x32; "
                         "digits: sklearn's 8x8 digits upsampled to 32x32, for the smoke tier)",
                         choices=("mnist", "fashion_mnist", "digits"))
    num_train: int = param(10000, help="training images (class-stratified subset)", min=64)
    num_test: int = param(1000, help="real test images for the FD reference", min=16)
    num_val: int = param(256, help="held-out images for the loss and R(r)", min=8)
    methods: tuple[str, ...] = param(tuple(METHODS), help="methods trained",
                                     choices=tuple(METHODS))
    num_seeds: int = param(2, help="seeds (initialisation, batches, noise)", min=1)
    dim: int = param(64, help="DiT width", min=4)
    depth: int = param(4, help="DiT blocks", min=3)
    num_heads: int = param(4, help="attention heads", min=1)
    patch_size: int = param(4, help="patch side (32 / p)^2 tokens", min=1, max=32)
    route_start: int = param(1, help="first routed block", min=0)
    route_end: int = param(2, help="last routed block (inclusive)", min=1)
    max_iter: int = param(300, help="most training steps of the DiT baseline (the cap of its "
                          "plateau rule); the other methods train as many steps as it took",
                          min=1)
    plateau_tol: float = param(0.1, help="stopping rule: the DiT baseline stops when its "
                               "held-out loss improved by less than this fraction over the "
                               "last half of its run", min=0.0, max=0.99)
    plateau_min_iter: int = param(100, help="the stopping rule applies from this step on",
                                  min=1)
    batch_size: int = param(32, help="training batch size", min=1)
    lr: float = param(1e-3, help="AdamW learning rate", min=1e-6, max=1.0)
    ema_decay: float = param(0.99, help="EMA decay (warmed up)", min=0.0, max=1.0)
    eval_every: int = param(4, help="first evaluation step (then a geometric grid)", min=1)
    eval_growth: float = param(1.25, help="ratio of consecutive evaluation steps (the held-"
                               "out loss); 1: every eval_every steps", min=1.0, max=10.0)
    fd_every: int = param(3, help="FD and sample accuracy at every this many evaluations "
                          "(and the last)", min=1)
    num_samples: int = param(128, help="DDIM samples per evaluation", min=2)
    sample_steps: int = param(10, help="DDIM steps per sample", min=1, max=1000)
    sens_ratios: tuple[float, ...] = param((0.1, 0.25, 0.5, 0.75), help="ratios of R(r)",
                                           min=0.0, max=0.99)
    sens_masks: int = param(8, help="routing masks per ratio for R(r)", min=2)
    sens_placebo_ratio: float = param(0.5, help="the control of R(r)'s growth: R measured "
                                      "at this one ratio in place of each of sens_ratios",
                                      min=0.0, max=0.99)
    clf_channels: tuple[int, ...] = param((16, 32, 32), help="classifier CNN widths", min=1)
    clf_iter: int = param(600, help="classifier training steps", min=1)


TIERS = {
    "smoke": Config(dataset="digits", num_train=256, num_test=64, num_val=32, num_seeds=1,
                    dim=16, depth=3, num_heads=2, route_start=1, route_end=2, max_iter=8,
                    batch_size=16, eval_every=2, eval_growth=1.5, fd_every=2,
                    plateau_min_iter=2,
                    num_samples=32, sample_steps=3, sens_masks=4,
                    clf_channels=(8,), clf_iter=30),
    "small": Config(num_val=128),
    "paper": Config(num_train=60000, num_test=10000, num_val=512, num_seeds=3, dim=384,
                    depth=12, num_heads=6, patch_size=2, route_start=1, route_end=10,
                    max_iter=400_000, plateau_tol=0.05, plateau_min_iter=20_000,
                    batch_size=256, lr=1e-4,
                    ema_decay=0.9999, eval_every=500, eval_growth=1.25, fd_every=2,
                    num_samples=5000, sample_steps=50, sens_masks=16, clf_iter=3000),
}

#: The FLOP counts and the construction checks (one unit each).
FLOPS = ("flops_dit", "flops_tread", "flops_nar", "nar_vs_tread_flops_error",
         "tread_vs_dit_flops", "nar_vs_dit_flops", "nar_vs_dit_span_flops")
CHECKS = ("check_round_trip_error", "check_ratio0_error", "check_subbatch_error",
          "check_mean_ratio_error")

METRICS = (
    "clf_test_acc",
    *[f"{m}_{k}" for m in METHODS for k in ("final_fd", "final_acc", "final_val_loss")],
    *[f"{m}_speedup_vs_dit" for m in ("dit", "tread", "nar", "reversed")],
    *[f"{m}_loss_speedup_vs_dit" for m in ("dit", "tread", "nar", "reversed")],
    "dit_train_steps", "dit_plateau_fraction", "max_resolvable_speedup",
    "guided_fid_imagenet256",
    "nar_fd_gain_vs_tread", "reversed_fd_gain_vs_tread",
    "nar_fd_gain_vs_dit", "reversed_fd_gain_vs_dit",
    "nar_acc_gain_vs_dit", "reversed_acc_gain_vs_dit",
    "nar_fd_gain_vs_reversed", "nar_loss_gain_vs_dit",
    "sens_r*", "sens_min_step_z", "sens_min_step_z_placebo", "sens_min_step_z_untrained",
    *FLOPS,
    "sec_per_step_dit", "sec_per_step_tread", "sec_per_step_nar", "sec_per_step_reversed",
    "nar_vs_dit_time_ratio", "nar_vs_tread_time_ratio",
    *CHECKS,
)
VOLATILE = ("sec_per_step_dit", "sec_per_step_tread", "sec_per_step_nar",
            "sec_per_step_reversed", "nar_vs_dit_time_ratio", "nar_vs_tread_time_ratio")


# ------------------------------------------------------------------ data and models


def _data(cfg: Config):
    loaders = {"mnist": load_mnist, "fashion_mnist": load_fashion_mnist,
               "digits": lambda: load_digits(32)}
    ds = loaders[cfg.dataset]().subset(cfg.num_train, cfg.num_test + cfg.num_val, seed=0)

    def prep(x):  # (N, 1, 28, 28) in [0, 1] -> (N, 1, 32, 32) in [-1, 1], padded with -1
        pad = (32 - x.shape[-1]) // 2
        return np.pad(x * 2.0 - 1.0, ((0, 0), (0, 0), (pad, pad), (pad, pad)),
                      constant_values=-1.0).astype(np.float32)  # fmt: skip

    x_te = prep(ds.x_test)
    return (prep(ds.x_train), ds.y_train, x_te[: cfg.num_test], ds.y_test[: cfg.num_test],
            x_te[cfg.num_test :], ds.y_test[cfg.num_test :])  # fmt: skip


def _classifier(cfg: Config, x, y) -> torch.nn.Module:
    def build():
        with seeded(0):
            return SmallCNN(1, cfg.clf_channels, 10, batch_norm=True)

    def fit(net):
        bs = min(64, len(y))
        train(net, array_batches(x, y, batch_size=bs, generator=make_generator(0)),
              max_iter=cfg.clf_iter, lr=3e-3, seed=0, desc="noise_aware_routing classifier",
              lr_schedule=cosine_schedule(cfg.clf_iter, warmup=max(1, cfg.clf_iter // 20)))

    key = cache_key("noise_aware_routing_clf",
                    {"data": cfg.dataset, "n": cfg.num_train, "ch": list(cfg.clf_channels),
                     "iter": cfg.clf_iter}, 0,
                    modules=("neurips26.common.models",))  # fmt: skip
    net, _ = cached_module("noise_aware_routing_clf", key, build, fit)
    return net.cpu().eval().requires_grad_(False)


def _dit(cfg: Config, seed: int) -> MiniDiT:
    with seeded(seed):
        return MiniDiT(image_size=32, patch_size=cfg.patch_size, in_channels=1, dim=cfg.dim,
                       depth=cfg.depth, num_heads=cfg.num_heads, num_classes=10,
                       route_start=cfg.route_start, route_end=cfg.route_end)  # fmt: skip


@dataclass(frozen=True)
class Row:
    method: str
    seed: int
    curve: TrainResult
    model: MiniDiT


def _train_run(method: str, seed: int, data, evaluator: Evaluator, cfg: Config,
               device: str = "cpu", max_iter: int | None = None) -> Row:
    """One training run; its curve and EMA weights are cached (never needed).

    Without ``max_iter`` the run stops on the plateau rule (``cfg.plateau_tol``, capped
    at ``cfg.max_iter``); with it, the run takes exactly ``max_iter`` steps.
    """
    routing, ratios = METHODS[method]
    x_tr, y_tr = data[0], data[1]
    model = _dit(cfg, seed)

    def compute():
        ema, res = train_diffusion(
            model, x_tr, y_tr, routing=routing, ratio=ratios[1], ratios=ratios,
            max_iter=max_iter or cfg.max_iter, lr=cfg.lr,
            batch_size=min(cfg.batch_size, len(y_tr)), eval_every=cfg.eval_every,
            eval_growth=cfg.eval_growth, fd_every=cfg.fd_every,
            plateau_tol=None if max_iter else cfg.plateau_tol,
            min_iter=cfg.plateau_min_iter, evaluator=evaluator,
            ema_decay=cfg.ema_decay, seed=seed, device=device)  # fmt: skip
        out = {f"w.{k}": v.detach().cpu().numpy() for k, v in ema.state_dict().items()}
        out.update(steps=res.steps, fd=res.fd, sample_acc=res.sample_acc,
                   val_loss=res.val_loss, losses=res.losses, wall_time=np.array(res.wall_time),
                   plateau=np.array(res.plateau))  # fmt: skip
        return out

    conf = {k: v for k, v in vars(cfg).items() if k not in ("seed", "methods", "num_seeds",
                                                             "device", "sens_ratios",
                                                             "sens_masks",
                                                             "sens_placebo_ratio")}  # fmt: skip
    conf["run_steps"] = max_iter
    key = cache_key(f"noise_aware_routing_{method}", conf, seed,
                    modules=("neurips26.papers.noise_aware_routing", "neurips26.common.models",
                             "neurips26.common.train"))  # fmt: skip
    arr, _ = cached_arrays("noise_aware_routing_run", key, compute)
    ema = _dit(cfg, seed)
    ema.load_state_dict({k[2:]: torch.as_tensor(v) for k, v in arr.items() if k[:2] == "w."})
    curve = TrainResult(method, arr["steps"], arr["fd"], arr["sample_acc"], arr["val_loss"],
                        arr["losses"], float(arr["wall_time"]), bool(arr["plateau"]))  # fmt: skip
    return Row(method, seed, curve, ema.eval())


# ------------------------------------------------------------------ measurements


def _checks(cfg: Config) -> dict:
    """Construction checks on random inputs: round trip, ratio 0, sub-batch routing."""
    g = make_generator(cfg.seed)
    x = torch.randn(6, 64, 8, generator=g)
    xr, info = route_start(x, 0.5, generator=g)
    m = {"check_round_trip_error": float((route_end(xr, info, x) - x).abs().max())}
    net = _dit(cfg, cfg.seed).train()
    with torch.no_grad():
        for p in net.parameters():  # leave adaLN-zero's identity start
            p.add_(0.05 * torch.randn(p.shape, generator=g))
        xi = torch.randn(6, 1, 32, 32, generator=g)
        t = torch.tensor([5, 300, 400, 600, 800, 990])
        y = torch.arange(6)
        ref = net(xi, t, y)
        zero = net(xi, t, y, routing="noise_aware", ratios=(0.0, 0.0, 0.0), generator=g)
        m["check_ratio0_error"] = float((zero - ref).abs().max())
        perm = random_permutations(6, net.num_tokens, generator=g)
        batch = net(xi, t, y, routing="noise_aware", ids_shuffle=perm)
        loop = torch.cat([net(xi[i : i + 1], t[i : i + 1], y[i : i + 1], routing="noise_aware",
                              ids_shuffle=perm[i : i + 1]) for i in range(6)])  # fmt: skip
        m["check_subbatch_error"] = float((batch - loop).abs().max())
    m["check_mean_ratio_error"] = abs(expected_ratio(num_timesteps=999) - 0.5)
    return m


def _flops(cfg: Config) -> dict:
    net = _dit(cfg, 0)
    bs = min(cfg.batch_size, 64)
    f = {m: training_flops(net, routing=METHODS[m][0], ratio=0.5, ratios=METHODS[m][1],
                           batch_size=bs) for m in ("dit", "tread", "nar")}  # fmt: skip
    span = {m: training_flops(net, routing=METHODS[m][0], ratio=0.5, ratios=METHODS[m][1],
                              batch_size=bs, span_only=True) for m in ("dit", "nar")}  # fmt: skip
    return {"flops_dit": f["dit"], "flops_tread": f["tread"], "flops_nar": f["nar"],
            "nar_vs_tread_flops_error": abs(f["nar"] / f["tread"] - 1.0),
            "tread_vs_dit_flops": f["tread"] / f["dit"], "nar_vs_dit_flops": f["nar"] / f["dit"],
            "nar_vs_dit_span_flops": span["nar"] / span["dit"]}  # fmt: skip


def _sensitivity(model, x_val, y_val, cfg: Config, ratios=None) -> list:
    """R(r) at each ratio (default ``cfg.sens_ratios``): the same timesteps, and for the
    k-th position its own generator (noise and masks), so that consecutive values are
    independent given the model and the standard error of a step is the root sum of
    squares. The placebo passes one ratio repeated: the same draws, no growth."""
    x, y = torch.as_tensor(x_val), torch.as_tensor(y_val)
    t = torch.randint(0, 1000, (len(x),), generator=make_generator(cfg.seed + 7))
    ratios = cfg.sens_ratios if ratios is None else ratios
    return [route_sensitivity(model, x, y, ratio=r, num_masks=cfg.sens_masks, t=t,
                              generator=make_generator(cfg.seed + 11 + k))
            for k, r in enumerate(ratios)]  # fmt: skip


def _min_step_z(rows) -> float:
    """The smallest step of R(r) over consecutive ratios, in standard errors."""
    z = [(b["R"] - a["R"]) / math.sqrt(a["std_error"] ** 2 + b["std_error"] ** 2)
         for a, b in itertools.pairwise(rows)]  # fmt: skip
    return float(min(z)) if z else float("nan")


def _untrained(cfg: Config) -> MiniDiT:
    """The control model of R(r): the seed's DiT at initialisation, its weights moved off
    adaLN-zero's identity start (where every block is the identity and R(r) = 0)."""
    net = _dit(cfg, 1000 * cfg.seed)
    g = make_generator(cfg.seed + 13)
    with torch.no_grad():
        for p in net.parameters():
            p.add_(0.05 * torch.randn(p.shape, generator=g))
    return net.eval()


def _speedup(values, what: str) -> Estimate:
    """Mean speedup over seeds: geometric on the log scale; Student-t on the raw scale
    where a seed never reached the target (speedup 0)."""
    v = np.asarray(values, dtype=float)
    if v.size == 0:
        return Estimate.missing(f"{what} not among the methods run")
    return ratio_t_interval(v) if (v > 0).all() else t_interval(v)


class NoiseAwareRoutingExperiment(Experiment):
    """Units: the evaluation classifier, one per seed (every method trained on the same
    batches, timesteps and noise), the route sensitivity, the FLOP counts, the checks."""

    Config, TIERS, METRICS, VOLATILE = Config, TIERS, METRICS, VOLATILE
    UNIT_TABLE = None
    CAPTIONS: ClassVar[dict[str, str]] = {
        "convergence": "FD in the frozen classifier's feature space (lower is better) of the "
                       "EMA model against training steps, per method (mean over seeds); the "
                       "paper's FID-vs-iterations convergence figure.",
        "loss_curves": "Held-out denoising loss of the EMA model (fixed images, timesteps "
                       "and noise) against training steps, per method (mean over seeds): "
                       "the curve the DiT baseline's stopping rule reads and the loss-based "
                       "speedups are measured on."}

    def setup(self, cfg: Config, ctx):
        if not 0 <= cfg.route_start < cfg.route_end < cfg.depth:
            raise ValueError(f"route_start, route_end: need 0 <= {cfg.route_start} < "
                             f"{cfg.route_end} < depth {cfg.depth}")  # fmt: skip
        if "dit" not in cfg.methods:
            raise ValueError("methods: must include the 'dit' baseline")
        data = _data(cfg)
        return {"cfg": cfg, "data": data, "clf": _classifier(cfg, data[0], data[1]),
                "models": {}}

    def grid(self, cfg: Config):
        return [{"part": "classifier"},
                *({"part": "seed", "seed": s} for s in range(cfg.num_seeds)),
                {"part": "sensitivity"}, {"part": "flops"}, {"part": "checks"}]

    def measure(self, unit, st, ctx):
        cfg, data = st["cfg"], st["data"]
        _, _, x_te, y_te, x_val, y_val = data
        part = unit["part"]
        if part == "classifier":
            acc = accuracy(st["clf"], x_te, y_te)
            return {"correct": round(acc * len(y_te)), "trials": len(y_te)}
        if part == "sensitivity":
            rows = []
            placebo = (cfg.sens_placebo_ratio,) * len(cfg.sens_ratios)
            for model_name, model, ratios in (
                    ("dit", st["models"]["dit"], None),
                    ("placebo", st["models"]["dit"], placebo),
                    ("untrained", _untrained(cfg), None)):  # fmt: skip
                rows += [{"model": model_name, "ratio": s.ratio, "R": s.value,
                          "std_error": s.std_error}
                         for s in _sensitivity(model, x_val, y_val, cfg, ratios)]
            return rows
        if part == "flops":
            return _flops(cfg)
        if part == "checks":
            return _checks(cfg)
        seed = 1000 * cfg.seed + unit["seed"]
        ev = Evaluator(st["clf"], torch.as_tensor(x_te), torch.as_tensor(x_val),
                       torch.as_tensor(y_val), num_samples=cfg.num_samples,
                       num_steps=cfg.sample_steps, seed=seed)  # fmt: skip
        # DiT first, to its held-out loss plateau (capped); the others as many steps
        runs = {"dit": _train_run("dit", seed, data, ev, cfg, ctx.device)}
        total = len(runs["dit"].curve.losses)
        for meth in track([m for m in cfg.methods if m != "dit"],
                          f"noise_aware_routing seed {unit['seed']}"):  # fmt: skip
            runs[meth] = _train_run(meth, seed, data, ev, cfg, ctx.device, max_iter=total)
        if unit["seed"] == 0:
            st["models"]["dit"] = runs["dit"].model
        dit = runs["dit"].curve
        target, target_loss = dit.fd[-1], dit.val_loss[-1]  # DiT's final FD and loss
        rows = []
        for meth, r in runs.items():
            c = r.curve
            # Steps to reach DiT's final FD (loss), against DiT's total steps (for DiT
            # itself, the control: its own curve against its own final value).
            steps = c.steps_to_reach(target)
            steps_loss = c.steps_to_reach(target_loss, "val_loss")
            rows.append({"kind": "run", "method": meth, "final_fd": float(c.fd[-1]),
                         "final_acc": float(c.sample_acc[-1]),
                         "final_val_loss": float(c.val_loss[-1]),
                         "train_steps": total, "plateau": bool(c.plateau),
                         "first_fd_step": int(c.steps[np.isfinite(c.fd)][0]),
                         "sec_per_step": c.wall_time / total,
                         "speedup": total / steps if math.isfinite(steps) else 0.0,
                         "loss_speedup": (total / steps_loss if math.isfinite(steps_loss)
                                          else 0.0)})  # fmt: skip
            rows += [{"kind": "curve", "method": meth, "step": int(s), "fd": float(fd),
                      "sample_acc": float(a), "val_loss": float(vl)}
                     for s, fd, a, vl in zip(c.steps, c.fd, c.sample_acc, c.val_loss,
                                             strict=True)]  # fmt: skip
        return rows

    def summarize(self, table, cfg: Config, ctx):
        clf = table.where(part="classifier").rows[0]
        m: dict = {"clf_test_acc": binomial_interval(clf["correct"], clf["trials"],
                                                     unit="test images")}
        runs = table.where(kind="run")
        for meth in METHODS:
            arm = runs.where(method=meth)
            if meth not in cfg.methods:
                for k in ("final_fd", "final_acc", "final_val_loss"):
                    m[f"{meth}_{k}"] = Estimate.missing(f"{meth} not among the methods run")
                continue
            for k in ("final_fd", "final_acc", "final_val_loss"):
                m[f"{meth}_{k}"] = float(np.mean(arm.column(k)))
            m[f"sec_per_step_{meth}"] = float(np.mean(arm.column("sec_per_step")))
        for meth in ("dit", "tread", "nar", "reversed"):
            for col, name in (("speedup", "speedup"), ("loss_speedup", "loss_speedup")):
                m[f"{meth}_{name}_vs_dit"] = _speedup(
                    runs.where(method=meth).column(col) if meth in cfg.methods else [],
                    meth)  # fmt: skip
        dit_runs = runs.where(method="dit")
        m["dit_train_steps"] = Estimate.exact(float(np.mean(dit_runs.column("train_steps"))))
        m["dit_plateau_fraction"] = Estimate.exact(float(np.mean(dit_runs.column("plateau"))))
        # the largest FD speedup the grid can show: DiT's steps over the first FD step
        m["max_resolvable_speedup"] = Estimate.exact(float(np.min(
            np.asarray(dit_runs.column("train_steps"), float)
            / np.asarray(dit_runs.column("first_fd_step"), float))))
        m["guided_fid_imagenet256"] = Estimate.missing(
            "needs ImageNet-256 latents, a DiT-XL/2 trained with guidance and Inception FID "
            "on 50K samples; none is available offline or affordable on a CPU")

        def gain(a, b, field):  # paired over seeds: b - a of the final values
            if a not in cfg.methods or b not in cfg.methods:
                return Estimate.missing(f"{a} or {b} not among the methods run")
            return runs.paired_diff(field, {"method": b}, {"method": a})

        m["nar_fd_gain_vs_tread"] = gain("nar", "tread", "final_fd")
        m["reversed_fd_gain_vs_tread"] = gain("reversed", "tread", "final_fd")
        m["nar_fd_gain_vs_dit"] = gain("nar", "dit", "final_fd")
        m["reversed_fd_gain_vs_dit"] = gain("reversed", "dit", "final_fd")
        m["nar_fd_gain_vs_reversed"] = gain("nar", "reversed", "final_fd")
        m["nar_loss_gain_vs_dit"] = gain("nar", "dit", "final_val_loss")
        m["nar_acc_gain_vs_dit"] = gain("dit", "nar", "final_acc")
        m["reversed_acc_gain_vs_dit"] = gain("dit", "reversed", "final_acc")
        sens = table.where(part="sensitivity")
        trained = sens.where(model="dit").rows
        m.update({f"sens_r{r['ratio']:g}": r["R"] for r in trained})
        m["sens_min_step_z"] = _min_step_z(trained)
        m["sens_min_step_z_placebo"] = _min_step_z(sens.where(model="placebo").rows)
        m["sens_min_step_z_untrained"] = _min_step_z(sens.where(model="untrained").rows)
        flops = table.where(part="flops").rows[0]
        m.update({k: flops[k] for k in FLOPS})
        if "nar" in cfg.methods and "tread" in cfg.methods:
            m["nar_vs_dit_time_ratio"] = m["sec_per_step_nar"] / m["sec_per_step_dit"]
            m["nar_vs_tread_time_ratio"] = m["sec_per_step_nar"] / m["sec_per_step_tread"]
        checks = table.where(part="checks").rows[0]
        m.update({k: checks[k] for k in CHECKS})
        return m

    def tables(self, table, summary, cfg: Config):
        curves = [{"method": r["method"], "seed": 1000 * cfg.seed + r["seed"],
                   **{k: r[k] for k in ("step", "fd", "sample_acc", "val_loss")}}
                  for r in table.where(kind="curve")]
        sens = [{"ratio": r["ratio"], "R": r["R"], "std_error": r["std_error"]}
                for r in table.where(part="sensitivity", model="dit")]
        other = {name: [{"ratio": r["ratio"], "R": r["R"], "std_error": r["std_error"]}
                        for r in table.where(part="sensitivity", model=name)]
                 for name in ("placebo", "untrained")}  # fmt: skip
        return {"curves": curves, "route_sensitivity": sens,
                "route_sensitivity_placebo": other["placebo"],
                "route_sensitivity_untrained": other["untrained"]}

    def figures(self, table, summary, cfg: Config):
        curves = table.where(kind="curve")
        return {"convergence": _figure(curves, cfg, "fd", "FD (classifier features)"),
                "loss_curves": _figure(curves, cfg, "val_loss", "held-out denoising loss")}

    def notes(self, table, summary, cfg: Config):
        dit = table.where(kind="run", method="dit")
        capped = [f"seed {r['seed']}" for r in dit if not r["plateau"]]
        stop = (f"the cap of {cfg.max_iter} steps ended the DiT run of "
                f"{', '.join(capped)} before its held-out loss plateaued"
                if capped else "every DiT run stopped on its held-out loss plateau")
        return (f"{len(table.where(kind='run'))} training runs (DiT width {cfg.dim}, "
                f"depth {cfg.depth}, {(32 // cfg.patch_size) ** 2} tokens); the DiT baseline "
                f"trains until its held-out loss improves by less than {cfg.plateau_tol:g} "
                f"over the last half of its run (evaluated on a geometric grid, ratio "
                f"{cfg.eval_growth:g}), the other methods as many steps; {stop}; curves and "
                "weights cached per run",)


EXPERIMENT = NoiseAwareRoutingExperiment()
run = EXPERIMENT.run


def _figure(curves, cfg: Config, field: str, label: str) -> bytes:
    fig, (ax,) = new_figure(width=6.0)
    for meth in cfg.methods:
        rs = curves.where(method=meth)
        steps = np.array(rs.unique("step"), dtype=float)
        v = np.array([np.mean(rs.where(step=s).column(field)) for s in steps])
        ok = np.isfinite(v)
        ax.plot(steps[ok], v[ok], marker="o", markersize=3, label=meth)
    ax.set_xlabel("training step")
    ax.set_ylabel(label)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.legend(fontsize=8)
    return figure_png(fig)
