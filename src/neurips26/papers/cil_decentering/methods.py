"""Five published class-incremental methods, as linear heads trained on frozen features.

Each function trains one head task after task on task-local data (plus, for the rehearsal
methods, a small exemplar memory) and returns the :class:`LinearHead` over every class seen,
rows in arrival order, ``tasks`` the task index of each class. They are the heads that the
paper's offset diagnostic (:func:`offset_diagnostic`) and de-centering (:func:`decenter`) are
applied to.

- :func:`finetune`: sequential within-task softmax, one head per task, stacked (the paper's
  own setting; often called "fine-tuning" or the sequential lower bound).
- :func:`lwf`: Learning without Forgetting (Li and Hoiem, ECCV 2016; TPAMI 2018).
- :func:`ewc`: Elastic Weight Consolidation (Kirkpatrick et al., PNAS 2017).
- :func:`replay`: experience replay from a class-balanced exemplar memory chosen by iCaRL's
  herding (Rebuffi et al., CVPR 2017; Chaudhry et al., arXiv:1902.10486, 2019).
- :func:`wa`: Weight Aligning (Zhao et al., CVPR 2020): replay with distillation, then the
  new classes' weight norms rescaled to the old classes' mean norm.

All but :func:`finetune` keep one growing head with a softmax over every class seen so far
(the class-incremental convention of van de Ven, Tuytelaars and Tolias, Nature Machine
Intelligence 2022), and fit each task to convergence by full-batch L-BFGS from the previous
head (new rows from zero).

Deviations and what is inferred
-------------------------------
- The published methods train the backbone too; here the features are frozen and only the
  linear head is learned, so what each method protects is the head alone.
- LwF and EWC use the softmax over all classes seen so far (van de Ven et al. 2022), not the
  new task's classes only (as PyCIL and FACIL do): with frozen features and a task-local
  softmax, the old rows see only the distillation or the EWC penalty, both minimal at the
  old head, and LwF and EWC would coincide with :func:`finetune`.
- LwF: ``lambda_o = 1`` and ``T = 2`` (Li and Hoiem); the distillation term is their
  modified cross-entropy, written as the KL divergence (same gradient, zero at the teacher),
  without Hinton's ``T^2`` factor. The bias is penalised with the weights (as torch's
  ``weight_decay`` does): the distillation is blind to a common shift of the old logits and
  the all-classes cross-entropy on new data pushes it down without bound otherwise.
- EWC: the exact diagonal of the true Fisher of the softmax head (:func:`fisher_diagonal`)
  on each task's training data at that task's solution, one penalty per earlier task
  (Kirkpatrick et al.), weights and biases. ``ewc_lambda = 1`` by default: for a softmax
  head the Fisher equals the Hessian of the mean cross-entropy, so the penalty is the
  diagonal Laplace approximation of each earlier task's mean loss (tasks of equal size).
- Replay: herding on the raw frozen features (iCaRL herds L2-normalised ones), a fixed
  number of exemplars per class (Chaudhry et al.'s per-class slots) rather than iCaRL's
  fixed total budget, and the softmax classifier rather than iCaRL's nearest-mean rule.
- WA: training loss ``(1 - lambda) CE + lambda KD`` with ``lambda = C_old / C_seen`` and
  ``T = 2`` on the new data and the memory (Zhao et al.), then ``gamma = mean ||w_old|| /
  mean ||w_new||`` multiplies the new weight rows; biases are kept (as PyCIL does) and WA's
  clipping of weights to non-negative values (for post-ReLU features) is left out.
- Weight decay ``(lam / 2) ||W||_F^2`` as in :func:`fit_within_task_head`; the bias is
  unpenalised except in LwF.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from scipy import optimize
from scipy.special import softmax

from neurips26.common import validation as _common

from ._validation import check_features, check_int, check_labels, check_positive
from .heads import LinearHead, concat_heads, fit_within_task_head

__all__ = ["ewc", "finetune", "fisher_diagonal", "herding", "lwf", "replay", "wa"]


# --------------------------------------------------------------------------- checks


def _check_tasks(tasks, *, two_classes_each: bool = False) -> list[tuple[np.ndarray, np.ndarray]]:
    """``tasks`` as a list of ``(X, y)`` with a common dimension and disjoint classes.

    The first task needs two classes (a softmax over one class is constant), every task does
    with ``two_classes_each`` (the within-task softmax).
    """
    if isinstance(tasks, (str, bytes)) or not isinstance(tasks, Sequence):
        raise TypeError(f"tasks must be a list of (X, y) pairs, got {type(tasks).__name__}")
    if len(tasks) == 0:
        raise ValueError("tasks is empty; pass at least one (X, y) pair")
    out, seen, dim = [], set(), None
    for t, task in enumerate(tasks):
        if isinstance(task, (str, bytes)) or not isinstance(task, Sequence) or len(task) != 2:
            raise TypeError(f"tasks[{t}] must be an (X, y) pair, got {type(task).__name__}")
        X = check_features(task[0], name=f"tasks[{t}] X")
        y = check_labels(task[1], X.shape[0], name=f"tasks[{t}] y")
        if dim is not None and X.shape[1] != dim:
            raise ValueError(f"tasks[{t}] X has {X.shape[1]} features but tasks[0] X has {dim} "
                             "(feature dimension mismatch)")
        dim = X.shape[1]
        classes = set(np.unique(y).tolist())
        if classes & seen:
            raise ValueError(f"tasks[{t}] y repeats classes {sorted(classes & seen)[:5]} of an "
                             "earlier task; class sets must be disjoint")
        need = 2 if t == 0 or two_classes_each else 1
        if len(classes) < need:
            raise ValueError(f"tasks[{t}] y holds {len(classes)} class(es); this method needs "
                             f"at least {need} per task")
        seen |= classes
        out.append((X, y))
    return out


def _check_common(weight_decay, max_iter, tol) -> tuple[float, int, float]:
    return (check_positive(weight_decay, "weight_decay", allow_zero=True),
            check_int(max_iter, "max_iter", min_value=1),
            check_positive(tol, "tol"))


def _check_memory(memory_per_class, selection, seed):
    if memory_per_class is not None:
        memory_per_class = check_int(memory_per_class, "memory_per_class", min_value=1)
    _common.check_choice(selection, "selection", ("herding", "random"))
    return memory_per_class, check_int(seed, "seed")


# --------------------------------------------------------------------------- fitting


def _log_softmax(Z: np.ndarray) -> np.ndarray:
    """Row-wise log-softmax of (n, C) logits (scipy's is slower on small arrays)."""
    Z = Z - Z.max(axis=1, keepdims=True)
    return Z - np.log(np.sum(np.exp(Z), axis=1, keepdims=True))


def _objective(theta, X, Y, C, lam, bias_decay, ce_weight, kd, ewc):
    """Loss and gradient of one task's growing-head objective; ``theta = [W.ravel(), b]``.

    ``ce_weight * mean CE(softmax(XW^T + b), Y) + alpha * mean KL(Q || softmax(Z_old / T))
    + (lam / 2)(||W||^2 [+ ||b||^2]) + (mu / 2) sum A (theta - anchor)^2``.
    """
    n, d = X.shape
    W = theta[: C * d].reshape(C, d)
    b = theta[C * d:]
    Z = X @ W.T + b  # (n, C)
    logP = _log_softmax(Z)
    loss = -ce_weight * np.sum(logP * Y) / n
    G = ce_weight * (np.exp(logP) - Y) / n  # (n, C): d loss / d Z
    if kd is not None:
        alpha, T, Q, QlogQ = kd  # Q: (n, K) teacher's tempered softmax over the old classes
        K = Q.shape[1]
        logS = _log_softmax(Z[:, :K] / T)
        loss += alpha * (QlogQ - np.sum(Q * logS)) / n
        G[:, :K] += alpha * (np.exp(logS) - Q) / (T * n)
    gW = G.T @ X + lam * W
    gb = G.sum(axis=0)
    loss += 0.5 * lam * np.sum(W**2)
    if bias_decay:
        gb = gb + lam * b
        loss += 0.5 * lam * np.sum(b**2)
    grad = np.concatenate([gW.ravel(), gb])
    if ewc is not None:
        mu, A, anchor = ewc  # A, anchor: shape of theta (zero for rows added later)
        diff = theta - anchor
        loss += 0.5 * mu * np.sum(A * diff**2)
        grad = grad + mu * A * diff
    return loss, grad


def _fit_growing(X, y, prev: LinearHead | None, task_id: int, *, lam, max_iter, tol,
                 bias_decay=False, ce_weight=1.0, kd=None, ewc=None) -> LinearHead:
    """One task of a growing head: rows of ``prev`` first, then the new classes of ``y``.

    ``kd = (alpha, T)`` distils ``prev``'s tempered softmax over its classes on ``X``;
    ``ewc = (mu, A, anchor)`` in the layout of the new head's ``theta``.
    """
    n, d = X.shape
    old = prev.classes if prev is not None else np.zeros(0, dtype=np.int64)
    new = np.setdiff1d(np.unique(y), old)
    classes = np.concatenate([old, new])
    tasks = np.concatenate([prev.tasks if prev is not None else np.zeros(0, dtype=np.int64),
                            np.full(len(new), task_id, dtype=np.int64)])
    C, K = len(classes), len(old)
    order = np.argsort(classes)
    col = order[np.searchsorted(classes[order], y)]  # (n,) row of each label
    Y = np.zeros((n, C))
    Y[np.arange(n), col] = 1.0
    W0, b0 = np.zeros((C, d)), np.zeros(C)
    if prev is not None:
        W0[:K], b0[:K] = prev.W, prev.b
    kd_terms = None
    if kd is not None and K > 0:
        alpha, T = kd
        logQ = _log_softmax(prev.decision_function(X) / T)  # (n, K)
        Q = np.exp(logQ)
        kd_terms = (alpha, T, Q, float(np.sum(Q * logQ)))
    res = optimize.minimize(
        _objective, np.concatenate([W0.ravel(), b0]),
        args=(X, Y, C, lam, bias_decay, ce_weight, kd_terms, ewc), jac=True,
        method="L-BFGS-B", options={"maxiter": max_iter, "gtol": tol, "ftol": tol * 1e-3})
    return LinearHead(res.x[: C * d].reshape(C, d), res.x[C * d:], classes, tasks)


# --------------------------------------------------------------------------- helpers


def fisher_diagonal(head: LinearHead, X) -> tuple[np.ndarray, np.ndarray]:
    """Diagonal of the true Fisher information of a softmax head on inputs ``X``.

    ``F = mean_i E_{y ~ p(.|x_i)} [(d log p(y | x_i) / d theta)^2]``, in closed form for
    ``p = softmax(W x + b)``: ``F_{w_ck} = mean_i p_ic (1 - p_ic) x_ik^2`` and ``F_{b_c} =
    mean_i p_ic (1 - p_ic)`` (Kirkpatrick et al., PNAS 2017, with the model's own predictive
    distribution as in their paper, not the empirical labels).

    Parameters
    ----------
    head : LinearHead
        Head with ``C`` classes on ``d`` features.
    X : array-like of shape (n, d)
        Inputs (one task's training features).

    Returns
    -------
    F_W : ndarray of shape (C, d)
    F_b : ndarray of shape (C,)

    Examples
    --------
    >>> import numpy as np
    >>> from neurips26.papers.cil_decentering import LinearHead
    >>> h = LinearHead(np.zeros((2, 1)), np.zeros(2), np.array([0, 1]), np.zeros(2, int))
    >>> F_W, F_b = fisher_diagonal(h, np.array([[2.0]]))
    >>> F_W.tolist(), F_b.tolist()
    ([[1.0], [1.0]], [0.25, 0.25])
    """
    if not isinstance(head, LinearHead):
        raise TypeError(f"head must be a LinearHead, got {type(head).__name__}")
    X = check_features(X, dim=head.dim)
    P = softmax(head.decision_function(X), axis=1)  # (n, C)
    V = P * (1.0 - P)
    return V.T @ (X**2) / X.shape[0], V.mean(axis=0)


def herding(X, num: int) -> np.ndarray:
    """Indices of ``num`` exemplars chosen by iCaRL's herding (Rebuffi et al., CVPR 2017).

    Greedily picks, without replacement, the sample that brings the mean of the chosen ones
    closest to the mean of all of ``X``.

    Parameters
    ----------
    X : array-like of shape (n, d)
        Features of one class.
    num : int
        Exemplars to keep (all ``n`` if ``num >= n``).

    Returns
    -------
    ndarray of shape (min(num, n),)
        Row indices, in the order they were chosen.

    Examples
    --------
    >>> herding([[0.0], [10.0], [1.0], [-1.0]], 2).tolist()
    [2, 0]
    """
    X = check_features(X)
    num = check_int(num, "num", min_value=1)
    mu = X.mean(axis=0)
    chosen: list[int] = []
    free = np.ones(len(X), dtype=bool)
    total = np.zeros(X.shape[1])
    for k in range(1, min(num, len(X)) + 1):
        dist = np.sum((mu - (total + X) / k) ** 2, axis=1)
        dist[~free] = np.inf
        i = int(np.argmin(dist))
        chosen.append(i)
        free[i] = False
        total += X[i]
    return np.array(chosen, dtype=np.int64)


def _exemplars(X, y, memory_per_class, selection, rng) -> tuple[np.ndarray, np.ndarray]:
    """Class-balanced exemplars of one task's data (all of it with ``None``)."""
    if memory_per_class is None:
        return X, y
    keep = []
    for c in np.unique(y):
        rows = np.flatnonzero(y == c)
        if selection == "herding":
            keep.append(rows[herding(X[rows], memory_per_class)])
        else:
            keep.append(rng.choice(rows, min(memory_per_class, len(rows)), replace=False))
    keep = np.concatenate(keep)
    return X[keep], y[keep]


# --------------------------------------------------------------------------- the methods


def finetune(tasks, *, weight_decay=1e-4, max_iter=1000, tol=1e-8) -> LinearHead:
    """Sequential within-task softmax: one head per task on its own classes, stacked.

    The paper's setting and the usual lower bound of class-incremental learning (e.g.
    "fine-tuning" in Masana et al., TPAMI 2023). Each task ``t`` minimises ``mean CE(softmax
    over C_t) + (lam / 2) ||W_t||_F^2`` (:func:`fit_within_task_head`); earlier rows are
    never touched.

    Parameters
    ----------
    tasks : sequence of (X, y)
        Per task, features of shape (n_t, d) and class ids of shape (n_t,); at least two
        classes per task, class sets disjoint across tasks.
    weight_decay : float
        ``lam`` >= 0.
    max_iter : int
        L-BFGS iterations per task.
    tol : float
        Gradient tolerance.

    Returns
    -------
    LinearHead
        Over every class, rows task by task (sorted within a task), ``tasks`` = task index.

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> t0 = (rng.normal(size=(20, 2)), np.repeat([0, 1], 10))
    >>> t1 = (rng.normal(size=(20, 2)), np.repeat([2, 3], 10))
    >>> finetune([t0, t1]).tasks.tolist()
    [0, 0, 1, 1]
    """
    data = _check_tasks(tasks, two_classes_each=True)
    lam, max_iter, tol = _check_common(weight_decay, max_iter, tol)
    return concat_heads([fit_within_task_head(X, y, weight_decay=lam, max_iter=max_iter,
                                              tol=tol, task_id=t)
                         for t, (X, y) in enumerate(data)])


def lwf(tasks, *, distill_weight=1.0, temperature=2.0, weight_decay=1e-4, max_iter=1000,
        tol=1e-8) -> LinearHead:
    """Learning without Forgetting (Li and Hoiem, ECCV 2016; TPAMI 2018) on a linear head.

    Task ``t`` (new data only, no exemplars) minimises, from the previous head ``h_{t-1}``::

        mean_i CE(softmax over all seen classes(z_i), y_i)
        + lambda_o mean_i KL(softmax(h_{t-1}(x_i) / T) || softmax(z_i,old / T))
        + (lam / 2)(||W||_F^2 + ||b||^2)

    where ``z_i,old`` are the logits of the classes of earlier tasks and the teacher's
    outputs are recorded on the new task's inputs before training.

    Parameters
    ----------
    tasks : sequence of (X, y)
        Per task, features (n_t, d) and class ids (n_t,); the first task needs two classes,
        class sets disjoint across tasks.
    distill_weight : float
        ``lambda_o`` >= 0 (1 in Li and Hoiem).
    temperature : float
        ``T`` > 0 (2 in Li and Hoiem).
    weight_decay : float
        ``lam`` >= 0, on weights and biases (see the module notes).
    max_iter, tol
        L-BFGS iterations per task and gradient tolerance.

    Returns
    -------
    LinearHead
        Over every class in arrival order, ``tasks`` = task index.

    Notes
    -----
    Inferred: the single growing head with the all-seen-classes softmax (van de Ven et al.,
    2022), the KL form without ``T^2``, and the penalised bias (module notes).
    """
    data = _check_tasks(tasks)
    alpha = check_positive(distill_weight, "distill_weight", allow_zero=True)
    T = check_positive(temperature, "temperature")
    lam, max_iter, tol = _check_common(weight_decay, max_iter, tol)
    head = None
    for t, (X, y) in enumerate(data):
        head = _fit_growing(X, y, head, t, lam=lam, max_iter=max_iter, tol=tol,
                            bias_decay=True, kd=(alpha, T))
    return head


def ewc(tasks, *, ewc_lambda=1.0, weight_decay=1e-4, max_iter=1000, tol=1e-8) -> LinearHead:
    """Elastic Weight Consolidation (Kirkpatrick et al., PNAS 2017) on a linear head.

    After task ``k`` the diagonal Fisher ``F^(k)`` of the head ``theta*_k`` on task ``k``'s
    training data is stored (:func:`fisher_diagonal`, weights and biases). Task ``t`` (new
    data only) minimises, from the previous head::

        mean_i CE(softmax over all seen classes(z_i), y_i) + (lam / 2) ||W||_F^2
        + (ewc_lambda / 2) sum_{k < t} sum_j F^(k)_j (theta_j - theta*_k,j)^2

    where each penalty covers the parameters that existed after task ``k``.

    Parameters
    ----------
    tasks : sequence of (X, y)
        Per task, features (n_t, d) and class ids (n_t,); the first task needs two classes,
        class sets disjoint across tasks.
    ewc_lambda : float
        Penalty strength >= 0 (1: the diagonal Laplace approximation of each earlier task's
        mean loss; see the module notes).
    weight_decay : float
        ``lam`` >= 0 on the weights (bias unpenalised).
    max_iter, tol
        L-BFGS iterations per task and gradient tolerance.

    Returns
    -------
    LinearHead
        Over every class in arrival order, ``tasks`` = task index.

    Notes
    -----
    Inferred: the growing head with the all-seen-classes softmax (van de Ven et al., 2022),
    the exact rather than sampled Fisher, and ``ewc_lambda = 1``.
    """
    data = _check_tasks(tasks)
    mu = check_positive(ewc_lambda, "ewc_lambda", allow_zero=True)
    lam, max_iter, tol = _check_common(weight_decay, max_iter, tol)
    head, A, AM = None, None, None  # A = sum_k F^(k), AM = sum_k F^(k) theta*_k
    d = data[0][0].shape[1]
    for t, (X, y) in enumerate(data):
        penalty = None
        if head is not None:
            C = len(head.classes) + len(np.setdiff1d(np.unique(y), head.classes))
            A_t, AM_t = _pad_theta(A, C, d), _pad_theta(AM, C, d)
            anchor = np.divide(AM_t, A_t, out=np.zeros_like(AM_t), where=A_t > 0)
            penalty = (mu, A_t, anchor)
        head = _fit_growing(X, y, head, t, lam=lam, max_iter=max_iter, tol=tol, ewc=penalty)
        F_W, F_b = fisher_diagonal(head, X)
        F = np.concatenate([F_W.ravel(), F_b])
        theta = np.concatenate([head.W.ravel(), head.b])
        C = len(head.classes)
        A = F if A is None else _pad_theta(A, C, d) + F
        AM = F * theta if AM is None else _pad_theta(AM, C, d) + F * theta
    return head


def _pad_theta(v: np.ndarray, C: int, d: int) -> np.ndarray:
    """``[W.ravel(), b]`` of ``C_old`` rows padded with zero rows to ``C`` rows."""
    C_old = len(v) // (d + 1)
    W = np.zeros((C, d))
    b = np.zeros(C)
    W[:C_old] = v[: C_old * d].reshape(C_old, d)
    b[:C_old] = v[C_old * d:]
    return np.concatenate([W.ravel(), b])


def replay(tasks, *, memory_per_class=20, selection="herding", seed=0, weight_decay=1e-4,
           max_iter=1000, tol=1e-8) -> LinearHead:
    """Experience replay from a class-balanced exemplar memory (iCaRL's rehearsal).

    Task ``t`` minimises ``mean CE(softmax over all seen classes) + (lam / 2) ||W||_F^2`` on
    the new task's data together with the memory, from the previous head; then
    ``memory_per_class`` exemplars of each new class are added to the memory (Rebuffi et
    al., CVPR 2017, herding; Chaudhry et al., arXiv:1902.10486, 2019, tiny episodic
    memories).

    Parameters
    ----------
    tasks : sequence of (X, y)
        Per task, features (n_t, d) and class ids (n_t,); the first task needs two classes,
        class sets disjoint across tasks.
    memory_per_class : int or None
        Exemplars kept per class (>= 1); ``None`` keeps every sample (then the last fit is
        the joint head on all data).
    selection : {"herding", "random"}
        iCaRL's herding (:func:`herding`) or a uniform draw.
    seed : int
        Seed of the uniform draw.
    weight_decay : float
        ``lam`` >= 0 on the weights (bias unpenalised).
    max_iter, tol
        L-BFGS iterations per task and gradient tolerance.

    Returns
    -------
    LinearHead
        Over every class in arrival order, ``tasks`` = task index.

    Notes
    -----
    Inferred: herding on raw features, per-class slots, the softmax classifier (module
    notes).
    """
    data = _check_tasks(tasks)
    memory_per_class, seed = _check_memory(memory_per_class, selection, seed)
    lam, max_iter, tol = _check_common(weight_decay, max_iter, tol)
    return _rehearse(data, memory_per_class, selection, np.random.default_rng(seed), lam,
                     max_iter, tol, distill=False, align=False, temperature=2.0)


def wa(tasks, *, memory_per_class=20, temperature=2.0, distill=True, align=True,
       selection="herding", seed=0, weight_decay=1e-4, max_iter=1000, tol=1e-8) -> LinearHead:
    """Weight Aligning (Zhao et al., CVPR 2020) on a linear head.

    Task ``t`` trains on the new data and the exemplar memory (as :func:`replay`) with
    ``(1 - l) mean CE + l mean KL(softmax(h_{t-1}(x) / T) || softmax(z_old / T))``, ``l =
    C_old / C_seen``, plus ``(lam / 2) ||W||_F^2``; then every new weight row is multiplied
    by ``gamma = mean_{old c} ||w_c|| / mean_{new c} ||w_c||``. The aligned head is the
    teacher of the next task.

    Parameters
    ----------
    tasks : sequence of (X, y)
        Per task, features (n_t, d) and class ids (n_t,); the first task needs two classes,
        class sets disjoint across tasks.
    memory_per_class : int or None
        Exemplars kept per class (>= 1; ``None``: every sample).
    temperature : float
        ``T`` > 0 of the distillation (2 in Zhao et al.).
    distill : bool
        Use the distillation term (``False``: plain replay training).
    align : bool
        Rescale the new rows after each task after the first.
    selection : {"herding", "random"}
        Exemplar selection.
    seed : int
        Seed of the uniform draw.
    weight_decay : float
        ``lam`` >= 0 on the weights (bias unpenalised).
    max_iter, tol
        L-BFGS iterations per task and gradient tolerance.

    Returns
    -------
    LinearHead
        Over every class in arrival order, ``tasks`` = task index.

    Notes
    -----
    Inferred: biases are left unscaled and WA's weight clipping is left out (module notes).
    """
    data = _check_tasks(tasks)
    memory_per_class, seed = _check_memory(memory_per_class, selection, seed)
    T = check_positive(temperature, "temperature")
    distill = _common.check_bool(distill, "distill")
    align = _common.check_bool(align, "align")
    lam, max_iter, tol = _check_common(weight_decay, max_iter, tol)
    return _rehearse(data, memory_per_class, selection, np.random.default_rng(seed), lam,
                     max_iter, tol, distill=distill, align=align, temperature=T)


def _rehearse(data, memory_per_class, selection, rng, lam, max_iter, tol, *, distill, align,
              temperature) -> LinearHead:
    head = None
    mem_X = np.zeros((0, data[0][0].shape[1]))
    mem_y = np.zeros(0, dtype=np.int64)
    for t, (X, y) in enumerate(data):
        Xt, yt = np.vstack([X, mem_X]), np.concatenate([y, mem_y])
        kd, ce_weight = None, 1.0
        if distill and head is not None:
            share = len(head.classes) / (len(head.classes) + len(np.unique(y)))
            kd, ce_weight = (share, temperature), 1.0 - share
        head = _fit_growing(Xt, yt, head, t, lam=lam, max_iter=max_iter, tol=tol,
                            ce_weight=ce_weight, kd=kd)
        if align and t > 0:
            new = head.tasks == t
            norms = np.linalg.norm(head.W, axis=1)
            gamma = norms[~new].mean() / max(norms[new].mean(), np.finfo(float).tiny)
            W = head.W.copy()
            W[new] *= gamma
            head = LinearHead(W, head.b, head.classes, head.tasks)
        ex_X, ex_y = _exemplars(X, y, memory_per_class, selection, rng)
        mem_X, mem_y = np.vstack([mem_X, ex_X]), np.concatenate([mem_y, ex_y])
    return head
