"""Simulated SummEval-shaped human ratings and LLM judges with planted pathologies.

SummEval itself is not available offline, so the reproduction draws human ratings from the
many-facet rating scale model with known parameters (systems x documents x raters x
dimensions, 5 categories, one rater planted as misfitting) and draws judges from the same
model with their own thresholds plus one pathology each.

Deviations from the paper
-------------------------
- All data are simulated; the parameters (item spread 0.5, rater spread 0.3, thresholds
  -1.8/-0.6/0.6/1.8, judge threshold jitter 0.4, misfit rate 0.5) are our choices.
- Each simulated judge has its own category thresholds (LLM judges use the scale differently
  from humans), so raw judge histograms differ from human ones even for a faithful judge.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from .mfrm import category_probabilities

__all__ = ["JUDGE_KINDS", "SimulatedBenchmark", "simulate_benchmark", "simulate_judge"]

JUDGE_KINDS = ("faithful", "collapsed", "compressed", "system_biased", "noisy", "shifted")


@dataclass(frozen=True, eq=False)
class SimulatedBenchmark:
    """Simulated human ratings and the parameters they were drawn from.

    Attributes
    ----------
    ratings : DataFrame
        Long table with columns ``system, item, rater, dimension, score``.
    theta : ndarray, shape (num_dimensions, S)
        True system measures per dimension.
    delta : ndarray, shape (num_dimensions, D)
        True item difficulties (sum 0 per dimension).
    rho : ndarray, shape (R,)
        True rater severities (sum 0).
    tau : ndarray, shape (K-1,)
        True thresholds (sum 0).
    misfit_raters : tuple of int
        Raters who answer at random with probability ``misfit_rate``.
    """

    ratings: pd.DataFrame = field(repr=False)
    theta: np.ndarray
    delta: np.ndarray
    rho: np.ndarray
    tau: np.ndarray
    misfit_raters: tuple[int, ...]
    num_categories: int

    @property
    def dimensions(self) -> list[str]:
        return [f"dim{j}" for j in range(self.theta.shape[0])]


def _draw(p: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """One category per row of ``p`` (N, K) -> scores 1..K."""
    u = rng.random((p.shape[0], 1))
    return (np.cumsum(p, axis=1) < u).sum(axis=1).clip(0, p.shape[1] - 1) + 1


def default_thresholds(num_categories: int) -> np.ndarray:
    """Evenly spaced thresholds summing to zero: (-1.8, -0.6, 0.6, 1.8) for K = 5."""
    return np.linspace(-1.8, 1.8, num_categories - 1) if num_categories > 2 else np.zeros(1)


def simulate_benchmark(
    *,
    num_systems: int = 16,
    num_items: int = 100,
    num_raters: int = 3,
    num_dimensions: int = 4,
    num_categories: int = 5,
    theta_sd: float = 1.0,
    item_sd: float = 0.5,
    rater_sd: float = 0.3,
    raters_per_item: int | None = None,
    num_misfit_raters: int = 1,
    misfit_rate: float = 0.5,
    seed: int = 0,
) -> SimulatedBenchmark:
    """Draw human ratings from the many-facet rating scale model.

    Parameters
    ----------
    num_systems, num_items, num_raters, num_dimensions : int
        ``S`` systems, ``D`` documents, ``R`` raters and rating dimensions.
    num_categories : int
        ``K`` ordered categories.
    theta_sd, item_sd, rater_sd : float
        Standard deviations of ``theta``, ``delta`` and ``rho`` (logits).
    raters_per_item : int or None
        Raters drawn at random for each (system, item) summary; None means all raters.
    num_misfit_raters : int
        Raters planted as misfitting (the first ones).
    misfit_rate : float
        Probability that a misfitting rater answers uniformly at random.
    seed : int
        Seed of ``numpy.random.default_rng``.

    Returns
    -------
    SimulatedBenchmark

    Examples
    --------
    >>> bench = simulate_benchmark(num_systems=4, num_items=5, num_dimensions=1, seed=1)
    >>> bench.ratings.shape
    (60, 5)
    """
    for name, v in (("num_systems", num_systems), ("num_items", num_items)):
        if v < 2:
            raise ValueError(f"{name} must be >= 2, got {v}")
    if num_raters < 1 or num_dimensions < 1 or num_categories < 2:
        raise ValueError("num_raters and num_dimensions must be >= 1 and num_categories >= 2")
    if raters_per_item is not None and not 1 <= raters_per_item <= num_raters:
        raise ValueError(f"raters_per_item must be in 1..num_raters, got {raters_per_item}")
    if not 0 <= misfit_rate <= 1 or not 0 <= num_misfit_raters <= num_raters:
        raise ValueError("misfit_rate must be in [0, 1] and num_misfit_raters in 0..num_raters")
    rng = np.random.default_rng(seed)
    tau = default_thresholds(num_categories)
    rho = rng.normal(0.0, rater_sd, num_raters)
    rho -= rho.mean()
    theta = rng.normal(0.0, theta_sd, (num_dimensions, num_systems))
    delta = rng.normal(0.0, item_sd, (num_dimensions, num_items))
    delta -= delta.mean(axis=1, keepdims=True)
    s, d = np.meshgrid(np.arange(num_systems), np.arange(num_items), indexing="ij")
    s, d = s.ravel(), d.ravel()  # (S*D,)
    if raters_per_item is None:
        ss, dd = np.repeat(s, num_raters), np.repeat(d, num_raters)
        rr = np.tile(np.arange(num_raters), s.size)
    else:
        picks = np.argsort(rng.random((s.size, num_raters)), axis=1)[:, :raters_per_item]
        ss, dd = np.repeat(s, raters_per_item), np.repeat(d, raters_per_item)
        rr = picks.ravel()
    frames = []
    for j in range(num_dimensions):
        eta = theta[j, ss] - delta[j, dd] - rho[rr]  # (N,)
        score = _draw(category_probabilities(eta, tau), rng)
        bad = np.isin(rr, np.arange(num_misfit_raters)) & (rng.random(rr.size) < misfit_rate)
        score[bad] = rng.integers(1, num_categories + 1, int(bad.sum()))
        frames.append(
            pd.DataFrame(
                {"system": ss, "item": dd, "rater": rr, "dimension": f"dim{j}", "score": score}
            )
        )
    return SimulatedBenchmark(
        ratings=pd.concat(frames, ignore_index=True),
        theta=theta,
        delta=delta,
        rho=rho,
        tau=tau,
        misfit_raters=tuple(range(num_misfit_raters)),
        num_categories=num_categories,
    )


def simulate_judge(
    kind: str,
    truth: SimulatedBenchmark,
    *,
    seed: int = 0,
    threshold_jitter: float = 0.4,
    slope: float = 0.3,
    bias: float = 1.0,
    num_biased: int = 3,
    noise_scale: float = 1.0,
    shift: float = 1.0,
) -> pd.DataFrame:
    """Ratings of every (system, item, dimension) by one simulated LLM judge.

    The judge rates from ``a (theta_s - delta_d) - rho_J + b_s + e`` with its own thresholds
    ``tau_J = tau + jitter`` (sorted, sum 0); ``kind`` picks the pathology:

    - ``"faithful"``: ``a = 1``, ``rho_J = 0``, ``b = e = 0``;
    - ``"collapsed"``: faithful latent rating, then only categories 3 and 4 are used
      (``<= 3 -> 3``, ``>= 4 -> 4``; for general K the two middle categories);
    - ``"compressed"``: ``a = slope`` (margins shrink);
    - ``"system_biased"``: ``b_s = bias`` for ``num_biased`` random systems;
    - ``"noisy"``: ``e ~ Logistic(0, noise_scale)`` per rating;
    - ``"shifted"``: ``rho_J = shift`` (a harsher judge).

    Parameters
    ----------
    kind : str
        One of :data:`JUDGE_KINDS`.
    truth : SimulatedBenchmark
        The benchmark whose true parameters the judge sees.
    seed : int
        Seed of ``numpy.random.default_rng``.
    threshold_jitter, slope, bias, num_biased, noise_scale, shift : float or int
        Pathology strengths (see above).

    Returns
    -------
    DataFrame
        Columns ``system, item, dimension, score``.
    """
    if kind not in JUDGE_KINDS:
        raise ValueError(f"unknown judge kind {kind!r}; valid kinds: {JUDGE_KINDS}")
    if not isinstance(truth, SimulatedBenchmark):
        raise TypeError("truth must be the SimulatedBenchmark returned by simulate_benchmark")
    rng = np.random.default_rng(seed)
    num_cat = truth.num_categories
    tau_j = np.sort(truth.tau + rng.normal(0.0, threshold_jitter, truth.tau.size))
    tau_j -= tau_j.mean()
    n_dim, n_sys = truth.theta.shape
    n_item = truth.delta.shape[1]
    s, d = np.meshgrid(np.arange(n_sys), np.arange(n_item), indexing="ij")
    s, d = s.ravel(), d.ravel()
    a = slope if kind == "compressed" else 1.0
    rho_j = shift if kind == "shifted" else 0.0
    b = np.zeros(n_sys)
    if kind == "system_biased":
        b[rng.choice(n_sys, size=min(num_biased, n_sys), replace=False)] = bias
    frames = []
    for j in range(n_dim):
        eta = a * (truth.theta[j, s] - truth.delta[j, d]) - rho_j + b[s]  # (S*D,)
        if kind == "noisy":
            eta = eta + rng.logistic(0.0, noise_scale, eta.size)
        score = _draw(category_probabilities(eta, tau_j), rng)
        if kind == "collapsed":
            lo = (num_cat + 1) // 2
            score = np.where(score <= lo, lo, lo + 1) if num_cat > 2 else score
        frame = {"system": s, "item": d, "dimension": f"dim{j}", "score": score}
        frames.append(pd.DataFrame(frame))
    return pd.concat(frames, ignore_index=True)
