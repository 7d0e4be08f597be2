"""2-D mixtures with known densities: where the discriminator's logit can be checked exactly."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.special import logsumexp

from neurips26.common.validation import check_array, check_float, check_int, check_rng


@dataclass(frozen=True)
class GaussianMixture:
    """An equal-weight mixture of isotropic Gaussians with an exact log-density.

    Attributes
    ----------
    means : ndarray (K, D)
    std : float

    Examples
    --------
    >>> mix = eight_gaussians()
    >>> mix.sample(5, np.random.default_rng(0)).shape
    (5, 2)
    >>> bool(np.isfinite(mix.log_prob(np.zeros((1, 2)))).all())
    True
    """

    means: np.ndarray
    std: float

    def __post_init__(self) -> None:
        means = check_array(self.means, "means", ndim=2)
        object.__setattr__(self, "means", means)
        check_float(self.std, "std", min=0, min_inclusive=False, max=1e6)

    def sample(self, num_samples: int, rng: np.random.Generator) -> np.ndarray:
        """``num_samples`` points (N, D)."""
        n = check_int(num_samples, "num_samples", min=1, max=10**8)
        rng = check_rng(rng)
        k = rng.integers(len(self.means), size=n)
        return self.means[k] + self.std * rng.standard_normal((n, self.means.shape[1]))

    def log_prob(self, x) -> np.ndarray:
        """Exact ``log p(x)`` (N,) of points (N, D)."""
        x = check_array(x, "x", ndim=2)
        if x.shape[1] != self.means.shape[1]:
            raise ValueError(f"x: expected {self.means.shape[1]} columns, got {x.shape[1]}")
        d = x.shape[1]
        sq = ((x[:, None, :] - self.means[None]) ** 2).sum(-1)  # (N, K)
        log_comp = -0.5 * sq / self.std**2 - d * np.log(self.std) - 0.5 * d * np.log(2 * np.pi)
        return logsumexp(log_comp, axis=1) - np.log(len(self.means))


def eight_gaussians(*, radius: float = 2.0, std: float = 0.3) -> GaussianMixture:
    """Eight Gaussians evenly spaced on a circle of ``radius`` (a standard 2-D benchmark)."""
    radius = check_float(radius, "radius", min=0, min_inclusive=False, max=1e6)
    ang = 2 * np.pi * np.arange(8) / 8
    return GaussianMixture(radius * np.stack([np.cos(ang), np.sin(ang)], 1), std)


def two_moons(num_samples: int, *, noise: float = 0.1, rng: np.random.Generator) -> np.ndarray:
    """Two interleaved half circles (scikit-learn's ``make_moons``), centred, (N, 2).

    Examples
    --------
    >>> two_moons(6, rng=np.random.default_rng(0)).shape
    (6, 2)
    """
    from sklearn.datasets import make_moons

    n = check_int(num_samples, "num_samples", min=2, max=10**8)
    noise = check_float(noise, "noise", min=0, max=10.0)
    rng = check_rng(rng)
    x, _ = make_moons(n, noise=noise, random_state=int(rng.integers(2**31 - 1)))
    return (x - [0.5, 0.25]) * 1.5
