"""Reproduction of ARQ-VAE on procedural TAS videos, plus a real-feature check.

Per seed: procedural frame-feature videos are generated (train / held-out / test split),
an ARQ-VAE is trained on the unlabelled training features, and for each byte budget (a
fraction of the training set's float32 size, all-in: decoder and codebooks counted) we
build the adaptive memory (Eq. (1) with lambda by bisection, then decoder fine-tuning),
the fixed-depth RVQ memory of the same model, PCA + uint8, temporal subsampling and a
single k-means codebook, each at the largest setting within the budget. A small MS-TCN is
trained on each memory's reconstructed training features to a plateau of its loss on the
held-out videos' original features (the stopping rule of :func:`train_mstcn`; the step
count is a cap) and evaluated on the original test features (F1@50, Edit). The
unsupervised path (k-means + smoothing + Hungarian matching) runs on the adaptive memory
at the smallest budget and on the originals. The same seeds run a second simulator
reading at a lower noise level (``noise2``): the smallest budget, the adaptive memory with
and without fine-tuning, and the k-means and shuffled-pairing controls. Incremental TAS
(per seed): MS-TCN learns task 1 (activities 0 and 1), then task 2 (activities 2 and 3)
replaying task 1 from its float32 features, from an ARQ-VAE memory trained on task 1
alone, or not at all; F1@50 on task 1's test videos after task 2 measures forgetting.
The real-feature check trains an ARQ-VAE on EfficientNet-lite0 features of slow pans
over real photos and compares a frame classifier trained on the memory with one trained
on the originals.

A unit is one seed of a reading (its data, ARQ-VAE, memories and baselines), one seed of
incremental TAS and, where run, the real-feature check. Intervals are 95% Student-t over
seeds, paired on the seed for differences; ratios (the F1 ratios, fine-tuning's error
ratio) are geometric means on the log scale.

Controls: extreme compression is measured the same way for a single k-means codebook at
the same bytes (if a one-codebook memory also keeps the F1, the budget does not test
the method); fine-tuning's error drop and F1 gain for the decoder fine-tuned on the same
codes paired with training frames shuffled across the set (what fine-tuning gains
without fitting the kept codes to their own frames); the unsupervised Edit gap for the
memory's frames shuffled in time within each video (a content-free placebo); the
incremental ratio for task 2 learned without replay (if it keeps task 1's F1 as well,
the tasks do not test replay). The trade-off and adaptivity claims are comparisons
against named baselines, which are their controls.

Deviations from the paper
-------------------------
- Data: no TAS feature bank (Breakfast I3D, 50Salads, GTEA, DINOv3) installs offline; the
  videos are procedural (activity grammars, lognormal segments, confusable prototypes,
  drift, a slowly varying noise level) with D = 256, far fewer and shorter videos than
  Breakfast. The real-feature check uses EfficientNet-lite0 features of pans over
  scikit-image / foolbox photos, one photo per "action".
- Two simulator readings: the noise level of the first (1.5) raises the reconstruction
  error's floor (the frame noise no decoder reconstructs), and a reconstruction can
  score at or above the noisy originals (it denoises them); the second (0.5) lowers that
  floor and is a reading where both claims can fail the other way. Claims 2 and 4 are
  stated for both, with the same targets.
- Segmentation model: a small MS-TCN (2 stages) instead of ASFormer, trained to a
  held-out plateau (evaluations every ``mstcn_eval_every`` steps, stop after
  ``mstcn_patience`` without a 1% improvement, best weights kept).
- Budgets: with the spec's d = 64 the codebooks (L K d float32) and the decoder alone are
  about 1/30 of the training set's float32 bytes, so the spec's 1/512 all-in is
  infeasible at our scale. A budget is feasible above the model plus one code per frame
  and binding below the full-depth memory; the training sets' lengths differ by seed, so
  this window differs by seed (about 1/23-1/28 on seed 1, 1/26-1/31 on seed 2), and only
  about 1/26 to 1/27.5 is feasible and binding on all three seeds. The small tier uses
  1/25, 1/26 and 1/27 all-in (1/25 is not binding on every seed: there the memory keeps
  every level), and claim 2 is tested at the smallest, 1/27 (the paper's 28 GB -> 10 MB
  is about 1/2,800 on a much larger feature bank, where the model's bytes are
  negligible).
- Incremental TAS is not in the spec: two tasks split by activity (the actions of the
  grammars overlap across activities), replayed frames keep their stored segment labels
  (run-length, a few bytes per segment, not counted in the budget), the replay memory's
  budget is 1/13 of task 1's float32 bytes all-in (the model alone is about 1/15 of
  them; 1/16 is infeasible, and on the seeds with longer task-1 videos 1/13 is not
  binding, so the memory keeps every level), and the 85% target is the
  extreme-compression claim's (the abstract gives no figure).
- Quantizer: our own EMA residual VQ (data-dependent start, dead-code expiry), with quantize
  dropout as a random prefix depth per frame; ``vector_quantize_pytorch.ResidualVQ`` is the
  test oracle for its assignments and prefix decoding. Encoder: a temporal 1-D conv
  (kernel 3); decoder: a frame-wise MLP, so stored codes decode frame by frame.
- The rate-distortion rule, the bisection and the greedy fill to the budget, and the
  memory's byte layout are our reading of the abstract.
- Real features: the check uses a codes-only budget (the 1,280-d model dwarfs a few
  hundred frames).

What does not reproduce at the small tier, and what the run shows
-----------------------------------------------------------------
- Trade-off (claim 1): the count of budgets at which the ARQ-VAE memory's mean F1 is
  level with every baseline's is decided by means a few F1 points apart, within the
  seeds' spread: two stored runs that differ only in the optimizer kernel's float
  rounding (fused against multi-tensor AdamW, the same seeds) gave counts of 2 and 0.
  The count therefore carries a bootstrap over seeds, and with three seeds it is not
  decided. The diagnostics ``bytes_arq_b26`` and ``bytes_pca_b26`` show whether the
  memory fills the largest budget.
- Extreme compression, adaptivity, fine-tuning's F1 (claims 2, 3, 5): MS-TCN trains to
  a held-out plateau (``mstcn_plateau_fraction`` says how many trainings the rule, not
  the cap, ended); the intervals are over three seeds. The k-means control shows
  whether a crude memory at the same bytes keeps the F1 as well.
- Fine-tuning's error drop (claim 4): below the spec's 10% in both readings. Whether
  the noise floor holds it down is tested by the other reading (each reading's claim
  names the other's drop as its diagnostic): the drop is larger at the lower noise level
  but short of 10% at both, so the floor alone does not explain the miss; what does is
  not yet diagnosed. The shuffled-pairing control shows how much of the drop any decoder
  refit gives.
- Incremental TAS: the no-replay control shows whether task 2 makes MS-TCN forget task
  1 at all; ``incr_plateau_fraction`` whether every training ended at its plateau.
- Unsupervised reuse (claim 6): not yet diagnosed; the time-shuffled placebo shows
  whether the Edit gap can exceed the 3-point target at all.
- The real-feature check (pans over 8 real photos, one per "action") is an easy
  instance-recognition task: it shows that the memory keeps the discriminative content
  of real EfficientNet-lite0 features at a codes-only budget, not a hard test.
"""

