"""BETA and its baselines: test-time adaptation of a classifier seen only through an API.

BETA (arXiv 2604.15609, "Adapting in the Dark") adapts a black box ``f`` that returns
probabilities and nothing else. A small white-box *steering model* ``s`` runs locally and
opens a gradient pathway: for each test batch the API is queried once, at ``x + delta``
(``delta`` an input-space prompt learned so far); its probabilities are *harmonized* with
the steering model's (a product of experts), the harmonized prediction is the answer, and
its entropy over the most confident samples (*filtering*) plus a *consistency* term
between it and the steering model's predictions on augmented views is minimised with
respect to the prompt and the steering model's normalisation parameters. One API call per
test sample; the black box's gradients are never needed.

Baselines behind the same ``step(x) -> TTAOutput`` / ``run(stream) -> TTAResult`` interface:
:class:`NoAdaptation`, :class:`PosthocEM` (Saerens et al.'s prior re-estimation on the
API's outputs), :class:`ZOOPrompt` (an input prompt tuned by SPSA, ``2q + 1`` calls per
sample) and :class:`TENT` (entropy minimisation of a white-box model's BatchNorm affine
parameters: on the black box a white-box reference; on the steering model alone the
entropy-only ablation).

References
----------
Wang, D. et al. "Tent: Fully Test-Time Adaptation by Entropy Minimization." ICLR 2021.
Shu, M. et al. "Test-Time Prompt Tuning for Zero-Shot Generalization." NeurIPS 2022.
Oh, C. et al. "BlackVIP: Black-Box Visual Prompting." CVPR 2023.
Saerens, M. et al. "Adjusting the Outputs of a Classifier to New a Priori Probabilities."
Neural Computation 2002.
"""

from __future__ import annotations

import copy
import math
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from neurips26.common.torch import get_device, make_generator
from neurips26.common.validation import (
    check_array,
    check_bool,
    check_float,
    check_int,
    check_rng,
    check_seed,
)

from .blackbox import check_images, check_probabilities

#: Largest learning rate accepted (every optimiser here diverges far below it).
MAX_LR = 100.0
#: Most SPSA probe directions accepted per step.
MAX_DIRECTIONS = 10_000
#: Most augmented views accepted per step.
MAX_VIEWS = 64
#: Most adaptation steps accepted per batch.
MAX_STEPS = 1000
#: Floor under probabilities before taking logs.
TINY = 1e-12


# ------------------------------------------------------------------ functional core


def _as_2d_tensor(value, name: str, dtype=None) -> torch.Tensor:
    if torch.is_tensor(value):
        t = value
        if t.ndim != 2 or t.numel() == 0:
            raise ValueError(f"{name}: expected a non-empty (B, K) tensor, got {tuple(t.shape)}")
        if not torch.isfinite(t).all():
            raise ValueError(f"{name}: must be finite (it holds NaN or inf)")
        return t if dtype is None else t.to(dtype)
    arr = check_array(value, name, ndim=2)
    return torch.as_tensor(arr, dtype=dtype or torch.float32)


def entropy(log_probs: torch.Tensor) -> torch.Tensor:
    """Shannon entropy ``H(p) = -sum_k p_k log p_k`` of each row, from ``log p`` ``(B, K)``.

    Examples
    --------
    >>> float(entropy(torch.log(torch.full((1, 4), 0.25)))[0])  # log 4
    1.3862943649291992
    """
    log_probs = _as_2d_tensor(log_probs, "log_probs")
    return -(log_probs.exp() * log_probs).sum(1)


