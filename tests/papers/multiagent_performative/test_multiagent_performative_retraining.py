"""Repeated retraining: the theorem's rate, the threshold, the noise floor, the learners."""

import dataclasses

import networkx as nx
import numpy as np
import pytest

from neurips26.papers.multiagent_performative import (
    LEARNERS,
    LinearFit,
    MultiAgentRetraining,
    QuadraticPerformativeGame,
    RetrainingTrace,
    fitted_rate,
    linear_growth,
    make_game,
    perron_start,
    repeated_retraining,
    spectral_threshold,
    stationary_excess,
)


def single_agent(eps, beta=1.5, gamma=2.0, mu=1.0):
    return QuadraticPerformativeGame(
        mu=np.array([[mu]]), E=np.full((1, 1, 1, 1), eps), beta=[beta], gamma=[gamma]
    )


@pytest.mark.parametrize("c", [0.3, 0.5, 0.9, 0.99, 1.01, 1.1])
def test_single_agent_rate_is_eps_beta_over_gamma(c):
    # Perdomo et al. (2020), location family: |θ^{t+1} - θ_PS| = (ε β / γ) |θ^t - θ_PS|
    game = single_agent(eps=c * 2.0 / 1.5)
    assert spectral_threshold(game.reflexivity()).rho == pytest.approx(c)
    tr = repeated_retraining(game, max_iter=3000, theta0=np.array([[4.0]]))
    ratios = tr.distance[1:11] / tr.distance[:10]
    np.testing.assert_allclose(ratios, c, rtol=1e-9)
    assert tr.rate == pytest.approx(c, rel=1e-8)
    assert tr.converged == (c < 1)
    assert tr.diverged == (c > 1)


def test_fitted_rate_and_weighted_contraction_below_threshold():
    for graph in ("er", "star_in", "star_out", "ring"):
        for rho in (0.5, 0.9):
            game = make_game(graph=graph, num_agents=8, target_rho=rho, seed=11)
            th = spectral_threshold(game.reflexivity())
            tr = repeated_retraining(game, max_iter=400)
            assert tr.converged and not tr.diverged
            assert tr.rate <= th.rho + 0.02
            w = tr.weighted_distance
            assert np.all(w[1:] <= th.contraction * w[:-1] + 1e-13 * w[0])
            assert np.all(tr.excess_loss >= 0)


def test_threshold_is_sharp_for_nonnegative_instances():
    for rho, expect in ((0.97, True), (1.03, False)):
        for graph in ("er", "ring"):
            game = make_game(graph=graph, num_agents=6, target_rho=rho, seed=0)
            tr = repeated_retraining(game, max_iter=1500)
            assert tr.converged == expect


def test_dag_converges_in_depth_plus_one_rounds():
    for seed in range(3):
        game = make_game(graph="dag", num_agents=7, target_scalar=4.0, seed=seed)
        G = game.reflexivity()
        depth = nx.dag_longest_path_length(nx.from_numpy_array(G > 0, create_using=nx.DiGraph))
        tr = repeated_retraining(game, max_iter=depth + 3, theta0=np.ones((7, 1)))
        assert tr.distance[depth] > 1e-6  # not earlier (the path has full length)
        assert tr.distance[depth + 1] < 1e-12


def _series_covariance(A, Q, terms=4000):
    S, P = np.zeros_like(Q), np.eye(A.shape[0])
    for _ in range(terms):
        S += P @ Q @ P.T
        P = A @ P
    return S


@pytest.mark.parametrize("learner,lr", [("rrm", 0.1), ("damped", 0.3), ("gd", 0.2)])
def test_stationary_excess_matches_series_and_simulation(learner, lr):
    game = make_game(graph="er", num_agents=4, dim=2, target_rho=0.7, seed=9)
    N = 50
    pred = stationary_excess(game, num_samples=N, learner=learner, lr=lr)
    # independent: Σ = Σ_k A^k Q A^kᵀ written out for this learner
    M, _ = game.retraining_map()
    h = {"rrm": np.ones(4), "damped": np.full(4, lr), "gd": lr * game.gamma}[learner]
    h = np.repeat(h, 2)
    A = np.eye(8) - np.diag(h) @ (np.eye(8) - M)
    sd = h * np.repeat(game.beta / game.gamma, 2) * game.noise / np.sqrt(N)
    S = _series_covariance(A, np.diag(sd**2))
    R = np.eye(8) - M
    ref = np.sum(np.repeat(game.gamma / 2, 2) * np.diag(R @ S @ R.T))
    assert pred == pytest.approx(ref, rel=1e-8)
    # Monte Carlo: the long-run mean excess of finite-sample retraining
    tr = repeated_retraining(
        game,
        max_iter=20_000,
        learner=learner,
        lr=lr,
        num_samples=N,
        theta0=game.equilibrium(),
        seed=1,
    )
    assert tr.excess_loss[200:].mean() == pytest.approx(pred, rel=0.08)


def test_learner_equivalences():
    game = make_game(graph="ring", num_agents=4, target_rho=0.8, seed=0)
    rrm = repeated_retraining(game, max_iter=30)
    damped1 = repeated_retraining(game, max_iter=30, learner="damped", lr=1.0)
    np.testing.assert_allclose(damped1.thetas, rrm.thetas, atol=1e-14)
    eq = QuadraticPerformativeGame(
        mu=game.mu, E=game.E, beta=game.beta * 0 + 1.0, gamma=np.full(4, 2.0)
    )
    a = repeated_retraining(eq, max_iter=30)
    b = repeated_retraining(eq, max_iter=30, learner="gd", lr=0.5)  # lr γ = 1: gd = rrm
    np.testing.assert_allclose(a.thetas, b.thetas, atol=1e-14)


