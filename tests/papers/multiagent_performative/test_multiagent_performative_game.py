"""The quadratic performative game: best responses, equilibrium, excess loss, generators."""

import networkx as nx
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.optimize import minimize

from neurips26.papers.multiagent_performative import (
    GRAPHS,
    QuadraticPerformativeGame,
    make_game,
    project_to_ball,
    spectral_radius,
    spectral_threshold,
)


def small_game(radius=None):
    return make_game(graph="er", num_agents=4, dim=2, target_rho=0.7, seed=3, radius=radius)


def test_best_response_matches_scipy_on_monte_carlo_risk():
    # s = 0.3: the Monte Carlo error of 20k samples is <= 0.0032, a third of the 1e-2 bar
    game = make_game(graph="ring", num_agents=3, dim=2, target_rho=0.6, noise=0.3, seed=1)
    rng = np.random.default_rng(5)
    theta = rng.normal(size=(3, 2))
    z = game.sample_data(theta, num_samples=20_000, seed=7)  # (n, N, d)
    assert z.shape == (3, 20_000, 2)
    emp = game.empirical_best_response(z)
    for i in range(3):
        # the empirical risk, written out from the loss l_i(z; u) = γ/2 |u|² - β u·z
        def risk(u, i=i):
            return np.mean(0.5 * game.gamma[i] * u @ u - game.beta[i] * z[i] @ u)

        res = minimize(risk, np.zeros(2), method="BFGS", options={"gtol": 1e-10})
        np.testing.assert_allclose(res.x, emp[i], atol=1e-5)
    np.testing.assert_allclose(emp, game.best_response(theta), atol=1e-2)
    np.testing.assert_array_equal(game.best_response(theta, num_samples=20_000, seed=7), emp)


def test_equilibrium_three_ways():
    game = small_game()
    M, b = game.retraining_map()
    ref = np.linalg.solve(np.eye(M.shape[0]) - M, b).reshape(4, 2)
    x = np.zeros(8)
    for _ in range(2000):
        x = b + M @ x
    np.testing.assert_allclose(game.equilibrium(), ref, atol=1e-12)
    np.testing.assert_allclose(x.reshape(4, 2), ref, atol=1e-10)
    # a fixed point of the best response, with zero excess loss
    th = game.equilibrium()
    np.testing.assert_allclose(game.best_response(th), th, atol=1e-12)
    assert np.all(np.abs(game.excess_loss(th)) < 1e-20)


def test_retraining_map_blocks():
    game = small_game()
    M, b = game.retraining_map()
    n, d = 4, 2
    for i in range(n):
        for j in range(n):
            np.testing.assert_allclose(
                M[i * d : (i + 1) * d, j * d : (j + 1) * d],
                game.beta[i] / game.gamma[i] * game.E[i, j],
            )
    np.testing.assert_allclose(b.reshape(n, d), (game.beta / game.gamma)[:, None] * game.mu)


@pytest.mark.parametrize("graph", ["er", "star_in", "star_out", "ring"])
@pytest.mark.parametrize("dim", [1, 3])
def test_target_rho_and_exact_threshold_for_aligned_blocks(graph, dim):
    game = make_game(graph=graph, num_agents=6, dim=dim, target_rho=1.1, seed=2)
    G = game.reflexivity()
    assert np.all(G >= 0)
    assert spectral_threshold(G).rho == pytest.approx(1.1, rel=1e-10)
    M, _ = game.retraining_map()
    assert spectral_radius(M) == pytest.approx(1.1, rel=1e-10)  # ρ(M) = ρ(Γ)


@pytest.mark.parametrize("dim", [1, 3])
def test_rotated_blocks_only_lower_the_radius(dim):
    for seed in range(5):
        game = make_game(graph="er", num_agents=6, dim=dim, target_rho=0.9, rotate=True, seed=seed)
        np.testing.assert_allclose(game.sensitivities(), np.linalg.norm(game.E, ord=2, axis=(2, 3)))
        M, _ = game.retraining_map()
        assert spectral_radius(M) <= spectral_threshold(game.reflexivity()).rho + 1e-10


def test_dag_games_are_nilpotent_with_given_scalar_constant():
    game = make_game(graph="dag", num_agents=8, target_scalar=3.0, seed=4)
    G = game.reflexivity()
    assert np.allclose(np.linalg.matrix_power(G, 8), 0.0)
    th = spectral_threshold(G)
    assert th.rho == 0.0 and th.scalar_constant == pytest.approx(3.0)
    support = nx.from_numpy_array((G > 0).astype(int), create_using=nx.DiGraph)
    assert nx.is_directed_acyclic_graph(support)
    assert nx.dag_longest_path_length(support) == 7  # the path through the order


def test_wasserstein_sensitivity_bound():
    # W1 between Gaussians with equal covariance = distance of the means
    game = make_game(graph="er", num_agents=5, dim=3, target_rho=0.8, rotate=True, seed=0)
    eps = game.sensitivities()
    rng = np.random.default_rng(1)
    for _ in range(20):
        a, b = rng.normal(size=(2, 5, 3))
        w1 = np.linalg.norm(game.data_mean(a) - game.data_mean(b), axis=1)
        bound = eps @ np.linalg.norm(a - b, axis=1)
        assert np.all(w1 <= bound + 1e-12)


def test_excess_loss_is_gap_to_the_minimal_risk():
    game = small_game()
    theta = np.random.default_rng(2).normal(size=(4, 2))
    ex = game.excess_loss(theta)
    assert np.all(ex >= 0)
    for i in range(4):

        def risk(u, i=i):
            U = theta.copy()
            U[i] = u
            return game.decoupled_risk(U, theta)[i]

        best = minimize(risk, np.zeros(2), method="BFGS", options={"gtol": 1e-10}).fun
        assert game.decoupled_risk(theta, theta)[i] - best == pytest.approx(ex[i], abs=1e-7)
    np.testing.assert_allclose(game.performative_risk(theta), game.decoupled_risk(theta, theta))


