"""Baselines: scikit-learn linear classifiers fitted on the corrupted sample.

They return a weight vector ``w`` (shape (d,)) so that every learner is scored by the same
exact clean error :func:`~neurips26.papers.sparse_halfspace.data.clean_error`.
"""

from __future__ import annotations

import warnings

import numpy as np
from sklearn.exceptions import ConvergenceWarning
from sklearn.linear_model import LogisticRegressionCV
from sklearn.svm import LinearSVC

from ._validation import check_labels, check_matrix


def linear_svc(X, y, *, C: float = 1.0, seed: int = 0) -> np.ndarray:
    """L2-regularised hinge loss (``sklearn.svm.LinearSVC``, no intercept).

    Parameters
    ----------
    X : array_like, shape (n, d)
    y : array_like, shape (n,)
        Labels in {-1, +1}.
    C : float
        Inverse regularisation strength.
    seed : int
        ``random_state`` of the dual coordinate descent.

    Returns
    -------
    ndarray, shape (d,)
    """
    X = check_matrix(X)
    y, _ = check_labels(y, X.shape[0])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        clf = LinearSVC(C=C, fit_intercept=False, max_iter=5000, random_state=seed)
        clf.fit(X, y)
    return clf.coef_.ravel().copy()


def l1_logistic(X, y, *, num_cs: int = 6, cv: int = 3, seed: int = 0) -> np.ndarray:
    """L1-penalised logistic regression, ``C`` chosen by cross-validation on the given data.

    ``sklearn.linear_model.LogisticRegressionCV`` with the liblinear solver and no intercept;
    the folds are the corrupted data (the learner cannot tell clean from corrupt).

    Parameters
    ----------
    X : array_like, shape (n, d)
    y : array_like, shape (n,)
        Labels in {-1, +1}.
    num_cs : int
        Size of the logarithmic grid of ``C``.
    cv : int
        Number of folds.
    seed : int
        ``random_state`` of liblinear.

    Returns
    -------
    ndarray, shape (d,)
    """
    X = check_matrix(X)
    y, _ = check_labels(y, X.shape[0])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        clf = LogisticRegressionCV(
            Cs=num_cs,
            cv=cv,
            l1_ratios=(1.0,),
            scoring="accuracy",
            solver="liblinear",
            fit_intercept=False,
            random_state=seed,
            max_iter=1000,
        )
        clf.fit(X, y)
    return clf.coef_.ravel().copy()
