"""Reproduction of ECFR on procedural RGB+depth objects (and one real RGB-D scene).

For each seed we render the multi-class data set, train the two frozen feature encoders
once (shared by every method), then train on normal images of all classes at once:
ECFR (gated cross-modal reconstruction), the same-modality baseline with the identical
body, ECFR without AFIR, ECFR with HAC replaced by plain convolutions, and CFM's
per-pixel crossmodal MLPs; PatchCore keeps one memory bank per class (not unified). We
measure mean-over-classes image AUROC, pixel AUROC and AUPRO, the shortcut ratio r (mean
reconstruction error on anomalous feature cells over normal cells), and count each
head's parameters and FLOPs per image (``torch.utils.flop_counter``).

The RGB features come from the ImageNet-pretrained EfficientNet-lite0 at every tier (a real
pretrained backbone, as the paper's are; ``--set rgb_backbone=conv`` trains the in-repo
denoising encoder instead); the depth encoder is in-repo at every setting.

A unit is one seed (data, encoders, every head); a last unit draws the bootstraps.
Intervals are 95% percentile bootstraps over test images (a (seed, image) pair is the
resampled unit, pooled over seeds; paired between methods, the statistic averaged over
seeds; pixel metrics on 4x-subsampled maps, the value on the full maps).

Controls: the cross-modal claims (image and pixel AUROC gain over the same-modality
baseline, the shortcut ratio) are measured the same way for the ``fused`` head, which
decodes each modality with the target modality in reach (the identical shortcut the
cross-modal design removes); the competitiveness claims for the same-modality baseline
against CFM and PatchCore (if it is also within the margin, the margin does not tell
ECFR apart). The module claims need the removal of AFIR or HAC to lower pixel AUROC by
the spec's 0.005 with the interval above it; the ablation is their control.

Deviations from the paper
-------------------------
- Data and backbones are substitutes (see the package docstring); images are 48-64 px,
  training is a few hundred steps, widths are small.
- The paper's 44.63 M parameters / 15.77 GFLOPs include backbones we cannot build; we
  compare the heads at equal features (ECFR vs CFM vs same-modality), counted.
- The shortcut ratio is measured on the feature grid: a cell is anomalous when at least
  half of it is covered by the mask, normal when none of it is.

What does not reproduce at the small tier, and why we think so
----------------------------------------------------------------
Verdicts come from the run; these notes are our reading of the small tier.

- Competitive with PatchCore: the per-class memory bank is told each test image's
  class, which the unified methods are not; why it leads on our data is not yet
  diagnosed.
- Competitive with CFM, "AFIR matters", "HAC matters": the differences to CFM and to the
  ablations lie within the bootstrap interval at a few hundred steps on a 12x12 grid; the
  module claims now need the removal to hurt by a margin, which these runs do not show.
  The cause is not yet diagnosed.
- Parameters and FLOPs are counted and reported but not judged (see the claims): at equal
  features the ratio to CFM follows from the widths chosen.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import ClassVar

import numpy as np
import torch
import torch.nn.functional as F

from neurips26.common.cache import cache_key, cached_arrays, cached_module
from neurips26.common.experiment import param
from neurips26.common.plotting import figure_png, new_figure
from neurips26.experiment import Estimate, Experiment, Table

from . import (
    RGB_BACKBONES,
    CFMDetector,
    ECFRDetector,
    Features,
    PatchCoreDetector,
    RGBDFeatureExtractor,
    aupro,
    check_rgbd,
    fill_depth_holes,
    image_auroc,
    load_stereo_rgbd,
    make_synthetic_3dad,
    pixel_auroc,
    scene_patches,
)
from .metrics import _auroc

#: Trained heads: name -> ECFRDetector keyword arguments (CFM and PatchCore apart).
HEADS = {
    "ecfr": {},
    "same": {"cross_mode": "same"},
    "no_afir": {"use_afir": False},
    "no_hac": {"use_hac": False},
    "fused": {"cross_mode": "fused"},
    "strict": {"cross_mode": "strict"},
}
METHODS = (*HEADS, "cfm", "patchcore")
_MODULES = ("neurips26.papers.ecfr",)


@dataclass(frozen=True)
class Config:
    seed: int = 0
    num_classes: int = param(5, help="object classes (unified: one model for all)", min=1,
                             max=5)
    num_train_per_class: int = param(40, help="normal training images per class", min=1)
    num_test_per_class: int = param(20, help="test images per class (half anomalous)", min=2)
    image_size: int = param(48, help="image side in pixels (multiple of 4)", min=16,
                            max=512)
    num_seeds: int = param(2, help="seeds (data, encoders and heads)", min=1)
    feature_width: int = param(32, help="channels per encoder stage", min=1)
    feature_iter: int = param(150, help="denoising-autoencoder steps per encoder", min=1)
    rgb_backbone: str = param("efficientnet", help="RGB features: pretrained "
                              "EfficientNet-lite0 or the in-repo encoder (conv)",
                              choices=RGB_BACKBONES)
    dim: int = param(32, help="ECFR width D", min=4)
    num_blocks: int = param(1, help="HAC blocks per decoder path", min=1)
    max_iter: int = param(250, help="training steps of every head", min=1)
    batch_size: int = param(8, help="head mini-batch size", min=1)
    lr: float = param(2e-3, help="head learning rate", min=1e-8)
    cfm_hidden: int = param(128, help="hidden width of CFM's per-pixel MLPs", min=1)
    coreset_fraction: float = param(0.1, help="PatchCore coreset fraction", min=1e-4, max=1.0)
    sigma: float = param(4.0, help="Gaussian smoothing of anomaly maps (pixels)", min=0.0)
    variants: str = param("none", help="extra ECFR variants to run (strict; fused, the "
                          "control of the cross-modal claims, always runs)",
                          choices=("none", "fused", "strict", "both"))
    num_bootstrap: int = param(200, help="bootstrap resamples", min=10)


TIERS = {
    "smoke": Config(num_classes=2, num_train_per_class=8, num_test_per_class=4, image_size=32,
                    num_seeds=1, feature_width=8, feature_iter=10, dim=8, max_iter=20,
                    cfm_hidden=16, num_bootstrap=20),
    "small": Config(),
    "paper": Config(num_train_per_class=200, num_test_per_class=100, image_size=64,
                    num_seeds=5, feature_width=64, feature_iter=2000, dim=64, num_blocks=2,
                    max_iter=3000, batch_size=16, lr=1e-3, cfm_hidden=256,
                    variants="both", num_bootstrap=1000),
}

_PAIRS = {"same": "same", "cfm": "cfm", "patchcore": "patchcore", "no_afir": "no_afir",
          "no_hac": "no_hac"}  # fmt: skip
METRICS = (
    *(f"{k}_{m}" for m in METHODS for k in ("i_auroc", "p_auroc", "aupro", "shortcut_r")),
    *(f"{k}_gain_vs_{b}" for b in _PAIRS for k in ("i_auroc", "p_auroc")),
    "fused_i_auroc_gain_vs_same", "fused_p_auroc_gain_vs_same",
    "same_i_auroc_gain_vs_cfm", "same_i_auroc_gain_vs_patchcore",
    "shortcut_ratio_gain", "fused_shortcut_ratio_gain",
    "params_ecfr", "params_same", "params_cfm", "params_ratio_cfm_over_ecfr",
    "flops_ecfr", "flops_same", "flops_cfm", "flops_patchcore_knn",
    "flops_ratio_cfm_over_ecfr", "real_hole_fraction",
    "check_auroc_sklearn_diff", "check_aupro_reference_diff", "check_strict_grad_max",
    "check_real_scene_ok",
)  # fmt: skip


@dataclass(frozen=True)
class Row:
    """One method on one seed's test set."""

    method: str
    seed: int
    scores: np.ndarray  # (N,)
    maps: np.ndarray  # (N, H, W) smoothed pixel maps
    grid_err: np.ndarray  # (N, h, w) unsmoothed A on the feature grid


