"""Γ, its spectral radius, Perron certificate and scalar constant."""

import networkx as nx
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from neurips26.papers.multiagent_performative import (
    Threshold,
    reflexivity_matrix,
    scalar_constant,
    spectral_radius,
    spectral_threshold,
    weighted_max_norm,
)


def test_single_agent_is_perdomo_constant():
    # Perdomo et al. (2020): repeated risk minimisation contracts at eps * beta / gamma
    for eps, beta, gamma in [(0.3, 2.0, 1.5), (1.0, 1.0, 1.0), (2.0, 0.5, 0.25)]:
        G = reflexivity_matrix([[eps]], [beta], [gamma])
        th = spectral_threshold(G)
        assert th.rho == pytest.approx(eps * beta / gamma, rel=1e-14)
        assert th.scalar_constant == pytest.approx(eps * beta / gamma, rel=1e-14)
        assert th.stable == (eps * beta / gamma < 1)


def test_reflexivity_scales_rows():
    eps = np.array([[0.0, 1.0, 2.0], [3.0, 0.0, 0.5], [1.0, 1.0, 1.0]])
    beta = np.array([1.0, 2.0, 3.0])
    gamma = np.array([2.0, 1.0, 6.0])
    G = reflexivity_matrix(eps, beta, gamma)
    for i in range(3):
        for j in range(3):
            assert G[i, j] == pytest.approx(eps[i, j] * beta[i] / gamma[i])


def test_two_cycle_closed_form():
    # Γ = [[0, a], [b, 0]]: ρ = sqrt(ab), Perron vector ∝ (sqrt(a), sqrt(b))
    a, b = 2.0, 0.125
    th = spectral_threshold([[0.0, a], [b, 0.0]])
    assert th.rho == pytest.approx(np.sqrt(a * b), rel=1e-12)
    v = np.array([np.sqrt(a), np.sqrt(b)])
    np.testing.assert_allclose(th.perron_vector, v / v.max(), rtol=1e-10)
    assert th.contraction == pytest.approx(0.5, rel=1e-10)
    assert th.scalar_constant == 2.0 and th.stable and not th.scalar_stable
    assert th.irreducible


def test_dag_is_nilpotent_with_exact_zero_radius():
    rng = np.random.default_rng(0)
    n = 12
    G = np.triu(rng.uniform(0.5, 3.0, (n, n)), k=1)  # a complete DAG, depth n - 1
    perm = rng.permutation(n)
    G = G[np.ix_(perm, perm)]
    assert np.allclose(np.linalg.matrix_power(G, n), 0.0)  # Γ^n = 0
    th = spectral_threshold(G)
    assert th.rho == 0.0 and th.stable and not th.irreducible
    assert th.scalar_constant > 2
    assert np.all(th.perron_vector > 0)
    # numpy's eig gets O(eps^(1/n)) here; the block decomposition is exact
    assert th.contraction >= th.rho


# Entries are 0 or in [1e-3, 3]. With entries spanning more than ~1e15 (a 1e-31 link beside a
# 3), the Perron vector has components below double precision relative to its largest, and no
# floating-point eigenvector can certify c = rho: the property is stated for well-scaled
# matrices. The 1e-94 example that once made this test flaky is a regression test below.
entry = st.one_of(st.just(0.0), st.floats(min_value=1e-3, max_value=3.0))
nonneg = st.integers(min_value=1, max_value=7).flatmap(
    lambda n: st.lists(entry, min_size=n * n, max_size=n * n).map(
        lambda x: np.array(x).reshape(n, n)
    )
)


def test_tiny_link_keeps_the_perron_certificate():
    # eig's balancing returned the wrong eigenvector here (contraction 1e12 for rho = 1).
    G = np.array([[0.0, 0.0, 1.0], [2.9315142527187934e-94, 1.0, 0.0], [0.0, 1.0, 0.0]])
    th = spectral_threshold(G)
    assert th.irreducible and th.rho == pytest.approx(1.0)
    assert th.contraction == pytest.approx(1.0, rel=1e-9)
    np.testing.assert_allclose(th.perron_vector, np.ones(3), rtol=1e-9)