def harmonize(p_black, logits_steer: torch.Tensor, *, weight: float = 1.0) -> torch.Tensor:
    """Prediction harmonization: the normalised product of the two models' predictions.

    ``log p_h = log p_f + w log p_s - logsumexp(log p_f + w log p_s)`` with
    ``p_s = softmax(z)``. Gradients flow only into the steering logits ``z``; the
    black-box term is a constant anchor. ``d log p_h[k] / d z_j = w (delta_kj - p_h[j])``.

    Parameters
    ----------
    p_black : (B, K) array or tensor
        The black box's probabilities ``p_f`` (no gradient).
    logits_steer : (B, K) tensor
        The steering model's logits ``z``.
    weight : float
        ``w >= 0``; ``w = 0`` returns ``log p_f``.

    Returns
    -------
    (B, K) tensor
        ``log p_h`` (each row's logsumexp is 0).

    Examples
    --------
    >>> p = torch.tensor([[0.5, 0.5]])
    >>> harmonize(p, torch.tensor([[2.0, 0.0]])).exp().round(decimals=4)
    tensor([[0.8808, 0.1192]])
    """
    z = _as_2d_tensor(logits_steer, "logits_steer")
    if not z.is_floating_point():
        raise TypeError(f"logits_steer: expected a floating tensor, got {z.dtype}")
    pf = _as_2d_tensor(p_black, "p_black", dtype=z.dtype).to(z.device).detach()
    if pf.shape != z.shape:
        raise ValueError(f"p_black: shape {tuple(pf.shape)} does not match logits_steer "
                         f"{tuple(z.shape)} (same batch and number of classes needed)")
    if (pf < 0).any():
        raise ValueError("p_black: probabilities must be non-negative")
    w = check_float(weight, "weight", min=0.0, max=1e6)
    # Eq. (harmonization, inferred product of experts): log p_f + w log p_s, renormalised.
    return torch.log_softmax(torch.log(pf.clamp_min(TINY)) + w * torch.log_softmax(z, 1), 1)


def confidence_filter(log_probs: torch.Tensor, *, keep: float = 0.5) -> torch.Tensor:
    """TPT-style filtering: a mask of the ``ceil(keep * B)`` lowest-entropy rows.

    Parameters
    ----------
    log_probs : (B, K) tensor
    keep : float
        ``rho`` in ``(0, 1]``.

    Returns
    -------
    (B,) bool tensor

    Examples
    --------
    >>> lp = torch.log(torch.tensor([[0.5, 0.5], [0.99, 0.01], [0.9, 0.1]]))
    >>> confidence_filter(lp, keep=0.5).tolist()
    [False, True, True]
    """
    lp = _as_2d_tensor(log_probs, "log_probs")
    keep = check_float(keep, "keep", min=0.0, max=1.0, min_inclusive=False)
    b = len(lp)
    n = min(b, math.ceil(round(keep * b, 9)))
    h = entropy(lp.detach())
    order = torch.argsort(h, stable=True)
    mask = torch.zeros(b, dtype=torch.bool, device=lp.device)
    mask[order[:n]] = True
    return mask


def shift_views(x: torch.Tensor, num_views: int, *, max_shift: int = 2,
                generator: torch.Generator) -> list[torch.Tensor]:  # fmt: skip
    """``num_views`` randomly translated copies of a batch (edge-replicated), one shift each.

    Parameters
    ----------
    x : (B, C, H, W) tensor
    num_views : int
    max_shift : int
        Largest translation in pixels along each axis.
    generator : torch.Generator
    """
    if not torch.is_tensor(x) or x.ndim != 4:
        raise ValueError(f"x: expected a (B, C, H, W) tensor, got {getattr(x, 'shape', x)!r}")
    num_views = check_int(num_views, "num_views", min=0, max=MAX_VIEWS)
    s = check_int(max_shift, "max_shift", min=0, max=min(x.shape[2], x.shape[3]))
    if s == 0:
        return [x for _ in range(num_views)]
    h, w = x.shape[2:]
    padded = F.pad(x, (s, s, s, s), mode="replicate")
    out = []
    for _ in range(num_views):
        dy, dx = torch.randint(0, 2 * s + 1, (2,), generator=generator).tolist()
        out.append(padded[:, :, dy : dy + h, dx : dx + w])
    return out


