"""Streaming class statistics of frozen features: counts, means, pooled scatter.

De-centering, SLDA and NCM need only per-class counts and means and one pooled
within-class covariance ``Sigma_hat``. They are accumulated task by task as counts, sums
and scatter, so no raw exemplar is kept (the class-incremental memory constraint). The
Ledoit-Wolf shrinkage intensity is computed from the same sufficient statistics plus one
scalar, ``sum_i ||x_i - mu_{y_i}||^4``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy import linalg

from neurips26.common import validation as _common

from ._validation import check_choice, check_features, check_int, check_labels, check_shrinkage


@dataclass(frozen=True)
class ClassStats:
    """Sufficient statistics of the classes seen so far.

    Attributes
    ----------
    classes : ndarray of shape (C,)
        Class ids, in the order they arrived (task by task, sorted within a task).
    counts : ndarray of shape (C,)
        Samples per class, ``n_c``.
    means : ndarray of shape (C, d)
        Class means ``mu_hat_c``.
    scatter : ndarray of shape (d, d)
        Pooled within-class scatter ``sum_i (x_i - mu_{y_i})(x_i - mu_{y_i})^T``.
    fourth_moment : float
        ``sum_i ||x_i - mu_{y_i}||^4`` (for the Ledoit-Wolf intensity).
    task_of_class : ndarray of shape (C,)
        Task id of each class.
    """

    classes: np.ndarray
    counts: np.ndarray
    means: np.ndarray
    scatter: np.ndarray
    fourth_moment: float
    task_of_class: np.ndarray

    @property
    def dim(self) -> int:
        """Feature dimension ``d``."""
        return int(self.means.shape[1])

    @property
    def num_samples(self) -> int:
        """Total samples ``n``."""
        return int(self.counts.sum())

    @property
    def tasks(self) -> np.ndarray:
        """Task ids in arrival order."""
        _, first = np.unique(self.task_of_class, return_index=True)
        return self.task_of_class[np.sort(first)]

    def priors(self, kind: str = "empirical") -> np.ndarray:
        """Class priors ``pi_c``: ``n_c / n`` (``"empirical"``) or ``1 / C`` (``"uniform"``)."""
        check_choice(kind, "priors", ("empirical", "uniform"))
        if kind == "uniform":
            return np.full(len(self.classes), 1.0 / len(self.classes))
        return self.counts / self.counts.sum()

    def index_of(self, classes) -> np.ndarray:
        """Positions of ``classes`` in :attr:`classes`; ValueError for an unknown class."""
        classes = np.asarray(classes)
        lookup = {int(c): i for i, c in enumerate(self.classes)}
        missing = [int(c) for c in classes if int(c) not in lookup]
        if missing:
            raise ValueError(f"classes {missing[:5]} are not in the statistics (known: "
                             f"{self.classes.tolist()[:10]}...)")
        return np.array([lookup[int(c)] for c in classes], dtype=np.int64)

    def covariance(self, shrinkage="ledoit_wolf") -> np.ndarray:
        """Pooled within-class covariance ``Sigma_hat`` (maximum likelihood, ``/ n``).

        Parameters
        ----------
        shrinkage : None, "ledoit_wolf" or float in [0, 1]
            ``None``: the empirical pooled covariance (what scikit-learn's
            ``LinearDiscriminantAnalysis(solver="lsqr")`` uses); ``"ledoit_wolf"``: shrunk
            towards ``(tr S / d) I`` with the Ledoit-Wolf intensity of the pooled residuals
            (equal to ``sklearn.covariance.LedoitWolf(assume_centered=True)`` on them); a
            float: that intensity.

        Returns
        -------
        ndarray of shape (d, d)
        """
        check_shrinkage(shrinkage)
        n, d = self.num_samples, self.dim
        S = self.scatter / n  # (d, d)
        if shrinkage is None:
            return S
        mu = np.trace(S) / d
        if shrinkage == "ledoit_wolf":
            intensity = ledoit_wolf_intensity(S, self.fourth_moment, n)
        else:
            intensity = float(shrinkage)
        return (1.0 - intensity) * S + intensity * mu * np.eye(d)

    def precision_times(self, B: np.ndarray, shrinkage="ledoit_wolf") -> np.ndarray:
        """``Sigma_hat^{-1} B`` for ``B`` of shape (d, k), by a Cholesky solve.

        Raises
        ------
        ValueError
            If ``Sigma_hat`` is singular (e.g. ``shrinkage=None`` with fewer samples than
            dimensions); the message suggests Ledoit-Wolf shrinkage.
        """
        cov = self.covariance(shrinkage)
        scale = max(float(np.trace(cov)) / self.dim, np.finfo(float).tiny)
        try:
            L, lower = linalg.cho_factor(cov, lower=True, check_finite=False)
            # (min diag L)^2 bounds the smallest eigenvalue from above: tiny means singular.
            ok = float(np.min(np.diag(L))) ** 2 > 1e-12 * scale
        except linalg.LinAlgError:
            ok = False
        if not ok:
            raise ValueError(
                f"the pooled covariance (shrinkage={shrinkage!r}, n_samples={self.num_samples}, "
                f"d={self.dim}) is singular; use shrinkage='ledoit_wolf' or a float shrinkage")
        out = linalg.cho_solve((L, lower), B, check_finite=False)
        return out


def ledoit_wolf_intensity(S: np.ndarray, fourth_moment: float, n: int) -> float:
    """Ledoit-Wolf shrinkage intensity from the covariance ``S`` and ``sum ||x_i||^4``.

    The formula of ``sklearn.covariance.ledoit_wolf_shrinkage`` (assume_centered) written
    in sufficient statistics: ``beta = (sum ||x_i||^4 / n - ||S||_F^2) / (d n)``,
    ``delta = ||S - (tr S / d) I||_F^2 / d``, intensity ``min(beta, delta) / delta``.
    """
    S = _common.check_array(S, "S", ndim=2)
    if S.shape[0] != S.shape[1]:
        raise ValueError(f"S must be square, got shape {S.shape}")
    fourth_moment = _common.check_float(fourth_moment, "fourth_moment", min=0)
    n = _common.check_int(n, "n", min=1)
    d = S.shape[0]
    mu = np.trace(S) / d
    delta = (np.sum(S**2) - 2 * mu * np.trace(S) + d * mu**2) / d
    beta = (fourth_moment / n - np.sum(S**2)) / (d * n)
    beta = min(max(beta, 0.0), delta)
    return 0.0 if beta == 0 else float(beta / delta)


def accumulate_stats(stats: ClassStats | None, X, y, *, task_id: int) -> ClassStats:
    """Add one task's data to the class statistics.

    Parameters
    ----------
    stats : ClassStats or None
        Statistics of the previous tasks (``None`` for the first task).
    X : array-like of shape (n, d)
        Frozen features of task ``task_id``.
    y : array-like of shape (n,)
        Integer class ids; they must not have appeared in an earlier task.
    task_id : int
        The task's id (``t``), not used before.

    Returns
    -------
    ClassStats
        New statistics; ``stats`` is not modified.

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> s = accumulate_stats(None, rng.normal(size=(20, 3)), np.repeat([0, 1], 10), task_id=0)
    >>> s = accumulate_stats(s, rng.normal(size=(20, 3)), np.repeat([2, 3], 10), task_id=1)
    >>> s.classes.tolist(), s.task_of_class.tolist(), s.num_samples
    ([0, 1, 2, 3], [0, 0, 1, 1], 40)
    """
    if stats is not None and not isinstance(stats, ClassStats):
        raise TypeError(f"stats must be a ClassStats or None, got {type(stats).__name__}")
    X = check_features(X, dim=None if stats is None else stats.dim)
    y = check_labels(y, X.shape[0])
    task_id = check_int(task_id, "task_id", max_value=2**31 - 1)
    if stats is not None:
        if task_id in set(stats.task_of_class.tolist()):
            raise ValueError(f"task_id {task_id} was already added; each task is added once")
        seen = set(stats.classes.tolist()) & set(np.unique(y).tolist())
        if seen:
            raise ValueError(f"y: class ids {sorted(seen)[:5]} already appeared in an earlier "
                             "task; class sets of tasks must be disjoint")
    classes, inverse, counts = np.unique(y, return_inverse=True, return_counts=True)
    sums = np.zeros((len(classes), X.shape[1]))
    np.add.at(sums, inverse, X)
    means = sums / counts[:, None]  # (C_t, d)
    R = X - means[inverse]  # (n, d) within-class residuals
    scatter = R.T @ R
    fourth = float(np.sum(np.sum(R**2, axis=1) ** 2))
    tasks = np.full(len(classes), task_id, dtype=np.int64)
    if stats is None:
        return ClassStats(classes, counts.astype(np.int64), means, scatter, fourth, tasks)
    return ClassStats(
        classes=np.concatenate([stats.classes, classes]),
        counts=np.concatenate([stats.counts, counts]),
        means=np.vstack([stats.means, means]),
        scatter=stats.scatter + scatter,
        fourth_moment=stats.fourth_moment + fourth,
        task_of_class=np.concatenate([stats.task_of_class, tasks]),
    )


def population_stats(means, cov, task_of_class, *, counts=None) -> ClassStats:
    """Statistics holding known population means and covariance (for closed forms).

    Parameters
    ----------
    means : array-like of shape (C, d)
        Class means ``mu_c`` (class ids are ``0..C-1``).
    cov : array-like of shape (d, d)
        Shared covariance ``Sigma`` (symmetric positive definite).
    task_of_class : array-like of shape (C,)
        Task of each class.
    counts : array-like of shape (C,), optional
        Relative class sizes (priors); equal by default.
    """
    means = check_features(means, name="means")
    C, d = means.shape
    cov = check_features(cov, name="cov", dim=d)
    if cov.shape[0] != d or not np.allclose(cov, cov.T):
        raise ValueError(f"cov must be a symmetric (d, d) = ({d}, {d}) matrix, got {cov.shape}")
    tasks = check_labels(task_of_class, C, name="task_of_class")
    if counts is None:
        counts = np.ones(C, dtype=np.int64)
    else:
        raw = _common.check_array(counts, "counts", ndim=1)
        if not np.all(raw == np.round(raw)):
            raise ValueError("counts must hold integers")
        counts = raw.astype(np.int64)
    if counts.shape != (C,) or np.any(counts <= 0):
        raise ValueError(f"counts must hold C = {C} positive integers")
    n = int(counts.sum())
    return ClassStats(np.arange(C), counts, means, cov * n, 0.0, tasks)
