"""The malicious-noise oracle and the exact clean error."""

import math

import numpy as np
import pytest

from neurips26.papers.sparse_halfspace import (
    ADVERSARIES,
    clean_error,
    filter_threshold,
    make_margin_halfspace,
)


def test_clean_error_closed_forms():
    w_star = np.array([1.0, 0.0, 0.0])
    assert clean_error(w_star, w_star, margin=0.1) == 0.0
    assert clean_error(-w_star, w_star, margin=0.1) == 1.0
    assert clean_error(np.zeros(3), w_star, margin=0.1) == 0.5
    for theta in (0.1, 0.7, 1.5, 2.5):  # no margin: error = theta / pi
        w = np.array([math.cos(theta), math.sin(theta), 0.0])
        assert clean_error(w, w_star, margin=0.0) == pytest.approx(theta / math.pi, abs=1e-9)
    # scale invariance
    w = np.array([1.0, 0.4, -0.2])
    ref = clean_error(w, w_star, margin=0.1)
    assert clean_error(3 * w, w_star, margin=0.1) == pytest.approx(ref)


def test_clean_error_matches_monte_carlo():
    data = make_margin_halfspace(200_000, 5, 2, margin=0.3, seed=0)
    rng = np.random.default_rng(1)
    w = data.w_star + 0.5 * rng.standard_normal(5)
    mc = np.mean(np.sign(data.X @ w) != data.y)
    se = math.sqrt(mc * (1 - mc) / 200_000)
    assert abs(clean_error(w, data.w_star, margin=0.3) - mc) < 4 * se


def test_make_margin_halfspace_shapes_margin_and_sparsity():
    data = make_margin_halfspace(4000, 40, 4, margin=0.2, seed=3)
    assert data.X.shape == (4000, 40) and data.y.shape == (4000,)
    assert np.count_nonzero(data.w_star) == 4
    assert np.linalg.norm(data.w_star) == pytest.approx(1.0)
    z = data.X @ data.w_star
    assert np.all(np.abs(z) >= 0.2 - 1e-12)
    np.testing.assert_array_equal(data.y, np.sign(z))
    assert not data.is_corrupt.any()
    # the clean marginal is N(0, I) off the w* direction
    P = np.eye(40) - np.outer(data.w_star, data.w_star)
    assert np.allclose(np.cov((data.X @ P).T), P, atol=0.1)


@pytest.mark.parametrize("adversary", ADVERSARIES)
def test_corruption_rate_labels_and_determinism(adversary):
    a = make_margin_halfspace(4000, 30, 3, noise_rate=0.2, adversary=adversary, seed=5)
    b = make_margin_halfspace(4000, 30, 3, noise_rate=0.2, adversary=adversary, seed=5)
    np.testing.assert_array_equal(a.X, b.X)
    assert abs(a.is_corrupt.mean() - 0.2) < 0.03
    assert set(np.unique(a.y).tolist()) <= {-1.0, 1.0}
    c = a.is_corrupt
    # every corrupted label disagrees with w*, every clean one agrees
    assert np.all(a.y[c] != np.sign(a.X[c] @ a.w_star))
    assert np.all(a.y[~c] == np.sign(a.X[~c] @ a.w_star))
    thr = filter_threshold(4000, 30)
    linf = np.abs(a.X[c]).max(axis=1)
    if adversary == "large_norm":  # a spike of 1.75 times the clean range on a clean point
        assert np.mean(linf > thr) > 0.95
    else:
        assert np.all(linf < thr)


def test_flip_cluster_direction_is_s_sparse():
    data = make_margin_halfspace(2000, 50, 3, noise_rate=0.3, adversary="flip_cluster", seed=2)
    center = data.X[data.is_corrupt].mean(axis=0)
    top = set(np.argsort(-np.abs(center))[:3].tolist())
    assert top == set(np.flatnonzero(data.w_star).tolist())


def test_make_margin_halfspace_bad_input():
    with pytest.raises(ValueError, match="noise_rate eta must be in"):
        make_margin_halfspace(10, 5, 2, noise_rate=0.5)
    with pytest.raises(ValueError, match="noise_rate eta must be in"):
        make_margin_halfspace(10, 5, 2, noise_rate=-0.1)
    with pytest.raises(ValueError, match="sparsity s must satisfy"):
        make_margin_halfspace(10, 5, 0)
    with pytest.raises(ValueError, match="sparsity s must satisfy"):
        make_margin_halfspace(10, 5, 6)
    with pytest.raises(ValueError, match="margin must be"):
        make_margin_halfspace(10, 5, 2, margin=0.0)
    with pytest.raises(ValueError, match="unknown adversary"):
        make_margin_halfspace(10, 5, 2, adversary="nice")
    with pytest.raises(TypeError, match="sparsity must be an integer"):
        make_margin_halfspace(10, 5, 2.5)
