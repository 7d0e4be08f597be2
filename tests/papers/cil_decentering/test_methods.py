"""Oracles for the five CIL methods of ``methods.py``, and their input checks.

The oracles are independent of the implementation: scikit-learn's logistic regression,
the joint head, the methods' objectives written again in torch (the returned head must be a
stationary point), the Fisher written with torch's autograd, and limits (a single task, an
unlimited memory, a huge penalty or distillation weight).
"""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.linear_model import LogisticRegression

from neurips26.papers.cil_decentering import LinearHead, fit_joint_head, fit_within_task_head
from neurips26.papers.cil_decentering.methods import (
    ewc,
    finetune,
    fisher_diagonal,
    herding,
    lwf,
    replay,
    wa,
)

torch = pytest.importorskip("torch")

LAM = 1e-2  # a weight decay large enough for fast, well-conditioned fits
TIGHT = {"weight_decay": LAM, "tol": 1e-10, "max_iter": 5000}


def _tasks(seed=0, num_tasks=3, k=3, n=40, dim=4, task_scale=2.0):
    """Gaussian classes, ``k`` per task, ``n`` samples each; class ids 0, 1, ..."""
    rng = np.random.default_rng(seed)
    out = []
    for t in range(num_tasks):
        means = rng.normal(scale=2.0, size=(k, dim)) + rng.normal(scale=task_scale, size=dim)
        y = np.repeat(np.arange(t * k, (t + 1) * k), n)
        out.append((means[y - t * k] + rng.normal(size=(k * n, dim)), y))
    return out


def _rows(head: LinearHead, classes) -> np.ndarray:
    return np.array([int(np.flatnonzero(head.classes == c)[0]) for c in classes])


def _sk(X, y, *, penalise_bias=False):
    """scikit-learn's multinomial logistic regression with the same objective (mean CE +
    lam/2 ||W||^2 <=> C = 1 / (n lam)); with ``penalise_bias`` the bias is a penalised
    constant feature. Returns (W, b) with classes sorted."""
    C = 1.0 / (len(y) * LAM)
    if penalise_bias:
        Xa = np.hstack([X, np.ones((len(X), 1))])
        lr = LogisticRegression(C=C, fit_intercept=False, tol=1e-12, max_iter=10_000)
        lr.fit(Xa, y)
        return lr.coef_[:, :-1], lr.coef_[:, -1]
    lr = LogisticRegression(C=C, tol=1e-12, max_iter=10_000).fit(X, y)
    return lr.coef_, lr.intercept_


def _centred(b):
    return b - b.mean()


# --------------------------------------------------------------------------- torch oracles


def _t(a):
    return torch.tensor(np.asarray(a), dtype=torch.float64)


def _params(head):
    W = _t(head.W).requires_grad_(True)
    b = _t(head.b).requires_grad_(True)
    return W, b


def _ce(W, b, X, y, head):
    cols = torch.tensor(_rows(head, y))
    return torch.nn.functional.cross_entropy(_t(X) @ W.T + b, cols)


def _kl(W, b, X, teacher: LinearHead, T):
    """mean_i KL(softmax(teacher(x_i) / T) || softmax(student's old logits / T))."""
    K = len(teacher.classes)
    q = torch.softmax(_t(teacher.decision_function(X)) / T, dim=1)
    log_s = torch.log_softmax((_t(X) @ W[:K].T + b[:K]) / T, dim=1)
    return torch.sum(q * (torch.log(q) - log_s), dim=1).mean()


def _grad_norm(loss, W, b) -> float:
    gW, gb = torch.autograd.grad(loss, (W, b))
    return float(max(gW.abs().max(), gb.abs().max()))


# --------------------------------------------------------------------------- finetune


def test_finetune_equals_sklearn_per_task():
    data = _tasks()
    head = finetune(data, **TIGHT)
    assert head.tasks.tolist() == [0, 0, 0, 1, 1, 1, 2, 2, 2]
    for t, (X, y) in enumerate(data):
        W, b = _sk(X, y)
        rows = _rows(head, np.unique(y))
        np.testing.assert_allclose(head.W[rows], W, atol=1e-5)
        np.testing.assert_allclose(_centred(head.b[rows]), _centred(b), atol=1e-5)
        assert np.all(head.tasks[rows] == t)


# --------------------------------------------------------------------------- lwf


def test_lwf_one_task_equals_sklearn_with_a_penalised_bias():
    X, y = _tasks(num_tasks=1)[0]
    head = lwf([(X, y)], **TIGHT)
    W, b = _sk(X, y, penalise_bias=True)
    np.testing.assert_allclose(head.W, W, atol=1e-5)
    np.testing.assert_allclose(head.b, b, atol=1e-5)