@settings(max_examples=50, deadline=None)
@given(
    st.lists(st.floats(-10, 10), min_size=6, max_size=6),
    st.lists(st.floats(-10, 10), min_size=6, max_size=6),
    st.floats(0.1, 5.0),
)
def test_projection_is_nonexpansive(a, b, radius):
    a = np.array(a).reshape(3, 2)
    b = np.array(b).reshape(3, 2)
    pa, pb = project_to_ball(a, radius), project_to_ball(b, radius)
    assert np.all(np.linalg.norm(pa, axis=1) <= radius * (1 + 1e-12))
    assert np.linalg.norm(pa - pb) <= np.linalg.norm(a - b) + 1e-9
    np.testing.assert_allclose(project_to_ball(pa, radius), pa)


def test_constrained_best_response_projects():
    game = make_game(graph="ring", num_agents=3, target_rho=1.3, radius=0.1, seed=0)
    th = np.full((3, 1), 0.1)
    assert np.all(np.abs(game.constrained_best_response(th)) <= 0.1 + 1e-15)


def test_custom_networkx_graph():
    G = nx.DiGraph()
    G.add_weighted_edges_from([("a", "b", 2.0), ("b", "a", 0.5), ("b", "c", 1.0), ("c", "b", 1.0)])
    game = make_game(graph=G, target_rho=0.9, seed=0)
    assert game.num_agents == 3
    assert spectral_threshold(game.reflexivity()).rho == pytest.approx(0.9)
    assert game.reflexivity()[1, 0] > 0 and game.reflexivity()[0, 2] == 0  # a -> b, not c -> a


def test_bad_game_inputs():
    mu, E = np.zeros((2, 1)), np.zeros((2, 2, 1, 1))
    ok = {"mu": mu, "E": E, "beta": [1.0, 1.0], "gamma": [1.0, 1.0]}
    with pytest.raises(ValueError, match=r"E must have shape \(n, n, d, d\)"):
        QuadraticPerformativeGame(**{**ok, "E": np.zeros((2, 2, 2, 2))})
    with pytest.raises(ValueError, match="beta must be positive"):
        QuadraticPerformativeGame(**{**ok, "beta": [1.0, -1.0]})
    with pytest.raises(ValueError, match="gamma must be positive"):
        QuadraticPerformativeGame(**{**ok, "gamma": [0.0, 1.0]})
    with pytest.raises(ValueError, match="shape"):
        QuadraticPerformativeGame(**{**ok, "gamma": [1.0]})
    with pytest.raises(ValueError, match="NaN"):
        QuadraticPerformativeGame(**{**ok, "mu": np.array([[np.nan], [0.0]])})
    with pytest.raises(ValueError, match="radius"):
        QuadraticPerformativeGame(**ok, radius=0.0)
    with pytest.raises(ValueError, match="noise"):
        QuadraticPerformativeGame(**ok, noise=-1.0)
    with pytest.raises(ValueError, match="empty"):
        QuadraticPerformativeGame(**{**ok, "mu": np.zeros((0, 1))})
    game = QuadraticPerformativeGame(**ok)
    with pytest.raises(ValueError, match=r"theta must have shape \(n, d\)"):
        game.best_response(np.zeros((3, 1)))
    with pytest.raises(ValueError, match="num_samples"):
        game.best_response(np.zeros((2, 1)), num_samples=0)
    with pytest.raises(ValueError, match="radius"):
        project_to_ball(np.zeros((2, 1)), -1.0)


def test_equilibrium_refuses_unstable_and_singular():
    one = {"mu": np.ones((1, 1)), "beta": [1.0], "gamma": [1.0]}
    unstable = QuadraticPerformativeGame(E=np.full((1, 1, 1, 1), 1.5), **one)
    with pytest.raises(ValueError, match="allow_unstable"):
        unstable.equilibrium()
    assert unstable.equilibrium(allow_unstable=True)[0, 0] == pytest.approx(-2.0)
    critical = QuadraticPerformativeGame(E=np.full((1, 1, 1, 1), 1.0), **one)
    with pytest.raises(ValueError, match="singular"):
        critical.equilibrium(allow_unstable=True)


def test_bad_make_game_inputs():
    with pytest.raises(ValueError, match="unknown graph"):
        make_game(graph="tree")
    with pytest.raises(ValueError, match="target_rho must be positive"):
        make_game(target_rho=0.0)
    with pytest.raises(ValueError, match="target_rho must be positive"):
        make_game(target_rho=float("nan"))
    with pytest.raises(ValueError, match="acyclic"):
        make_game(graph="dag", target_rho=0.5)
    with pytest.raises(ValueError, match="num_agents >= 2"):
        make_game(graph="ring", num_agents=1)
    with pytest.raises(ValueError, match="dim"):
        make_game(dim=0)
    with pytest.raises(ValueError, match="empty"):
        make_game(graph=nx.DiGraph())
    G = nx.DiGraph()
    G.add_nodes_from([0, 1, 2])
    with pytest.raises(ValueError, match="no edges"):
        make_game(graph=G)
    with pytest.raises(TypeError, match="DiGraph"):
        make_game(graph=nx.path_graph(3))
    with pytest.raises(ValueError, match="edge_prob"):
        make_game(edge_prob=0.0)
    assert set(GRAPHS) == {"er", "star_in", "star_out", "dag", "ring"}
