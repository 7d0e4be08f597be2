"""Bad input raises clear errors naming the argument."""

from __future__ import annotations

import networkx as nx
import numpy as np
import pytest

from neurips26.papers.seagram import (
    SEAGRAM,
    NSGMModel,
    SolverCounter,
    collate,
    flip_pair,
    greedy_attack,
    is_subgraph,
    make_retrieval_set,
    molecule_graph,
    plant,
    random_attack,
    retrieval_metrics,
    safe_by_rule,
    solver_greedy,
    synthetic_query,
    train_matcher,
)


def _loop():
    g = nx.path_graph(3)
    g.add_edge(1, 1)
    return g


def _half_labelled():
    g = nx.path_graph(3)
    g.nodes[0]["label"] = "C"
    return g


def _labelled(n):
    g = nx.path_graph(n)
    nx.set_node_attributes(g, dict.fromkeys(g, "C"), "label")
    return g


@pytest.mark.parametrize(
    ("query", "corpus", "exc", "match"),
    [
        (_loop(), nx.path_graph(4), ValueError, "query: 1 self-loop"),
        (nx.path_graph(2), _loop(), ValueError, "corpus: 1 self-loop"),
        (nx.Graph(), nx.path_graph(3), ValueError, "query: the graph is empty"),
        (nx.path_graph(2), nx.Graph(), ValueError, "corpus: the graph is empty"),
        (nx.DiGraph([(0, 1)]), nx.path_graph(3), TypeError, "query: directed"),
        (nx.path_graph(2), nx.MultiGraph([(0, 1)]), TypeError, "corpus: multigraphs"),
        (_labelled(2), nx.path_graph(3), ValueError, "mismatched labels"),
        (_half_labelled(), _labelled(4), ValueError, "query: 1 of 3 nodes"),
        (nx.relabel_nodes(nx.path_graph(2), {0: "a", 1: "b"}), nx.path_graph(3), ValueError,
         "query: nodes must be the integers"),
        ([(0, 1)], nx.path_graph(3), TypeError, "query: expected a networkx.Graph"),
    ],
)
def test_bad_graphs(query, corpus, exc, match):
    with pytest.raises(exc, match=match):
        is_subgraph(query, corpus)
    with pytest.raises(exc, match=match):
        greedy_attack(NSGMModel(dim=4), query, corpus, label=True, budget=1)


def test_bad_budget_and_label():
    model = NSGMModel(dim=4)
    q, g = nx.path_graph(2), nx.path_graph(4)
    with pytest.raises(ValueError, match="budget: must be >= 0"):
        greedy_attack(model, q, g, label=True, budget=-1)
    with pytest.raises(TypeError, match="label: expected a bool"):
        greedy_attack(model, q, g, label=1, budget=1)
    with pytest.raises(TypeError, match="model: expected an NSGMModel"):
        greedy_attack("model", q, g, label=True, budget=1)
    with pytest.raises(ValueError, match="pool_size"):
        greedy_attack(model, q, g, label=True, budget=1, pool_size=0)
    with pytest.raises(TypeError, match="solver: expected a SolverCounter"):
        solver_greedy(model, q, g, label=True, budget=1, solver=None)
    with pytest.raises(TypeError, match="rng"):
        random_attack(model, q, g, label=True, budget=1, solver=SolverCounter(), rng=0)
    with pytest.raises(ValueError, match="budget: must be >= 0"):
        random_attack(model, q, g, label=True, budget=-2, solver=SolverCounter(),
                      rng=np.random.default_rng(0))


@pytest.mark.parametrize(
    ("kwargs", "exc", "match"),
    [
        ({"budget": -1}, ValueError, "budget: must be >= 0"),
        ({"tau": 0.0}, ValueError, r"tau: must lie in \(0, 1\)"),
        ({"tau": 1.5}, ValueError, r"tau: must lie in \(0, 1\)"),
        ({"tau": float("nan")}, ValueError, "tau"),
        ({"max_solver_calls": 10, "init_labels": 20}, ValueError,
         "max_solver_calls: 10 is smaller than init_labels"),
        ({"strategy": "bald"}, ValueError, "strategy: 'bald' is not one of"),
        ({"pool_size": 0}, ValueError, "pool_size"),
        ({"lr": -1.0}, ValueError, "lr"),
    ],
)
def test_seagram_bad_parameters(kwargs, exc, match):
    pairs = [(nx.path_graph(2), nx.path_graph(4))]
    with pytest.raises(exc, match=match):
        SEAGRAM(NSGMModel(dim=4), **kwargs).fit(pairs, [True])


def test_seagram_bad_fit_inputs():
    atk = SEAGRAM(NSGMModel(dim=4), init_labels=2, max_solver_calls=4)
    with pytest.raises(ValueError, match="pairs: the list of"):
        atk.fit([])
    with pytest.raises(TypeError, match=r"pairs\[0\]"):
        atk.fit([nx.path_graph(2)])
    with pytest.raises(ValueError, match="labels: expected 1 booleans"):
        atk.fit([(nx.path_graph(2), nx.path_graph(4))], [True, False])
    with pytest.raises(TypeError, match="target_model"):
        SEAGRAM(None).fit([(nx.path_graph(2), nx.path_graph(4))], [True])
    with pytest.raises(RuntimeError, match="not fitted"):
        atk.attack(nx.path_graph(2), nx.path_graph(4), label=True)


def test_other_helpers_reject_bad_input():
    with pytest.raises(ValueError, match="u, v: a flip needs two distinct nodes"):
        flip_pair(nx.path_graph(3), 1, 1)
    with pytest.raises(ValueError, match="v: must be <= 2"):
        flip_pair(nx.path_graph(3), 0, 7)
    with pytest.raises(TypeError, match="is_edge"):
        safe_by_rule(True, "yes")
    with pytest.raises(ValueError, match="smiles"):
        molecule_graph("")
    with pytest.raises(ValueError, match="family"):
        synthetic_query("blob", 5, np.random.default_rng(0))
    with pytest.raises(ValueError, match="query: 8 nodes do not fit"):
        plant(nx.path_graph(8), nx.path_graph(4), np.random.default_rng(0))
    with pytest.raises(ValueError, match="graphs: cannot collate an empty"):
        collate([])
    with pytest.raises(ValueError, match="queries: the list of queries is empty"):
        make_retrieval_set([], lambda r: nx.path_graph(5), num_corpus=4,
                           rng=np.random.default_rng(0))
    with pytest.raises(ValueError, match="labels: expected 1 booleans"):
        train_matcher([(nx.path_graph(2), nx.path_graph(3))], np.array([1.0]))
    with pytest.raises(ValueError, match="max_calls"):
        SolverCounter(max_calls=-1)


def test_retrieval_metrics_bad_input():
    with pytest.raises(ValueError, match="scores, labels"):
        retrieval_metrics(np.zeros((2, 3)), np.zeros((2, 2), dtype=bool))
    with pytest.raises(ValueError, match="scores: must be finite"):
        retrieval_metrics(np.array([[np.nan, 1.0]]), np.array([[True, False]]))
    with pytest.raises(TypeError, match="labels: expected booleans"):
        retrieval_metrics(np.zeros((1, 2)), np.zeros((1, 2)))
    with pytest.raises(ValueError, match="scores, labels"):
        retrieval_metrics(np.zeros((0, 0)), np.zeros((0, 0), dtype=bool))