@pytest.mark.parametrize("alpha, T", [(1.0, 2.0), (3.0, 0.5)])
def test_lwf_head_is_a_stationary_point_of_the_published_objective(alpha, T):
    data = _tasks(num_tasks=3)
    teacher = lwf(data[:2], distill_weight=alpha, temperature=T, **TIGHT)
    head = lwf(data, distill_weight=alpha, temperature=T, **TIGHT)
    np.testing.assert_allclose(head.W[:6], teacher.W, atol=5.0)  # same rows, in order
    X, y = data[2]
    W, b = _params(head)
    loss = (_ce(W, b, X, y, head) + alpha * _kl(W, b, X, teacher, T)
            + 0.5 * LAM * (torch.sum(W**2) + torch.sum(b**2)))
    assert _grad_norm(loss, W, b) < 1e-6
    # a wrong temperature in the gradient would not be stationary for this objective
    W2, b2 = _params(head)
    wrong = (_ce(W2, b2, X, y, head) + alpha * _kl(W2, b2, X, teacher, 2 * T)
             + 0.5 * LAM * (torch.sum(W2**2) + torch.sum(b2**2)))
    assert _grad_norm(wrong, W2, b2) > 1e-4


def test_lwf_with_a_huge_distillation_weight_keeps_the_old_softmax():
    data = _tasks(num_tasks=2)
    teacher = lwf(data[:1], **TIGHT)
    head = lwf(data, distill_weight=1e5, **TIGHT)
    # the old rows move by one common vector only: the old softmax is what the teacher's was
    shift = head.W[:3] - teacher.W
    assert np.max(np.abs(shift - shift.mean(axis=0))) < 1e-3
    X = data[1][0]
    old = softmax_rows(head.decision_function(X)[:, :3])
    np.testing.assert_allclose(old, softmax_rows(teacher.decision_function(X)), atol=1e-3)


def softmax_rows(Z):
    Z = Z - Z.max(axis=1, keepdims=True)
    return np.exp(Z) / np.exp(Z).sum(axis=1, keepdims=True)


# --------------------------------------------------------------------------- ewc


def test_fisher_diagonal_equals_autograd():
    X, y = _tasks(num_tasks=1, n=10)[0]
    head = fit_within_task_head(X, y, weight_decay=LAM)
    F_W, F_b = fisher_diagonal(head, X)
    W, b = _params(head)
    acc_W, acc_b = torch.zeros_like(W), torch.zeros_like(b)
    for x in _t(X):
        logp = torch.log_softmax(W @ x + b, dim=0)
        p = torch.exp(logp).detach()
        for c in range(len(b)):  # E_{y ~ p}[(d log p_y)^2]
            gW, gb = torch.autograd.grad(logp[c], (W, b), retain_graph=True)
            acc_W += p[c] * gW**2
            acc_b += p[c] * gb**2
    np.testing.assert_allclose(F_W, (acc_W / len(X)).numpy(), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(F_b, (acc_b / len(X)).numpy(), rtol=1e-10, atol=1e-12)


def test_ewc_one_task_is_finetune():
    data = _tasks(num_tasks=1)
    a, b = ewc(data, **TIGHT), finetune(data, **TIGHT)
    np.testing.assert_allclose(a.W, b.W, atol=1e-6)
    np.testing.assert_allclose(a.b, b.b, atol=1e-6)


def test_ewc_head_is_a_stationary_point_of_the_sum_of_penalties():
    # Kirkpatrick et al.: one penalty per earlier task, each at its own solution with its
    # own Fisher (written here as a sum, not as the implementation's merged quadratic).
    lam_ewc = 0.7
    data = _tasks(num_tasks=3)
    heads = [ewc(data[: t + 1], ewc_lambda=lam_ewc, **TIGHT) for t in range(3)]
    head = heads[-1]
    W, b = _params(head)
    loss = _ce(W, b, *data[2], head) + 0.5 * LAM * torch.sum(W**2)
    for k in range(2):
        F_W, F_b = fisher_diagonal(heads[k], data[k][0])
        C = len(heads[k].classes)
        loss = loss + 0.5 * lam_ewc * (torch.sum(_t(F_W) * (W[:C] - _t(heads[k].W)) ** 2)
                                       + torch.sum(_t(F_b) * (b[:C] - _t(heads[k].b)) ** 2))
    assert _grad_norm(loss, W, b) < 1e-6


def test_ewc_with_a_huge_penalty_keeps_the_old_weights_and_zero_penalty_moves_them():
    data = _tasks(num_tasks=2, task_scale=0.0)  # overlapping tasks: the new data pull
    first = ewc(data[:1], **TIGHT)
    stiff = ewc(data, ewc_lambda=1e8, **TIGHT)
    np.testing.assert_allclose(stiff.W[:3], first.W, atol=1e-4)
    np.testing.assert_allclose(stiff.b[:3], first.b, atol=1e-4)
    loose = ewc(data, ewc_lambda=1e-2, **TIGHT)
    assert np.max(np.abs(loose.W[:3] - first.W)) > 0.1


# --------------------------------------------------------------------------- replay


def test_replay_with_unlimited_memory_is_the_joint_head():
    data = _tasks()
    head = replay(data, memory_per_class=None, **TIGHT)
    X = np.vstack([d[0] for d in data])
    y = np.concatenate([d[1] for d in data])
    joint = fit_joint_head(X, y, weight_decay=LAM, tol=1e-10, max_iter=5000)
    rows = _rows(head, joint.classes)
    np.testing.assert_allclose(head.W[rows], joint.W, atol=1e-5)
    # the biases are the flattest direction of the objective: optimiser tolerance
    np.testing.assert_allclose(_centred(head.b[rows]), _centred(joint.b), atol=1e-4)
    assert head.tasks.tolist() == [0, 0, 0, 1, 1, 1, 2, 2, 2]


def test_replay_is_the_joint_head_on_new_data_and_herded_memory():
    data = _tasks()
    m = 5
    head = replay(data, memory_per_class=m, **TIGHT)
    Xs, ys = [data[2][0]], [data[2][1]]
    for X, y in data[:2]:
        for c in np.unique(y):
            Xc = X[y == c]
            Xs.append(Xc[herding(Xc, m)])
            ys.append(np.full(m, c))
    ref = fit_joint_head(np.vstack(Xs), np.concatenate(ys), weight_decay=LAM, tol=1e-10,
                         max_iter=5000)
    np.testing.assert_allclose(head.W[_rows(head, ref.classes)], ref.W, atol=1e-5)
    rand = replay(data, memory_per_class=m, selection="random", seed=3, **TIGHT)
    assert not np.allclose(rand.W, head.W)


def test_herding():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(30, 3))
    assert sorted(herding(X, 100).tolist()) == list(range(30))  # all, each once
    first = herding(X, 1)[0]
    assert first == np.argmin(np.sum((X - X.mean(axis=0)) ** 2, axis=1))
    idx = herding(X, 10)
    # the herded mean is closer to the class mean than a random subset's
    rand = rng.choice(30, 10, replace=False)
    mu = X.mean(axis=0)
    assert np.linalg.norm(X[idx].mean(0) - mu) < np.linalg.norm(X[rand].mean(0) - mu)


