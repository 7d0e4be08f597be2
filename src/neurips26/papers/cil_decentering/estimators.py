"""Class-incremental heads behind one scikit-learn interface.

Every estimator learns task by task with ``partial_fit(X, y, task_id=None)`` (classes of
different tasks disjoint; a task is added once), predicts over every class seen so far
(class-incremental evaluation: argmax over all tasks' classes), and keeps the streaming class
statistics in ``stats_``. ``classes_`` lists classes in arrival order.

- :class:`SequentialSoftmax`: within-task softmax heads (the CIL lower bound).
- :class:`DecenteredSoftmax`: the same heads with post-hoc de-centering (the paper's method).
- :class:`JointSoftmax`: one softmax over all classes, refitted on all data seen (the upper
  bound; it keeps exemplars, which a CIL learner may not).
- :class:`SLDA`: streaming LDA, ``w_c = Sigma_hat^{-1} mu_c`` (Hayes and Kanan, 2020).
- :class:`NCM`: nearest Euclidean class mean.
- :class:`FeCAM`: per-class Mahalanobis distance with FeCAM's covariance shrinkage and
  correlation normalisation (Goswami et al., 2023).
- :class:`PostHocDecentering`: the correction alone, for heads trained elsewhere.

Deviations from the paper
-------------------------
- FeCAM is "FeCAM-style": FeCAM's shrinkage ``Sigma_c + gamma_1 V_1 I + gamma_2 V_2 (1 - I)``,
  correlation normalisation, L2-normalised features and optional Tukey power transform, but
  full per-class covariances in float64 and a pseudo-inverse, without FeCAM's prototype
  updates or backbone training.
"""

from __future__ import annotations

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import check_is_fitted, column_or_1d, validate_data

from ._validation import check_features, check_int, check_labels, check_positive, check_shrinkage
from .heads import (
    LinearHead,
    _fit_softmax,
    concat_heads,
    decenter,
    fit_within_task_head,  # noqa: F401  (the PostHocDecentering example uses it)
)
from .heads import population_heads as _population_heads
from .stats import ClassStats, accumulate_stats