def spsa_gradient(fn: Callable[[np.ndarray], np.ndarray], theta, *, num_directions: int = 10,
                  perturbation: float = 0.01, rng: np.random.Generator) -> np.ndarray:  # fmt: skip
    """SPSA estimate of ``grad fn(theta)`` from ``2 q`` evaluations (Spall, 1992).

    ``g = (1/q) sum_i [fn(theta + c u_i) - fn(theta - c u_i)] / (2 c) u_i`` with Rademacher
    ``u_i``; unbiased for quadratic ``fn``, bias ``O(c^2)`` for smooth ones.

    Parameters
    ----------
    fn : callable
        Maps a stack of parameters ``(2q, *theta.shape)`` to ``2q`` scalar values (one
        batched evaluation, so a black box sees one request).
    theta : ndarray
    num_directions : int
        ``q``.
    perturbation : float
        ``c > 0``.
    rng : numpy.random.Generator

    Returns
    -------
    ndarray, shape of ``theta``
    """
    theta = check_array(theta, "theta", ndim=None)
    q = check_int(num_directions, "num_directions", min=1, max=MAX_DIRECTIONS)
    c = check_float(perturbation, "perturbation", min=0.0, max=1e6, min_inclusive=False)
    rng = check_rng(rng, "rng")
    if not callable(fn):
        raise TypeError(f"fn: expected a callable, got {type(fn).__name__}")
    u = rng.choice(np.array([-1.0, 1.0]), size=(q, *theta.shape))
    probes = np.concatenate([theta + c * u, theta - c * u])  # (2q, ...)
    values = np.asarray(fn(probes), dtype=float).reshape(-1)
    if values.shape != (2 * q,) or not np.isfinite(values).all():
        raise ValueError(f"fn: expected {2 * q} finite values at theta +- c u, got "
                         f"{values[:4]} (shape {values.shape}); check fn and theta")
    diff = (values[:q] - values[q:]) / (2 * c)  # (q,)
    return np.tensordot(diff, u, axes=1) / q


def norm_layers(model: nn.Module) -> list[nn.Module]:
    """The normalisation layers with affine parameters (BatchNorm, GroupNorm, LayerNorm)."""
    kinds = (nn.modules.batchnorm._BatchNorm, nn.GroupNorm, nn.LayerNorm)
    return [m for m in model.modules() if isinstance(m, kinds)
            and getattr(m, "weight", None) is not None]  # fmt: skip


def _configure_norm(model: nn.Module, name: str) -> list[nn.Parameter]:
    """TENT's set-up: freeze all but the norm affine; BatchNorm uses test-batch statistics."""
    layers = norm_layers(model)
    if not layers:
        raise ValueError(f"{name}: has no normalization layers with affine parameters "
                         "(BatchNorm/GroupNorm/LayerNorm) to adapt; add BatchNorm or pass "
                         "adapt_norm=False")  # fmt: skip
    model.requires_grad_(False)
    model.eval()
    params = []
    for m in layers:
        if isinstance(m, nn.modules.batchnorm._BatchNorm):
            m.train()
            m.track_running_stats = False
            m.running_mean = None
            m.running_var = None
        m.weight.requires_grad_(True)
        params.append(m.weight)
        if m.bias is not None:
            m.bias.requires_grad_(True)
            params.append(m.bias)
    return params


def _check_api(api, name: str = "api"):
    if not callable(api) or not hasattr(api, "num_calls"):
        raise TypeError(f"{name}: expected a black-box API (callable with a num_calls "
                        f"counter, e.g. BlackBoxAPI), got {type(api).__name__}")  # fmt: skip
    return api


def _query(api, x: np.ndarray) -> np.ndarray:
    """One API call on ``x``; the counter must grow by exactly ``len(x)``."""
    before = api.num_calls
    p = api(x)
    p = check_probabilities(p, "api output", num_rows=len(x))
    if api.num_calls - before != len(x):
        raise RuntimeError(f"api: counter grew by {api.num_calls - before} for {len(x)} "
                           "samples")  # fmt: skip
    return p


def _forward_time(counter) -> float:
    """Seconds the API reports inside its forward; NaN for an API that does not time itself.

    ``_check_api`` asks only for ``num_calls``: a user's API need not have a
    ``forward_time``, and then the API time and the added latency are not measured.
    """
    t = getattr(counter, "forward_time", None)
    return math.nan if t is None else float(t)