# --------------------------------------------------------------------------- wa


def test_wa_aligns_new_norms_to_the_old_mean():
    data = _tasks()
    head = wa(data, memory_per_class=5, **TIGHT)
    norms = np.linalg.norm(head.W, axis=1)
    new = head.tasks == 2
    assert norms[new].mean() == pytest.approx(norms[~new].mean(), rel=1e-12)


def test_wa_alignment_only_rescales_the_new_rows():
    data = _tasks(num_tasks=2)
    raw = wa(data, memory_per_class=5, align=False, **TIGHT)
    aligned = wa(data, memory_per_class=5, **TIGHT)
    norms = np.linalg.norm(raw.W, axis=1)
    gamma = norms[:3].mean() / norms[3:].mean()
    np.testing.assert_allclose(aligned.W[3:], gamma * raw.W[3:], rtol=1e-12)
    np.testing.assert_allclose(aligned.W[:3], raw.W[:3], rtol=1e-12)
    np.testing.assert_allclose(aligned.b, raw.b, rtol=1e-12)


def test_wa_without_distillation_and_alignment_is_replay():
    data = _tasks()
    a = wa(data, memory_per_class=5, distill=False, align=False, **TIGHT)
    b = replay(data, memory_per_class=5, **TIGHT)
    np.testing.assert_array_equal(a.W, b.W)


def test_wa_training_is_a_stationary_point_of_its_loss():
    data = _tasks(num_tasks=2)
    m, T = 5, 2.0
    teacher = wa(data[:1], memory_per_class=m, **TIGHT)
    head = wa(data, memory_per_class=m, align=False, temperature=T, **TIGHT)
    X0, y0 = data[0]
    keep = np.concatenate([np.flatnonzero(y0 == c)[herding(X0[y0 == c], m)]
                           for c in np.unique(y0)])
    X = np.vstack([data[1][0], X0[keep]])
    y = np.concatenate([data[1][1], y0[keep]])
    share = 3 / 6  # C_old / C_seen
    W, b = _params(head)
    loss = ((1 - share) * _ce(W, b, X, y, head) + share * _kl(W, b, X, teacher, T)
            + 0.5 * LAM * torch.sum(W**2))
    assert _grad_norm(loss, W, b) < 1e-6