@pytest.mark.parametrize("learner,lr", [("rrm", 0.1), ("damped", 0.1), ("gd", 0.1)])
def test_supercritical_local_learners_pay_linear_excess(learner, lr):
    game = make_game(graph="ring", num_agents=5, target_rho=1.3, radius=1.0, seed=0)
    th0 = perron_start(game, offset=0.5)
    star = game.equilibrium(allow_unstable=True)
    assert np.max(np.abs(th0 - star)) == pytest.approx(0.5)
    tr = repeated_retraining(game, max_iter=600, learner=learner, lr=lr, theta0=th0)
    assert not tr.diverged and not tr.converged
    assert np.all(np.linalg.norm(tr.thetas, axis=2) <= 1.0 + 1e-12)  # stays in the balls
    fit = linear_growth(tr.cumulative_excess, start=300)
    assert fit.r2 > 0.99 and fit.slope > 0.01 * np.sum(game.gamma) / 2
    assert tr.distance[-1] > 0.5


def test_unconstrained_supercritical_run_diverges_and_stops():
    game = make_game(graph="er", num_agents=5, target_rho=1.3, seed=0)
    tr = repeated_retraining(game, max_iter=5000, theta0=np.ones((5, 1)))
    assert tr.diverged and not tr.converged
    assert tr.thetas.shape[0] < 5001 and tr.distance.shape == tr.excess_loss.shape
    assert tr.rate == pytest.approx(1.3, abs=0.02)


def test_trace_and_estimator_api():
    game = make_game(graph="star_out", num_agents=5, dim=2, target_rho=0.6, seed=0)
    tr = repeated_retraining(game, max_iter=50, num_samples=20, seed=3)
    assert isinstance(tr, RetrainingTrace)
    assert tr.thetas.shape == (51, 5, 2)
    for arr in (tr.distance, tr.weighted_distance, tr.excess_loss, tr.cumulative_excess):
        assert arr.shape == (51,)
    np.testing.assert_allclose(tr.cumulative_excess, np.cumsum(tr.excess_loss))
    with pytest.raises(dataclasses.FrozenInstanceError):
        tr.rate = 0.0
    again = repeated_retraining(game, max_iter=50, num_samples=20, seed=3)
    np.testing.assert_array_equal(tr.thetas, again.thetas)
    est = MultiAgentRetraining(max_iter=40).fit(game)
    assert est.trace_.converged is False or est.trace_.distance[-1] < 1e-6
    assert est.threshold_.rho == pytest.approx(0.6)
    assert est.theta_.shape == (5, 2)
    assert set(LEARNERS) == {"rrm", "damped", "gd"}


def test_fitted_rate_and_linear_growth_helpers():
    assert fitted_rate(0.8 ** np.arange(40)) == pytest.approx(0.8)
    assert fitted_rate(1.2 ** np.arange(40)) == pytest.approx(1.2)
    assert fitted_rate(np.array([1.0, 0.0, 0.0])) == 0.0
    assert np.isnan(fitted_rate(np.array([0.0, 0.0])))
    fit = linear_growth(3.0 + 0.5 * np.arange(100), start=50)
    assert isinstance(fit, LinearFit)
    assert fit.slope == pytest.approx(0.5) and fit.intercept == pytest.approx(3.0)
    assert fit.r2 == pytest.approx(1.0)
    assert linear_growth(np.ones(10)).r2 == 0.0
    with pytest.raises(ValueError, match="at least 3"):
        linear_growth(np.arange(5), start=4)
    with pytest.raises(ValueError, match="NaN or infinite"):
        linear_growth([1.0, 2.0, np.nan, 4.0])
    with pytest.raises(ValueError, match="1-dimensional"):
        linear_growth(np.ones((4, 2)))


def test_bad_retraining_inputs():
    game = make_game(graph="ring", num_agents=3, target_rho=0.5)
    with pytest.raises(ValueError, match="unknown learner"):
        repeated_retraining(game, learner="adam")
    with pytest.raises(ValueError, match="lr must be > 0"):
        repeated_retraining(game, learner="gd", lr=0.0)
    with pytest.raises(ValueError, match="lr must be a finite number"):
        repeated_retraining(game, learner="gd", lr=float("nan"))
    with pytest.raises(ValueError, match=r"lr must lie in \(0, 1\]"):
        repeated_retraining(game, learner="damped", lr=1.5)
    with pytest.raises(ValueError, match="max_iter"):
        repeated_retraining(game, max_iter=0)
    with pytest.raises(ValueError, match="num_samples"):
        repeated_retraining(game, num_samples=0)
    with pytest.raises(ValueError, match="theta0 must have shape"):
        repeated_retraining(game, theta0=np.zeros((2, 1)))
    with pytest.raises(ValueError, match="NaN"):
        repeated_retraining(game, theta0=np.full((3, 1), np.nan))
    with pytest.raises(TypeError, match="QuadraticPerformativeGame"):
        repeated_retraining(np.eye(3))
    with pytest.raises(ValueError, match="no steady state"):
        stationary_excess(make_game(graph="ring", num_agents=3, target_rho=1.2), num_samples=10)
    with pytest.raises(ValueError, match="offset"):
        perron_start(game, offset=-1.0)