def _mean_entropy(p: np.ndarray) -> float:
    return float(-(p * np.log(np.clip(p, TINY, None))).sum(1).mean())


# ------------------------------------------------------------------ results


@dataclass(frozen=True)
class TTAOutput:
    """One adaptation step on a batch.

    Attributes
    ----------
    pred : (B,) int64 ndarray
        Predicted classes.
    probs : (B, K) float ndarray
        The probabilities the prediction is the argmax of.
    api_calls : int
        Black-box samples queried in this step.
    loss : float
        The adaptation objective at this step (for methods without one, the mean entropy
        of the returned probabilities).
    """

    pred: np.ndarray
    probs: np.ndarray
    api_calls: int
    loss: float


@dataclass(frozen=True)
class TTAResult:
    """A whole stream.

    Attributes
    ----------
    accuracy : float
    num_samples : int
    api_calls : int
        Black-box samples queried (forward passes, for a white-box method).
    calls_per_sample : float
    time_per_sample : float
        Wall seconds per sample of the whole method (volatile).
    api_time_per_sample : float
        Of that, seconds inside the black box's forward (or round trip); NaN for an API
        without a ``forward_time`` counter.
    added_latency_per_sample : float
        ``time_per_sample - api_time_per_sample``: what the method adds to the black box
        (NaN where the API time is).
    predictions : (N,) int64 ndarray
    """

    accuracy: float
    num_samples: int
    api_calls: int
    calls_per_sample: float
    time_per_sample: float
    api_time_per_sample: float
    added_latency_per_sample: float
    predictions: np.ndarray


def make_stream(x, y, *, batch_size: int = 32) -> list[tuple[np.ndarray, np.ndarray]]:
    """Cut ``(x, y)`` into consecutive batches (the last may be smaller).

    Examples
    --------
    >>> [len(b) for b, _ in make_stream(np.zeros((5, 1, 2, 2)), np.zeros(5, int), batch_size=2)]
    [2, 2, 1]
    """
    x = check_array(x, "x", ndim=4).astype(np.float32)
    y = check_array(y, "y", ndim=1, dtype=None)
    if y.dtype.kind not in "iu":
        raise TypeError(f"y: expected integer labels, got dtype {y.dtype}")
    if len(x) != len(y):
        raise ValueError(f"x, y: expected the same length, got {len(x)} and {len(y)}")
    b = check_int(batch_size, "batch_size", min=1)
    return [(x[i : i + b], y[i : i + b]) for i in range(0, len(x), b)]


class _Method:
    """Shared ``run``: accuracy, counted calls and timing over a stream of (x, y)."""

    _counter = None  # object with num_calls and, optionally, forward_time

    def step(self, x) -> TTAOutput:  # pragma: no cover - abstract
        raise NotImplementedError

    def run(self, stream: Iterable) -> TTAResult:
        """Adapt online over ``stream`` (an iterable of ``(x, y)`` batches)."""
        preds, labels = [], []
        c = self._counter
        calls0, api0 = c.num_calls, _forward_time(c)
        tic = time.perf_counter()
        for item in stream:
            if not isinstance(item, (tuple, list)) or len(item) != 2:
                raise TypeError("stream: expected an iterable of (x, y) batches")
            out = self.step(item[0])
            preds.append(out.pred)
            labels.append(np.asarray(item[1]).reshape(-1))
        total = time.perf_counter() - tic
        if not preds:
            raise ValueError("stream: is empty")
        pred, y = np.concatenate(preds), np.concatenate(labels)
        if len(pred) != len(y):
            raise ValueError(f"stream: {len(y)} labels for {len(pred)} samples")
        n = len(y)
        calls = c.num_calls - calls0
        api_t = _forward_time(c) - api0
        return TTAResult(float((pred == y).mean()), n, int(calls), calls / n, total / n,
                         api_t / n, (total - api_t) / n, pred)  # fmt: skip


class _ForwardCounter:
    """Counts a white-box model's forward passes like an API counts calls."""

    def __init__(self):
        self.num_calls = 0
        self.forward_time = 0.0


# ------------------------------------------------------------------ BETA