# --------------------------------------------------------------------------- bad input

METHODS = {"finetune": finetune, "lwf": lwf, "ewc": ewc, "replay": replay, "wa": wa}
GOOD = _tasks(num_tasks=2, n=5)


@pytest.mark.parametrize("name", list(METHODS))
def test_bad_tasks_name_the_argument(name):
    f = METHODS[name]
    X, y = GOOD[0]
    bad = X.copy()
    bad[0, 0] = np.nan
    with pytest.raises(ValueError, match=r"tasks\[0\] X contains 1 NaN"):
        f([(bad, y), GOOD[1]])
    with pytest.raises(ValueError, match=r"tasks\[1\] X must be 2-D"):
        f([GOOD[0], (GOOD[1][0][:, 0], GOOD[1][1])])
    with pytest.raises(ValueError, match=r"tasks\[0\] X is empty"):
        f([(X[:0], y[:0])])
    with pytest.raises(ValueError, match=r"X and tasks\[0\] y have mismatched lengths"):
        f([(X, y[:-1])])
    with pytest.raises(ValueError, match=r"tasks\[1\] X has 2 features"):
        f([GOOD[0], (GOOD[1][0][:, :2], GOOD[1][1])])
    with pytest.raises(ValueError, match=r"tasks\[1\] y repeats classes \[0\]"):
        f([GOOD[0], (GOOD[1][0], np.zeros(len(GOOD[1][1]), dtype=int))])
    with pytest.raises(ValueError, match=r"tasks\[0\] y holds 1 class"):
        f([(X, np.zeros(len(y), dtype=int))])
    with pytest.raises(ValueError, match="tasks is empty"):
        f([])
    with pytest.raises(TypeError, match="tasks must be a list"):
        f(X)
    with pytest.raises(TypeError, match="tasks must be a list"):
        f("tasks")
    with pytest.raises(TypeError, match=r"tasks\[0\] must be an \(X, y\) pair"):
        f([X])
    with pytest.raises(TypeError, match=r"tasks\[0\] y must hold integer"):
        f([(X, y.astype(str))])
    with pytest.raises(ValueError, match="weight_decay"):
        f(GOOD, weight_decay=-1.0)
    with pytest.raises(TypeError, match="weight_decay"):
        f(GOOD, weight_decay="0.1")
    with pytest.raises(ValueError, match="max_iter"):
        f(GOOD, max_iter=0)
    with pytest.raises(ValueError, match="tol"):
        f(GOOD, tol=float("nan"))


def test_finetune_needs_two_classes_in_every_task():
    (X, y), (X1, _) = GOOD
    with pytest.raises(ValueError, match=r"tasks\[1\] y holds 1 class"):
        finetune([(X, y), (X1, np.full(len(X1), 9))])
    lwf([(X, y), (X1, np.full(len(X1), 9))], max_iter=5)  # a growing head accepts one


def test_bad_hyperparameters_name_the_argument():
    with pytest.raises(ValueError, match="distill_weight"):
        lwf(GOOD, distill_weight=-1.0)
    with pytest.raises(ValueError, match="temperature"):
        lwf(GOOD, temperature=0.0)
    with pytest.raises(TypeError, match="temperature"):
        wa(GOOD, temperature=None)
    with pytest.raises(ValueError, match="ewc_lambda"):
        ewc(GOOD, ewc_lambda=float("inf"))
    for f in (replay, wa):
        with pytest.raises(ValueError, match="memory_per_class"):
            f(GOOD, memory_per_class=0)
        with pytest.raises(TypeError, match="memory_per_class"):
            f(GOOD, memory_per_class=2.5)
        with pytest.raises(ValueError, match="selection"):
            f(GOOD, selection="best")
        with pytest.raises(TypeError, match="seed"):
            f(GOOD, seed="0")
    with pytest.raises(TypeError, match="distill"):
        wa(GOOD, distill=1)
    with pytest.raises(TypeError, match="align"):
        wa(GOOD, align="yes")


def test_helpers_bad_input():
    X, y = GOOD[0]
    head = fit_within_task_head(X, y)
    with pytest.raises(TypeError, match="head must be a LinearHead"):
        fisher_diagonal(X, X)
    with pytest.raises(ValueError, match="feature dimension mismatch"):
        fisher_diagonal(head, X[:, :2])
    with pytest.raises(ValueError, match="X contains"):
        fisher_diagonal(head, np.full_like(X, np.nan))
    with pytest.raises(ValueError, match="num"):
        herding(X, 0)
    with pytest.raises(TypeError, match="num"):
        herding(X, 1.5)
    with pytest.raises(ValueError, match="X is empty"):
        herding(X[:0], 3)
