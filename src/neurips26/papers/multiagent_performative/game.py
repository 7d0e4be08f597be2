"""Quadratic multi-agent performative games on networks (an exactly solvable instance).

Agent i deploys ``θ_i ∈ R^d`` and is trained on ``z ~ D_i(θ) = N(μ_i + Σ_j E_ij θ_j, s² I)``
with loss ``l_i(z; θ_i) = (γ_i / 2) ||θ_i||² - β_i θ_iᵀ z``. The loss is γ_i-strongly convex in
θ_i, its gradient is β_i-Lipschitz in z, and D_i is ``ε_ij = ||E_ij||_op``-sensitive to agent j
in Wasserstein-1 (a Gaussian location shift). The best response is affine,
``BR_i(θ) = (β_i / γ_i)(μ_i + Σ_j E_ij θ_j)``, so repeated retraining is ``θ <- b + M θ`` with
``M_ij = (β_i / γ_i) E_ij``; with ``E_ij = ε_ij I`` (aligned blocks) ``M = Γ ⊗ I`` and the
spectral threshold of Γ is exact.

Deviations from the paper
-------------------------
- The quadratic Gaussian location instance and the graph families are ours (the abstract
  gives no experiment); all agents share one dimension d.
- Bounded decision sets are per-agent Euclidean balls of radius B; the constrained best
  response of this isotropic quadratic is the projection of the unconstrained one.
"""

from __future__ import annotations

from dataclasses import dataclass

import networkx as nx
import numpy as np
from scipy.stats import ortho_group

from neurips26.common.validation import check_array, check_float

from .reflexivity import _finite_array, reflexivity_matrix, spectral_radius, spectral_threshold

__all__ = ["GRAPHS", "QuadraticPerformativeGame", "make_game", "project_to_ball"]

#: Graph families of :func:`make_game`.
GRAPHS = ("er", "star_in", "star_out", "dag", "ring")


def project_to_ball(theta, radius: float | None) -> np.ndarray:
    """Project each agent's parameters onto the ball ``||θ_i|| <= radius``.

    Parameters
    ----------
    theta : array_like, shape (n, d)
        Finite numbers (``None``, strings, objects, NaN and inf are refused).
    radius : float or None
        B > 0 (``inf``: no constraint); None means no constraint.

    Returns
    -------
    ndarray, shape (n, d)
    """
    th = check_array(theta, "theta", min_size=0)
    if radius is not None:
        radius = check_float(radius, "radius", min=0, min_inclusive=False, allow_inf=True)
    return _project(th, radius)


def _project(th: np.ndarray, radius: float | None) -> np.ndarray:
    """:func:`project_to_ball` without the input checks (the retraining loop's inner step)."""
    if radius is None:
        return th.copy()
    norms = np.linalg.norm(th, axis=-1, keepdims=True)  # (n, 1)
    scale = np.minimum(1.0, radius / np.maximum(norms, 1e-300))
    return th * scale


