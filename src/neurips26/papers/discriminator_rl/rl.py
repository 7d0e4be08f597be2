"""Discriminator-guided RL (DRL): KL-regularised fine-tuning with a discriminator's logit.

The KL-regularised objective ``max_pi E_pi[r] - beta KL(pi || p_ref)`` has the optimum
``pi*(x) ∝ p_ref(x) exp(r(x) / beta)`` (Eq. 1). With ``r = log p_data / p_ref`` (what the
discriminator's logit estimates) and ``beta = 1`` the optimum is ``p_data`` itself. Each
DRL round therefore

1. draws ``M`` samples ``x_i`` (from noise ``x_0^i``) from the current model ``p_ref``,
2. fits a discriminator on ``phi`` features of data against these samples,
3. weighs the samples by the self-normalised ``w_i ∝ exp(r(x_i) / beta)`` (Eq. 2), clipped at
   ``clip / M`` and renormalised, and
4. takes ``S`` optimiser steps of flow matching towards the samples ``x_i`` resampled with
   probability ``w_i``, each paired with fresh noise (or with its own ``x_0^i``), plus,
   optionally, ``anchor`` times the flow-matching loss on data,

the reward-weighted-regression view of KL-regularised RL (Peters and Schaal, 2007). The
on-policy alternative, ``algorithm="policy_gradient"``, samples with an Euler-Maruyama SDE
whose steps are Gaussian policies and takes clipped policy-gradient steps with a
group-normalised advantage and a KL penalty to the round's reference (Flow-GRPO style).
"""

from __future__ import annotations

import copy
import math
import warnings
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import torch
from sklearn.base import BaseEstimator
from torch import nn

from neurips26.common.stats import frechet_distance
from neurips26.common.torch import make_generator
from neurips26.common.validation import (
    check_array,
    check_callable,
    check_choice,
    check_float,
    check_int,
    check_seed,
)

from .discriminator import train_discriminator
from .flow import (
    MAX_SAMPLES,
    _check_model,
    _data_array,
    _labels,
    flow_matching_loss,
    sample,
)

ALGORITHMS = ("reward_weighted", "policy_gradient")
#: ESS below this share of M triggers a warning (the update then fits a handful of samples).
LOW_ESS = 0.05


@dataclass(frozen=True)
class TiltWeights:
    """Self-normalised, clipped weights of a batch of samples.

    Attributes
    ----------
    weights : ndarray (M,)
        Non-negative, summing to 1, each at most ``clip / M``.
    ess : float
        Effective sample size ``1 / sum w_i^2``.
    """

    weights: np.ndarray
    ess: float

    @property
    def ess_fraction(self) -> float:
        """``ess / M``."""
        return self.ess / len(self.weights)


def tilt_weights(rewards, *, beta: float = 1.0, clip: float = 20.0) -> TiltWeights:
    """Weights ``w_i = softmax(r_i / beta)``, clipped at ``clip / M`` and renormalised.

    Self-normalised importance weights from ``p_ref`` to ``p_ref exp(r / beta)`` (Eq. 2).
    The clip-and-renormalise step is repeated until no weight exceeds the cap (a
    water-filling that ends in at most ``M`` passes).

    Parameters
    ----------
    rewards : array (M,)
        ``r(x_i)``, finite.
    beta : float
        KL weight, > 0.
    clip : float
        Largest weight as a multiple of ``1 / M`` (>= 1; 1 gives uniform weights).

    Returns
    -------
    TiltWeights

    Examples
    --------
    >>> tilt_weights(np.zeros(4)).weights.tolist()
    [0.25, 0.25, 0.25, 0.25]
    >>> w = tilt_weights(np.array([0.0, 0.0, 10.0]), clip=1.5).weights
    >>> np.round(w, 4).tolist()
    [0.25, 0.25, 0.5]
    """
    r = check_array(rewards, "rewards", ndim=1, min_size=2)
    beta = check_float(beta, "beta", min=0, min_inclusive=False, max=1e6)
    clip = check_float(clip, "clip", min=1.0, max=1e12)
    m = len(r)
    z = r / beta
    w = np.exp(z - z.max())  # Eq. (2): w ∝ exp(r / beta)
    w /= w.sum()
    cap = clip / m
    for _ in range(m):
        over = w > cap * (1 + 1e-12)
        if not over.any():
            break
        free = ~over & (w < cap)
        excess = (w[over] - cap).sum()
        w[over] = cap
        if not free.any():
            break
        w[free] += excess * w[free] / w[free].sum()
    w /= w.sum()
    return TiltWeights(w, float(1.0 / (w**2).sum()))


