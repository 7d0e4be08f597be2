"""Synthetic class-incremental tasks: shared-covariance Gaussians and the failure construction.

Deviations from the paper
-------------------------
- The task-level / within-task spread of the means, the covariance spectrum and the failure
  construction's geometry (task A at ``+/- R u``, task B at ``m +/- r v``) are our choices;
  the abstract states only that the construction exists.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ._validation import MAX_SCALE, MAX_SIZE, check_int, check_positive, check_rng
from .stats import ClassStats, population_stats


def random_spd(dim: int, condition_number: float, rng: np.random.Generator) -> np.ndarray:
    """A random SPD matrix with log-spaced eigenvalues of mean 1 and the given condition number."""
    dim = check_int(dim, "dim", min_value=1, max_value=MAX_SIZE)
    condition_number = check_positive(condition_number, "condition_number")
    rng = check_rng(rng)
    if condition_number < 1:
        raise ValueError(f"condition_number must be >= 1, got {condition_number}")
    Q, _ = np.linalg.qr(rng.normal(size=(dim, dim)))
    eig = np.geomspace(1.0, condition_number, dim)
    eig /= eig.mean()
    cov = (Q * eig) @ Q.T
    return 0.5 * (cov + cov.T)


@dataclass(frozen=True)
class GaussianTasks:
    """Class-conditional Gaussians ``x | c ~ N(mu_c, Sigma)`` split into tasks.

    Attributes
    ----------
    means : ndarray of shape (C, d)
    cov : ndarray of shape (d, d)
    task_of_class : ndarray of shape (C,)
    """

    means: np.ndarray
    cov: np.ndarray
    task_of_class: np.ndarray

    @property
    def num_tasks(self) -> int:
        return len(np.unique(self.task_of_class))

    def stats(self) -> ClassStats:
        """Population statistics (equal priors)."""
        return population_stats(self.means, self.cov, self.task_of_class)

    def sample(self, num_per_class: int, rng: np.random.Generator, *, classes=None):
        """Draw ``num_per_class`` samples of each class (or of ``classes``).

        Returns
        -------
        X : ndarray of shape (n, d)
        y : ndarray of shape (n,)
        """
        num_per_class = check_int(num_per_class, "num_per_class", min_value=1)
        classes = np.arange(len(self.means)) if classes is None else np.asarray(classes)
        L = np.linalg.cholesky(self.cov)
        y = np.repeat(classes, num_per_class)
        X = self.means[y] + rng.normal(size=(len(y), self.means.shape[1])) @ L.T
        return X, y

    def sample_task(self, task: int, num_per_class: int, rng: np.random.Generator):
        """Samples of one task's classes."""
        return self.sample(num_per_class, rng, classes=np.flatnonzero(self.task_of_class == task))


def gaussian_tasks(*, num_tasks=5, classes_per_task=4, dim=32, task_scale=2.0,
                   class_scale=1.0, condition_number=10.0,
                   rng: np.random.Generator) -> GaussianTasks:
    """Random shared-covariance Gaussian tasks: ``mu_c = m_t + delta_c``.

    Parameters
    ----------
    num_tasks, classes_per_task, dim : int
        ``T``, classes per task and ``d``.
    task_scale : float
        Standard deviation of the task offsets ``m_t`` (per coordinate).
    class_scale : float
        Standard deviation of the within-task offsets ``delta_c`` (per coordinate).
    condition_number : float
        Condition number of ``Sigma``.
    rng : numpy Generator

    Examples
    --------
    >>> import numpy as np
    >>> g = gaussian_tasks(num_tasks=2, classes_per_task=3, dim=4, rng=np.random.default_rng(0))
    >>> g.means.shape, g.task_of_class.tolist()
    ((6, 4), [0, 0, 0, 1, 1, 1])
    """
    T = check_int(num_tasks, "num_tasks", min_value=1, max_value=MAX_SIZE)
    K = check_int(classes_per_task, "classes_per_task", min_value=1, max_value=MAX_SIZE)
    d = check_int(dim, "dim", min_value=1, max_value=MAX_SIZE)
    if T * K * d > 10**8:
        raise ValueError(f"num_tasks * classes_per_task * dim = {T * K * d} exceeds 10**8 "
                         "entries")
    if check_positive(task_scale, "task_scale", allow_zero=True) > MAX_SCALE:
        raise ValueError(f"task_scale must be <= {MAX_SCALE:g}, got {task_scale}")
    if check_positive(class_scale, "class_scale") > MAX_SCALE:
        raise ValueError(f"class_scale must be <= {MAX_SCALE:g}, got {class_scale}")
    rng = check_rng(rng)
    cov = random_spd(d, condition_number, rng)
    offsets = task_scale * rng.normal(size=(T, d))
    means = np.repeat(offsets, K, axis=0) + class_scale * rng.normal(size=(T * K, d))
    return GaussianTasks(means, cov, np.repeat(np.arange(T), K))


def failure_construction(*, ratio: float, task_distance: float, radius: float = 2.0,
                         dim: int = 3) -> GaussianTasks:
    """Two tasks without separation: A at ``+/- R u``, B at ``m +/- r v``, ``Sigma = I``.

    ``R = radius``, ``r = R / ratio``; ``u = e_1``, ``v = e_2`` and ``m`` of norm
    ``task_distance`` along ``(e_1 + e_3) / sqrt(2)`` (so ``u^T Sigma^{-1} m != 0``). As
    ``ratio = R / r`` grows, the centred heads of A dominate on B's inputs whatever ``||m||``.
    """
    ratio = check_positive(ratio, "ratio")
    check_positive(task_distance, "task_distance", allow_zero=True)
    R = check_positive(radius, "radius")
    d = check_int(dim, "dim", min_value=3, max_value=MAX_SIZE)
    r = R / ratio
    e = np.eye(d)
    m = task_distance * (e[0] + e[2]) / np.sqrt(2.0)
    means = np.stack([R * e[0], -R * e[0], m + r * e[1], m - r * e[1]])
    return GaussianTasks(means, np.eye(d), np.array([0, 0, 1, 1]))
