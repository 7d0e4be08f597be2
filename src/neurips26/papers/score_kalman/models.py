"""Polynomial state-space models, a quartic product prior and the coupled-Duffing benchmark.

Polynomials are dicts ``{exponent tuple: coefficient}``. :class:`PolySDE` is
``dx = f(x) dt + G dW`` with polynomial drift ``f``; :class:`PolyMap` is
``x' = F(x) + w``, ``w ~ N(0, Q)``. Both expose the moment maps the Score Kalman
Filter needs (:meth:`PolySDE.generator`, :meth:`PolyMap.pushforward`) and the
discretised transition the sampling and linearising baselines share
(:meth:`transition_mean`, :meth:`transition_jacobian`, :meth:`transition_noise_cov`,
:meth:`sample_transition`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import networkx as nx
import numpy as np

from .basis import Exponent, gaussian_moments

__all__ = [
    "Benchmark",
    "PolyMap",
    "PolySDE",
    "ProductQuarticBelief",
    "coupled_duffing",
    "linear_gaussian",
]

Poly = dict[Exponent, float]


def _poly_mul(p: Mapping, q: Mapping) -> Poly:
    out: Poly = {}
    for a, ca in p.items():
        for b, cb in q.items():
            e = tuple(x + y for x, y in zip(a, b, strict=True))
            out[e] = out.get(e, 0.0) + ca * cb
    return out


def _poly_eval(p: Mapping, x: np.ndarray) -> np.ndarray:
    """Evaluate polynomial ``p`` at points ``x`` (N, n) -> (N,)."""
    out = np.zeros(x.shape[0])
    powers: dict[tuple[int, int], np.ndarray] = {}  # (coordinate, exponent) -> x_i^k, shared
    for a, c in p.items():
        term = np.full(x.shape[0], float(c))
        for i, k in enumerate(a):
            if k:  # only the coordinates the monomial uses (x^0 = 1 is skipped)
                key = (i, k)
                if key not in powers:
                    powers[key] = x[:, i] ** k
                term *= powers[key]
        out += term
    return out


def _poly_diff(p: Mapping, i: int) -> Poly:
    out: Poly = {}
    for a, c in p.items():
        if a[i] > 0:
            e = list(a)
            e[i] -= 1
            out[tuple(e)] = out.get(tuple(e), 0.0) + c * a[i]
    return out


def _check_polys(polys: Sequence[Mapping], what: str) -> tuple:
    if len(polys) == 0:
        raise ValueError(f"{what} needs at least one polynomial")
    n = len(polys)
    out = []
    for k, p in enumerate(polys):
        if not isinstance(p, Mapping):
            raise TypeError(f"{what}[{k}] must be a dict {{exponent: coef}}, got {type(p)}")
        terms = []
        for a, c in p.items():
            a = tuple(int(v) for v in a)
            if len(a) != n or min(a) < 0:
                raise ValueError(f"{what}[{k}] has exponent {a}; expected {n} entries >= 0")
            if not np.isfinite(c):
                raise ValueError(f"{what}[{k}] has a non-finite coefficient for {a}")
            terms.append((a, float(c)))
        out.append(tuple(terms))
    return tuple(out)


@dataclass(frozen=True)
class PolySDE:
    """``dx = f(x) dt + G dW`` with polynomial drift.

    Parameters
    ----------
    drift : sequence of dict
        ``f_i`` as ``{exponent: coefficient}``, one per coordinate (``n`` of them).
    diffusion : array, shape (n, r)
        Constant diffusion matrix ``G``.
    """

    drift: tuple
    diffusion: np.ndarray = field(repr=False)

    def __post_init__(self) -> None:
        drift = _check_polys(self.drift, "drift")
        g = np.atleast_2d(np.asarray(self.diffusion, dtype=float))
        if g.shape[0] != len(drift):
            raise ValueError(f"diffusion has {g.shape[0]} rows, drift has {len(drift)} entries")
        if not np.all(np.isfinite(g)):
            raise ValueError("diffusion has non-finite entries")
        object.__setattr__(self, "drift", drift)
        object.__setattr__(self, "diffusion", g)

    @property
    def dim(self) -> int:
        return len(self.drift)

    def _polys(self) -> list[Poly]:
        return [dict(p) for p in self.drift]

    def f(self, x: np.ndarray) -> np.ndarray:
        """Drift at points ``x`` (N, n) -> (N, n)."""
        x = np.atleast_2d(x)
        return np.stack([_poly_eval(p, x) for p in self._polys()], axis=1)

    def jacobian(self, x: np.ndarray) -> np.ndarray:
        """Drift Jacobian at one point ``x`` (n,) -> (n, n)."""
        x = np.asarray(x, dtype=float)[None, :]
        polys = self._polys()
        return np.array(
            [[_poly_eval(_poly_diff(p, j), x)[0] for j in range(self.dim)] for p in polys]
        )

    def generator(self, alpha: Exponent) -> Poly:
        """``L x^alpha = grad x^alpha . f + 1/2 tr(G G^T hess x^alpha)`` as a polynomial."""
        n = self.dim
        gg = self.diffusion @ self.diffusion.T
        out: Poly = {}
        polys = self._polys()
        for i in range(n):
            if alpha[i] == 0:
                continue
            d = list(alpha)
            d[i] -= 1
            for e, c in _poly_mul({tuple(d): float(alpha[i])}, polys[i]).items():
                out[e] = out.get(e, 0.0) + c
        for i in range(n):
            for j in range(n):
                if gg[i, j] == 0.0:
                    continue
                a = list(alpha)
                coef = a[i]
                a[i] -= 1
                if coef == 0 or a[j] == 0:
                    continue
                coef *= a[j]
                a[j] -= 1
                e = tuple(a)
                out[e] = out.get(e, 0.0) + 0.5 * gg[i, j] * coef
        return {e: c for e, c in out.items() if c != 0.0}

    @classmethod
    def from_function(
        cls,
        drift,
        diffusion: np.ndarray,
        *,
        degree: int = 3,
        center=0.0,
        scale=1.0,
        num_points: int | None = None,
        seed: int = 0,
    ) -> PolySDE:
        """Project a drift function onto polynomials of total degree ``<= degree``.

        The Score Kalman Filter's moment equations need a polynomial drift; a callable
        ``f`` is replaced by its least-squares fit over ``num_points`` points drawn
        from ``N(center, diag(scale^2))`` (fixed ``seed``: the region the belief is
        expected to visit). A polynomial drift of degree ``<= degree`` is recovered
        exactly; otherwise the fit is a local approximation, accurate where the
        points lie.

        Parameters
        ----------
        drift : callable
            ``f(x)`` for points ``x`` of shape (N, n), returning (N, n).
        diffusion : array, shape (n, r)
            Constant diffusion matrix ``G``.
        degree : int
            Largest total degree of the fitted drift.
        center, scale : float or array of shape (n,)
            Mean and standard deviation of the fitting points per coordinate.
        num_points : int, optional
            Fitting points (default ``max(200, 20 * number of monomials)``).
        seed : int
            Seed of the fitting points.

        Examples
        --------
        >>> import numpy as np
        >>> sde = PolySDE.from_function(lambda x: x - x**3, np.array([[0.5]]), degree=3)
        >>> {a: round(c, 8) for a, c in sde.drift[0] if abs(c) > 1e-9}
        {(1,): 1.0, (3,): -1.0}
        """
        from neurips26.common.validation import check_int

        from .basis import monomials_up_to

        if not callable(drift):
            raise TypeError(f"drift must be callable, got {type(drift).__name__}")
        g = np.atleast_2d(np.asarray(diffusion, dtype=float))
        n = g.shape[0]
        degree = check_int(degree, "degree", min=1, max=12)
        mu = np.broadcast_to(np.asarray(center, dtype=float), (n,))
        sd = np.broadcast_to(np.asarray(scale, dtype=float), (n,))
        if not (np.all(np.isfinite(mu)) and np.all(np.isfinite(sd)) and np.all(sd > 0)):
            raise ValueError("center must be finite and scale finite and > 0")
        exps = monomials_up_to(n, degree)
        size = max(200, 20 * len(exps)) if num_points is None else check_int(
            num_points, "num_points", min=len(exps))
        x = mu + sd * np.random.default_rng(seed).standard_normal((size, n))  # (N, n)
        fx = np.asarray(drift(x), dtype=float)
        if fx.shape != (size, n):
            raise ValueError(f"drift returned shape {fx.shape} for x of shape {x.shape}; "
                             f"expected {(size, n)}")
        if not np.all(np.isfinite(fx)):
            raise ValueError("drift returned non-finite values on the fitting points")
        # least squares in standardised coordinates (well conditioned), mapped back exactly
        z = (x - mu) / sd
        V = np.stack([np.prod(z ** np.asarray(a)[None, :], axis=1) for a in exps], axis=1)
        coef_z, *_ = np.linalg.lstsq(V, fx, rcond=None)  # (num monomials, n)
        from .stein_moments import compose_affine

        polys = []
        for i in range(n):
            pz = {a: float(c) for a, c in zip(exps, coef_z[:, i], strict=True)}
            px = compose_affine(pz, -mu / sd, 1.0 / sd)  # z = (x - mu) / sd
            polys.append({a: c for a, c in px.items() if abs(c) > 1e-13 * max(1.0, abs(c))})
        return cls(polys, g)

    def transition_mean(self, x: np.ndarray, dt: float, num_substeps: int) -> np.ndarray:
        """Euler composition of the drift over ``dt`` for points ``x`` (N, n)."""
        x = np.atleast_2d(np.asarray(x, dtype=float)).copy()
        h = dt / num_substeps
        for _ in range(num_substeps):
            x = x + h * self.f(x)
        return x

    def transition_jacobian(self, x: np.ndarray, dt: float, num_substeps: int) -> np.ndarray:
        """Jacobian of :meth:`transition_mean` at one point ``x`` (n,) -> (n, n)."""
        x = np.asarray(x, dtype=float).copy()
        h = dt / num_substeps
        jac = np.eye(self.dim)
        for _ in range(num_substeps):
            jac = (np.eye(self.dim) + h * self.jacobian(x)) @ jac
            x = x + h * self.f(x[None, :])[0]
        return jac

    def transition_noise_cov(self, dt: float) -> np.ndarray:
        """Additive noise covariance ``G G^T dt`` of the discretised model."""
        return self.diffusion @ self.diffusion.T * dt

    def sample_transition(
        self, x: np.ndarray, dt: float, num_substeps: int, rng: np.random.Generator
    ) -> np.ndarray:
        """Euler-Maruyama over ``dt`` with ``num_substeps`` steps for points ``x`` (N, n)."""
        x = np.atleast_2d(np.asarray(x, dtype=float)).copy()
        h = dt / num_substeps
        for _ in range(num_substeps):
            dw = rng.standard_normal((x.shape[0], self.diffusion.shape[1])) * np.sqrt(h)
            x = x + h * self.f(x) + dw @ self.diffusion.T
        return x


@dataclass(frozen=True)
class PolyMap:
    """``x' = F(x) + w`` with polynomial ``F`` and ``w ~ N(0, Q)``.

    Parameters
    ----------
    mapping : sequence of dict
        ``F_i`` as ``{exponent: coefficient}``, one per coordinate.
    noise_cov : array, shape (n, n)
        ``Q``.
    """

    mapping: tuple
    noise_cov: np.ndarray = field(repr=False)

    def __post_init__(self) -> None:
        mapping = _check_polys(self.mapping, "mapping")
        q = np.atleast_2d(np.asarray(self.noise_cov, dtype=float))
        if q.shape != (len(mapping), len(mapping)):
            raise ValueError(f"noise_cov has shape {q.shape}, expected {(len(mapping),) * 2}")
        if not np.allclose(q, q.T):
            raise ValueError("noise_cov must be symmetric")
        object.__setattr__(self, "mapping", mapping)
        object.__setattr__(self, "noise_cov", q)

    @property
    def dim(self) -> int:
        return len(self.mapping)

    def _polys(self) -> list[Poly]:
        return [dict(p) for p in self.mapping]

    def F(self, x: np.ndarray) -> np.ndarray:
        x = np.atleast_2d(x)
        return np.stack([_poly_eval(p, x) for p in self._polys()], axis=1)

    def pushforward(self, alpha: Exponent) -> Poly:
        """``E_w[(F(x) + w)^alpha]`` as a polynomial in ``x`` (Gaussian moments of ``w``)."""
        n = self.dim
        # polynomials in (x, w): 2n variables
        polys = []
        for i, p in enumerate(self._polys()):
            q = {tuple(a) + (0,) * n: c for a, c in p.items()}
            w = [0] * (2 * n)
            w[n + i] = 1
            q[tuple(w)] = q.get(tuple(w), 0.0) + 1.0
            polys.append(q)
        prod: Poly = {(0,) * (2 * n): 1.0}
        for i in range(n):
            for _ in range(alpha[i]):
                prod = _poly_mul(prod, polys[i])
        wm = gaussian_moments(np.zeros(n), self.noise_cov, {e[n:] for e in prod})
        out: Poly = {}
        for e, c in prod.items():
            v = c * wm[e[n:]]
            if v != 0.0:
                out[e[:n]] = out.get(e[:n], 0.0) + v
        return out

    def transition_mean(self, x: np.ndarray, dt: float, num_substeps: int) -> np.ndarray:
        return self.F(x)

    def transition_jacobian(self, x: np.ndarray, dt: float, num_substeps: int) -> np.ndarray:
        x = np.asarray(x, dtype=float)[None, :]
        return np.array(
            [[_poly_eval(_poly_diff(p, j), x)[0] for j in range(self.dim)] for p in self._polys()]
        )

    def transition_noise_cov(self, dt: float) -> np.ndarray:
        return self.noise_cov

    def sample_transition(
        self, x: np.ndarray, dt: float, num_substeps: int, rng: np.random.Generator
    ) -> np.ndarray:
        x = np.atleast_2d(x)
        chol = np.linalg.cholesky(self.noise_cov + 1e-300 * np.eye(self.dim))
        return self.F(x) + rng.standard_normal(x.shape) @ chol.T


def linear_gaussian(F: np.ndarray, Q: np.ndarray) -> PolyMap:
    """The linear map ``x' = F x + w`` as a :class:`PolyMap`."""
    F = np.atleast_2d(np.asarray(F, dtype=float))
    n = F.shape[0]
    polys = []
    for i in range(n):
        polys.append({tuple(int(k == j) for k in range(n)): F[i, j] for j in range(n)})
    return PolyMap(polys, Q)