@dataclass(frozen=True, eq=False)
class QuadraticPerformativeGame:
    """n performative learners with quadratic losses and Gaussian location feedback.

    Parameters
    ----------
    mu : array_like, shape (n, d)
        Base means μ_i of each agent's data.
    E : array_like, shape (n, n, d, d)
        Feedback blocks: agent j's deployment shifts agent i's data mean by ``E_ij θ_j``.
    beta : array_like, shape (n,)
        β_i > 0, scale of the linear term (the gradient's Lipschitz constant in z).
    gamma : array_like, shape (n,)
        γ_i > 0, strong convexity.
    noise : float
        Standard deviation s > 0 of the data around its mean.
    radius : float or None
        Radius B of each agent's decision ball; None for unconstrained parameters.

    References
    ----------
    Perdomo et al. (2020), Performative prediction, Sec. 3 (repeated risk minimisation).

    Examples
    --------
    >>> import numpy as np
    >>> g = QuadraticPerformativeGame(mu=np.ones((1, 1)), E=np.full((1, 1, 1, 1), 0.5),
    ...                               beta=[1.0], gamma=[1.0])
    >>> g.equilibrium()
    array([[2.]])
    """

    mu: np.ndarray
    E: np.ndarray
    beta: np.ndarray
    gamma: np.ndarray
    noise: float = 1.0
    radius: float | None = None

    def __post_init__(self) -> None:
        mu = _finite_array(self.mu, "mu", 2)
        n, d = mu.shape
        E = _finite_array(self.E, "E", 4)
        if E.shape != (n, n, d, d):
            raise ValueError(
                f"E must have shape (n, n, d, d) = ({n}, {n}, {d}, {d}) to match mu {mu.shape} "
                f"(each agent's parameters live in R^{d}), got {E.shape}"
            )
        beta = _finite_array(self.beta, "beta", 1)
        gamma = _finite_array(self.gamma, "gamma", 1)
        if beta.shape != (n,) or gamma.shape != (n,):
            raise ValueError(
                f"beta and gamma must have shape ({n},), got {beta.shape} and {gamma.shape}"
            )
        if np.any(beta <= 0):
            raise ValueError("beta must be positive (gradient Lipschitz constants in z)")
        if np.any(gamma <= 0):
            raise ValueError("gamma must be positive (strong convexity constants)")
        if not (np.isfinite(self.noise) and self.noise > 0):
            raise ValueError(f"noise (data standard deviation) must be positive, got {self.noise}")
        if self.radius is not None and not (np.isfinite(self.radius) and self.radius > 0):
            raise ValueError(f"radius must be positive or None, got {self.radius}")
        for name, value in (("mu", mu), ("E", E), ("beta", beta), ("gamma", gamma)):
            value.setflags(write=False)
            object.__setattr__(self, name, value)
        object.__setattr__(self, "noise", float(self.noise))
        if self.radius is not None:
            object.__setattr__(self, "radius", float(self.radius))

    # ---- sizes and constants ---------------------------------------------------------
    @property
    def num_agents(self) -> int:
        """n."""
        return self.mu.shape[0]

    @property
    def dim(self) -> int:
        """d, the dimension of each agent's parameters."""
        return self.mu.shape[1]

    def sensitivities(self) -> np.ndarray:
        """``ε_ij = ||E_ij||_op`` (the W1 sensitivity of a Gaussian location shift), (n, n)."""
        return np.linalg.norm(self.E, ord=2, axis=(2, 3))

    def reflexivity(self) -> np.ndarray:
        """The reflexivity matrix ``Γ_ij = ε_ij β_i / γ_i``, (n, n)."""
        return reflexivity_matrix(self.sensitivities(), self.beta, self.gamma)

    def retraining_map(self) -> tuple[np.ndarray, np.ndarray]:
        """The affine best-response map ``vec θ <- b + M vec θ``.

        Returns
        -------
        M : ndarray, shape (n d, n d)
            ``M_ij = (β_i / γ_i) E_ij`` in (i, j) blocks.
        b : ndarray, shape (n d,)
            ``b_i = (β_i / γ_i) μ_i``.
        """
        n, d = self.num_agents, self.dim
        k = (self.beta / self.gamma)[:, None, None, None]  # (n, 1, 1, 1)
        M = (k * self.E).transpose(0, 2, 1, 3).reshape(n * d, n * d)  # (nd, nd)
        b = (self.beta / self.gamma)[:, None] * self.mu  # (n, d)
        return M, b.reshape(n * d)

    # ---- the model ---------------------------------------------------------------------
    def _check_theta(self, theta, name: str = "theta") -> np.ndarray:
        th = np.asarray(theta, dtype=float)
        if th.shape != (self.num_agents, self.dim):
            raise ValueError(
                f"{name} must have shape (n, d) = ({self.num_agents}, {self.dim}), got {th.shape}"
            )
        if not np.all(np.isfinite(th)):
            raise ValueError(f"{name} contains NaN or infinite values")
        return th

    def data_mean(self, theta) -> np.ndarray:
        """Mean ``μ_i + Σ_j E_ij θ_j`` of each agent's data under deployment θ, (n, d)."""
        th = self._check_theta(theta)
        return self.mu + np.einsum("ijab,jb->ia", self.E, th)

    def sample_data(self, theta, *, num_samples: int, seed=None) -> np.ndarray:
        """Draw ``num_samples`` data points per agent from ``D_i(θ)``, shape (n, N, d)."""
        if not isinstance(num_samples, (int, np.integer)) or num_samples < 1:
            raise ValueError(f"num_samples must be a positive integer, got {num_samples!r}")
        rng = np.random.default_rng(seed)
        m = self.data_mean(theta)  # (n, d)
        noise = rng.standard_normal((self.num_agents, int(num_samples), self.dim))
        return m[:, None, :] + self.noise * noise  # (n, N, d)

    def empirical_best_response(self, z) -> np.ndarray:
        """Minimiser of each agent's empirical risk on samples z (n, N, d): ``(β_i/γ_i) z̄_i``."""
        z = np.asarray(z, dtype=float)
        if z.ndim != 3 or z.shape[0] != self.num_agents or z.shape[2] != self.dim:
            raise ValueError(
                f"z must have shape (n, N, d) = ({self.num_agents}, N, {self.dim}), got {z.shape}"
            )
        return (self.beta / self.gamma)[:, None] * z.mean(axis=1)

    def best_response(self, theta, *, num_samples: int | None = None, seed=None) -> np.ndarray:
        """Unconstrained best response to deployment θ, (n, d).

        Parameters
        ----------
        theta : array_like, shape (n, d)
            The deployed parameters θ^t.
        num_samples : int, optional
            If given, the empirical best response on that many fresh samples per agent.
        seed : int or Generator, optional
            Randomness for the samples.

        Returns
        -------
        ndarray, shape (n, d)
            ``BR_i(θ) = (β_i / γ_i)(μ_i + Σ_j E_ij θ_j)`` (population).
        """
        if num_samples is not None:
            return self.empirical_best_response(
                self.sample_data(theta, num_samples=num_samples, seed=seed)
            )
        return (self.beta / self.gamma)[:, None] * self.data_mean(theta)

    def constrained_best_response(self, theta) -> np.ndarray:
        """Best response within the decision balls: the projection of :meth:`best_response`."""
        return project_to_ball(self.best_response(theta), self.radius)

    def decoupled_risk(self, theta_eval, theta_deploy) -> np.ndarray:
        """``R_i(u_i; D_i(θ)) = E_{z ~ D_i(θ)} l_i(z; u_i)`` with u = theta_eval, (n,)."""
        u = self._check_theta(theta_eval, "theta_eval")
        m = self.data_mean(theta_deploy)
        return 0.5 * self.gamma * np.sum(u**2, axis=1) - self.beta * np.sum(u * m, axis=1)

    def performative_risk(self, theta) -> np.ndarray:
        """``PR_i(θ) = E_{z ~ D_i(θ)} l_i(z; θ_i)``, (n,)."""
        return self.decoupled_risk(theta, theta)

    def excess_loss(self, theta) -> np.ndarray:
        """Per-agent excess loss ``R_i(θ_i; D_i(θ)) - min_u R_i(u; D_i(θ))``, (n,).

        For this instance it equals ``(γ_i / 2) ||θ_i - BR_i(θ)||²``: nonnegative, and zero
        exactly at a performatively stable point.
        """
        th = self._check_theta(theta)
        gap = th - self.best_response(th)  # (n, d)
        return 0.5 * self.gamma * np.sum(gap**2, axis=1)

    def equilibrium(self, *, allow_unstable: bool = False) -> np.ndarray:
        """The performatively stable point ``θ_PS = (I - M)^{-1} b``, (n, d).

        Parameters
        ----------
        allow_unstable : bool
            Return the fixed point even when ρ(M) >= 1 (it exists but is not the limit of
            retraining). Unconstrained fixed point: the decision balls are ignored.

        Raises
        ------
        ValueError
            If ``I - M`` is singular, or ρ(M) >= 1 and ``allow_unstable`` is False.
        """
        M, b = self.retraining_map()
        A = np.eye(M.shape[0]) - M
        if not allow_unstable:
            rho = spectral_radius(M)
            if rho >= 1.0:
                raise ValueError(
                    f"rho(M) = {rho:.4g} >= 1: repeated retraining does not converge to the "
                    "fixed point; pass allow_unstable=True to get it anyway"
                )
        if np.linalg.cond(A) > 1e12:
            raise ValueError("I - M is singular: there is no unique performatively stable point")
        return np.linalg.solve(A, b).reshape(self.num_agents, self.dim)


