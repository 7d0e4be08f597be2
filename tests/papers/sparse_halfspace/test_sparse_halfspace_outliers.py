"""The filter threshold, the sparse-PCA SDP and soft outlier removal, tested on their own."""

import itertools
import math

import cvxpy as cp
import numpy as np
import pytest

from neurips26.papers.sparse_halfspace import (
    InfeasibleWeightsError,
    filter_threshold,
    linf_filter,
    make_margin_halfspace,
    project_capped_simplex,
    soft_outlier_weights,
    sparse_pca_sdp,
    sparse_variance_power,
)


def _brute_sparse_max(Sigma, s):
    """max over s-subsets of the top eigenvalue of the principal submatrix."""
    d = Sigma.shape[0]
    return max(
        np.linalg.eigvalsh(Sigma[np.ix_(idx, idx)])[-1]
        for idx in map(list, itertools.combinations(range(d), s))
    )


def _cov(seed, n, d, spike=0.0):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d))
    X[:, :2] += spike * rng.standard_normal((n, 1))
    return X.T @ X / n


# --- the filter -----------------------------------------------------------------------


def test_filter_threshold_formula_and_gaussian_pass_rate():
    expected = math.sqrt(2 * math.log(2 * 5000 / 0.05))  # union bound over n d entries
    assert filter_threshold(100, 50) == pytest.approx(expected)
    assert filter_threshold(100, 50, filter_const=3.0) == pytest.approx(3 * expected)
    assert filter_threshold(100, 50, delta=0.5) < expected
    # P(some |x_ij| > t) <= delta: over 20 Gaussian samples the filter keeps every point in
    # at least 19 (an exact union bound at delta = 0.05)
    misses = 0
    for seed in range(20):
        X = np.random.default_rng(seed).standard_normal((500, 100))
        misses += not linf_filter(X, threshold=filter_threshold(500, 100)).all()
    assert misses <= 1
    X = np.random.default_rng(0).standard_normal((2000, 100))
    X[:10, 5] = 2 * filter_threshold(2000, 100)
    kept = linf_filter(X, threshold=filter_threshold(2000, 100))
    assert not kept[:10].any() and kept[10:].all()


def test_filter_threshold_bad_delta():
    with pytest.raises(ValueError, match="delta must be in"):
        filter_threshold(10, 10, delta=1.0)
    with pytest.raises(ValueError, match="delta must be"):
        filter_threshold(10, 10, delta=0.0)


def test_filter_is_exactly_the_linf_rule():
    X = np.array([[1.0, -2.0], [2.5, 0.0], [-2.50001, 0.0]])
    assert linf_filter(X, threshold=2.5).tolist() == [True, True, False]


# --- the SDP relaxation ------------------------------------------------------------------


@pytest.mark.parametrize("seed,d,s", [(0, 6, 2), (1, 8, 3), (2, 10, 2), (3, 7, 1)])
def test_sdp_upper_bounds_brute_force_sparse_max(seed, d, s):
    Sigma = _cov(seed, 30, d, spike=1.0)
    res = sparse_pca_sdp(Sigma, sparsity=s, solver="CLARABEL")
    assert res.is_upper_bound
    assert res.value >= _brute_sparse_max(Sigma, s) - 1e-6
    # and it is a real bound: not above the top eigenvalue
    assert res.value <= np.linalg.eigvalsh(Sigma)[-1] + 1e-6
    if s == 1:  # tr H <= 1, ||H||_1 <= 1 forces the diagonal: value = max_j Sigma_jj
        assert res.value == pytest.approx(np.max(np.diag(Sigma)), abs=1e-6)


@pytest.mark.parametrize("solver", ["CLARABEL", "SCS"])
def test_sdp_equals_top_eigenvalue_when_s_equals_d(solver):
    Sigma = _cov(4, 40, 6, spike=0.5)
    res = sparse_pca_sdp(Sigma, sparsity=6, solver=solver)
    assert res.value == pytest.approx(np.linalg.eigvalsh(Sigma)[-1], rel=1e-3)


def test_power_method_is_a_lower_bound_inside_w():
    Sigma = _cov(5, 40, 10, spike=1.5)
    pw = sparse_variance_power(Sigma, sparsity=2)
    sdp = sparse_pca_sdp(Sigma, sparsity=2, solver="CLARABEL")
    w = np.linalg.eigh(pw.H)[1][:, -1]
    assert np.abs(w).sum() <= math.sqrt(2) + 1e-8
    assert not pw.is_upper_bound
    assert pw.value <= sdp.value + 1e-6
    assert pw.value >= 0.95 * _brute_sparse_max(Sigma, 2)  # finds the planted spike


