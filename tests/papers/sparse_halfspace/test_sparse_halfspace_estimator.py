"""The scikit-learn style estimators and the functional core: API, determinism, bad input."""

import inspect

import numpy as np
import pytest
from sklearn.base import clone

from neurips26.papers.sparse_halfspace import (
    HalfspaceFit,
    RobustDenseHalfspace,
    RobustSparseHalfspace,
    clean_error,
    fit_robust_halfspace,
    hinge_weight_on,
    make_margin_halfspace,
)


@pytest.fixture(scope="module")
def noisy():
    return make_margin_halfspace(300, 30, 3, noise_rate=0.1, adversary="flip_cluster", seed=7)


@pytest.mark.parametrize("cls", [RobustSparseHalfspace, RobustDenseHalfspace])
def test_init_is_keyword_only_and_only_stores(cls):
    params = inspect.signature(cls.__init__).parameters
    assert all(p.kind is p.KEYWORD_ONLY for n, p in params.items() if n != "self")
    extra = {"sparsity": -2} if cls is RobustSparseHalfspace else {}
    est = cls(noise_rate=0.7, variance_slack=-3.0, outlier_method="nonsense", **extra)
    # __init__ validates nothing: errors come at fit
    assert est.get_params()["noise_rate"] == 0.7
    assert clone(est).get_params() == est.get_params()


def test_fit_predict_shapes_attributes_and_accuracy(noisy):
    clf = RobustSparseHalfspace(sparsity=3, noise_rate=0.1, num_rounds=1)  # SDP: d <= 60
    assert clf.fit(noisy.X, noisy.y) is clf
    assert clf.coef_.shape == (30,)
    assert clf.sample_weight_.shape == (300,) and clf.kept_mask_.dtype == bool
    assert clf.sample_weight_.sum() == pytest.approx(1.0)
    assert clf.certified_ is True  # d = 30 <= 60: the SDP oracle
    assert clf.outlier_.method == "sdp"
    assert np.linalg.norm(clf.coef_) == pytest.approx(1.0)  # unit norm after each round
    assert np.count_nonzero(clf.coef_) == 3  # hard thresholding to s coordinates
    pred = clf.predict(noisy.X)
    assert pred.shape == (300,) and set(np.unique(pred)) <= {-1, 1}
    np.testing.assert_allclose(clf.decision_function(noisy.X), noisy.X @ clf.coef_)
    assert clean_error(clf.coef_, noisy.w_star, margin=0.1) < 0.15
    # reweighting moved weight off the corrupted rows
    assert hinge_weight_on(noisy.is_corrupt, clf.sample_weight_) < noisy.is_corrupt.mean()


def test_deterministic_under_seed(noisy):
    a = RobustSparseHalfspace(sparsity=3, outlier_method="power").fit(noisy.X, noisy.y)
    b = RobustSparseHalfspace(sparsity=3, outlier_method="power").fit(noisy.X, noisy.y)
    np.testing.assert_array_equal(a.coef_, b.coef_)
    np.testing.assert_array_equal(a.sample_weight_, b.sample_weight_)
    assert a.certified_ is False  # the power method is a heuristic


def test_functional_core_matches_estimator_and_returns_dataclass(noisy):
    # the estimator's defaults are "auto" for the scale and the slack (real features)
    fit = fit_robust_halfspace(noisy.X, noisy.y, sparsity=3, outlier_method="power",
                               clean_variance="auto", variance_slack="auto")
    assert isinstance(fit, HalfspaceFit)
    est = RobustSparseHalfspace(sparsity=3, outlier_method="power").fit(noisy.X, noisy.y)
    np.testing.assert_array_equal(fit.coef, est.coef_)
    assert est.variance_slack_ == fit.variance_slack == 1.0  # the analysis's cap sufficed
    exact = fit_robust_halfspace(noisy.X, noisy.y, sparsity=3, outlier_method="power")
    est = RobustSparseHalfspace(sparsity=3, outlier_method="power", clean_variance=1.0,
                                variance_slack=1.0).fit(noisy.X, noisy.y)
    np.testing.assert_array_equal(exact.coef, est.coef_)
    with pytest.raises(AttributeError):
        fit.coef = None  # frozen


