"""Reproduction of the sign-code paper on real MNIST and Fashion-MNIST.

For each data set, architecture (3-layer MLPs with LeakyReLU, tanh, ELU and the ReLU
control; a small pre-activation ResNet) and seed we train a classifier and measure: test
accuracy; the accuracy of a 5-NN on the binary sign code of every activation site (and,
for context, of kNN on raw pixels); accuracy with every magnitude replaced by Gaussian
noise of the site's training RMS (mean over draws) and with 20% of signs flipped; the
same/different-class code overlap. A width sweep of LeakyReLU MLPs gives the margin
decomposition's scaling with width, and a sweep of the overlap-disrupting regulariser on
a small training set gives train and test accuracy when same-class sharing is broken.

Uncertainties are 95% percentile bootstraps (scipy, 400 resamples) over test inputs
(paired where two accuracies are compared on the same inputs), pooled over seeds; the
overlap-accuracy correlation's is a bootstrap over trained models. The width sweep
trains one network per width, so its margin slope and whether the sign part's share
grows at every step of the sweep are bootstrapped over test inputs (every width's
decomposition of the same input kept together): they carry the noise of the test sample,
not that of the training seed.

Controls (the same statistic where the effect must be absent): the sign-code kNN gap of
the ReLU models (not sign-preserving, the spec's negative control); the ResNet's accuracy
drop when 20% of its signs flip (an intervention that must matter: a test that sees no
drop there cannot see one under magnitude noise); the best accuracy with no sign flipped;
the overlap correlation computed with each model's data set's mean gap in place of its
own (what pooling data sets alone gives); the margin slope and ratio of the same widths
untrained.

Deviations from the paper
-------------------------
- Scale: subsets of MNIST / Fashion-MNIST (the small tier trains on a few thousand images
  for a few hundred steps); the ResNet sees 2x2-average-pooled 14x14 images with
  channels (8, 16, 32) at the small tier to fit 2 CPU cores; the paper tier uses the full
  data, 28x28 inputs and (16, 32, 64) channels. The paper's CIFAR-scale ResNets are not
  run (CIFAR is not available offline).
- Sign flips are independent per unit and input with probability ``f`` (our reading of
  "flipping 20% of the signs"); magnitude noise is ``|N(0, sigma_l^2)|`` with ``sigma_l``
  the site's training RMS (inferred).
- The regulariser's form (a cosine penalty on ``tanh(z / tau)`` of same-class pairs) and
  the margin constant ``a_bar`` (the layer's mean magnitude per input) are inferred.
- The margin-scaling claim is tested on trained networks under PyTorch's default
  (standard) parameterisation only.

What does not reproduce at the small tier, and why we think so
----------------------------------------------------------------
- Magnitudes barely matter in the ResNet: ours falls to about chance under magnitude noise,
  while the tanh MLP keeps most of its accuracy. The diagnostic retrains the ResNet wider
  (channels x2) and four times longer on the first data set (``resnet_diag_*``: the drop
  and the accuracy of each variant): a drop that shrinks with width or training length
  would point at our scale. In the stored small run it does not: the wider and the
  longer-trained ResNet are more accurate and still fall to about chance under magnitude
  noise, so width (x2) and training length (x4) in this range are not the cause. Two
  more diagnostics on the main model of that data set and seed: its magnitude noise
  scored after BatchNorm's running statistics are re-estimated under the noise
  (``resnet_diag_drop_bn_recal``: whether the drop is a normalisation shift rather than
  lost information), and noise at one activation site at a time (table
  ``resnet_sites``; ``resnet_site_acc_min``, ``_median`` and ``_last``: whether the drop
  builds up over layers or a single site already causes it). In the stored small run
  re-estimating BatchNorm leaves the drop about where it was, so it is not a
  normalisation shift; and noise at a single site before the last block already costs
  tens of points at most sites, while the sites just before global pooling are robust,
  so the drop does not need many layers to build up. Why one site's magnitudes matter
  this much: the residual additions were the leading candidate (a site's noise reaches
  the next block's pre-activation as ``x + F(x)``, whose sign depends on the magnitudes
  of both paths, where a plain stack passes it through weights alone). Two diagnostics
  test it on the same data set and seed. (a) The same network with every skip path
  removed (``noskip``: ``make_resnet(skip=False)``, a plain CNN of the same depth,
  widths, activation sites and training; ``resnet_diag_drop_noskip`` and
  ``resnet_diag_acc_noskip``) under the same noise: a plain CNN that keeps most of its
  accuracy would put the cause in the residual additions, one that also falls to about
  chance would rule them out. (b) The share of pre-activation signs that one site's
  noise leaves as they were at the next site and at the last site (the one global
  pooling reads), per site in table ``resnet_sign_propagation`` and as the mean over
  sites in ``resnet_diag_next_sign_kept_*`` and ``resnet_diag_last_sign_kept_*``, for the
  ResNet (``base``) and the plain CNN (``noskip``): fewer signs kept in the ResNet would
  show the mechanism, about as many would not. In the stored small run the plain CNN is
  about as accurate as the ResNet and also falls to about chance under magnitude noise;
  one site's noise changes about as large a share of the next site's signs in both
  networks, and the plain CNN keeps fewer of the last site's signs than the ResNet. So
  the skip connections are not the cause. In both networks one site's noise already
  changes a sizeable share of the signs after it: randomised magnitudes do not keep the
  downstream sign code of our convolutional networks, with or without skip paths. (c)
  The activation: the tanh MLP keeps most of its accuracy under magnitude noise where
  the LeakyReLU MLP loses more, so the same ResNet with tanh (``tanh``;
  ``resnet_diag_drop_tanh`` and ``resnet_diag_acc_tanh``) tests whether the unbounded
  activation rather than the convolutional architecture is the cause: a tanh ResNet
  that keeps most of its accuracy would support the activation, one that also falls to
  about chance would point at the architecture. In the stored small run the tanh ResNet
  is about as accurate as the LeakyReLU one and also falls to about chance, so the
  activation is not the cause either. (d)
  Normalisation: every activation of the ResNet reads a BatchNorm's output, a
  pre-activation standardised per channel (so many sit near zero, where noise upstream
  flips their sign), and no MLP activation does. Two diagnostics: the ResNet without
  BatchNorm (``nonorm``; ``resnet_diag_drop_nonorm``, ``resnet_diag_acc_nonorm``) and the
  main MLP recipe with a BatchNorm before every activation (table
  ``mlp_norm_diagnostic``; ``mlp_norm_diag_drop_*`` beside the plain MLP's
  ``mlp_plain_diag_drop_*``, same data set, seed and activation). A ResNet without
  BatchNorm that keeps most of its accuracy, or an MLP that loses it once BatchNorm is
  added, would put the cause in the normalisation; neither would rule it out. In the
  stored small run BatchNorm makes the LeakyReLU MLP lose much more of its accuracy
  under magnitude noise than the plain one (the tanh MLP stays robust with it), but the
  ResNet without BatchNorm still falls to near chance. So normalisation adds fragility
  where it is present, yet it is not what makes our ResNet fail: across these
  diagnostics the drop goes with the convolutional network itself (with or without skip
  paths or BatchNorm, with either activation), and what in it makes one site's
  magnitudes decide the downstream signs remains undiagnosed.
- 20% of signs flipped reduces every model to chance: it does for the ResNet, not for the
  3-layer MLPs, which stay far above chance under independent per-input flips. Three
  diagnostics, one per cause. (a) Scope, our reading: the abstract's sentence follows the
  one on residual networks, and "every model" is ours; ``flip_acc_max_resnet`` and
  ``flip_acc_max_mlp`` give the best flipped accuracy within each architecture, and a
  ResNet at chance beside MLPs far above it would say the claim holds for the residual
  networks only. (b) Depth: ``flip_acc_deep`` is a ``flip_diag_depth``-layer MLP (first
  data set, seed 0) under the same flips, ``flip_acc_deep_base`` the main 3-layer model of
  that data set, seed and activation; a deeper MLP much nearer chance would support
  damage that compounds over layers (our MLPs too shallow), one about as accurate would
  not. (c) Width: ``flip_acc_width_narrowest`` and ``flip_acc_width_widest`` score the
  trained width sweep under the same flips; flipped accuracy that rises with width would
  mean independent flips average out over units, so a wider (paper-size) MLP would not
  reach chance either, while one that falls with width would point at our size.
- The regulariser collapses test accuracy: it does break same-class overlap (the check
  ``regulariser_breaks_overlap``), yet test accuracy falls only a little. Two causes are
  tested. (a) Our penalties too weak: ``reg_test_ratio_strong`` and
  ``reg_train_acc_strong`` are one more model at ``reg_strong_penalty`` (above the
  sweep); a ratio at or below a half with training accuracy kept at 95% would point at
  our range of penalties, a ratio still far above it at that strength would not. (b) The
  mechanism, generalisation through the shared sign code: ``reg_knn_acc`` is the
  sign-code kNN accuracy of the chosen regularised model, ``reg_knn_acc_base`` that of
  the unregularised one. A kNN that loses much more accuracy than the model does would
  say the regularised MLP generalises without a class-shared sign code (through the
  magnitudes the penalty leaves free), so the mechanism does not bind our MLP; a kNN
  about as accurate as before would say the penalty lowered the mean overlap without
  breaking the code's class neighbourhoods, which points at our inferred form of the
  regulariser.
- Overlap predicts generalisation: pooled over architectures and data sets the
  correlation is weak; ``overlap_spearman_within_dataset_min`` gives the correlation
  within each data set (the smallest), and the control shows what the data set alone
  gives.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import partial
from typing import ClassVar

import numpy as np
import torch
from scipy.stats import spearmanr

from neurips26.common.data import load_digits, load_fashion_mnist, load_mnist
from neurips26.common.experiment import param
from neurips26.common.plotting import figure_png, new_figure
from neurips26.experiment import Estimate, Experiment, bootstrap_interval

from . import (
    SIGN_PRESERVING,
    activation_sites,
    calibrate_magnitudes,
    flip_signs,
    hamming_distances,
    hamming_knn,
    make_mlp,
    make_resnet,
    margin_decomposition,
    randomize_magnitudes,
    sign_code,
    sign_overlap,
    train_classifier,
)

DATASETS = ("digits", "mnist", "fashion_mnist")
CHANCE = 0.1
BOOT = 400  # bootstrap resamples


@dataclass(frozen=True)
class Config:
    seed: int = 0
    datasets: tuple[str, ...] = param(("mnist", "fashion_mnist"), help="data sets",
                                      choices=DATASETS)
    num_train: int = param(4000, help="training images per data set (stratified subset)", min=10)
    num_test: int = param(1000, help="test images per data set", min=10)
    num_seeds: int = param(2, help="seeds per model", min=1)
    mlp_width: int = param(256, help="MLP hidden width d", min=1)
    mlp_activations: tuple[str, ...] = param(("leaky_relu", "tanh", "relu"),
                                             help="MLP activations (relu: control)",
                                             choices=("leaky_relu", "tanh", "elu", "gelu",
                                                      "silu", "relu"))
    resnet_channels: tuple[int, ...] = param((8, 16, 32), help="ResNet stage widths", min=1)
    resnet_pool: int = param(2, help="average-pool factor of ResNet inputs", min=1)
    resnet_iter: int = param(300, help="ResNet training steps", min=1)
    max_iter: int = param(500, help="MLP training steps", min=1)
    batch_size: int = param(128, help="mini-batch size", min=1)
    lr: float = param(2e-3, help="peak AdamW learning rate", min=1e-8)
    knn_k: int = param(5, help="k of the sign-code kNN", min=1)
    resnet_diag: bool = param(True, help="diagnose the ResNet's magnitude drop: retrain it "
                              "wider (channels x2), longer (steps x4), without skip paths, "
                              "with tanh and without BatchNorm on the first data set, seed "
                              "0, beside that set's and seed's main ResNet; count the "
                              "downstream signs one site's magnitude noise changes; and "
                              "train the main MLPs with BatchNorm before every activation")
    magnitude_draws: int = param(3, help="noise draws for magnitude randomisation", min=1)
    flip_fraction: float = param(0.2, help="fraction of signs flipped", min=0.0, max=1.0)
    widths: tuple[int, ...] = param((64, 128, 256, 512), help="MLP widths of the margin sweep",
                                    min=1)
    reg_num_train: int = param(1000, help="training images of the regulariser sweep", min=10)
    reg_iter: int = param(800, help="training steps of the regulariser sweep", min=1)
    penalties: tuple[float, ...] = param((0.3, 1.0, 3.0), help="regulariser strengths mu",
                                         min=0.0)
    tau: float = param(0.1, help="soft-sign temperature of the regulariser", min=1e-6)
    reg_strong_penalty: float = param(30.0, help="diagnostic: one more regularised model "
                                      "at this penalty mu (stronger than the sweep's)",
                                      min=0.0)
    flip_diag_depth: int = param(6, help="diagnostic: hidden layers of a deeper MLP whose "
                                 "accuracy under sign flips is compared with the main "
                                 "3-layer one (first data set, seed 0)", min=1)
    flip_diag_activation: str = param("tanh", help="diagnostic: activation of that deeper "
                                      "MLP", choices=("leaky_relu", "tanh", "elu", "gelu",
                                                      "silu"))


TIERS = {
    "smoke": Config(datasets=("digits",), num_train=600, num_test=200, num_seeds=1,
                    mlp_width=64, mlp_activations=("leaky_relu", "relu"),
                    resnet_channels=(4, 8, 8), resnet_pool=1, resnet_iter=20, max_iter=60,
                    batch_size=64, magnitude_draws=1, widths=(32, 64), reg_num_train=200,
                    reg_iter=60, penalties=(1.0,)),
    "small": Config(),
    "paper": Config(num_train=60000, num_test=10000, num_seeds=5, mlp_width=512,
                    mlp_activations=("leaky_relu", "tanh", "elu", "relu"),
                    resnet_channels=(16, 32, 64), resnet_pool=1, resnet_iter=6000,
                    max_iter=6000, magnitude_draws=5, widths=(64, 128, 256, 512, 1024),
                    reg_num_train=5000, reg_iter=6000, penalties=(0.1, 0.3, 1.0, 3.0, 10.0)),
}

METRICS = (
    "knn_gap_max", "knn_gap_relu", "raw_knn_gap_max",
    "resnet_magnitude_drop", "resnet_flip_drop", "mlp_magnitude_drop_max",
    "resnet_diag_drop_base", "resnet_diag_drop_wide", "resnet_diag_drop_long",
    "resnet_diag_acc_base", "resnet_diag_acc_wide", "resnet_diag_acc_long",
    "resnet_diag_drop_bn_recal", "resnet_diag_acc_bn_recal",
    "resnet_diag_drop_noskip", "resnet_diag_acc_noskip",
    "resnet_diag_drop_tanh", "resnet_diag_acc_tanh",
    "resnet_diag_drop_nonorm", "resnet_diag_acc_nonorm",
    "mlp_norm_diag_drop_leaky_relu", "mlp_plain_diag_drop_leaky_relu",
    "mlp_norm_diag_drop_tanh", "mlp_plain_diag_drop_tanh",
    "mlp_norm_diag_drop_*", "mlp_norm_diag_acc_*", "mlp_plain_diag_drop_*",
    "resnet_diag_next_sign_kept_base", "resnet_diag_next_sign_kept_noskip",
    "resnet_diag_last_sign_kept_base", "resnet_diag_last_sign_kept_noskip",
    "resnet_site_acc_min", "resnet_site_acc_median", "resnet_site_acc_last",
    "flip_acc_max", "unflipped_acc_max",
    "flip_acc_max_resnet", "flip_acc_max_mlp", "flip_acc_deep", "flip_acc_deep_base",
    "flip_acc_width_narrowest", "flip_acc_width_widest",
    "reg_train_acc", "reg_test_ratio", "reg_gap_ratio", "reg_penalty",
    "reg_knn_acc", "reg_knn_acc_base", "reg_test_ratio_strong", "reg_train_acc_strong",
    "overlap_spearman", "overlap_spearman_dataset_only", "overlap_spearman_within_dataset_min",
    "num_models",
    "margin_slope_error", "untrained_margin_slope_error", "margin_ratio_increasing",
    "untrained_margin_ratio_increasing",
    "check_knn_sklearn_agreement", "check_true_magnitudes_max_diff",
    "check_flip_fraction_max_z", "check_margin_sum_error",
)  # fmt: skip


def _data(name: str, cfg: Config, num_train: int, seed: int):
    if name == "digits":
        ds = load_digits(16)
    elif name == "mnist":
        ds = load_mnist()
    else:
        ds = load_fashion_mnist()
    ntr = min(num_train, len(ds.y_train))
    nte = min(cfg.num_test, len(ds.y_test))
    return ds.subset(ntr, nte, seed=seed)


def _pool(x: np.ndarray, k: int) -> np.ndarray:
    if k == 1:
        return x
    t = torch.nn.functional.avg_pool2d(torch.as_tensor(x), k)
    return t.numpy()


@torch.no_grad()
def _correct(model, x) -> np.ndarray:
    return model(torch.as_tensor(x)).argmax(1).numpy()


def _measure_model(model, arch, act, dname, seed, xtr, ytr, xte, yte, cfg) -> list[dict]:
    """One trained model: a row of its accuracies and one row per test input (kind
    ``"input"``) with its 0/1 correctness under each intervention, for the bootstraps."""
    pred = _correct(model, xte)
    train_acc = float((_correct(model, xtr) == ytr).mean())
    test_codes = sign_code(model, xte)  # read once: the kNN's queries and the overlap
    knn_pred = hamming_knn(sign_code(model, xtr), ytr, test_codes, k=cfg.knn_k)
    from sklearn.neighbors import KNeighborsClassifier  # raw-pixel kNN (Euclidean), context

    raw_pred = KNeighborsClassifier(cfg.knn_k).fit(xtr.reshape(len(xtr), -1), ytr).predict(
        xte.reshape(len(xte), -1)
    )
    if act in SIGN_PRESERVING:
        mag_correct = _magnitude_correct(model, xtr, xte, yte, cfg, seed)
    else:
        mag_correct = np.full(len(yte), np.nan)
    with flip_signs(model, fraction=cfg.flip_fraction, seed=seed) as rec:
        flip_pred = _correct(model, xte)
    f = cfg.flip_fraction
    z = max(abs(fl - f * s) / max(np.sqrt(s * f * (1 - f)), 1e-12)
            for fl, s in zip(rec.flipped, rec.seen, strict=True))  # fmt: skip
    gap = sign_overlap(test_codes, yte).gap
    correct, knn_c, flip_c = pred == yte, knn_pred == yte, flip_pred == yte
    model_row = {
        "kind": "model", "dataset": dname, "arch": arch, "activation": act, "seed": seed,
        "train_acc": train_acc, "test_acc": float(correct.mean()),
        "knn_acc": float(knn_c.mean()), "raw_knn_acc": float((raw_pred == yte).mean()),
        "magnitude_acc": float(np.mean(mag_correct)), "flip_acc": float(flip_c.mean()),
        "overlap_gap": float(gap), "flip_z": float(z),
    }  # fmt: skip
    key = f"{dname}/{arch}/{act}"
    return [model_row] + [
        {"kind": "input", "key": key, "seed": seed, "correct": float(c), "knn": float(k),
         "magnitude": float(m), "flip": float(fl)}
        for c, k, m, fl in zip(correct, knn_c, mag_correct, flip_c, strict=True)]


def _magnitude_correct(model, xtr, xte, yte, cfg: Config, seed: int, *, rms=None,
                       only: tuple[int, ...] | None = None,
                       recalibrate_bn: bool = False) -> np.ndarray:  # fmt: skip
    """Each test input's correctness with magnitudes replaced by noise, averaged over
    ``magnitude_draws`` draws, shape ``(N_test,)``.

    ``rms``: the sites' magnitude scales (calibrated on ``xtr`` when None); ``only``: the
    sites randomised (every site when None); ``recalibrate_bn``: each draw scores a copy
    of the model whose BatchNorm layers first average (cumulatively) the batch
    statistics of the training inputs under the same noise, so the learned weights and
    the signs are untouched and only the normalisation the clean magnitudes calibrated
    changes.
    """
    import copy

    rms = calibrate_magnitudes(model, xtr) if rms is None else rms
    x = torch.as_tensor(xtr)
    correct = np.zeros(len(yte))
    for d in range(cfg.magnitude_draws):
        net = copy.deepcopy(model) if recalibrate_bn else model
        with randomize_magnitudes(net, rms, seed=1000 * seed + d, only=only), torch.no_grad():
            if recalibrate_bn:
                for bn in net.modules():
                    if isinstance(bn, torch.nn.modules.batchnorm._BatchNorm):
                        bn.reset_running_stats()
                        bn.momentum = None  # a cumulative average over the batches
                net.train()
                for i in range(0, len(x), 256):
                    net(x[i : i + 256])
                net.eval()
            correct += _correct(net, xte) == yte
    return correct / cfg.magnitude_draws


def _resnet_main_diagnostics(net, ptr, pte, yte, cfg: Config, seed: int) -> list[dict]:
    """On a main ResNet: its magnitude noise scored after BatchNorm is re-estimated under
    the noise (the ``bn_recal`` row of the ResNet diagnostic), noise at one activation
    site at a time with the others clean (the ``resnet_site`` rows), and the downstream
    signs that one site's noise changes (the ``base`` rows of :func:`_sign_propagation`)."""
    rms = calibrate_magnitudes(net, ptr)
    mag = _magnitude_correct(net, ptr, pte, yte, cfg, seed, rms=rms, recalibrate_bn=True)
    rows = [{"kind": "resnet_diag", "variant": "bn_recal", "channels": cfg.resnet_channels,
             "steps": cfg.resnet_iter, "skip": True, "activation": "leaky_relu",
             "norm": True, "test_acc": float((_correct(net, pte) == yte).mean()),
             "magnitude_acc": float(np.mean(mag))}]  # fmt: skip
    for i, (name, _) in enumerate(activation_sites(net)):
        mag = _magnitude_correct(net, ptr, pte, yte, cfg, seed, rms=rms, only=(i,))
        rows.append({"kind": "resnet_site", "site": i, "name": name,
                     "magnitude_acc": float(np.mean(mag))})
    return rows + _sign_propagation(net, pte, rms, cfg, seed, "base")