@dataclass(frozen=True)
class ProductQuarticBelief:
    """Product prior ``p(x) ∝ prod_i exp(c1_i x_i + c2_i x_i^2 + c4_i x_i^4)``.

    Bimodal in coordinate ``i`` when ``c2_i > 0`` (a double well). Moments and
    samples come from a fine 1-D grid per coordinate (the reference truth, not part
    of the filter).

    Parameters
    ----------
    coefs : array, shape (n, 3)
        ``(c1, c2, c4)`` per coordinate with ``c4 < 0`` (or ``c4 == 0`` and ``c2 < 0``).
    """

    coefs: np.ndarray = field(repr=False)

    def __post_init__(self) -> None:
        c = np.atleast_2d(np.asarray(self.coefs, dtype=float))
        if c.ndim != 2 or c.shape[1] != 3:
            raise ValueError(f"coefs must have shape (n, 3), got {c.shape}")
        ok = (c[:, 2] < 0) | ((c[:, 2] == 0) & (c[:, 1] < 0))
        if not np.all(ok):
            raise ValueError("each coordinate needs c4 < 0 (or c4 = 0 and c2 < 0)")
        object.__setattr__(self, "coefs", c)

    @property
    def dim(self) -> int:
        return self.coefs.shape[0]

    def _grid(self, i: int) -> tuple[np.ndarray, np.ndarray]:
        c1, c2, c4 = self.coefs[i]
        scale = (abs(c4) ** -0.25) if c4 < 0 else (abs(c2) ** -0.5)
        shift = 0.0 if c4 < 0 else -c1 / (2 * c2)
        half = 8 * scale + (abs(c2) / abs(c4)) ** 0.5 * 2 if c4 < 0 else 10 * scale
        x = np.linspace(shift - half - 3.0, shift + half + 3.0, 20001)
        logp = c1 * x + c2 * x**2 + c4 * x**4
        w = np.exp(logp - logp.max())
        w /= w.sum()
        return x, w

    def moments(self, exponents) -> dict:
        """Moments ``E[x^alpha]`` (products of 1-D grid moments)."""
        cache = {}
        out = {}
        for a in exponents:
            a = tuple(int(v) for v in a)
            val = 1.0
            for i, k in enumerate(a):
                if k == 0:
                    continue
                if (i, k) not in cache:
                    x, w = self._grid(i)
                    cache[(i, k)] = float(w @ x**k)
                val *= cache[(i, k)]
            out[a] = val
        return out

    @property
    def mean(self) -> np.ndarray:
        n = self.dim
        m = self.moments([tuple(int(j == i) for j in range(n)) for i in range(n)])
        return np.array(list(m.values()))

    @property
    def cov(self) -> np.ndarray:
        n = self.dim
        m2 = self.moments([tuple(2 * int(j == i) for j in range(n)) for i in range(n)])
        return np.diag(np.array(list(m2.values())) - self.mean**2)

    def sample(self, size: int, rng: np.random.Generator) -> np.ndarray:
        """Draw ``size`` points, shape (size, n), by inverse CDF on the grid."""
        out = np.empty((size, self.dim))
        for i in range(self.dim):
            x, w = self._grid(i)
            cdf = np.cumsum(w)
            out[:, i] = np.interp(rng.random(size), cdf, x)
        return out


