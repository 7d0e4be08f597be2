"""Learning curves from real data: a power law ``f(d) = a_inf - c d^(-gamma)``.

The paper simulates markets "derived from real datasets": each firm's accuracy is the
accuracy a model reaches with ``d`` training points. We measure that with
:func:`sklearn.model_selection.learning_curve` (logistic regression on standardised
features) on scikit-learn's bundled data sets and fit the saturating power law, which is
continuous and increasing as the theorem needs.

Deviations from the paper
-------------------------
- The paper's data sets and models are not named in the abstract; we use scikit-learn's
  bundled ``digits``, ``breast_cancer`` and ``wine`` with logistic regression.
- The power-law family (with ``c, gamma > 0``) is our choice; it extrapolates below the
  smallest measured training size.
"""

from __future__ import annotations

import functools
import warnings
from dataclasses import dataclass

import numpy as np

from neurips26.common.stats import fit_power_law as common_fit_power_law
from neurips26.common.threads import limit_threads
from neurips26.common.validation import check_array

__all__ = ["DATASETS", "PowerLawCurve", "dataset_curve", "fit_learning_curve", "fit_power_law"]

#: Bundled scikit-learn data sets usable by :func:`dataset_curve`.
DATASETS = ("digits", "breast_cancer", "wine")


@dataclass(frozen=True)
class PowerLawCurve:
    """A fitted learning curve ``f(d) = a_inf - c d^(-gamma)``.

    Attributes
    ----------
    a_inf : float
        Asymptotic accuracy.
    c : float
        Scale ``c > 0``.
    gamma : float
        Decay exponent ``gamma > 0``.
    r2 : float
        Coefficient of determination of the fit (1 for an exact fit).
    num_points : int
        Number of (size, score) points fitted.
    min_size : float
        Smallest training size measured (below it the curve extrapolates).
    max_size : float
        Largest training size measured (the data available).
    """

    a_inf: float
    c: float
    gamma: float
    r2: float = 1.0
    num_points: int = 0
    min_size: float = float("nan")
    max_size: float = float("nan")

    def __call__(self, d) -> np.ndarray:
        """Accuracy at data counts ``d`` (any shape, ``d > 0``)."""
        d = np.asarray(d, dtype=float)
        return self.a_inf - self.c * d ** (-self.gamma)  # f(d) = a_inf - c d^-gamma


def fit_power_law(train_sizes, scores) -> PowerLawCurve:
    """Least-squares fit of ``f(d) = a_inf - c d^(-gamma)`` with ``c, gamma > 0``.

    Parameters
    ----------
    train_sizes : array_like, shape (p,)
        Training-set sizes ``d > 0`` (at least 3 distinct).
    scores : array_like, shape (p,)
        Accuracies at those sizes.

    Returns
    -------
    PowerLawCurve

    Examples
    --------
    >>> d = np.array([10.0, 20, 50, 100, 200, 500])
    >>> curve = fit_power_law(d, 0.9 - 0.5 * d ** -0.7)
    >>> round(curve.gamma, 6)
    0.7
    """
    d = check_array(train_sizes, "train_sizes", ndim=None, min_size=0, finite=False)
    y = check_array(scores, "scores", ndim=None, min_size=0, finite=False)
    if d.ndim != 1 or d.shape != y.shape:
        raise ValueError(
            f"train_sizes and scores must be 1-D of equal length, got {d.shape}, {y.shape}"
        )
    if not (np.all(np.isfinite(d)) and np.all(np.isfinite(y))):
        raise ValueError("train_sizes and scores must be finite (no NaN)")
    if np.any(d <= 0):
        raise ValueError(f"train sizes must be positive, got {d}")
    if np.unique(d).size < 3:
        raise ValueError("need at least 3 distinct training sizes to fit 3 parameters")
    fit = common_fit_power_law(d, y, asymptote=True)  # bounded least squares, c, gamma > 0
    return PowerLawCurve(
        a_inf=fit.asymptote,
        c=fit.scale,
        gamma=fit.exponent,
        r2=fit.r2,
        num_points=int(d.size),
        min_size=float(d.min()),
        max_size=float(d.max()),
    )