@torch.no_grad()
def _sign_propagation(net, pte, rms, cfg: Config, seed: int, variant: str) -> list[dict]:
    """For every activation site but the last, the share of the pre-activation signs at
    the next site (``next_kept``) and at the last site, the one global pooling reads
    (``last_kept``), that stay as in the clean network when that one site's magnitudes
    are replaced by noise (the draws of :func:`_magnitude_correct`, averaged); one
    ``kind="resnet_sign"`` row per site, tagged ``variant``. The signs a site's noise
    leaves intact at the sites after it: what its magnitudes decide downstream."""
    sites = activation_sites(net)
    x = torch.as_tensor(pte)
    signs: list = [None] * len(sites)

    def capture(m, inp, out, j):
        signs[j] = inp[0] >= 0

    handles = [m.register_forward_hook(partial(capture, j=j))
               for j, (_, m) in enumerate(sites)]  # fmt: skip
    was = net.training
    net.eval()
    rows = []
    try:
        net(x)
        clean = list(signs)
        for i, (name, _) in enumerate(sites[:-1]):
            nxt = last = 0.0
            for d in range(cfg.magnitude_draws):
                with randomize_magnitudes(net, rms, seed=1000 * seed + d, only=(i,)):
                    net(x)
                nxt += float((signs[i + 1] == clean[i + 1]).double().mean())
                last += float((signs[-1] == clean[-1]).double().mean())
            rows.append({"kind": "resnet_sign", "variant": variant, "site": i, "name": name,
                         "next_kept": nxt / cfg.magnitude_draws,
                         "last_kept": last / cfg.magnitude_draws})  # fmt: skip
    finally:
        for h in handles:
            h.remove()
        net.train(was)
    return rows