@dataclass(frozen=True)
class Benchmark:
    """A filtering benchmark: model, observation model, prior and a simulator."""

    model: PolySDE
    H: np.ndarray = field(repr=False)
    R: np.ndarray = field(repr=False)
    dt: float
    prior: ProductQuarticBelief = field(repr=False)
    num_truth_substeps: int = 20

    def simulate(self, num_steps: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
        """Truth ``xs`` (T, n) by Euler-Maruyama and observations ``ys`` (T, m)."""
        x = self.prior.sample(1, rng)
        xs, ys = [], []
        chol = np.linalg.cholesky(self.R)
        for _ in range(num_steps):
            x = self.model.sample_transition(x, self.dt, self.num_truth_substeps, rng)
            xs.append(x[0])
            ys.append(self.H @ x[0] + chol @ rng.standard_normal(self.R.shape[0]))
        return np.array(xs), np.array(ys)


def coupled_duffing(
    *,
    num_nodes: int,
    graph: str = "ring",
    coupling: float = 0.5,
    sigma: float = 0.1,
    obs_noise: float = 0.1,
    damping: float = 0.3,
    stiffness: float = -1.0,
    hardening: float = 1.0,
    dt: float = 0.1,
    seed: int = 0,
) -> Benchmark:
    """Network of Duffing oscillators with position observations.

    ``dq_i = p_i dt``,
    ``dp_i = (-delta p_i - a q_i - b q_i^3 + k sum_j A_ij (q_j - q_i)) dt + sigma dW_i``;
    the state is ordered ``(q_1, p_1, q_2, p_2, ...)`` (so ``n = 2 * num_nodes``),
    observations ``y = (q_1, ..., q_N) + v``, ``v ~ N(0, obs_noise^2 I)`` every ``dt``.
    With ``stiffness = a < 0`` each oscillator is a double well; the prior is bimodal
    in each position (wells at ``±1``) and Gaussian-like in each momentum.

    Parameters
    ----------
    num_nodes : int
        Number of oscillators ``N``.
    graph : {"ring", "random_regular"}
        Coupling graph ``A`` (networkx ``cycle_graph`` or 3-regular random graph).
    coupling, sigma, obs_noise, damping, stiffness, hardening, dt : float
        ``k``, ``sigma``, ``r``, ``delta``, ``a``, ``b`` and the observation interval.
    seed : int
        Seed of the random graph.

    Examples
    --------
    >>> bench = coupled_duffing(num_nodes=2)
    >>> bench.model.dim, bench.H.shape
    (4, (2, 4))
    """
    if num_nodes < 1:
        raise ValueError(f"num_nodes must be >= 1, got {num_nodes}")
    if sigma <= 0 or obs_noise <= 0 or dt <= 0:
        raise ValueError("sigma, obs_noise and dt must be > 0")
    if graph == "ring":
        g = nx.cycle_graph(num_nodes) if num_nodes > 2 else nx.path_graph(num_nodes)
    elif graph == "random_regular":
        if num_nodes < 4:
            raise ValueError("random_regular needs num_nodes >= 4")
        g = nx.random_regular_graph(3, num_nodes, seed=seed)
    else:
        raise ValueError(f"graph must be 'ring' or 'random_regular', got {graph!r}")
    adj = nx.to_numpy_array(g, nodelist=range(num_nodes))
    n = 2 * num_nodes

    def e(*idx: int) -> Exponent:
        a = [0] * n
        for i in idx:
            a[i] += 1
        return tuple(a)

    drift = []
    for i in range(num_nodes):
        q, p = 2 * i, 2 * i + 1
        drift.append({e(p): 1.0})
        fp = {e(p): -damping, e(q): -stiffness - coupling * adj[i].sum(), e(q, q, q): -hardening}
        for j in range(num_nodes):
            if adj[i, j]:
                fp[e(2 * j)] = fp.get(e(2 * j), 0.0) + coupling * adj[i, j]
        drift.append({a: c for a, c in fp.items() if c != 0.0})
    gmat = np.zeros((n, num_nodes))
    for i in range(num_nodes):
        gmat[2 * i + 1, i] = sigma
    model = PolySDE(drift, gmat)
    H = np.zeros((num_nodes, n))
    for i in range(num_nodes):
        H[i, 2 * i] = 1.0
    R = obs_noise**2 * np.eye(num_nodes)
    coefs = []
    for _ in range(num_nodes):
        coefs.append((0.0, 2.0, -1.0))  # q: double well exp(2 q^2 - q^4), modes at ±1
        coefs.append((0.0, -0.5 / 0.25, -0.05))  # p: near N(0, 0.25) with a light quartic
    return Benchmark(model, H, R, float(dt), ProductQuarticBelief(np.array(coefs)))