from __future__ import annotations

import copy
import hashlib
import itertools
import time
from dataclasses import dataclass, replace
from typing import ClassVar

import numpy as np
import torch

from neurips26.common.experiment import param
from neurips26.common.plotting import figure_png, new_figure
from neurips26.experiment import Estimate, Experiment, ratio_t_interval, t_interval

from . import (
    ARQVAE,
    MSTCN,
    adaptive_truncate,
    code_bytes,
    finetune_decoder,
    fixed_depth_memory,
    hungarian_relabel,
    kmeans_memory,
    make_procedural_videos,
    memory_errors,
    model_nbytes,
    pca_uint8_memory,
    photo_pan_frames,
    segmentation_metrics,
    subsample_memory,
    train_arqvae,
    train_mstcn,
    truncation_lengths,
    unsupervised_segment,
)
from .memory import HEADER_BYTES

METHODS = ("arq", "arq_noft", "fixed", "pca", "subsample", "kmeans")
BASELINES = ("fixed", "pca", "subsample", "kmeans")
#: Claim 1's tolerance (F1@50 points), from the spec.
MATCH_TOL = 0.5


@dataclass(frozen=True)
class Config:
    seed: int = 0
    num_seeds: int = param(3, help="seeds (data, models)", min=1, max=20)
    num_videos: int = param(80, help="videos (train + test)", min=2)
    num_test: int = param(20, help="test videos (original features)", min=1)
    num_val: int = param(8, help="held-out videos (original features) for MS-TCN's plateau "
                                 "rule", min=1)
    dim: int = param(256, help="feature dimension D", min=2, max=8192)
    mean_length: int = param(400, help="mean frames per video", min=16)
    noise: float = param(1.5, help="frame noise level", min=0.01, max=100.0)
    noise2: float = param(0.5, help="second simulator reading's noise level (0: skip it)",
                          min=0.0, max=100.0)
    confusion: float = param(0.95, help="cosine of confusable prototypes", min=0.0, max=0.999)
    num_actions: int = param(16, help="actions", min=2, max=256)
    latent_dim: int = param(64, help="latent dim d", min=1, max=1024)
    num_levels: int = param(8, help="residual levels L", min=1, max=16)
    codebook_size: int = param(256, help="codes per level K", min=2, max=65536)
    hidden: int = param(64, help="encoder/decoder hidden width (0: linear)", min=0, max=4096)
    train_iter: int = param(200, help="ARQ-VAE training steps", min=1)
    train_lr: float = param(3e-3, help="ARQ-VAE learning rate", min=1e-6, max=1.0)
    train_batch: int = param(8, help="windows of 64 frames per ARQ-VAE step", min=1)
    finetune_iter: int = param(300, help="decoder fine-tuning steps", min=1)
    finetune_lr: float = param(1e-3, help="decoder fine-tuning learning rate", min=1e-6,
                               max=1.0)
    budgets: tuple[float, ...] = param((1 / 25, 1 / 26, 1 / 27),
                                       help="all-in byte budgets as fractions of float32",
                                       min=1e-6, max=1.0)
    mstcn_stages: int = param(2, help="MS-TCN stages", min=1, max=8)
    mstcn_layers: int = param(6, help="MS-TCN layers per stage", min=1, max=12)
    mstcn_channels: int = param(32, help="MS-TCN channels", min=4, max=512)
    mstcn_iter: int = param(1500, help="MS-TCN step cap (the held-out plateau rule stops "
                                       "it earlier)", min=1)
    mstcn_eval_every: int = param(25, help="MS-TCN steps between held-out evaluations", min=1)
    mstcn_patience: int = param(4, help="held-out evaluations without a 1 percent "
                                        "improvement before MS-TCN stops", min=1)
    mstcn_window: int = param(128, help="MS-TCN training window (frames)", min=8)
    incremental: bool = param(True, help="run incremental TAS (two tasks, replay)")
    incr_budget: float = param(1 / 13, help="incremental replay memory's all-in budget "
                                            "(fraction of task 1's float32 bytes)",
                               min=1e-6, max=1.0)
    unsup_smooth: int = param(15, help="mode-filter width of the unsupervised segmenter",
                              min=1, max=1001)
    real_videos: int = param(8, help="real-feature videos (0: skip the check)", min=0,
                             max=200)
    real_frames: int = param(16, help="frames per real segment", min=2, max=200)
    real_size: int = param(64, help="real frame side (pixels)", min=32, max=224)
    real_budget: float = param(1 / 1024, help="real check: codes-only budget fraction",
                               min=1e-6, max=1.0)


TIERS = {
    "smoke": Config(num_seeds=2, num_videos=10, num_test=2, dim=32, mean_length=100,
                    num_actions=6, latent_dim=4, num_levels=4, codebook_size=16, hidden=16,
                    train_iter=20, finetune_iter=20, budgets=(1 / 4, 1 / 8),
                    mstcn_stages=1, mstcn_layers=3, mstcn_channels=8, mstcn_iter=20,
                    mstcn_eval_every=5, mstcn_patience=2, num_val=2, mstcn_window=32,
                    real_videos=0, incremental=False, incr_budget=1 / 4),
    "small": Config(),
    "paper": Config(num_seeds=3, num_videos=400, num_test=100, dim=2048, mean_length=600,
                    num_actions=48, latent_dim=64, hidden=256, train_iter=5000,
                    train_batch=32, num_val=40, finetune_iter=1000,
                    budgets=(1 / 128, 1 / 512, 1 / 2048),
                    mstcn_stages=4, mstcn_layers=10, mstcn_channels=64, mstcn_iter=20000,
                    mstcn_window=512, real_videos=40, real_frames=32, real_size=96),
}

