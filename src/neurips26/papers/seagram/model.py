"""The target: a NeuroMatch-style neural subgraph matcher built from GIN layers.

Each graph is embedded by a GIN encoder (torch-geometric's ``GINConv``) into a
non-negative vector ``z`` (sum pooling of ReLU features), and the pair is scored by the
order-embedding violation

    E(Q, G) = || relu(z_Q - z_G) ||^2,        s(Q, G) = -E(Q, G),          # Eq. (1)

so that a subgraph should be dominated coordinate-wise by its supergraph. The model calls
a pair relevant when ``E < t`` for a learned threshold ``t`` (logit ``t - E``).

Graphs are batched by hand (:func:`collate`: concatenated nodes, offset edge indices and
a graph index per node), and the same encoder runs on a dense, continuous adjacency
(:meth:`GINEncoder.dense`) so that SEAGRAM can take the gradient of the score with
respect to every node pair; on a 0/1 adjacency the two paths agree exactly.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import networkx as nx
import numpy as np
import torch
from torch import nn
from torch_geometric.nn import GINConv

from neurips26.common.torch import make_generator

from ._checks import LABEL, check_graph, check_int, check_pairs, is_labelled

__all__ = [
    "GINEncoder",
    "GraphBatch",
    "NSGMModel",
    "TrainResult",
    "collate",
    "train_matcher",
]


@dataclass(frozen=True)
class GraphBatch:
    """A batch of graphs as flat tensors.

    Attributes
    ----------
    x : torch.Tensor, shape (N, F)
        One-hot node labels of all ``N`` nodes (vocabulary plus "other").
    edge_index : torch.Tensor, shape (2, 2E)
        Both directions of every edge, node indices offset per graph.
    batch : torch.Tensor, shape (N,)
        The graph of each node.
    num_graphs : int
        ``B``.
    """

    x: torch.Tensor
    edge_index: torch.Tensor
    batch: torch.Tensor
    num_graphs: int


def node_features(graph: nx.Graph, vocab: Sequence[str]) -> torch.Tensor:
    """One-hot labels, shape ``(n, len(vocab) + 1)``; unknown or absent labels map to the
    last column ("other")."""
    index = {lab: i for i, lab in enumerate(vocab)}
    n = graph.number_of_nodes()
    x = torch.zeros(n, len(vocab) + 1)
    labelled = is_labelled(graph)
    for i in range(n):
        lab = graph.nodes[i][LABEL] if labelled else None
        x[i, index.get(lab, len(vocab))] = 1.0
    return x


def collate(graphs: Sequence[nx.Graph], vocab: Sequence[str] = ()) -> GraphBatch:
    """Batch graphs into one :class:`GraphBatch` (our own batching, no data loader).

    Examples
    --------
    >>> import networkx as nx
    >>> b = collate([nx.path_graph(3), nx.cycle_graph(4)])
    >>> b.x.shape, b.edge_index.shape, b.num_graphs
    (torch.Size([7, 1]), torch.Size([2, 12]), 2)
    """
    if isinstance(graphs, nx.Graph) or not isinstance(graphs, (list, tuple)):
        raise TypeError(f"graphs must be a list of networkx graphs, got {type(graphs).__name__}")
    if isinstance(vocab, str) or not isinstance(vocab, (list, tuple)):
        raise TypeError(f"vocab must be a sequence of element labels, got {type(vocab).__name__}")
    graphs = list(graphs)
    if not graphs:
        raise ValueError("graphs: cannot collate an empty list of graphs")
    xs, edges, batch = [], [], []
    offset = 0
    for k, g in enumerate(graphs):
        check_graph(g, f"graphs[{k}]")
        n = g.number_of_nodes()
        xs.append(node_features(g, vocab))
        if g.number_of_edges():
            e = torch.tensor(list(g.edges), dtype=torch.long).T + offset
            edges.append(torch.cat([e, e.flip(0)], dim=1))
        batch.append(torch.full((n,), k, dtype=torch.long))
        offset += n
    edge_index = torch.cat(edges, dim=1) if edges else torch.zeros(2, 0, dtype=torch.long)
    return GraphBatch(torch.cat(xs), edge_index, torch.cat(batch), len(graphs))


def _mlp(dim_in: int, dim: int) -> nn.Sequential:
    return nn.Sequential(nn.Linear(dim_in, dim), nn.ReLU(), nn.Linear(dim, dim))


class GINEncoder(nn.Module):
    """``num_layers`` GIN layers: ``h' = MLP((1 + eps) h + sum_{w ~ v} h_w)``.

    Parameters
    ----------
    in_dim : int
        Input features ``F``.
    dim : int
        Hidden width ``d``.
    num_layers : int
        GIN layers ``L``.
    """

    def __init__(self, in_dim: int, dim: int, num_layers: int) -> None:
        super().__init__()
        self.inp = nn.Linear(in_dim, dim)
        self.convs = nn.ModuleList(GINConv(_mlp(dim, dim)) for _ in range(num_layers))

    def forward(self, x: torch.Tensor, edge_index: torch.Tensor) -> torch.Tensor:
        """Node embeddings ``(N, d)`` by sparse message passing."""
        h = self.inp(x)
        for conv in self.convs:
            h = torch.relu(conv(h, edge_index))
        return h

    def dense(self, x: torch.Tensor, adj: torch.Tensor) -> torch.Tensor:
        """The same map on a dense, possibly continuous adjacency ``adj`` of shape (n, n)."""
        h = self.inp(x)
        for conv in self.convs:
            # GINConv: nn((1 + eps) * x_i + sum_j A_ij x_j), with real-valued A_ij here.
            h = torch.relu(conv.nn((1.0 + conv.eps) * h + adj @ h))
        return h


class NSGMModel(nn.Module):
    """Neural subgraph matcher: GIN encoders and the order-embedding score of Eq. (1).

    Parameters
    ----------
    vocab : tuple of str
        Node labels with their own feature column (others share one); ``()`` for
        unlabelled graphs.
    dim : int
        Hidden and embedding width ``d``.
    num_layers : int
        GIN layers.
    seed : int
        Seed of the initial weights.

    Examples
    --------
    >>> import networkx as nx
    >>> model = NSGMModel(dim=8)
    >>> model.score([nx.path_graph(3)], [nx.cycle_graph(5)]).shape
    torch.Size([1])
    """

    def __init__(
        self, vocab: tuple[str, ...] = (), *, dim: int = 64, num_layers: int = 3, seed: int = 0
    ) -> None:
        super().__init__()
        check_int(dim, "dim", low=1)
        check_int(num_layers, "num_layers", low=1)
        self.vocab = tuple(str(v) for v in vocab)
        gen = make_generator(seed)
        self.encoder = GINEncoder(len(self.vocab) + 1, dim, num_layers)
        self.head = _mlp(dim, dim)
        self.threshold = nn.Parameter(torch.tensor(1.0))
        # Every weight from the seeded generator (biases zero), never from torch's global
        # generator: the model is the same whatever ran before it.
        with torch.no_grad():
            for p in self.parameters():
                if p.dim() > 1:
                    p.copy_(torch.randn(p.shape, generator=gen) * (1.0 / p.shape[1]) ** 0.5)
                elif p.dim() == 1:
                    p.zero_()

    def _pool(self, h: torch.Tensor, batch: torch.Tensor, num_graphs: int) -> torch.Tensor:
        z = self.head(h)  # (N, d)
        out = torch.zeros(num_graphs, z.shape[1], dtype=z.dtype, device=z.device)
        return out.index_add(0, batch, z)  # (B, d): sum pooling

    def embed(self, batch: GraphBatch) -> torch.Tensor:
        """Graph embeddings ``z``, shape ``(B, d)``, in the model's dtype and device (the
        batch's features are cast to them)."""
        p = self.threshold
        h = self.encoder(batch.x.to(device=p.device, dtype=p.dtype),
                         batch.edge_index.to(p.device))  # fmt: skip
        return self._pool(h, batch.batch.to(p.device), batch.num_graphs)

    def embed_dense(self, x: torch.Tensor, adj: torch.Tensor) -> torch.Tensor:
        """``z`` of shape ``(..., d)`` from features ``(n, F)`` and adjacencies ``(..., n, n)``
        (both cast to the model's dtype and device; gradients flow back to ``adj``)."""
        p = self.threshold
        h = self.encoder.dense(x.to(p.device, p.dtype), adj.to(p.device, p.dtype))
        return self.head(h).sum(-2)

    @staticmethod
    def energy(z_query: torch.Tensor, z_corpus: torch.Tensor) -> torch.Tensor:
        """Eq. (1): ``E = ||relu(z_Q - z_G)||^2`` along the last axis."""
        return torch.relu(z_query - z_corpus).pow(2).sum(-1)

    def score(self, queries: Sequence[nx.Graph], corpora: Sequence[nx.Graph]) -> torch.Tensor:
        """``s(Q_k, G_k) = -E`` for aligned lists of queries and corpus graphs, shape (B,)."""
        if len(queries) != len(corpora):
            raise ValueError(
                f"queries, corpora: lengths differ ({len(queries)} vs {len(corpora)})"
            )
        pairs = check_pairs(list(zip(queries, corpora, strict=True)), "pairs")
        zq = self.embed(collate([q for q, _ in pairs], self.vocab))
        zc = self.embed(collate([c for _, c in pairs], self.vocab))
        return -self.energy(zq, zc)

    def logit(self, score: torch.Tensor) -> torch.Tensor:
        """Relevance logit ``t + s = t - E``."""
        return self.threshold + score


