"""Input checks shared by every public function of the paper (one place, one wording)."""

from __future__ import annotations

import math
from numbers import Integral, Real

import networkx as nx

#: The node attribute holding a node's label (the element of an atom).
LABEL = "label"


def check_graph(graph: object, name: str, *, allow_empty: bool = False) -> nx.Graph:
    """Return ``graph`` if it is a simple undirected graph on nodes ``0..n-1``.

    Raises
    ------
    TypeError
        If it is not a ``networkx.Graph``, or is directed or a multigraph.
    ValueError
        If it is empty (unless allowed), has self-loops, nodes other than ``0..n-1``,
        or labels on some nodes but not on others.
    """
    if not isinstance(graph, nx.Graph):
        raise TypeError(f"{name}: expected a networkx.Graph, got {type(graph).__name__}")
    if graph.is_directed():
        raise TypeError(f"{name}: directed graphs are not supported; use graph.to_undirected()")
    if graph.is_multigraph():
        raise TypeError(f"{name}: multigraphs are not supported; use networkx.Graph(graph)")
    n = graph.number_of_nodes()
    if n == 0 and not allow_empty:
        raise ValueError(f"{name}: the graph is empty (no nodes)")
    loops = nx.number_of_selfloops(graph)
    if loops:
        raise ValueError(f"{name}: {loops} self-loop(s) found; self-loops are not allowed")
    if set(graph.nodes) != set(range(n)):
        raise ValueError(
            f"{name}: nodes must be the integers 0..{n - 1}; "
            "use networkx.convert_node_labels_to_integers(graph)"
        )
    labelled = sum(LABEL in d for _, d in graph.nodes(data=True))
    if 0 < labelled < n:
        raise ValueError(f"{name}: {labelled} of {n} nodes carry a {LABEL!r}; label all or none")
    return graph


def is_labelled(graph: nx.Graph) -> bool:
    """Whether the (checked) graph carries node labels."""
    return graph.number_of_nodes() > 0 and all(LABEL in d for _, d in graph.nodes(data=True))


def check_pair(query: object, corpus: object) -> tuple[nx.Graph, nx.Graph]:
    """Check a (query, corpus) pair: both graphs valid, both labelled or both not."""
    q = check_graph(query, "query")
    c = check_graph(corpus, "corpus")
    if is_labelled(q) != is_labelled(c):
        which = "query" if is_labelled(q) else "corpus"
        raise ValueError(
            f"mismatched labels: only the {which} carries node {LABEL!r} attributes; "
            "label both graphs or neither"
        )
    return q, c


def check_int(value: object, name: str, *, low: int | None = None, high: int | None = None) -> int:
    """An integer within ``[low, high]``."""
    if isinstance(value, bool) or not isinstance(value, Integral):
        raise TypeError(f"{name}: expected an integer, got {value!r}")
    value = int(value)
    if low is not None and value < low:
        raise ValueError(f"{name}: must be >= {low}, got {value}")
    if high is not None and value > high:
        raise ValueError(f"{name}: must be <= {high}, got {value}")
    return value


def check_open_unit(value: object, name: str) -> float:
    """A finite float strictly inside (0, 1)."""
    if isinstance(value, bool) or not isinstance(value, Real):
        raise TypeError(f"{name}: expected a number, got {value!r}")
    value = float(value)
    if not math.isfinite(value) or not 0.0 < value < 1.0:
        raise ValueError(f"{name}: must lie in (0, 1), got {value}")
    return value


def check_bool(value: object, name: str) -> bool:
    """A Python or NumPy boolean (0/1 integers are refused to catch swapped arguments)."""
    if hasattr(value, "dtype") and getattr(value, "shape", None) == () and value.dtype == bool:
        return bool(value)
    if not isinstance(value, bool):
        raise TypeError(f"{name}: expected a bool, got {value!r}")
    return value


def check_pairs(pairs: object, name: str) -> list:
    """A non-empty sequence of (query, corpus) pairs, each checked."""
    try:
        items = list(pairs)  # type: ignore[call-overload]
    except TypeError as exc:
        raise TypeError(f"{name}: expected a sequence of (query, corpus) pairs") from exc
    if not items:
        raise ValueError(f"{name}: the list of (query, corpus) pairs is empty")
    out = []
    for i, item in enumerate(items):
        if not isinstance(item, tuple) or len(item) != 2:
            raise TypeError(f"{name}[{i}]: expected a (query, corpus) tuple")
        out.append(check_pair(*item))
    return out