class _IncrementalHead(ClassifierMixin, BaseEstimator):
    """Shared task-by-task bookkeeping: statistics, classes, dimension checks.

    Labels may be any hashable values scikit-learn accepts as classes (integers, strings).
    Integer labels are the class ids of ``stats_`` and ``head_`` themselves; other labels
    get the ids 0, 1, ... in arrival order, and ``classes_`` holds the labels.
    """

    def _reset(self) -> None:
        for name in ("stats_", "classes_", "n_features_in_", "num_tasks_", "_label_ids"):
            if hasattr(self, name):
                delattr(self, name)
        self._reset_state()

    def _reset_state(self) -> None:  # subclasses clear their own state
        pass

    def _encode(self, y, fitted: bool) -> tuple[np.ndarray, dict | None]:
        """Class ids of ``y`` (n,) int64, and the label map after this batch (None: ids)."""
        if y is None:
            raise ValueError(f"{type(self).__name__} requires y to be passed, but the target y "
                             "is None")
        if isinstance(y, (str, bytes)):
            raise TypeError(f"y must be a 1-D array of class labels, got {type(y).__name__}")
        y = np.asarray(y)
        if y.ndim == 2 and y.shape[1] == 1:
            y = column_or_1d(y, warn=True)
        if y.ndim != 1:
            raise ValueError(f"y must be 1-D of shape (num_samples,), got shape {y.shape}")
        if y.dtype.kind == "c":
            raise ValueError("y: Complex data not supported; Unknown label type for a classifier")
        check_classification_targets(y)  # 'Unknown label type' for continuous targets
        mapping = getattr(self, "_label_ids", None) if fitted else None
        integer = y.dtype.kind in "iu" or (y.dtype.kind == "f" and np.all(y == np.round(y)))
        if mapping is None and (not fitted or integer) and integer:
            return check_labels(y, y.shape[0]), None
        if fitted and mapping is None:
            raise TypeError(f"y holds labels of dtype {y.dtype} but the earlier tasks had integer "
                            "class ids; keep one kind of label")
        mapping = dict(mapping or {})
        for label in np.unique(y):
            mapping.setdefault(label.item() if hasattr(label, "item") else label, len(mapping))
        ids = np.array([mapping[v.item() if hasattr(v, "item") else v] for v in y],
                       dtype=np.int64)
        return ids, mapping

    def partial_fit(self, X, y, classes=None, *, task_id=None):
        """Learn one task.

        Parameters
        ----------
        X : array-like of shape (n, d)
            Frozen features of the task.
        y : array-like of shape (n,)
            Class labels, none of them seen in an earlier task.
        classes : array-like of shape (k,), optional
            scikit-learn's ``partial_fit`` argument; a class-incremental learner cannot know
            later tasks' classes, so it is only checked to hold every label of ``y``.
        task_id : int, optional
            Task id (default: the number of tasks seen so far).

        Returns
        -------
        self
        """
        fitted = hasattr(self, "stats_")
        X = check_features(X)
        if fitted and X.shape[1] != self.n_features_in_:
            raise ValueError(f"X has {X.shape[1]} features, but {type(self).__name__} is "
                             f"expecting {self.n_features_in_} features as input (feature "
                             "dimension mismatch)")
        X = validate_data(self, X, reset=not fitted, dtype=np.float64)
        ids, mapping = self._encode(y, fitted)
        ids = check_labels(ids, X.shape[0])
        if classes is not None and not set(np.unique(np.asarray(y)).tolist()) <= set(
                np.asarray(classes).tolist()):
            raise ValueError("classes must hold every label of y")
        if not fitted:
            self._reset_state()
        task_id = (self.num_tasks_ if fitted else 0) if task_id is None else task_id
        task_id = check_int(task_id, "task_id")
        stats = accumulate_stats(self.stats_ if fitted else None, X, ids, task_id=task_id)
        self._learn_task(X, ids, task_id, stats)  # may raise before any state changes
        self.stats_ = stats
        self._label_ids = mapping
        if mapping is None:
            self.classes_ = stats.classes.copy()
        else:
            labels = np.empty(len(mapping), dtype=object)
            for label, i in mapping.items():
                labels[i] = label
            self.classes_ = np.array(labels[stats.classes].tolist())
        self.n_features_in_ = X.shape[1]
        self.num_tasks_ = len(stats.tasks)
        self._refresh()
        return self

    def fit(self, X, y):
        """Forget everything and learn ``(X, y)`` as a single task.

        Parameters
        ----------
        X : array-like of shape (n, d)
        y : array-like of shape (n,)

        Returns
        -------
        self
        """
        self._reset()
        return self.partial_fit(X, y, task_id=0)

    def _learn_task(self, X, y, task_id, stats) -> None:
        pass

    def _refresh(self) -> None:
        pass

    def _check_fitted_X(self, X) -> np.ndarray:
        check_is_fitted(self, "stats_")
        X = check_features(X)
        if X.shape[1] != self.n_features_in_:
            raise ValueError(f"X has {X.shape[1]} features, but {type(self).__name__} is "
                             f"expecting {self.n_features_in_} features as input (feature "
                             "dimension mismatch)")
        return validate_data(self, X, reset=False, dtype=np.float64)

    def _scores(self, X) -> np.ndarray:
        """Scores of shape (n, C) over every class seen so far (columns: ``classes_``)."""
        return self.head_.decision_function(X)

    def decision_function(self, X) -> np.ndarray:
        """Scores over every class seen so far.

        Parameters
        ----------
        X : array-like of shape (n, d)

        Returns
        -------
        ndarray of shape (n, C), columns ``classes_``; with two classes, scikit-learn's
        shape (n,): the second class's score minus the first's.
        """
        scores = self._scores(self._check_fitted_X(X))
        return scores[:, 1] - scores[:, 0] if scores.shape[1] == 2 else scores

    def predict(self, X) -> np.ndarray:
        """Class labels of shape (n,), argmax over all classes of all tasks seen."""
        scores = self._scores(self._check_fitted_X(X))
        return self.classes_[np.argmax(scores, axis=1)]


