"""API tests: the attack budget, no repeated flips, zero solver calls, the fit budget."""

from __future__ import annotations

import networkx as nx
import numpy as np
import pytest
from networkx.algorithms import isomorphism

from neurips26.papers.seagram import (
    SEAGRAM,
    AttackResult,
    NSGMModel,
    SolverBudgetExceeded,
    SolverCounter,
    greedy_attack,
    hard_flips,
    label_flips,
    molecule_graph,
    random_attack,
    solver_greedy,
    train_matcher,
    unconstrained_greedy,
)


@pytest.fixture(scope="module")
def toy():
    rng = np.random.default_rng(0)
    pairs, labels = [], []
    for k in range(16):
        q = nx.cycle_graph(3) if k % 2 else nx.path_graph(4)
        g = nx.gnp_random_graph(9, 0.3, seed=int(rng.integers(2**31)))
        pairs.append((q, g))
        labels.append(bool(nx.algorithms.isomorphism.GraphMatcher(g, q).subgraph_is_monomorphic()))
    model = train_matcher(pairs, np.array(labels), dim=8, num_epochs=3).model
    return model, pairs, np.array(labels)


def _diff(a: nx.Graph, b: nx.Graph) -> set:
    ea = {tuple(sorted(e)) for e in a.edges}
    eb = {tuple(sorted(e)) for e in b.edges}
    return ea ^ eb


def test_solver_counter_counts_and_enforces_budget():
    s = SolverCounter(max_calls=2)
    s(nx.path_graph(2), nx.path_graph(3))
    s(nx.path_graph(2), nx.path_graph(3))
    assert s.calls == 2 and s.seconds >= 0 and s.remaining == 0
    with pytest.raises(SolverBudgetExceeded):
        s(nx.path_graph(2), nx.path_graph(3))


@pytest.mark.parametrize("budget", [0, 1, 3])
def test_greedy_respects_budget_and_never_repeats(toy, budget):
    model, pairs, labels = toy
    for (q, g), y in zip(pairs[:6], labels[:6], strict=True):
        res = greedy_attack(model, q, g, label=bool(y), budget=budget, pool_size=8)
        assert isinstance(res, AttackResult)
        assert len(res.flips) <= budget
        assert len(set(res.flips)) == len(res.flips)
        assert _diff(g, res.perturbed) == set(res.flips)
        assert res.margin_change >= 0
        assert g.number_of_edges() == nx.Graph(g).number_of_edges()  # input untouched


def test_seagram_fit_budget_and_zero_calls_at_attack(toy, monkeypatch):
    model, pairs, labels = toy
    atk = SEAGRAM(model, budget=2, init_labels=10, per_round=5, max_solver_calls=25,
                  num_candidates=60, num_steps=3, dim=8)
    atk.fit(pairs, labels)
    assert atk.solver_calls_fit_ == 25
    assert [h.num_labels for h in atk.history_] == [10, 15, 20, 25]

    def boom(*args, **kwargs):
        raise AssertionError("the solver was called during the attack")

    monkeypatch.setattr(isomorphism.GraphMatcher, "subgraph_is_monomorphic", boom)
    for (q, g), y in zip(pairs, labels, strict=True):
        res = atk.attack(q, g, label=bool(y), solver=SolverCounter(max_calls=0))
        assert res.solver_calls == 0
        assert len(res.flips) <= 2


def test_seagram_without_labels_charges_the_solver(toy):
    model, pairs, _ = toy
    atk = SEAGRAM(model, init_labels=4, per_round=4, max_solver_calls=len(pairs) + 4,
                  num_steps=2, dim=8).fit(pairs)
    assert atk.solver_calls_fit_ == len(pairs) + 4


@pytest.mark.parametrize("strategy", ["uncertainty", "committee", "random"])
def test_strategies_record_history(toy, strategy):
    model, pairs, labels = toy
    ev = label_flips(pairs, labels, num=20, rng=np.random.default_rng(2), solver=SolverCounter())
    atk = SEAGRAM(model, strategy=strategy, init_labels=6, per_round=6, max_solver_calls=18,
                  num_steps=2, dim=8, num_candidates=40).fit(pairs, labels, eval_set=ev)
    assert len(atk.classifiers_) == (3 if strategy == "committee" else 1)
    for h in atk.history_:
        assert 0.0 <= h.precision <= 1.0 and 0.0 <= h.coverage <= 1.0
    p = atk.predict_noncritical(*pairs[0], label=bool(labels[0]))
    n = pairs[0][1].number_of_nodes()
    assert p.shape == (n, n) and np.allclose(p, p.T) and (np.diag(p) == 0).all()


def test_predict_noncritical_applies_the_rules(toy):
    model, pairs, labels = toy
    atk = SEAGRAM(model, init_labels=4, per_round=4, max_solver_calls=8, num_steps=1,
                  dim=8).fit(pairs, labels)
    q, g = pairs[0]
    y = bool(labels[0])
    p = atk.predict_noncritical(q, g, label=y)
    adj = nx.to_numpy_array(g) > 0
    off = ~np.eye(len(adj), dtype=bool)
    assert (p[(adj != y) & off] == 1.0).all()


def test_oracle_and_random_keep_labels(toy):
    model, pairs, labels = toy
    rng = np.random.default_rng(0)
    for (q, g), y in zip(pairs, labels, strict=True):
        s1 = SolverCounter()
        res = solver_greedy(model, q, g, label=bool(y), budget=3, solver=s1)
        assert SolverCounter()(q, res.perturbed) == bool(y)
        assert res.solver_calls == s1.calls
        res = random_attack(model, q, g, label=bool(y), budget=3, solver=SolverCounter(), rng=rng)
        assert SolverCounter()(q, res.perturbed) == bool(y)
        res = unconstrained_greedy(model, q, g, label=bool(y), budget=3)
        assert res.solver_calls == 0


def test_query_larger_than_corpus_does_not_crash(toy):
    model, *_ = toy
    res = greedy_attack(model, nx.path_graph(8), nx.path_graph(4), label=False, budget=2)
    assert len(res.flips) <= 2


def test_hard_flips_are_edges_for_relevant_pairs():
    g = nx.cycle_graph(5)
    u, v = hard_flips(g, True)
    assert len(u) == 5 and all(g.has_edge(a, b) for a, b in zip(u, v, strict=True))
    u, v = hard_flips(g, False)
    assert len(u) == 5 and not any(g.has_edge(a, b) for a, b in zip(u, v, strict=True))


def test_molecule_graph_elements():
    g = molecule_graph("c1ccccc1O")
    assert g.number_of_nodes() == 7 and g.number_of_edges() == 7
    assert sorted(d["label"] for _, d in g.nodes(data=True)).count("C") == 6


def test_model_scores_shape():
    model = NSGMModel(dim=8)
    s = model.score([nx.path_graph(3)] * 2, [nx.cycle_graph(5), nx.path_graph(2)])
    assert s.shape == (2,) and (s <= 0).all()


def test_models_do_not_depend_on_the_global_generator():
    import torch

    from neurips26.papers.seagram import CriticalityClassifier

    torch.manual_seed(1)
    a = NSGMModel(("C",), dim=8, seed=5).state_dict()
    c1 = CriticalityClassifier(dim=8, seed=5).state_dict()
    torch.manual_seed(2)
    torch.rand(10)
    b = NSGMModel(("C",), dim=8, seed=5).state_dict()
    c2 = CriticalityClassifier(dim=8, seed=5).state_dict()
    for k in a:
        assert torch.equal(a[k], b[k]), k
    for k in c1:
        assert torch.equal(c1[k], c2[k]), k