class BETA(_Method):
    """Black-box test-time adaptation steered by a local white-box model.

    Parameters
    ----------
    api : BlackBoxAPI or HTTPBlackBox
        The black box ``f``: numpy ``(B, C, H, W)`` in, probabilities ``(B, K)`` out.
    steering_model : nn.Module
        The steering model ``s`` (logits ``(B, K)``), pretrained on the source data; a
        copy is adapted, the argument is left untouched.
    lr : float
        Adam's step size for the prompt and the norm parameters (0: harmonize and filter
        without adapting, the control of every gain).
    keep : float
        ``rho``: share of the batch (lowest harmonized entropy) in the loss.
    consistency_weight : float
        ``lambda_c``.
    harmonize_weight : float
        ``w`` of the steering model in the product of experts.
    num_views : int
        ``V``: view 0 is the test batch, views ``1..V-1`` random translations of it.
    prompt_eps : float
        The prompt ``delta`` is clipped to ``[-eps, eps]`` (0: no prompt).
    adapt_norm : bool
        Also adapt the steering model's normalisation affine parameters (with test-batch
        BatchNorm statistics); the model must have such layers.
    episodic : bool
        Reset the prompt and the steering model before every batch.
    max_shift : int
        Largest translation of an augmented view, in pixels.
    steps : int
        Adam steps per batch, all on the batch's one API answer (more steps add no call).
    seed : int
    device : {"cpu", "cuda"}
        Where the steering model runs.

    Attributes
    ----------
    steering_ : nn.Module
        The adapted copy of the steering model.
    prompt_ : (1, C, H, W) tensor or None
        The input prompt ``delta`` (created on the first batch).

    Examples
    --------
    >>> from neurips26.common.models import SmallCNN
    >>> from neurips26.papers.beta_tta.blackbox import BlackBoxAPI
    >>> api = BlackBoxAPI(SmallCNN(1, (4,), 3, batch_norm=True))
    >>> beta = BETA(api, SmallCNN(1, (2,), 3, batch_norm=True))
    >>> out = beta.step(np.random.default_rng(0).random((4, 1, 8, 8), np.float32))
    >>> out.pred.shape, out.api_calls, api.num_calls
    ((4,), 4, 4)
    """

    def __init__(self, api, steering_model: nn.Module, *, lr: float = 1e-3, keep: float = 0.5,
                 consistency_weight: float = 1.0, harmonize_weight: float = 1.0,
                 num_views: int = 2, prompt_eps: float = 0.5, adapt_norm: bool = True,
                 episodic: bool = False, max_shift: int = 2, steps: int = 1, seed: int = 0,
                 device: str = "cpu") -> None:  # fmt: skip
        self.api = _check_api(api)
        if not isinstance(steering_model, nn.Module):
            raise TypeError(f"steering_model: expected a torch.nn.Module, got "
                            f"{type(steering_model).__name__}")  # fmt: skip
        self.lr = check_float(lr, "lr", min=0.0, max=MAX_LR)
        self.steps = check_int(steps, "steps", min=1, max=MAX_STEPS)
        self.keep = check_float(keep, "keep", min=0.0, max=1.0, min_inclusive=False)
        self.consistency_weight = check_float(consistency_weight, "consistency_weight",
                                              min=0.0, max=1e6)  # fmt: skip
        self.harmonize_weight = check_float(harmonize_weight, "harmonize_weight", min=0.0,
                                            max=1e6)  # fmt: skip
        self.num_views = check_int(num_views, "num_views", min=1, max=MAX_VIEWS)
        self.prompt_eps = check_float(prompt_eps, "prompt_eps", min=0.0, max=1e3)
        self.adapt_norm = check_bool(adapt_norm, "adapt_norm")
        self.episodic = check_bool(episodic, "episodic")
        self.max_shift = check_int(max_shift, "max_shift", min=0, max=64)
        self.seed = check_seed(seed)
        self.device = get_device(device)
        if self.prompt_eps == 0 and not self.adapt_norm:
            raise ValueError("prompt_eps: is 0 and adapt_norm is False: nothing to adapt")
        self._source = steering_model
        self._counter = self.api
        self._init_state()
        if self.adapt_norm:
            _configure_norm(copy.deepcopy(steering_model), "steering_model")  # validates

    def _init_state(self) -> None:
        self.steering_ = copy.deepcopy(self._source).to(self.device)
        self._params = (_configure_norm(self.steering_, "steering_model") if self.adapt_norm
                        else [])  # fmt: skip
        if not self.adapt_norm:
            self.steering_.requires_grad_(False).eval()
        self.prompt_ = None
        self._opt = None
        self._gen = make_generator(self.seed)

    def _ensure_prompt(self, shape) -> None:
        if self.prompt_ is None:
            self.prompt_ = torch.zeros((1, *shape), device=self.device, requires_grad=True)
            params = list(self._params) + ([self.prompt_] if self.prompt_eps > 0 else [])
            self._opt = torch.optim.Adam(params, lr=self.lr)
        elif tuple(self.prompt_.shape[1:]) != tuple(shape):
            raise ValueError(f"x: expected images of shape (B, "
                             f"{', '.join(map(str, self.prompt_.shape[1:]))}), got "
                             f"(B, {', '.join(map(str, shape))})")  # fmt: skip

    def step(self, x) -> TTAOutput:
        """Predict a batch with one API call, then adapt on it.

        Parameters
        ----------
        x : (B, C, H, W) array or tensor

        Raises
        ------
        ValueError
            For a batch of the wrong shape or with NaN, for API outputs that are not
            probabilities (NaN included: nothing is adapted on them), or a steering model
            whose number of classes differs from the API's.
        """
        arr = check_images(x, "x", shape=getattr(self.api, "input_shape", None))
        if self.episodic:
            self._init_state()
        self._ensure_prompt(arr.shape[1:])
        xt = torch.from_numpy(arr).to(self.device)  # (B, C, H, W)
        # 1. The one API call of this batch, at x + delta_{b-1}.
        p_f = _query(self.api, (xt + self.prompt_).detach().cpu().numpy())  # (B, K)
        probs, value = None, math.nan
        for _ in range(self.steps):  # every step reuses this batch's one API answer
            loss, log_ph = self._objective(xt, p_f)
            if probs is None:  # the prediction: before any adaptation on this batch
                probs = log_ph.detach().exp().cpu().numpy().astype(np.float64)
                value = float(loss.detach())
            if not math.isfinite(float(loss.detach())):
                raise ValueError(f"loss: non-finite adaptation loss {float(loss)}; lower lr?")
            # 6. One Adam step on (delta, steering affine), then clip the prompt.
            self._opt.zero_grad(set_to_none=True)
            loss.backward()
            self._opt.step()
            with torch.no_grad():
                self.prompt_.clamp_(-self.prompt_eps, self.prompt_eps)
        return TTAOutput(probs.argmax(1), probs, len(arr), value)

    def _objective(self, xt: torch.Tensor, p_f: np.ndarray):
        """Steps 2-5 at the current prompt and steering model: ``(loss, log p_h)``."""
        delta = self.prompt_
        # 2. The steering model on view 0 (the batch itself) with the prompt.
        z0 = self.steering_(xt + delta)  # (B, K)
        if z0.ndim != 2 or z0.shape[1] != p_f.shape[1]:
            raise ValueError(f"steering_model: outputs {tuple(z0.shape)} logits, the API "
                             f"{p_f.shape[1]} classes (they must agree)")  # fmt: skip
        # 3. Prediction harmonization: log p_h = normalize(log p_f + w log p_s).
        log_ph = harmonize(p_f, z0, weight=self.harmonize_weight)  # (B, K)
        # 4. Filtering: the rho share of lowest harmonized entropy.
        mask = confidence_filter(log_ph.detach(), keep=self.keep)  # (B,)
        # 5. Loss = mean_{kept} H(p_h) + lambda_c mean_v KL(p_h || p_s^(v)).
        loss = entropy(log_ph)[mask].mean()
        if self.num_views > 1 and self.consistency_weight > 0:
            target = log_ph.detach()
            views = shift_views(xt, self.num_views - 1, max_shift=self.max_shift,
                                generator=self._gen)  # fmt: skip
            kl = 0.0
            for v in views:
                log_ps = torch.log_softmax(self.steering_(v + delta), 1)
                kl = kl + (target.exp() * (target - log_ps)).sum(1)[mask].mean()
            loss = loss + self.consistency_weight * kl / len(views)
        return loss, log_ph