class SequentialSoftmax(_IncrementalHead):
    """Within-task softmax heads trained task by task (the sequential CIL baseline).

    Parameters
    ----------
    weight_decay : float
        ``lam``, ell-2 penalty on the weights.
    max_iter : int
        L-BFGS iterations per task.
    tol : float
        Gradient tolerance.

    Attributes
    ----------
    heads_ : list of LinearHead
        One head per task.
    head_ : LinearHead
        The heads stacked (what ``predict`` uses).
    n_iter_ : ndarray of shape (num_tasks,)
        L-BFGS iterations of each task's fit.

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> est = SequentialSoftmax()
    >>> for t in range(2):
    ...     y = np.repeat([2 * t, 2 * t + 1], 30)
    ...     est = est.partial_fit(rng.normal(size=(60, 3)) + y[:, None], y, task_id=t)
    >>> est.classes_.tolist(), len(est.heads_)
    ([0, 1, 2, 3], 2)
    """

    def __init__(self, *, weight_decay=1e-4, max_iter=1000, tol=1e-8):
        self.weight_decay = weight_decay
        self.max_iter = max_iter
        self.tol = tol

    def _reset_state(self) -> None:
        self.heads_ = []
        self.n_iter_ = np.zeros(0, dtype=np.int64)

    def _learn_task(self, X, y, task_id, stats) -> None:
        head, nit = _fit_softmax(X, y, weight_decay=self.weight_decay, max_iter=self.max_iter,
                                 tol=self.tol, min_classes=2, task_id=task_id,
                                 return_n_iter=True)
        self.heads_ = [*self.heads_, head]
        self.n_iter_ = np.append(self.n_iter_, nit)

    def _refresh(self) -> None:
        self.head_ = concat_heads(self.heads_)


class DecenteredSoftmax(SequentialSoftmax):
    """Within-task softmax heads with post-hoc de-centering (the paper's method).

    Parameters
    ----------
    weight_decay, max_iter, tol
        As :class:`SequentialSoftmax`.
    shrinkage : None, "ledoit_wolf" or float
        Estimator of the pooled covariance ``Sigma_hat``.
    priors : {"empirical", "uniform"}
        Class priors ``pi_c`` in the bias scalar.

    Attributes
    ----------
    heads_ : list of LinearHead
        The uncorrected within-task heads.
    head_ : LinearHead
        The de-centred class-incremental head.
    """

    def __init__(self, *, weight_decay=1e-4, max_iter=1000, tol=1e-8, shrinkage="ledoit_wolf",
                 priors="empirical"):
        super().__init__(weight_decay=weight_decay, max_iter=max_iter, tol=tol)
        self.shrinkage = shrinkage
        self.priors = priors

    def _learn_task(self, X, y, task_id, stats) -> None:
        check_shrinkage(self.shrinkage)
        super()._learn_task(X, y, task_id, stats)

    def _refresh(self) -> None:
        self.head_ = decenter(self.heads_, self.stats_, shrinkage=self.shrinkage,
                              priors=self.priors)


