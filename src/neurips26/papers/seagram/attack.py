"""Greedy edge-flip attacks on a neural subgraph matcher, and the baselines.

All attacks share one greedy loop (:func:`greedy_attack`). At each of at most ``b`` steps
it takes the allowed node pairs not flipped before, pre-ranks them by a first-order
(saliency) estimate of the score change,

    Delta s_uv ~= (ds / dA_uv + ds / dA_vu) * (1 - 2 A_uv),                # Eq. (3)

computed by one backward pass through the matcher on the continuous adjacency ``A``,
scores the top ``m`` flips exactly in one batched forward, and applies the best flip
that moves the margin toward the wrong side: lower ``s`` for relevant pairs (y = 1),
higher for irrelevant ones (y = 0); an optional ``verify`` callback (the solver) can
veto a flip, in which case the next best is tried. The attacks differ in what they
allow and verify:

- SEAGRAM (:class:`~neurips26.papers.seagram.SEAGRAM`): rule-safe pairs plus pairs the
  classifier calls non-critical with probability >= tau; no verification (no solver);
- :func:`unconstrained_greedy`: every pair, no check (invalid as an attack; it shows how
  often labels flip);
- :func:`solver_greedy`: every pair scored exactly, each chosen flip verified by the
  rules or the solver (the strongest valid greedy attack, and the costliest);
- :func:`random_attack`: random pairs, kept when the rules or the solver say the label
  survives.

The attacks take our :class:`~neurips26.papers.seagram.NSGMModel` or any matcher that
follows :class:`DenseMatcher`: one method ``score_dense(query, corpus, adj)`` returning
the relevance score (higher = "Q is a subgraph of G") of the corpus graph's node set
under each adjacency in the batch ``adj`` ``(..., n, n)``, differentiable in ``adj``.
That is all the greedy loop needs: batched forwards and one gradient per step.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

import networkx as nx
import numpy as np
import torch

from neurips26.common.validation import check_rng

from ._checks import check_bool, check_int, check_pair
from .model import NSGMModel, node_features
from .solver import SolverCounter, flip_pair, safe_by_rule

__all__ = [
    "AttackResult",
    "DenseMatcher",
    "greedy_attack",
    "random_attack",
    "solver_greedy",
    "unconstrained_greedy",
]


@dataclass(frozen=True)
class AttackResult:
    """One attacked (query, corpus) pair.

    Attributes
    ----------
    perturbed : networkx.Graph
        ``G'``, the corpus graph after the flips.
    flips : tuple of (int, int)
        The flipped pairs ``(u, v)``, ``u < v``, in order.
    score_before, score_after : float
        The target model's ``s(Q, G)`` and ``s(Q, G')``.
    solver_calls : int
        Exact-solver calls the attack made.
    label : bool
        The known label ``y(Q, G)`` the attack aimed to keep.
    """

    perturbed: nx.Graph
    flips: tuple[tuple[int, int], ...]
    score_before: float
    score_after: float
    solver_calls: int
    label: bool

    @property
    def margin_change(self) -> float:
        """How far the score moved toward the wrong side (positive = attack progress)."""
        delta = self.score_after - self.score_before
        return -delta if self.label else delta


@runtime_checkable
class DenseMatcher(Protocol):
    """The protocol a user's subgraph matcher follows to be attacked.

    ``score_dense(query, corpus, adj)`` takes the query graph ``Q`` and the corpus graph
    ``G`` (networkx, nodes ``0..n-1``) and a float tensor ``adj`` of shape ``(..., n, n)``
    (symmetric 0/1 adjacencies of ``G``'s node set, one per batch entry; the attack also
    passes a continuous copy to take one gradient), and returns the scores ``s(Q, G_A)``
    of shape ``(...)``: higher means "Q is a subgraph of G", as Eq. (1) of our
    :class:`~neurips26.papers.seagram.NSGMModel`. It must be differentiable in ``adj``
    (the saliency of Eq. (3)). A ``vocab`` attribute (node labels), where the matcher has
    one, gives SEAGRAM's classifier its label features.

    Examples
    --------
    >>> import networkx as nx
    >>> class EdgeCount:  # a toy matcher: relevant when G has as many edges as Q
    ...     def score_dense(self, query, corpus, adj):
    ...         return -(adj.sum((-1, -2)) / 2 - query.number_of_edges()) ** 2
    >>> isinstance(EdgeCount(), DenseMatcher)
    True
    >>> res = greedy_attack(EdgeCount(), nx.path_graph(3), nx.path_graph(3), label=True,
    ...                     budget=1)
    >>> res.score_after < res.score_before
    True
    """

    def score_dense(self, query: nx.Graph, corpus: nx.Graph, adj: torch.Tensor) -> torch.Tensor:
        ...


def check_matcher(model: object, name: str = "model") -> object:
    """``model`` if it is an :class:`NSGMModel` or follows :class:`DenseMatcher`."""
    if isinstance(model, NSGMModel):
        return model
    if not isinstance(model, DenseMatcher) or not callable(model.score_dense):
        raise TypeError(
            f"{name}: expected an NSGMModel or a matcher with a method "
            f"score_dense(query, corpus, adj) -> scores (see DenseMatcher), got "
            f"{type(model).__name__}"
        )
    return model


def _check_common(model: object, query: object, corpus: object, label: object, budget: object):
    check_matcher(model)
    q, c = check_pair(query, corpus)
    return q, c, check_bool(label, "label"), check_int(budget, "budget", low=0)


class _DenseScorer:
    """The matcher's score on dense adjacencies of one (query, corpus) pair."""

    def __init__(self, model: NSGMModel | DenseMatcher, query: nx.Graph,
                 corpus: nx.Graph) -> None:
        self.model = model
        self.n = corpus.number_of_nodes()
        if not isinstance(model, NSGMModel):  # a user's matcher, through its protocol
            self.score = lambda adj: _scores(model, query, corpus, adj)
            return
        nq, n = query.number_of_nodes(), corpus.number_of_nodes()
        aq = torch.as_tensor(nx.to_numpy_array(query, nodelist=range(nq)), dtype=torch.float32)
        with torch.no_grad():
            self.zq = model.embed_dense(node_features(query, model.vocab), aq)  # (d,)
        self.x = node_features(corpus, model.vocab)  # (n, F)
        self.n = n

    def score(self, adj: torch.Tensor) -> torch.Tensor:
        """Scores of adjacencies ``(..., n, n)``: Eq. (1), shape (...)."""
        return -self.model.energy(self.zq, self.model.embed_dense(self.x, adj))

    def saliency(self, adj: np.ndarray) -> np.ndarray:
        """Eq. (3): first-order score change of flipping each pair, symmetric (n, n)."""
        a = torch.as_tensor(adj, dtype=torch.float32).requires_grad_(True)
        (grad,) = torch.autograd.grad(self.score(a), a)
        g = (grad + grad.T).double().cpu().numpy()
        return g * (1.0 - 2.0 * adj)


