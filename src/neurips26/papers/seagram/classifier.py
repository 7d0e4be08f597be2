"""The learned part of SEAGRAM: a classifier of non-critical node pairs.

For a triple (Q, G, (u, v)) with known label y = y(Q, G) the classifier predicts the
probability that flipping (u, v) keeps the label:

    q     = mean_i GIN_Q(Q)_i                                   (query summary, (d,))
    h     = GIN_G([x_G, q])                                     (query-aware nodes, (n, d))
    p_uv  = sigmoid(MLP([h_u + h_v, |h_u - h_v|, e_uv, q, y, c_uv]))  # Eq. (2)

with ``e_uv`` = 1 when (u, v) is an edge (the flip deletes it) and ``c_uv`` = 1 when some
query edge joins the labels of ``u`` and ``v`` (a necessary condition for criticality:
a flip can only matter through a query edge that maps onto it). The node-order invariant
pair features follow the spec; feeding ``q`` into G's node inputs and the label feature
``c_uv`` are our additions.
"""

from __future__ import annotations

from dataclasses import dataclass

import networkx as nx
import numpy as np
import torch
from torch import nn

from neurips26.common.torch import make_generator

from ._checks import LABEL, check_int
from .model import GINEncoder, GraphBatch, collate

__all__ = ["CriticalityClassifier", "FlipSet", "PairBatch", "pair_batch"]


@dataclass(frozen=True)
class FlipSet:
    """Solver-labelled flips: the classifier's training or held-out data.

    Attributes
    ----------
    instances : tuple of (networkx.Graph, networkx.Graph, bool)
        ``(Q, G, y)`` triples.
    instance : numpy.ndarray of int, shape (P,)
        Index into ``instances`` of each flip.
    u, v : numpy.ndarray of int, shape (P,)
        The flipped pair (``u < v``).
    noncritical : numpy.ndarray of bool, shape (P,)
        Whether the flip keeps the label (the solver's answer).
    """

    instances: tuple[tuple[nx.Graph, nx.Graph, bool], ...]
    instance: np.ndarray
    u: np.ndarray
    v: np.ndarray
    noncritical: np.ndarray

    def __len__(self) -> int:
        return len(self.instance)


class CriticalityClassifier(nn.Module):
    """Eq. (2): probability that flipping a node pair keeps the relevance label.

    Parameters
    ----------
    vocab : tuple of str
        Node labels with their own feature column (as for the target model).
    dim : int
        Width ``d``.
    num_layers : int
        GIN layers of each encoder (3 in the spec).
    seed : int
        Seed of the initial weights.

    Examples
    --------
    >>> import networkx as nx
    >>> clf = CriticalityClassifier(dim=8)
    >>> clf.predict_proba(nx.path_graph(3), nx.cycle_graph(5), True).shape
    (5, 5)
    """

    def __init__(
        self, vocab: tuple[str, ...] = (), *, dim: int = 32, num_layers: int = 3, seed: int = 0
    ) -> None:
        super().__init__()
        check_int(dim, "dim", low=1)
        check_int(num_layers, "num_layers", low=1)
        self.vocab = tuple(str(v) for v in vocab)
        f = len(self.vocab) + 1
        self.query_encoder = GINEncoder(f, dim, num_layers)
        self.graph_encoder = GINEncoder(f + dim, dim, num_layers)
        self.pair_mlp = nn.Sequential(
            nn.Linear(3 * dim + 3, dim), nn.ReLU(), nn.Linear(dim, dim), nn.ReLU(),
            nn.Linear(dim, 1),
        )
        gen = make_generator(seed)
        with torch.no_grad():
            for p in self.parameters():
                if p.dim() > 1:
                    p.copy_(torch.randn(p.shape, generator=gen) * (1.0 / p.shape[1]) ** 0.5)
                else:
                    p.zero_()

    def forward(self, batch: PairBatch) -> torch.Tensor:
        """Eq. (2) logits of non-criticality for every pair of ``batch``, shape (P,), in the
        model's dtype and device (the batch's features are cast to them)."""
        p = self.pair_mlp[0].weight
        dev, dt = p.device, p.dtype
        qb, cb = batch.queries, batch.corpora
        hq = self.query_encoder(qb.x.to(dev, dt), qb.edge_index.to(dev))  # (N_Q, d)
        qbatch, cbatch = qb.batch.to(dev), cb.batch.to(dev)
        counts = torch.bincount(qbatch, minlength=qb.num_graphs).clamp(min=1)
        q = torch.zeros(qb.num_graphs, hq.shape[1], dtype=dt, device=dev)
        q = q.index_add(0, qbatch, hq) / counts[:, None].to(dt)  # (B, d): mean pooling
        h = self.graph_encoder(torch.cat([cb.x.to(dev, dt), q[cbatch]], dim=1),
                               cb.edge_index.to(dev))  # fmt: skip
        graph = batch.graph.to(dev)
        start = batch.offsets.to(dev)[graph]
        hu = h[start + batch.u.to(dev)]  # (P, d)
        hv = h[start + batch.v.to(dev)]
        feats = torch.cat(
            [hu + hv, (hu - hv).abs(), batch.is_edge.to(dev, dt)[:, None], q[graph],
             batch.label.to(dev, dt)[:, None], batch.compatible.to(dev, dt)[:, None]],
            dim=1,
        )
        return self.pair_mlp(feats).squeeze(-1)

    @torch.no_grad()
    def predict_proba(self, query: nx.Graph, corpus: nx.Graph, label: bool) -> np.ndarray:
        """``P(non-critical)`` of every pair of ``corpus``, a symmetric (n, n) array.

        The diagonal (no pair) is 0. Monotonicity rules are *not* applied here.
        """
        n = corpus.number_of_nodes()
        iu, iv = np.triu_indices(n, k=1)
        out = np.zeros((n, n))
        if len(iu) == 0:
            return out
        # Vectorised pair features of one graph (the attack calls this every step).
        adj = nx.to_numpy_array(corpus, nodelist=range(n)) > 0
        labs = [corpus.nodes[i].get(LABEL) for i in range(n)]
        qpairs = _label_pairs(query)
        kinds = sorted(set(labs), key=str)
        code = np.array([kinds.index(lab) for lab in labs])
        ok = np.array([[frozenset((a, b)) in qpairs for b in kinds] for a in kinds])
        qb = collate([query], self.vocab)
        cb = collate([corpus], self.vocab)
        f = torch.float32
        batch = PairBatch(
            qb, cb, torch.zeros(1, dtype=torch.long), torch.zeros(len(iu), dtype=torch.long),
            torch.as_tensor(iu), torch.as_tensor(iv), torch.as_tensor(adj[iu, iv], dtype=f),
            torch.full((len(iu),), float(bool(label))),
            torch.as_tensor(ok[code[iu], code[iv]], dtype=f),
        )
        out[iu, iv] = torch.sigmoid(self(batch)).double().cpu().numpy()
        out[iv, iu] = out[iu, iv]
        return out


