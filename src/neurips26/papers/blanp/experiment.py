"""Reproduction of BLANP on real MNIST and Fashion-MNIST.

For each data set and seed the same 3 x 256 ReLU MLP is trained by backprop and by the
local rules: BLANP (antithetic node perturbation against the EMA critic), BLANP-Exact,
BLANP without the EMA critic, and (paper tier, or ``--set methods=...``) the DGL-style
greedy local baseline and forward-difference node perturbation. A small CNN on
Fashion-MNIST compares BLANP-Exact with DGL and backprop, and trains BLANP itself (on
fewer seeds at the small tier, ``cnn_blanp_seeds``). Every network trains until a
held-out stopping rule fires (:class:`PlateauStop`: 1,000 training images set aside;
the held-out loss has not improved by more than ``min_improvement`` over ``patience``
evaluations) or a step cap is reached; its held-out curve is recorded (figure
``curves``), and the notes name every run the cap ended. Test accuracy is the last local
head's (the backprop net's own head). Differences
between methods are paired by seed (same initialisation, same batches) and carry a
Student-t 95% interval over seeds (``Table.paired_diff``). The control of the accuracy
claims is the untrained network: BLANP's network at its initialisation (what any rule at
learning rate 0 leaves), scored from its last head and paired by seed like the trained
arms; a "close to backprop" or "ahead of" test that this arm also passes is no evidence.
The control of the flat-memory claims is backprop's own depth-8 over depth-2 ratio. On a
trained BLANP layer we compare the antithetic and forward directional estimates with
autograd's; and for depths 2-16 we count the peak
saved-activation bytes of one training step (``torch.autograd.graph.saved_tensors_hooks``,
a count that does not depend on the machine) and time steps as ratios within the run.

Deviations from the paper
-------------------------
- Scale: stratified subsets of MNIST / Fashion-MNIST (the small tier trains on 10,000
  images to a held-out plateau under a step cap; the paper trains for many epochs on
  the full sets). CIFAR-10 is not available offline, so the paper's CIFAR results (BLANP-Exact
  +2.40 over the best prior local method, -3.90 behind backprop) are tested on the
  Fashion-MNIST CNN instead, with DGL-style greedy learning as the "prior local method".
- The CNN is the shared small CNN (conv3x3 -> ReLU -> maxpool stages) on 2x2-average-pooled
  14x14 images at the small tier; its local heads are global-pool + linear (inferred).
  BLANP itself is trained on the CNN on ``cnn_blanp_seeds`` seeds (one at the small tier,
  every seed at the paper tier): a BLANP step on the CNN costs several BLANP-Exact steps
  and runs to a later plateau. No claim rests on that arm; ``blanp_minus_bp_cnn`` and
  ``blanp_minus_exact_cnn`` report it (a one-seed difference carries no interval).
  Image inputs are trained channels-last on the CPU (PyTorch's CPU max-pooling is several
  times faster on that layout); the arithmetic is the same up to the convolution's
  float rounding.
- Inferred: the perturbation size is ``sigma`` times the batch std of the pre-activation;
  tau = 0.99; Adam; inference from the last head. The perturbation modes use a smaller
  learning rate (``np_lr``) than the exact ones: at 1e-3 the noisy estimates random-walk
  the weights of deeper layers in our runs.
- The memory claim compares depth 8 with depth 2 for the local rules (the spec), and
  depth 16 with 2 for backprop: with MNIST's 784-d input the input alone is a third of
  backprop's saved bytes at depth 2, so its 8/2 ratio is near 2.2 by arithmetic.

What does not reproduce at the small tier
-----------------------------------------
The verdicts come from the run (see the store); these are our readings of them.

- BLANP matches backprop (read as within 5 points, the spec, and within 1): judged where
  both are trained to a held-out plateau. Its diagnostics are the cosine between BLANP's
  one-probe weight-gradient estimate and the exact local gradient on a trained layer
  (``grad_cosine_blanp_exact``: a small cosine means a weak per-step signal, so many more
  steps) and the share of BLANP runs whose stopping rule fired before the cap
  (``plateau_fraction_blanp``): below 1, some gaps are measured before BLANP's plateau and
  the verdict is a lower bound on what longer training gives. No other cause is claimed.
- BLANP-Exact within 3.90 points of backprop, and above DGL on the CNN, where the run
  says they do not hold: not yet diagnosed. Our DGL stand-in is a strong baseline (the
  same heads, exact local gradients), not the paper's tuned prior method. The CNN's cap
  is 6,000 steps at the small tier (at 3,000 most CNN runs stopped at the cap, before a
  plateau) and 12,000 for the perturbation rules (BLANP on the CNN was still improving
  at 6,000); the run's notes name any run that still stops at its cap.
- The EMA critic stabilises: with three seeds a standard deviation is itself uncertain
  by about half its value, and with equal spreads each data set / architecture pair
  passes with probability about 1/2, so this test separates little at this tier. Two
  stored runs that differ only in the optimizer kernel's float rounding gave fractions
  of 0 and 1; the fraction now carries a bootstrap over seeds.
- Even-order cancellation (a check: a property of the central-difference estimator)
  holds per probe where the loss is smooth (the tests check the sigma^2 vs sigma orders;
  ``directional_error_ratio_smooth``), but on a trained ReLU layer many probes move a
  unit across the kink, which costs both estimates an O(sigma) error; so over all
  examples the ratio is near 1, and it carries a bootstrap interval over the examples,
  which decides whether its verdict is certain.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import ClassVar

import numpy as np
import torch
import torch.nn.functional as F

from neurips26.common.cache import cache_key, cached_arrays
from neurips26.common.data import load_digits, load_fashion_mnist, load_mnist, load_mnist1d
from neurips26.common.experiment import param
from neurips26.common.plotting import figure_png, new_figure
from neurips26.experiment import Estimate, Experiment, bootstrap_interval

from . import (
    BLANPOptimizer,
    PlateauStop,
    antithetic_grad,
    central_difference,
    forward_difference,
    local_net,
    make_model,
    measure_step,
    predict_logits,
    train_backprop,
    train_local,
)

DATASETS = ("digits", "mnist1d", "mnist", "fashion_mnist")
METHODS = ("backprop", "blanp", "exact", "dgl", "forward", "blanp_no_ema")
NP_METHODS = ("blanp", "forward", "blanp_no_ema")
#: The control arm of the accuracy claims: BLANP's network at its initialisation.
UNTRAINED = "untrained"


@dataclass(frozen=True)
class Config:
    seed: int = 0
    datasets: tuple[str, ...] = param(("mnist", "fashion_mnist"), help="MLP data sets",
                                      choices=DATASETS)
    num_train: int = param(10000, help="training images per data set (stratified)", min=10)
    num_val: int = param(1000, help="held-out training images of the stopping rule", min=10)
    num_test: int = param(2000, help="test images per data set", min=10)
    num_seeds: int = param(3, help="seeds per method", min=1)
    widths: tuple[int, ...] = param((256, 256, 256), help="MLP hidden widths", min=1)
    methods: tuple[str, ...] = param(METHODS, help="methods on the MLP", choices=METHODS)
    max_iter: int = param(8000, help="step cap of the stopping rule (MLP)", min=1)
    eval_every: int = param(200, help="steps between held-out evaluations", min=1)
    patience: int = param(5, help="evaluations without improvement that stop training",
                          min=1)
    min_improvement: float = param(0.01, help="relative held-out loss improvement that "
                                   "counts", min=0.0, max=0.5)
    batch_size: int = param(128, help="mini-batch size", min=1)
    lr: float = param(1e-3, help="Adam learning rate of backprop and the exact rules",
                      min=1e-8, max=1.0)
    np_lr: float = param(3e-4, help="Adam learning rate of the perturbation rules",
                         min=1e-8, max=1.0)
    sigma: float = param(1e-2, help="relative perturbation size", min=1e-8, max=10.0)
    ema_decay: float = param(0.99, help="EMA critic decay tau", min=0.0, max=0.999999)
    num_probes: int = param(1, help="antithetic probe pairs per step", min=1, max=1000)
    cnn_dataset: str = param("fashion_mnist", help="CNN data set ('none' to skip)",
                             choices=(*DATASETS, "none"))
    cnn_channels: tuple[int, ...] = param((16, 32, 32), help="CNN channels per stage", min=1)
    cnn_methods: tuple[str, ...] = param(("backprop", "exact", "dgl", "blanp"),
                                         help="methods on the CNN", choices=METHODS)
    cnn_blanp_seeds: int = param(1, help="seeds of BLANP itself on the CNN (at most "
                                 "num_seeds; the other CNN methods run every seed)", min=0)
    cnn_pool: int = param(2, help="average-pool factor of CNN inputs", min=1, max=4)
    cnn_iter: int = param(6000, help="step cap of the stopping rule (CNN)", min=1)
    cnn_np_iter: int = param(12000, help="step cap of the stopping rule for the perturbation "
                             "rules on the CNN (they learn at np_lr and plateau later)", min=1)
    mem_depths: tuple[int, ...] = param((2, 4, 8, 16), help="depths of the memory sweep", min=1)
    mem_width: int = param(256, help="MLP width of the memory sweep", min=1)
    mem_repeats: int = param(3, help="timed steps per depth and method", min=1)


TIERS = {
    "smoke": Config(datasets=("digits",), num_train=600, num_val=200, num_test=200,
                    num_seeds=2, widths=(32, 32), max_iter=60, eval_every=10, patience=2,
                    batch_size=64, cnn_dataset="digits", cnn_channels=(8, 8), cnn_pool=1,
                    cnn_iter=30, cnn_np_iter=30, cnn_blanp_seeds=1, mem_depths=(2, 4, 8),
                    mem_width=32,
                    mem_repeats=1),
    "small": Config(methods=("backprop", "blanp", "exact", "blanp_no_ema")),
    "paper": Config(num_train=60000, num_test=10000, num_seeds=5, max_iter=20000,
                    cnn_channels=(64, 128, 256), cnn_pool=1, cnn_iter=20000,
                    cnn_np_iter=40000,
                    cnn_methods=METHODS, cnn_blanp_seeds=5),
}

METRICS = (
    "acc_*",
    "blanp_minus_bp_min", "exact_minus_bp_min", "exact_minus_blanp_min",
    "exact_minus_dgl_cnn", "exact_minus_bp_cnn", "blanp_minus_forward_min",
    "blanp_minus_bp_cnn", "blanp_minus_exact_cnn",
    "untrained_minus_bp_min", "untrained_minus_blanp_min", "untrained_minus_dgl_cnn",
    "ema_std_pairs_fraction", "std_*", "steps_*", "plateau_*", "plateau_fraction_blanp",
    "directional_error_ratio", "directional_error_ratio_smooth",
    "grad_cosine_blanp_exact",
    "mem_bytes_*", "mem_ratio_blanp", "mem_ratio_exact",
    "mem_ratio_backprop", "mem_ratio_backprop_8_2", "mem_exact_over_bp_deepest",
    "time_ratio_*", "cnn_*_cpu_s_per_step",
    "check_antithetic_quadratic_error", "check_cross_layer_grad_max", "check_exact_grad_error",
    "check_ema_error",
)  # fmt: skip


def _data(name: str, num_train: int, num_val: int, num_test: int, seed: int, pool: int = 1):
    """Stratified training, held-out (for the stopping rule) and test splits."""
    loaders = {"digits": load_digits, "mnist1d": load_mnist1d, "mnist": load_mnist,
               "fashion_mnist": load_fashion_mnist}  # fmt: skip
    ds = loaders[name]()
    n_fit = min(num_train + num_val, len(ds.y_train))
    ds = ds.subset(n_fit, min(num_test, len(ds.y_test)), seed=seed)
    xtr, xte = ds.x_train, ds.x_test
    if pool > 1:
        xtr = F.avg_pool2d(torch.as_tensor(xtr), pool).numpy()
        xte = F.avg_pool2d(torch.as_tensor(xte), pool).numpy()
    perm = np.random.default_rng(seed).permutation(len(xtr))
    n_val = min(num_val, len(xtr) // 2)
    val, fit = perm[:n_val], perm[n_val:]
    return xtr[fit], ds.y_train[fit], xtr[val], ds.y_train[val], xte, ds.y_test


@functools.cache
def _training_code() -> str:
    """A hash of the sources a trained network depends on (the local rules, the training
    loops, the shared loop): the cache key's code part, so that editing this module or the
    claims does not retrain."""
    import hashlib
    from pathlib import Path

    here = Path(__file__).parent
    h = hashlib.sha256()
    for f in ("estimators.py", "local.py", "optim.py", "training.py", "../../common/train.py",
              "../../common/plateau.py"):
        h.update((here / f).read_bytes())
    return h.hexdigest()[:16]


def _train(method, kind, widths, data, cfg: Config, seed: int, max_iter: int,
           device: str = "cpu"):
    """A network trained to a held-out plateau (from the cache when it holds one).

    Returns the net, its test accuracy and its training record: the steps it took,
    whether the stopping rule fired before the cap, and the held-out curve.
    ``method="untrained"`` is the control: BLANP's network (the same seed, the same local
    heads) at its initialisation, which is what any rule at learning rate 0 leaves;
    predicted, like every local net, from its last head.
    """
    xtr, ytr, xva, yva, xte, yte = data
    shape = tuple(xtr.shape[1:]) if kind == "cnn" else (int(np.prod(xtr.shape[1:])),)

    def flat(a):
        return a if kind == "cnn" else a.reshape(len(a), -1)

    xtr_in, xva_in, xte_in = flat(xtr), flat(xva), flat(xte)
    lr = cfg.np_lr if method in NP_METHODS else cfg.lr

    def build():
        model = make_model(kind, shape, widths, 10, seed=seed)
        if method == "backprop":
            return model
        return local_net(model, example=xtr_in[:2], sigma=cfg.sigma, ema_decay=cfg.ema_decay,
                         num_probes=cfg.num_probes, seed=seed)  # fmt: skip

    def score(net):
        return float((predict_logits(net, xte_in).argmax(1) == yte).mean())

    if method == UNTRAINED:
        net = build().eval()
        return net, score(net), {"steps": 0, "plateau": 1.0, "curve": ((), (), ())}

    def compute():
        net = build()
        stop = PlateauStop(xva_in, yva, eval_every=cfg.eval_every, patience=cfg.patience,
                           min_improvement=cfg.min_improvement)  # fmt: skip
        kw = dict(max_iter=max_iter, lr=lr, batch_size=min(cfg.batch_size, len(ytr)), seed=seed,
                  device=device, stop=stop)  # fmt: skip
        if method == "backprop":
            res = train_backprop(net, xtr_in, ytr, **kw)
            steps = res.num_steps
        else:
            steps = train_local(net, xtr_in, ytr, mode=method, **kw).num_steps
        out = {f"w_{k}": v.detach().cpu().numpy() for k, v in net.state_dict().items()}
        out.update(steps=np.array(steps), plateau=np.array(float(stop.stopped)),
                   curve_steps=np.array(stop.steps, dtype=float),
                   curve_loss=np.array(stop.val_loss), curve_acc=np.array(stop.val_acc))
        return out

    key = cache_key("blanp_plateau", {"code": _training_code(),
        "method": method, "kind": kind, "widths": widths, "n": len(ytr), "nv": len(yva),
        "cap": max_iter, "lr": lr, "sigma": cfg.sigma, "tau": cfg.ema_decay,
        "K": cfg.num_probes, "bs": cfg.batch_size, "every": cfg.eval_every,
        "patience": cfg.patience, "tol": cfg.min_improvement, "x0": float(xtr.sum()),
        "device": device}, seed, modules=("neurips26.common.models",))  # fmt: skip
    arrays, _ = cached_arrays("blanp_plateau", key, compute)
    net = build()
    net.load_state_dict({k[2:]: torch.as_tensor(v) for k, v in arrays.items()
                         if k.startswith("w_")})  # fmt: skip
    net = net.cpu().eval()
    record = {"steps": int(arrays["steps"]), "plateau": float(arrays["plateau"]),
              "curve": (tuple(arrays["curve_steps"].tolist()),
                        tuple(arrays["curve_loss"].tolist()),
                        tuple(arrays["curve_acc"].tolist()))}  # fmt: skip
    return net, score(net), record


def _min_gap(table, a, b, datasets, arch="mlp"):
    """The worst data set's mean paired gap ``acc[a] - acc[b]`` (paired by seed), with its
    Student-t interval over seeds; NaN where an arm was not run."""
    gaps = []
    for d in datasets:
        sub = table.where(dataset=d, arch=arch)
        if not (sub.where(method=a) and sub.where(method=b)):
            return Estimate.missing(f"{a} or {b} not run on {d} ({arch}) at this tier")
        gaps.append(sub.paired_diff("test_acc", {"method": a}, {"method": b}, on="seed"))
    if not gaps:
        return Estimate.missing(f"no {arch} data set at this tier")
    return min(gaps, key=lambda e: e.value)


def _lower_median(x: np.ndarray) -> float:
    """The lower of the two middle values for an even count: torch's ``median``."""
    return float(np.sort(x)[(len(x) - 1) // 2])


def _estimator_diagnostics(net, data, cfg: Config, rng) -> tuple:
    """On the last layer of a trained BLANP net (float64, 256 training inputs):

    - median |central - exact| / median |forward - exact| of the per-example directional
      estimates (exact: autograd), one probe per example at the run's sigma, over all
      examples (an Estimate: percentile bootstrap over the examples, each resampled with
      its own pair of errors) and over those whose probe moves no unit across the ReLU
      kink;
    - the cosine between the one-probe BLANP estimate of the block's weight gradient and
      the exact local gradient (the same critic loss): the per-step signal-to-noise.
    """
    xtr, ytr = data[0], data[1]
    n = min(256, len(xtr))
    x = torch.as_tensor(xtr[:n]).reshape(n, -1).double()
    y = torch.as_tensor(ytr[:n])
    net = net.double()
    layer = net.layers[-1]
    with torch.no_grad():
        h = x
        for lay in net.layers[:-1]:
            h = lay(h)
    a = layer.block(h)  # (n, D), graph to the block's weights
    sigma = cfg.sigma * float(a.detach().std())

    def loss_fn(z):
        return F.cross_entropy(layer.critic(layer.activation(z)), y, reduction="none")

    a_req = a.detach().clone().requires_grad_(True)
    (grad,) = torch.autograd.grad(loss_fn(a_req).sum(), a_req)
    gen = torch.Generator().manual_seed(int(rng.integers(2**31)))
    u = torch.randn(a.shape, generator=gen, dtype=a.dtype)
    exact = (grad * u).sum(1)
    ec = (central_difference(loss_fn, a.detach(), u, sigma=sigma) - exact).abs()
    ef = (forward_difference(loss_fn, a.detach(), u, sigma=sigma) - exact).abs()
    pairs = torch.stack([ec, ef], dim=1).numpy()  # (n, 2)
    ratio = bootstrap_interval(pairs, lambda d: _lower_median(d[:, 0]) / _lower_median(d[:, 1]),
                               num_resamples=1000, seed=cfg.seed, unit="examples")
    with torch.no_grad():  # examples whose probe flips no unit across a ReLU kink
        ad = a.detach()
        side = ad > 0
        smooth = (((ad + sigma * u) > 0) == side).all(1) & (((ad - sigma * u) > 0) == side).all(1)
    ratio_smooth = (float(ec[smooth].median() / ef[smooth].median()) if bool(smooth.any())
                    else float("nan"))  # fmt: skip
    est = antithetic_grad(loss_fn, a.detach(), sigma=sigma, generator=gen)
    weights = [p for p in layer.block.parameters() if p.ndim >= 2]
    (g_est,) = torch.autograd.grad(a, weights[:1], est / n, retain_graph=True)
    (g_true,) = torch.autograd.grad(a, weights[:1], grad / n)
    cos = float(F.cosine_similarity(g_est.flatten(), g_true.flatten(), dim=0))
    net.float()
    return ratio, ratio_smooth, cos


def _checks(cfg: Config) -> dict:
    """Oracles inside the run: quadratic exactness, locality, exact gradient, EMA."""
    from torch import nn

    g = torch.Generator().manual_seed(cfg.seed)
    q = torch.randn(6, 6, generator=g, dtype=torch.float64)
    q = q @ q.T
    c = torch.randn(6, generator=g, dtype=torch.float64)
    a = torch.randn(6, generator=g, dtype=torch.float64)
    u = torch.randn(6, generator=g, dtype=torch.float64)
    cen = central_difference(lambda z: 0.5 * z @ q @ z + c @ z, a, u, sigma=0.5)
    quad_err = abs(float(cen - (q @ a + c) @ u))

    with torch.random.fork_rng():
        torch.manual_seed(cfg.seed)
        blocks = [nn.Sequential(nn.Linear(8 if i == 0 else 16, 16), nn.ReLU()) for i in range(3)]
        x, y = torch.randn(32, 8, generator=g), torch.randint(0, 3, (32,), generator=g)
        from . import BLANPNet

        net = BLANPNet.from_blocks(blocks, num_classes=3, example=x[:2])
    cross = 0.0
    for mode in ("blanp", "exact", "dgl"):
        for i, layer in enumerate(net.layers):
            net.zero_grad(set_to_none=True)
            h = x
            for prev in net.layers[:i]:
                h = prev(h)  # attached to the earlier layers' graphs on purpose
            layer.local_step(h, y, mode=mode, generator=g)
            for j, other in enumerate(net.layers):
                if j != i:
                    for p in other.parameters():
                        gr = p.grad
                        cross = max(cross, float(gr.abs().max()) if gr is not None else 0.0)
    net.zero_grad(set_to_none=True)
    layer = net.layers[1]
    h_in = net.layers[0](x).detach()
    params = list(layer.block.parameters())
    ref = torch.autograd.grad(F.cross_entropy(layer.critic(layer(h_in)), y), params)
    layer.local_step(h_in, y, mode="exact")
    exact_err = max(float((p.grad - r).abs().max()) for p, r in zip(params, ref, strict=True))
    before = [p.detach().clone() for p in layer.critic.parameters()]
    layer.update_critic()
    tau = layer.ema_decay
    ema_err = max(float((pc - (tau * b + (1 - tau) * ph.detach())).abs().max())
                  for pc, b, ph in zip(layer.critic.parameters(), before,
                                       layer.head.parameters(), strict=True))  # fmt: skip
    return {"check_antithetic_quadratic_error": quad_err, "check_cross_layer_grad_max": cross,
            "check_exact_grad_error": exact_err, "check_ema_error": ema_err}  # fmt: skip


def _cnn_step_cost(cfg: Config, steps: int = 5) -> dict:
    """CPU seconds per training step of BLANP and of BLANP-Exact on the run's CNN (one
    batch of the run's size, after one warm-up step): the measured cost behind leaving
    BLANP off the CNN at this tier."""
    import time

    x, _, _, _, _, _ = _data(cfg.cnn_dataset, cfg.batch_size, 10, 10, cfg.seed, cfg.cnn_pool)
    x = torch.as_tensor(x[: cfg.batch_size])
    y = torch.arange(len(x)) % 10
    out = {}
    for mode in ("blanp", "exact"):
        net = local_net(make_model("cnn", tuple(x.shape[1:]), cfg.cnn_channels, 10,
                                   seed=cfg.seed), example=x[:2], sigma=cfg.sigma)  # fmt: skip
        opt = BLANPOptimizer(net, mode=mode, lr=cfg.lr)
        for i in range(steps + 1):
            if i == 1:
                tic = time.process_time()
            opt.zero_grad()
            opt.local_backward(x, y)
            opt.step()
        out[f"cnn_{mode}_cpu_s_per_step"] = (time.process_time() - tic) / steps
    return out


CNN_BLANP_NOTE = ("BLANP itself is not trained on the CNN in this run (cnn_methods): one "
                  "step costs {blanp:.3g} CPU s against {exact:.3g} for BLANP-Exact "
                  "(measured in this run), so {seeds} seeds at up to {cap} steps would cost "
                  "up to {total:.0f} CPU s on top (the small tier's budget is about 180 CPU "
                  "s in all). Add it with --set cnn_methods=backprop,exact,dgl,blanp.")


def _memory_input(cfg: Config, input_dim: int):
    """The batch every depth and method of the memory sweep steps on."""
    g = torch.Generator().manual_seed(cfg.seed)
    x = torch.rand(cfg.batch_size, input_dim, generator=g)
    y = torch.randint(0, 10, (cfg.batch_size,), generator=g)
    return x, y


def _memory(cfg: Config, x, y, depth: int, method: str) -> dict:
    """Peak saved bytes and step time of one training step at one depth."""
    widths = (cfg.mem_width,) * depth
    model = make_model("mlp", (x.shape[1],), widths, 10, seed=cfg.seed)
    if method != "backprop":
        model = local_net(model, example=x[:2], sigma=cfg.sigma, seed=cfg.seed)
    cost = measure_step(model, x, y, mode=method if method != "backprop" else "blanp",
                        repeats=cfg.mem_repeats)  # fmt: skip
    return {"peak_saved_bytes": cost.peak_bytes, "seconds_per_step": cost.seconds}


MEM_METHODS = ("backprop", "blanp", "exact")


class BLANPExperiment(Experiment):
    """Units: every (data set, seed, method) network of the MLP and the CNN, then the
    memory sweep's (depth, method) steps, then the in-run oracle checks."""

    Config, TIERS, METRICS = Config, TIERS, METRICS
    VOLATILE = ("time_ratio_*", "cnn_*_cpu_s_per_step")
    UNIT_TABLE = None
    CAPTIONS: ClassVar[dict[str, str]] = {
        "accuracy": "Test accuracy (mean and range over seeds) of every method on each "
        "data set and architecture, with the untrained network (the control): the paper's "
        "BLANP vs backprop and local-method tables.",
        "curves": "Held-out accuracy against training step for every method and seed "
        "(each line ends where the stopping rule or the step cap ended training): the "
        "paper's training curves.",
        "memory": "Peak saved-activation bytes of one training step against depth "
        "(MLP, width as configured): the paper's depth-independent memory claim.",
    }

    def setup(self, cfg: Config, ctx) -> dict:
        input_dim = int(np.prod(_data(cfg.datasets[0], 20, 10, 10, cfg.seed)[0].shape[1:]))
        return {"cfg": cfg, "data": {}, "diagnosed": False,
                "mem_input": _memory_input(cfg, input_dim)}

    def grid(self, cfg: Config):
        units = [{"part": "train", "arch": "mlp", "dataset": ds, "seed": cfg.seed * 1000 + s,
                  "method": m}
                 for ds in cfg.datasets for s in range(cfg.num_seeds)
                 for m in (*cfg.methods, UNTRAINED)]  # fmt: skip
        if cfg.cnn_dataset != "none":
            units += [{"part": "train", "arch": "cnn", "dataset": cfg.cnn_dataset,
                       "seed": cfg.seed * 1000 + s, "method": m}
                      for s in range(cfg.num_seeds) for m in (*cfg.cnn_methods, UNTRAINED)
                      if m != "blanp" or s < cfg.cnn_blanp_seeds]  # fmt: skip
            if "blanp" not in cfg.cnn_methods or cfg.cnn_blanp_seeds == 0:
                units.append({"part": "cnn_cost"})
        units += [{"part": "memory", "depth": d, "method": m}
                  for d in cfg.mem_depths for m in MEM_METHODS]
        return [*units, {"part": "checks"}]

    def measure(self, unit, state, ctx) -> dict:
        cfg = state["cfg"]
        if unit["part"] == "memory":
            x, y = state["mem_input"]
            return _memory(cfg, x, y, unit["depth"], unit["method"])
        if unit["part"] == "checks":
            return _checks(cfg)
        if unit["part"] == "cnn_cost":
            return _cnn_step_cost(cfg)
        arch, ds, seed, method = unit["arch"], unit["dataset"], unit["seed"], unit["method"]
        pool = cfg.cnn_pool if arch == "cnn" else 1
        key = (ds, seed, pool)
        if key not in state["data"]:
            state["data"] = {key: _data(ds, cfg.num_train, cfg.num_val, cfg.num_test, seed,
                                        pool)}  # fmt: skip
        data = state["data"][key]
        widths, iters = ((cfg.widths, cfg.max_iter) if arch == "mlp"
                         else (cfg.cnn_channels,
                               cfg.cnn_np_iter if method in NP_METHODS else cfg.cnn_iter))
        net, acc, rec = _train(method, arch, widths, data, cfg, seed, iters, ctx.device)
        row = {"test_acc": acc, "steps": rec["steps"], "plateau": rec["plateau"],
               "curve": rec["curve"]}  # fmt: skip
        if arch == "mlp" and method == "blanp" and not state["diagnosed"]:
            # The estimator diagnostics on the first trained BLANP network.
            state["diagnosed"] = True
            ratio, smooth, cos = _estimator_diagnostics(net, data, cfg,
                                                        np.random.default_rng(cfg.seed))
            row.update({"directional_error_ratio": ratio.value,
                        "directional_error_ratio_lo": ratio.lo,
                        "directional_error_ratio_hi": ratio.hi,
                        "directional_error_ratio_n": ratio.n,
                        "directional_error_ratio_method": ratio.method,
                        "directional_error_ratio_smooth": smooth,
                        "grad_cosine_blanp_exact": cos})  # fmt: skip
        return row

    def summarize(self, table, cfg: Config, ctx) -> dict:
        trained = table.where(part="train")
        m: dict = {}
        for (method, ds, arch), t in trained.groups("method", "dataset", "arch").items():
            vals = t.column("test_acc")
            m[f"acc_{method}_{ds}_{arch}"] = float(np.mean(vals))
            m[f"std_{method}_{ds}_{arch}"] = (float(np.std(vals, ddof=1)) if len(vals) > 1
                                              else float("nan"))  # fmt: skip
            if method != UNTRAINED:
                m[f"steps_{method}_{ds}_{arch}"] = float(np.median(t.column("steps")))
                m[f"plateau_{method}_{ds}_{arch}"] = float(np.mean(t.column("plateau")))
        mlp = trained.where(arch="mlp")
        dsets = cfg.datasets
        # Diagnostic of the accuracy gaps: the share of BLANP's MLP runs whose held-out
        # stopping rule fired before the step cap (1: every gap is measured at a plateau).
        bl = mlp.where(method="blanp")
        m["plateau_fraction_blanp"] = (float(np.mean(bl.column("plateau"))) if len(bl)
                                       else float("nan"))  # fmt: skip
        for name, (a, b) in {"blanp_minus_bp_min": ("blanp", "backprop"),
                             "exact_minus_bp_min": ("exact", "backprop"),
                             "exact_minus_blanp_min": ("exact", "blanp"),
                             "blanp_minus_forward_min": ("blanp", "forward"),
                             "untrained_minus_bp_min": (UNTRAINED, "backprop"),
                             "untrained_minus_blanp_min": (UNTRAINED, "blanp")}.items():
            m[name] = _min_gap(mlp, a, b, dsets)
        cnn = cfg.cnn_dataset
        cnn_rows = trained.where(arch="cnn")
        for name, (a, b) in {"exact_minus_dgl_cnn": ("exact", "dgl"),
                             "exact_minus_bp_cnn": ("exact", "backprop"),
                             "untrained_minus_dgl_cnn": (UNTRAINED, "dgl"),
                             "blanp_minus_bp_cnn": ("blanp", "backprop"),
                             "blanp_minus_exact_cnn": ("blanp", "exact")}.items():
            m[name] = (_min_gap(cnn_rows, a, b, (cnn,), "cnn") if cnn != "none"
                       else Estimate.missing("no CNN at this tier (cnn_dataset = 'none')"))
        # Claim 4: seed-to-seed spread of BLANP vs BLANP without the EMA critic, per pair.
        pairs = [(d, k) for (meth, d, k) in trained.groups("method", "dataset", "arch")
                 if meth == "blanp" and trained.where(method="blanp_no_ema", dataset=d, arch=k)
                 and len(trained.where(method="blanp", dataset=d, arch=k)) > 1]
        def ema_fraction(t) -> float:
            wins = [np.std(t.where(method="blanp", dataset=d, arch=k).column("test_acc"),
                           ddof=1)
                    <= np.std(t.where(method="blanp_no_ema", dataset=d, arch=k)
                              .column("test_acc"), ddof=1)
                    for d, k in pairs]  # fmt: skip
            return float(np.mean(wins)) if wins else float("nan")

        # a comparison of two spreads over three seeds each: its interval resamples seeds
        # (both arms together: the same seeds), so a coin flip does not read as a verdict
        m["ema_std_pairs_fraction"] = (trained.bootstrap(ema_fraction, unit="seed",
                                                         num_resamples=1000, seed=cfg.seed)
                                       if pairs else float("nan"))
        diag = [r for r in mlp if "directional_error_ratio" in r]
        if diag:
            r = diag[0]
            m["directional_error_ratio"] = Estimate(
                r["directional_error_ratio"], r["directional_error_ratio_lo"],
                r["directional_error_ratio_hi"], r["directional_error_ratio_method"], 0.95,
                r["directional_error_ratio_n"])
            m["directional_error_ratio_smooth"] = r["directional_error_ratio_smooth"]
            m["grad_cosine_blanp_exact"] = r["grad_cosine_blanp_exact"]
        else:
            for k in ("directional_error_ratio", "directional_error_ratio_smooth",
                      "grad_cosine_blanp_exact"):
                m[k] = float("nan")

        mem = table.where(part="memory")
        by = {(r["method"], r["depth"]): r for r in mem}
        d_lo, d_hi = min(cfg.mem_depths), max(cfg.mem_depths)
        d_mid = 8 if 8 in cfg.mem_depths else d_hi
        for (method, depth), r in by.items():
            m[f"mem_bytes_{method}_d{depth}"] = r["peak_saved_bytes"]
            if method != "backprop":
                bp = by[("backprop", depth)]["seconds_per_step"]
                m[f"time_ratio_{method}_bp_d{depth}"] = r["seconds_per_step"] / max(bp, 1e-12)
        pk = {meth: {d: by[(meth, d)]["peak_saved_bytes"] for d in cfg.mem_depths}
              for meth in MEM_METHODS}  # fmt: skip
        m["mem_ratio_blanp"] = pk["blanp"][d_mid] / pk["blanp"][d_lo]
        m["mem_ratio_exact"] = pk["exact"][d_mid] / pk["exact"][d_lo]
        m["mem_ratio_backprop"] = pk["backprop"][d_hi] / pk["backprop"][d_lo]
        m["mem_ratio_backprop_8_2"] = pk["backprop"][d_mid] / pk["backprop"][d_lo]
        m["mem_exact_over_bp_deepest"] = pk["exact"][d_hi] / pk["backprop"][d_hi]
        cost = table.where(part="cnn_cost")
        for mode in ("blanp", "exact"):
            k = f"cnn_{mode}_cpu_s_per_step"
            m[k] = (cost.rows[0][k] if len(cost)
                    else Estimate.missing("BLANP is trained on the CNN at this tier"))
        (checks,) = table.where(part="checks").rows
        m.update({k: v for k, v in checks.items() if k.startswith("check_")})
        for k, v in m.items():
            if isinstance(v, float) and v != v:
                m[k] = Estimate.missing(
                    "not measured at this tier (method, data set or seed count not run)")
        return m

    def tables(self, table, summary, cfg: Config) -> dict:
        acc = [{"dataset": r["dataset"], "arch": r["arch"], "method": r["method"],
                "seed": r["seed"], "test_acc": r["test_acc"], "steps": r["steps"],
                "plateau": bool(r["plateau"])}
               for r in table.where(part="train")]  # fmt: skip
        mem = [{"depth": r["depth"], "method": r["method"],
                "peak_saved_bytes": r["peak_saved_bytes"],
                "seconds_per_step": r["seconds_per_step"]}
               for r in table.where(part="memory")]  # fmt: skip
        return {"accuracy": acc, "memory": mem}

    def figures(self, table, summary, cfg: Config) -> dict:
        acc = {k: list(t.column("test_acc")) for k, t in
               table.where(part="train").groups("method", "dataset", "arch").items()}
        mem = self.tables(table, summary, cfg)["memory"]
        return {"accuracy": _fig_acc(acc), "curves": _fig_curves(table.where(part="train")),
                "memory": _fig_mem(mem)}

    def notes(self, table, summary, cfg: Config):
        trained = table.where(part="train").where(lambda r: r["method"] != UNTRAINED)
        capped = sorted({f"{r['method']} ({r['dataset']}, {r['arch']})" for r in trained
                         if not r["plateau"]})  # fmt: skip
        cnn = ("no CNN" if cfg.cnn_dataset == "none"
               else f"CNN {cfg.cnn_channels} on {cfg.cnn_dataset}")
        out = [f"MLP widths {cfg.widths}, {cnn}; {cfg.num_seeds} seed(s). Every network "
               "trains until its held-out loss "
               f"({cfg.num_val} training images set aside) fails to improve by more than "
               f"{cfg.min_improvement:.0%} over {cfg.patience} evaluations "
               f"{cfg.eval_every} steps apart, or until the cap ({cfg.max_iter} steps MLP, "
               f"{cfg.cnn_iter} CNN, {cfg.cnn_np_iter} for the perturbation rules on the "
               "CNN)."]
        out.append("Stopped by the cap, not at a plateau: " + (", ".join(capped) or "none")
                   + ".")
        k = min(cfg.cnn_blanp_seeds, cfg.num_seeds)
        if cfg.cnn_dataset != "none" and "blanp" in cfg.cnn_methods and k:
            out.append(f"BLANP itself on the CNN: {k} of {cfg.num_seeds} seed(s) "
                       "(blanp_minus_bp_cnn, blanp_minus_exact_cnn; no claim rests on it).")
        cost = table.where(part="cnn_cost")
        if len(cost):
            (r,) = cost.rows
            b, e = r["cnn_blanp_cpu_s_per_step"], r["cnn_exact_cpu_s_per_step"]
            out.append(CNN_BLANP_NOTE.format(blanp=b, exact=e, seeds=cfg.num_seeds,
                                             cap=cfg.cnn_np_iter,
                                             total=b * cfg.cnn_np_iter * cfg.num_seeds))
        return tuple(out)


def _fig_acc(acc) -> bytes:
    fig, (ax,) = new_figure(width=7.0)
    keys = sorted(acc)
    xs = np.arange(len(keys))
    means = [np.mean(acc[k]) for k in keys]
    # clipped at 0: the mean of equal values can round a hair past them
    lo = [max(0.0, means[i] - min(acc[k])) for i, k in enumerate(keys)]
    hi = [max(0.0, max(acc[k]) - means[i]) for i, k in enumerate(keys)]
    ax.bar(xs, means, yerr=[lo, hi], capsize=2)
    ax.set_xticks(xs, [f"{d[:7]} {a} {m}" for m, d, a in keys], rotation=60, ha="right",
                  fontsize=7)  # fmt: skip
    ax.set_ylabel("test accuracy")
    return figure_png(fig)


def _fig_curves(trained) -> bytes:
    """Held-out accuracy against training step, one panel per (data set, architecture),
    one line per seed, coloured by method."""
    panels = sorted({(r["dataset"], r["arch"]) for r in trained})
    fig, axes = new_figure(ncols=max(1, len(panels)), width=3.4)
    colours = dict(zip(METHODS, ("k", "C0", "C1", "C2", "C3", "C4"), strict=True))
    for ax, (ds, arch) in zip(axes, panels, strict=False):
        shown = set()
        for r in trained.where(dataset=ds, arch=arch):
            steps, _loss, acc = r["curve"]
            if not steps:
                continue
            meth = r["method"]
            ax.plot(steps, acc, color=colours.get(meth, "C5"), lw=1, alpha=0.8,
                    label=None if meth in shown else meth)  # fmt: skip
            shown.add(meth)
        ax.set_title(f"{ds} {arch}", fontsize=9)
        ax.set_xlabel("training step")
        ax.set_ylabel("held-out accuracy")
        ax.legend(fontsize=7)
    return figure_png(fig)


def _fig_mem(rows) -> bytes:
    fig, (ax,) = new_figure()
    for method in ("backprop", "blanp", "exact"):
        pts = [(r["depth"], r["peak_saved_bytes"]) for r in rows if r["method"] == method]
        ax.plot(*zip(*pts, strict=True), marker="o", label=method)
    ax.set_xlabel("depth (layers)")
    ax.set_ylabel("peak saved-activation bytes per step")
    ax.set_xscale("log", base=2)
    ax.legend()
    return figure_png(fig)


EXPERIMENT = BLANPExperiment()
run = EXPERIMENT.run
