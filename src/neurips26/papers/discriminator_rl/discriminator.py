"""The discriminator whose logit is DRL's reward, and the metrics it is judged by.

A classifier ``D`` on frozen features ``phi(x)`` separates data (label 1) from the current
model's samples (label 0) with the logistic loss on balanced batches. At the optimum
``D(x) = p_data / (p_data + p_model)``, so its logit estimates the log density ratio
``r(x) = log p_data(x) - log p_model(x)`` (density-ratio estimation by probabilistic
classification). Weight decay and early stopping on a held-out split keep it smooth; a
discriminator that separates the held-out split perfectly (accuracy above 0.999) gives no
usable ratio estimate: it warns and caps the logits (or raises with ``strict=True``).
"""

from __future__ import annotations

import copy
import warnings
from dataclasses import dataclass

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from neurips26.common.torch import make_generator, seeded
from neurips26.common.validation import check_array, check_bool, check_float, check_int, check_seed

#: Held-out accuracy above which a discriminator counts as collapsed.
COLLAPSE_ACCURACY = 0.999


def _features(value, name: str, width: int | None = None) -> np.ndarray:
    if torch.is_tensor(value):
        value = value.detach().cpu().numpy()
    x = check_array(value, name, ndim=2)
    if width is not None and x.shape[1] != width:
        raise ValueError(f"{name}: expected {width} features per row, got {x.shape[1]}")
    if np.abs(x).max() > 1e8:
        raise ValueError(f"{name}: values must be of moderate size (|x| <= 1e8)")
    return x


class Discriminator(nn.Module):
    """``D(phi(x))``: an MLP (or a linear model) on standardised features, one logit out.

    Parameters
    ----------
    num_features : int
        ``F``, the width of ``phi(x)``.
    hidden : int
        Width of the two hidden layers; 0 for a linear (logistic-regression) model.
    mean, scale : array (F,), optional
        Feature standardisation (defaults: 0 and 1), stored as buffers.
    max_logit : float or None
        Cap on ``|logit|`` applied by :meth:`logit` (set when training collapsed).

    Attributes
    ----------
    val_accuracy_ : float
        Held-out accuracy after training (NaN before).
    collapsed_ : bool
        Whether the held-out accuracy exceeded ``COLLAPSE_ACCURACY``.

    Examples
    --------
    >>> d = Discriminator(3, hidden=0)
    >>> d.logit(np.zeros((2, 3))).shape
    (2,)
    """

    def __init__(self, num_features: int, *, hidden: int = 128, mean=None, scale=None,
                 max_logit: float | None = None) -> None:  # fmt: skip
        super().__init__()
        self.num_features = check_int(num_features, "num_features", min=1, max=10**6)
        hidden = check_int(hidden, "hidden", min=0, max=10**5)
        mean = np.zeros(num_features) if mean is None else _features(
            np.asarray(mean)[None], "mean", num_features)[0]  # fmt: skip
        scale = np.ones(num_features) if scale is None else _features(
            np.asarray(scale)[None], "scale", num_features)[0]  # fmt: skip
        if (scale <= 0).any():
            raise ValueError("scale: must be positive")
        self.register_buffer("mean", torch.as_tensor(mean, dtype=torch.float32))
        self.register_buffer("scale", torch.as_tensor(scale, dtype=torch.float32))
        if hidden == 0:
            self.net = nn.Linear(num_features, 1)
        else:
            self.net = nn.Sequential(nn.Linear(num_features, hidden), nn.SiLU(),
                                     nn.Linear(hidden, hidden), nn.SiLU(), nn.Linear(hidden, 1))
        self.max_logit = (None if max_logit is None
                          else check_float(max_logit, "max_logit", min=0, min_inclusive=False))
        self.val_accuracy_ = float("nan")
        self.collapsed_ = False

    def forward(self, feats: torch.Tensor) -> torch.Tensor:
        """Raw logits ``(B,)`` of features ``(B, F)`` (uncapped)."""
        return self.net((feats - self.mean) / self.scale).squeeze(-1)

    @torch.no_grad()
    def logit(self, feats) -> np.ndarray:
        """The reward ``r = logit D(phi(x))`` of features ``(B, F)``, capped when collapsed.

        Returns
        -------
        ndarray (B,)
            Estimates of ``log p_data(x) - log p_model(x)``.
        """
        x = _features(feats, "feats", self.num_features)
        was = self.training
        self.eval()
        out = self(torch.as_tensor(x, dtype=self.mean.dtype)).double().numpy()
        self.train(was)
        if self.max_logit is not None:
            out = np.clip(out, -self.max_logit, self.max_logit)
        return out


