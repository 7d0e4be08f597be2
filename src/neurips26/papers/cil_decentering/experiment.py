"""Reproduction of post-hoc de-centering: offset identity, recovery, gap closed, failure, bound.

Parts (each a function below, results summarised into metrics):

- population: closed-form sequential and Bayes heads of random shared-covariance Gaussian
  tasks; the offset identity and the exact recovery by de-centering.
- sampled offset: within-task heads trained on many samples against the known Bayes head:
  block dispersion and cosine to ``Sigma_hat^{-1}(mu_bar^(j) - mu_bar^(i))``.
- class-incremental runs (sequential, de-centred, joint, SLDA, NCM, FeCAM heads, argmax over
  all classes) on synthetic Gaussian tasks and on frozen real features: digits through PCA
  fitted on task 1 only; MNIST and Fashion-MNIST through an MLP trained on the first task
  only (then frozen); real photos through the ImageNet-pretrained EfficientNet-lite0. The
  joint-sequential gap recovered by de-centering, ``(acc_dec - acc_seq) / (acc_joint -
  acc_seq)``, is averaged over seeds (class orders, networks) with a Student-t interval
  (the real-data mean: each seed's mean over the data sets, then over seeds); the
  permuted-task control tests that the sequential-joint offsets are block-constant on the
  trained heads. The control of every gap claim is a placebo correction: the de-centred
  head with each task given the next task's offset and bias scalar (a cyclic shift: the
  same scale, the wrong task), whose gap must stay far below de-centering's.
- failure construction: task A at ``+/- R u``, task B at ``m +/- r v``; trained sequential
  heads confuse B with A as ``R / r`` grows, whatever ``||m||``.
- separation bound: random two-task instances with ``kappa > 1``; measured task confusion of
  trained sequential heads against ``exp(-(kappa - 1)^2 gamma / 8)``.
- five CIL methods (the abstract's diagnostic "across five published CIL methods"): heads
  trained task by task by finetune, LwF, EWC, experience replay and WA (``methods.py``) on
  the synthetic Gaussian tasks (the first ``methods_train_per_class`` samples per class of
  the CIL part's draw) and on digits through the task-1 PCA. For each: the offset
  diagnostic against the joint head (block dispersion, the permuted-task control's 5th
  percentile and the observed dispersion's quantile among 200 controls, smallest offset
  cosine), the accuracy of the method's head, of its de-centred version (``decenter`` with
  the tasks' streaming statistics) and of the joint head, and the gap recovered. Table
  ``cil_methods``, metrics ``diag_<method>_<data set>_*``; diagnostics, not claims. In
  the stored small run, on the synthetic tasks every method's offsets are more
  block-constant than the permuted-task control's 5th percentile (replay's only just); on
  digits only finetune's and EWC's are, while LwF's, replay's and WA's sit at the
  control's level, and de-centering lowers the accuracy of the two rehearsal heads
  (replay, WA) there.

Deviations from the paper
-------------------------
- The paper's five benchmarks (CIFAR-100, ImageNet-100/1K, ImageNet-R, DomainNet) and five
  frozen backbones are not available offline. Substitutes: digits + PCA, MNIST and
  Fashion-MNIST through a small MLP trained on the first task, and EfficientNet-lite0 on
  random views of 36 real photos (foolbox's 20 ImageNet samples and 16 scikit-image photos,
  each photo a class: instance recognition, not category recognition).
- Small tier: 500 training images per class for MNIST/Fashion-MNIST, an MLP trained 300
  steps, 48-px views and 48-px Fashion-MNIST through EfficientNet, three seeds; the paper
  tier uses all 60k images and 224-px inputs.
- The separation-bound quantities are our inferred definitions (see ``diagnostics``).
- Why the real-data gap recovery can fall short of 82-94% here: our reading is that
  de-centering adds the LDA-scale offset ``Sigma_hat^{-1} mu_bar^(t)`` to softmax weights
  whose scale is set by the weight decay and by how separable each task is, and that on
  non-Gaussian, (nearly) separable tasks the two scales disagree. The diagnostic
  ``offset_over_weight_<data set>`` (median over tasks of the added offset's norm over
  the task's centred weight rows) measures that ratio per data set; we did not tune the
  weight decay.
- The permuted-task control (claim ``invariance_falsifiable``) can fail on trained heads of
  real features: there the sequential-joint offsets also vary within a task block, on some
  seeds and sets close to what random task labels give, while the synthetic runs pass it
  cleanly. The cause tested: the offset identity holds at the optimum of the
  l2-regularised population loss, and with our weak weight decay on (nearly) separable
  real features each head's optimum is set by the few inputs near its margins rather than
  by the class means. The diagnostic refits the sequential and joint heads of one run
  (``wd_diag_set``, the seed of index ``wd_diag_seed``) with ``wd_diag_factor`` times the
  weight decay on the same features and class order: ``diag_control_quantile_strong_wd``
  is its control quantile, ``diag_control_quantile_strong_wd_base`` that of the same run
  as fitted for the claim (both with the Wilson interval over the 200 permuted task
  assignments). A refit quantile far below 0.05 beside a base above it would support
  weak regularisation as the cause; a refit quantile about as high would not. That the
  real features are not shared-covariance Gaussian is another candidate, not yet
  diagnosed.
- De-centred versus Bayes confusion on the failure construction (``failure_decentered_bayes``)
  misses 0.02 at finite samples; not yet diagnosed.
- The abstract does not name its five CIL methods. We diagnose five we can build offline on
  frozen features: finetune (the sequential within-task softmax, the paper's setting), LwF
  (Li and Hoiem, ECCV 2016), EWC (Kirkpatrick et al., PNAS 2017), experience replay from a
  herded exemplar memory (Rebuffi et al., CVPR 2017; Chaudhry et al., 2019) and WA (Zhao et
  al., CVPR 2020; chosen over BiC). Inferred (details in ``methods``): only the linear head
  is trained, while the published methods also train the backbone; LwF and EWC use the
  softmax over all classes seen so far (van de Ven et al., 2022), because with frozen
  features and a task-local softmax both coincide with finetune; LwF penalises its bias
  with the weights (otherwise its optimum is unbounded); EWC uses the exact diagonal Fisher
  with ``ewc_lambda = 1``; replay and WA keep ``methods_memory_per_class`` herded exemplars
  per class chosen on the raw features; WA leaves the biases unscaled and drops its weight
  clipping. The method diagnostic runs on the synthetic tasks (subsampled, for CPU time) and
  on digits only, not on the MNIST-MLP or EfficientNet features.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import Any, ClassVar

import numpy as np

from neurips26.common.experiment import param
from neurips26.common.plotting import figure_png, new_figure
from neurips26.experiment import Estimate, Experiment, binomial_interval

from . import (
    NCM,
    SLDA,
    DecenteredSoftmax,
    FeCAM,
    JointSoftmax,
    SequentialSoftmax,
    accumulate_stats,
    concat_heads,
    decenter,
    failure_construction,
    fit_joint_head,
    fit_within_task_head,
    gap_recovered,
    gaussian_tasks,
    offset_diagnostic,
    population_heads,
    separation,
    task_confusion,
)
from . import methods as cil_methods

METRICS: tuple[str, ...] = (
    "offset_pop_max_error", "recovery_max_abs_error", "recovery_pred_agreement",
    "offset_sampled_dispersion", "offset_sampled_cosine",
    "gap_synthetic", "gap_digits", "gap_mnist", "gap_fashion_mnist", "gap_effnet_photos",
    "gap_effnet_fashion_mnist", "gap_real_mean",
    "placebo_gap_synthetic", "placebo_gap_digits", "placebo_gap_mnist",
    "placebo_gap_fashion_mnist", "placebo_gap_effnet_photos",
    "placebo_gap_effnet_fashion_mnist", "placebo_gap_real_mean",
    "offset_over_weight_synthetic", "offset_over_weight_digits", "offset_over_weight_mnist",
    "offset_over_weight_fashion_mnist", "offset_over_weight_effnet_photos",
    "offset_over_weight_effnet_fashion_mnist",
    "diag_control_quantile_max", "diag_dispersion_max",
    "diag_control_quantile_strong_wd", "diag_control_quantile_strong_wd_base",
    "failure_min_confusion_at_max_ratio", "failure_min_confusion_at_min_ratio",
    "failure_max_dec_bayes_diff",
    "bound_max_excess", "bound_num_instances",
    "acc_seq_real_mean", "acc_dec_real_mean", "acc_joint_real_mean", "acc_slda_real_mean",
    "acc_ncm_real_mean", "acc_fecam_real_mean", "num_cil_runs",
)
METHODS = ("seq", "dec", "joint", "slda", "ncm", "fecam")
REAL = ("digits", "mnist", "fashion_mnist", "effnet_photos", "effnet_fashion_mnist")
#: The five published CIL methods of the offset diagnostic (``methods.py``) and its data sets.
CIL_METHODS = ("finetune", "lwf", "ewc", "replay", "wa")
METHOD_SETS = ("synthetic", "digits")
#: Per method and data set: mean block dispersion, the permuted-task control's 5th
#: percentile and the observed dispersion's quantile among the controls, the smallest
#: offset cosine, accuracy of the method's head and of its de-centred version, and the gap
#: recovered by de-centering it.
METHOD_STATS = ("dispersion", "control_p5", "control_quantile", "cosine", "acc", "acc_dec",
                "gap")
METHOD_METRICS: tuple[str, ...] = (
    *(f"diag_{m}_{d}_{k}" for d in METHOD_SETS for m in CIL_METHODS for k in METHOD_STATS),
    *(f"diag_joint_{d}_acc" for d in METHOD_SETS),
)
METRICS = METRICS + METHOD_METRICS


@dataclass(frozen=True)
class Config:
    """Settings of the reproduction (see ``neurips26 info cil_decentering``)."""

    seed: int = 0
    num_seeds: int = param(3, help="seeds (class orders, networks) per data set", min=1)
    weight_decay: float = param(1e-4, help="lam of the softmax heads", min=0.0)
    pop_num_tasks: int = param(5, help="tasks of the population check", min=2)
    pop_dim: int = param(32, help="feature dimension of the synthetic tasks", min=2)
    synth_train_per_class: int = param(1000, help="synthetic training samples per class", min=0)
    synth_test_per_class: int = param(500, help="synthetic test samples per class", min=1)
    offset_train_per_class: int = param(50_000, help="samples per class for the sampled "
                                        "offset identity (0: skip)", min=0)
    offset_num_tasks: int = param(3, help="tasks of the sampled offset check", min=2)
    offset_dim: int = param(8, help="dimension of the sampled offset check", min=1)
    digits: bool = param(True, help="digits through PCA fitted on task 1")
    digits_pca_dim: int = param(32, help="PCA components (fitted on task 1 only)", min=1)
    mnist_datasets: tuple[str, ...] = param(("mnist", "fashion_mnist"), allow_empty=True,
                                            choices=("mnist", "fashion_mnist"),
                                            help="MNIST-like sets through a task-1 MLP")
    mnist_train_per_class: int = param(500, help="training images per class", min=10)
    mnist_test_per_class: int = param(200, help="test images per class", min=10)
    mnist_hidden: tuple[int, ...] = param((256, 128), help="MLP widths (features: last)", min=1)
    mnist_steps: int = param(300, help="MLP training steps on task 1", min=1)
    effnet_datasets: tuple[str, ...] = param(("photos", "fashion_mnist"), allow_empty=True,
                                             choices=("photos", "fashion_mnist", "mnist"),
                                             help="images through EfficientNet-lite0")
    photo_train_views: int = param(10, help="training views per photo", min=2)
    photo_test_views: int = param(6, help="test views per photo", min=1)
    photo_size: int = param(48, help="side of the views in pixels", min=16, max=256)
    photo_min_scale: float = param(0.1, help="smallest crop area (share of the photo)",
                                   min=0.01, max=1.0)
    effnet_image_size: int = param(48, help="side of upsampled MNIST-like images", min=32,
                                   max=256)
    effnet_train_per_class: int = param(200, help="MNIST-like training images per class "
                                        "through EfficientNet", min=10)
    effnet_test_per_class: int = param(100, help="... test images per class", min=10)
    photo_classes_per_task: int = param(4, help="photos (classes) per task", min=2)
    failure_ratios: tuple[float, ...] = param((1.0, 10.0, 100.0), help="R / r", min=1.0)
    failure_distances: tuple[float, ...] = param((1.0, 2.0, 4.0, 8.0), help="||m||", min=0.0)
    failure_train_per_class: int = param(5000, help="training samples per class", min=10)
    failure_test_per_class: int = param(5000, help="test samples per class", min=10)
    bound_instances: int = param(6, help="random instances with kappa > 1", min=0)
    methods_datasets: tuple[str, ...] = param(METHOD_SETS, allow_empty=True,
                                              choices=METHOD_SETS,
                                              help="data sets of the five CIL methods' "
                                              "offset diagnostic")
    methods_num_seeds: int = param(3, help="seeds of the method diagnostic (the run's "
                                   "first ones)", min=1)
    methods_train_per_class: int = param(300, help="synthetic training samples per class "
                                         "of the method diagnostic (the first ones of the "
                                         "CIL part's draw)", min=10)
    methods_memory_per_class: int = param(20, help="exemplars per class of replay and WA",
                                          min=1)
    wd_diag_set: str = param("effnet_fashion_mnist", choices=("synthetic", *REAL),
                             help="diagnostic: the data set whose sequential and joint heads "
                             "are refitted with a stronger weight decay for the permuted-task "
                             "control")
    wd_diag_seed: int = param(2, help="diagnostic: index of that run among the run's seeds "
                              "(the small tier's default is the run with the highest control "
                              "quantile in an earlier small run; not run when out of range)",
                              min=0)
    wd_diag_factor: float = param(100.0, help="diagnostic: the refit's weight decay over "
                                  "weight_decay", min=1.0)


TIERS = {
    "smoke": Config(num_seeds=1, pop_num_tasks=3, pop_dim=8, synth_train_per_class=200,
                    synth_test_per_class=200, offset_train_per_class=0, mnist_datasets=(),
                    effnet_datasets=(), failure_ratios=(1.0, 100.0), failure_distances=(1.0, 4.0),
                    failure_train_per_class=300, failure_test_per_class=1000,
                    bound_instances=2, methods_train_per_class=50, wd_diag_set="digits",
                    wd_diag_seed=0),
    "small": Config(),
    "paper": Config(num_seeds=5, synth_train_per_class=5000, synth_test_per_class=2000,
                    offset_train_per_class=200_000, offset_num_tasks=5, offset_dim=32,
                    weight_decay=1e-4, mnist_train_per_class=6000, mnist_test_per_class=1000,
                    mnist_steps=3000, photo_train_views=40, photo_test_views=20,
                    photo_size=224, effnet_image_size=224, effnet_train_per_class=2000,
                    effnet_test_per_class=500, bound_instances=20,
                    methods_train_per_class=1000, methods_num_seeds=5),
}


# --------------------------------------------------------------------------- parts


def _population(cfg: Config, rng: np.random.Generator) -> dict[str, Any]:
    g = gaussian_tasks(num_tasks=cfg.pop_num_tasks, classes_per_task=4, dim=cfg.pop_dim,
                       task_scale=0.5, class_scale=0.3, rng=rng)
    stats = g.stats()
    ph = population_heads(stats)
    diag = offset_diagnostic(ph.sequential_head, ph.joint, stats, shrinkage=None,
                             num_permutations=0)
    fixed = decenter(ph.sequential, stats, shrinkage=None)
    X, _ = g.sample(200, rng)
    return {
        "offset_pop_max_error": diag.max_abs_error,
        "recovery_max_abs_error": float(max(np.max(np.abs(fixed.W - ph.joint.W)),
                                            np.max(np.abs(fixed.b - ph.joint.b)))),
        "recovery_pred_agreement": float(np.mean(fixed.predict(X) == ph.joint.predict(X))),
    }


def _offset_sampled(cfg: Config, rng: np.random.Generator) -> dict[str, Any]:
    g = gaussian_tasks(num_tasks=cfg.offset_num_tasks, classes_per_task=4, dim=cfg.offset_dim,
                       task_scale=0.5, class_scale=0.3, rng=rng)
    heads, stats = [], None
    for t in range(g.num_tasks):
        X, y = g.sample_task(t, cfg.offset_train_per_class, rng)
        heads.append(fit_within_task_head(X, y, weight_decay=1e-6, task_id=t))
        stats = accumulate_stats(stats, X, y, task_id=t)
    bayes = population_heads(g.stats()).joint
    diag = offset_diagnostic(concat_heads(heads), bayes, stats, shrinkage=None,
                             num_permutations=0)
    return {"offset_sampled_dispersion": diag.mean_dispersion,
            "offset_sampled_cosine": diag.min_cosine}


def _task_means(head) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The tasks of a head, each task's mean weight row and mean bias."""
    tasks = np.unique(head.tasks)
    W = np.stack([head.W[head.tasks == t].mean(axis=0) for t in tasks])
    b = np.array([head.b[head.tasks == t].mean() for t in tasks])
    return tasks, W, b