# ------------------------------------------------------------------ baselines


class NoAdaptation(_Method):
    """The black box as it is: one call per sample, its argmax."""

    def __init__(self, api) -> None:
        self.api = _check_api(api)
        self._counter = self.api

    def step(self, x) -> TTAOutput:
        arr = check_images(x, "x", shape=getattr(self.api, "input_shape", None))
        p = _query(self.api, arr)
        return TTAOutput(p.argmax(1), p, len(arr), _mean_entropy(p))


class PosthocEM(_Method):
    """Post-hoc output refinement: EM re-estimation of the test class prior (Saerens et al.).

    On every batch the prior is re-estimated by EM over all API outputs seen so far (no
    extra calls) and the outputs are re-weighted by ``prior / source_prior``.

    Parameters
    ----------
    api : BlackBoxAPI
    max_iter : int
        EM iterations per batch.
    tol : float
        Stop when the prior moves less than this (L1).
    source_prior : (K,) array, optional
        The training class prior (uniform if omitted).
    """

    def __init__(self, api, *, max_iter: int = 20, tol: float = 1e-6, source_prior=None) -> None:
        self.api = _check_api(api)
        self.max_iter = check_int(max_iter, "max_iter", min=1, max=100_000)
        self.tol = check_float(tol, "tol", min=0.0, max=1.0)
        self.source_prior = (None if source_prior is None
                             else check_probabilities(np.asarray(source_prior)[None],
                                                      "source_prior")[0])  # fmt: skip
        self._counter = self.api
        self._seen: list[np.ndarray] = []

    def step(self, x) -> TTAOutput:
        arr = check_images(x, "x", shape=getattr(self.api, "input_shape", None))
        p = _query(self.api, arr)
        self._seen.append(p)
        allp = np.concatenate(self._seen)  # (N_seen, K)
        k = p.shape[1]
        src = self.source_prior if self.source_prior is not None else np.full(k, 1.0 / k)
        if len(src) != k:
            raise ValueError(f"source_prior: has {len(src)} classes, the API {k}")
        prior = src.copy()
        for _ in range(self.max_iter):
            w = allp * (prior / src)  # E-step: posterior under the new prior
            w /= w.sum(1, keepdims=True)
            new = w.mean(0)  # M-step
            done = np.abs(new - prior).sum() < self.tol
            prior = new
            if done:
                break
        q = p * (prior / src)
        q /= q.sum(1, keepdims=True)
        return TTAOutput(q.argmax(1), q, len(arr), _mean_entropy(q))