def _family_graph(graph: str, n: int, rng: np.random.Generator, edge_prob: float) -> nx.DiGraph:
    """Directed influence graph: an edge j -> i means agent j's deployment moves agent i's data."""
    if graph == "er":
        for _ in range(200):
            G = nx.gnp_random_graph(n, edge_prob, seed=int(rng.integers(2**31)), directed=True)
            if n == 1 or nx.is_strongly_connected(G):
                return G
        raise ValueError(
            f"no strongly connected Erdos-Renyi graph with n={n}, edge_prob={edge_prob} found in "
            "200 draws; raise edge_prob"
        )
    if graph == "ring":
        return nx.cycle_graph(n, create_using=nx.DiGraph)
    if graph in ("star_in", "star_out"):
        G = nx.DiGraph()
        G.add_nodes_from(range(n))
        # star_out: the hub (0) moves every leaf's data strongly, leaves move the hub weakly;
        # star_in: the reverse. Both directions keep Γ irreducible so ρ can be scaled.
        for leaf in range(1, n):
            if graph == "star_out":
                G.add_edge(0, leaf, scale=1.0)
                G.add_edge(leaf, 0, scale=0.1)
            else:
                G.add_edge(leaf, 0, scale=1.0)
                G.add_edge(0, leaf, scale=0.1)
        return G
    if graph == "dag":
        G = nx.DiGraph()
        order = rng.permutation(n)
        G.add_nodes_from(range(n))
        for a in range(n):
            for c in range(a + 1, n):
                if rng.random() < edge_prob or c == a + 1:  # a path keeps the depth n - 1
                    G.add_edge(int(order[a]), int(order[c]))
        return G
    raise ValueError(f"unknown graph {graph!r}; use one of {GRAPHS} or a networkx.DiGraph")