@dataclass(frozen=True)
class Instance:
    seed: int
    labels: np.ndarray
    classes: np.ndarray
    masks: np.ndarray
    cell_anomalous: np.ndarray  # (N, h, w) bool
    cell_normal: np.ndarray
    types: np.ndarray
    channels: tuple[int, int]
    rows: dict


def _features(cfg: Config, ds, seed: int, device: str = "cpu") -> tuple[Features, Features]:
    sub = {k: getattr(cfg, k) for k in ("num_classes", "num_train_per_class",
                                         "num_test_per_class", "image_size", "feature_width",
                                         "feature_iter", "rgb_backbone")}  # fmt: skip

    def compute():
        fx = RGBDFeatureExtractor(width=cfg.feature_width, max_iter=cfg.feature_iter,
                                  rgb_backbone=cfg.rgb_backbone, seed=seed,
                                  device=device).fit(ds.rgb_train, ds.depth_train)
        tr, te = fx.transform(ds.rgb_train, ds.depth_train), fx.transform(ds.rgb_test,
                                                                          ds.depth_test)
        return {"tr_r": tr.rgb.numpy(), "tr_d": tr.depth.numpy(), "te_r": te.rgb.numpy(),
                "te_d": te.depth.numpy()}  # fmt: skip

    a, _ = cached_arrays("ecfr-features", cache_key("ecfr-features", sub, seed,
                                                    modules=_MODULES), compute)  # fmt: skip
    t = {k: torch.as_tensor(v) for k, v in a.items()}
    return Features(t["tr_r"], t["tr_d"]), Features(t["te_r"], t["te_d"])