def test_ablation_and_dense_variant(noisy):
    none = fit_robust_halfspace(noisy.X, noisy.y, sparsity=3, outlier_method="none")
    assert none.outlier is None and not none.certified
    np.testing.assert_allclose(none.sample_weight, 1 / 300)
    dense = RobustDenseHalfspace(variance_slack=3.0).fit(noisy.X, noisy.y)
    assert dense.certified_ and dense.outlier_.method == "eig"
    assert np.abs(dense.coef_).sum() > np.sqrt(3)  # not confined to W


def test_hard_threshold_keeps_s_coordinates(noisy):
    clf = RobustSparseHalfspace(sparsity=3, hard_threshold=True, outlier_method="none")
    clf.fit(noisy.X, noisy.y)
    assert np.count_nonzero(clf.coef_) == 3
    for r in clf.rounds_:
        assert np.count_nonzero(r.coef) == 3
    off = RobustSparseHalfspace(sparsity=3, hard_threshold=False, outlier_method="none")
    assert np.count_nonzero(off.fit(noisy.X, noisy.y).coef_) > 3


def test_any_two_labels_map_to_classes(noisy):
    ref = RobustSparseHalfspace(sparsity=3, outlier_method="none").fit(noisy.X, noisy.y)
    for labels in ((0, 1), ("no", "yes"), (-3.0, 7.0)):
        y = np.where(noisy.y > 0, labels[1], labels[0])
        clf = RobustSparseHalfspace(sparsity=3, outlier_method="none").fit(noisy.X, y)
        assert clf.classes_.tolist() == list(labels)
        np.testing.assert_allclose(clf.coef_, ref.coef_)
        pred = clf.predict(noisy.X)
        np.testing.assert_array_equal(pred == labels[1], ref.predict(noisy.X) == 1)


def test_large_norm_points_are_filtered():
    data = make_margin_halfspace(300, 20, 2, noise_rate=0.1, adversary="large_norm", seed=0)
    clf = RobustSparseHalfspace(sparsity=2, outlier_method="power").fit(data.X, data.y)
    np.testing.assert_array_equal(clf.kept_mask_, ~data.is_corrupt)
    assert clf.sample_weight_[data.is_corrupt].sum() == 0


BAD = [
    ({"sparsity": 0}, "sparsity s must satisfy"),
    ({"sparsity": 31}, "exceeds the number of features: X has 30 feature"),
    ({"sparsity": 3, "noise_rate": 0.5}, "noise_rate eta must be in"),
    ({"sparsity": 3, "noise_rate": -0.01}, "noise_rate eta must be in"),
    ({"sparsity": 3, "hinge_margin": 0.0}, "hinge_margin must be"),
    ({"sparsity": 3, "variance_slack": -1.0}, "variance_slack must be"),
    ({"sparsity": 3, "outlier_method": "magic"}, "unknown outlier_method"),
    ({"sparsity": 3, "num_rounds": -1}, "num_rounds must be"),
    ({"sparsity": 3, "band_init": 0.0}, "band_init must be"),
    ({"sparsity": 3, "radius_init": -1.0}, "radius_init must be"),
    ({"sparsity": 3, "band_shrink": 1.5}, "band_shrink must be"),
    ({"sparsity": 3, "band_shrink": 0.0}, "band_shrink must be"),
]


@pytest.mark.parametrize("params,msg", BAD)
def test_bad_hyperparameters_raise_at_fit(noisy, params, msg):
    with pytest.raises(ValueError, match=msg):
        RobustSparseHalfspace(**params).fit(noisy.X, noisy.y)