def _features(phi, x: np.ndarray, name: str = "phi") -> np.ndarray:
    """``phi(x)`` as a finite 2-D float array (identity when ``phi`` is None)."""
    if phi is None:
        return x
    f = phi(x)
    if torch.is_tensor(f):
        f = f.detach().cpu().numpy()
    f = np.asarray(f, dtype=np.float64)
    if f.ndim != 2 or len(f) != len(x):
        raise ValueError(f"{name}: must map (N, D) to (N, F), got shape {f.shape}")
    if not np.isfinite(f).all():
        raise ValueError(f"{name}: returned NaN or inf features")
    return f


@dataclass(frozen=True)
class RoundResult:
    """What one DRL round measured.

    Attributes
    ----------
    reward_mean : float
        Mean reward of the round's samples (before the update).
    ess : float
        Effective sample size of the weights.
    ess_fraction : float
        ``ess / M``.
    disc_accuracy : float
        The discriminator's held-out accuracy.
    fd_phi : float
        Frechet distance in ``phi`` space between data and the round's samples (before).
    loss : float
        Mean training loss of the round's update.
    """

    reward_mean: float
    ess: float
    ess_fraction: float
    disc_accuracy: float
    fd_phi: float
    loss: float


@dataclass(frozen=True)
class DRLResult:
    """A DRL run: the round history and the fine-tuned model.

    Attributes
    ----------
    history : tuple of RoundResult
    model : nn.Module
    """

    history: tuple[RoundResult, ...]
    model: nn.Module


def _sample_labels(y_data: np.ndarray | None, n: int, rng: np.random.Generator):
    if y_data is None:
        return None
    return rng.choice(y_data, size=n, replace=True).astype(np.int64)


def _policy_gradient_update(model, ref, x0, labels, rewards_fn, *, beta, steps, lr,
                            batch_size, num_steps, sigma, ratio_clip, gen):  # fmt: skip
    """Clipped policy-gradient steps on SDE trajectories (Flow-GRPO style).

    Each Euler-Maruyama step ``x_{k+1} ~ N(x_k + v_theta dt, sigma^2 dt I)`` is a Gaussian
    policy; the advantage is the reward normalised within each label's group; the loss is
    ``-min(rho A, clip(rho) A)`` summed over steps plus ``beta`` times the per-step KL to the
    round's reference, ``||v_theta - v_ref||^2 dt / (2 sigma^2)``.
    """
    n, dim = x0.shape
    dt = 1.0 / num_steps
    std = sigma * math.sqrt(dt)
    with torch.no_grad():  # roll out the reference (= old) policy
        xs = [x0]
        x = x0
        for k in range(num_steps):
            t = torch.full((n,), k * dt)
            mean = x + dt * ref(x, t, labels)
            x = mean + std * torch.randn(x.shape, generator=gen)
            xs.append(x)
        traj = torch.stack(xs, 1)  # (n, K+1, D)
    rewards = rewards_fn(traj[:, -1].double().numpy())
    adv = np.zeros(n)
    groups = np.zeros(n, dtype=np.int64) if labels is None else labels.numpy()
    for g in np.unique(groups):  # group-normalised advantage
        m = groups == g
        adv[m] = (rewards[m] - rewards[m].mean()) / (rewards[m].std() + 1e-8)
    adv_t = torch.as_tensor(adv, dtype=torch.float32)

    def logp_and_kl(net, idx):
        xk, xn = traj[idx, :-1].reshape(-1, dim), traj[idx, 1:].reshape(-1, dim)
        t = (torch.arange(num_steps, dtype=torch.float32) * dt).repeat(len(idx))
        yk = labels[idx].repeat_interleave(num_steps) if labels is not None else None
        v = net(xk, t, yk)
        lp = -((xn - xk - dt * v) ** 2).sum(1) / (2 * std**2)  # Gaussian policy, up to consts
        return lp.reshape(len(idx), num_steps), v

    with torch.no_grad():
        old_lp, v_ref = logp_and_kl(ref, torch.arange(n))
        v_ref = v_ref.reshape(n, num_steps, dim)
    opt = torch.optim.AdamW(model.parameters(), lr=lr)
    losses = []
    model.train()
    for _ in range(steps):
        idx = torch.randint(n, (min(batch_size, n),), generator=gen)
        lp, v = logp_and_kl(model, idx)
        ratio = torch.exp((lp - old_lp[idx]).clamp(-20, 20))
        a = adv_t[idx, None]
        pg = -torch.minimum(ratio * a, ratio.clamp(1 - ratio_clip, 1 + ratio_clip) * a)
        kl = ((v.reshape(len(idx), num_steps, dim) - v_ref[idx]) ** 2).sum(-1) * dt / (
            2 * sigma**2)  # fmt: skip
        loss = (pg + beta * kl).sum(1).mean()
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        losses.append(float(loss.detach()))
    model.eval()
    return rewards, float(np.mean(losses))


