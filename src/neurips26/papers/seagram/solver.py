"""The exact oracle: subgraph monomorphism, a counting wrapper and the monotonicity rules.

The relevance label of a query ``Q`` and a corpus graph ``G`` is

    y(Q, G) = 1  iff  there is an injective map f: V(Q) -> V(G) with
                      (u, v) in E(Q)  =>  (f(u), f(v)) in E(G)  and  label(u) = label(f(u)),

i.e. ``Q`` is isomorphic to a (not necessarily induced) subgraph of ``G``: a
*monomorphism*. We decide it with networkx's VF2 matcher
(``GraphMatcher.subgraph_is_monomorphic``). Every learned part of SEAGRAM exists to call
this solver less often; :class:`SolverCounter` counts (and can forbid) the calls.

Two exact shortcuts follow from monotonicity (``G subseteq G'`` implies
``y(Q, G) <= y(Q, G')``): when ``y = 1`` inserting an edge keeps the label, and when
``y = 0`` deleting one does. Only deletions on relevant pairs and insertions on
irrelevant ones can be *critical* (change the label).
"""

from __future__ import annotations

import itertools
import time
from dataclasses import dataclass

import networkx as nx
from networkx.algorithms import isomorphism

from ._checks import LABEL, check_bool, check_graph, check_int, check_pair, is_labelled

__all__ = [
    "SolverBudgetExceeded",
    "SolverCounter",
    "flip_pair",
    "is_critical",
    "is_subgraph",
    "is_subgraph_bruteforce",
    "safe_by_rule",
]


def _label_match(a: dict, b: dict) -> bool:
    return a.get(LABEL) == b.get(LABEL)


def is_subgraph(query: nx.Graph, corpus: nx.Graph) -> bool:
    """Whether ``query`` is monomorphic to a subgraph of ``corpus`` (the label y(Q, G)).

    Parameters
    ----------
    query : networkx.Graph
        ``Q``, nodes ``0..n_Q-1``, optional node attribute ``"label"``.
    corpus : networkx.Graph
        ``G``, nodes ``0..n_G-1``; labelled if and only if ``query`` is.

    Returns
    -------
    bool
        ``True`` iff an injective, label- and edge-preserving map ``V(Q) -> V(G)``
        exists (non-induced: extra corpus edges are allowed).

    Examples
    --------
    >>> import networkx as nx
    >>> is_subgraph(nx.path_graph(3), nx.cycle_graph(4))
    True
    >>> is_subgraph(nx.cycle_graph(3), nx.path_graph(5))
    False
    """
    q, c = check_pair(query, corpus)
    if q.number_of_nodes() > c.number_of_nodes() or q.number_of_edges() > c.number_of_edges():
        return False
    node_match = _label_match if is_labelled(q) else None
    # GraphMatcher(G1, G2) looks for subgraphs of G1 isomorphic to G2.
    matcher = isomorphism.GraphMatcher(c, q, node_match=node_match)
    return bool(matcher.subgraph_is_monomorphic())


def is_subgraph_bruteforce(query: nx.Graph, corpus: nx.Graph) -> bool:
    """The same decision by enumerating every injective map (an independent oracle).

    Exponential: meant for graphs of at most about 7 nodes (tests).

    Examples
    --------
    >>> import networkx as nx
    >>> is_subgraph_bruteforce(nx.star_graph(3), nx.path_graph(4))
    False
    """
    q, c = check_pair(query, corpus)
    nq, nc = q.number_of_nodes(), c.number_of_nodes()
    if nq > 9 or nc > 9:
        raise ValueError(f"corpus: brute force is for graphs of <= 9 nodes, got {nq} and {nc}")
    labelled = is_labelled(q)
    q_edges = list(q.edges)
    for image in itertools.permutations(range(nc), nq):
        if labelled and any(q.nodes[i][LABEL] != c.nodes[image[i]][LABEL] for i in range(nq)):
            continue
        if all(c.has_edge(image[u], image[v]) for u, v in q_edges):
            return True
    return False