def _train_mlp(cfg: Config, xtr, ytr, seed: int, device: str, *, activation: str,
               depth: int = 3, norm: bool = False):
    """The main MLP recipe (width ``mlp_width``, ``max_iter`` steps) trained, on the CPU
    (``depth`` hidden layers; ``norm=True``: BatchNorm before every activation)."""
    net = make_mlp(dim_in=xtr.shape[1], width=cfg.mlp_width, num_classes=10, depth=depth,
                   activation=activation, seed=seed, norm=norm)
    train_classifier(net, xtr, ytr, max_iter=cfg.max_iter, lr=cfg.lr,
                     batch_size=cfg.batch_size, seed=seed, device=device)
    return net.cpu()


def _train_resnet(cfg: Config, ptr, ytr, seed: int, device: str, *,
                  channels: tuple[int, ...], steps: int, skip: bool = True,
                  activation: str = "leaky_relu", norm: bool = True):  # fmt: skip
    """The ResNet of stage widths ``channels`` trained ``steps`` steps, on the CPU
    (``skip=False``: without its skip paths; ``activation``: its nonlinearity;
    ``norm=False``: without BatchNorm)."""
    net = make_resnet(in_channels=1, num_classes=10, channels=channels, seed=seed, skip=skip,
                      activation=activation, norm=norm)
    train_classifier(net, ptr, ytr, max_iter=steps, lr=cfg.lr,
                     batch_size=min(64, cfg.batch_size), seed=seed, device=device)
    return net.cpu()