def drl_round(model: nn.Module, data, phi: Callable | None = None, *, y=None,
              beta: float = 1.0, num_samples: int = 2048, steps_per_round: int = 200,
              clip: float = 20.0, anchor: float = 0.0, lr: float = 1e-4,
              batch_size: int = 256, num_steps: int = 32, algorithm: str = "reward_weighted",
              sigma: float = 0.5, coupling: str = "independent", disc_kw: dict | None = None,
              reward_fn: Callable | None = None, seed: int = 0) -> RoundResult:  # fmt: skip
    """One DRL round, updating ``model`` in place.

    Parameters
    ----------
    model : nn.Module
        The flow model (velocity field with ``dim``), ``p_ref`` of this round.
    data : array (N, D)
        Real data.
    phi : callable or None
        Frozen representation, ``(N, D) array -> (N, F)``; None: raw pixels.
    y : array (N,) of int, optional
        Data labels (class-conditional models sample with labels drawn from them).
    beta : float
        KL weight ``beta`` (> 0).
    num_samples : int
        ``M`` samples per round (>= 2).
    steps_per_round : int
        ``S`` optimiser steps.
    clip : float
        Weight cap as a multiple of ``1 / M`` (>= 1).
    anchor : float
        Weight of a flow-matching loss on data added to each step (0: none).
    lr, batch_size : float, int
        AdamW step and batch of the update.
    num_steps : int
        Sampler steps.
    algorithm : {"reward_weighted", "policy_gradient"}
    sigma : float
        SDE noise scale of the policy-gradient variant.
    coupling : {"independent", "sample"}
        Noise paired with each weighted sample in the update: fresh ``N(0, I)`` noise
        (default; then ``r = 0`` leaves the model a fixed point of the update) or the
        noise ``x_0^i`` the sample was integrated from (a reflow; a partially fitted reflow
        does not preserve the marginals, so it drifts even with ``r = 0``).
    disc_kw : dict, optional
        Keyword arguments of :func:`train_discriminator`.
    reward_fn : callable, optional
        Use ``reward_fn(x (M, D)) -> (M,)`` instead of a discriminator (e.g. a preference
        proxy, for preference post-training); ``phi`` then only serves ``fd_phi``.
    seed : int

    Returns
    -------
    RoundResult

    Examples
    --------
    >>> from neurips26.papers.discriminator_rl import VelocityMLP
    >>> net = VelocityMLP(dim=2, hidden=16)
    >>> data = np.random.default_rng(0).normal(size=(64, 2))
    >>> res = drl_round(net, data, num_samples=32, steps_per_round=2, num_steps=4,
    ...                 disc_kw={"max_iter": 20, "hidden": 8})
    >>> 0 < res.ess <= 32
    True
    """
    model = _check_model(model)
    x_data = _data_array(data, model)
    _labels(y, len(x_data), model)
    y_data = None if y is None else np.asarray(y, dtype=np.int64)
    if phi is not None:
        check_callable(phi, "phi")
    beta = check_float(beta, "beta", min=0, min_inclusive=False, max=1e6)
    m = check_int(num_samples, "num_samples", min=2, max=MAX_SAMPLES)
    steps = check_int(steps_per_round, "steps_per_round", min=1, max=10**6)
    clip = check_float(clip, "clip", min=1.0, max=1e12)
    anchor = check_float(anchor, "anchor", min=0.0, max=1e6)
    check_float(lr, "lr", min=0, max=10.0, min_inclusive=False)
    check_int(batch_size, "batch_size", min=1, max=10**6)
    check_int(num_steps, "num_steps", min=1, max=10**4)
    check_choice(algorithm, "algorithm", ALGORITHMS)
    sigma = check_float(sigma, "sigma", min=0, min_inclusive=False, max=100.0)
    check_choice(coupling, "coupling", ("independent", "sample"))
    if disc_kw is not None and not isinstance(disc_kw, dict):
        raise TypeError(f"disc_kw must be a dict, got {type(disc_kw).__name__}")
    if reward_fn is not None:
        check_callable(reward_fn, "reward_fn")
    check_seed(seed)
    rng = np.random.default_rng(seed)
    labels = _sample_labels(y_data, m, rng)
    feats_data = _features(phi, x_data)
    s = sample(model, num_samples=m, num_steps=num_steps, y=labels,
               seed=int(rng.integers(2**62)))  # fmt: skip
    feats_model = _features(phi, s.x)
    disc_accuracy = float("nan")
    if reward_fn is None:
        disc = train_discriminator(feats_data, feats_model, seed=int(rng.integers(2**62)),
                                   **(disc_kw or {}))  # fmt: skip
        disc_accuracy = disc.val_accuracy_

        def reward(x):
            return disc.logit(_features(phi, x))  # r(x) = logit D(phi(x))
    else:
        def reward(x):
            r = np.asarray(reward_fn(x), dtype=np.float64).reshape(-1)
            if r.shape != (len(x),):
                raise ValueError(f"reward_fn: expected {len(x)} rewards, got shape {r.shape}")
            return r

    fd_phi = (frechet_distance(feats_data, feats_model)
              if feats_data.shape[1] <= 4096 else float("nan"))  # fmt: skip
    gen = make_generator(int(rng.integers(2**62)))
    lab_t = None if labels is None else torch.as_tensor(labels)
    rname = "reward_fn" if reward_fn is not None else "reward"
    if algorithm == "policy_gradient":
        ref = copy.deepcopy(model).eval().requires_grad_(False)
        rewards, loss = _policy_gradient_update(
            model, ref, torch.as_tensor(s.noise, dtype=torch.float32), lab_t,
            lambda x: _checked_rewards(reward(x), rname), beta=beta, steps=steps, lr=lr,
            batch_size=batch_size, num_steps=num_steps, sigma=sigma, ratio_clip=0.2, gen=gen)
        tw = tilt_weights(rewards, beta=beta, clip=clip)
        return RoundResult(float(rewards.mean()), tw.ess, tw.ess_fraction, disc_accuracy,
                           fd_phi, loss)  # fmt: skip
    rewards = _checked_rewards(reward(s.x), rname)
    tw = tilt_weights(rewards, beta=beta, clip=clip)
    if tw.ess_fraction < LOW_ESS:
        warnings.warn(f"ess: effective sample size {tw.ess:.1f} is below {LOW_ESS:.0%} of "
                      f"M={m}; the update fits a handful of samples (raise beta or lower "
                      "clip)", RuntimeWarning, stacklevel=2)  # fmt: skip
    x1 = torch.as_tensor(s.x, dtype=torch.float32)
    x0 = torch.as_tensor(s.noise, dtype=torch.float32)
    probs = torch.as_tensor(tw.weights)
    xd = torch.as_tensor(x_data)
    yd = None if y_data is None else torch.as_tensor(y_data)
    opt = torch.optim.AdamW(model.parameters(), lr=lr)
    losses = []
    model.train()
    for _ in range(steps):
        idx = torch.multinomial(probs, batch_size, replacement=True, generator=gen)
        t = torch.rand(batch_size, generator=gen)
        noise = (x0[idx] if coupling == "sample"
                 else torch.randn((batch_size, x1.shape[1]), generator=gen))  # fmt: skip
        loss = flow_matching_loss(model, noise, x1[idx], t,
                                  None if lab_t is None else lab_t[idx])  # fmt: skip
        if anchor > 0:  # lam_anchor * FM loss on data
            j = torch.randint(len(xd), (batch_size,), generator=gen)
            loss = loss + anchor * flow_matching_loss(
                model, torch.randn((batch_size, xd.shape[1]), generator=gen), xd[j],
                torch.rand(batch_size, generator=gen), None if yd is None else yd[j])
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        losses.append(float(loss.detach()))
    model.eval()
    return RoundResult(float(rewards.mean()), tw.ess, tw.ess_fraction, disc_accuracy, fd_phi,
                       float(np.mean(losses)))  # fmt: skip


