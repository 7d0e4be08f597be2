"""API, property, bad-input and smoke tests for the Score Kalman Filter."""

import numpy as np
import pytest

from neurips26.papers.score_kalman import (
    ClosureError,
    MonomialBasis,
    NonIntegrableBeliefError,
    ScoreKalmanFilter,
    coupled_duffing,
    full_basis,
    gaussian_moments,
    kalman_filter,
    linear_gaussian,
    oscillator_basis,
    score_matching_fit,
    score_matching_moments,
    stein_closure,
    update,
)
from neurips26.papers.score_kalman import experiment as exp


def test_basis_sizes_and_shapes():
    assert full_basis(2, 4).size == 14
    assert oscillator_basis(4).size == 32
    x = np.random.default_rng(0).standard_normal((5, 2))
    assert full_basis(2, 4).evaluate(x).shape == (5, 14)


def test_filter_result_shapes():
    rng = np.random.default_rng(0)
    skf = ScoreKalmanFilter(basis=full_basis(2, 2), model=linear_gaussian(0.9 * np.eye(2),
                            0.1 * np.eye(2)), H=np.eye(2), R=np.eye(2), dt=1.0)
    r = skf.filter(rng.standard_normal((7, 2)), np.zeros(2), np.eye(2))
    assert r.means.shape == (7, 2) and r.covs.shape == (7, 2, 2)
    assert r.theta.shape == (7, 5) and r.step_time_s.shape == (7,)


def test_permutation_invariance():
    rng = np.random.default_rng(1)
    F = np.array([[0.9, 0.2], [0.0, 0.7]])
    Q, H, R = 0.1 * np.eye(2), np.array([[1.0, 0.5]]), np.array([[0.3]])
    ys = rng.standard_normal((10, 1))
    P = np.array([[0, 1], [1, 0]])
    a = ScoreKalmanFilter(basis=full_basis(2, 2), model=linear_gaussian(F, Q), H=H, R=R,
                          dt=1).filter(ys, [0.1, 0.2], np.eye(2))
    b = ScoreKalmanFilter(basis=full_basis(2, 2), model=linear_gaussian(P @ F @ P, Q),
                          H=H @ P, R=R, dt=1).filter(ys, [0.2, 0.1], np.eye(2))
    np.testing.assert_allclose(a.means[:, ::-1], b.means, atol=1e-10)


def test_update_information_form_property():
    # Gaussian basis: posterior precision = prior precision + H^T R^-1 H
    rng = np.random.default_rng(2)
    basis = full_basis(2, 2)
    P0 = np.array([[1.0, 0.3], [0.3, 0.5]])
    H, R = rng.standard_normal((1, 2)), np.array([[0.4]])
    prior = gaussian_moments([0.2, -0.1], P0, score_matching_moments(basis))
    post = update(prior, np.array([0.5]), H, R, basis)
    mu = np.array([post.moments[(1, 0)], post.moments[(0, 1)]])
    cov = np.array([[post.moments[(2, 0)], post.moments[(1, 1)]],
                    [post.moments[(1, 1)], post.moments[(0, 2)]]]) - np.outer(mu, mu)
    np.testing.assert_allclose(np.linalg.inv(cov), np.linalg.inv(P0) + H.T @ H / 0.4, atol=1e-9)
    ref = kalman_filter([[0.5]], [0.2, -0.1], P0, F=np.eye(2), Q=np.zeros((2, 2)), H=H, R=R)
    np.testing.assert_allclose(mu, ref.means[0], atol=1e-10)


def test_bad_basis():
    with pytest.raises(ValueError, match="constant"):
        MonomialBasis([(0, 0)])
    with pytest.raises(ValueError, match="duplicate"):
        MonomialBasis([(1,), (1,)])
    with pytest.raises(ValueError, match="odd"):
        full_basis(1, 3).check_normalisable()
    with pytest.raises(ValueError, match="coordinate 1 lacks"):
        MonomialBasis([(1, 0), (2, 0), (1, 1)]).check_normalisable()


def test_missing_moment_is_named():
    m = gaussian_moments([0.0], [[1.0]], [(1,), (2,), (3,), (4,), (5,)])
    with pytest.raises(ValueError, match=r"\(6,\)"):
        score_matching_fit(m, full_basis(1, 4))


def test_non_integrable_fit_raises():
    # moments of a degenerate (point-mass-like) belief: A singular
    m = {(1,): 1.0, (2,): 1.0}
    with pytest.raises(NonIntegrableBeliefError, match="singular"):
        score_matching_fit(m, full_basis(1, 2))


def test_non_integrable_theta_raises():
    # heavy-tailed moments fit a positive quartic
    from scipy import stats

    t = stats.t(df=12)
    m = {(k,): float(t.moment(k)) for k in range(1, 7)}
    with pytest.raises(NonIntegrableBeliefError, match=r"not integrable|ill-conditioned"):
        score_matching_fit(m, full_basis(1, 4))


