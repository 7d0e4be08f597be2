"""Oracle tests: VF2 vs brute force, the monotonicity rules, planting, AP vs scikit-learn,
the dense GIN path vs torch-geometric's GINConv."""

from __future__ import annotations

import networkx as nx
import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.metrics import average_precision_score

from neurips26.papers.seagram import (
    NSGMModel,
    average_precision,
    collate,
    flip_pair,
    is_critical,
    is_subgraph,
    is_subgraph_bruteforce,
    plant,
    retrieval_metrics,
    safe_by_rule,
)
from neurips26.papers.seagram.model import node_features


def _random_graph(rng, n, p, labels=None):
    g = nx.gnp_random_graph(n, p, seed=int(rng.integers(2**31)))
    if labels:
        nx.set_node_attributes(g, {i: labels[int(rng.integers(len(labels)))] for i in g}, "label")
    return g


def test_vf2_agrees_with_bruteforce_on_300_pairs():
    rng = np.random.default_rng(0)
    found = {True: 0, False: 0}
    for k in range(300):
        labels = "AB" if k % 2 else None
        q = _random_graph(rng, int(rng.integers(1, 6)), 0.5, labels)
        c = _random_graph(rng, int(rng.integers(1, 7)), 0.5, labels)
        expected = is_subgraph_bruteforce(q, c)
        assert is_subgraph(q, c) == expected, (list(q.edges), list(c.edges))
        found[expected] += 1
    assert min(found.values()) > 30  # both answers are exercised


def test_monomorphism_is_not_induced():
    # A path on 3 nodes is a (non-induced) subgraph of a triangle, not an induced one.
    assert is_subgraph(nx.path_graph(3), nx.complete_graph(3))
    assert not is_subgraph(nx.complete_graph(3), nx.path_graph(3))


def test_labels_must_match():
    q = nx.path_graph(2)
    c = nx.path_graph(2)
    nx.set_node_attributes(q, {0: "C", 1: "O"}, "label")
    nx.set_node_attributes(c, {0: "C", 1: "C"}, "label")
    assert not is_subgraph(q, c)
    c.nodes[1]["label"] = "O"
    assert is_subgraph(q, c)


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 10_000), nq=st.integers(2, 5), nc=st.integers(3, 8))
def test_rule_safe_flips_keep_the_label(seed, nq, nc):
    rng = np.random.default_rng(seed)
    q = _random_graph(rng, nq, 0.6)
    c = _random_graph(rng, nc, 0.4)
    y = is_subgraph(q, c)
    for u in range(nc):
        for v in range(u + 1, nc):
            if safe_by_rule(y, c.has_edge(u, v)):
                assert is_subgraph(q, flip_pair(c, u, v)) == y
                assert not is_critical(q, c, u, v, label=y)


def test_the_hard_cases_can_be_critical():
    # Deleting an edge of the only copy destroys the match; inserting the missing one
    # creates it.
    q = nx.cycle_graph(3)
    c = nx.complete_graph(3)
    assert is_critical(q, c, 0, 1, label=True)
    assert is_critical(q, nx.path_graph(3), 0, 2, label=False)


def test_planted_copy_is_relevant_and_its_edges_critical():
    q = nx.cycle_graph(4)
    c = nx.path_graph(10)  # a tree: no cycle anywhere except the planted one
    g = plant(q, c, np.random.default_rng(1))
    assert is_subgraph(q, g)
    cycle = nx.cycle_basis(g)
    assert len(cycle) == 1 and len(cycle[0]) == 4
    ring = cycle[0]
    for a, b in zip(ring, ring[1:] + ring[:1], strict=True):
        assert is_critical(q, g, a, b, label=True)
    # An edge outside the ring is not critical.
    outside = next((a, b) for a, b in g.edges if not (a in ring and b in ring))
    assert not is_critical(q, g, *outside, label=True)


def test_planting_labelled_query():
    q = nx.path_graph(3)
    nx.set_node_attributes(q, {0: "N", 1: "C", 2: "O"}, "label")
    c = nx.path_graph(12)
    nx.set_node_attributes(c, dict.fromkeys(c, "C"), "label")
    assert not is_subgraph(q, c)
    assert is_subgraph(q, plant(q, c, np.random.default_rng(0)))


def test_average_precision_hand_computed_and_sklearn():
    # Ranking: rel, irr, rel, irr -> AP = (1/1 + 2/3) / 2.
    s = np.array([4.0, 3.0, 2.0, 1.0])
    y = np.array([True, False, True, False])
    assert average_precision(s, y) == pytest.approx((1 + 2 / 3) / 2)
    rng = np.random.default_rng(3)
    scores = rng.integers(0, 5, (20, 9)).astype(float)  # many ties
    labels = rng.random((20, 9)) < 0.4
    labels[:, 0] = True
    m = retrieval_metrics(scores, labels)
    ref = [average_precision_score(labels[i], scores[i]) for i in range(20)]
    np.testing.assert_allclose(m["ap"], ref, atol=1e-12)
    assert m["map"] == pytest.approx(np.mean(ref))


def test_dense_gin_path_equals_ginconv():
    rng = np.random.default_rng(0)
    model = NSGMModel(("C", "O"), dim=16, seed=3)
    g = _random_graph(rng, 12, 0.3, "CON")
    b = collate([g], model.vocab)
    with torch.no_grad():
        sparse = model.embed(b)[0]
        adj = torch.as_tensor(nx.to_numpy_array(g, nodelist=range(12)), dtype=torch.float32)
        dense = model.embed_dense(node_features(g, model.vocab), adj)
    torch.testing.assert_close(sparse, dense, rtol=1e-5, atol=1e-4)


def test_batching_matches_one_graph_at_a_time():
    rng = np.random.default_rng(1)
    graphs = [_random_graph(rng, int(n), 0.3) for n in (4, 9, 6)]
    model = NSGMModel(dim=8)
    with torch.no_grad():
        together = model.embed(collate(graphs))
        alone = torch.cat([model.embed(collate([g])) for g in graphs])
    torch.testing.assert_close(together, alone, rtol=1e-5, atol=1e-4)


def test_vectorised_pair_features_match_the_flipset_path():
    from neurips26.papers.seagram import CriticalityClassifier, FlipSet, pair_batch

    rng = np.random.default_rng(4)
    q = _random_graph(rng, 4, 0.7, "CON")
    g = _random_graph(rng, 11, 0.3, "CON")
    clf = CriticalityClassifier(("C", "O", "N"), dim=8, seed=2)
    with torch.no_grad():
        for p in clf.parameters():
            p.add_(0.1)  # non-zero biases, so every feature reaches the output
        fast = clf.predict_proba(q, g, True)
        iu, iv = np.triu_indices(11, k=1)
        data = FlipSet(((q, g, True),), np.zeros(len(iu), dtype=int), iu, iv,
                       np.zeros(len(iu), dtype=bool))
        slow = torch.sigmoid(clf(pair_batch(data, clf.vocab))).numpy()
    np.testing.assert_allclose(fast[iu, iv], slow, rtol=1e-6)