@dataclass
class State:
    cfg: Config
    data: dict = field(default_factory=dict)


def _dataset(st: State, dname: str, seed: int):
    """The (data set, seed) split, loaded once for its models."""
    if (dname, seed) not in st.data:
        st.data = {(dname, seed): _data(dname, st.cfg, st.cfg.num_train, seed)}
    return st.data[(dname, seed)]


def _train_one(st: State, dname: str, s: int, arch: str, act: str, device: str) -> list[dict]:
    cfg = st.cfg
    seed = cfg.seed * 1000 + s
    ds = _dataset(st, dname, seed)
    xtr, ytr, xte, yte = ds.flat()
    if arch == "mlp":
        net = _train_mlp(cfg, xtr, ytr, seed, device, activation=act)
        return _measure_model(net, "mlp", act, dname, seed, xtr, ytr, xte, yte, cfg)
    ptr, pte = _pool(ds.x_train, cfg.resnet_pool), _pool(ds.x_test, cfg.resnet_pool)
    net = _train_resnet(cfg, ptr, ytr, seed, device, channels=cfg.resnet_channels,
                        steps=cfg.resnet_iter)  # fmt: skip
    rows = _measure_model(net, "resnet", "leaky_relu", dname, seed, ptr, ytr, pte, yte, cfg)
    if cfg.resnet_diag and dname == cfg.datasets[0] and s == 0:
        # the diagnostics that need this very model (the base of the ResNet diagnostic)
        rows += _resnet_main_diagnostics(net, ptr, pte, yte, cfg, seed)
    return rows