@dataclass(frozen=True)
class TrainResult:
    """Outcome of :func:`train_matcher`.

    Attributes
    ----------
    model : NSGMModel
        The trained matcher (in eval mode).
    train_accuracy : float
        Pairwise accuracy (``E < t`` vs the label) on the training pairs.
    losses : tuple of float
        Mean loss per epoch.
    """

    model: NSGMModel
    train_accuracy: float
    losses: tuple[float, ...]


def _sub_embed(model: NSGMModel, batch: GraphBatch, idx: torch.Tensor) -> torch.Tensor:
    """Embeddings of the graphs ``idx`` of ``batch`` (in that order), by one forward."""
    keep = torch.zeros(batch.num_graphs, dtype=torch.bool)
    keep[idx] = True
    node_keep = keep[batch.batch]
    new_id = torch.full((batch.num_graphs,), -1, dtype=torch.long)
    new_id[idx] = torch.arange(len(idx))
    node_new = torch.full((batch.x.shape[0],), -1, dtype=torch.long)
    node_new[node_keep] = torch.arange(int(node_keep.sum()))
    e = batch.edge_index
    e_keep = node_keep[e[0]]
    sub = GraphBatch(
        batch.x[node_keep], node_new[e[:, e_keep]], new_id[batch.batch[node_keep]], len(idx)
    )
    return model.embed(sub)