def make_game(
    *,
    graph: str | nx.DiGraph = "er",
    num_agents: int = 10,
    dim: int = 1,
    target_rho: float = 0.8,
    target_scalar: float | None = None,
    self_loops: bool | None = None,
    edge_prob: float = 0.3,
    rotate: bool = False,
    noise: float = 1.0,
    radius: float | None = None,
    seed: int = 0,
) -> QuadraticPerformativeGame:
    """A random quadratic performative game on an influence network.

    Raw weights ``W_ij ~ U(0.5, 1.5)`` on the edges j -> i (and on self-loops: each agent's own
    performativity) are scaled so that ``ρ(Γ) = target_rho`` (or ``max_i Σ_j Γ_ij =
    target_scalar``); β_i ~ U(0.5, 1.5), γ_i ~ U(1, 2), and ``E_ij = ε_ij Q_ij`` with
    ``ε_ij = Γ_ij γ_i / β_i`` and ``Q_ij = I`` (or a random orthogonal matrix if ``rotate``).
    The base means are set so that the stable point ``θ_PS`` is a draw from
    ``U(-B/4, B/4)^{n x d}`` (B = radius, or 1).

    Parameters
    ----------
    graph : {"er", "star_in", "star_out", "dag", "ring"} or networkx.DiGraph
        Influence network. ``er`` is a strongly connected directed Erdős-Rényi graph; the
        stars are bidirectional with a heavy direction (hub -> leaves for ``star_out``);
        ``dag`` has a random topological order and no self-loops (Γ nilpotent). A DiGraph
        uses its ``weight`` edge attribute (default 1) for W; its nodes are sorted.
    num_agents : int
        n (ignored for a DiGraph).
    dim : int
        d, the dimension of each agent's parameters.
    target_rho : float
        ρ(Γ) > 0 after scaling.
    target_scalar : float, optional
        If given, scale so that ``max_i Σ_j Γ_ij`` equals it instead (needed for DAGs).
    self_loops : bool, optional
        Own performativity ε_ii > 0. Default: True for families other than ``dag``.
    edge_prob : float
        Edge probability of ``er`` and ``dag``.
    rotate : bool
        Random orthogonal blocks: then ρ(M) <= ρ(Γ) (the threshold is only sufficient).
    noise : float
        Data standard deviation s.
    radius : float, optional
        Decision-ball radius B.
    seed : int
        Randomness.

    Returns
    -------
    QuadraticPerformativeGame

    Examples
    --------
    >>> g = make_game(graph="ring", num_agents=4, target_rho=0.9, seed=1)
    >>> round(float(max(abs(np.linalg.eigvals(g.reflexivity())))), 6)
    0.9
    """
    rng = np.random.default_rng(seed)
    if isinstance(dim, bool) or not isinstance(dim, (int, np.integer)) or dim < 1:
        raise ValueError(f"dim must be a positive integer, got {dim!r}")
    if target_scalar is None and not (np.isfinite(target_rho) and target_rho > 0):
        raise ValueError(f"target_rho must be positive, got {target_rho}")
    if target_scalar is not None and not (np.isfinite(target_scalar) and target_scalar > 0):
        raise ValueError(f"target_scalar must be positive, got {target_scalar}")
    if not 0 < edge_prob <= 1:
        raise ValueError(f"edge_prob must be in (0, 1], got {edge_prob}")
    if isinstance(graph, nx.Graph):
        if not graph.is_directed():
            raise TypeError("graph must be a networkx.DiGraph (influence has a direction)")
        if graph.number_of_nodes() == 0:
            raise ValueError("graph is empty: it has no agents")
        nodes = sorted(graph.nodes)
        index = {v: k for k, v in enumerate(nodes)}
        n = len(nodes)
        W = np.zeros((n, n))
        for j, i, data in graph.edges(data=True):
            w = float(data.get("weight", 1.0))
            if not np.isfinite(w) or w < 0:
                raise ValueError(f"edge ({j}, {i}) has weight {w}; weights must be >= 0")
            W[index[i], index[j]] = w  # edge j -> i: j moves i's data
        if self_loops:
            W[np.diag_indices(n)] = np.maximum(W[np.diag_indices(n)], 1.0)
    else:
        if graph not in GRAPHS:
            raise ValueError(f"unknown graph {graph!r}; use one of {GRAPHS} or a networkx.DiGraph")
        if isinstance(num_agents, bool) or not isinstance(num_agents, (int, np.integer)):
            raise TypeError(f"num_agents must be an integer, got {num_agents!r}")
        n = int(num_agents)
        if n < 2:
            raise ValueError(f"graph {graph!r} needs num_agents >= 2, got {n}")
        G = _family_graph(graph, n, rng, edge_prob)
        W = np.zeros((n, n))
        for j, i, data in G.edges(data=True):
            W[i, j] = data.get("scale", 1.0) * rng.uniform(0.5, 1.5)
        loops = graph != "dag" if self_loops is None else self_loops
        if loops:
            W[np.diag_indices(n)] = rng.uniform(0.5, 1.5, size=n)
    if not np.any(W > 0):
        raise ValueError("the graph has no edges: Γ = 0, so there is nothing to scale")
    if target_scalar is not None:
        scale = target_scalar / float(W.sum(axis=1).max())
    else:
        rho_w = spectral_threshold(W).rho
        if rho_w <= 0:
            raise ValueError(
                "the graph is acyclic, so ρ(Γ) = 0 cannot be scaled to target_rho; "
                "pass target_scalar to scale the scalar constant instead"
            )
        scale = target_rho / rho_w
    Gam = scale * W  # Γ, (n, n)
    beta = rng.uniform(0.5, 1.5, size=n)
    gamma = rng.uniform(1.0, 2.0, size=n)
    eps = Gam * (gamma / beta)[:, None]  # ε_ij = Γ_ij γ_i / β_i
    d = int(dim)
    if rotate:
        if d == 1:
            Q = rng.choice([-1.0, 1.0], size=(n, n, 1, 1))
        else:
            Q = ortho_group.rvs(d, size=n * n, random_state=rng).reshape(n, n, d, d)
    else:
        Q = np.broadcast_to(np.eye(d), (n, n, d, d))
    E = eps[:, :, None, None] * Q  # (n, n, d, d)
    B = 1.0 if radius is None else float(radius)
    theta_star = rng.uniform(-B / 4, B / 4, size=(n, d))
    k = (beta / gamma)[:, None]  # (n, 1)
    # choose μ so that θ* = b + M θ*: μ_i = (γ_i / β_i) θ*_i - Σ_j E_ij θ*_j
    mu = theta_star / k - np.einsum("ijab,jb->ia", E, theta_star)
    return QuadraticPerformativeGame(mu=mu, E=E, beta=beta, gamma=gamma, noise=noise, radius=radius)