def _checked_rewards(r, name: str = "reward") -> np.ndarray:
    r = np.asarray(r, dtype=np.float64).reshape(-1)
    if not np.isfinite(r).all():
        raise ValueError(f"{name}: gave NaN or inf rewards for some samples")
    return r


def discriminator_rl(model: nn.Module, data, phi: Callable | None = None, *, y=None,
                     num_rounds: int = 5, seed: int = 0, **round_kw) -> DRLResult:
    """Run ``num_rounds`` DRL rounds (refitting the discriminator each round), in place.

    Parameters
    ----------
    model : nn.Module
    data : array (N, D)
    phi : callable or None
        Frozen representation (None: raw pixels).
    y : array (N,) of int, optional
    num_rounds : int
    seed : int
    **round_kw
        Passed to :func:`drl_round` (``beta``, ``num_samples``, ``steps_per_round``,
        ``clip``, ``anchor``, ``lr``, ``algorithm``, ...).

    Returns
    -------
    DRLResult

    Examples
    --------
    >>> from neurips26.papers.discriminator_rl import VelocityMLP
    >>> data = np.random.default_rng(0).normal(size=(64, 2))
    >>> res = discriminator_rl(VelocityMLP(dim=2, hidden=8), data, num_rounds=2,
    ...                        num_samples=32, steps_per_round=2, num_steps=4,
    ...                        disc_kw={"max_iter": 10})
    >>> len(res.history)
    2
    """
    check_int(num_rounds, "num_rounds", min=1, max=10**4)
    check_seed(seed)
    rng = np.random.default_rng(seed)
    history = []
    for _ in range(num_rounds):
        history.append(drl_round(model, data, phi, y=y, seed=int(rng.integers(2**62)),
                                 **round_kw))  # fmt: skip
    return DRLResult(tuple(history), model)