def _scores(model: DenseMatcher, query: nx.Graph, corpus: nx.Graph,
            adj: torch.Tensor) -> torch.Tensor:
    out = model.score_dense(query, corpus, adj)
    if not torch.is_tensor(out) or out.shape != adj.shape[:-2]:
        raise ValueError(
            f"model.score_dense: expected a tensor of shape {tuple(adj.shape[:-2])} (one "
            f"score per adjacency), got {getattr(out, 'shape', type(out).__name__)}")
    return out


def greedy_attack(
    model: NSGMModel | DenseMatcher,
    query: nx.Graph,
    corpus: nx.Graph,
    *,
    label: bool,
    budget: int,
    allowed: Callable[[nx.Graph], np.ndarray] | None = None,
    pool_size: int | None = 64,
    verify: Callable[[nx.Graph, int, int], bool] | None = None,
    solver: SolverCounter | None = None,
) -> AttackResult:
    """The shared greedy loop (see the module docstring).

    Parameters
    ----------
    model : NSGMModel or DenseMatcher
        The target matcher (only forwards and one gradient per step): ours, or any
        object with ``score_dense(query, corpus, adj)`` (:class:`DenseMatcher`).
    query, corpus : networkx.Graph
        ``Q`` and ``G``.
    label : bool
        The known ``y(Q, G)``; sets the attack's direction.
    budget : int
        ``b >= 0``, the most flips.
    allowed : callable, optional
        ``allowed(G_t) -> (n, n) bool``: the pairs that may be flipped in the current
        graph. Default: all.
    pool_size : int or None
        ``m``: flips scored exactly per step after the saliency pre-ranking; ``None``
        scores every allowed flip exactly.
    verify : callable, optional
        ``verify(G_t, u, v) -> bool``: whether flipping ``(u, v)`` in the current graph
        may go ahead (the solver's veto).
    solver : SolverCounter, optional
        The counter ``verify`` charges; its calls during the attack are reported.

    Examples
    --------
    >>> import networkx as nx
    >>> model = NSGMModel(dim=8)
    >>> res = greedy_attack(model, nx.path_graph(3), nx.cycle_graph(6), label=True, budget=2)
    >>> len(res.flips) <= 2
    True
    """
    q, c, label, budget = _check_common(model, query, corpus, label, budget)
    if pool_size is not None:
        pool_size = check_int(pool_size, "pool_size", low=1)
    calls0 = solver.calls if solver is not None else 0
    scorer = _DenseScorer(model, q, c)
    n = c.number_of_nodes()
    adj = nx.to_numpy_array(c, nodelist=range(n))
    graph = c
    with torch.no_grad():
        s_cur = float(scorer.score(torch.as_tensor(adj, dtype=torch.float32)))
    s0 = s_cur
    iu, iv = np.triu_indices(n, k=1)
    fresh = np.ones(len(iu), dtype=bool)  # never flip a pair twice
    flips: list[tuple[int, int]] = []
    sign = -1.0 if label else 1.0  # progress = sign * (s_new - s_cur)
    for _ in range(budget):
        ok = fresh.copy()
        if allowed is not None:
            mask = np.asarray(allowed(graph), dtype=bool)
            if mask.shape != (n, n):
                raise ValueError(f"allowed: expected an ({n}, {n}) mask, got {mask.shape}")
            ok &= mask[iu, iv]
        cand = np.flatnonzero(ok)
        if len(cand) == 0:
            break
        if pool_size is not None and len(cand) > pool_size:
            est = sign * scorer.saliency(adj)[iu[cand], iv[cand]]
            cand = cand[np.argsort(-est, kind="stable")[:pool_size]]
        variants = np.repeat(adj[None], len(cand), axis=0)  # (m, n, n)
        r = np.arange(len(cand))
        variants[r, iu[cand], iv[cand]] = 1.0 - variants[r, iu[cand], iv[cand]]
        variants[r, iv[cand], iu[cand]] = variants[r, iu[cand], iv[cand]]
        with torch.no_grad():
            s_new = scorer.score(torch.as_tensor(variants, dtype=torch.float32))
            s_new = s_new.double().cpu().numpy()
        progress = sign * (s_new - s_cur)
        chosen = None
        for k in np.argsort(-progress, kind="stable"):
            if progress[k] <= 0:
                break
            u, v = int(iu[cand[k]]), int(iv[cand[k]])
            if verify is None or verify(graph, u, v):
                chosen = k
                break
        if chosen is None:
            break
        u, v = int(iu[cand[chosen]]), int(iv[cand[chosen]])
        graph = flip_pair(graph, u, v)
        adj = variants[chosen]
        fresh[cand[chosen]] = False
        s_cur = float(s_new[chosen])
        flips.append((u, v))
    calls = (solver.calls - calls0) if solver is not None else 0
    return AttackResult(graph, tuple(flips), s0, s_cur, calls, label)