@settings(max_examples=60, deadline=None)
@given(nonneg, st.integers(0, 2**31))
def test_radius_matches_numpy_and_perron_contraction_holds(G, seed):
    th = spectral_threshold(G)
    assert isinstance(th, Threshold)
    # independent check: numpy's eigenvalues (loose where blocks are defective)
    ref = float(np.max(np.abs(np.linalg.eigvals(G))))
    assert th.rho == pytest.approx(ref, abs=1e-6 + 1e-3 * ref)
    assert th.rho <= th.scalar_constant + 1e-12
    assert th.rho <= th.contraction + 1e-9
    v = th.perron_vector
    assert np.all(v > 0) and v.max() == pytest.approx(1.0)
    assert np.all(G @ v <= th.contraction * v + 1e-12)
    # the weighted max-norm contracts: ||Γ e||_v <= c ||e||_v for e >= 0
    e = np.random.default_rng(seed).exponential(size=G.shape[0])
    assert weighted_max_norm(G @ e, v) <= th.contraction * weighted_max_norm(e, v) * (1 + 1e-9)
    if th.irreducible and G.shape[0] > 1:
        assert th.contraction == pytest.approx(th.rho, rel=1e-7, abs=1e-10)


def test_strongly_connected_matches_networkx():
    G = np.array([[0, 1, 0], [0, 0, 1], [1, 0, 0]], dtype=float)
    assert spectral_threshold(G).irreducible
    ref = nx.is_strongly_connected(nx.from_numpy_array(G, create_using=nx.DiGraph))
    assert ref
    G[2, 0] = 0
    assert not spectral_threshold(G).irreducible


def test_scalar_constant_and_radius_helpers():
    assert scalar_constant([[0.5, 0.7], [0.1, 0.0]]) == pytest.approx(1.2)
    assert spectral_radius([[0.0, -2.0], [2.0, 0.0]]) == pytest.approx(2.0)
    assert weighted_max_norm([1.0, -4.0], [1.0, 2.0]) == 2.0


@pytest.mark.parametrize(
    "G,msg",
    [
        (np.ones((2, 3)), "square"),
        (np.array([[0.5, -0.1], [0.0, 0.2]]), "nonnegative"),
        (np.array([[np.nan, 0.0], [0.0, 0.2]]), "NaN"),
        (np.zeros((0, 0)), "empty"),
        (np.ones(3), "2-dimensional"),
    ],
)
def test_bad_gamma(G, msg):
    with pytest.raises(ValueError, match=msg):
        spectral_threshold(G)


def test_bad_reflexivity_inputs():
    with pytest.raises(ValueError, match="nonnegative"):
        reflexivity_matrix([[-1.0]], [1.0], [1.0])
    with pytest.raises(ValueError, match="beta"):
        reflexivity_matrix([[1.0]], [0.0], [1.0])
    with pytest.raises(ValueError, match="gamma"):
        reflexivity_matrix([[1.0]], [1.0], [-2.0])
    with pytest.raises(ValueError, match="shape"):
        reflexivity_matrix(np.ones((2, 2)), [1.0, 1.0, 1.0], [1.0, 1.0, 1.0])
    with pytest.raises(ValueError, match="gamma must have shape"):
        reflexivity_matrix(np.ones((2, 2)), [1.0, 1.0], [1.0])
    with pytest.raises(TypeError, match="numbers"):
        reflexivity_matrix([["a"]], [1.0], [1.0])
    with pytest.raises(ValueError, match="regularization"):
        spectral_threshold([[0.5]], regularization=-1.0)
    with pytest.raises(ValueError, match="positive"):
        weighted_max_norm([1.0], [0.0])