class DiscriminatorGuidedRL(BaseEstimator):
    """Discriminator-guided RL as an estimator: ``fit(model, data, phi)`` fine-tunes a copy.

    Parameters
    ----------
    beta : float
        KL weight.
    num_rounds : int
    num_samples : int
        ``M`` per round.
    steps_per_round : int
        ``S``.
    clip : float
        Weight cap (multiple of ``1 / M``).
    anchor : float
        Weight of a data flow-matching term.
    lr : float
    algorithm : {"reward_weighted", "policy_gradient"}
    seed : int

    Attributes
    ----------
    model_ : nn.Module
        The fine-tuned copy.
    history_ : tuple of RoundResult

    Examples
    --------
    >>> from neurips26.papers.discriminator_rl import VelocityMLP
    >>> data = np.random.default_rng(0).normal(size=(64, 2))
    >>> est = DiscriminatorGuidedRL(num_rounds=1, num_samples=32, steps_per_round=2)
    >>> len(est.fit(VelocityMLP(dim=2, hidden=8), data).history_)
    1
    """

    def __init__(self, *, beta: float = 1.0, num_rounds: int = 5, num_samples: int = 2048,
                 steps_per_round: int = 200, clip: float = 20.0, anchor: float = 0.0,
                 lr: float = 1e-4, algorithm: str = "reward_weighted", seed: int = 0) -> None:
        self.beta = beta
        self.num_rounds = num_rounds
        self.num_samples = num_samples
        self.steps_per_round = steps_per_round
        self.clip = clip
        self.anchor = anchor
        self.lr = lr
        self.algorithm = algorithm
        self.seed = seed

    def fit(self, model: nn.Module, data, phi: Callable | None = None, y=None,
            disc_kw: dict | None = None) -> DiscriminatorGuidedRL:  # fmt: skip
        """Fine-tune a deep copy of ``model`` on ``data``; the original is left untouched."""
        _check_model(model)
        res = discriminator_rl(copy.deepcopy(model), data, phi, y=y, num_rounds=self.num_rounds,
                               seed=self.seed, beta=self.beta, num_samples=self.num_samples,
                               steps_per_round=self.steps_per_round, clip=self.clip,
                               anchor=self.anchor, lr=self.lr, algorithm=self.algorithm,
                               disc_kw=disc_kw)  # fmt: skip
        self.model_ = res.model
        self.history_ = res.history
        return self