def _head(cfg: Config, name: str, ftr: Features, seed: int, device: str = "cpu"):
    common = dict(lr=cfg.lr, max_iter=cfg.max_iter, batch_size=cfg.batch_size,
                  sigma=cfg.sigma, seed=seed, device=device)  # fmt: skip
    if name == "cfm":
        det = CFMDetector(dim=cfg.cfm_hidden, **common)
    else:
        det = ECFRDetector(dim=cfg.dim, num_blocks=cfg.num_blocks, **HEADS[name], **common)
    c_r, c_d = ftr.rgb.shape[1], ftr.depth.shape[1]
    key = cache_key(f"ecfr-head-{name}", {**asdict(cfg), "seed": seed, "c": (c_r, c_d)}, seed,
                    modules=_MODULES)  # fmt: skip
    model, _ = cached_module(f"ecfr-head-{name}", key, lambda: det.build(c_r, c_d),
                             lambda m: det.train_head(m, ftr))  # fmt: skip
    det.model_ = model.cpu().eval()
    return det


def _instance(cfg: Config, s: int, device: str = "cpu") -> Instance:
    """Seed ``s``: the data, the frozen encoders, every trained head and PatchCore."""
    extra = {"none": (), "fused": (), "strict": ("strict",),
             "both": ("strict",)}[cfg.variants]  # fused always runs: the control
    seed = cfg.seed * 1000 + s
    ds = make_synthetic_3dad(num_classes=cfg.num_classes,
                             num_train_per_class=cfg.num_train_per_class,
                             num_test_per_class=cfg.num_test_per_class,
                             image_size=cfg.image_size, seed=seed)  # fmt: skip
    ftr, fte = _features(cfg, ds, seed, device)
    h = fte.rgb.shape[2]
    cover = F.adaptive_avg_pool2d(torch.as_tensor(ds.mask_test[:, None], dtype=torch.float32),
                                  h)[:, 0].numpy()  # fmt: skip
    rows = {}
    for name in (*[m for m in HEADS if m not in ("fused", "strict") or m in extra],
                 "cfm"):  # fmt: skip
        det = _head(cfg, name, ftr, seed, device)
        o = det.score_features(fte, image_size=cfg.image_size)
        err = o.rgb_map + o.depth_map  # r on the summed error for every head (CFM too)
        rows[name] = Row(name, seed, o.image_score, o.pixel_map, err)
    pc = PatchCoreDetector(coreset_fraction=cfg.coreset_fraction, sigma=cfg.sigma,
                           seed=seed).fit_features(ftr, ds.class_train)  # fmt: skip
    o = pc.score_features(fte, ds.class_test, image_size=cfg.image_size)
    rows["patchcore"] = Row("patchcore", seed, o.image_score, o.pixel_map, o.rgb_map)
    rows["_bank"] = sum(b.n_samples_fit_ for b in pc.banks_.values()) / len(pc.banks_)
    # The control head, trained after every other so that their numbers stay the same:
    # fused decoding, where the target modality reaches its decoder (the shortcut).
    det = _head(cfg, "fused", ftr, seed, device)
    o = det.score_features(fte, image_size=cfg.image_size)
    rows["fused"] = Row("fused", seed, o.image_score, o.pixel_map, o.rgb_map + o.depth_map)
    return Instance(seed, ds.label_test, ds.class_test, ds.mask_test, cover >= 0.5,
                    cover == 0, ds.type_test, (ftr.rgb.shape[1], ftr.depth.shape[1]),
                    rows)  # fmt: skip


