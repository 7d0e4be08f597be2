"""Benchmarks for the reliability experiments, built offline.

- :func:`simulate_irt`: a 2PL item-response simulation with a ceiling effect (abilities
  skewed high), per-run item jitter and a known true reliability; with ``guessing > 0``
  and ``null_share > 0`` a 3PL one with a guessing floor and items that carry no signal
  (LLM-like multiple-choice data from few models).
- :func:`load_benchbench` (from ``neurips26.common.data``): real aggregate tables shipped
  by the ``benchbench`` package (MMLU: models × 57 subjects; ImageNet: 112 torchvision
  models × 1000 per-class accuracies), read directly from its TSV files.
- :func:`resample_runs`: evaluation runs of an aggregate table by binomial resampling of
  each cell's test items (a test-set perturbation; an inferred stand-in for re-running).
- :func:`digits_zoo`: about 55 scikit-learn classifiers trained on ``load_digits``, scored
  0/1 on the test images under seeded input perturbations (pixel noise, 1-pixel shifts).
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray

from neurips26.common.data.tables import benchbench_data_dir, load_benchbench
from neurips26.common.validation import check_float

__all__ = [
    "IRTSimulation",
    "ZooBenchmark",
    "benchbench_data_dir",
    "digits_zoo",
    "load_benchbench",
    "resample_runs",
    "simulate_irt",
]


@dataclass(frozen=True)
class IRTSimulation:
    """A simulated 2PL (or 3PL) benchmark.

    Attributes
    ----------
    scores : ndarray, shape (R, N, K)
        0/1 responses of N models to K items in R independent evaluation runs.
    ability : ndarray, shape (N,)
        ``theta_m``.
    discrimination, difficulty : ndarray, shape (K,)
        ``a_i``, ``b_i`` (before the per-run jitter); ``a_i = 0`` for the no-signal items.
    guessing : ndarray, shape (K,)
        ``c_i``, the lower asymptote (0 for the 2PL).
    true_reliability : float
        Reliability of the K-item mean score for these models and items:
        ``Var_m(T_m) / (Var_m(T_m) + mean_m sum_i P_mi (1 - P_mi) / K^2)`` with
        ``T_m = mean_i P_mi`` (jitter-free probabilities).
    """

    scores: NDArray[np.float64]
    ability: NDArray[np.float64]
    discrimination: NDArray[np.float64]
    difficulty: NDArray[np.float64]
    true_reliability: float
    guessing: NDArray[np.float64] | None = None


def simulate_irt(
    *,
    num_models: int,
    num_items: int,
    num_runs: int = 3,
    ceiling: float = 2.0,
    skew_scale: float = 0.6,
    item_jitter: float = 0.2,
    discrimination_sd: float = 0.3,
    guessing: float = 0.0,
    null_share: float = 0.0,
    seed: int = 0,
) -> IRTSimulation:
    """Simulate a 2PL benchmark: ``P(y_mi = 1) = sigmoid(a_i (theta_m - b_i))``.

    With ``guessing = c > 0`` it is a 3PL benchmark,
    ``P(y_mi = 1) = c_i + (1 - c_i) sigmoid(a_i (theta_m - b_i))`` with ``c_i`` uniform on
    ``[c/2, 3c/2]`` (multiple-choice items answered right by chance), and a share
    ``null_share`` of the items has ``a_i = 0``: every model answers them with the same
    probability, so they carry no signal about the models (mislabelled or ambiguous items).

    Parameters
    ----------
    num_models, num_items : int
        ``N`` and ``K``.
    num_runs : int
        ``R`` evaluation runs (fresh Bernoulli draws and item jitter each).
    ceiling : float
        Abilities are ``theta = ceiling - Gamma(2, skew_scale)``: skewed high, long left tail.
    skew_scale : float
        Scale of the Gamma draw.
    item_jitter : float
        Standard deviation of the per-run shift of every difficulty ``b_i``.
    discrimination_sd : float
        ``a_i = exp(N(0, discrimination_sd^2))`` (log-normal discriminations).
    guessing : float
        Mean lower asymptote ``c`` in ``[0, 2/3)`` (0: the 2PL).
    null_share : float
        Share of items with ``a_i = 0`` (no signal), in ``[0, 1)``.
    seed : int

    Returns
    -------
    IRTSimulation

    Examples
    --------
    >>> sim = simulate_irt(num_models=20, num_items=50, seed=0)
    >>> sim.scores.shape
    (3, 20, 50)
    """
    for name, v in (("num_models", num_models), ("num_items", num_items), ("num_runs", num_runs)):
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 1:
            raise ValueError(f"{name} must be a positive int, got {v!r}")
    if item_jitter < 0 or skew_scale <= 0:
        raise ValueError("item_jitter must be >= 0 and skew_scale > 0")
    discrimination_sd = check_float(discrimination_sd, "discrimination_sd", min=0.0, max=5.0)
    guessing = check_float(guessing, "guessing", min=0.0, max=2.0 / 3.0, max_inclusive=False)
    null_share = check_float(null_share, "null_share", min=0.0, max=1.0, max_inclusive=False)
    rng = np.random.default_rng(seed)
    theta = ceiling - rng.gamma(2.0, skew_scale, size=num_models)  # (N,)
    a = rng.lognormal(0.0, discrimination_sd, size=num_items)  # (K,)
    b = rng.normal(0.0, 1.0, size=num_items)  # (K,)
    c = np.zeros(num_items)  # (K,) lower asymptotes
    if guessing > 0 or null_share > 0:  # the 3PL draws (the 2PL's stream is unchanged)
        c = guessing * rng.uniform(0.5, 1.5, size=num_items)
        a = np.where(rng.random(num_items) < null_share, 0.0, a)

    def prob(b_r: np.ndarray) -> np.ndarray:  # (N, K)
        return c + (1.0 - c) / (1.0 + np.exp(-a * (theta[:, None] - b_r)))

    p0 = prob(b)  # (N, K)
    true_var = p0.mean(axis=1).var(ddof=1)
    err_var = np.mean(np.sum(p0 * (1 - p0), axis=1)) / num_items**2
    scores = np.empty((num_runs, num_models, num_items))
    for r in range(num_runs):
        p = prob(b + item_jitter * rng.normal(size=num_items))
        scores[r] = (rng.random(p.shape) < p).astype(np.float64)
    return IRTSimulation(
        scores=scores,
        ability=theta,
        discrimination=a,
        difficulty=b,
        true_reliability=float(true_var / (true_var + err_var)),
        guessing=c,
    )


def resample_runs(
    proportions: ArrayLike, *, num_trials: int, num_runs: int, seed: int = 0
) -> NDArray[np.float64]:
    """Evaluation runs of an aggregate table by binomial resampling of its test items.

    Parameters
    ----------
    proportions : array_like, shape (N, K)
        Accuracies in [0, 1] (each the mean over ``num_trials`` test items).
    num_trials : int
        Test items behind each cell (50 per ImageNet class).
    num_runs : int
        ``R``.
    seed : int

    Returns
    -------
    ndarray, shape (R, N, K)
        ``Binomial(num_trials, p) / num_trials``.
    """
    p = np.asarray(proportions, dtype=np.float64)
    if p.ndim != 2 or not np.isfinite(p).all() or p.min() < 0 or p.max() > 1:
        raise ValueError("proportions must be a finite 2-D array with values in [0, 1]")
    if num_trials < 1 or num_runs < 1:
        raise ValueError("num_trials and num_runs must be >= 1")
    rng = np.random.default_rng(seed)
    return rng.binomial(num_trials, p, size=(num_runs, *p.shape)) / num_trials


@dataclass(frozen=True)
class ZooBenchmark:
    """0/1 correctness of a classifier zoo on perturbed test sets.

    Attributes
    ----------
    scores : ndarray, shape (R, N, K)
        ``1`` where model m classifies test image i correctly in run r.
    model_names : tuple of str, length N
    """

    scores: NDArray[np.float64]
    model_names: tuple[str, ...]


def _zoo_specs() -> list[tuple[str, object, float]]:
    from sklearn.ensemble import ExtraTreesClassifier, RandomForestClassifier
    from sklearn.linear_model import LogisticRegression
    from sklearn.naive_bayes import GaussianNB
    from sklearn.neighbors import KNeighborsClassifier
    from sklearn.neural_network import MLPClassifier
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler
    from sklearn.svm import SVC
    from sklearn.tree import DecisionTreeClassifier

    specs: list[tuple[str, object, float]] = []  # (name, estimator, training fraction)
    for frac in (0.1, 0.3, 1.0):
        for c in (1e-3, 1e-2, 1e-1, 1.0):
            est = make_pipeline(StandardScaler(), LogisticRegression(C=c, max_iter=300))
            specs.append((f"logreg_C{c:g}_f{frac}", est, frac))
        for k in (1, 3, 7, 15):
            specs.append((f"knn_k{k}_f{frac}", KNeighborsClassifier(n_neighbors=k), frac))
        specs.append((f"gnb_f{frac}", GaussianNB(), frac))
    for frac in (0.1, 1.0):
        for c in (0.1, 1.0, 10.0):
            for g in (5e-4, 2e-3):
                specs.append((f"svc_C{c:g}_g{g:g}_f{frac}", SVC(C=c, gamma=g), frac))
    for frac in (0.3, 1.0):
        for depth in (4, 8, None):
            specs.append((f"tree_d{depth}_f{frac}", DecisionTreeClassifier(max_depth=depth), frac))
    for n_est in (10, 50):
        for depth in (5, None):
            rf = RandomForestClassifier(n_estimators=n_est, max_depth=depth)
            specs.append((f"rf_n{n_est}_d{depth}", rf, 1.0))
    specs.append(("extratrees_n50", ExtraTreesClassifier(n_estimators=50), 1.0))
    specs.append(("extratrees_n10_d5", ExtraTreesClassifier(n_estimators=10, max_depth=5), 1.0))
    for frac in (0.3, 1.0):
        for hidden in (16, 64):
            mlp = make_pipeline(
                StandardScaler(), MLPClassifier(hidden_layer_sizes=(hidden,), max_iter=200)
            )
            specs.append((f"mlp_h{hidden}_f{frac}", mlp, frac))
    return specs


def _perturb(x: NDArray, rng: np.random.Generator, noise: float, shift_prob: float) -> NDArray:
    imgs = x.reshape(-1, 8, 8) + noise * rng.normal(size=(x.shape[0], 8, 8))  # (K, 8, 8)
    shifted = rng.random(x.shape[0]) < shift_prob
    direction = rng.integers(0, 4, size=x.shape[0])
    for i in np.flatnonzero(shifted):
        axis, step = divmod(int(direction[i]), 2)
        img = np.roll(imgs[i], 1 if step else -1, axis=axis)
        if axis == 0:
            img[0 if step else -1, :] = 0.0
        else:
            img[:, 0 if step else -1] = 0.0
        imgs[i] = img
    return np.clip(imgs, 0.0, 16.0).reshape(x.shape[0], 64)


def digits_zoo(
    *, num_runs: int = 3, noise: float = 2.0, shift_prob: float = 0.25, seed: int = 0
) -> ZooBenchmark:
    """Score a zoo of ~55 scikit-learn classifiers on perturbed ``load_digits`` test sets.

    Half of the 1797 digits (stratified) train the zoo (logistic regression, kNN, naive
    Bayes, RBF SVMs, trees, forests, MLPs over hyperparameter grids and training fractions
    0.1/0.3/1.0); the other half (899 images) are the items. Run ``r`` adds Gaussian pixel
    noise (``noise`` on the 0-16 scale) and shifts a ``shift_prob`` share of the images by
    one pixel (zero fill), under its own seed.

    Parameters
    ----------
    num_runs : int
    noise : float
        Pixel noise standard deviation.
    shift_prob : float
        Probability that an image is shifted by one pixel in a random direction.
    seed : int

    Returns
    -------
    ZooBenchmark
    """
    from sklearn.datasets import load_digits
    from sklearn.exceptions import ConvergenceWarning
    from sklearn.model_selection import train_test_split

    x, y = load_digits(return_X_y=True)
    x_tr, x_te, y_tr, y_te = train_test_split(
        x, y, test_size=0.5, stratify=y, random_state=seed % 2**32
    )
    rng = np.random.default_rng(seed)
    specs = _zoo_specs()
    models = []
    for _name, est, frac in specs:
        idx = rng.permutation(len(y_tr))[: max(30, int(frac * len(y_tr)))]
        if hasattr(est, "set_params"):
            params = est.get_params()
            for key in params:
                if key.endswith("random_state"):
                    est.set_params(**{key: int(rng.integers(2**31))})
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            est.fit(x_tr[idx], y_tr[idx])
        models.append(est)
    scores = np.empty((num_runs, len(models), len(y_te)))
    for r in range(num_runs):
        x_r = _perturb(x_te, np.random.default_rng([seed, r]), noise, shift_prob)
        for m, est in enumerate(models):
            scores[r, m] = est.predict(x_r) == y_te
    return ZooBenchmark(scores=scores, model_names=tuple(n for n, _, _ in specs))
