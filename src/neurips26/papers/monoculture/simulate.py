"""Synthetic model populations with item difficulty and planted residual correlation."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.stats import norm

__all__ = ["SimulatedPopulation", "simulate_population"]


@dataclass(frozen=True)
class SimulatedPopulation:
    """A simulated correctness matrix and the parameters that generated it.

    Attributes
    ----------
    Y : ndarray, shape (M, I)
        Correctness ``Y_mi = 1[z_mi > 0]``.
    theta : ndarray, shape (M,)
        Abilities ``theta_m``.
    b : ndarray, shape (I,)
        Difficulties ``b_i``.
    sigma : ndarray, shape (M, M)
        Correlation matrix ``Sigma`` of the latent noises over models.
    prob : ndarray, shape (M, I)
        Marginal success probabilities ``Phi(theta_m - b_i)``.
    """

    Y: np.ndarray
    theta: np.ndarray
    b: np.ndarray
    sigma: np.ndarray
    prob: np.ndarray


def simulate_population(
    *,
    num_models: int,
    num_items: int,
    difficulty_sd: float = 1.5,
    ability_sd: float = 1.0,
    ability_mean: float = 1.0,
    corr_blocks: tuple = (),
    sigma=None,
    seed: int = 0,
) -> SimulatedPopulation:
    """Draw a latent-Gaussian (probit 1PL) population with planted residual correlation.

    ``z_mi = theta_m - b_i + eps_mi`` with ``eps_{., i} ~ N(0, Sigma)`` independently over
    items and ``Y_mi = 1[z_mi > 0]``. With ``Sigma = I`` the models are independent given
    the item (a 1PL null holds, up to the probit link); off-diagonal entries of ``Sigma``
    are true monoculture.

    Parameters
    ----------
    num_models, num_items : int
        ``M`` and ``I``.
    difficulty_sd, ability_sd : float
        Standard deviations of ``b_i ~ N(0, difficulty_sd^2)`` and
        ``theta_m ~ N(ability_mean, ability_sd^2)``.
    ability_mean : float
        Mean ability (1.0 gives accuracies around 0.7).
    corr_blocks : tuple of (tuple of int, float)
        Planted blocks: every pair of models in a block gets correlation ``rho``.
    sigma : array_like, shape (M, M), optional
        A full correlation matrix; overrides ``corr_blocks``.
    seed : int
        Seed of ``numpy.random.default_rng``.

    Returns
    -------
    SimulatedPopulation

    Examples
    --------
    >>> pop = simulate_population(num_models=6, num_items=100, corr_blocks=(((0, 1), 0.5),))
    >>> pop.Y.shape, float(pop.sigma[0, 1])
    ((6, 100), 0.5)
    """
    M, I = int(num_models), int(num_items)
    if M < 2 or I < 2:
        raise ValueError(f"need num_models >= 2 and num_items >= 2, got {M} and {I}")
    if difficulty_sd < 0 or ability_sd < 0:
        raise ValueError("difficulty_sd and ability_sd must be >= 0")
    if sigma is None:
        sig = np.eye(M)
        for block in corr_blocks:
            idx, rho = block
            idx = np.asarray(idx, dtype=int)
            if idx.min() < 0 or idx.max() >= M:
                raise ValueError(f"corr_blocks index out of range 0..{M - 1}: {idx.tolist()}")
            if not -1 < rho < 1:
                raise ValueError(f"block correlation must be in (-1, 1), got {rho}")
            sig[np.ix_(idx, idx)] = rho
            sig[idx, idx] = 1.0
    else:
        sig = np.asarray(sigma, dtype=float)
        if sig.shape != (M, M):
            raise ValueError(f"sigma must have shape {(M, M)}, got {sig.shape}")
    evals = np.linalg.eigvalsh(sig)
    if evals.min() < -1e-10:
        raise ValueError(
            f"Sigma is not positive semi-definite (smallest eigenvalue {evals[0]:.3g})"
        )
    rng = np.random.default_rng(seed)
    theta = ability_mean + ability_sd * rng.standard_normal(M)  # (M,)
    b = difficulty_sd * rng.standard_normal(I)  # (I,)
    L = np.linalg.cholesky(sig + 1e-12 * np.eye(M))
    eps = L @ rng.standard_normal((M, I))  # (M, I), columns ~ N(0, Sigma)
    z = theta[:, None] - b[None, :] + eps
    Y = (z > 0).astype(float)
    prob = norm.cdf(theta[:, None] - b[None, :])
    return SimulatedPopulation(Y=Y, theta=theta, b=b, sigma=sig, prob=prob)