def train_discriminator(feats_data, feats_model, *, hidden: int = 128,
                        weight_decay: float = 1e-3, max_iter: int = 500, lr: float = 1e-3,
                        batch_size: int = 256, val_fraction: float = 0.2,
                        patience: int = 5, eval_every: int = 25, max_logit: float = 10.0,
                        strict: bool = False, seed: int = 0) -> Discriminator:  # fmt: skip
    """Fit a :class:`Discriminator`: data = 1, model samples = 0, balanced batches.

    Parameters
    ----------
    feats_data : array (N, F)
        ``phi(x)`` of real data.
    feats_model : array (M, F)
        ``phi(x)`` of the current model's samples.
    hidden : int
        MLP width (0: logistic regression).
    weight_decay : float
        AdamW's decoupled weight decay.
    max_iter : int
        Largest number of steps.
    lr : float
    batch_size : int
        Each batch holds ``batch_size // 2`` points of each class.
    val_fraction : float
        Share of each set held out for early stopping and the collapse check.
    patience : int
        Evaluations without a better held-out loss before stopping (the best state is kept).
    eval_every : int
        Steps between held-out evaluations.
    max_logit : float
        Cap on ``|logit|`` when training collapsed.
    strict : bool
        Raise instead of warning when it collapsed.
    seed : int

    Returns
    -------
    Discriminator
        In eval mode, with ``val_accuracy_`` and ``collapsed_``.

    Raises
    ------
    RuntimeError
        With ``strict=True``, when the held-out accuracy exceeds ``COLLAPSE_ACCURACY``.

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> d = train_discriminator(rng.normal(1, 1, (200, 2)), rng.normal(-1, 1, (200, 2)),
    ...                         hidden=0, max_iter=200, lr=0.05, seed=0)
    >>> 0.7 < d.val_accuracy_ <= 1.0
    True
    """
    a = _features(feats_data, "feats_data")
    b = _features(feats_model, "feats_model", a.shape[1])
    check_int(max_iter, "max_iter", min=1, max=10**6)
    check_float(weight_decay, "weight_decay", min=0, max=10.0)
    check_float(lr, "lr", min=0, max=10.0, min_inclusive=False)
    check_int(batch_size, "batch_size", min=2, max=10**6)
    check_float(val_fraction, "val_fraction", min=0, max=0.9, min_inclusive=False)
    check_int(patience, "patience", min=1, max=10**6)
    check_int(eval_every, "eval_every", min=1, max=10**6)
    check_float(max_logit, "max_logit", min=0, min_inclusive=False, max=1e4)
    check_bool(strict, "strict")
    check_seed(seed)
    if min(len(a), len(b)) < 4:
        raise ValueError("feats_data, feats_model: need at least 4 rows each")
    rng = np.random.default_rng(seed)

    def split(x):
        p = rng.permutation(len(x))
        k = max(1, round(val_fraction * len(x)))
        return x[p[k:]], x[p[:k]]

    a_tr, a_va = split(a)
    b_tr, b_va = split(b)
    both = np.concatenate([a_tr, b_tr])
    scale = both.std(0)
    scale = np.where(scale > 1e-8 * max(1.0, float(np.abs(both).max())), scale, 1.0)
    with seeded(seed):
        disc = Discriminator(a.shape[1], hidden=hidden, mean=both.mean(0), scale=scale)
    ta, tb = (torch.as_tensor(v, dtype=torch.float32) for v in (a_tr, b_tr))
    va = torch.as_tensor(np.concatenate([a_va, b_va]), dtype=torch.float32)
    vy = torch.cat([torch.ones(len(a_va)), torch.zeros(len(b_va))])
    # Class-balanced held-out loss: each class weighs one half.
    vw = torch.cat([torch.full((len(a_va),), 0.5 / len(a_va)),
                    torch.full((len(b_va),), 0.5 / len(b_va))])  # fmt: skip
    gen = make_generator(seed)
    opt = torch.optim.AdamW(disc.parameters(), lr=lr, weight_decay=weight_decay)
    half = batch_size // 2
    best, best_state, bad = float("inf"), copy.deepcopy(disc.state_dict()), 0

    def held_out():
        with torch.no_grad():
            z = disc(va)
            loss = float((vw * F.binary_cross_entropy_with_logits(z, vy, reduction="none")).sum())
            acc = float((vw * ((z > 0).float() == vy).float()).sum())
        return loss, acc

    disc.train()
    for step in range(max_iter):
        ia = torch.randint(len(ta), (half,), generator=gen)
        ib = torch.randint(len(tb), (half,), generator=gen)
        z = disc(torch.cat([ta[ia], tb[ib]]))
        target = torch.cat([torch.ones(half), torch.zeros(half)])
        loss = F.binary_cross_entropy_with_logits(z, target)  # logistic loss
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        if (step + 1) % eval_every == 0 or step == max_iter - 1:
            vloss, _ = held_out()
            if vloss < best - 1e-6:
                best, best_state, bad = vloss, copy.deepcopy(disc.state_dict()), 0
            else:
                bad += 1
                if bad >= patience:
                    break
    disc.load_state_dict(best_state)
    disc.eval()
    _, acc = held_out()
    disc.val_accuracy_ = acc
    disc.collapsed_ = acc > COLLAPSE_ACCURACY
    if disc.collapsed_:
        msg = (f"discriminator: held-out accuracy {acc:.4f} > {COLLAPSE_ACCURACY}: its logits "
               "are not a usable log-ratio estimate")
        if strict:
            raise RuntimeError(msg)
        warnings.warn(msg + f"; capping them at +-{max_logit:g}", RuntimeWarning, stacklevel=2)
        disc.max_logit = float(max_logit)
    return disc


