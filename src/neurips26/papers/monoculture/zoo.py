"""Score a population of scikit-learn classifiers item by item (out-of-fold)."""

from __future__ import annotations

import numpy as np
import pandas as pd
from sklearn.base import clone
from sklearn.model_selection import StratifiedKFold

__all__ = ["correctness_matrix"]


def correctness_matrix(estimators: dict, X, y, *, num_folds: int = 5, num_clones: int = 0,
                       clone_of: str | None = None, seed: int = 0):
    """Out-of-fold correctness and predictions of every estimator on every item.

    Parameters
    ----------
    estimators : dict of name -> scikit-learn classifier
        The population of models.
    X : array_like, shape (I, D)
    y : array_like, shape (I,)
    num_folds : int
        Stratified folds (fixed ``seed``): every item is predicted by models not trained
        on it.
    num_clones : int
        Near-duplicates of ``clone_of``, each trained on a bootstrap resample of every
        training fold, named ``"<clone_of>_clone<k>"``.
    clone_of : str, optional
        Estimator to clone.
    seed : int

    Returns
    -------
    Y : DataFrame, shape (M, I)
        Correctness (index: model names).
    predictions : DataFrame, shape (M, I)
        Predicted labels.

    Examples
    --------
    >>> from sklearn.datasets import load_wine
    >>> from sklearn.naive_bayes import GaussianNB
    >>> from sklearn.tree import DecisionTreeClassifier
    >>> X, y = load_wine(return_X_y=True)
    >>> Y, P = correctness_matrix({"nb": GaussianNB(), "tree": DecisionTreeClassifier()}, X, y)
    >>> Y.shape
    (2, 178)
    """
    if not estimators:
        raise ValueError("estimators must hold at least one classifier")
    if num_clones and clone_of not in estimators:
        raise ValueError(f"clone_of must name one of the estimators, got {clone_of!r}")
    X = np.asarray(X)
    y = np.asarray(y)
    if X.ndim != 2 or y.shape != (X.shape[0],):
        raise ValueError(f"X must be (I, D) and y (I,); got {X.shape} and {y.shape}")
    rng = np.random.default_rng(seed)
    names = list(estimators) + [f"{clone_of}_clone{k}" for k in range(num_clones)]
    preds = np.empty((len(names), len(y)), dtype=y.dtype)
    folds = StratifiedKFold(num_folds, shuffle=True, random_state=seed).split(X, y)
    for train, test in folds:
        for j, name in enumerate(names):
            if j < len(estimators):
                est, idx = clone(estimators[name]), train
            else:
                est = clone(estimators[clone_of])
                idx = train[rng.integers(0, len(train), size=len(train))]
            est.fit(X[idx], y[idx])
            preds[j, test] = est.predict(X[test])
    Y = pd.DataFrame((preds == y[None, :]).astype(float), index=names)
    return Y, pd.DataFrame(preds, index=names)