class ZOOPrompt(_Method):
    """Zeroth-order prompt tuning: SPSA on the mean entropy of ``f(x + delta)``.

    Per batch: one call at the current prompt (the prediction) and ``2 q`` probe calls for
    the SPSA gradient, i.e. ``2 q + 1`` calls per sample; then one Adam step on ``delta``.

    Parameters
    ----------
    api : BlackBoxAPI
    num_directions : int
        ``q``.
    lr : float
        Adam step size on the prompt.
    perturbation : float
        SPSA's ``c``.
    prompt_eps : float
        ``delta`` is clipped to ``[-eps, eps]``.
    seed : int
    """

    def __init__(self, api, *, num_directions: int = 10, lr: float = 1e-2,
                 perturbation: float = 0.05, prompt_eps: float = 0.5, seed: int = 0) -> None:
        self.api = _check_api(api)
        self.num_directions = check_int(num_directions, "num_directions", min=1,
                                        max=MAX_DIRECTIONS)  # fmt: skip
        self.lr = check_float(lr, "lr", min=0.0, max=MAX_LR, min_inclusive=False)
        self.perturbation = check_float(perturbation, "perturbation", min=0.0, max=1e3,
                                        min_inclusive=False)  # fmt: skip
        self.prompt_eps = check_float(prompt_eps, "prompt_eps", min=0.0, max=1e3,
                                      min_inclusive=False)  # fmt: skip
        self.seed = check_seed(seed)
        self._counter = self.api
        self._rng = np.random.default_rng(self.seed)
        self.prompt_ = None
        self._opt = None

    def step(self, x) -> TTAOutput:
        arr = check_images(x, "x", shape=getattr(self.api, "input_shape", None))
        if self.prompt_ is None:
            self.prompt_ = torch.zeros((1, *arr.shape[1:]), dtype=torch.float64,
                                       requires_grad=True)  # fmt: skip
            self._opt = torch.optim.Adam([self.prompt_], lr=self.lr)
        delta = self.prompt_.detach().numpy()[0]  # (C, H, W)
        p = _query(self.api, (arr + delta).astype(np.float32))  # the prediction call
        b = len(arr)

        def mean_entropy(deltas):  # (2q, C, H, W) -> (2q,), one batched request
            batch = (arr[None] + deltas[:, None]).reshape(-1, *arr.shape[1:])
            probs = _query(self.api, batch.astype(np.float32)).reshape(len(deltas), b, -1)
            return -(probs * np.log(np.clip(probs, TINY, None))).sum(2).mean(1)

        g = spsa_gradient(mean_entropy, delta, num_directions=self.num_directions,
                          perturbation=self.perturbation, rng=self._rng)  # fmt: skip
        self._opt.zero_grad(set_to_none=True)
        self.prompt_.grad = torch.as_tensor(g[None])
        self._opt.step()
        with torch.no_grad():
            self.prompt_.clamp_(-self.prompt_eps, self.prompt_eps)
        loss = _mean_entropy(p)
        return TTAOutput(p.argmax(1), p, b * (2 * self.num_directions + 1), loss)