def _per_class(fn, inst: Instance, idx: np.ndarray, values) -> float:
    """Mean over classes of ``fn`` on the rows ``idx`` of one instance."""
    out = []
    for c in np.unique(inst.classes[idx]):
        sel = idx[inst.classes[idx] == c]
        try:
            out.append(fn(values, sel))
        except ValueError:  # a resample without both labels
            return float("nan")
    return float(np.mean(out))


def _i_auroc(inst, method, idx):
    s = inst.rows[method].scores
    return _per_class(lambda v, sel: _auroc(v[sel], inst.labels[sel], "labels"), inst, idx, s)


def _p_auroc(inst, method, idx, stride=1):
    m = inst.rows[method].maps[:, ::stride, ::stride]
    g = inst.masks[:, ::stride, ::stride]
    return _per_class(lambda v, sel: _auroc(v[sel].ravel(), g[sel].ravel(), "masks"), inst,
                      idx, m)  # fmt: skip


def _aupro(inst, method, idx):
    m = inst.rows[method].maps
    return _per_class(lambda v, sel: aupro(v[sel], inst.masks[sel]) if inst.masks[sel].any()
                      else float("nan"), inst, idx, m)  # fmt: skip


def _shortcut(inst, method, idx):
    e = inst.rows[method].grid_err[idx]
    a, n = inst.cell_anomalous[idx], inst.cell_normal[idx]
    if not a.any():
        return float("nan")
    return float(e[a].mean() / e[n].mean())


def _flops(module, *inputs) -> int:
    from torch.utils.flop_counter import FlopCounterMode

    with torch.no_grad(), FlopCounterMode(display=False) as fc:
        module(*inputs)
    return int(fc.get_total_flops())


def _costs(cfg: Config, insts: list[Instance], c: tuple[int, int], grid: int) -> dict:
    det = {n: ECFRDetector(dim=cfg.dim, num_blocks=cfg.num_blocks, **HEADS[n]).build(*c)
           for n in ("ecfr", "same")}  # fmt: skip
    det["cfm"] = CFMDetector(dim=cfg.cfm_hidden).build(*c)
    x = (torch.zeros(1, c[0], grid, grid), torch.zeros(1, c[1], grid, grid))
    out = {}
    for n, m in det.items():
        out[f"params_{n}"] = sum(p.numel() for p in m.parameters())
        out[f"flops_{n}"] = _flops(m, *x)
    bank = float(np.mean([i.rows["_bank"] for i in insts]))
    out["flops_patchcore_knn"] = int(2 * bank * (c[0] + c[1]) * grid * grid)  # brute kNN
    out["params_ratio_cfm_over_ecfr"] = out["params_cfm"] / out["params_ecfr"]
    out["flops_ratio_cfm_over_ecfr"] = out["flops_cfm"] / out["flops_ecfr"]
    return out