def _placebo(dec_head):
    """The control of the gap claims: the de-centred head with each task given the next
    task's offset and bias scalar (a cyclic shift; same scale, wrong task), so a
    correction that works without the right task's statistics shows here too."""
    from .heads import LinearHead

    tasks, W_mean, b_mean = _task_means(dec_head)
    W, b = dec_head.W.copy(), dec_head.b.copy()
    for i, t in enumerate(tasks):
        rows = dec_head.tasks == t
        j = (i + 1) % len(tasks)
        W[rows] += W_mean[j] - W_mean[i]
        b[rows] += b_mean[j] - b_mean[i]
    return LinearHead(W, b, dec_head.classes.copy(), dec_head.tasks.copy())


def _offset_over_weight(seq_head, dec_head) -> float:
    """Median over tasks of the added offset's norm over the mean norm of the task's
    centred within-task weight rows (the scale diagnostic of the gap claims)."""
    tasks, W_mean, _ = _task_means(dec_head)
    out = []
    for i, t in enumerate(tasks):
        Wt = seq_head.W[seq_head.tasks == t]
        centred = np.linalg.norm(Wt - Wt.mean(axis=0), axis=1).mean()
        out.append(np.linalg.norm(W_mean[i]) / max(centred, 1e-300))
    return float(np.median(out))