def test_single_class_and_multiclass_labels_raise(noisy):
    clf = RobustSparseHalfspace(sparsity=3, outlier_method="none")
    with pytest.raises(ValueError, match="must hold 2 classes, got 1 class"):
        clf.fit(noisy.X, np.ones(noisy.X.shape[0]))
    with pytest.raises(ValueError, match="must hold 2 classes, got 3 class"):
        clf.fit(noisy.X, np.arange(noisy.X.shape[0]) % 3)
    with pytest.raises(ValueError, match="Unknown label type"):
        clf.fit(noisy.X, noisy.X[:, 0])  # continuous targets


def test_bad_data_raise(noisy):
    clf = RobustSparseHalfspace(sparsity=3, outlier_method="none")
    X = noisy.X.copy()
    X[3, 4] = np.nan
    with pytest.raises(ValueError, match="Input X contains NaN"):
        clf.fit(X, noisy.y)
    X[3, 4] = np.inf
    with pytest.raises(ValueError, match="Input X contains infinity"):
        clf.fit(X, noisy.y)
    with pytest.raises(ValueError, match="inconsistent numbers of samples"):
        clf.fit(noisy.X, noisy.y[:-1])
    with pytest.raises(ValueError, match="Expected 2D array"):
        clf.fit(noisy.X[0], noisy.y[:1])
    with pytest.raises(ValueError, match="0 sample"):
        clf.fit(np.empty((0, 30)), np.empty(0))
    with pytest.raises(ValueError, match="removed all 300 samples"):
        RobustSparseHalfspace(sparsity=3, clean_variance=1.0).fit(noisy.X * 100, noisy.y)
    # at the defaults the scale is estimated: 100 X fits as X does
    big = RobustSparseHalfspace(sparsity=3, outlier_method="none").fit(noisy.X * 100, noisy.y)
    np.testing.assert_allclose(big.coef_, clf.fit(noisy.X, noisy.y).coef_, atol=1e-6)
    fitted = RobustSparseHalfspace(sparsity=3, outlier_method="none").fit(noisy.X, noisy.y)
    with pytest.raises(
        ValueError, match="X has 5 features, but RobustSparseHalfspace is expecting 30"
    ):
        fitted.predict(noisy.X[:, :5])
    # the functional core keeps the strict {-1, +1} labels of the paper
    with pytest.raises(ValueError, match=r"labels must be in \{-1, \+1\}"):
        fit_robust_halfspace(noisy.X, 2 * noisy.y, sparsity=3)
    X[3, 4] = np.nan
    with pytest.raises(ValueError, match="X contains 1 NaN"):
        fit_robust_halfspace(X, noisy.y, sparsity=3)


def test_sdp_refused_above_150_dims():
    data = make_margin_halfspace(50, 160, 2, seed=0)
    with pytest.raises(ValueError, match="use method='power'"):
        RobustSparseHalfspace(sparsity=2, outlier_method="sdp").fit(data.X, data.y)


def test_infeasible_weight_program_suggests_larger_slack():
    X = np.random.default_rng(0).standard_normal((60, 8)) * 3.0
    y = np.sign(X[:, 0])
    # the analysis's setting (unit clean scale, c_v = 1) on features of scale 3
    analysis = {"clean_variance": 1.0, "variance_slack": 1.0}
    with pytest.raises(ValueError, match="larger variance_slack"):
        RobustSparseHalfspace(
            sparsity=2, noise_rate=0.05, filter_const=10.0, outlier_method="power", **analysis
        ).fit(X, y)
    # the advice works
    RobustSparseHalfspace(
        sparsity=2, noise_rate=0.05, filter_const=10.0, variance_slack=30.0,
        outlier_method="power", clean_variance=1.0,
    ).fit(X, y)
    # and the defaults fit it: the scale is estimated, the slack raised only if needed
    fitted = RobustSparseHalfspace(sparsity=2, noise_rate=0.05, outlier_method="power").fit(X, y)
    assert fitted.score(X, y) > 0.9 and fitted.variance_slack_ >= 1.0