def fit_learning_curve(
    X,
    y,
    *,
    estimator=None,
    train_fractions=(0.05, 0.08, 0.12, 0.2, 0.35, 0.6, 1.0),
    num_splits: int = 5,
    seed: int = 0,
) -> PowerLawCurve:
    """Measure a learning curve on ``(X, y)`` and fit the power law to it.

    Parameters
    ----------
    X : array_like, shape (N, p)
        Features.
    y : array_like, shape (N,)
        Class labels.
    estimator : sklearn estimator, optional
        Default: standardisation + logistic regression.
    train_fractions : tuple of float
        Training sizes as fractions of the training split, in ``(0, 1]``.
    num_splits : int
        Shuffle-split repetitions (80/20) averaged per size.
    seed : int
        Seed of the splits.

    Returns
    -------
    PowerLawCurve
        Fitted to the mean test accuracy per training size.

    Examples
    --------
    >>> from sklearn.datasets import load_wine
    >>> X, y = load_wine(return_X_y=True)
    >>> curve = fit_learning_curve(X, y, num_splits=2)
    >>> bool(curve(100.0) > curve(10.0))
    True
    """
    from sklearn.linear_model import LogisticRegression
    from sklearn.model_selection import StratifiedShuffleSplit, learning_curve
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    X = np.asarray(X, dtype=float)
    y = np.asarray(y)
    if X.ndim != 2 or y.ndim != 1 or X.shape[0] != y.shape[0]:
        raise ValueError(f"X must be (N, p) and y (N,), got {X.shape} and {y.shape}")
    if not np.all(np.isfinite(X)):
        raise ValueError("X contains NaN or infinite values")
    fr = np.asarray(train_fractions, dtype=float)
    if fr.size < 3 or np.any(fr <= 0) or np.any(fr > 1):
        raise ValueError(f"train_fractions must be >= 3 values in (0, 1], got {fr}")
    if estimator is None:
        estimator = make_pipeline(StandardScaler(), LogisticRegression(max_iter=2000))
    cv = StratifiedShuffleSplit(n_splits=int(num_splits), test_size=0.2, random_state=seed)
    # One BLAS thread: multi-threaded BLAS on tiny problems costs 100x the CPU time.
    with limit_threads(1), warnings.catch_warnings():
        warnings.simplefilter("ignore")  # a tiny subset may hold one class: NaN, dropped
        sizes, _, test = learning_curve(
            estimator,
            X,
            y,
            train_sizes=fr,
            cv=cv,
            shuffle=True,
            random_state=seed,
            n_jobs=1,
            error_score=np.nan,
        )
    mean = np.nanmean(np.where(np.isfinite(test), test, np.nan), axis=1)  # (p,)
    ok = np.isfinite(mean)
    return fit_power_law(sizes[ok].astype(float), mean[ok])


@functools.lru_cache(maxsize=16)
def dataset_curve(name: str, *, num_splits: int = 5, seed: int = 0) -> PowerLawCurve:
    """The learning curve of a bundled scikit-learn data set, cached in-process.

    Parameters
    ----------
    name : {"digits", "breast_cancer", "wine"}
        The data set.
    num_splits : int
        Shuffle-split repetitions.
    seed : int
        Seed of the splits.

    Returns
    -------
    PowerLawCurve
    """
    from sklearn import datasets

    loaders = {
        "digits": datasets.load_digits,
        "breast_cancer": datasets.load_breast_cancer,
        "wine": datasets.load_wine,
    }
    if name not in loaders:
        raise ValueError(f"unknown dataset {name!r}; valid: {DATASETS}")
    X, y = loaders[name](return_X_y=True)
    return fit_learning_curve(X, y, num_splits=num_splits, seed=seed)