def _resnet_diagnostic(cfg: Config, device: str) -> list[dict]:
    """The ResNet's accuracy and its accuracy with every magnitude replaced by noise, with
    every stage twice as wide (``wide``), trained four times as long (``long``), and with
    every skip path removed (``noskip``: a plain CNN of the same depth, widths, sites and
    training): whether the magnitude drop shrinks with width or training length, or
    needs the residual additions. First data set, seed 0 of the main models (the same
    data and initialisation seed); the main model of that data set and seed is the
    ``base`` it is compared with (:func:`_resnet_diag_rows`; its own ``bn_recal``,
    per-site and sign-propagation rows come from :func:`_resnet_main_diagnostics`). The
    ``noskip`` network's sign-propagation rows come from here."""
    seed = cfg.seed * 1000
    ds = _data(cfg.datasets[0], cfg, cfg.num_train, seed)
    _, ytr, _, yte = ds.flat()
    ptr, pte = _pool(ds.x_train, cfg.resnet_pool), _pool(ds.x_test, cfg.resnet_pool)
    rows = []
    lr, c, n = "leaky_relu", cfg.resnet_channels, cfg.resnet_iter
    variants = {"wide": (tuple(2 * w for w in c), n, True, lr, True),
                "long": (c, 4 * n, True, lr, True),
                "noskip": (c, n, False, lr, True),
                "tanh": (c, n, True, "tanh", True),
                "nonorm": (c, n, True, lr, False)}  # fmt: skip
    for name, (channels, steps, skip, act, norm) in variants.items():
        net = _train_resnet(cfg, ptr, ytr, seed, device, channels=channels, steps=steps,
                            skip=skip, activation=act, norm=norm)  # fmt: skip
        rms = calibrate_magnitudes(net, ptr)
        mag = _magnitude_correct(net, ptr, pte, yte, cfg, seed, rms=rms)
        rows.append({"kind": "resnet_diag", "variant": name, "channels": channels,
                     "steps": steps, "skip": skip, "activation": act, "norm": norm,
                     "test_acc": float((_correct(net, pte) == yte).mean()),
                     "magnitude_acc": float(np.mean(mag))})  # fmt: skip
        if not skip:
            rows += _sign_propagation(net, pte, rms, cfg, seed, name)
    return rows + _mlp_norm_diagnostic(cfg, ds, seed, device)


def _mlp_norm_diagnostic(cfg: Config, ds, seed: int, device: str) -> list[dict]:
    """The main MLP recipe (first data set, seed 0) with a BatchNorm before every
    activation (``make_mlp(norm=True)``), for each main MLP activation that preserves
    signs: its accuracy and its accuracy under magnitude noise, to set beside the plain
    MLP of the same data, seed and activation (whether standardised pre-activations,
    which the ResNet has at every site and the MLP has not, carry the drop)."""
    xtr, ytr, xte, yte = ds.flat()
    rows = []
    for act in (a for a in cfg.mlp_activations if a in SIGN_PRESERVING):
        net = _train_mlp(cfg, xtr, ytr, seed, device, activation=act, norm=True)
        mag = _magnitude_correct(net, xtr, xte, yte, cfg, seed)
        rows.append({"kind": "mlp_norm_diag", "activation": act,
                     "test_acc": float((_correct(net, xte) == yte).mean()),
                     "magnitude_acc": float(np.mean(mag))})  # fmt: skip
    return rows


#: The ResNet diagnostic's variants in table order: the main model, the retrained
#: variants of :func:`_resnet_diagnostic`, and the main model with BatchNorm re-estimated.
RESNET_DIAG_VARIANTS = ("base", "wide", "long", "noskip", "tanh", "nonorm", "bn_recal")


def _resnet_diag_rows(t, cfg: Config) -> list[dict]:
    """The diagnostic's rows, led by ``base``: the main ResNet of the first data set and
    seed 0 (the model the variants change one thing of)."""
    if not len(t.where(kind="resnet_diag")):
        return []
    (main,) = t.where(kind="model", arch="resnet", dataset=cfg.datasets[0],
                      seed=cfg.seed * 1000).rows
    base = {"variant": "base", "channels": cfg.resnet_channels, "steps": cfg.resnet_iter,
            "skip": True, "activation": "leaky_relu", "norm": True,
            "test_acc": main["test_acc"], "magnitude_acc": main["magnitude_acc"]}
    order = RESNET_DIAG_VARIANTS[1:]
    return [base] + [{k: r[k] for k in ("variant", "channels", "steps", "skip", "activation",
                                        "norm", "test_acc", "magnitude_acc")}
                     for r in sorted(t.where(kind="resnet_diag"),
                                     key=lambda r: order.index(r["variant"]))]


def _width_sweep(cfg: Config, device: str) -> list[dict]:
    """The margin decomposition of LeakyReLU MLPs of every width, trained and (the control)
    untrained; one row per (width, trained) with every test input's |parts|."""
    ds = _data(cfg.datasets[0], cfg, cfg.num_train, cfg.seed)
    xtr, ytr, xte, yte = ds.flat()
    rows = []
    for w in cfg.widths:
        for trained in (True, False):
            net = make_mlp(dim_in=xtr.shape[1], width=w, num_classes=10, seed=cfg.seed)
            if trained:
                train_classifier(net, xtr, ytr, max_iter=cfg.max_iter, lr=cfg.lr,
                                 batch_size=cfg.batch_size, seed=cfg.seed, device=device)
            net = net.cpu()
            parts = margin_decomposition(net, xte, yte)
            with flip_signs(net, fraction=cfg.flip_fraction, seed=cfg.seed):  # own generator
                flip_correct = (_correct(net, xte) == yte).astype(float)
            rows.append({
                "kind": "width", "width": w, "trained": trained,
                "test_acc": float((_correct(net, xte) == yte).mean()),
                "sum_error": float(np.abs(parts.sign_part + parts.residual
                                          - parts.total).max()),
                "overlap_gap": sign_overlap(sign_code(net, xte), yte).gap,
                "sign_abs": np.abs(parts.sign_part), "res_abs": np.abs(parts.residual),
                "flip_correct": flip_correct,
            })  # fmt: skip
    return rows


def _regulariser(cfg: Config, device: str) -> list[dict]:
    """The regulariser sweep (``kind="regulariser"``: mu = 0, then ``penalties``) and, for
    the diagnostic, one model at ``reg_strong_penalty`` (``kind="regulariser_strong"``,
    trained after the sweep, so the sweep is untouched). Each row keeps every test input's
    correctness and that of a kNN on the model's sign code (``knn_correct``: whether the
    code still carries the class once same-class sharing is broken)."""
    ds = _data(cfg.datasets[0], cfg, cfg.reg_num_train, cfg.seed + 7)
    xtr, ytr, xte, yte = ds.flat()
    rows = []
    for kind, mu in [("regulariser", m) for m in (0.0, *cfg.penalties)] + [
            ("regulariser_strong", cfg.reg_strong_penalty)]:
        net = make_mlp(dim_in=xtr.shape[1], width=cfg.mlp_width, num_classes=10, seed=cfg.seed)
        train_classifier(net, xtr, ytr, max_iter=cfg.reg_iter, lr=cfg.lr,
                         batch_size=cfg.batch_size, overlap_penalty=mu, tau=cfg.tau,
                         seed=cfg.seed, device=device)  # fmt: skip
        net = net.cpu()
        correct = (_correct(net, xte) == yte).astype(float)
        test_codes = sign_code(net, xte)
        knn = hamming_knn(sign_code(net, xtr), ytr, test_codes, k=cfg.knn_k)
        rows.append({"kind": kind, "penalty": mu,
                     "train_acc": float((_correct(net, xtr) == ytr).mean()),
                     "test_acc": float(correct.mean()), "test_correct": correct,
                     "knn_correct": (knn == yte).astype(float),
                     "overlap_gap": sign_overlap(test_codes, yte).gap})  # fmt: skip
    return rows