def test_rank_deficient_closure_raises():
    with pytest.raises(ClosureError, match=r"rank deficient|do not determine"):
        stein_closure(np.zeros(4), full_basis(1, 4), {(1,): 0.0, (2,): 1.0}, [(7,)])


def test_bad_observation_inputs():
    basis = full_basis(2, 2)
    prior = gaussian_moments([0, 0], np.eye(2), score_matching_moments(basis))
    with pytest.raises(ValueError, match="H has shape"):
        update(prior, np.zeros(1), np.eye(3), np.eye(1), basis)
    with pytest.raises(ValueError, match="R has shape"):
        update(prior, np.zeros(2), np.eye(2), np.eye(3), basis)
    with pytest.raises(ValueError, match="positive definite"):
        update(prior, np.zeros(2), np.eye(2), -np.eye(2), basis)
    with pytest.raises(ValueError, match="finite"):
        update(prior, np.array([np.nan, 0.0]), np.eye(2), np.eye(2), basis)
    with pytest.raises(ValueError, match="not in the basis"):
        update(prior, np.zeros(1), np.array([[1.0, 1.0]]), np.eye(1),
               MonomialBasis([(1, 0), (0, 1), (2, 0), (0, 2)]))


def test_missing_observations():
    skf = ScoreKalmanFilter(basis=full_basis(1, 2), model=linear_gaussian([[0.9]], [[0.1]]),
                            H=np.eye(1), R=np.eye(1), dt=1.0)
    ys = np.array([[1.0], [np.nan], [0.5]])
    with pytest.raises(ValueError, match="NaN"):
        skf.filter(ys, [0.0], [[1.0]])
    skf2 = ScoreKalmanFilter(basis=full_basis(1, 2), model=linear_gaussian([[0.9]], [[0.1]]),
                             H=np.eye(1), R=np.eye(1), dt=1.0, allow_missing=True)
    r = skf2.filter(ys, [0.0], [[1.0]])
    assert r.covs[1, 0, 0] > r.covs[0, 0, 0]  # predict only: variance grows


def test_bad_hyperparameters():
    with pytest.raises(ValueError, match="dt"):
        ScoreKalmanFilter(basis=full_basis(1, 2), model=linear_gaussian([[1.0]], [[1.0]]),
                          H=np.eye(1), R=np.eye(1), dt=0.0)
    with pytest.raises(TypeError, match="MonomialBasis"):
        score_matching_fit({}, [(1,)])
    with pytest.raises(ValueError, match="num_nodes"):
        coupled_duffing(num_nodes=0)


def test_smoke_run_gaussian_case():
    # determinism (two runs, same stable metrics) is the paper contract's test for every paper
    a = exp.run(exp.TIERS["smoke"])
    assert a.metrics["gaussian_kf_max_abs_diff"] < 1e-9
    assert "rmse" in a.tables and a.figures
    assert "rmse_min_gap" in a.intervals  # one run: an infinite interval, never zero-width


def test_timing_measures_the_maxent_control():
    t = exp._timing(exp.TIERS["smoke"])
    assert t["maxent_time_ratio_n3_n2"] > 0 and t["score_matching_time_ratio_n3_n2"] > 0


def test_step_wise_predict_update_equals_filter_on_a_nonlinear_model():
    bench = coupled_duffing(num_nodes=1, dt=0.1, seed=0)
    skf = ScoreKalmanFilter(basis=oscillator_basis(2), model=bench.model, H=bench.H, R=bench.R,
                            dt=bench.dt, num_substeps=5, allow_missing=True)
    init = bench.prior.moments(skf.moment_exponents)
    _, ys = bench.simulate(6, np.random.default_rng(1))
    ys[3] = np.nan  # a missing observation is skipped by both
    res = skf.filter(ys, init_moments=init)
    skf.initialize(init_moments=init)
    means = []
    for y in ys:
        means.append(skf.predict().update(y).mean_)
    np.testing.assert_array_equal(np.array(means), res.means)
    np.testing.assert_array_equal(skf.cov_, res.covs[-1])
    assert skf.step_ == len(ys)


def test_step_wise_bad_input_is_named():
    skf = ScoreKalmanFilter(basis=full_basis(1, 2), model=linear_gaussian([[0.9]], [[0.1]]),
                            H=np.eye(1), R=np.eye(1), dt=1.0)
    with pytest.raises(ValueError, match="initialize"):
        skf.predict()
    with pytest.raises(ValueError, match="initialize"):
        _ = skf.mean_
    skf.initialize(np.zeros(1), np.eye(1))
    with pytest.raises(ValueError, match=r"y must have shape \(1,\)"):
        skf.update([1.0, 2.0])
    with pytest.raises(ValueError, match="allow_missing"):
        skf.update([np.nan])
    with pytest.raises(ValueError, match="y must be finite"):
        skf.update([np.inf])
    skf.update([0.3])  # an update without predict fits the prior to the current belief
    assert skf.step_ == 1 and np.isfinite(skf.mean_).all()