class TENT(_Method):
    """TENT: entropy minimisation of a white-box model's normalisation affine parameters.

    Needs the model's weights and gradients: on the black box it is a white-box reference
    (not possible through an API); on the steering model alone it is BETA's entropy-only
    ablation. A copy of ``model`` is adapted. Forward passes are counted in ``num_calls``.

    Parameters
    ----------
    model : nn.Module
        With BatchNorm (or GroupNorm/LayerNorm) layers.
    lr : float
        Adam's step size.
    episodic : bool
        Reset before each batch.
    device : {"cpu", "cuda"}
    """

    def __init__(self, model: nn.Module, *, lr: float = 1e-3, episodic: bool = False,
                 device: str = "cpu") -> None:  # fmt: skip
        if not isinstance(model, nn.Module):
            raise TypeError(f"model: expected a torch.nn.Module, got {type(model).__name__}")
        self.lr = check_float(lr, "lr", min=0.0, max=MAX_LR, min_inclusive=False)
        self.episodic = check_bool(episodic, "episodic")
        self.device = get_device(device)
        self._source = model
        _configure_norm(copy.deepcopy(model), "model")  # validates
        self._counter = _ForwardCounter()
        self._init_state()

    def _init_state(self) -> None:
        self.model_ = copy.deepcopy(self._source).to(self.device)
        self._opt = torch.optim.Adam(_configure_norm(self.model_, "model"), lr=self.lr)

    def step(self, x) -> TTAOutput:
        arr = check_images(x, "x")
        if self.episodic:
            self._init_state()
        tic = time.perf_counter()
        logits = self.model_(torch.from_numpy(arr).to(self.device))  # (B, K)
        self._counter.forward_time += time.perf_counter() - tic
        self._counter.num_calls += len(arr)
        log_p = torch.log_softmax(logits, 1)
        loss = entropy(log_p).mean()
        self._opt.zero_grad(set_to_none=True)
        loss.backward()
        self._opt.step()
        probs = log_p.detach().exp().cpu().numpy().astype(np.float64)
        return TTAOutput(probs.argmax(1), probs, len(arr), float(loss.detach()))

    @property
    def num_calls(self) -> int:
        """Forward passes so far."""
        return self._counter.num_calls