def _flip_diagnostic(cfg: Config, device: str) -> dict:
    """A deeper MLP (``flip_diag_depth`` hidden layers, ``flip_diag_activation``) on the
    main models' first data set and seed 0, scored with ``flip_fraction`` of its signs
    flipped: whether the damage of independent flips compounds with depth. Its base is
    the main 3-layer model of that data set, seed and activation (when the tier trains
    one)."""
    seed = cfg.seed * 1000
    xtr, ytr, xte, yte = _data(cfg.datasets[0], cfg, cfg.num_train, seed).flat()
    net = _train_mlp(cfg, xtr, ytr, seed, device, activation=cfg.flip_diag_activation,
                     depth=cfg.flip_diag_depth)
    with flip_signs(net, fraction=cfg.flip_fraction, seed=seed):
        flip_correct = (_correct(net, xte) == yte).astype(float)
    return {"kind": "flip_diag", "test_acc": float((_correct(net, xte) == yte).mean()),
            "flip_correct": flip_correct}


def _checks(cfg: Config) -> dict:
    """Oracles inside the run: sklearn's Hamming kNN, the identity intervention."""
    from sklearn.neighbors import KNeighborsClassifier

    ds = load_digits(8).subset(300, 100, seed=cfg.seed)
    xtr, ytr, xte, _ = ds.flat()
    net = make_mlp(dim_in=64, width=48, num_classes=10, seed=cfg.seed)
    train_classifier(net, xtr, ytr, max_iter=30, seed=cfg.seed)
    ctr, cte = sign_code(net, xtr).numpy(), sign_code(net, xte).numpy()
    ours = hamming_knn(ctr, ytr, cte, k=1)
    sk = KNeighborsClassifier(1, metric="hamming", algorithm="brute").fit(ctr, ytr).predict(cte)
    # Compare where the nearest neighbour is unique (tie-breaking is implementation-defined).
    dist = np.sort(hamming_distances(cte, ctr).numpy(), axis=1)
    unique = dist[:, 0] < dist[:, 1]
    x = torch.as_tensor(xte)
    with torch.no_grad():
        base = net(x)
        with randomize_magnitudes(net, mode="true"):
            same = net(x)
    return {"check_knn_sklearn_agreement": float((ours == sk)[unique].mean()),
            "check_true_magnitudes_max_diff": float((same - base).abs().max())}  # fmt: skip


class SignCodeExperiment(Experiment):
    Config, TIERS, METRICS = Config, TIERS, METRICS
    UNIT_TABLE = None
    CAPTIONS: ClassVar[dict[str, str]] = {
        "accuracies": "Test accuracy of each trained model, of a 5-NN on its sign code, with "
                      "every magnitude replaced by noise, and with 20% of signs flipped "
                      "(dotted: chance); the paper's headline comparison.",
        "overlap": "Same-class minus different-class sign agreement against test accuracy "
                   "over every trained model (including regularised and width-sweep "
                   "models): the paper's overlap-generalisation link.",
    }

    def setup(self, cfg: Config, ctx) -> State:
        return State(cfg)

    def grid(self, cfg: Config):
        units = []
        for dname in cfg.datasets:
            for s in range(cfg.num_seeds):
                units += [{"unit": f"{dname}/{s}/mlp/{act}", "part": "model", "dataset": dname,
                           "s": s, "arch": "mlp", "act": act} for act in cfg.mlp_activations]
                units.append({"unit": f"{dname}/{s}/resnet", "part": "model", "dataset": dname,
                              "s": s, "arch": "resnet", "act": "leaky_relu"})
        parts = ("regulariser", "widths", "checks") + (("resnet_diag",) if cfg.resnet_diag
                                                       else ()) + ("flip_diag",)  # fmt: skip
        return units + [{"unit": p, "part": p} for p in parts]

    def measure(self, unit, st: State, ctx):
        part = unit["part"]
        if part == "model":
            return _train_one(st, unit["dataset"], unit["s"], unit["arch"], unit["act"],
                              ctx.device)
        st.data = {}
        if part == "regulariser":
            return _regulariser(st.cfg, ctx.device)
        if part == "widths":
            return _width_sweep(st.cfg, ctx.device)
        if part == "resnet_diag":
            return _resnet_diagnostic(st.cfg, ctx.device)
        if part == "flip_diag":
            return _flip_diagnostic(st.cfg, ctx.device)
        return {"kind": "checks", **_checks(st.cfg)}

    def summarize(self, t, cfg: Config, ctx) -> dict:
        return _summarize(t, cfg)

    def tables(self, t, summary, cfg) -> dict:
        models = [{k: r[k] for k in ("dataset", "arch", "activation", "seed", "train_acc",
                                     "test_acc")}
                  | {"sign_knn_acc": r["knn_acc"], "raw_knn_acc": r["raw_knn_acc"],
                     "random_magnitude_acc": r["magnitude_acc"], "flip_acc": r["flip_acc"],
                     "overlap_gap": r["overlap_gap"]} for r in t.where(kind="model")]
        return {"models": models, "width_sweep": _width_table(t),
                "regulariser": [{k: r[k] for k in ("penalty", "train_acc", "test_acc",
                                                   "overlap_gap")}
                                for r in t.where(kind="regulariser")],
                "resnet_diagnostic": _resnet_diag_rows(t, cfg),
                "resnet_sites": [{"site": r["site"], "name": r["name"],
                                  "magnitude_acc": r["magnitude_acc"]}
                                 for r in sorted(t.where(kind="resnet_site"),
                                                 key=lambda r: r["site"])],
                "mlp_norm_diagnostic": [
                    {"activation": r["activation"], "norm": True, "test_acc": r["test_acc"],
                     "magnitude_acc": r["magnitude_acc"]}
                    for r in t.where(kind="mlp_norm_diag")],
                "resnet_sign_propagation": [
                    {k: r[k] for k in ("variant", "site", "name", "next_kept", "last_kept")}
                    for r in sorted(t.where(kind="resnet_sign"),
                                    key=lambda r: (r["variant"] != "base", r["site"]))]}

    def figures(self, t, summary, cfg) -> dict:
        g, acc, _ = _overlap_points(t)
        return {"accuracies": _fig_acc(t.where(kind="model").rows),
                "overlap": _fig_overlap(g, acc)}

    def notes(self, t, summary, cfg) -> tuple[str, ...]:
        rows = t.where(kind="model").rows
        sp = [r for r in rows if r["activation"] in SIGN_PRESERVING]
        return (f"sign-preserving models: {len(sp)} of {len(rows)}",)


def _width_table(t, trained: bool = True) -> list[dict]:
    out = []
    for r in t.where(kind="width", trained=trained):
        s, q = float(np.mean(r["sign_abs"])), float(np.mean(r["res_abs"]))
        out.append({"width": r["width"], "test_acc": r["test_acc"], "mean_abs_sign_part": s,
                    "mean_abs_residual": q, "sign_over_residual": s / q,
                    "overlap_gap": r["overlap_gap"]})
    return out