class JointSoftmax(_IncrementalHead):
    """One softmax head over all classes, refitted on every sample seen (the upper bound).

    It keeps all data (``X_seen_``), so it is an oracle, not a class-incremental learner.
    The joint head is fitted at the first use after new data and memoised in a cache made at
    ``fit``, so several tasks can arrive before one refit (predicting changes no attribute).

    Parameters
    ----------
    weight_decay, max_iter, tol
        As :class:`SequentialSoftmax`.

    Attributes
    ----------
    head_ : LinearHead
        The joint head over ``classes_``.
    n_iter_ : int
        L-BFGS iterations of the last joint fit (1 while a single class is seen).
    """

    def __init__(self, *, weight_decay=1e-4, max_iter=1000, tol=1e-8):
        self.weight_decay = weight_decay
        self.max_iter = max_iter
        self.tol = tol

    def _reset_state(self) -> None:
        self.X_seen_ = None
        self.y_seen_ = None
        self._cache = {}

    def _learn_task(self, X, y, task_id, stats) -> None:
        # the parameters are checked now, not at the first prediction
        check_positive(self.weight_decay, "weight_decay", allow_zero=True)
        check_int(self.max_iter, "max_iter", min_value=1)
        check_positive(self.tol, "tol")
        self.X_seen_ = X if self.X_seen_ is None else np.vstack([self.X_seen_, X])
        self.y_seen_ = y if self.y_seen_ is None else np.concatenate([self.y_seen_, y])
        self._cache = {}  # refitted lazily, on the first prediction after new data

    def _fitted_head(self) -> tuple[LinearHead, int]:
        if "head" not in self._cache:
            nit = 1
            if len(self.classes_) < 2:  # one class: constant scores until a second arrives
                W, b = np.zeros((1, self.n_features_in_)), np.zeros(1)
            else:
                fit, nit = _fit_softmax(self.X_seen_, self.y_seen_,
                                        weight_decay=self.weight_decay, max_iter=self.max_iter,
                                        tol=self.tol, min_classes=2, task_id=0,
                                        return_n_iter=True)
                order = {int(c): i for i, c in enumerate(fit.classes)}
                rows = [order[int(c)] for c in self.stats_.classes]
                W, b = fit.W[rows], fit.b[rows]
            self._cache["head"] = LinearHead(W, b, self.stats_.classes.copy(),
                                             self.stats_.task_of_class.copy())
            self._cache["n_iter"] = nit
        return self._cache["head"], self._cache["n_iter"]

    @property
    def head_(self) -> LinearHead:
        """The joint head over ``classes_`` (fitted on first use after new data)."""
        if not hasattr(self, "stats_"):
            raise AttributeError("head_")
        return self._fitted_head()[0]

    @property
    def n_iter_(self) -> int:
        """L-BFGS iterations of the joint fit (fits it if needed)."""
        if not hasattr(self, "stats_"):
            raise AttributeError("n_iter_")
        return self._fitted_head()[1]


class SLDA(_IncrementalHead):
    """Streaming linear discriminant analysis from the class statistics.

    ``w_c = Sigma_hat^{-1} mu_c``, ``b_c = -1/2 mu_c^T Sigma_hat^{-1} mu_c + log pi_c``.

    Parameters
    ----------
    shrinkage : None, "ledoit_wolf" or float
    priors : {"empirical", "uniform"}
    """

    def __init__(self, *, shrinkage="ledoit_wolf", priors="empirical"):
        self.shrinkage = shrinkage
        self.priors = priors

    def _learn_task(self, X, y, task_id, stats) -> None:
        check_shrinkage(self.shrinkage)

    def _refresh(self) -> None:
        self.head_ = _population_heads(self.stats_, shrinkage=self.shrinkage,
                                       priors=self.priors).joint


class NCM(_IncrementalHead):
    """Nearest class mean (Euclidean); scores are ``-||x - mu_c||^2``."""

    def __init__(self):
        pass

    def _refresh(self) -> None:
        M = self.stats_.means
        # -||x - mu||^2 = 2 mu^T x - ||mu||^2 - ||x||^2 ; the last term is common to all classes.
        self.head_ = LinearHead(2 * M, -np.sum(M**2, axis=1), self.classes_.copy(),
                                self.stats_.task_of_class.copy())


