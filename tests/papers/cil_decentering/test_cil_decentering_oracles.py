"""Oracles: scikit-learn's LDA, LedoitWolf and NearestCentroid, closed forms, brute force."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.covariance import LedoitWolf
from sklearn.discriminant_analysis import LinearDiscriminantAnalysis
from sklearn.neighbors import NearestCentroid

from neurips26.papers.cil_decentering import (
    NCM,
    SLDA,
    DecenteredSoftmax,
    FeCAM,
    LinearHead,
    PostHocDecentering,
    SequentialSoftmax,
    accumulate_stats,
    concat_heads,
    confusion_bound,
    decenter,
    fit_within_task_head,
    gaussian_tasks,
    offset_diagnostic,
    population_heads,
    separation,
)
from neurips26.papers.cil_decentering.diagnostics import _block_dispersion


def _tasks_data(rng, n=200, num_tasks=3, k=3, dim=5):
    g = gaussian_tasks(num_tasks=num_tasks, classes_per_task=k, dim=dim, task_scale=1.0,
                       class_scale=0.7, rng=rng)
    data = [g.sample_task(t, n, rng) for t in range(num_tasks)]
    return g, data


def _stats(data, order=None):
    stats = None
    for t in order if order is not None else range(len(data)):
        stats = accumulate_stats(stats, *data[t], task_id=t)
    return stats


def test_decentered_closed_form_heads_equal_sklearn_lda():
    # Within-task heads in closed form from sample statistics, then de-centred, must be
    # exactly scikit-learn's LDA fitted on all the data (same pooled covariance, priors).
    rng = np.random.default_rng(0)
    _, data = _tasks_data(rng)
    stats = _stats(data, order=[2, 0, 1])  # arrival order differs from sorted classes
    seq = population_heads(stats, shrinkage=None).sequential
    fixed = decenter(seq, stats, shrinkage=None)
    X = np.vstack([d[0] for d in data])
    y = np.concatenate([d[1] for d in data])
    lda = LinearDiscriminantAnalysis(solver="lsqr").fit(X, y)
    rows = np.argsort(fixed.classes)
    np.testing.assert_allclose(fixed.W[rows], lda.coef_, rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(fixed.b[rows], lda.intercept_, rtol=1e-9, atol=1e-9)
    np.testing.assert_array_equal(fixed.predict(X), lda.predict(X))
    # ... while the uncorrected sequential heads do not.
    assert np.mean(concat_heads(seq).predict(X) == lda.predict(X)) < 0.9


def test_trained_heads_decentered_agree_with_sklearn_lda():
    rng = np.random.default_rng(1)
    _, data = _tasks_data(rng, n=4000)
    est = DecenteredSoftmax(weight_decay=1e-7, shrinkage=None)
    seq = SequentialSoftmax(weight_decay=1e-7)
    for t, (X, y) in enumerate(data):
        est.partial_fit(X, y, task_id=t)
        seq.partial_fit(X, y, task_id=t)
    X = np.vstack([d[0] for d in data])
    y = np.concatenate([d[1] for d in data])
    lda = LinearDiscriminantAnalysis(solver="lsqr").fit(X, y)
    agree = np.mean(est.predict(X) == lda.predict(X))
    assert agree > 0.99, agree
    assert np.mean(seq.predict(X) == lda.predict(X)) < agree - 0.1


def test_population_decentering_recovers_bayes_head_exactly():
    g = gaussian_tasks(num_tasks=4, classes_per_task=3, dim=6, rng=np.random.default_rng(2))
    ph = population_heads(g.stats())
    fixed = decenter(ph.sequential, g.stats(), shrinkage=None)
    np.testing.assert_allclose(fixed.W, ph.joint.W, atol=1e-10)
    np.testing.assert_allclose(fixed.b, ph.joint.b, atol=1e-10)
    # Bayes weights are Sigma^{-1} mu_c.
    np.testing.assert_allclose(ph.joint.W, np.linalg.solve(g.cov, g.means.T).T, atol=1e-10)


def test_gauge_invariance_of_decenter():
    rng = np.random.default_rng(3)
    _, data = _tasks_data(rng, n=100)
    stats = _stats(data)
    heads = [fit_within_task_head(X, y, task_id=t) for t, (X, y) in enumerate(data)]
    shifted = [LinearHead(h.W + rng.normal(size=h.dim), h.b + rng.normal(), h.classes, h.tasks)
               for h in heads]
    a, b = decenter(heads, stats), decenter(shifted, stats)
    np.testing.assert_allclose(a.W, b.W, atol=1e-10)
    np.testing.assert_allclose(a.b, b.b, atol=1e-10)


def test_closed_form_matches_trained_within_task_head():
    rng = np.random.default_rng(4)
    g = gaussian_tasks(num_tasks=2, classes_per_task=3, dim=4, task_scale=1.0, class_scale=0.6,
                       rng=rng)
    ph = population_heads(g.stats())
    X, y = g.sample_task(1, 100_000, rng)
    head = fit_within_task_head(X, y, weight_decay=1e-7, task_id=1)
    ref = ph.sequential[1]
    rel = np.linalg.norm(head.W - ref.W) / np.linalg.norm(ref.W)
    assert rel < 0.02, rel
    assert np.linalg.norm(head.b - ref.b) / np.linalg.norm(ref.b) < 0.05


def test_within_task_head_is_centred():
    rng = np.random.default_rng(5)
    X = rng.normal(size=(90, 3))
    head = fit_within_task_head(X, np.repeat([0, 1, 2], 30) + 0 * X[:, 0].astype(int))
    np.testing.assert_allclose(head.W.sum(axis=0), 0.0, atol=1e-8)
    np.testing.assert_allclose(head.b.sum(), 0.0, atol=1e-8)


def test_single_task_decentering_keeps_argmax():
    rng = np.random.default_rng(6)
    _, data = _tasks_data(rng, num_tasks=1, k=4)
    X, y = data[0]
    head = fit_within_task_head(X, y)
    stats = accumulate_stats(None, X, y, task_id=0)
    np.testing.assert_array_equal(decenter([head], stats).predict(X), head.predict(X))


def test_streaming_stats_equal_batch_and_ledoit_wolf():
    rng = np.random.default_rng(7)
    _, data = _tasks_data(rng, n=50, dim=8)
    stats = _stats(data)
    X = np.vstack([d[0] for d in data])
    y = np.concatenate([d[1] for d in data])
    means = np.stack([X[y == c].mean(axis=0) for c in stats.classes])
    np.testing.assert_allclose(stats.means, means, atol=1e-12)
    R = X - means[np.searchsorted(np.sort(stats.classes), y)]
    np.testing.assert_allclose(stats.covariance(None), R.T @ R / len(X), atol=1e-12)
    lw = LedoitWolf(assume_centered=True).fit(R)
    np.testing.assert_allclose(stats.covariance("ledoit_wolf"), lw.covariance_, atol=1e-12)
    s = 0.3
    mu = np.trace(R.T @ R / len(X)) / 8
    np.testing.assert_allclose(stats.covariance(s), 0.7 * R.T @ R / len(X) + s * mu * np.eye(8))


def test_offset_identity_at_population():
    g = gaussian_tasks(num_tasks=5, classes_per_task=4, dim=8, rng=np.random.default_rng(8))
    ph = population_heads(g.stats())
    diag = offset_diagnostic(ph.sequential_head, ph.joint, g.stats(), shrinkage=None,
                             num_permutations=50)
    assert diag.max_abs_error < 1e-10
    assert diag.mean_dispersion < 1e-20
    assert diag.min_cosine > 1 - 1e-12
    assert diag.control_quantile < 0.05
    assert np.min(diag.permutation_dispersion) > 1e-3


def test_block_dispersion_identity_matches_pair_loop():
    rng = np.random.default_rng(9)
    delta = rng.normal(size=(7, 3))
    labels = np.array([0, 0, 0, 1, 1, 2, 2])
    fast = _block_dispersion(delta, labels, np.array([0, 1, 2]))
    for i in range(3):
        for j in range(3):
            if i == j:
                continue
            D = np.array([delta[a] - delta[b] for a in np.flatnonzero(labels == i)
                          for b in np.flatnonzero(labels == j)])
            Dbar = D.mean(axis=0)
            slow = np.mean(np.sum((D - Dbar) ** 2, axis=1)) / np.sum(Dbar**2)
            assert fast[i, j] == pytest.approx(slow, rel=1e-12)


def test_separation_and_bound_by_hand():
    # Sigma = I, task 0 at (+-1, 0), task 1 at (3, +-1): gamma = 9, kappa = sqrt(10) / 3.
    from neurips26.papers.cil_decentering import population_stats

    means = np.array([[1.0, 0], [-1, 0], [3, 1], [3, -1]])
    sep = separation(population_stats(means, np.eye(2), [0, 0, 1, 1]))
    assert sep.gamma[0, 1] == pytest.approx(9.0)
    assert sep.kappa[0, 1] == pytest.approx(np.sqrt(5) / 3)  # min distance sqrt(5)
    assert sep.bound()[0, 1] == 1.0  # kappa < 1: no bound
    assert confusion_bound(2.0, 16.0) == pytest.approx(np.exp(-2.0))


def test_slda_and_ncm_match_sklearn():
    rng = np.random.default_rng(10)
    _, data = _tasks_data(rng, n=80)
    slda, ncm = SLDA(shrinkage=None), NCM()
    for t, (X, y) in enumerate(data):
        slda.partial_fit(X, y, task_id=t)
        ncm.partial_fit(X, y, task_id=t)
    X = np.vstack([d[0] for d in data])
    y = np.concatenate([d[1] for d in data])
    Xt = rng.normal(size=(500, X.shape[1]))
    lda = LinearDiscriminantAnalysis(solver="lsqr").fit(X, y)
    np.testing.assert_array_equal(slda.predict(Xt), lda.predict(Xt))
    np.testing.assert_array_equal(ncm.predict(Xt), NearestCentroid().fit(X, y).predict(Xt))


def test_fecam_matches_brute_force_mahalanobis():
    rng = np.random.default_rng(11)
    X = np.abs(rng.normal(size=(60, 3)))
    y = np.repeat([0, 1, 2], 20)
    est = FeCAM(tukey=0.5).fit(X, y)
    Xt = np.abs(rng.normal(size=(10, 3)))

    def tf(A):
        A = np.sqrt(A)
        return A / np.linalg.norm(A, axis=1, keepdims=True)

    Z, Zt = tf(X), tf(Xt)
    scores = []
    for c in range(3):
        mu = Z[y == c].mean(axis=0)
        cov = np.cov(Z[y == c].T)
        v1, v2 = np.mean(np.diag(cov)), np.mean(cov[~np.eye(3, dtype=bool)])
        cov = cov + v1 * np.eye(3) + v2 * (1 - np.eye(3))
        s = np.sqrt(np.diag(cov))
        P = np.linalg.inv(cov / np.outer(s, s))
        scores.append([-(z - mu) @ P @ (z - mu) for z in Zt])
    np.testing.assert_allclose(est.decision_function(Xt), np.array(scores).T, rtol=1e-8)


def test_post_hoc_decentering_equals_decentered_softmax():
    rng = np.random.default_rng(12)
    _, data = _tasks_data(rng, n=60)
    est, phd, heads = DecenteredSoftmax(), PostHocDecentering(), []
    for t, (X, y) in enumerate(data):
        est.partial_fit(X, y, task_id=t)
        phd.partial_fit(X, y, task_id=t)
        heads.append(fit_within_task_head(X, y, task_id=t))
    np.testing.assert_allclose(phd.transform(heads).W, est.head_.W, atol=1e-12)


def test_estimators_clone_and_refit():
    from sklearn.base import clone

    rng = np.random.default_rng(13)
    _, data = _tasks_data(rng, n=40)
    for est in (SequentialSoftmax(weight_decay=1e-3), DecenteredSoftmax(), SLDA(), NCM(),
                FeCAM()):
        c = clone(est)
        assert c.get_params() == est.get_params()
        for X, y in data:
            c.partial_fit(X, y)
        assert c.decision_function(data[0][0]).shape == (40 * 3, 9)
        assert c.num_tasks_ == 3
        c.fit(*data[0])  # fit forgets earlier tasks
        assert c.num_tasks_ == 1 and len(c.classes_) == 3
