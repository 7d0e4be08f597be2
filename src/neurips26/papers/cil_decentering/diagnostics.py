"""The falsifiable offset diagnostic, task confusion, separation quantities and the bound.

The paper's diagnosis is falsifiable because the offset between a sequential and the joint
cross-task discriminator is the *same* vector for every class pair of a task block. For
``c`` in task i and ``c'`` in task j let ``Delta_c = w_c^seq - w_c^J``; then
``D_cc' = Delta_c - Delta_c'`` and, at the population, ``D_cc' = Sigma^{-1}(mu_bar^(j) -
mu_bar^(i))`` for all pairs. The block dispersion ``mean ||D_cc' - D_bar_ij||^2 / ||D_bar_ij||^2``
is then 0; with task labels permuted at random (the control) it is not.

Deviations from the paper
-------------------------
- ``gamma_ij = ||mu_bar^(i) - mu_bar^(j)||^2_{Sigma^{-1}}`` and ``kappa_ij = min_{c, c'}
  ||mu_c - mu_c'||_{Sigma^{-1}} / ||mu_bar^(i) - mu_bar^(j)||_{Sigma^{-1}}`` are our reading:
  the abstract names but does not define them.
- The block dispersion uses the identity ``mean_{c, c'} ||D_cc' - D_bar_ij||^2 = V_i + V_j``
  (``V_t`` the mean squared deviation of ``Delta_c`` within task t) instead of looping over
  the ``C^2`` pairs; a test checks it against the loop.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from neurips26.common import validation as _common

from ._validation import MAX_SIZE, check_features, check_int, check_labels, check_positive
from .heads import LinearHead
from .stats import ClassStats


@dataclass(frozen=True)
class OffsetDiagnostic:
    """Result of :func:`offset_diagnostic` (tasks in the order of ``stats.tasks``).

    Attributes
    ----------
    tasks : ndarray of shape (T,)
    block_dispersion : ndarray of shape (T, T)
        ``mean ||D_cc' - D_bar_ij||^2 / ||D_bar_ij||^2`` (NaN on the diagonal).
    offset_cosine : ndarray of shape (T, T)
        ``cos(D_bar_ij, Sigma_hat^{-1}(mu_bar^(j) - mu_bar^(i)))`` (NaN on the diagonal).
    max_abs_error : float
        ``max_{c, c'} |D_cc' - Sigma_hat^{-1}(mu_bar^(j) - mu_bar^(i))|`` over all entries.
    permutation_dispersion : ndarray of shape (num_permutations,)
        Mean off-diagonal block dispersion with class-to-task labels permuted at random.
    """

    tasks: np.ndarray
    block_dispersion: np.ndarray
    offset_cosine: np.ndarray
    max_abs_error: float
    permutation_dispersion: np.ndarray

    @property
    def mean_dispersion(self) -> float:
        """Mean off-diagonal block dispersion."""
        return float(np.nanmean(self.block_dispersion))

    @property
    def min_cosine(self) -> float:
        """Smallest off-diagonal offset cosine."""
        return float(np.nanmin(self.offset_cosine))

    @property
    def control_quantile(self) -> float:
        """Fraction of permuted controls with dispersion <= the observed one (a p-value)."""
        perm = self.permutation_dispersion
        return float((1 + np.sum(perm <= self.mean_dispersion)) / (1 + len(perm)))


def _block_dispersion(delta: np.ndarray, labels: np.ndarray, tasks: np.ndarray) -> np.ndarray:
    """(T, T) dispersion from per-class offsets ``delta`` (C, d) and task labels (C,)."""
    T = len(tasks)
    centres = np.stack([delta[labels == t].mean(axis=0) for t in tasks])  # (T, d)
    var = np.array([np.mean(np.sum((delta[labels == t] - centres[i]) ** 2, axis=1))
                    for i, t in enumerate(tasks)])  # (T,) V_t
    out = np.full((T, T), np.nan)
    for i in range(T):
        for j in range(T):
            if i != j:
                # mean ||D - D_bar||^2 = V_i + V_j ; D_bar_ij = Delta_bar_i - Delta_bar_j
                denom = np.sum((centres[i] - centres[j]) ** 2)
                with np.errstate(divide="ignore", over="ignore", invalid="ignore"):
                    out[i, j] = (var[i] + var[j]) / denom if denom > 0 else np.inf
    return out


def offset_diagnostic(seq: LinearHead, joint: LinearHead, stats: ClassStats, *,
                      shrinkage="ledoit_wolf", num_permutations=100, seed=0) -> OffsetDiagnostic:
    """Check that sequential-minus-joint offsets are constant within each task block.

    Parameters
    ----------
    seq : LinearHead
        Stacked sequential (within-task) head.
    joint : LinearHead
        Joint head over the same classes.
    stats : ClassStats
        Statistics of all classes (gives the tasks and ``Sigma_hat^{-1} mu_bar^(t)``).
    shrinkage : None, "ledoit_wolf" or float
        Covariance estimator for the predicted offset.
    num_permutations : int
        Permuted-task controls (task sizes kept).
    seed : int
        Seed of the permutations.

    Returns
    -------
    OffsetDiagnostic
    """
    if not isinstance(stats, ClassStats):
        raise TypeError(f"stats must be a ClassStats, got {type(stats).__name__}")
    for name, h in (("seq", seq), ("joint", joint)):
        if not isinstance(h, LinearHead):
            raise TypeError(f"{name} must be a LinearHead, got {type(h).__name__}")
        if h.dim != stats.dim:
            raise ValueError(f"{name} has dim {h.dim} but stats have dim {stats.dim}")
    if set(seq.classes.tolist()) != set(joint.classes.tolist()):
        raise ValueError("seq and joint must hold the same classes")
    num_permutations = check_int(num_permutations, "num_permutations", min_value=0,
                                 max_value=MAX_SIZE)
    seed = check_int(seed, "seed")
    idx = stats.index_of(seq.classes)
    order = np.argsort(idx)
    idx = idx[order]
    jpos = {int(c): i for i, c in enumerate(joint.classes)}
    Wj = joint.W[[jpos[int(c)] for c in seq.classes[order]]]
    delta = seq.W[order] - Wj  # (C, d): Delta_c = w_c^seq - w_c^J
    labels = stats.task_of_class[idx]
    tasks = np.array([t for t in stats.tasks if t in set(labels.tolist())])
    if len(tasks) < 2:
        raise ValueError("offset_diagnostic needs at least two tasks")
    disp = _block_dispersion(delta, labels, tasks)
    # Predicted offset Sigma^{-1}(mu_bar^(j) - mu_bar^(i)) = P_mu_bar_j - P_mu_bar_i.
    P_mu = stats.precision_times(stats.means[idx].T, shrinkage).T  # (C, d)
    pm = np.stack([P_mu[labels == t].mean(axis=0) for t in tasks])  # (T, d)
    centres = np.stack([delta[labels == t].mean(axis=0) for t in tasks])
    T = len(tasks)
    cos = np.full((T, T), np.nan)
    max_err = 0.0
    for i in range(T):
        for j in range(T):
            if i == j:
                continue
            pred = pm[j] - pm[i]
            dbar = centres[i] - centres[j]
            cos[i, j] = dbar @ pred / max(np.linalg.norm(dbar) * np.linalg.norm(pred),
                                          np.finfo(float).tiny)
            D = delta[labels == tasks[i]][:, None, :] - delta[labels == tasks[j]][None, :, :]
            max_err = max(max_err, float(np.max(np.abs(D - pred))))
    rng = np.random.default_rng(seed)
    perm = np.array([np.nanmean(_block_dispersion(delta, rng.permutation(labels), tasks))
                     for _ in range(num_permutations)])
    return OffsetDiagnostic(tasks, disp, cos, max_err, perm)


def task_confusion(head: LinearHead, X, y) -> float:
    """Fraction of samples predicted as a class of another task than their own.

    Parameters
    ----------
    head : LinearHead
        A class-incremental head (its ``tasks`` give each class's task).
    X : array-like of shape (n, d)
    y : array-like of shape (n,)
        True class ids (all among ``head.classes``).
    """
    if not isinstance(head, LinearHead):
        raise TypeError(f"head must be a LinearHead, got {type(head).__name__}")
    X = check_features(X, dim=head.dim)
    y = check_labels(y, X.shape[0])
    task = {int(c): int(t) for c, t in zip(head.classes, head.tasks, strict=True)}
    unknown = sorted(set(np.unique(y).tolist()) - set(task))
    if unknown:
        raise ValueError(f"y holds classes {unknown[:5]} that the head does not know")
    pred = head.predict(X)
    true_t = np.array([task[int(c)] for c in y])
    pred_t = np.array([task[int(c)] for c in pred])
    return float(np.mean(true_t != pred_t))


def gap_recovered(acc_seq, acc_joint, acc_fixed) -> float:
    """Share of the joint-sequential accuracy gap closed: ``(fixed - seq) / (joint - seq)``.

    Examples
    --------
    >>> round(gap_recovered(0.5, 0.9, 0.86), 6)
    0.9
    """
    vals = {}
    for name, v in (("acc_seq", acc_seq), ("acc_joint", acc_joint), ("acc_fixed", acc_fixed)):
        v = check_positive(v, name, allow_zero=True)
        if v > 1:
            raise ValueError(f"{name} must be an accuracy in [0, 1], got {v}")
        vals[name] = v
    gap = vals["acc_joint"] - vals["acc_seq"]
    if gap <= 0:
        raise ValueError(f"acc_joint ({acc_joint}) must exceed acc_seq ({acc_seq}): there is no "
                         "gap to recover")
    return (vals["acc_fixed"] - vals["acc_seq"]) / gap


@dataclass(frozen=True)
class Separation:
    """Task-pair separation quantities (our inferred definitions).

    Attributes
    ----------
    tasks : ndarray of shape (T,)
    gamma : ndarray of shape (T, T)
        ``||mu_bar^(i) - mu_bar^(j)||^2_{Sigma^{-1}}``.
    kappa : ndarray of shape (T, T)
        Smallest cross-class Mahalanobis distance over the task-mean distance.
    """

    tasks: np.ndarray
    gamma: np.ndarray
    kappa: np.ndarray

    def bound(self) -> np.ndarray:
        """``exp(-(kappa - 1)^2 gamma / 8)`` where ``kappa > 1``, else 1 (T, T)."""
        return confusion_bound(self.kappa, self.gamma)


def separation(stats: ClassStats, *, shrinkage=None) -> Separation:
    """``gamma_ij`` and ``kappa_ij`` for every pair of tasks from class statistics."""
    if not isinstance(stats, ClassStats):
        raise TypeError(f"stats must be a ClassStats, got {type(stats).__name__}")
    tasks = stats.tasks
    T = len(tasks)
    P_mu = stats.precision_times(stats.means.T, shrinkage).T  # (C, d)

    def maha2(a, b, Pa, Pb):  # ||a - b||^2_{Sigma^{-1}}
        return float((a - b) @ (Pa - Pb))

    bars = [stats.means[stats.task_of_class == t].mean(axis=0) for t in tasks]
    pbars = [P_mu[stats.task_of_class == t].mean(axis=0) for t in tasks]
    gamma = np.zeros((T, T))
    kappa = np.full((T, T), np.nan)
    for i, ti in enumerate(tasks):
        for j, tj in enumerate(tasks):
            if i == j:
                continue
            gamma[i, j] = maha2(bars[i], bars[j], pbars[i], pbars[j])
            ci = np.flatnonzero(stats.task_of_class == ti)
            cj = np.flatnonzero(stats.task_of_class == tj)
            dmin = min(maha2(stats.means[a], stats.means[b], P_mu[a], P_mu[b])
                       for a in ci for b in cj)
            kappa[i, j] = np.sqrt(dmin / gamma[i, j]) if gamma[i, j] > 0 else np.inf
    return Separation(tasks, gamma, kappa)


def confusion_bound(kappa, gamma) -> np.ndarray:
    """The paper's rate ``exp(-(kappa - 1)^2 gamma / 8)`` for ``kappa > 1`` (1 otherwise).

    Examples
    --------
    >>> round(float(confusion_bound(3.0, 8.0)), 6)
    0.018316
    """
    kappa = _common.check_array(kappa, "kappa", ndim=None, min_size=1, finite=False)
    gamma = _common.check_array(gamma, "gamma", ndim=None, min_size=1, finite=False)
    try:
        np.broadcast_shapes(kappa.shape, gamma.shape)
    except ValueError:
        raise ValueError(f"kappa {kappa.shape} and gamma {gamma.shape} do not broadcast") from None
    if np.any(gamma[np.isfinite(gamma)] < 0):
        raise ValueError("gamma must be >= 0")
    with np.errstate(invalid="ignore"):
        out = np.where(kappa > 1, np.exp(-((kappa - 1) ** 2) * gamma / 8.0), 1.0)
    return out