def train_matcher(
    pairs: Sequence[tuple[nx.Graph, nx.Graph]],
    labels: Sequence[bool] | np.ndarray,
    *,
    vocab: tuple[str, ...] = (),
    dim: int = 64,
    num_layers: int = 3,
    num_epochs: int = 60,
    batch_size: int = 128,
    lr: float = 3e-3,
    seed: int = 0,
) -> TrainResult:
    """Train an :class:`NSGMModel` by logistic loss on the logit ``t - E``.

    Parameters
    ----------
    pairs : sequence of (networkx.Graph, networkx.Graph)
        Training (query, corpus) pairs.
    labels : sequence of bool, length len(pairs)
        Their solver labels ``y``.
    vocab, dim, num_layers : see :class:`NSGMModel`.
    num_epochs, batch_size, lr : int, int, float
        Adam epochs over shuffled mini-batches.
    seed : int
        Seed of the weights and the shuffling.
    """
    pairs = check_pairs(pairs, "pairs")
    y = np.asarray(labels)
    if y.shape != (len(pairs),) or y.dtype != bool:
        raise ValueError(f"labels: expected {len(pairs)} booleans, got shape {y.shape}")
    check_int(num_epochs, "num_epochs", low=1)
    check_int(batch_size, "batch_size", low=1)
    if not np.isfinite(lr) or lr <= 0:
        raise ValueError(f"lr: must be a positive number, got {lr}")
    model = NSGMModel(vocab, dim=dim, num_layers=num_layers, seed=seed)
    gen = make_generator(seed + 1)
    qb = collate([q for q, _ in pairs], model.vocab)
    cb = collate([c for _, c in pairs], model.vocab)
    target = torch.as_tensor(y, dtype=torch.float32)
    opt = torch.optim.Adam(model.parameters(), lr=lr)
    losses = []
    n = len(pairs)
    for _ in range(num_epochs):
        model.train()
        perm = torch.randperm(n, generator=gen)
        total = 0.0
        # Embed every graph once per epoch (they are tiny), then step on mini-batches
        # of pairs, each through its own forward of just its graphs.
        for start in range(0, n, batch_size):
            idx = perm[start : start + batch_size]
            zq, zc = _sub_embed(model, qb, idx), _sub_embed(model, cb, idx)
            logit = model.logit(-model.energy(zq, zc))
            loss = nn.functional.binary_cross_entropy_with_logits(logit, target[idx])
            opt.zero_grad()
            loss.backward()
            opt.step()
            total += float(loss.detach()) * len(idx)
        losses.append(total / n)
    model.eval()
    with torch.no_grad():
        pred = model.logit(-model.energy(model.embed(qb), model.embed(cb))) > 0
    acc = float((pred.numpy() == y).mean())
    return TrainResult(model=model, train_accuracy=acc, losses=tuple(losses))
