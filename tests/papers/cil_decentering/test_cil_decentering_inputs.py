"""Bad input raises ValueError/TypeError naming the argument, in every public function."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from neurips26.papers.cil_decentering import (
    NCM,
    SLDA,
    DecenteredSoftmax,
    FeCAM,
    JointSoftmax,
    LinearHead,
    PostHocDecentering,
    SequentialSoftmax,
    accumulate_stats,
    concat_heads,
    decenter,
    failure_construction,
    fit_joint_head,
    fit_within_task_head,
    gap_recovered,
    gaussian_tasks,
    offset_diagnostic,
    population_heads,
    population_stats,
    random_spd,
    task_confusion,
)

RNG = np.random.default_rng(0)
X0 = RNG.normal(size=(40, 3))
Y0 = np.repeat([0, 1], 20)
X1 = RNG.normal(size=(40, 3))
Y1 = np.repeat([2, 3], 20)


def _stats():
    return accumulate_stats(accumulate_stats(None, X0, Y0, task_id=0), X1, Y1, task_id=1)


def test_nan_and_inf_features():
    bad = X0.copy()
    bad[3, 1] = np.nan
    with pytest.raises(ValueError, match="X contains 1 NaN"):
        accumulate_stats(None, bad, Y0, task_id=0)
    bad[3, 1] = np.inf
    with pytest.raises(ValueError, match="X contains"):
        fit_within_task_head(bad, Y0)
    with pytest.raises(ValueError, match="X contains"):
        SequentialSoftmax().partial_fit(bad, Y0)
    est = NCM().partial_fit(X0, Y0)
    with pytest.raises(ValueError, match="X contains"):
        est.predict(bad)


def test_shape_mismatches():
    with pytest.raises(ValueError, match="X and y have mismatched lengths"):
        accumulate_stats(None, X0, Y0[:-1], task_id=0)
    with pytest.raises(ValueError, match="X must be 2-D"):
        fit_within_task_head(X0[:, 0], Y0)
    with pytest.raises(ValueError, match="y must be 1-D"):
        fit_within_task_head(X0, Y0[:, None])
    s = accumulate_stats(None, X0, Y0, task_id=0)
    with pytest.raises(ValueError, match="dimension mismatch"):
        accumulate_stats(s, X1[:, :2], Y1, task_id=1)
    est = SLDA().partial_fit(X0, Y0)
    with pytest.raises(ValueError, match="dimension mismatch"):
        est.partial_fit(X1[:, :2], Y1)
    with pytest.raises(ValueError, match="dimension mismatch"):
        est.predict(X1[:, :2])
    head = fit_within_task_head(X0[:, :2], Y0)
    with pytest.raises(ValueError, match="heads have dim 2 but stats have dim 3"):
        decenter([head], s)
    with pytest.raises(ValueError, match="different feature dimensions"):
        concat_heads([head, fit_within_task_head(X1, Y1)])
    with pytest.raises(ValueError, match="X has 3 features"):
        head.predict(X0)
    with pytest.raises(ValueError, match="b must have shape"):
        LinearHead(np.zeros((2, 3)), np.zeros(3), np.arange(2), np.zeros(2))


def test_one_class_task_is_refused():
    with pytest.raises(ValueError, match="y holds 1 class"):
        fit_within_task_head(X0, np.zeros(40, dtype=int))
    with pytest.raises(ValueError, match="at least 2 classes per task"):
        DecenteredSoftmax().partial_fit(X0, np.zeros(40, dtype=int))
    with pytest.raises(ValueError, match="y holds 1 class"):
        fit_joint_head(X0, np.zeros(40, dtype=int))


def test_class_and_task_reuse_is_refused():
    s = accumulate_stats(None, X0, Y0, task_id=0)
    with pytest.raises(ValueError, match="already appeared in an earlier task"):
        accumulate_stats(s, X1, Y0, task_id=1)
    with pytest.raises(ValueError, match="task_id 0 was already added"):
        accumulate_stats(s, X1, Y1, task_id=0)
    est = SequentialSoftmax().partial_fit(X0, Y0)
    with pytest.raises(ValueError, match="already appeared"):
        est.partial_fit(X1, Y0)
    assert len(est.heads_) == 1  # a refused task leaves the estimator as it was
    with pytest.raises(ValueError, match="task_id must be >= 0"):
        NCM().partial_fit(X0, Y0, task_id=-1)


def test_heads_inconsistent_with_stats():
    s = _stats()
    h0 = fit_within_task_head(X0, Y0)
    stranger = fit_within_task_head(X0, Y0 + 10)
    with pytest.raises(ValueError, match="not in the statistics"):
        decenter([stranger], s)
    with pytest.raises(ValueError, match="a class id appears in two heads"):
        decenter([h0, h0], s)
    partial = LinearHead(h0.W[:1], h0.b[:1], h0.classes[:1], h0.tasks[:1])
    with pytest.raises(ValueError, match="cover only 1 of the 2 classes"):
        decenter([partial], s)
    with pytest.raises(ValueError, match="heads is empty"):
        decenter([], s)
    with pytest.raises(TypeError, match="heads must hold LinearHead"):
        decenter([np.zeros((2, 3))], s)
    with pytest.raises(TypeError, match="stats must be a ClassStats"):
        decenter([h0], None)


def test_singular_covariance_suggests_ledoit_wolf():
    X = RNG.normal(size=(6, 10))
    s = accumulate_stats(None, X, np.repeat([0, 1], 3), task_id=0)
    with pytest.raises(ValueError, match="singular; use shrinkage='ledoit_wolf'"):
        population_heads(s, shrinkage=None)
    population_heads(s, shrinkage="ledoit_wolf")  # works
    with pytest.raises(ValueError, match="shrinkage must be"):
        s.covariance("oas")
    with pytest.raises(ValueError, match="shrinkage must be in"):
        s.covariance(1.5)
    with pytest.raises(ValueError, match="shrinkage must be"):
        SLDA(shrinkage="bad").partial_fit(X0, Y0)


def test_hyperparameters_out_of_range():
    with pytest.raises(ValueError, match="weight_decay must be >= 0"):
        fit_within_task_head(X0, Y0, weight_decay=-1.0)
    with pytest.raises(ValueError, match="max_iter must be >= 1"):
        fit_within_task_head(X0, Y0, max_iter=0)
    with pytest.raises(ValueError, match="tol must be > 0"):
        SequentialSoftmax(tol=0.0).partial_fit(X0, Y0)
    with pytest.raises(ValueError, match="priors must be one of"):
        population_heads(_stats(), priors="flat")
    with pytest.raises(ValueError, match="negative entries"):
        FeCAM(tukey=0.5).fit(X0, Y0)
    with pytest.raises(ValueError, match="gamma1 must be"):
        FeCAM(gamma1=-1.0).fit(X0, Y0)


def test_unfitted_estimators():
    for est in (NCM(), SLDA(), FeCAM(), SequentialSoftmax(), DecenteredSoftmax(),
                JointSoftmax()):
        with pytest.raises(ValueError, match="not fitted"):
            est.predict(X0)
    with pytest.raises(ValueError, match="not fitted"):
        PostHocDecentering().transform([fit_within_task_head(X0, Y0)])


def test_diagnostics_bad_input():
    s = _stats()
    seq = concat_heads([fit_within_task_head(X0, Y0), fit_within_task_head(X1, Y1, task_id=1)])
    joint = fit_joint_head(np.vstack([X0, X1]), np.concatenate([Y0, Y1]))
    with pytest.raises(ValueError, match="num_permutations must lie in"):
        offset_diagnostic(seq, joint, s, num_permutations=-1)
    with pytest.raises(ValueError, match="same classes"):
        offset_diagnostic(seq, fit_joint_head(X0, Y0), s)
    with pytest.raises(ValueError, match="classes \\[7\\] that the head does not know"):
        task_confusion(seq, X0, np.full(40, 7))
    with pytest.raises(ValueError, match="no gap to recover"):
        gap_recovered(0.8, 0.7, 0.75)
    with pytest.raises(ValueError, match="acc_fixed must be an accuracy"):
        gap_recovered(0.5, 0.7, 1.5)
    with pytest.raises(TypeError, match="acc_seq must be a real number"):
        gap_recovered("0.5", 0.7, 0.6)


def test_data_generators_bad_input():
    with pytest.raises(ValueError, match="condition_number must be >= 1"):
        random_spd(3, 0.5, RNG)
    with pytest.raises(ValueError, match="num_tasks must lie in"):
        gaussian_tasks(num_tasks=0, rng=RNG)
    with pytest.raises(ValueError, match="ratio must be > 0"):
        failure_construction(ratio=0.0, task_distance=1.0)
    with pytest.raises(ValueError, match="cov must be a symmetric"):
        population_stats(np.zeros((2, 2)), np.array([[1.0, 2.0], [0.0, 1.0]]), [0, 1])


@settings(max_examples=25, deadline=5000)
@given(row=st.integers(0, 39), col=st.integers(0, 2),
       value=st.sampled_from([np.nan, np.inf, -np.inf]))
def test_any_nonfinite_feature_is_refused(row, col, value):
    bad = X0.copy()
    bad[row, col] = value
    with pytest.raises(ValueError, match="NaN or infinite"):
        accumulate_stats(None, bad, Y0, task_id=0)


@pytest.mark.parametrize("cls", [NCM, SLDA, FeCAM, SequentialSoftmax, DecenteredSoftmax,
                                 JointSoftmax])
def test_string_labels_across_tasks_match_integer_ids(cls):
    names = np.array(["a", "b", "c", "d"])
    ints, strs = cls(), cls()
    for X, Y, t in ((X0, Y0, 0), (X1 + 2, Y1, 1)):
        ints.partial_fit(X, Y, task_id=t)
        strs.partial_fit(X, names[Y], task_id=t)
    Xq = np.vstack([X0, X1 + 2])
    assert ints.classes_.tolist() == [0, 1, 2, 3] and strs.classes_.tolist() == names.tolist()
    np.testing.assert_array_equal(names[ints.predict(Xq)], strs.predict(Xq))
    np.testing.assert_allclose(ints.decision_function(Xq), strs.decision_function(Xq))
    with pytest.raises(TypeError, match="integer class ids"):
        ints.partial_fit(X1 + 4, np.array(["e", "f"]).repeat(20), task_id=2)
    with pytest.raises(ValueError, match="classes must hold every label of y"):
        cls().partial_fit(X0, Y0, classes=[0])