def _overlap_points(t):
    """(overlap gap, test accuracy, data set) of every trained model: the main models, then
    the regularised and the trained width-sweep ones (both on the first data set)."""
    models = t.where(kind="model").rows
    first = models[0]["dataset"]
    pts = [(r["overlap_gap"], r["test_acc"], r["dataset"]) for r in models]
    pts += [(r["overlap_gap"], r["test_acc"], first) for r in t.where(kind="regulariser")]
    pts += [(r["overlap_gap"], r["test_acc"], first)
            for r in t.where(kind="width", trained=True)]
    g = np.array([p[0] for p in pts], dtype=float)
    acc = np.array([p[1] for p in pts], dtype=float)
    return g, acc, [p[2] for p in pts]


def _pooled(t, key: str):
    inp = t.where(kind="input", key=key)
    return {c: inp.column(c) for c in ("correct", "knn", "magnitude", "flip")}


def _boot(data: np.ndarray, stat, cfg: Config, unit: str = "test inputs") -> Estimate:
    return bootstrap_interval(data, stat, num_resamples=BOOT, seed=cfg.seed, unit=unit)


def _mean_diff(d):
    return float(d[:, 0].mean() - d[:, 1].mean())


def _ratio_increasing(d, dtype=np.float64) -> float:
    """1 where ``E|m_sign| / E|m_res|`` increases at every step of the width sweep, else 0.

    ``d`` is (test inputs, 2 x widths): every width's ``|sign part|``, then every width's
    ``|residual|``. The means are taken in the parts' own ``dtype`` over contiguous rows,
    as ``S.mean(1)`` sums them.
    """
    means = np.ascontiguousarray(d.astype(dtype).T).mean(1)
    w = len(means) // 2
    return float(np.all(np.diff(means[:w] / means[w:]) > 0))


def _spearman(d) -> float:
    if len(np.unique(d[:, 0])) < 2 or len(np.unique(d[:, 1])) < 2:
        return float("nan")
    return float(spearmanr(d[:, 0], d[:, 1]).statistic)


