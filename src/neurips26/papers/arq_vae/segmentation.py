"""Temporal action segmentation: a small MS-TCN, its metrics, and an unsupervised segmenter.

- :class:`MSTCN`: multi-stage temporal convolutional network (Farha and Gall, 2019):
  stages of dilated residual 1-D convolutions, each refining the previous stage's
  probabilities; trained with cross-entropy plus the truncated MSE smoothing loss.
- :func:`segmentation_metrics`: frame accuracy, segmental Edit score and F1@k with the
  MS-TCN definitions (greedy IoU matching of predicted to ground-truth segments).
- :func:`unsupervised_segment`: k-means over frame features, temporal mode smoothing and
  Hungarian matching of clusters to actions (the label-free use of the memory).
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from neurips26.common.plateau import Plateau
from neurips26.common.torch import make_generator
from neurips26.common.validation import check_array, check_float, check_int, check_seed

from .model import _check_videos, _fused_adamw


class _Stage(nn.Module):
    def __init__(self, in_dim: int, num_classes: int, channels: int, num_layers: int):
        super().__init__()
        self.inp = nn.Conv1d(in_dim, channels, 1)
        self.layers = nn.ModuleList(
            nn.ModuleDict({"dil": nn.Conv1d(channels, channels, 3, padding=2 ** i,
                                            dilation=2 ** i),
                           "out": nn.Conv1d(channels, channels, 1)})
            for i in range(num_layers))
        self.out = nn.Conv1d(channels, num_classes, 1)

    def forward(self, x):  # (B, C_in, T) -> (B, classes, T)
        h = self.inp(x)
        for layer in self.layers:
            h = h + layer["out"](F.relu(layer["dil"](h)))  # dilated residual layer
        return self.out(h)


class MSTCN(nn.Module):
    """Multi-stage TCN for frame-wise action labels.

    Parameters
    ----------
    dim : int
        Input feature dimension D.
    num_classes : int
    num_stages : int
        Stages (the first sees features, the others the previous probabilities).
    num_layers : int
        Dilated residual layers per stage (dilations 1, 2, 4, ...).
    channels : int
    seed : int
        Initialisation seed.

    Examples
    --------
    >>> net = MSTCN(8, 3, num_stages=2, num_layers=2, channels=8)
    >>> [tuple(o.shape) for o in net(torch.randn(1, 20, 8))]
    [(1, 20, 3), (1, 20, 3)]
    """

    def __init__(self, dim: int, num_classes: int, *, num_stages: int = 2, num_layers: int = 8,
                 channels: int = 64, seed: int = 0):
        super().__init__()
        self.dim = check_int(dim, "dim", min=1, max=65_536)
        self.num_classes = check_int(num_classes, "num_classes", min=2, max=100_000)
        num_stages = check_int(num_stages, "num_stages", min=1, max=16)
        num_layers = check_int(num_layers, "num_layers", min=1, max=16)
        channels = check_int(channels, "channels", min=1, max=4096)
        gen = torch.Generator().manual_seed(check_int(seed, "seed", min=0, max=2**63 - 1))
        self.stages = nn.ModuleList(
            [_Stage(self.dim, self.num_classes, channels, num_layers)]
            + [_Stage(self.num_classes, self.num_classes, channels, num_layers)
               for _ in range(num_stages - 1)])
        for p in self.parameters():
            if p.ndim > 1:
                nn.init.kaiming_uniform_(p, a=5 ** 0.5, generator=gen)
            else:
                nn.init.zeros_(p)

    def forward(self, x: torch.Tensor) -> list[torch.Tensor]:
        """Logits of every stage: (B, T, D) -> list of (B, T, classes)."""
        if not torch.is_tensor(x) or x.ndim != 3 or x.shape[2] != self.dim:
            raise ValueError(f"x must be a tensor of shape (B, T, {self.dim})")
        h = self.stages[0](x.transpose(1, 2))
        outs = [h]
        for stage in self.stages[1:]:
            h = stage(F.softmax(h, dim=1))
            outs.append(h)
        return [o.transpose(1, 2) for o in outs]

    def predict(self, videos) -> list[np.ndarray]:
        """Frame labels (argmax of the last stage) of each video (T_i, D)."""
        videos = _check_videos(videos, dim=self.dim)
        self.eval()
        with torch.no_grad():
            return [self(torch.as_tensor(v)[None])[-1][0].argmax(-1).numpy() for v in videos]


def _mstcn_loss(model, batch, smooth: float):
    x, y = batch  # (B, T, D), (B, T)
    loss = 0.0
    for out in model(x):
        loss = loss + F.cross_entropy(out.reshape(-1, out.shape[-1]), y.reshape(-1))
        logp = F.log_softmax(out, -1)
        # truncated MSE between neighbouring log-probabilities (tau = 4)
        d = (logp[:, 1:] - logp[:, :-1].detach()) ** 2
        loss = loss + smooth * d.clamp(max=16).mean()
    return loss


@dataclass(frozen=True)
class MSTCNTraining:
    """What :func:`train_mstcn` did.

    Attributes
    ----------
    losses : tuple of float
        Training loss of every step.
    num_steps : int
        Steps taken (the cap ``max_iter`` or fewer, when the plateau rule stopped).
    plateau : bool
        Whether the held-out plateau rule stopped training (False: the cap ended it, or
        no held-out videos were given).
    val_steps, val_losses : tuple
        Steps at which the held-out loss was evaluated, and its values.
    best_step : int
        The step whose weights the model holds at the end (the lowest held-out loss;
        the last step without held-out videos).
    """

    losses: tuple
    num_steps: int
    plateau: bool
    val_steps: tuple
    val_losses: tuple
    best_step: int

    @property
    def stopped_early(self) -> bool:
        """Alias of :attr:`plateau` (``TrainResult``'s name)."""
        return self.plateau

    @property
    def final_loss(self) -> float:
        """Mean training loss of the last 10% of steps (at least one)."""
        k = max(1, len(self.losses) // 10)
        return float(np.mean(self.losses[-k:])) if self.losses else float("nan")


@torch.no_grad()
def _heldout_loss(model, xs, ys, smooth: float, device) -> float:
    """Frame-weighted mean of the MS-TCN loss over whole held-out videos."""
    model.eval()
    tot, n = 0.0, 0
    for x, y in zip(xs, ys, strict=True):
        tot += float(_mstcn_loss(model, (x[None].to(device), y[None].to(device)), smooth)) \
            * len(y)
        n += len(y)
    model.train()
    return tot / n


def train_mstcn(model: MSTCN, videos, labels, *, max_iter: int = 300, lr: float = 5e-3,
                window: int = 256, batch_size: int = 8, smooth: float = 0.15,
                val_videos=None, val_labels=None, eval_every: int = 20, patience: int = 5,
                min_delta: float = 0.01, seed: int = 0,
                device: str = "cpu") -> MSTCNTraining:
    """Train ``model`` in place on random windows of labelled videos.

    With held-out videos, training stops at a plateau: the held-out loss (cross-entropy
    plus smoothing, on whole videos) is evaluated every ``eval_every`` steps, and training
    stops once ``patience`` evaluations in a row fail to fall below ``(1 - min_delta)``
    times the last value that did (:class:`~neurips26.common.plateau.Plateau`); the model
    then holds the weights of its best evaluation. ``max_iter`` is a cap.

    Parameters
    ----------
    model : MSTCN
    videos : list of ndarray (T_i, D)
    labels : list of ndarray (T_i,), ints in [0, num_classes)
    max_iter, lr, window, batch_size : int, float, int, int
        Step cap, Adam's learning rate, window frames, windows per step.
    smooth : float
        Weight of the truncated MSE smoothing loss (0.15 in MS-TCN).
    val_videos : list of ndarray (T_j, D), optional
        Held-out videos for the plateau rule (none: train ``max_iter`` steps).
    val_labels : list of ndarray (T_j,), optional
        Their frame labels (required with ``val_videos``).
    eval_every, patience : int
        Steps between held-out evaluations; evaluations without improvement before stopping.
    min_delta : float
        Relative improvement that counts (in [0, 1)).
    seed : int
    device : {"cpu", "cuda"}
        Where to train; the model is moved back to the CPU afterwards.

    Returns
    -------
    MSTCNTraining

    Examples
    --------
    >>> net = MSTCN(4, 2, num_stages=1, num_layers=1, channels=4)
    >>> v = [np.random.default_rng(0).normal(size=(30, 4))]
    >>> y = [np.r_[np.zeros(15), np.ones(15)]]
    >>> train_mstcn(net, v, y, max_iter=2).num_steps
    2
    >>> r = train_mstcn(net, v, y, max_iter=400, val_videos=v, val_labels=y, eval_every=5)
    >>> len(r.val_losses) == r.num_steps // 5
    True
    """
    from neurips26.common.train import train

    if not isinstance(model, MSTCN):
        raise TypeError(f"model must be an MSTCN, got {type(model).__name__}")
    videos = _check_videos(videos, dim=model.dim)
    labels = _check_labels(labels, "labels", [len(v) for v in videos], model.num_classes)
    max_iter = check_int(max_iter, "max_iter", min=1, max=10_000_000)
    lr = check_float(lr, "lr", min=0, min_inclusive=False, max=10.0)
    window = check_int(window, "window", min=2, max=1_000_000)
    batch_size = check_int(batch_size, "batch_size", min=1, max=100_000)
    smooth = check_float(smooth, "smooth", min=0, max=1e3)
    eval_every = check_int(eval_every, "eval_every", min=1, max=10_000_000)
    patience = check_int(patience, "patience", min=1, max=100_000)
    min_delta = check_float(min_delta, "min_delta", min=0, max=1, max_inclusive=False)
    if (val_videos is None) != (val_labels is None):
        raise ValueError("val_videos and val_labels must be given together")
    if val_videos is not None:
        val_videos = _check_videos(val_videos, "val_videos", dim=model.dim)
        lens = [len(v) for v in val_videos]
        val_labels = _check_labels(val_labels, "val_labels", None, model.num_classes)
        if [len(y) for y in val_labels] != lens:
            raise ValueError(f"val_labels (frames {[len(y) for y in val_labels]}) do not "
                             f"match val_videos (frames {lens})")
    gen = make_generator(check_seed(seed))
    xs = [torch.as_tensor(v) for v in videos]
    ys = [torch.as_tensor(y) for y in labels]
    w = int(min(window, min(len(v) for v in videos)))

    def batches():
        while True:
            ids = torch.randint(len(xs), (batch_size,), generator=gen).tolist()
            bx, by = [], []
            for i in ids:
                s = int(torch.randint(0, len(xs[i]) - w + 1, (1,), generator=gen))
                bx.append(xs[i][s:s + w])
                by.append(ys[i][s:s + w])
            yield torch.stack(bx), torch.stack(by)

    steps = []
    rule = Plateau(patience, min_delta)
    state = {"best_step": 0, "weights": None}
    callback = None
    if val_videos is not None:
        vx = [torch.as_tensor(v) for v in val_videos]
        vy = [torch.as_tensor(y) for y in val_labels]

        def callback(step, loss, m):
            if (step + 1) % eval_every:
                return False
            dev = next(m.parameters()).device
            v = _heldout_loss(m, vx, vy, smooth, dev)
            v = v if math.isfinite(v) else math.inf  # a diverged evaluation never counts
            steps.append(step + 1)
            if v < rule.best:  # the best evaluation so far: keep its weights
                state.update(best_step=step + 1,
                             weights={k: t.detach().clone() for k, t in m.state_dict().items()})
            return rule.update(v)

    result = train(model, batches(), max_iter=max_iter, lr=lr, seed=seed, device=device,
                   optimizer=_fused_adamw(model, lr),
                   loss_fn=lambda m, b: _mstcn_loss(m, b, smooth), callback=callback,
                   desc="ms-tcn")
    model.cpu()
    if state["weights"] is not None:
        model.load_state_dict({k: t.cpu() for k, t in state["weights"].items()})
    best = state["best_step"] if state["weights"] is not None else result.num_steps
    return MSTCNTraining(result.losses, result.num_steps, bool(result.stopped_early),
                         tuple(steps), tuple(rule.values), int(best))


def _label_list(labels, name) -> list:
    """One label sequence (1-D array, list of ints) or a list of them, as a list."""
    if isinstance(labels, np.ndarray) and labels.ndim == 1:
        return [labels]
    if isinstance(labels, (list, tuple)) and len(labels) and all(
            np.ndim(e) == 0 and not isinstance(e, (str, bytes)) for e in labels):
        return [np.asarray(labels)]
    if not isinstance(labels, (list, tuple)):
        raise TypeError(f"{name} must be a 1-D label array or a list of them, got "
                        f"{type(labels).__name__}")
    if len(labels) == 0:
        raise ValueError(f"{name} must hold at least one video")
    return list(labels)


def _check_labels(labels, name, lengths=None, num_classes=None) -> list[np.ndarray]:
    labels = _label_list(labels, name)
    if lengths is None:
        lengths = [None] * len(labels)
    if len(labels) != len(lengths):
        raise ValueError(f"{name} has {len(labels)} videos, expected {len(lengths)}")
    out = []
    for i, (y, n) in enumerate(zip(labels, lengths, strict=True)):
        a = check_array(y, f"{name}[{i}]", ndim=1, dtype=None, min=-2**31, max=2**31)
        if a.dtype.kind == "f" and np.any(a != np.round(a)):
            raise ValueError(f"{name}[{i}] must hold integer labels")
        a = a.astype(np.int64)
        if n is not None and len(a) != n:
            raise ValueError(f"{name}[{i}] has {len(a)} frames, expected {n}")
        if num_classes is not None and (a.min() < 0 or a.max() >= num_classes):
            raise ValueError(f"{name}[{i}] must lie in [0, {num_classes})")
        out.append(a)
    return out


def _pair(pred, gt):
    pred_l = _check_labels(pred, "pred")
    if gt is None or isinstance(gt, (str, bytes)):
        raise TypeError("gt must be a label array or a list of them")
    n_gt = len(_label_list(gt, "gt"))
    if n_gt != len(pred_l):
        raise ValueError(f"pred has {len(pred_l)} videos but gt has {n_gt}")
    return pred_l, _check_labels(gt, "gt", [len(p) for p in pred_l])


def segments(labels) -> list[tuple[int, int, int]]:
    """Runs of equal labels as (label, start, end) with end exclusive.

    >>> segments(np.array([0, 0, 1, 1, 1, 0]))
    [(0, 0, 2), (1, 2, 5), (0, 5, 6)]
    """
    y = check_array(labels, "labels", ndim=1, dtype=None)
    cut = np.flatnonzero(np.diff(y)) + 1
    starts = np.r_[0, cut]
    ends = np.r_[cut, len(y)]
    return [(int(y[s]), int(s), int(e)) for s, e in zip(starts, ends, strict=True)]


def _levenshtein(a: list, b: list) -> int:
    d = np.arange(len(b) + 1)
    for i, x in enumerate(a, 1):
        prev, d[0] = d.copy(), i
        for j, y in enumerate(b, 1):
            d[j] = min(prev[j] + 1, d[j - 1] + 1, prev[j - 1] + (x != y))
    return int(d[-1])


def _f1_counts(pred, gt, overlap: float, background) -> tuple[int, int, int]:
    """MS-TCN's greedy matching: tp, fp, fn at IoU threshold ``overlap``."""
    p = [s for s in segments(pred) if s[0] != background]
    g = [s for s in segments(gt) if s[0] != background]
    used = np.zeros(len(g), bool)
    tp = fp = 0
    for lab, s, e in p:
        best, idx = 0.0, -1
        for j, (gl, gs, ge) in enumerate(g):
            if gl != lab:
                continue
            inter = max(0, min(e, ge) - max(s, gs))
            union = max(e, ge) - min(s, gs)
            iou = inter / union
            if iou > best:
                best, idx = iou, j
        if best >= overlap and not used[idx]:
            tp += 1
            used[idx] = True
        else:
            fp += 1
    return tp, fp, len(g) - int(used.sum())


@dataclass(frozen=True)
class SegMetrics:
    """Segmentation scores in percent (0-100), as TAS papers report them.

    ``f1`` maps each overlap threshold k to F1@k (tp, fp, fn summed over videos, as in
    MS-TCN's evaluation); ``edit`` is the mean over videos of the segmental edit score.
    """

    accuracy: float
    edit: float
    f1: dict

    def f1_at(self, k: float) -> float:
        """F1 at overlap ``k`` (e.g. 0.5)."""
        for key, v in self.f1.items():
            if abs(key - k) < 1e-9:
                return v
        raise KeyError(f"F1@{k} was not computed; thresholds: {sorted(self.f1)}")


def segmentation_metrics(pred, gt, *, overlaps=(0.1, 0.25, 0.5),
                         background: int | None = None) -> SegMetrics:
    """Frame accuracy, Edit and F1@k of predicted against ground-truth frame labels.

    Parameters
    ----------
    pred, gt : ndarray (T,) of int, or lists of them (one per video)
    overlaps : tuple of float
        IoU thresholds k in (0, 1].
    background : int, optional
        A label left out of Edit and F1 (MS-TCN ignores background in some data sets).

    Returns
    -------
    SegMetrics

    Examples
    --------
    >>> m = segmentation_metrics(np.array([0, 0, 1, 1, 1, 1, 2, 2]),
    ...                          np.array([0, 0, 0, 1, 1, 1, 2, 2]))
    >>> m.accuracy, m.edit, m.f1_at(0.5)
    (87.5, 100.0, 100.0)
    """
    pred_l, gt_l = _pair(pred, gt)
    ov = check_array(overlaps, "overlaps", ndim=1, min=0, max=1)
    if np.any(ov <= 0):
        raise ValueError("overlaps must lie in (0, 1]")
    if background is not None:
        background = check_int(background, "background", min=-2**31, max=2**31)
    correct = sum(int((p == g).sum()) for p, g in zip(pred_l, gt_l, strict=True))
    total = sum(len(g) for g in gt_l)
    edits = []
    for p, g in zip(pred_l, gt_l, strict=True):
        a = [s[0] for s in segments(p) if s[0] != background]
        b = [s[0] for s in segments(g) if s[0] != background]
        n = max(len(a), len(b))
        edits.append(100.0 if n == 0 else (1 - _levenshtein(a, b) / n) * 100)
    f1 = {}
    for k in ov.tolist():
        tp = fp = fn = 0
        for p, g in zip(pred_l, gt_l, strict=True):
            a, b, c = _f1_counts(p, g, k, background)
            tp, fp, fn = tp + a, fp + b, fn + c
        prec = tp / (tp + fp) if tp + fp else 0.0
        rec = tp / (tp + fn) if tp + fn else 0.0
        f1[float(k)] = 0.0 if prec + rec == 0 else 200.0 * prec * rec / (prec + rec)
    return SegMetrics(100.0 * correct / total, float(np.mean(edits)), f1)


def mode_filter(labels, width: int) -> np.ndarray:
    """Temporal smoothing: each frame takes the most common label in a centred window.

    >>> mode_filter(np.array([0, 0, 1, 0, 0, 2, 2, 2]), 3).tolist()
    [0, 0, 0, 0, 0, 2, 2, 2]
    """
    y = check_array(labels, "labels", ndim=1, dtype=None, min=0, max=100_000).astype(np.int64)
    width = check_int(width, "width", min=1, max=100_000)
    h = width // 2
    k = int(y.max()) + 1
    onehot = np.eye(k, dtype=np.int64)[y]
    c = np.cumsum(np.vstack([np.zeros((1, k), np.int64), onehot]), 0)
    lo = np.clip(np.arange(len(y)) - h, 0, len(y))
    hi = np.clip(np.arange(len(y)) + h + 1, 0, len(y))
    return (c[hi] - c[lo]).argmax(1)


def unsupervised_segment(videos, num_clusters: int, *, smooth: int = 15,
                         seed: int = 0) -> list[np.ndarray]:
    """Label-free segmentation: k-means over all frames, then mode smoothing per video.

    Returns cluster ids (not action labels); :func:`hungarian_relabel` maps them to
    actions for evaluation.

    >>> v = [np.r_[np.zeros((10, 2)), np.ones((10, 2)) * 5]]
    >>> y = unsupervised_segment(v, 2, smooth=3)[0]
    >>> len(set(y[:10].tolist())), bool(y[0] != y[-1])
    (1, True)
    """
    from sklearn.cluster import KMeans

    videos = _check_videos(videos)
    num_clusters = check_int(num_clusters, "num_clusters", min=1, max=10_000)
    smooth = check_int(smooth, "smooth", min=1, max=100_000)
    seed = check_seed(seed)
    x = np.concatenate(videos).astype(np.float64)
    if num_clusters > len(x):
        raise ValueError(f"num_clusters {num_clusters} exceeds the {len(x)} frames of videos")
    km = KMeans(num_clusters, n_init=3, random_state=seed % 2**32).fit(x)
    off = np.r_[0, np.cumsum([len(v) for v in videos])]
    return [mode_filter(km.labels_[a:b], smooth) for a, b in itertools.pairwise(off)]


def hungarian_relabel(pred, gt) -> list[np.ndarray]:
    """Map cluster ids to labels one-to-one, maximising frame agreement over all videos."""
    from scipy.optimize import linear_sum_assignment

    pred_l, gt_l = _pair(pred, gt)
    p, g = np.concatenate(pred_l), np.concatenate(gt_l)
    if p.min() < 0 or p.max() > 100_000:
        raise ValueError("pred must hold labels in [0, 100000]")
    if g.min() < 0 or g.max() > 100_000:
        raise ValueError("gt must hold labels in [0, 100000]")
    C = np.zeros((p.max() + 1, g.max() + 1))
    np.add.at(C, (p, g), 1)
    r, c = linear_sum_assignment(-C)
    mapping = np.full(p.max() + 1, -1, np.int64)
    mapping[r] = c
    unmatched = mapping < 0
    mapping[unmatched] = C[unmatched].argmax(1) if unmatched.any() else mapping[unmatched]
    return [mapping[q] for q in pred_l]