def aupro_reference(maps, masks, fpr_limit: float = 0.3) -> float:
    """Per-threshold AUPRO (every distinct value a threshold), the oracle of :func:`aupro`."""
    from scipy import ndimage

    regions = [(i, lab == r) for i in range(len(masks))
               for lab, n in [ndimage.label(masks[i])] for r in range(1, n + 1)]  # fmt: skip
    normal = ~masks
    pts = [(0.0, 0.0)]
    for t in np.unique(maps)[::-1]:
        pred = maps >= t
        fpr = (pred & normal).sum() / normal.sum()
        pro = np.mean([(pred[i] & reg).sum() / reg.sum() for i, reg in regions])
        pts.append((fpr, pro))
    x, y = np.array(pts).T
    keep = x <= fpr_limit
    xs, ys = list(x[keep]), list(y[keep])
    if xs[-1] < fpr_limit:
        j = int(np.argmax(x > fpr_limit))
        ys.append(y[j - 1] + (y[j] - y[j - 1]) * (fpr_limit - x[j - 1]) / (x[j] - x[j - 1]))
        xs.append(fpr_limit)
    return float(np.trapezoid(ys, xs) / fpr_limit)


def _checks(cfg: Config, insts: list[Instance]) -> dict:
    from sklearn.metrics import roc_auc_score

    inst = insts[0]
    r = inst.rows["ecfr"]
    d1 = abs(image_auroc(r.scores, inst.labels) - roc_auc_score(inst.labels, r.scores))
    d2 = abs(pixel_auroc(r.maps, inst.masks) - roc_auc_score(inst.masks.ravel(),
                                                            r.maps.ravel()))  # fmt: skip
    q = np.round(r.maps[:, ::4, ::4] / max(r.maps.max(), 1e-12) * 20) / 20  # few thresholds
    g = inst.masks[:, ::4, ::4]
    d3 = abs(aupro(q, g) - aupro_reference(q, g)) if g.any() else float("nan")
    # Strict isolation by autograd on a fresh small head.
    from . import ECFR

    torch.manual_seed(cfg.seed)
    m = ECFR(5, 6, dim=8, num_blocks=1, cross_mode="strict", num_heads=2)
    fr = torch.randn(2, 5, 8, 8, requires_grad=True)
    fd = torch.randn(2, 6, 8, 8, requires_grad=True)
    rec = m(fr, fd)
    g1 = torch.autograd.grad(rec.rgb_hat.sum(), fr, allow_unused=True, retain_graph=True)[0]
    g2 = torch.autograd.grad(rec.depth_hat.sum(), fd, allow_unused=True)[0]
    grad = max(0.0 if g is None else float(g.abs().max()) for g in (g1, g2))
    return {"check_auroc_sklearn_diff": float(max(d1, d2)), "check_aupro_reference_diff": d3,
            "check_strict_grad_max": grad, **_real_scene(cfg)}  # fmt: skip


def _real_scene(cfg: Config) -> dict:
    """The real motorcycle RGB-D scene: holes refused without fill_holes, filled with it."""
    scene = load_stereo_rgbd()
    rgb, depth = scene_patches(scene, num_patches=12, patch_size=32, fill_holes=False,
                               seed=cfg.seed)  # fmt: skip
    depth[:, :2, :2] = np.nan  # make sure every crop has a hole
    try:
        check_rgbd(rgb, depth)
        refused = False
    except ValueError as exc:
        refused = "fill_holes" in str(exc)
    filled = np.isfinite(fill_depth_holes(scene.depth, max_fraction=0.9)).all()
    fx = RGBDFeatureExtractor(width=4, max_iter=5, fill_holes=True, seed=cfg.seed)
    det = ECFRDetector(extractor=fx, dim=8, num_blocks=1, max_iter=5, fill_holes=True,
                       seed=cfg.seed).fit(rgb[:8], depth[:8])  # fmt: skip
    out = det.score(rgb[8:], depth[8:])
    ok = refused and filled and np.isfinite(out.pixel_map).all()
    return {"check_real_scene_ok": float(ok), "real_hole_fraction": scene.hole_fraction}


#: Paired bootstrap comparisons: metric -> (statistic kind, method a, method b); the
#: statistic is a - b over the resampled test images (the shortcut ratio: a / b).
COMPARISONS = {
    **{f"{k}_gain_vs_{b}": (k, "ecfr", b) for b in _PAIRS for k in ("i_auroc", "p_auroc")},
    # the controls: the fused head (the target modality reaches its decoder, the shortcut
    # the cross-modal design removes) against the same-modality baseline, and the
    # same-modality baseline against CFM and PatchCore
    "fused_i_auroc_gain_vs_same": ("i_auroc", "fused", "same"),
    "fused_p_auroc_gain_vs_same": ("p_auroc", "fused", "same"),
    "same_i_auroc_gain_vs_cfm": ("i_auroc", "same", "cfm"),
    "same_i_auroc_gain_vs_patchcore": ("i_auroc", "same", "patchcore"),
    "shortcut_ratio_gain": ("shortcut", "ecfr", "same"),
    "fused_shortcut_ratio_gain": ("shortcut", "fused", "same"),
}


