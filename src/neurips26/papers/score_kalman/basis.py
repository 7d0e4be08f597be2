"""Monomial bases, moment dictionaries and exactly known moments.

A belief of the Score Kalman Filter is an exponential family
``p_theta(x) ∝ exp(theta . T(x))`` whose sufficient statistics ``T`` are monomials
``x^alpha`` without the constant. Moments ``E[x^alpha]`` are plain dicts keyed by the
exponent tuple ``alpha`` (the constant ``(0, ..., 0)`` maps to 1).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from neurips26.common.validation import check_array, check_int, check_size

__all__ = [
    "Exponent",
    "Moments",
    "MonomialBasis",
    "full_basis",
    "gaussian_moments",
    "monomials_up_to",
    "oscillator_basis",
    "sample_moments",
]

Exponent = tuple[int, ...]
Moments = dict[Exponent, float]


#: Largest number of exponents :func:`monomials_up_to` lists.
MAX_MONOMIALS = 10**7


def monomials_up_to(dim: int, degree: int, *, min_degree: int = 0) -> list[Exponent]:
    """All exponent tuples of ``dim`` variables with ``min_degree <= |alpha| <= degree``.

    Sorted by degree, then lexicographically (largest first).

    Refuses (``ValueError``) bases of more than ``MAX_MONOMIALS`` exponents: the count is
    ``C(dim + degree, degree)``, which grows too fast to list past that.

    Examples
    --------
    >>> monomials_up_to(2, 2, min_degree=1)
    [(1, 0), (0, 1), (2, 0), (1, 1), (0, 2)]
    """
    dim = check_int(dim, "dim", min=1)
    degree = check_int(degree, "degree", min=0)
    min_degree = check_int(min_degree, "min_degree", min=0)
    driver = "dim" if dim > degree else "degree"  # the argument that makes the basis large
    if degree + 1 > MAX_MONOMIALS or (degree >= 1 and dim > MAX_MONOMIALS):
        count = float(max(degree + 1, dim))  # a lower bound; math.comb would not finish
    else:
        count = math.comb(dim + degree, degree)
    check_size(count, driver, limit=MAX_MONOMIALS,
               what=f"monomials in {dim} variables up to degree {degree}")
    out: list[Exponent] = []
    for d in range(min_degree, degree + 1):
        combos = itertools.combinations_with_replacement(range(dim), d)
        level = set()
        for c in combos:
            a = [0] * dim
            for i in c:
                a[i] += 1
            level.add(tuple(a))
        out.extend(sorted(level, reverse=True))
    return out


@dataclass(frozen=True)
class MonomialBasis:
    """Sufficient statistics ``T(x) = (x^alpha_1, ..., x^alpha_M)`` of the belief.

    Parameters
    ----------
    exponents : sequence of tuple of int
        The ``M`` exponents ``alpha_m``, each of length ``n``; no constant, no duplicates.

    Examples
    --------
    >>> b = MonomialBasis([(1, 0), (0, 1), (2, 0), (1, 1), (0, 2)])
    >>> b.dim, b.size, b.degree
    (2, 5, 2)
    """

    exponents: tuple[Exponent, ...]

    def __post_init__(self) -> None:
        exps = tuple(tuple(int(v) for v in a) for a in self.exponents)
        if not exps:
            raise ValueError("a MonomialBasis needs at least one exponent")
        n = len(exps[0])
        if n == 0:
            raise ValueError("exponents must have length >= 1 (the state dimension)")
        for a in exps:
            if len(a) != n:
                raise ValueError(f"exponent {a} has length {len(a)}, expected {n}")
            if min(a) < 0:
                raise ValueError(f"exponent {a} has a negative entry")
            if sum(a) == 0:
                raise ValueError("the constant monomial is not allowed in the basis")
        if len(set(exps)) != len(exps):
            raise ValueError("the basis has duplicate exponents")
        object.__setattr__(self, "exponents", exps)

    @property
    def dim(self) -> int:
        """State dimension ``n``."""
        return len(self.exponents[0])

    @property
    def size(self) -> int:
        """Number of statistics ``M``."""
        return len(self.exponents)

    @property
    def degree(self) -> int:
        """Top total degree of the basis."""
        return max(sum(a) for a in self.exponents)

    def index(self, alpha: Exponent) -> int:
        """Position of ``alpha`` in the basis (ValueError if absent)."""
        try:
            return self.exponents.index(tuple(alpha))
        except ValueError:
            raise ValueError(f"monomial {tuple(alpha)} is not in the basis") from None

    def evaluate(self, x: np.ndarray) -> np.ndarray:
        """``T(x)`` for points ``x`` of shape (N, n); returns (N, M)."""
        x = np.atleast_2d(np.asarray(x, dtype=float))
        e = np.asarray(self.exponents)  # (M, n)
        return np.prod(x[:, None, :] ** e[None, :, :], axis=2)  # (N, M)

    def check_normalisable(self) -> None:
        """Raise ValueError unless every coordinate has a pure even power of top degree.

        ``exp(theta . T)`` can only be integrable when the top-degree form can be
        negative definite, which needs ``x_i^D`` in the basis for every ``i`` with
        ``D`` even.
        """
        d = self.degree
        if d % 2:
            raise ValueError(
                f"basis top degree {d} is odd: exp(theta . T) is not normalisable; "
                "use an even leading degree"
            )
        for i in range(self.dim):
            pure = tuple(d if j == i else 0 for j in range(self.dim))
            if pure not in self.exponents:
                raise ValueError(
                    f"coordinate {i} lacks the leading even power {pure} in the basis, "
                    "so exp(theta . T) is not normalisable"
                )


def full_basis(n: int, degree: int = 4) -> MonomialBasis:
    """All monomials of ``n`` variables with degree 1..``degree``.

    Examples
    --------
    >>> full_basis(2, 4).size
    14
    """
    if n < 1 or degree < 1:
        raise ValueError(f"need n >= 1 and degree >= 1, got n={n}, degree={degree}")
    return MonomialBasis(monomials_up_to(n, degree, min_degree=1))


def oscillator_basis(n: int, *, node_degree: int = 4, cross: bool = True) -> MonomialBasis:
    """Per-oscillator full basis in each pair ``(x_{2k}, x_{2k+1})`` plus quadratic cross terms.

    Parameters
    ----------
    n : int
        Even state dimension (``n / 2`` oscillators with state ``(q_k, p_k)``).
    node_degree : int
        Degree of the per-pair full basis (4 in the paper's setting).
    cross : bool
        Add every product ``x_a x_b`` of coordinates of different oscillators.

    Examples
    --------
    >>> oscillator_basis(4).size  # 2 * 14 + 4 cross terms
    32
    """
    if n < 2 or n % 2:
        raise ValueError(f"oscillator_basis needs an even n >= 2, got {n}")
    out: list[Exponent] = []
    for k in range(n // 2):
        for a in monomials_up_to(2, node_degree, min_degree=1):
            e = [0] * n
            e[2 * k], e[2 * k + 1] = a
            out.append(tuple(e))
    if cross:
        for i in range(n):
            for j in range(i + 1, n):
                if i // 2 != j // 2:
                    e = [0] * n
                    e[i] += 1
                    e[j] += 1
                    out.append(tuple(e))
    return MonomialBasis(out)


def gaussian_moments(
    mean: np.ndarray, cov: np.ndarray, exponents: Iterable[Exponent]
) -> Moments:
    """Exact moments ``E[x^alpha]`` of ``N(mean, cov)``.

    Uses Stein's identity for the Gaussian,
    ``E[x^{a+e_i}] = mu_i E[x^a] + sum_j Sigma_ij a_j E[x^{a-e_j}]``.

    Examples
    --------
    >>> gaussian_moments([1.0], [[2.0]], [(2,)])[(2,)]
    3.0

    Refuses non-finite ``mean`` or ``cov``, a ``cov`` that is not symmetric positive
    semi-definite (a negative variance), and exponents that are not tuples of ``n``
    integers ``>= 0``.
    """
    mu = check_array(mean, "mean", ndim=(0, 1, 2)).ravel()
    sig = np.atleast_2d(check_array(cov, "cov", ndim=(0, 1, 2)))
    n = mu.size
    if sig.shape != (n, n):
        raise ValueError(
            f"cov has shape {sig.shape}, expected {(n, n)} to match mean of length {n}"
        )
    scale = max(1.0, float(np.abs(sig).max()))
    if not np.allclose(sig, sig.T, atol=1e-12 * scale):
        raise ValueError("cov must be symmetric")
    if np.linalg.eigvalsh(sig).min() < -1e-12 * scale:
        raise ValueError(
            f"cov must be positive semi-definite, got an eigenvalue of "
            f"{float(np.linalg.eigvalsh(sig).min()):g} (a negative variance)"
        )
    cache: dict[Exponent, float] = {(0,) * n: 1.0}

    def mom(a: Exponent) -> float:
        if a in cache:
            return cache[a]
        i = next(k for k in range(n) if a[k] > 0)
        b = list(a)
        b[i] -= 1
        b = tuple(b)
        val = mu[i] * mom(b)
        for j in range(n):
            if b[j] > 0 and sig[i, j] != 0.0:
                c = list(b)
                c[j] -= 1
                val += sig[i, j] * b[j] * mom(tuple(c))
        cache[a] = float(val)
        return cache[a]

    if isinstance(exponents, (str, bytes)) or not isinstance(exponents, Iterable):
        raise TypeError(
            f"exponents must be an iterable of tuples of {n} integers, got "
            f"{type(exponents).__name__}"
        )
    out = {}
    for a in exponents:
        a = _as_exponent(a, n, "exponents")
        out[a] = mom(a)
    return out


def _as_exponent(a, n: int, name: str) -> Exponent:
    try:
        vals = tuple(a)
    except TypeError:
        raise TypeError(f"{name} must hold tuples of {n} integers, got {a!r}") from None
    out = tuple(check_int(v, f"{name} entry {vals}", min=0) for v in vals)
    if len(out) != n:
        raise ValueError(f"{name}: exponent {out} has length {len(out)}, expected {n}")
    return out


def sample_moments(
    x: np.ndarray, exponents: Iterable[Exponent], weights: np.ndarray | None = None
) -> Moments:
    """Empirical moments of samples ``x`` (N, n), optionally weighted (weights sum to 1)."""
    x = np.atleast_2d(np.asarray(x, dtype=float))
    w = np.full(x.shape[0], 1.0 / x.shape[0]) if weights is None else np.asarray(weights)
    out = {}
    for a in exponents:
        a = tuple(int(v) for v in a)
        out[a] = float(w @ np.prod(x ** np.asarray(a)[None, :], axis=1))
    return out


def _as_exponents(exponents: Sequence) -> list[Exponent]:
    return [tuple(int(v) for v in a) for a in exponents]


def _check_moments(moments: Mapping, needed: Sequence[Exponent], what: str) -> np.ndarray:
    """Vector of ``moments[a]`` for ``a`` in ``needed``; ValueError naming a missing one."""
    if not isinstance(moments, Mapping):
        raise TypeError(f"moments must be a dict keyed by exponent tuples, got {type(moments)}")
    out = np.empty(len(needed))
    for k, a in enumerate(needed):
        if sum(a) == 0:
            out[k] = 1.0
            continue
        if a not in moments:
            raise ValueError(f"moments lack the entry {a}, which {what} needs")
        v = float(moments[a])
        if not np.isfinite(v):
            raise ValueError(f"moment {a} is not finite ({v})")
        out[k] = v
    return out