def unconstrained_greedy(
    model: NSGMModel,
    query: nx.Graph,
    corpus: nx.Graph,
    *,
    label: bool,
    budget: int,
    pool_size: int | None = 64,
) -> AttackResult:
    """Greedy flips over every pair with no label check (invalid as an attack)."""
    return greedy_attack(
        model, query, corpus, label=label, budget=budget, pool_size=pool_size
    )


def solver_greedy(
    model: NSGMModel,
    query: nx.Graph,
    corpus: nx.Graph,
    *,
    label: bool,
    budget: int,
    solver: SolverCounter,
) -> AttackResult:
    """The oracle: every flip scored exactly, the best verified one applied each step.

    A flip is verified by the monotonicity rules where they apply and by the solver
    otherwise; candidates are tried in order of progress until one keeps the label.
    """
    if not isinstance(solver, SolverCounter):
        raise TypeError(f"solver: expected a SolverCounter, got {type(solver).__name__}")
    q, c, label, budget = _check_common(model, query, corpus, label, budget)

    def verify(graph: nx.Graph, u: int, v: int) -> bool:
        if safe_by_rule(label, graph.has_edge(u, v)):
            return True
        return solver(q, flip_pair(graph, u, v)) == label

    return greedy_attack(
        model, q, c, label=label, budget=budget, pool_size=None, verify=verify, solver=solver
    )


def random_attack(
    model: NSGMModel,
    query: nx.Graph,
    corpus: nx.Graph,
    *,
    label: bool,
    budget: int,
    solver: SolverCounter,
    rng: np.random.Generator,
    max_tries: int = 50,
) -> AttackResult:
    """Random label-preserving flips: random pairs in random order, each kept when the
    rules or the solver say the label survives, until ``budget`` flips or ``max_tries``
    pairs tried."""
    if not isinstance(solver, SolverCounter):
        raise TypeError(f"solver: expected a SolverCounter, got {type(solver).__name__}")
    rng = check_rng(rng)
    q, c, label, budget = _check_common(model, query, corpus, label, budget)
    max_tries = check_int(max_tries, "max_tries", low=1)
    calls0 = solver.calls
    n = c.number_of_nodes()
    iu, iv = np.triu_indices(n, k=1)
    graph, flips = c, []
    for k in rng.permutation(len(iu))[:max_tries]:
        if len(flips) >= budget:
            break
        u, v = int(iu[k]), int(iv[k])
        candidate = flip_pair(graph, u, v)
        if safe_by_rule(label, graph.has_edge(u, v)) or solver(q, candidate) == label:
            graph = candidate
            flips.append((u, v))
    scorer = _DenseScorer(model, q, c)
    with torch.no_grad():
        s0 = float(scorer.score(torch.as_tensor(nx.to_numpy_array(c, nodelist=range(n)),
                                                dtype=torch.float32)))
        s1 = float(scorer.score(torch.as_tensor(nx.to_numpy_array(graph, nodelist=range(n)),
                                                dtype=torch.float32)))
    return AttackResult(graph, tuple(flips), s0, s1, solver.calls - calls0, label)
