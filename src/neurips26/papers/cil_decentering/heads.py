"""Linear heads on frozen features: within-task softmax, joint softmax, closed forms, de-centering.

A class-incremental learner that trains its linear head task by task with a softmax over the
current task's classes only and an ell-2 penalty on the weights cannot see how the tasks sit
relative to each other: the within-task softmax is unchanged when a common vector is added to
every weight of the task, and the penalty picks the centred representative. At the
population optimum (shared-covariance Gaussians ``x | c ~ N(mu_c, Sigma)``, penalty -> 0)

    w_c^seq = Sigma^{-1} (mu_c - mu_bar^(t)),       mu_bar^(t) = mean_{c in C_t} mu_c,

so every cross-task discriminator ``w_c - w_c'`` (c in task i, c' in task j) is off the
joint (Bayes) one by the same vector ``Sigma^{-1}(mu_bar^(j) - mu_bar^(i))``. Post-hoc
de-centering adds ``Sigma_hat^{-1} mu_bar_hat^(t)`` back to every weight of task t and the
matching scalar to its biases; at the population it returns the Bayes head exactly.

Deviations from the paper
-------------------------
- Only the abstract is available. The bias scalar ``s_t = mean_{c in C_t}(-1/2 mu_c^T
  Sigma^{-1} mu_c + log pi_c)`` is our reading of "a corresponding scalar to each threshold".
- We re-centre each task's weights and biases before adding the offset, so the result does
  not depend on the gauge the optimiser happened to choose (the paper's heads are centred by
  the penalty; ours are too, up to optimiser tolerance).
- Task means are unweighted means of the class means (equal class weights within a task).
- Heads are fitted by our own L-BFGS on mean cross-entropy + ``(lam / 2) ||W||_F^2`` with an
  unpenalised bias and zero initialisation (scikit-learn's binary logistic regression has a
  different parametrisation for two-class tasks).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from scipy import optimize
from scipy.special import logsumexp

from ._validation import (
    check_choice,
    check_features,
    check_int,
    check_labels,
    check_positive,
    check_shrinkage,
)
from .stats import ClassStats


@dataclass(frozen=True)
class LinearHead:
    """A linear classifier ``f_c(x) = w_c^T x + b_c`` over a set of classes.

    Attributes
    ----------
    W : ndarray of shape (C, d)
        Class weights ``w_c``.
    b : ndarray of shape (C,)
        Biases (thresholds) ``b_c``.
    classes : ndarray of shape (C,)
        Class ids of the rows.
    tasks : ndarray of shape (C,)
        Task id of each class (all zeros for a head fitted on one task).
    """

    W: np.ndarray
    b: np.ndarray
    classes: np.ndarray
    tasks: np.ndarray

    def __post_init__(self) -> None:
        W = np.asarray(self.W, dtype=float)
        if W.ndim != 2:
            raise ValueError(f"W must be 2-D of shape (C, d), got shape {W.shape}")
        C = W.shape[0]
        for name in ("b", "classes", "tasks"):
            if np.shape(getattr(self, name)) != (C,):
                raise ValueError(f"{name} must have shape ({C},) to match W, got "
                                 f"{np.shape(getattr(self, name))}")
        if len(np.unique(self.classes)) != C:
            raise ValueError("classes must be distinct")

    @property
    def dim(self) -> int:
        """Feature dimension ``d``."""
        return int(self.W.shape[1])

    def decision_function(self, X) -> np.ndarray:
        """Logits ``X W^T + b`` of shape (n, C)."""
        X = check_features(X, dim=self.dim)
        return X @ self.W.T + self.b  # (n, C)

    def predict(self, X) -> np.ndarray:
        """Class ids of the largest logit, shape (n,)."""
        return self.classes[np.argmax(self.decision_function(X), axis=1)]

    def task_block(self, task) -> LinearHead:
        """The rows of one task."""
        keep = self.tasks == task
        if not np.any(keep):
            raise ValueError(f"task {task!r} is not in this head (tasks: {np.unique(self.tasks)})")
        return LinearHead(self.W[keep], self.b[keep], self.classes[keep], self.tasks[keep])


def concat_heads(heads: Sequence[LinearHead]) -> LinearHead:
    """Stack per-task heads into one class-incremental head (argmax over all classes)."""
    heads = _check_heads(heads)
    return LinearHead(
        W=np.vstack([h.W for h in heads]),
        b=np.concatenate([h.b for h in heads]),
        classes=np.concatenate([h.classes for h in heads]),
        tasks=np.concatenate([h.tasks for h in heads]),
    )


def _check_heads(heads) -> list[LinearHead]:
    if isinstance(heads, LinearHead):
        heads = [heads]
    if not isinstance(heads, (list, tuple)):
        raise TypeError(f"heads must be a LinearHead or a list of them, got "
                        f"{type(heads).__name__}")
    heads = list(heads)
    if not heads:
        raise ValueError("heads is empty; pass at least one LinearHead")
    for h in heads:
        if not isinstance(h, LinearHead):
            raise TypeError(f"heads must hold LinearHead objects, got {type(h).__name__}")
    dims = {h.dim for h in heads}
    if len(dims) != 1:
        raise ValueError(f"heads have different feature dimensions {sorted(dims)}")
    classes = np.concatenate([h.classes for h in heads])
    if len(np.unique(classes)) != len(classes):
        raise ValueError("heads: a class id appears in two heads; class sets must be disjoint")
    return heads


# --------------------------------------------------------------------------- fitting


def _softmax_objective(theta, X, Y, lam):
    """Mean cross-entropy + lam/2 ||W||^2 and its gradient; theta = [W.ravel(), b]."""
    n, d = X.shape
    C = Y.shape[1]
    W = theta[: C * d].reshape(C, d)
    b = theta[C * d:]
    Z = X @ W.T + b  # (n, C)
    lse = logsumexp(Z, axis=1)  # (n,)
    loss = np.mean(lse - np.sum(Z * Y, axis=1)) + 0.5 * lam * np.sum(W**2)
    G = (np.exp(Z - lse[:, None]) - Y) / n  # (n, C): d loss / d Z
    gW = G.T @ X + lam * W
    gb = G.sum(axis=0)  # sums to zero across classes: the bias gauge stays centred
    return loss, np.concatenate([gW.ravel(), gb])


def _fit_softmax(X, y, *, weight_decay, max_iter, tol, min_classes, task_id,
                 return_n_iter=False):
    X = check_features(X)
    y = check_labels(y, X.shape[0])
    lam = check_positive(weight_decay, "weight_decay", allow_zero=True)
    max_iter = check_int(max_iter, "max_iter", min_value=1)
    tol = check_positive(tol, "tol")
    classes, inverse = np.unique(y, return_inverse=True)
    if len(classes) < min_classes:
        raise ValueError(f"y holds {len(classes)} class(es) {classes.tolist()}; the softmax head "
                         f"needs at least {min_classes} classes per task")
    n, d = X.shape
    C = len(classes)
    Y = np.zeros((n, C))
    Y[np.arange(n), inverse] = 1.0
    theta0 = np.zeros(C * d + C)  # zero initialisation (centred gauge)
    res = optimize.minimize(_softmax_objective, theta0, args=(X, Y, lam), jac=True,
                            method="L-BFGS-B",
                            options={"maxiter": max_iter, "gtol": tol, "ftol": tol * 1e-3})
    W = res.x[: C * d].reshape(C, d)
    b = res.x[C * d:]
    head = LinearHead(W, b, classes, np.full(C, task_id, dtype=np.int64))
    return (head, max(int(res.nit), 1)) if return_n_iter else head


def fit_within_task_head(X, y, *, weight_decay=1e-4, max_iter=1000, tol=1e-8,
                         task_id=0) -> LinearHead:
    """Fit a softmax head on one task's classes only (the sequential CIL head).

    Minimises ``mean_i CE(softmax_{C_t}(W x_i + b), y_i) + (lam / 2) ||W||_F^2`` by L-BFGS
    from zero, with an unpenalised bias.

    Parameters
    ----------
    X : array-like of shape (n, d)
        Frozen features of task t.
    y : array-like of shape (n,)
        Class ids; at least two distinct classes (a one-class softmax is constant).
    weight_decay : float
        ``lam`` >= 0.
    max_iter : int
        L-BFGS iterations.
    tol : float
        Gradient tolerance.
    task_id : int
        Written into :attr:`LinearHead.tasks`.

    Returns
    -------
    LinearHead

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> X = np.vstack([rng.normal(-1, 1, (50, 2)), rng.normal(1, 1, (50, 2))])
    >>> head = fit_within_task_head(X, np.repeat([3, 5], 50))
    >>> head.classes.tolist(), bool(abs(head.W.sum(axis=0)).max() < 1e-6)
    ([3, 5], True)
    """
    task_id = check_int(task_id, "task_id", max_value=2**31 - 1)
    return _fit_softmax(X, y, weight_decay=weight_decay, max_iter=max_iter, tol=tol,
                        min_classes=2, task_id=task_id)


def fit_joint_head(X, y, *, weight_decay=1e-4, max_iter=1000, tol=1e-8) -> LinearHead:
    """Fit one softmax head on all classes jointly (the upper bound of CIL).

    Same objective as :func:`fit_within_task_head`, with the softmax over every class.
    """
    return _fit_softmax(X, y, weight_decay=weight_decay, max_iter=max_iter, tol=tol,
                        min_classes=2, task_id=0)


# --------------------------------------------------------------------------- closed forms


@dataclass(frozen=True)
class PopulationHeads:
    """Closed-form heads of the shared-covariance Gaussian model.

    Attributes
    ----------
    joint : LinearHead
        The Bayes head ``w_c = Sigma^{-1} mu_c``, ``b_c = -1/2 mu_c^T Sigma^{-1} mu_c +
        log pi_c`` (Eq. 1).
    sequential : list of LinearHead
        The population optima of within-task training as ``lam -> 0``, one per task:
        ``w_c = Sigma^{-1}(mu_c - mu_bar^(t))`` and the task-centred Bayes biases (Eq. 2).
    """

    joint: LinearHead
    sequential: list

    @property
    def sequential_head(self) -> LinearHead:
        """The sequential heads stacked into one class-incremental head."""
        return concat_heads(self.sequential)


def population_heads(stats: ClassStats, *, shrinkage=None, priors="empirical") -> PopulationHeads:
    """Joint (Bayes) and sequential within-task heads in closed form from class statistics.

    Parameters
    ----------
    stats : ClassStats
        Means, covariance and tasks (e.g. :func:`population_stats` for known ``mu_c, Sigma``,
        or accumulated sample statistics).
    shrinkage : None, "ledoit_wolf" or float
        Covariance estimator (see :meth:`ClassStats.covariance`).
    priors : {"empirical", "uniform"}
        Class priors ``pi_c``.

    Returns
    -------
    PopulationHeads

    Examples
    --------
    >>> import numpy as np
    >>> from neurips26.papers.cil_decentering import population_stats
    >>> s = population_stats(np.array([[0., 0.], [2., 0.], [5., 5.], [7., 5.]]), np.eye(2),
    ...                      [0, 0, 1, 1])
    >>> ph = population_heads(s)
    >>> ph.sequential[1].W.tolist()
    [[-1.0, 0.0], [1.0, 0.0]]
    """
    stats, P_mu, bayes_b = _bayes_terms(stats, shrinkage, priors)
    joint = LinearHead(P_mu, bayes_b, stats.classes.copy(), stats.task_of_class.copy())
    seq = []
    for t in stats.tasks:
        k = stats.task_of_class == t
        # Eq. (2): the within-task gauge fix removes the task mean of the weights and biases.
        W = P_mu[k] - P_mu[k].mean(axis=0)
        b = bayes_b[k] - bayes_b[k].mean()
        seq.append(LinearHead(W, b, stats.classes[k], stats.task_of_class[k]))
    return PopulationHeads(joint, seq)


def _bayes_terms(stats, shrinkage, priors):
    if not isinstance(stats, ClassStats):
        raise TypeError(f"stats must be a ClassStats, got {type(stats).__name__}")
    check_shrinkage(shrinkage)
    check_choice(priors, "priors", ("empirical", "uniform"))
    if np.any(stats.counts <= 0):
        raise ValueError("stats: every class needs at least one sample for its mean")
    P_mu = stats.precision_times(stats.means.T, shrinkage).T  # (C, d): Sigma^{-1} mu_c
    # Eq. (1): Bayes biases -1/2 mu_c^T Sigma^{-1} mu_c + log pi_c.
    bayes_b = -0.5 * np.sum(stats.means * P_mu, axis=1) + np.log(stats.priors(priors))
    return stats, P_mu, bayes_b


# --------------------------------------------------------------------------- de-centering


def decenter(heads, stats: ClassStats, *, shrinkage="ledoit_wolf",
             priors="empirical") -> LinearHead:
    """Post-hoc de-centering of within-task heads (the paper's correction).

    For every task t with classes ``C_t`` (Eq. 4)::

        w_c <- (w_c - mean_{C_t} w) + Sigma_hat^{-1} mu_bar_hat^(t)
        b_c <- (b_c - mean_{C_t} b) + mean_{c' in C_t}(-1/2 mu_c'^T Sigma_hat^{-1} mu_c'
                                                        + log pi_c')

    Parameters
    ----------
    heads : LinearHead or sequence of LinearHead
        The within-task heads (one per task, or already stacked); tasks are read from
        ``stats``, not from the heads.
    stats : ClassStats
        Class statistics holding every class of the heads.
    shrinkage : None, "ledoit_wolf" or float
        Covariance estimator for ``Sigma_hat``.
    priors : {"empirical", "uniform"}
        Class priors in the bias scalar.

    Returns
    -------
    LinearHead
        The corrected class-incremental head, rows in the order of ``heads``.

    Examples
    --------
    >>> import numpy as np
    >>> from neurips26.papers.cil_decentering import population_stats, population_heads
    >>> s = population_stats(np.array([[0., 0.], [2., 0.], [5., 5.], [7., 5.]]), np.eye(2),
    ...                      [0, 0, 1, 1])
    >>> ph = population_heads(s)
    >>> fixed = decenter(ph.sequential, s, shrinkage=None)
    >>> bool(np.allclose(fixed.W, ph.joint.W) and np.allclose(fixed.b, ph.joint.b))
    True
    """
    head = concat_heads(_check_heads(heads))
    if not isinstance(stats, ClassStats):
        raise TypeError(f"stats must be a ClassStats, got {type(stats).__name__}")
    if head.dim != stats.dim:
        raise ValueError(f"heads have dim {head.dim} but stats have dim {stats.dim} "
                         "(feature dimension mismatch)")
    idx = stats.index_of(head.classes)  # ValueError for classes not in the statistics
    _, P_mu, bayes_b = _bayes_terms(stats, shrinkage, priors)
    tasks = stats.task_of_class[idx]
    W = head.W.copy()
    b = head.b.copy()
    for t in np.unique(tasks):
        rows = np.flatnonzero(tasks == t)
        if np.sum(stats.task_of_class == t) != len(rows):
            raise ValueError(f"heads cover only {len(rows)} of the "
                             f"{int(np.sum(stats.task_of_class == t))} classes of task {t}; "
                             "pass every class of a task")
        # Sigma^{-1} mu_bar^(t) = mean_c Sigma^{-1} mu_c.
        offset = P_mu[idx[rows]].mean(axis=0)
        W[rows] = W[rows] - W[rows].mean(axis=0) + offset
        b[rows] = b[rows] - b[rows].mean() + bayes_b[idx[rows]].mean()
    return LinearHead(W, b, head.classes.copy(), tasks.copy())