METRICS = (
    "frame_acc_logistic", "f1_orig", "edit_orig", "acc_orig",
    "f1_*_b*", "edit_*_b*", "bytes_*_b*", "codes_bytes_*_b*", "ratio_*_b*",
    "bytes_arq_b26", "bytes_pca_b26",  # the trade-off's diagnostics, by name (small tier)
    "model_bytes", "budgets_arq_best", "extreme_f1_ratio", "extreme_f1_ratio_kmeans",
    "adaptive_minus_fixed_f1",
    "extreme_f1_ratio_noise2", "extreme_f1_ratio_kmeans_noise2", "f1_orig_noise2",
    "finetune_error_drop_noise2", "finetune_error_drop_shuffled_noise2",
    "finetune_f1_gain_noise2", "finetune_f1_gain_shuffled_noise2",
    "mstcn_steps_max", "mstcn_steps_mean", "mstcn_plateau_fraction",
    "incr_f1_ratio", "incr_f1_ratio_noreplay", "incr_f1_task1_before", "incr_f1_task1_full",
    "incr_f1_task1_arq", "incr_f1_task1_none", "incr_f1_task2_full", "incr_f1_task2_arq",
    "incr_f1_task2_none", "incr_budget_ratio", "incr_mstcn_steps_max",
    "incr_plateau_fraction",
    "finetune_error_drop", "finetune_error_drop_shuffled",
    "finetune_f1_gain", "finetune_f1_gain_shuffled",
    "unsup_edit_orig", "unsup_edit_memory", "unsup_edit_gap", "unsup_edit_gap_shuffled",
    "real_acc_orig", "real_acc_memory", "real_acc_ratio", "real_recon_error",
    "real_mean_length",
    "check_truncation_mismatch", "check_bytes_mismatch", "check_budget_violations",
    "check_prefix_decode_error",
    "encode_ms_per_1k_frames", "decode_ms_per_1k_frames",
)  # fmt: skip

VOLATILE = ("encode_ms_per_1k_frames", "decode_ms_per_1k_frames")
#: The incremental-TAS metrics.
INCR = ("incr_f1_ratio", "incr_f1_ratio_noreplay", "incr_f1_task1_before",
        "incr_f1_task1_full", "incr_f1_task1_arq", "incr_f1_task1_none", "incr_f1_task2_full",
        "incr_f1_task2_arq", "incr_f1_task2_none", "incr_budget_ratio", "incr_mstcn_steps_max",
        "incr_plateau_fraction")
#: The real-feature check's metrics.
REAL = ("real_acc_orig", "real_acc_memory", "real_acc_ratio", "real_recon_error",
        "real_mean_length")


def _den(frac: float) -> int:
    return round(1 / frac)


def _segment(feats, labels, val, ds_te, cfg: Config, seed: int, cache: dict, device: str,
             net: MSTCN | None = None):
    """Train MS-TCN on ``feats`` (reconstructed training features) with ``labels`` to the
    held-out plateau on ``val`` (original features of held-out videos, labels); score on
    ``ds_te``. Returns (F1@50, Edit, accuracy, steps, plateau reached, held-out curve)."""
    h = hashlib.sha1(np.concatenate(feats).astype(np.float32).tobytes()).hexdigest()
    if net is None and h in cache:
        return cache[h]
    if net is None:
        net = MSTCN(ds_te.dim, ds_te.num_actions, num_stages=cfg.mstcn_stages,
                    num_layers=cfg.mstcn_layers, channels=cfg.mstcn_channels, seed=seed)
    r = train_mstcn(net, feats, labels, max_iter=cfg.mstcn_iter, window=cfg.mstcn_window,
                    val_videos=val[0], val_labels=val[1], eval_every=cfg.mstcn_eval_every,
                    patience=cfg.mstcn_patience, seed=seed, device=device)
    s = segmentation_metrics(net.predict(list(ds_te.features)), list(ds_te.labels))
    out = (s.f1_at(0.5), s.edit, s.accuracy, r.num_steps, r.plateau,
           (r.val_steps, r.val_losses))
    cache[h] = out
    return out


def _unsup_edit(feats, labels, cfg: Config, seed: int) -> float:
    pred = unsupervised_segment(feats, len(set(np.concatenate(labels).tolist())),
                                smooth=cfg.unsup_smooth, seed=seed)
    return segmentation_metrics(hungarian_relabel(pred, labels), list(labels)).edit


def _split(cfg: Config, seed: int, noise: float):
    """The seed's videos split into training, held-out (the plateau rule) and test."""
    ds = make_procedural_videos(num_videos=cfg.num_videos, num_actions=cfg.num_actions,
                                dim=cfg.dim, mean_length=cfg.mean_length, noise=noise,
                                confusion=cfg.confusion, seed=seed)
    n_tr = cfg.num_videos - cfg.num_test - cfg.num_val
    if n_tr < 1:
        raise ValueError("num_test + num_val must leave at least one training video")
    return (ds.subset(range(n_tr)), ds.subset(range(n_tr, n_tr + cfg.num_val)),
            ds.subset(range(n_tr + cfg.num_val, cfg.num_videos)))