def flip_pair(graph: nx.Graph, u: int, v: int) -> nx.Graph:
    """A copy of ``graph`` with the node pair ``(u, v)`` flipped (edge removed or added).

    Examples
    --------
    >>> import networkx as nx
    >>> flip_pair(nx.path_graph(3), 0, 2).number_of_edges()
    3
    """
    g = check_graph(graph, "graph")
    n = g.number_of_nodes()
    u = check_int(u, "u", low=0, high=n - 1)
    v = check_int(v, "v", low=0, high=n - 1)
    if u == v:
        raise ValueError(f"u, v: a flip needs two distinct nodes, got ({u}, {v}) (a self-loop)")
    out = g.copy()
    if out.has_edge(u, v):
        out.remove_edge(u, v)
    else:
        out.add_edge(u, v)
    return out


def safe_by_rule(label: bool, is_edge: bool) -> bool:
    """Whether monotonicity alone guarantees that a flip keeps the label.

    Parameters
    ----------
    label : bool
        The current label ``y(Q, G)``.
    is_edge : bool
        Whether the flipped pair is an edge of ``G`` (flipping deletes it) or not
        (flipping inserts it).

    Returns
    -------
    bool
        ``True`` for insertions when ``y = 1`` and deletions when ``y = 0``; ``False``
        for the hard cases, which need the solver (or the classifier).

    Examples
    --------
    >>> safe_by_rule(True, is_edge=False), safe_by_rule(True, is_edge=True)
    (True, False)
    """
    label = check_bool(label, "label")
    is_edge = check_bool(is_edge, "is_edge")
    return label != is_edge


class SolverBudgetExceeded(RuntimeError):
    """Raised when a :class:`SolverCounter` would exceed its call budget."""


@dataclass
class SolverCounter:
    """The exact solver behind a call counter (and an optional budget).

    Parameters
    ----------
    max_calls : int or None
        Calls allowed; the call that would exceed it raises
        :class:`SolverBudgetExceeded` (``0`` forbids every call). ``None``: no limit.

    Attributes
    ----------
    calls : int
        Solver calls made so far.
    seconds : float
        Wall-clock seconds spent inside the solver.

    Examples
    --------
    >>> import networkx as nx
    >>> solver = SolverCounter()
    >>> solver(nx.path_graph(2), nx.path_graph(3)), solver.calls
    (True, 1)
    >>> SolverCounter(max_calls=0)(nx.path_graph(2), nx.path_graph(3))
    Traceback (most recent call last):
    ...
    neurips26.papers.seagram.solver.SolverBudgetExceeded: solver budget of 0 calls exhausted
    """

    max_calls: int | None = None
    calls: int = 0
    seconds: float = 0.0

    def __post_init__(self) -> None:
        if self.max_calls is not None:
            check_int(self.max_calls, "max_calls", low=0)

    @property
    def remaining(self) -> int | None:
        """Calls left under the budget (``None`` when unlimited)."""
        return None if self.max_calls is None else self.max_calls - self.calls

    def __call__(self, query: nx.Graph, corpus: nx.Graph) -> bool:
        """``is_subgraph(query, corpus)``, counted and timed."""
        if self.max_calls is not None and self.calls >= self.max_calls:
            raise SolverBudgetExceeded(f"solver budget of {self.max_calls} calls exhausted")
        self.calls += 1
        start = time.perf_counter()
        try:
            return is_subgraph(query, corpus)
        finally:
            self.seconds += time.perf_counter() - start


def is_critical(
    query: nx.Graph,
    corpus: nx.Graph,
    u: int,
    v: int,
    *,
    label: bool,
    solver: SolverCounter | None = None,
) -> bool:
    """Whether flipping ``(u, v)`` changes the label: ``y(Q, G xor uv) != y(Q, G)``.

    The monotonicity rules answer without the solver where they apply.

    Parameters
    ----------
    query, corpus : networkx.Graph
        ``Q`` and ``G``.
    u, v : int
        The node pair of ``G``.
    label : bool
        ``y(Q, G)``, known.
    solver : SolverCounter, optional
        The counter to charge; a fresh, unlimited one if omitted.

    Examples
    --------
    >>> import networkx as nx
    >>> is_critical(nx.path_graph(3), nx.path_graph(3), 0, 1, label=True)
    True
    """
    query, corpus = check_pair(query, corpus)
    label = check_bool(label, "label")
    n = corpus.number_of_nodes()
    u = check_int(u, "u", low=0, high=n - 1)
    v = check_int(v, "v", low=0, high=n - 1)
    if safe_by_rule(label, corpus.has_edge(u, v)):
        return False
    solver = SolverCounter() if solver is None else solver
    return solver(query, flip_pair(corpus, u, v)) != label