def _stat(kind: str, a: str, b: str):
    if kind == "i_auroc":
        return lambda i, idx: _i_auroc(i, a, idx) - _i_auroc(i, b, idx)
    if kind == "p_auroc":
        return lambda i, idx: _p_auroc(i, a, idx, 4) - _p_auroc(i, b, idx, 4)
    return lambda i, idx: _shortcut(i, a, idx) / _shortcut(i, b, idx)


def _pooled(insts, fn):
    """A statistic of the drawn test images of every seed, averaged over seeds: the
    resampled unit is a (seed, image) pair, pooled over seeds (a seed with fewer than two
    drawn images gives NaN, a replicate the bootstrap drops)."""

    def stat(table) -> float:
        vals = []
        for k, inst in enumerate(insts):
            idx = np.sort([r["index"] for r in table if r["instance"] == k]).astype(int)
            if len(idx) < 2:
                return float("nan")
            vals.append(fn(inst, idx))
        return float(np.mean(vals))

    return stat


def _bootstraps(cfg: Config, insts: list[Instance]) -> list[dict]:
    """Percentile bootstrap over the pooled test images of every comparison."""
    images = Table({"instance": k, "index": j, "image": k * 10**6 + j}
                   for k, inst in enumerate(insts) for j in range(len(inst.labels)))
    methods = insts[0].rows
    rows = []
    for name, (kind, a, b) in COMPARISONS.items():
        if a not in methods or b not in methods:
            continue
        e = images.bootstrap(_pooled(insts, _stat(kind, a, b)), unit="image",
                             num_resamples=cfg.num_bootstrap, seed=cfg.seed)
        rows.append({"metric": name, **e.to_dict()})
    return rows