def _summarize(t, cfg: Config) -> dict:
    models = t.where(kind="model").rows
    keys = list(dict.fromkeys(f"{r['dataset']}/{r['arch']}/{r['activation']}" for r in models))
    pooled = {k: _pooled(t, k) for k in keys}
    sp_keys = [k for k in keys if k.split("/")[2] in SIGN_PRESERVING]
    m: dict = {}

    def gap_of(k, a, b):
        return pooled[k][a].mean() - pooled[k][b].mean()

    def diff_estimate(k, a, b):
        return _boot(np.column_stack([pooled[k][a], pooled[k][b]]), _mean_diff, cfg)

    # Claim 1: the worst sign-preserving model's accuracy minus its sign-code kNN's; its
    # control, the same for the ReLU models (not sign-preserving).
    gaps = {k: gap_of(k, "correct", "knn") for k in sp_keys}
    m["knn_gap_max"] = diff_estimate(max(gaps, key=gaps.get), "correct", "knn")
    relu = [k for k in keys if k.split("/")[2] == "relu"]
    if relu:
        rg = {k: gap_of(k, "correct", "knn") for k in relu}
        m["knn_gap_relu"] = diff_estimate(max(rg, key=rg.get), "correct", "knn")
    else:
        m["knn_gap_relu"] = Estimate.missing("no ReLU model at this tier")
    m["raw_knn_gap_max"] = float(max(r["test_acc"] - r["raw_knn_acc"] for r in models))

    # Claim 2: ResNet accuracy drop under magnitude noise (worst data set); its control, the
    # ResNet's drop when 20% of its signs flip (an intervention that must matter).
    res_keys = [k for k in sp_keys if k.split("/")[1] == "resnet"]
    drops = {k: gap_of(k, "correct", "magnitude") for k in res_keys}
    m["resnet_magnitude_drop"] = diff_estimate(max(drops, key=drops.get), "correct",
                                               "magnitude")
    fdrops = {k: gap_of(k, "correct", "flip") for k in res_keys}
    m["resnet_flip_drop"] = diff_estimate(max(fdrops, key=fdrops.get), "correct", "flip")
    for r in _resnet_diag_rows(t, cfg):
        m[f"resnet_diag_drop_{r['variant']}"] = r["test_acc"] - r["magnitude_acc"]
        m[f"resnet_diag_acc_{r['variant']}"] = r["test_acc"]
    for v in RESNET_DIAG_VARIANTS:
        m.setdefault(f"resnet_diag_drop_{v}", Estimate.missing("resnet_diag is off"))
        m.setdefault(f"resnet_diag_acc_{v}", Estimate.missing("resnet_diag is off"))
    # the mean over randomised sites of the share of signs kept at the next / last site
    for v in ("base", "noskip"):
        sign_rows = t.where(kind="resnet_sign", variant=v).rows
        for where in ("next", "last"):
            m[f"resnet_diag_{where}_sign_kept_{v}"] = (
                float(np.mean([r[f"{where}_kept"] for r in sign_rows])) if sign_rows
                else Estimate.missing("resnet_diag is off"))
    # the MLP with BatchNorm before every activation beside the plain MLP of the same
    # first data set, seed 0 and activation
    for r in t.where(kind="mlp_norm_diag"):
        act = r["activation"]
        m[f"mlp_norm_diag_drop_{act}"] = r["test_acc"] - r["magnitude_acc"]
        m[f"mlp_norm_diag_acc_{act}"] = r["test_acc"]
        (plain,) = t.where(kind="model", arch="mlp", activation=act, dataset=cfg.datasets[0],
                           seed=cfg.seed * 1000).rows
        m[f"mlp_plain_diag_drop_{act}"] = plain["test_acc"] - plain["magnitude_acc"]
    sites = sorted(t.where(kind="resnet_site"), key=lambda r: r["site"])
    if sites:
        accs = np.array([r["magnitude_acc"] for r in sites])
        m["resnet_site_acc_min"] = float(accs.min())
        m["resnet_site_acc_median"] = float(np.median(accs))
        m["resnet_site_acc_last"] = float(accs[-1])
    else:
        for k in ("min", "median", "last"):
            m[f"resnet_site_acc_{k}"] = Estimate.missing("resnet_diag is off")
    mlp_keys = [k for k in sp_keys if k.split("/")[1] == "mlp"]
    m["mlp_magnitude_drop_max"] = float(max(gap_of(k, "correct", "magnitude")
                                            for k in mlp_keys)) if mlp_keys else float("nan")

    # Claim 3: the best accuracy of any sign-preserving model with 20% of signs flipped; its
    # control, the best accuracy with no sign flipped.
    def best(col):
        accs = {k: pooled[k][col].mean() for k in sp_keys}
        return _boot(pooled[max(accs, key=accs.get)][col], np.mean, cfg)

    m["flip_acc_max"] = best("flip")
    m["unflipped_acc_max"] = best("correct")
    # Its diagnostics: the best flipped accuracy within each architecture (the reading
    # that the paper's sentence is about residual networks), a deeper MLP beside its
    # 3-layer base (depth), and the width sweep's narrowest and widest MLP (width).
    for arch in ("resnet", "mlp"):
        acc = {k: pooled[k]["flip"].mean() for k in sp_keys if k.split("/")[1] == arch}
        m[f"flip_acc_max_{arch}"] = (_boot(pooled[max(acc, key=acc.get)]["flip"], np.mean,
                                           cfg) if acc
                                     else Estimate.missing(f"no sign-preserving {arch}"))
    deep = t.where(kind="flip_diag").rows
    m["flip_acc_deep"] = _boot(deep[0]["flip_correct"], np.mean, cfg)
    base_key = f"{cfg.datasets[0]}/mlp/{cfg.flip_diag_activation}"
    base_rows = t.where(kind="input", key=base_key, seed=cfg.seed * 1000)
    m["flip_acc_deep_base"] = (_boot(base_rows.column("flip"), np.mean, cfg) if len(base_rows)
                               else Estimate.missing(f"no main {cfg.flip_diag_activation} "
                                                     "MLP at this tier"))
    wsweep = sorted(t.where(kind="width", trained=True), key=lambda r: r["width"])
    m["flip_acc_width_narrowest"] = _boot(wsweep[0]["flip_correct"], np.mean, cfg)
    m["flip_acc_width_widest"] = _boot(wsweep[-1]["flip_correct"], np.mean, cfg)
    m["check_flip_fraction_max_z"] = float(max(r["flip_z"] for r in models))

    # Claim 4: the regulariser at the largest penalty that keeps training accuracy >= 95%.
    reg = t.where(kind="regulariser").rows
    base = reg[0]
    ok = [r for r in reg[1:] if r["train_acc"] >= 0.95]
    why = "no regularisation strength kept training accuracy >= 95%"
    if ok and base["test_acc"] > 0:
        chosen = max(ok, key=lambda r: r["penalty"])
        b, c = base["test_correct"], chosen["test_correct"]
        m["reg_train_acc"] = chosen["train_acc"]
        m["reg_test_ratio"] = _boot(np.column_stack([c, b]), lambda d: float(
            d[:, 0].mean() / max(d[:, 1].mean(), 1e-12)), cfg)
        m["reg_gap_ratio"] = (float(chosen["overlap_gap"] / base["overlap_gap"])
                              if base["overlap_gap"] > 0
                              else Estimate.missing("the unregularised overlap gap is 0"))
        m["reg_penalty"] = float(chosen["penalty"])
        m["reg_knn_acc"] = _boot(chosen["knn_correct"], np.mean, cfg)
    else:
        for k in ("reg_train_acc", "reg_test_ratio", "reg_gap_ratio", "reg_penalty",
                  "reg_knn_acc"):
            m[k] = Estimate.missing(why)
    # Its diagnostics: the sign-code kNN of the unregularised model (beside reg_knn_acc:
    # does the code still carry the class once sharing is broken) and a stronger penalty.
    m["reg_knn_acc_base"] = _boot(base["knn_correct"], np.mean, cfg)
    (strong,) = t.where(kind="regulariser_strong").rows
    m["reg_train_acc_strong"] = strong["train_acc"]
    m["reg_test_ratio_strong"] = (_boot(np.column_stack([strong["test_correct"],
                                                         base["test_correct"]]),
                                        lambda d: float(d[:, 0].mean()
                                                        / max(d[:, 1].mean(), 1e-12)), cfg)
                                  if base["test_acc"] > 0
                                  else Estimate.missing("the unregularised test accuracy is 0"))

    # Claim 6: margin scaling, trained and (the control) untrained at the same widths.
    logd = np.log(np.asarray(cfg.widths, dtype=float))
    for prefix, trained in (("", True), ("untrained_", False)):
        sweep = t.where(kind="width", trained=trained).rows
        S = np.stack([r["sign_abs"] for r in sweep])  # (W, n_test)
        R = np.stack([r["res_abs"] for r in sweep])

        def slope_error(d):  # d: (test inputs, widths)
            means = d.T[:, np.arange(len(d))].mean(1)  # (widths,), the old summation order
            return float(np.polyfit(logd, np.log(means), 1)[0]) - 0.5

        m[f"{prefix}margin_slope_error"] = _boot(S.T, slope_error, cfg)
        # one network per width: the test inputs (paired across widths) are the noise
        m[f"{prefix}margin_ratio_increasing"] = _boot(
            np.column_stack([S.T, R.T]), partial(_ratio_increasing, dtype=S.dtype), cfg)
        if trained:
            m["check_margin_sum_error"] = max(r["sum_error"] for r in sweep)

    # Claim 5: overlap gap vs test accuracy over every trained model; its control, the same
    # correlation with each model's data set's mean gap (only the data set's identity).
    g, acc, ds = _overlap_points(t)
    m["num_models"] = len(g)
    m["overlap_spearman"] = _boot(np.column_stack([g, acc]), _spearman, cfg, "models")
    names = sorted(set(ds))
    if len(names) > 1:
        mean_gap = {n: float(np.mean([x for x, d in zip(g, ds, strict=True) if d == n]))
                    for n in names}
        only = np.array([mean_gap[d] for d in ds])
        m["overlap_spearman_dataset_only"] = _boot(np.column_stack([only, acc]), _spearman,
                                                   cfg, "models")
    else:
        m["overlap_spearman_dataset_only"] = Estimate.missing(
            "one data set: the data set alone cannot order the models")
    within = [_spearman(np.column_stack([g[[d == n for d in ds]], acc[[d == n for d in ds]]]))
              for n in names]
    within = [w for w in within if np.isfinite(w)]
    m["overlap_spearman_within_dataset_min"] = (float(min(within)) if within else
                                                Estimate.missing("too few models per data set"))
    m.update({k: v for k, v in t.where(kind="checks").rows[0].items()
              if k.startswith("check_")})
    return m


def _fig_acc(rows) -> bytes:
    fig, (ax,) = new_figure(width=7.0)
    labels = [f"{r['dataset'][:5]} {r['arch']} {r['activation']} s{r['seed'] % 1000}"
              for r in rows]
    xs = np.arange(len(rows))
    for off, attr, name in ((-0.3, "test_acc", "model"), (-0.1, "knn_acc", "sign-code kNN"),
                            (0.1, "magnitude_acc", "random magnitudes"),
                            (0.3, "flip_acc", "20% signs flipped")):  # fmt: skip
        ax.bar(xs + off, [r[attr] for r in rows], width=0.2, label=name)
    ax.axhline(CHANCE, color="k", lw=0.8, ls=":")
    ax.set_xticks(xs, labels, rotation=60, ha="right", fontsize=7)
    ax.set_ylabel("test accuracy")
    ax.legend(fontsize=7, loc="lower left")
    return figure_png(fig)


def _fig_overlap(g, acc) -> bytes:
    fig, (ax,) = new_figure()
    ax.scatter(g, acc, s=14)
    ax.set_xlabel("same-class minus different-class sign agreement")
    ax.set_ylabel("test accuracy")
    return figure_png(fig)


EXPERIMENT = SignCodeExperiment()
run = EXPERIMENT.run