@dataclass(frozen=True)
class PrecisionRecall:
    """k-NN manifold precision and recall (Kynkaanniemi et al., 2019).

    Attributes
    ----------
    precision : float
        Share of generated points inside the real manifold (realism).
    recall : float
        Share of real points inside the generated manifold (coverage).
    """

    precision: float
    recall: float


def precision_recall(feats_real, feats_fake, *, k: int = 3) -> PrecisionRecall:
    """Improved precision and recall from k-NN balls in feature space.

    Parameters
    ----------
    feats_real : array (N, F)
    feats_fake : array (M, F)
    k : int
        Neighbour whose distance sets each ball's radius.

    Returns
    -------
    PrecisionRecall

    Examples
    --------
    >>> x = np.random.default_rng(0).normal(size=(200, 2))
    >>> pr = precision_recall(x, x + 100.0)
    >>> pr.precision, pr.recall
    (0.0, 0.0)
    """
    from sklearn.neighbors import NearestNeighbors

    real = _features(feats_real, "feats_real")
    fake = _features(feats_fake, "feats_fake", real.shape[1])
    k = check_int(k, "k", min=1, max=1000)
    if min(len(real), len(fake)) <= k:
        raise ValueError(f"feats_real, feats_fake: need more than k={k} rows each")

    def inside(ref, query):
        nn_ = NearestNeighbors(n_neighbors=k + 1).fit(ref)
        radius = nn_.kneighbors(ref)[0][:, k]  # k-th neighbour beside the point itself
        if len(query) * len(ref) <= 4 * 10**6:
            from scipy.spatial.distance import cdist

            return float(np.mean((cdist(query, ref) <= radius[None]).any(1)))
        d, i = NearestNeighbors(n_neighbors=min(len(ref), 50)).fit(ref).kneighbors(query)
        return float(np.mean((d <= radius[i]).any(1)))  # the 50 nearest balls only

    return PrecisionRecall(inside(real, fake), inside(fake, real))