class ECFRExperiment(Experiment):
    """Units: one per seed (data, frozen encoders, every head and PatchCore), then the
    pooled bootstraps over test images, and the costs and checks."""

    Config, TIERS, METRICS = Config, TIERS, METRICS
    UNIT_TABLE = None
    CAPTIONS: ClassVar[dict[str, str]] = {
        "maps": "Test images of the first seed (one per anomaly type and a normal one): RGB, "
                "depth, ground truth, and the anomaly maps of ECFR and of the same-modality "
                "baseline (the paper's qualitative comparison).",
        "methods": "Mean-over-classes image and pixel AUROC of every method (the paper's "
                   "main table, on our procedural data)."}

    def setup(self, cfg: Config, ctx):
        return {"cfg": cfg, "insts": []}

    def grid(self, cfg: Config):
        return [*({"part": "seed", "seed": s} for s in range(cfg.num_seeds)),
                {"part": "bootstrap"}, {"part": "costs"}]

    def measure(self, unit, st, ctx):
        cfg, insts = st["cfg"], st["insts"]
        if unit["part"] == "bootstrap":
            return [{"kind": "estimate", **r} for r in _bootstraps(cfg, insts)]
        if unit["part"] == "costs":
            grid = insts[0].rows["ecfr"].grid_err.shape[1]
            out = {**_costs(cfg, insts, insts[0].channels, grid), **_checks(cfg, insts),
                   "grid": grid, "c_rgb": insts[0].channels[0],
                   "c_depth": insts[0].channels[1]}
            # the first seed's maps, drawn here where the instance is at hand
            return {"kind": "costs", **out, "maps_png": _fig_maps(insts[0])}
        inst = _instance(cfg, unit["seed"], ctx.device)
        insts.append(inst)
        everything = {"i_auroc": _i_auroc, "p_auroc": _p_auroc, "aupro": _aupro,
                      "shortcut_r": _shortcut}
        idx = np.arange(len(inst.labels))
        return [{"kind": "method", "method": m, **{k: fn(inst, m, idx)
                                                   for k, fn in everything.items()}}
                for m in METHODS if m in inst.rows]

    def summarize(self, table, cfg: Config, ctx):
        per = table.where(kind="method")
        methods = [m for m in METHODS if m in per.unique("method")]
        metrics: dict = {}
        for m in METHODS:
            for k in ("i_auroc", "p_auroc", "aupro", "shortcut_r"):
                metrics[f"{k}_{m}"] = (float(np.mean(per.where(method=m).column(k)))
                                       if m in methods else Estimate.missing(
                                           "variant not run at this tier (Config.variants)"))
        for r in table.where(kind="estimate"):
            e = Estimate.from_dict(r)
            kind, a, b = COMPARISONS[r["metric"]]
            if kind == "p_auroc":
                # the value on the full-resolution maps; the interval from the bootstrap of
                # the same difference on 4x-subsampled maps (as wide as that one)
                full = metrics[f"p_auroc_{a}"] - metrics[f"p_auroc_{b}"]
                e = Estimate(full, min(e.lo, full), max(e.hi, full),
                             e.method + " (pixel maps subsampled 4x)", e.level, e.n)
            metrics[r["metric"]] = e
        costs = table.where(kind="costs").rows[0]
        metrics.update({k: v for k, v in costs.items()
                        if k not in ("kind", "part", "unit_seconds", "grid", "c_rgb",
                                     "c_depth", "maps_png")})
        return metrics

    def tables(self, table, summary, cfg: Config):
        val = {k: (v.value if isinstance(v, Estimate) else v) for k, v in summary.items()}
        methods = table.where(kind="method").unique("method")
        return {"methods": [
            {"method": m, **{k: val[f"{k}_{m}"] for k in ("i_auroc", "p_auroc", "aupro",
                                                          "shortcut_r")},
             **({"params": val[f"params_{m}"], "flops": val[f"flops_{m}"]}
                if f"params_{m}" in val else {})} for m in methods]}  # fmt: skip

    def figures(self, table, summary, cfg: Config):
        rows = self.tables(table, summary, cfg)["methods"]
        return {"maps": table.where(kind="costs").rows[0]["maps_png"],
                "methods": _fig_methods(rows)}

    def notes(self, table, summary, cfg: Config):
        c = table.where(kind="costs").rows[0]
        return (f"seeds: {cfg.num_seeds}; feature grid {c['grid']}x{c['grid']}; features "
                f"{c['c_rgb']}+{c['c_depth']} channels",)


EXPERIMENT = ECFRExperiment()
run = EXPERIMENT.run


def _fig_maps(inst: Instance) -> bytes:
    ds_idx = [int(np.nonzero(inst.labels == 0)[0][0])]
    ds_idx += [int(j) for j in np.nonzero(inst.labels == 1)[0][:4]]
    fig, axes = new_figure(len(ds_idx), width=1.6, height=4.2)
    axes = np.atleast_1d(axes)
    for col, j in enumerate(ds_idx):
        ax = axes[col]
        tiles = [inst.masks[j].astype(float), inst.rows["ecfr"].maps[j], inst.rows["same"].maps[j]]
        ax.imshow(np.concatenate([t / max(t.max(), 1e-12) for t in tiles], 0), cmap="magma")
        ax.set_title(str(inst.types[j]) or "normal", fontsize=8)
        ax.set_xticks([])
        ax.set_yticks([])
    axes[0].set_ylabel("mask / ECFR / same-modality", fontsize=8)
    return figure_png(fig)


def _fig_methods(table) -> bytes:
    fig, (ax,) = new_figure(width=6.0)
    xs = np.arange(len(table))
    ax.bar(xs - 0.2, [r["i_auroc"] for r in table], 0.4, label="image AUROC")
    ax.bar(xs + 0.2, [r["p_auroc"] for r in table], 0.4, label="pixel AUROC")
    ax.set_xticks(xs, [r["method"] for r in table], rotation=30, ha="right", fontsize=8)
    ax.set_ylim(0.4, 1.0)
    ax.legend(fontsize=8)
    return figure_png(fig)
