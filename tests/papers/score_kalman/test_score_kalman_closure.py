"""The filter's standardised block closure: exact on Gaussians and on the exact family."""

import numpy as np
import pytest

from neurips26.papers.score_kalman import (
    full_basis,
    gaussian_moments,
    oscillator_basis,
    score_matching_moments,
)
from neurips26.papers.score_kalman.closure import coordinate_blocks, downward_closure
from neurips26.papers.score_kalman.skf import _Closer, _ScorePlan


def _closure(basis, mean, cov, U):
    S = score_matching_moments(basis)
    mom = gaussian_moments(mean, cov, S)
    mS = np.array([mom[a] for a in S])
    closer = _Closer(basis, S, U)
    mu, s, mz = closer.standardise(mS)
    # exact Gaussian natural parameters in standardised coordinates: -1/2 C^{-1}
    n = len(mean)
    P = np.linalg.inv(cov / np.outer(s, s))
    theta = np.zeros(basis.size)
    for m, a in enumerate(basis.exponents):
        nz = [i for i in range(n) if a[i]]
        if sum(a) == 2:
            i, j = (nz[0], nz[0]) if len(nz) == 1 else nz
            theta[m] = -0.5 * P[i, i] if i == j else -P[i, j]
    return closer.close(mu, s, mz, theta, 1e-2), gaussian_moments(mean, cov, U)


def test_fit_of_gaussian_is_its_own_gaussian_without_fallback():
    # Issue 12: the old filter replaced this fit by a ridge toward a fixed -0.01 z^4
    # (regularised, biased); the Hermite-preconditioned fit returns the Gaussian itself.
    basis = full_basis(2, 4)
    S = score_matching_moments(basis)
    mom = gaussian_moments([0.3, -0.1], [[1.0, 0.2], [0.2, 0.5]], S)
    closer = _Closer(basis, S, [(7, 0)])
    _, _, mz = closer.standardise(np.array([mom[a] for a in S]))
    fit, reg = _ScorePlan(basis).fit_robust(mz)
    assert not reg
    assert fit.cond < 1.0 + 1e-8  # orthonormal at the Gaussian reference: identity matrix
    ng = np.array([sum(a) > 2 for a in basis.exponents])
    assert np.abs(fit.theta[ng]).max() < 1e-10


@pytest.mark.parametrize("n", [2, 4])
def test_closure_reproduces_isserlis_on_gaussian(n):
    rng = np.random.default_rng(n)
    L = rng.standard_normal((n, n))
    cov = L @ L.T / n + 0.3 * np.eye(n)
    mean = rng.standard_normal(n)
    basis = full_basis(2, 4) if n == 2 else oscillator_basis(n)
    S = set(score_matching_moments(basis))
    # moments of degree 7-8 the predict step needs, including cross-oscillator ones
    U = sorted(a for a in downward_closure([(8,) + (0,) * (n - 1), (3, 2) + (3,) * (n - 2)])
               if a not in S and sum(a) <= 8)
    got, want = _closure(basis, mean, cov, U)
    np.testing.assert_allclose(got, [want[a] for a in U], rtol=1e-8, atol=1e-8)


def test_coordinate_blocks():
    assert coordinate_blocks(oscillator_basis(6)) == [[0, 1], [2, 3], [4, 5]]
    assert coordinate_blocks(full_basis(3, 4)) == [[0, 1, 2]]
    assert coordinate_blocks(full_basis(3, 2)) == [[0], [1], [2]]