def cil_run(dataset: str, seed: int, Xtr, ytr, Xte, yte, order, classes_per_task: int,
            cfg: Config) -> dict[str, Any]:
    """Fit every head task by task on frozen features; accuracies, gap, offset diagnostic."""
    est = {"seq": SequentialSoftmax(weight_decay=cfg.weight_decay),
           "dec": DecenteredSoftmax(weight_decay=cfg.weight_decay),
           "joint": JointSoftmax(weight_decay=cfg.weight_decay),
           "slda": SLDA(), "ncm": NCM(), "fecam": FeCAM()}
    for t in range(len(order) // classes_per_task):
        keep = np.isin(ytr, order[t * classes_per_task:(t + 1) * classes_per_task])
        for e in est.values():
            e.partial_fit(Xtr[keep], ytr[keep], task_id=t)
    row: dict[str, Any] = {"dataset": dataset, "seed": seed, "dim": Xtr.shape[1],
                           "num_tasks": est["seq"].num_tasks_, "num_train": len(ytr)}
    for name, e in est.items():
        row[f"acc_{name}"] = float(e.score(Xte, yte))
    dec_head = est["dec"].head_
    placebo = _placebo(dec_head)
    row["acc_placebo"] = float(np.mean(placebo.predict(Xte) == yte))
    row["offset_over_weight"] = _offset_over_weight(est["seq"].head_, dec_head)
    row["task_confusion_seq"] = task_confusion(est["seq"].head_, Xte, yte)
    row["task_confusion_dec"] = task_confusion(est["dec"].head_, Xte, yte)
    try:
        row["gap_recovered"] = gap_recovered(row["acc_seq"], row["acc_joint"], row["acc_dec"])
        row["placebo_gap_recovered"] = gap_recovered(row["acc_seq"], row["acc_joint"],
                                                     row["acc_placebo"])
    except ValueError:  # no gap: the sequential heads are as good as the joint one
        row["gap_recovered"] = row["placebo_gap_recovered"] = math.nan
    diag = offset_diagnostic(est["seq"].head_, est["joint"].head_, est["seq"].stats_,
                             num_permutations=200, seed=seed)
    row["diag_dispersion"] = diag.mean_dispersion
    row["diag_cosine_min"] = diag.min_cosine
    row["diag_control_p5"] = float(np.percentile(diag.permutation_dispersion, 5))
    row["diag_control_quantile"] = diag.control_quantile
    # the permutation p-value's trials: controls at or below the observed dispersion
    row["diag_control_count"] = int(np.sum(diag.permutation_dispersion <= diag.mean_dispersion))
    row["diag_num_permutations"] = len(diag.permutation_dispersion)
    return row


def _synthetic_data(cfg: Config, s: int):
    """The synthetic tasks of seed ``s``: generator, train and test samples."""
    rng = np.random.default_rng([s, 1])
    g = gaussian_tasks(num_tasks=5, classes_per_task=4, dim=cfg.pop_dim, task_scale=0.5,
                       class_scale=0.3, rng=rng)
    Xtr, ytr = g.sample(cfg.synth_train_per_class, rng)
    Xte, yte = g.sample(cfg.synth_test_per_class, rng)
    return g, Xtr, ytr, Xte, yte


def _synthetic_row(cfg: Config, s: int) -> dict:
    g, Xtr, ytr, Xte, yte = _synthetic_data(cfg, s)
    row = cil_run("synthetic", s, Xtr, ytr, Xte, yte, np.arange(20), 4, cfg)
    row["acc_bayes"] = float(np.mean(population_heads(g.stats()).joint.predict(Xte) == yte))
    return row


def _digits_data(cfg: Config, s: int, data):
    """Digits of seed ``s`` through a PCA fitted on task 1 only, and the class order."""
    from sklearn.decomposition import PCA

    xtr, ytr, xte, yte = data
    order = np.random.default_rng([s, 2]).permutation(10)
    first = np.isin(ytr, order[:2])
    pca = PCA(cfg.digits_pca_dim, random_state=0).fit(xtr[first])  # task 1 only
    return pca.transform(xtr), ytr, pca.transform(xte), yte, order


def _digits_row(cfg: Config, s: int, data) -> dict:
    Xtr, ytr, Xte, yte, order = _digits_data(cfg, s, data)
    return cil_run("digits", s, Xtr, ytr, Xte, yte, order, 2, cfg)


def offset_refit(dataset: str, seed: int, Xtr, ytr, order, classes_per_task: int,
                 cfg: Config) -> dict[str, Any]:
    """The offset diagnostic's permuted-task control on sequential and joint heads refitted
    with ``wd_diag_factor`` times the weight decay (the diagnostic of claim
    ``invariance_falsifiable``: whether the offsets become block-constant when the
    regularised optimum is less dominated by (near) separability)."""
    wd = cfg.weight_decay * cfg.wd_diag_factor
    seq, joint = SequentialSoftmax(weight_decay=wd), JointSoftmax(weight_decay=wd)
    for t in range(len(order) // classes_per_task):
        keep = np.isin(ytr, order[t * classes_per_task:(t + 1) * classes_per_task])
        seq.partial_fit(Xtr[keep], ytr[keep], task_id=t)
        joint.partial_fit(Xtr[keep], ytr[keep], task_id=t)
    diag = offset_diagnostic(seq.head_, joint.head_, seq.stats_, num_permutations=200,
                             seed=seed)
    return {"dataset": dataset, "seed": seed, "weight_decay": wd,
            "diag_control_quantile": diag.control_quantile,
            "diag_control_count": int(np.sum(diag.permutation_dispersion
                                             <= diag.mean_dispersion)),
            "diag_num_permutations": len(diag.permutation_dispersion)}


def _first_per_class(y: np.ndarray, m: int) -> np.ndarray:
    """Mask of the first ``m`` samples of every class of ``y``."""
    keep = np.zeros(len(y), dtype=bool)
    for c in np.unique(y):
        keep[np.flatnonzero(y == c)[:m]] = True
    return keep


def methods_run(dataset: str, seed: int, Xtr, ytr, Xte, yte, order, classes_per_task: int,
                cfg: Config) -> list[dict]:
    """The five CIL methods' heads (``methods.py``) on frozen features, one row per method.

    Each head is trained task by task on the classes of ``order`` (``classes_per_task``
    per task); the offset diagnostic compares it with the joint head on all training data
    (permuted-task control with 200 permutations), and :func:`decenter` is applied to it
    with the streaming statistics of the tasks.
    """
    k = classes_per_task
    tasks, stats = [], None
    for t in range(len(order) // k):
        keep = np.isin(ytr, order[t * k:(t + 1) * k])
        tasks.append((Xtr[keep], ytr[keep]))
        stats = accumulate_stats(stats, Xtr[keep], ytr[keep], task_id=t)
    seen = np.isin(ytr, order[: len(tasks) * k])
    joint = fit_joint_head(Xtr[seen], ytr[seen], weight_decay=cfg.weight_decay)
    acc_joint = float(np.mean(joint.predict(Xte) == yte))
    rows = []
    for name in CIL_METHODS:
        kwargs: dict[str, Any] = {"weight_decay": cfg.weight_decay}
        if name in ("replay", "wa"):
            kwargs["memory_per_class"] = cfg.methods_memory_per_class
        head = getattr(cil_methods, name)(tasks, **kwargs)
        dec = decenter(head, stats)
        diag = offset_diagnostic(head, joint, stats, num_permutations=200, seed=seed)
        row = {"dataset": dataset, "seed": seed, "method": name, "num_train": int(seen.sum()),
               "num_tasks": len(tasks), "acc": float(np.mean(head.predict(Xte) == yte)),
               "acc_dec": float(np.mean(dec.predict(Xte) == yte)), "acc_joint": acc_joint,
               "task_confusion": task_confusion(head, Xte, yte),
               "task_confusion_dec": task_confusion(dec, Xte, yte),
               "dispersion": diag.mean_dispersion,
               "control_p5": float(np.percentile(diag.permutation_dispersion, 5)),
               "control_quantile": diag.control_quantile, "cosine": diag.min_cosine}
        try:
            row["gap_recovered"] = gap_recovered(row["acc"], acc_joint, row["acc_dec"])
        except ValueError:  # the method's head is as good as the joint one: no gap
            row["gap_recovered"] = math.nan
        rows.append(row)
    return rows


def _methods_rows(cfg: Config, d: str, s: int, st) -> list[dict]:
    if d == "synthetic":
        _, Xtr, ytr, Xte, yte = _synthetic_data(cfg, s)
        keep = _first_per_class(ytr, cfg.methods_train_per_class)
        return methods_run(d, s, Xtr[keep], ytr[keep], Xte, yte, np.arange(20), 4, cfg)
    if d not in st.data:
        from neurips26.common.data import load_digits

        st.data = {d: load_digits().flat()}
    Xtr, ytr, Xte, yte, order = _digits_data(cfg, s, st.data[d])
    return methods_run(d, s, Xtr, ytr, Xte, yte, order, 2, cfg)


def _mnist_data(cfg: Config, name: str):
    from neurips26.common.data import load_fashion_mnist, load_mnist

    ds = (load_mnist if name == "mnist" else load_fashion_mnist)()
    return ds.subset(10 * cfg.mnist_train_per_class, 10 * cfg.mnist_test_per_class,
                     seed=0).flat()


def _mnist_features(cfg: Config, name: str, s: int, data, device: str):
    """Features of seed ``s``'s task-1 MLP: train and test features and labels, order."""
    import torch

    from neurips26.common.cache import cache_key, cached_module
    from neurips26.common.models import MLPClassifier
    from neurips26.common.torch import make_generator, seeded
    from neurips26.common.train import array_batches, train

    from .features import network_features

    xtr, ytr, xte, yte = data
    order = np.random.default_rng([s, 3]).permutation(10)
    first = np.isin(ytr, order[:2])
    labels = np.searchsorted(np.sort(order[:2]), ytr[first])

    def build():
        with seeded(s):
            return MLPClassifier(784, cfg.mnist_hidden, 2)

    def fit(net):
        batches = array_batches(xtr[first], labels, batch_size=128,
                                generator=make_generator(s), device=device)
        train(net, batches, max_iter=cfg.mnist_steps, lr=1e-3, seed=s, device=device)

    key = cache_key(f"cil_decentering_{name}_task1_mlp",
                    {"hidden": cfg.mnist_hidden, "steps": cfg.mnist_steps,
                     "n": cfg.mnist_train_per_class, "classes": order[:2].tolist()}, s,
                    modules=("neurips26.common.models",))
    net, _ = cached_module("cil_decentering_mlp", key, build, fit)
    net = net.to(torch.device(device))
    ftr = network_features(net, xtr, device=device)
    fte = network_features(net, xte, device=device)
    return ftr, ytr, fte, yte, order


def _mnist_row(cfg: Config, name: str, s: int, data, device: str) -> dict:
    ftr, ytr, fte, yte, order = _mnist_features(cfg, name, s, data, device)
    return cil_run(name, s, ftr, ytr, fte, yte, order, 2, cfg)


def effnet_features(cfg: Config, name: str, device: str = "cpu") -> dict[str, np.ndarray]:
    """EfficientNet-lite0 features (cached in the user cache, never needed by a test).

    ``name="photos"``: views of the real photos, each photo a class; otherwise an MNIST-like
    set upsampled to ``effnet_image_size`` and replicated to RGB. Returns ``features``,
    ``labels`` and ``is_train``.
    """
    from neurips26.common.cache import cache_key, cached_arrays
    from neurips26.common.data import load_photos, photo_views
    from neurips26.common.models import efficientnet_features, load_efficientnet_lite0

    if name == "photos":
        spec = {"train": cfg.photo_train_views, "test": cfg.photo_test_views,
                "size": cfg.photo_size, "min_scale": cfg.photo_min_scale}
    else:
        spec = {"set": name, "size": cfg.effnet_image_size,
                "train": cfg.effnet_train_per_class, "test": cfg.effnet_test_per_class}

    def compute():
        model = load_efficientnet_lite0(device)
        if name == "photos":
            images, _ = load_photos()
            n = cfg.photo_train_views + cfg.photo_test_views
            views, labels = photo_views(images, n, size=cfg.photo_size,
                                        min_scale=cfg.photo_min_scale,
                                        rng=np.random.default_rng(0))
            is_train = np.tile(np.arange(n) < cfg.photo_train_views, len(images))
        else:
            from neurips26.common.data import load_fashion_mnist, load_mnist, upsample

            ds = (load_mnist if name == "mnist" else load_fashion_mnist)()
            ds = ds.subset(10 * cfg.effnet_train_per_class, 10 * cfg.effnet_test_per_class,
                           seed=1)
            x = np.concatenate([ds.x_train, ds.x_test])  # (N, 1, 28, 28) in [0, 1]
            x = upsample(x, cfg.effnet_image_size)[:, 0]
            views = np.repeat((x * 255).round().astype(np.uint8)[..., None], 3, axis=3)
            labels = np.concatenate([ds.y_train, ds.y_test])
            is_train = np.arange(len(labels)) < len(ds.y_train)
        feats = efficientnet_features(model, views, device=device)
        return {"features": feats, "labels": labels, "is_train": is_train}

    key = cache_key("cil_decentering_effnet", spec, 0,
                    modules=("neurips26.papers.cil_decentering",))
    arrays, _ = cached_arrays("cil_decentering_effnet", key, compute)
    return arrays


def _effnet_split(cfg: Config, name: str, s: int, arrays):
    """Seed ``s``'s class order over the EfficientNet features: train and test features
    and labels, the order and the classes per task."""
    F, y, tr = arrays["features"], arrays["labels"], arrays["is_train"].astype(bool)
    C = int(y.max()) + 1
    k = cfg.photo_classes_per_task if name == "photos" else 2
    order = np.random.default_rng([s, 4]).permutation(C)[: (C // k) * k]
    keep = np.isin(y, order)
    return F[tr & keep], y[tr & keep], F[~tr & keep], y[~tr & keep], order, k


def _effnet_row(cfg: Config, name: str, s: int, arrays) -> dict:
    Xtr, ytr, Xte, yte, order, k = _effnet_split(cfg, name, s, arrays)
    return cil_run(f"effnet_{name}", s, Xtr, ytr, Xte, yte, order, k, cfg)


def _wd_diag_row(cfg: Config, d: str, s: int, device: str) -> dict:
    """The stronger-weight-decay refit (:func:`offset_refit`) of data set ``d``, seed ``s``,
    on the same features, labels and class order as its CIL run."""
    if d == "synthetic":
        _, Xtr, ytr, _, _ = _synthetic_data(cfg, s)
        return offset_refit(d, s, Xtr, ytr, np.arange(20), 4, cfg)
    if d == "digits":
        from neurips26.common.data import load_digits

        Xtr, ytr, _, _, order = _digits_data(cfg, s, load_digits().flat())
        return offset_refit(d, s, Xtr, ytr, order, 2, cfg)
    if d in ("mnist", "fashion_mnist"):
        Xtr, ytr, _, _, order = _mnist_features(cfg, d, s, _mnist_data(cfg, d), device)
        return offset_refit(d, s, Xtr, ytr, order, 2, cfg)
    name = d.removeprefix("effnet_")
    Xtr, ytr, _, _, order, k = _effnet_split(cfg, name, s,
                                             effnet_features(cfg, name, device))
    return offset_refit(d, s, Xtr, ytr, order, k, cfg)


def _failure_rows(cfg: Config, rng: np.random.Generator) -> list[dict]:
    rows = []
    for ratio in cfg.failure_ratios:
        for dist in cfg.failure_distances:
            g = failure_construction(ratio=ratio, task_distance=dist)
            heads, stats = [], None
            for t in range(2):
                X, y = g.sample_task(t, cfg.failure_train_per_class, rng)
                heads.append(fit_within_task_head(X, y, weight_decay=cfg.weight_decay,
                                                  task_id=t))
                stats = accumulate_stats(stats, X, y, task_id=t)
            XB, yB = g.sample_task(1, cfg.failure_test_per_class, rng)  # task B's inputs
            bayes = population_heads(g.stats()).joint
            rows.append({
                "ratio": ratio, "task_distance": dist,
                "confusion_seq": task_confusion(concat_heads(heads), XB, yB),
                "confusion_dec": task_confusion(decenter(heads, stats), XB, yB),
                "confusion_bayes": task_confusion(bayes, XB, yB),
                "num_test": len(yB),
            })
    return rows


def _bound_rows(cfg: Config, rng: np.random.Generator) -> list[dict]:
    rows = []
    attempts = 0
    while len(rows) < cfg.bound_instances and attempts < 200 * max(cfg.bound_instances, 1):
        attempts += 1
        g = gaussian_tasks(num_tasks=2, classes_per_task=2, dim=4,
                           task_scale=float(rng.uniform(0.3, 1.5)),
                           class_scale=float(rng.uniform(0.5, 2.0)), condition_number=3.0,
                           rng=rng)
        sep = separation(g.stats())
        kappa, gamma = float(np.min(sep.kappa[~np.eye(2, dtype=bool)])), float(sep.gamma[0, 1])
        if not kappa > 1.05:
            continue
        heads = []
        for t in range(2):
            X, y = g.sample_task(t, cfg.failure_train_per_class, rng)
            heads.append(fit_within_task_head(X, y, weight_decay=cfg.weight_decay, task_id=t))
        X, y = g.sample(cfg.failure_test_per_class, rng)
        conf = task_confusion(concat_heads(heads), X, y)
        bound = float(sep.bound()[0, 1])
        se = math.sqrt(max(conf * (1 - conf), 1e-12) / len(y))
        rows.append({"kappa": kappa, "gamma": gamma, "confusion_seq": conf, "bound": bound,
                     "excess": conf - bound - 2 * se})
    return rows


# --------------------------------------------------------------------------- summary


def _figures(cil: list[dict], failure: list[dict]) -> dict[str, bytes]:
    fig, (ax1, ax2) = new_figure(2, width=10.0)
    sets = sorted({r["dataset"] for r in cil}, key=lambda d: ("synthetic", *REAL).index(d))
    width = 0.8 / len(METHODS)
    for k, m in enumerate(METHODS):
        ax1.bar(np.arange(len(sets)) + k * width,
                [np.mean([r[f"acc_{m}"] for r in cil if r["dataset"] == d]) for d in sets],
                width, label=m)
    ax1.set_xticks(np.arange(len(sets)) + 0.4 - width / 2, sets, fontsize=8)
    ax1.set_ylabel("class-incremental accuracy")
    ax1.legend(fontsize=7, ncol=3)
    for dist in sorted({r["task_distance"] for r in failure}):
        rr = [r for r in failure if r["task_distance"] == dist]
        ax2.semilogx([r["ratio"] for r in rr], [r["confusion_seq"] for r in rr], "o-",
                     label=f"sequential, ||m||={dist:g}")
        ax2.semilogx([r["ratio"] for r in rr], [r["confusion_dec"] for r in rr], "x:",
                     label=f"de-centred, ||m||={dist:g}")
    ax2.set_xlabel("R / r")
    ax2.set_ylabel("confusion of task B with task A")
    ax2.legend(fontsize=6)
    return {"accuracy_and_failure": figure_png(fig)}


@dataclass
class State:
    cfg: Config
    rng: np.random.Generator  # the population, offset, failure and bound parts, in order
    data: dict = field(default_factory=dict)


class CILDecenteringExperiment(Experiment):
    Config, TIERS, METRICS = Config, TIERS, METRICS
    UNIT_TABLE = None
    CAPTIONS: ClassVar[dict[str, str]] = {"accuracy_and_failure": (
        "Left: final class-incremental accuracy (argmax over all classes) of each head per "
        "data set, mean over seeds (seq: within-task softmax; dec: de-centred; joint: upper "
        "bound). Right: confusion of task B with task A on the failure construction against "
        "R / r, sequential and de-centred heads (the paper's Omega(1) construction).")}

    def setup(self, cfg: Config, ctx) -> State:
        return State(cfg, np.random.default_rng(cfg.seed))

    def grid(self, cfg: Config):
        seeds = [cfg.seed * 1000 + i for i in range(cfg.num_seeds)]
        units = [{"part": "population"}]
        if cfg.offset_train_per_class:
            units.append({"part": "offset"})
        sets = ((["synthetic"] if cfg.synth_train_per_class else [])
                + (["digits"] if cfg.digits else []) + list(cfg.mnist_datasets)
                + [f"effnet_{n}" for n in cfg.effnet_datasets])
        units += [{"part": "cil", "dataset": d, "seed": s} for d in sets for s in seeds]
        units += [{"part": "methods", "dataset": d, "seed": s} for d in cfg.methods_datasets
                  for s in seeds[: cfg.methods_num_seeds]]
        units = [*units, {"part": "failure"}, {"part": "bound"}]
        if cfg.wd_diag_set in sets and cfg.wd_diag_seed < len(seeds):  # the diagnostic, last
            units.append({"part": "wd_diag", "dataset": cfg.wd_diag_set,
                          "seed": seeds[cfg.wd_diag_seed]})
        return units

    def measure(self, unit, st: State, ctx):
        cfg, part = st.cfg, unit["part"]
        if part == "population":
            return {"kind": "population", **_population(cfg, st.rng)}
        if part == "offset":
            return {"kind": "offset", **_offset_sampled(cfg, st.rng)}
        if part == "failure":
            return [{"kind": "failure", **r} for r in _failure_rows(cfg, st.rng)]
        if part == "bound":
            return [{"kind": "bound", **r} for r in _bound_rows(cfg, st.rng)]
        if part == "methods":
            return [{"kind": "methods", **r}
                    for r in _methods_rows(cfg, unit["dataset"], unit["seed"], st)]
        if part == "wd_diag":
            return {"kind": "wd_diag", **_wd_diag_row(cfg, unit["dataset"], unit["seed"],
                                                      ctx.device)}
        d, s = unit["dataset"], unit["seed"]
        if d == "synthetic":
            row = _synthetic_row(cfg, s)
        elif d == "digits":
            if d not in st.data:
                from neurips26.common.data import load_digits

                st.data = {d: load_digits().flat()}
            row = _digits_row(cfg, s, st.data[d])
        elif d in ("mnist", "fashion_mnist"):
            if d not in st.data:
                st.data = {d: _mnist_data(cfg, d)}
            row = _mnist_row(cfg, d, s, st.data[d], ctx.device)
        else:
            name = d.removeprefix("effnet_")
            if d not in st.data:
                st.data = {d: effnet_features(cfg, name, ctx.device)}
            row = _effnet_row(cfg, name, s, st.data[d])
        return {"kind": "cil", **row}

    def summarize(self, t, cfg: Config, ctx) -> dict:
        return _summarize(t, cfg)

    def tables(self, t, summary, cfg) -> dict:
        def rows(kind):
            return [{k: v for k, v in r.items() if k not in ("kind", "part", "unit_seconds")}
                    for r in t.where(kind=kind)]
        return {"cil": rows("cil"), "failure": rows("failure"), "bound": rows("bound"),
                "cil_methods": rows("methods")}

    def figures(self, t, summary, cfg) -> dict:
        cil = [dict(r) for r in t.where(kind="cil")]
        return _figures(cil, [dict(r) for r in t.where(kind="failure")]) if cil else {}

    def notes(self, t, summary, cfg) -> tuple[str, ...]:
        notes = [f"{r['dataset']} seed {r['seed']}: joint accuracy {r['acc_joint']:.3f} "
                 f"does not exceed sequential {r['acc_seq']:.3f}; no gap to recover"
                 for r in t.where(kind="cil") if not np.isfinite(r["gap_recovered"])]
        if len(t.where(kind="methods")):
            notes.append(
                "Table cil_methods: the offset diagnostic and de-centering applied to the "
                "heads of five published CIL methods on frozen features (methods.py): "
                "finetune (sequential within-task softmax, the paper's setting), lwf (Li and "
                "Hoiem, ECCV 2016), ewc (Kirkpatrick et al., PNAS 2017), replay (herded "
                f"exemplar memory, {cfg.methods_memory_per_class} per class; Rebuffi et al., "
                "CVPR 2017; Chaudhry et al., 2019) and wa (Weight Aligning, Zhao et al., CVPR "
                "2020); data sets " + ", ".join(cfg.methods_datasets) + ".")
        return tuple(notes)


def _summarize(t, cfg: Config) -> dict:
    metrics: dict[str, Any] = {}
    metrics.update({k: v for k, v in t.where(kind="population").rows[0].items()
                    if k != "kind" and k != "part" and k != "unit_seconds"})
    if cfg.offset_train_per_class:
        off = t.where(kind="offset").rows[0]
        for k in ("offset_sampled_dispersion", "offset_sampled_cosine"):
            metrics[k] = off[k]
    cil = t.where(kind="cil")
    for d in ("synthetic", *REAL):
        rows = cil.where(dataset=d)
        if len(rows):
            # mean over seeds with a finite gap, Student-t (a seed without a gap is left out)
            metrics[f"gap_{d}"] = rows.mean_over("gap_recovered", unit="seed")
            metrics[f"placebo_gap_{d}"] = rows.mean_over("placebo_gap_recovered", unit="seed")
            metrics[f"offset_over_weight_{d}"] = float(np.median(
                rows.column("offset_over_weight")))
    real = cil.where(lambda r: r["dataset"] in REAL)
    if len(real):
        # each seed's mean over the real data sets, then the mean over seeds
        metrics["gap_real_mean"] = real.mean_over("gap_recovered", unit="seed")
        metrics["placebo_gap_real_mean"] = real.mean_over("placebo_gap_recovered", unit="seed")
        metrics["diag_control_quantile_max"] = _worst_control_quantile(real)
        metrics["diag_dispersion_max"] = float(real.column("diag_dispersion").max())
    refit = t.where(kind="wd_diag").rows
    if refit:
        (r,) = refit
        (base,) = cil.where(dataset=r["dataset"], seed=r["seed"]).rows
        for name, row in (("diag_control_quantile_strong_wd", r),
                          ("diag_control_quantile_strong_wd_base", base)):
            metrics[name] = replace(binomial_interval(
                int(row["diag_control_count"]), int(row["diag_num_permutations"]),
                unit=f"permuted task assignments ({r['dataset']}, seed {r['seed']})"),
                value=float(row["diag_control_quantile"]))
        for m in METHODS:
            metrics[f"acc_{m}_real_mean"] = float(np.mean(real.column(f"acc_{m}")))
    metrics["num_cil_runs"] = len(cil)
    failure = t.where(kind="failure").rows
    for name, ratio in (("max", max(cfg.failure_ratios)), ("min", min(cfg.failure_ratios))):
        metrics[f"failure_min_confusion_at_{name}_ratio"] = _worst_confusion(failure, ratio)
    metrics["failure_max_dec_bayes_diff"] = max(abs(r["confusion_dec"] - r["confusion_bayes"])
                                                for r in failure)
    bound = t.where(kind="bound").rows
    metrics["bound_num_instances"] = len(bound)
    if bound:
        metrics["bound_max_excess"] = max(r["excess"] for r in bound)
    metrics.update(_summarize_methods(t.where(kind="methods")))
    reasons = _reasons(cfg, metrics)
    for name in METRICS:  # a metric not measured at this tier is NaN with a reason
        value = metrics.get(name, math.nan)
        if isinstance(value, Estimate):
            if math.isnan(value.value):
                metrics[name] = Estimate.missing(reasons.get(name) or value.reason)
        elif isinstance(value, float) and math.isnan(value):
            metrics[name] = Estimate.missing(reasons[name])
    return metrics


def _worst_control_quantile(real) -> Estimate:
    """The largest permutation p-value over the real-feature runs, with the Wilson interval
    of that run's controls at or below its dispersion over its random task assignments.

    Every run draws as many permutations, so the run with the largest p-value also has the
    highest interval: the claim needs every run below the bar, each on its own interval.
    The value stays the p-value ``(1 + count) / (1 + permutations)``.
    """
    worst = max(real, key=lambda r: r["diag_control_quantile"])
    rate = binomial_interval(int(worst["diag_control_count"]),
                             int(worst["diag_num_permutations"]),
                             unit="permuted task assignments (the worst run)")
    return replace(rate, value=float(worst["diag_control_quantile"]))


def _worst_confusion(failure: list[dict], ratio: float) -> Estimate:
    """The smallest confusion of task B with task A over the distances ``||m||`` at
    ``ratio``, with the Wilson interval of that cell over its task-B test inputs.

    Every cell has as many test inputs, so the least confused cell also has the lowest
    interval: the claim needs every cell above the bar, each on its own interval.
    """
    worst = min((r for r in failure if r["ratio"] == ratio), key=lambda r: r["confusion_seq"])
    n = int(worst["num_test"])
    return binomial_interval(round(worst["confusion_seq"] * n), n,
                             unit="task-B test inputs (the least confused ||m||)")


def _summarize_methods(rows) -> dict[str, Any]:
    """Per method and data set: means over seeds (the control quantile: the worst seed,
    the cosine: the smallest), the gap recovered with its Student-t interval."""
    metrics: dict[str, Any] = {}
    for d in METHOD_SETS:
        of_set = rows.where(dataset=d)
        if not len(of_set):
            continue
        metrics[f"diag_joint_{d}_acc"] = float(np.mean(of_set.column("acc_joint")))
        for m in CIL_METHODS:
            r = of_set.where(method=m)
            name = f"diag_{m}_{d}_"
            metrics[name + "dispersion"] = float(np.mean(r.column("dispersion")))
            metrics[name + "control_p5"] = float(np.mean(r.column("control_p5")))
            metrics[name + "control_quantile"] = float(np.max(r.column("control_quantile")))
            metrics[name + "cosine"] = float(np.min(r.column("cosine")))
            metrics[name + "acc"] = float(np.mean(r.column("acc")))
            metrics[name + "acc_dec"] = float(np.mean(r.column("acc_dec")))
            metrics[name + "gap"] = r.mean_over("gap_recovered", unit="seed")
    return metrics


def _reasons(cfg: Config, metrics: dict[str, Any]) -> dict[str, str]:
    """Why each metric that is missing or NaN was not measured."""
    reasons: dict[str, str] = {}
    for name in METRICS:
        value = metrics.get(name, math.nan)
        if isinstance(value, Estimate):
            value = value.value
        if isinstance(value, float) and math.isnan(value):
            if name.startswith("offset_sampled"):
                why = "sampled offset check not run at this tier (offset_train_per_class=0)"
            elif name.startswith(("gap_", "placebo_gap_", "offset_over_weight_")) and (
                    not name.endswith("real_mean")):
                why = ("this data set is not run at this tier, or no seed had a joint-"
                       "sequential gap to recover")
            elif name == "bound_max_excess":
                why = "no instance with kappa > 1 was drawn"
            elif name.startswith("diag_control_quantile_strong_wd"):
                why = ("the weight-decay diagnostic's data set (wd_diag_set) or seed "
                       "(wd_diag_seed) is not run at this tier")
            elif name in METHOD_METRICS:
                why = ("the CIL-method diagnostic does not run on this data set at this tier "
                       "(methods_datasets), or the method's head had no gap to the joint one")
            else:
                why = "no real-feature data set is run at this tier"
            reasons[name] = why
    return reasons


EXPERIMENT = CILDecenteringExperiment()
run = EXPERIMENT.run