class FeCAM(_IncrementalHead):
    """FeCAM-style per-class Mahalanobis classifier (Goswami et al., 2023).

    Parameters
    ----------
    gamma1, gamma2 : float
        Shrinkage of the diagonal and off-diagonal (FeCAM's default 1, 1).
    tukey : float or None
        Tukey power transform ``x^tukey`` (needs non-negative features); ``None``: off.
    l2_normalize : bool
        L2-normalise features and means before the distance (as FeCAM does).
    correlation : bool
        Normalise each shrunk covariance to a correlation matrix (as FeCAM does).
    """

    def __init__(self, *, gamma1=1.0, gamma2=1.0, tukey=None, l2_normalize=True,
                 correlation=True):
        self.gamma1 = gamma1
        self.gamma2 = gamma2
        self.tukey = tukey
        self.l2_normalize = l2_normalize
        self.correlation = correlation

    def _reset_state(self) -> None:
        self.means_ = None
        self.precisions_ = None

    def _transform(self, X) -> np.ndarray:
        if self.tukey is not None:
            power = check_positive(self.tukey, "tukey")
            if np.any(X < 0):
                raise ValueError("X has negative entries; the Tukey transform (tukey="
                                 f"{self.tukey}) needs non-negative features, set tukey=None")
            X = X**power
        if self.l2_normalize:
            X = X / np.maximum(np.linalg.norm(X, axis=1, keepdims=True), 1e-12)
        return X

    def _learn_task(self, X, y, task_id, stats) -> None:
        g1 = check_positive(self.gamma1, "gamma1", allow_zero=True)
        g2 = check_positive(self.gamma2, "gamma2", allow_zero=True)
        Z = self._transform(X)
        d = Z.shape[1]
        means, precs = [], []
        off = ~np.eye(d, dtype=bool)
        for c in np.unique(y):
            Zc = Z[y == c]
            mu = Zc.mean(axis=0)
            R = Zc - mu
            cov = R.T @ R / max(len(Zc) - 1, 1)
            v1 = np.mean(np.diag(cov))
            v2 = np.mean(cov[off]) if d > 1 else 0.0
            cov = cov + g1 * v1 * np.eye(d) + g2 * v2 * off  # FeCAM's covariance shrinkage
            if self.correlation:
                s = np.sqrt(np.maximum(np.diag(cov), 1e-12))
                cov = cov / np.outer(s, s)
            means.append(mu)
            precs.append(np.linalg.pinv(cov, hermitian=True))
        new_m, new_p = np.stack(means), np.stack(precs)
        self.means_ = new_m if self.means_ is None else np.vstack([self.means_, new_m])
        self.precisions_ = new_p if self.precisions_ is None else np.concatenate(
            [self.precisions_, new_p])

    def _scores(self, X) -> np.ndarray:
        """``-(z - mu_c)^T Sigma_c^{-1} (z - mu_c)`` of shape (n, C) (columns ``classes_``)."""
        Z = self._transform(X)
        out = np.empty((Z.shape[0], len(self.means_)))
        for k, (mu, P) in enumerate(zip(self.means_, self.precisions_, strict=True)):
            R = Z - mu
            out[:, k] = -np.einsum("nd,nd->n", R @ P, R)  # (R P) through BLAS, then rows
        return out


class PostHocDecentering(BaseEstimator):
    """The evaluation-time correction alone: accumulate statistics, de-centre any heads.

    Use it on heads from your own class-incremental method: ``partial_fit`` on each task's
    frozen features (only counts, means and scatter are kept), then ``transform(heads)``.

    Parameters
    ----------
    shrinkage : None, "ledoit_wolf" or float
    priors : {"empirical", "uniform"}

    Attributes
    ----------
    stats_ : ClassStats

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> phd, heads = PostHocDecentering(), []
    >>> for t in range(2):
    ...     y = np.repeat([2 * t, 2 * t + 1], 40)
    ...     X = rng.normal(size=(80, 3)) + 2 * y[:, None]
    ...     heads.append(fit_within_task_head(X, y, task_id=t))
    ...     phd = phd.partial_fit(X, y, task_id=t)
    >>> phd.transform(heads).classes.tolist()
    [0, 1, 2, 3]
    """

    def __init__(self, *, shrinkage="ledoit_wolf", priors="empirical"):
        self.shrinkage = shrinkage
        self.priors = priors

    def partial_fit(self, X, y, *, task_id=None):
        """Add one task's features to ``stats_`` (see :func:`accumulate_stats`)."""
        stats = getattr(self, "stats_", None)
        if task_id is None:
            task_id = 0 if stats is None else len(stats.tasks)
        self.stats_ = accumulate_stats(stats, X, y, task_id=task_id)
        return self

    def transform(self, heads) -> LinearHead:
        """De-centre ``heads`` (see :func:`decenter`)."""
        if not isinstance(getattr(self, "stats_", None), ClassStats):
            raise ValueError("PostHocDecentering is not fitted; call partial_fit first")
        return decenter(heads, self.stats_, shrinkage=self.shrinkage, priors=self.priors)