def _measure(cfg: Config, s: int, device: str, reading: str = "main") -> list[dict]:
    """One seed: rows of F1@50 / Edit / bytes per (method, budget), and one row of the
    seed's errors, unsupervised Edits, checks and timings.

    ``reading="noise2"`` is the second simulator reading: noise level ``cfg.noise2``, the
    smallest budget only, the adaptive memory (with and without fine-tuning, and its
    shuffled-pairing control) and the k-means control; no other baseline, no
    unsupervised path.
    """
    from sklearn.linear_model import LogisticRegression

    seed = 1000 * cfg.seed + s
    lite = reading == "noise2"
    if lite:
        cfg = replace(cfg, budgets=(min(cfg.budgets),))
    tr, va, te = _split(cfg, seed, cfg.noise2 if lite else cfg.noise)
    x_tr = list(tr.features)
    val = (list(va.features), list(va.labels))
    X, y = np.concatenate(x_tr), np.concatenate(tr.labels)
    step = max(1, len(X) // 6000)
    clf = LogisticRegression(max_iter=200).fit(X[::step], y[::step])
    logistic = float(clf.score(np.concatenate(te.features), np.concatenate(te.labels)))
    cache: dict = {}

    def segment(feats):
        return _segment(feats, list(tr.labels), val, te, cfg, seed, cache, device)

    orig = segment(x_tr)
    model = ARQVAE(cfg.dim, latent_dim=cfg.latent_dim, num_levels=cfg.num_levels,
                   codebook_size=cfg.codebook_size, hidden=cfg.hidden, seed=seed)
    train_arqvae(model, x_tr, max_iter=cfg.train_iter, lr=cfg.train_lr,
                 batch_size=cfg.train_batch, seed=seed, device=device)
    model.eval()
    t0 = time.perf_counter()
    with torch.no_grad():
        codes0 = model.encode(torch.as_tensor(x_tr[0])[None])[0]
    t1 = time.perf_counter()
    full = torch.full(codes0.shape[:1], model.num_levels)
    with torch.no_grad():
        dec_full = model.decode(codes0, full)
    t2 = time.perf_counter()
    n0 = len(x_tr[0])
    checks = {"truncation": 0, "bytes": 0, "budget": 0}
    with torch.no_grad():  # prefix decoding at depth L equals the full-depth forward
        z = model.embed(torch.as_tensor(x_tr[0])[None])[0]
        q, _ = model.quantizer(z)
        checks["prefix"] = float((dec_full - model.decoder(q)).abs().max())
    # Eq. (1) against brute force at a fixed lambda
    errs = np.concatenate([model.prefix_errors(torch.as_tensor(v)[None])[0].double().numpy()
                           for v in x_tr[:5]])
    lam = 0.01
    brute = np.array([min(range(1, model.num_levels + 1),
                          key=lambda l, e=e: (e[l - 1] + lam * l * code_bytes(
                              cfg.codebook_size), l)) for e in errs])
    checks["truncation"] = int((brute != truncation_lengths(
        errs, lam, bytes_per_code=code_bytes(cfg.codebook_size))).sum())
    f32 = sum(v.size for v in x_tr) * 4
    scores, nbytes = {}, {}
    err_noft = err_ft = float("nan")
    mem_small = tuned_small = None
    L, cb = model.num_levels, code_bytes(cfg.codebook_size)
    nan2 = (float("nan"), float("nan"))
    for frac in sorted(cfg.budgets, reverse=True):
        den, budget = _den(frac), int(f32 * frac)
        try:
            mem = adaptive_truncate(model, x_tr, budget_bytes=budget)
        except ValueError:
            for meth in METHODS:
                scores[meth, den] = nbytes[meth, den] = nan2
            continue
        allin = mem.nbytes(include_model=True, model=model)
        checks["bytes"] += int(allin != len(mem.to_bytes(model)))
        full_size = adaptive_truncate(model, x_tr, lam=0.0).nbytes(include_model=True,
                                                                  model=model)
        binding = full_size > budget
        # within one frame's worth (L codes) of a binding budget, unless every frame keeps
        # the same depth and packing the lengths (N / 2 bytes) would not fit
        stuck = mem.uniform and allin + (mem.num_frames + 1) // 2 - 1 + cb > budget
        checks["budget"] += int(allin > budget
                                or (binding and budget - allin >= L * cb and not stuck))
        tuned = finetune_decoder(model, mem, x_tr, max_iter=cfg.finetune_iter,
                                 lr=cfg.finetune_lr, seed=seed, device=device)
        codes_only = mem.nbytes(include_model=False)
        nbytes["arq", den] = nbytes["arq_noft", den] = (allin, codes_only)
        scores["arq", den] = segment(mem.reconstruct(tuned))
        if frac == min(cfg.budgets):
            scores["arq_noft", den] = segment(mem.reconstruct(model))
            err_noft = memory_errors(model, mem, x_tr)
            err_ft = memory_errors(tuned, mem, x_tr)
            mem_small, tuned_small = mem, tuned
        else:
            scores["arq_noft", den] = nan2
        fixed_size = [HEADER_BYTES + 4 * len(x_tr) + 1 + cb * d * len(X) + model_nbytes(model)
                      for d in range(1, L + 1)]  # uniform lengths: one byte
        depth = max([d for d in range(1, L + 1) if fixed_size[d - 1] <= budget] or [0])
        if lite:  # the second reading runs no fixed-depth baseline
            pass
        elif depth:
            fm = fixed_depth_memory(model, x_tr, depth)
            tuned_fm = finetune_decoder(model, fm, x_tr, max_iter=cfg.finetune_iter,
                                        lr=cfg.finetune_lr, seed=seed, device=device)
            nbytes["fixed", den] = (fm.nbytes(include_model=True, model=model),
                                    fm.nbytes(include_model=False))
            checks["budget"] += int(nbytes["fixed", den][0] > budget)
            scores["fixed", den] = segment(fm.reconstruct(tuned_fm))
        else:
            scores["fixed", den] = nbytes["fixed", den] = nan2
        for name, fn in (("pca", pca_uint8_memory), ("subsample", subsample_memory),
                         ("kmeans", kmeans_memory)):
            if lite and name != "kmeans":
                continue
            try:
                b = fn(x_tr, budget) if name == "subsample" else fn(x_tr, budget, seed=seed)
            except ValueError:
                scores[name, den] = nbytes[name, den] = nan2
                continue
            checks["budget"] += int(b.nbytes > budget)
            nbytes[name, den] = (b.nbytes, b.codes_nbytes)
            scores[name, den] = segment(b.features)
    stats = {"kind": "seed", "logistic": logistic, "float32_bytes": f32,
             "error_noft": err_noft, "error_ft": err_ft,
             "error_ft_shuffled": float("nan"), "unsup_orig": float("nan"),
             "unsup_memory": float("nan"), "unsup_shuffled": float("nan"),
             **{f"check_{k}": v for k, v in checks.items()},
             "encode_ms": 1000 * (t1 - t0) * 1000 / n0,
             "decode_ms": 1000 * (t2 - t1) * 1000 / n0}
    small = _den(min(cfg.budgets))
    if mem_small is not None:
        rec = mem_small.reconstruct(tuned_small)
        if not lite:
            stats["unsup_orig"] = _unsup_edit(x_tr, list(tr.labels), cfg, seed)
            stats["unsup_memory"] = _unsup_edit(rec, list(tr.labels), cfg, seed)
        # Controls, after every measurement above. (1) The decoder fine-tuned on the same
        # codes paired with frames shuffled across the training set: what fine-tuning gains
        # without fitting the retained codes to their own frames.
        rng = np.random.default_rng([seed, 11])
        flat = np.concatenate(x_tr)[rng.permutation(len(X))]
        off = np.cumsum([0, *(len(v) for v in x_tr)])
        shuffled = [flat[a:b] for a, b in itertools.pairwise(off)]
        tuned_shuf = finetune_decoder(model, mem_small, shuffled, max_iter=cfg.finetune_iter,
                                      lr=cfg.finetune_lr, seed=seed, device=device)
        stats["error_ft_shuffled"] = memory_errors(tuned_shuf, mem_small, x_tr)
        scores["arq_shuffled", small] = segment(mem_small.reconstruct(tuned_shuf))
        # (2) The unsupervised pipeline on the memory's frames shuffled in time within each
        # video: a content-free placebo for the temporal structure Edit scores.
        rng = np.random.default_rng([seed, 12])
        if not lite:
            stats["unsup_shuffled"] = _unsup_edit([r[rng.permutation(len(r))] for r in rec],
                                                  list(tr.labels), cfg, seed)
    else:
        scores["arq_shuffled", small] = nan2
    stats["reading"] = reading
    rows = [{"kind": "score", "reading": reading, "method": "orig", "budget": 0,
             "f1": orig[0], "edit": orig[1], "acc": orig[2], "steps": orig[3],
             "plateau": float(orig[4])}]
    curves = {"orig": orig}
    for (meth, den), sc in scores.items():
        nb = nbytes.get((meth, den), nan2)
        trained = len(sc) > 2
        rows.append({"kind": "score", "reading": reading, "method": meth, "budget": den,
                     "f1": sc[0], "edit": sc[1], "bytes_all_in": nb[0], "bytes_codes": nb[1],
                     "steps": sc[3] if trained else float("nan"),
                     "plateau": float(sc[4]) if trained else float("nan")})
        if den == small and meth in ("arq", "kmeans") and trained:
            curves[meth] = sc
    for meth, sc in curves.items():  # the held-out loss of MS-TCN's training
        rows += [{"kind": "curve", "reading": reading, "method": meth, "step": st,
                  "val_loss": v} for st, v in zip(*sc[5], strict=True)]
    return [*rows, stats]


def _real_check(cfg: Config, device: str) -> dict:
    """ARQ-VAE on EfficientNet-lite0 features of pans over real photos (codes-only budget)."""
    from sklearn.linear_model import LogisticRegression

    from neurips26.common.cache import cache_key, cached_arrays
    from neurips26.common.data import load_photos
    from neurips26.common.models.vision import efficientnet_features, load_efficientnet_lite0

    n_actions = 8
    key = cache_key("arq_vae_real", {"videos": cfg.real_videos, "frames": cfg.real_frames,
                                     "size": cfg.real_size, "actions": n_actions}, cfg.seed)

    def compute():
        photos, _ = load_photos(num_skimage=_num_skimage(), imagenet=True)
        rng = np.random.default_rng([cfg.seed, 7])
        pick = rng.choice(len(photos), size=n_actions, replace=False)
        frames, labels = photo_pan_frames([photos[i] for i in pick],
                                          num_videos=cfg.real_videos, num_segments=3,
                                          frames_per_segment=cfg.real_frames,
                                          size=cfg.real_size, rng=rng)
        net = load_efficientnet_lite0()
        feats = efficientnet_features(net, np.concatenate(frames), batch_size=64)
        lens = np.array([len(f) for f in frames])
        return {"features": feats.astype(np.float32), "labels": np.concatenate(labels),
                "lengths": lens}

    arr, _ = cached_arrays("arq_vae_real", key, compute)
    off = np.r_[0, np.cumsum(arr["lengths"])]
    vids = [arr["features"][a:b] for a, b in itertools.pairwise(off)]
    labs = [arr["labels"][a:b] for a, b in itertools.pairwise(off)]
    n_te = max(1, len(vids) // 4)
    tr_x, tr_y, te_x, te_y = vids[:-n_te], labs[:-n_te], vids[-n_te:], labs[-n_te:]
    model = ARQVAE(vids[0].shape[1], latent_dim=32, num_levels=8, codebook_size=256,
                   hidden=256, seed=cfg.seed)
    train_arqvae(model, tr_x, max_iter=max(100, cfg.train_iter), lr=cfg.train_lr,
                 window=16, batch_size=8, seed=cfg.seed, device=device)
    model.eval()
    f32 = sum(v.size for v in tr_x) * 4
    mem = adaptive_truncate(model, tr_x, budget_bytes=int(f32 * cfg.real_budget),
                            include_model=False)
    tuned = finetune_decoder(model, mem, tr_x, max_iter=cfg.finetune_iter,
                             lr=cfg.finetune_lr, seed=cfg.seed, device=device)
    rec = mem.reconstruct(tuned)

    def acc(train_feats):
        clf = LogisticRegression(max_iter=500).fit(np.concatenate(train_feats),
                                                   np.concatenate(tr_y))
        return float(clf.score(np.concatenate(te_x), np.concatenate(te_y)))

    a_o, a_m = acc(tr_x), acc(rec)
    return {"real_acc_orig": a_o, "real_acc_memory": a_m,
            "real_acc_ratio": a_m / a_o if a_o > 0 else float("nan"),
            "real_recon_error": memory_errors(tuned, mem, tr_x),
            "real_mean_length": float(mem.lengths.mean())}


def _num_skimage() -> int:
    from neurips26.common.data.images import SKIMAGE_PHOTOS

    return len(SKIMAGE_PHOTOS)


def _diff(a: np.ndarray, b: np.ndarray, what: str) -> Estimate:
    """Mean over seeds of ``a - b`` (paired), Student-t; missing when a seed lacks one."""
    d = np.asarray(a, dtype=float) - np.asarray(b, dtype=float)
    if d.size == 0 or not np.isfinite(d).all():
        return Estimate.missing(f"{what}: not measured on every seed (infeasible budget)")
    return t_interval(d)


def _ratio(num: np.ndarray, den: np.ndarray, what: str) -> Estimate:
    """Geometric mean over seeds of ``num / den`` on the log scale; where a seed's ratio is
    zero (an F1 of 0) the log scale cannot hold it and the mean is Student-t on the raw
    scale."""
    num, den = np.asarray(num, dtype=float), np.maximum(np.asarray(den, dtype=float), 1e-9)
    r = num / den
    if r.size == 0 or not np.isfinite(r).all():
        return Estimate.missing(f"{what}: not measured on every seed (infeasible budget)")
    return ratio_t_interval(r) if (r > 0).all() else t_interval(r)


def _drop(ratio: Estimate) -> Estimate:
    """``1 - ratio`` (its ends swap)."""
    if not np.isfinite(ratio.value):
        return ratio
    return Estimate(1.0 - ratio.value, 1.0 - ratio.hi, 1.0 - ratio.lo, ratio.method,
                    ratio.level, ratio.n)


#: Metrics measured in both simulator readings (the second with the suffix ``_noise2``).
READING = ("extreme_f1_ratio", "extreme_f1_ratio_kmeans", "finetune_error_drop",
           "finetune_error_drop_shuffled", "finetune_f1_gain", "finetune_f1_gain_shuffled")


def _reading_metrics(sc, st, small: int, suffix: str) -> dict:
    """Claims 2, 4 and 5 and their controls for one simulator reading (a noise level)."""

    def col(meth, den):
        return sc.where(method=meth, budget=den).column("f1")

    m = {}
    f1o = col("orig", 0)
    m["extreme_f1_ratio"] = _ratio(col("arq", small), f1o, "extreme_f1_ratio")
    m["extreme_f1_ratio_kmeans"] = _ratio(col("kmeans", small), f1o,
                                          "extreme_f1_ratio_kmeans")
    noft = st.column("error_noft")
    for key, c in (("finetune_error_drop", "error_ft"),
                   ("finetune_error_drop_shuffled", "error_ft_shuffled")):
        e = st.column(c)
        m[key] = (_drop(ratio_t_interval(e, noft))
                  if np.isfinite(e).all() and np.isfinite(noft).all() and (noft > 0).all()
                  and (e > 0).all()
                  else Estimate.missing(f"{key}: no memory at the smallest budget"))
    m["finetune_f1_gain"] = _diff(col("arq", small), col("arq_noft", small),
                                  "finetune_f1_gain")
    m["finetune_f1_gain_shuffled"] = _diff(col("arq_shuffled", small), col("arq_noft", small),
                                           "finetune_f1_gain_shuffled")
    return {k + suffix: v for k, v in m.items()}


def _task(ds, first: bool, num_first: int):
    """The videos of the first task (activities below ``num_first``) or of the second."""
    idx = [i for i, a in enumerate(ds.activities) if (a < num_first) == first]
    return ds.subset(idx) if idx else None


def _incremental(cfg: Config, s: int, device: str) -> dict:
    """Incremental TAS with replay, one seed: MS-TCN learns task 1 (activities 0, 1) on its
    original features, then task 2 (activities 2, 3) with task 1 replayed from (a) its
    float32 features, (b) the ARQ-VAE memory trained on task 1 alone at the
    ``incr_budget`` all-in budget, (c) nothing. F1@50 on task 1's test videos after task 2
    measures forgetting. Replayed frames carry their stored segment labels (run-length)."""
    seed = 1000 * cfg.seed + s
    tr, va, te = _split(cfg, seed, cfg.noise)
    half = 2  # make_procedural_videos draws 4 activities
    parts = {(k, f): _task(ds, f, half) for k, ds in (("tr", tr), ("va", va), ("te", te))
             for f in (True, False)}
    nan = float("nan")
    row = {"kind": "incr", "f1_t1_before": nan, "f1_t1_full": nan, "f1_t1_arq": nan,
           "f1_t1_none": nan, "f1_t2_full": nan, "f1_t2_arq": nan, "f1_t2_none": nan,
           "arq_bytes": nan, "float32_bytes": nan, "steps_max": nan, "plateau_all": nan}
    if any(v is None for v in parts.values()):
        return row
    t1, t2 = parts["tr", True], parts["tr", False]
    net = MSTCN(cfg.dim, t1.num_actions, num_stages=cfg.mstcn_stages,
                num_layers=cfg.mstcn_layers, channels=cfg.mstcn_channels, seed=seed)

    def fit(net, feats, labels, val):
        return train_mstcn(net, feats, labels, max_iter=cfg.mstcn_iter, window=cfg.mstcn_window,
                           val_videos=list(val.features), val_labels=list(val.labels),
                           eval_every=cfg.mstcn_eval_every, patience=cfg.mstcn_patience,
                           seed=seed, device=device)

    def f1(net, ds):
        return segmentation_metrics(net.predict(list(ds.features)), list(ds.labels)).f1_at(0.5)

    runs = [fit(net, list(t1.features), list(t1.labels), parts["va", True])]
    row["f1_t1_before"] = f1(net, parts["te", True])
    x1 = list(t1.features)
    model = ARQVAE(cfg.dim, latent_dim=cfg.latent_dim, num_levels=cfg.num_levels,
                   codebook_size=cfg.codebook_size, hidden=cfg.hidden, seed=seed)
    train_arqvae(model, x1, max_iter=cfg.train_iter, lr=cfg.train_lr,
                 batch_size=cfg.train_batch, seed=seed, device=device)
    model.eval()
    f32 = sum(v.size for v in x1) * 4
    row["float32_bytes"] = f32
    replay = {"full": x1, "none": None}
    try:
        mem = adaptive_truncate(model, x1, budget_bytes=int(f32 * cfg.incr_budget))
        tuned = finetune_decoder(model, mem, x1, max_iter=cfg.finetune_iter,
                                 lr=cfg.finetune_lr, seed=seed, device=device)
        replay["arq"] = mem.reconstruct(tuned)
        row["arq_bytes"] = mem.nbytes(include_model=True, model=model)
    except ValueError:
        replay["arq"] = None
    for arm in ("full", "arq", "none"):
        if arm == "arq" and replay["arq"] is None:
            continue
        learner = copy.deepcopy(net)
        feats, labels = list(t2.features), list(t2.labels)
        if replay[arm] is not None:
            feats, labels = feats + list(replay[arm]), labels + list(t1.labels)
        runs.append(fit(learner, feats, labels, parts["va", False]))
        row[f"f1_t1_{arm}"] = f1(learner, parts["te", True])
        row[f"f1_t2_{arm}"] = f1(learner, parts["te", False])
    row["steps_max"] = max(r.num_steps for r in runs)
    row["plateau_all"] = float(all(r.plateau for r in runs))
    return row


def _incremental_metrics(inc) -> dict:
    """The incremental claim's ratio, its no-replay control and what they rest on."""
    m = {}
    reason = "incremental TAS is off (incremental=False) or a task split is empty"
    if not len(inc) or not np.isfinite(inc.column("f1_t1_full")).all():
        for k in INCR:
            m[k] = Estimate.missing(reason)
        return m
    full = inc.column("f1_t1_full")
    m["incr_f1_ratio"] = _ratio(inc.column("f1_t1_arq"), full, "incr_f1_ratio")
    m["incr_f1_ratio_noreplay"] = _ratio(inc.column("f1_t1_none"), full,
                                         "incr_f1_ratio_noreplay")
    for k in ("before", "full", "arq", "none"):
        m[f"incr_f1_task1_{k}"] = float(np.mean(inc.column(f"f1_t1_{k}")))
    for k in ("full", "arq", "none"):
        m[f"incr_f1_task2_{k}"] = float(np.mean(inc.column(f"f1_t2_{k}")))
    m["incr_budget_ratio"] = float(np.mean(inc.column("float32_bytes")
                                           / inc.column("arq_bytes")))
    m["incr_mstcn_steps_max"] = Estimate.exact(float(inc.column("steps_max").max()))
    m["incr_plateau_fraction"] = float(np.mean(inc.column("plateau_all")))
    return m


class ARQVAEExperiment(Experiment):
    """Units: one per seed (data, ARQ-VAE, every memory and baseline at every budget), then
    the real-feature check."""

    Config, TIERS, METRICS, VOLATILE = Config, TIERS, METRICS, VOLATILE
    UNIT_TABLE = None
    CAPTIONS: ClassVar[dict[str, str]] = {
        "tradeoff": "F1@50 of MS-TCN trained on each memory's reconstructed training "
                    "features against the memory's all-in bytes (mean over seeds); the dashed "
                    "line is the original float32 features (the paper's storage-performance "
                    "comparison).",
        "curves": "Held-out loss (cross-entropy plus smoothing on the held-out videos' "
                  "original features) of MS-TCN against training steps, first seed, for "
                  "the original features and the adaptive memory and k-means at the "
                  "smallest budget, in both simulator readings; each curve ends where the "
                  "plateau rule (or the step cap) stopped training."}

    def setup(self, cfg: Config, ctx):
        return cfg

    def grid(self, cfg: Config):
        units = [{"part": "seed", "seed": s} for s in range(cfg.num_seeds)]
        if cfg.noise2 > 0:
            units += [{"part": "noise2", "seed": s} for s in range(cfg.num_seeds)]
        if cfg.incremental:
            units += [{"part": "incr", "seed": s} for s in range(cfg.num_seeds)]
        return [*units, {"part": "real"}] if cfg.real_videos else units

    def measure(self, unit, cfg: Config, ctx):
        if unit["part"] == "real":
            return {"kind": "real", **_real_check(cfg, ctx.device)}
        if unit["part"] == "incr":
            return _incremental(cfg, unit["seed"], ctx.device)
        return _measure(cfg, unit["seed"], ctx.device,
                        "noise2" if unit["part"] == "noise2" else "main")

    def summarize(self, table, cfg: Config, ctx):
        dens = [_den(f) for f in sorted(cfg.budgets, reverse=True)]
        small = _den(min(cfg.budgets))
        sc = table.where(kind="score", reading="main")
        st = table.where(kind="seed", reading="main")

        def col(meth, den, field="f1"):
            return sc.where(method=meth, budget=den).column(field)

        m: dict = {"frame_acc_logistic": float(np.mean(st.column("logistic")))}
        for k in ("f1", "edit", "acc"):
            m[f"{k}_orig"] = float(np.mean(col("orig", 0, k)))
        for den in dens:
            for meth in METHODS:
                m[f"f1_{meth}_b{den}"] = float(np.mean(col(meth, den)))
                m[f"edit_{meth}_b{den}"] = float(np.mean(col(meth, den, "edit")))
                if meth == "arq_noft":
                    continue
                m[f"bytes_{meth}_b{den}"] = float(np.mean(col(meth, den, "bytes_all_in")))
                m[f"codes_bytes_{meth}_b{den}"] = float(np.mean(col(meth, den, "bytes_codes")))
        # compression ratios against the float32 training set (all-in)
        total = float(np.mean(st.column("float32_bytes")))
        for den in dens:
            for meth in METHODS:
                if meth != "arq_noft":
                    m[f"ratio_{meth}_b{den}"] = total / m[f"bytes_{meth}_b{den}"]
        model = ARQVAE(cfg.dim, latent_dim=cfg.latent_dim, num_levels=cfg.num_levels,
                       codebook_size=cfg.codebook_size, hidden=cfg.hidden)
        m["model_bytes"] = model_nbytes(model)
        def arq_best(t) -> float:  # budgets where ARQ's mean F1 is level with every baseline's
            wins = 0
            for den in dens:
                f = {meth: float(np.mean(t.where(method=meth, budget=den).column("f1")))
                     for meth in ("arq", *BASELINES)}  # fmt: skip
                base = [v for b, v in f.items() if b != "arq" and np.isfinite(v)]
                wins += int(np.isfinite(f["arq"]) and all(f["arq"] >= v - MATCH_TOL
                                                          for v in base))
            return float(wins)

        # the count is decided by F1 means a few points apart: its interval resamples seeds
        m["budgets_arq_best"] = sc.bootstrap(arq_best, unit="seed", num_resamples=1000,
                                             seed=cfg.seed)
        m.update(_reading_metrics(sc, st, small, ""))
        m["adaptive_minus_fixed_f1"] = _diff(col("arq", small), col("fixed", small),
                                             "adaptive_minus_fixed_f1")
        m["unsup_edit_orig"] = float(np.mean(st.column("unsup_orig")))
        m["unsup_edit_memory"] = float(np.mean(st.column("unsup_memory")))
        m["unsup_edit_gap"] = _diff(st.column("unsup_memory"), st.column("unsup_orig"),
                                    "unsup_edit_gap")
        m["unsup_edit_gap_shuffled"] = _diff(st.column("unsup_shuffled"),
                                             st.column("unsup_orig"), "unsup_edit_gap_shuffled")
        sc2 = table.where(kind="score", reading="noise2")
        st2 = table.where(kind="seed", reading="noise2")
        if len(st2):
            m.update(_reading_metrics(sc2, st2, small, "_noise2"))
            m["f1_orig_noise2"] = float(np.mean(sc2.where(method="orig").column("f1")))
        else:
            for k in (*READING, "f1_orig"):
                m[f"{k}_noise2"] = Estimate.missing("the second noise level is off (noise2=0)")
        m.update(_incremental_metrics(table.where(kind="incr")))
        allsc = table.where(kind="score")
        steps = allsc.column("steps")
        steps = steps[np.isfinite(steps)]
        m["mstcn_steps_max"] = Estimate.exact(float(steps.max()))
        m["mstcn_steps_mean"] = float(steps.mean())
        plat = allsc.column("plateau")
        m["mstcn_plateau_fraction"] = float(np.mean(plat[np.isfinite(plat)]))
        real = table.where(kind="real")
        for k in REAL:
            m[k] = (real.rows[0][k] if len(real) else Estimate.missing(
                "the real-feature check is skipped at this tier (real_videos=0)"))
        for den in dens:
            if den != small:
                for k in (f"f1_arq_noft_b{den}", f"edit_arq_noft_b{den}"):
                    m[k] = Estimate.missing(
                        "no fine-tuning ablation at this budget (smallest budget only)")
        for k, v in m.items():
            if isinstance(v, float) and not np.isfinite(v):
                m[k] = Estimate.missing(
                    "infeasible budget (the memory's smallest setting exceeds it)")
        m["check_truncation_mismatch"] = int(st.column("check_truncation").sum())
        m["check_bytes_mismatch"] = int(st.column("check_bytes").sum())
        m["check_budget_violations"] = int(st.column("check_budget").sum())
        m["check_prefix_decode_error"] = float(st.column("check_prefix").max())
        m["encode_ms_per_1k_frames"] = float(np.mean(st.column("encode_ms")))
        m["decode_ms_per_1k_frames"] = float(np.mean(st.column("decode_ms")))
        return m

    def tables(self, table, summary, cfg: Config):
        dens = [_den(f) for f in sorted(cfg.budgets, reverse=True)]
        out = []
        for (seed, reading), rows in table.where(kind="score").groups("seed",
                                                                      "reading").items():
            for den in dens:
                for meth in (*METHODS, "arq_shuffled"):
                    r = rows.where(method=meth, budget=den)
                    if not len(r):
                        continue
                    r = r.rows[0]
                    out.append({"seed": seed, "reading": reading, "budget": f"1/{den}",
                                "method": meth, "mstcn_steps": r.get("steps", np.nan),
                                "f1@50": r["f1"], "edit": r["edit"],
                                "bytes_all_in": r.get("bytes_all_in", np.nan),
                                "bytes_codes": r.get("bytes_codes", np.nan)})
        return {"memories": out}

    def figures(self, table, summary, cfg: Config):
        dens = [_den(f) for f in sorted(cfg.budgets, reverse=True)]
        m = {k: (v.value if isinstance(v, Estimate) else v) for k, v in summary.items()}
        return {"tradeoff": _figure(m, dens), "curves": _curves(table.where(kind="curve"))}

    def notes(self, table, summary, cfg: Config):
        dens = [_den(f) for f in sorted(cfg.budgets, reverse=True)]
        ntrain = cfg.num_videos - cfg.num_test - cfg.num_val
        return (f"{cfg.num_seeds} seeds; {ntrain} training videos, "
                f"budgets 1/" + ", 1/".join(map(str, dens)) + " of float32, all-in",)


EXPERIMENT = ARQVAEExperiment()
run = EXPERIMENT.run


def _figure(m, dens) -> bytes:
    fig, (ax,) = new_figure(width=6.0)
    for meth in ("arq", "fixed", "pca", "subsample", "kmeans"):
        xs = [m[f"bytes_{meth}_b{d}"] for d in dens]
        ys = [m[f"f1_{meth}_b{d}"] for d in dens]
        ax.plot(xs, ys, "o-", label=meth)
    ax.axhline(m["f1_orig"], ls="--", color="k", label="float32")
    ax.set_xscale("log")
    ax.set_xlabel("stored bytes (all-in)")
    ax.set_ylabel("F1@50")
    ax.legend(fontsize=7)
    return figure_png(fig)


def _curves(curves) -> bytes:
    fig, (ax,) = new_figure(width=6.0)
    if len(curves):
        first = min(r["seed"] for r in curves.rows)
        for (meth, reading), rows in curves.where(seed=first).groups("method",
                                                                   "reading").items():
            ax.plot(rows.column("step"), rows.column("val_loss"),
                    "-" if reading == "main" else "--", label=f"{meth} ({reading})")
        ax.legend(fontsize=7)
    ax.set_xlabel("MS-TCN training step")
    ax.set_ylabel("held-out loss")
    return figure_png(fig)