# --- soft outlier removal ---------------------------------------------------------------


def test_capped_simplex_projection_matches_cvxpy():
    v = np.random.default_rng(0).standard_normal(12)
    q = project_capped_simplex(v, cap=0.15)
    x = cp.Variable(12)
    cp.Problem(cp.Minimize(cp.sum_squares(x - v)), [cp.sum(x) == 1, x >= 0, x <= 0.15]).solve()
    np.testing.assert_allclose(q, x.value, atol=1e-6)
    with pytest.raises(ValueError, match="empty"):
        project_capped_simplex(v, cap=0.01)


def test_uniform_weights_without_corruption_and_generous_bound():
    X = np.random.default_rng(0).standard_normal((80, 10))
    res = soft_outlier_weights(X, sparsity=2, xi=0.2, bound=10.0, method="sdp")
    np.testing.assert_array_equal(res.q, np.full(80, 1 / 80))
    assert res.num_cuts == 0 and res.certified


@pytest.mark.parametrize("method", ["sdp", "power"])
def test_weights_box_simplex_and_variance_cap(method):
    data = make_margin_halfspace(150, 12, 2, noise_rate=0.15, adversary="flip_cluster", seed=3)
    xi, bound = 0.3, 2.0
    res = soft_outlier_weights(data.X, sparsity=2, xi=xi, bound=bound, method=method, tol=1e-3)
    q = res.q
    cap = 1 / ((1 - xi) * 150)
    assert q.min() >= 0 and q.max() <= cap * (1 + 1e-12)
    assert q.sum() == pytest.approx(1.0, abs=1e-12)
    assert res.num_cuts >= 1
    # an independent check of the cap on the final weights: the exact sparse maximum
    Sigma = data.X.T @ (q[:, None] * data.X)
    assert _brute_sparse_max(Sigma, 2) <= bound * (1 + 1e-2)
    if method == "sdp":
        assert res.certified
        assert sparse_pca_sdp(Sigma, sparsity=2, solver="CLARABEL").value <= bound * (1 + 5e-3)
    else:
        assert not res.certified
    # the cluster loses weight: it started at its share of rows
    share = data.is_corrupt.mean()
    assert q[data.is_corrupt].sum() < share


def test_dense_eig_oracle_is_certified():
    data = make_margin_halfspace(200, 10, 2, noise_rate=0.1, seed=1)
    res = soft_outlier_weights(data.X, sparsity=None, xi=0.2, bound=2.0, method="eig")
    assert res.certified
    Sigma = data.X.T @ (res.q[:, None] * data.X)
    assert np.linalg.eigvalsh(Sigma)[-1] <= 2.0 * (1 + 1e-4)


def test_infeasible_weights_raise_with_advice():
    X = np.random.default_rng(0).standard_normal((60, 8)) * 3.0  # variance 9 everywhere
    with pytest.raises(InfeasibleWeightsError, match="larger variance_slack"):
        soft_outlier_weights(X, sparsity=2, xi=0.1, bound=2.0, method="power")


def test_soft_outlier_weights_bad_input():
    X = np.random.default_rng(0).standard_normal((20, 4))
    with pytest.raises(ValueError, match="xi must be in"):
        soft_outlier_weights(X, sparsity=2, xi=1.0, bound=2.0)
    with pytest.raises(ValueError, match="xi must be in"):
        soft_outlier_weights(X, sparsity=2, xi=-0.1, bound=2.0)
    with pytest.raises(ValueError, match="unknown method"):
        soft_outlier_weights(X, sparsity=2, xi=0.1, bound=2.0, method="magic")
    with pytest.raises(ValueError, match="needs method='eig'"):
        soft_outlier_weights(X, sparsity=None, xi=0.1, bound=2.0, method="sdp")
    with pytest.raises(ValueError, match="bound must be"):
        soft_outlier_weights(X, sparsity=2, xi=0.1, bound=0.0)
    big = np.random.default_rng(0).standard_normal((5, 151))
    with pytest.raises(ValueError, match="use method='power'"):
        soft_outlier_weights(big, sparsity=2, xi=0.1, bound=2.0, method="sdp")