@dataclass(frozen=True)
class PairBatch:
    """A :class:`FlipSet` as tensors, collated once and reused for every step.

    Attributes
    ----------
    queries, corpora : GraphBatch
        The instances' graphs.
    offsets : torch.Tensor, shape (B,)
        Index of each corpus graph's node 0 in ``corpora``.
    graph, u, v : torch.Tensor of int, shape (P,)
        Instance and node pair of each flip.
    is_edge, label, compatible : torch.Tensor of float, shape (P,)
        ``e_uv``; ``y``; whether some query edge joins the labels of ``u`` and ``v``
        (1 for unlabelled graphs), a necessary condition for the flip to be critical.
    """

    queries: GraphBatch
    corpora: GraphBatch
    offsets: torch.Tensor
    graph: torch.Tensor
    u: torch.Tensor
    v: torch.Tensor
    is_edge: torch.Tensor
    label: torch.Tensor
    compatible: torch.Tensor


def _label_pairs(query: nx.Graph) -> set[frozenset]:
    return {frozenset((query.nodes[a].get(LABEL), query.nodes[b].get(LABEL)))
            for a, b in query.edges}


def pair_batch(data: FlipSet, vocab: tuple[str, ...]) -> PairBatch:
    """Collate a :class:`FlipSet` (only the instances its flips use)."""
    used = np.unique(data.instance)
    remap = np.full(len(data.instances), -1)
    remap[used] = np.arange(len(used))
    qs = [data.instances[i][0] for i in used]
    gs = [data.instances[i][1] for i in used]
    cb = collate(gs, vocab)
    sizes = torch.bincount(cb.batch, minlength=cb.num_graphs)
    pairs = {i: _label_pairs(data.instances[i][0]) for i in used.tolist()}
    is_edge, label, compat = [], [], []
    for i, a, b in zip(data.instance.tolist(), data.u.tolist(), data.v.tolist(), strict=True):
        _, g, y = data.instances[i]
        is_edge.append(g.has_edge(a, b))
        label.append(y)
        compat.append(frozenset((g.nodes[a].get(LABEL), g.nodes[b].get(LABEL))) in pairs[i])
    f = torch.float32
    return PairBatch(
        collate(qs, vocab), cb, torch.cumsum(sizes, 0) - sizes,
        torch.as_tensor(remap[data.instance]), torch.as_tensor(data.u),
        torch.as_tensor(data.v), torch.as_tensor(is_edge, dtype=f),
        torch.as_tensor(label, dtype=f), torch.as_tensor(compat, dtype=f),
    )
