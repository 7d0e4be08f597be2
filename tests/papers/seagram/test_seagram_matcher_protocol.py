"""A user's own matcher is attacked through the documented protocol (DenseMatcher)."""

import networkx as nx
import pytest
import torch

from neurips26.papers.seagram import (
    SEAGRAM,
    DenseMatcher,
    NSGMModel,
    greedy_attack,
    unconstrained_greedy,
)
from neurips26.papers.seagram.model import node_features


class EdgeCount:
    """Relevant when G has as many edges as Q: any flip moves the score, by a known amount."""

    def score_dense(self, query, corpus, adj):
        return -((adj.sum((-1, -2)) / 2 - query.number_of_edges()) ** 2)


class Wrapped:
    """Our NSGMModel behind the protocol only: the attack must give the same flips."""

    def __init__(self, model):
        self.model = model

    def score_dense(self, query, corpus, adj):
        m = self.model
        aq = torch.as_tensor(nx.to_numpy_array(query, nodelist=range(len(query))),
                             dtype=torch.float32)
        zq = m.embed_dense(node_features(query, m.vocab), aq)
        return -m.energy(zq, m.embed_dense(node_features(corpus, m.vocab), adj))


def test_a_user_matcher_is_attacked_in_the_direction_of_its_label():
    q, g = nx.path_graph(3), nx.path_graph(3)  # equal edge counts: score 0, the maximum
    res = greedy_attack(EdgeCount(), q, g, label=True, budget=2)
    assert res.score_before == 0.0 and res.score_after < 0.0  # pushed toward "no match"
    assert len(res.flips) >= 1
    res0 = unconstrained_greedy(EdgeCount(), q, nx.cycle_graph(5), label=False, budget=3)
    assert res0.score_after > res0.score_before  # pushed toward "match"


def test_the_protocol_gives_the_same_attack_as_our_model_itself():
    torch.manual_seed(0)
    model = NSGMModel(dim=8)
    q, g = nx.path_graph(4), nx.cycle_graph(7)
    ours = greedy_attack(model, q, g, label=True, budget=3)
    theirs = greedy_attack(Wrapped(model), q, g, label=True, budget=3)
    assert theirs.flips == ours.flips
    assert theirs.score_after == pytest.approx(ours.score_after, rel=1e-5, abs=1e-6)


def test_objects_without_the_protocol_are_refused_with_its_name():
    assert isinstance(EdgeCount(), DenseMatcher) and not isinstance(object(), DenseMatcher)
    with pytest.raises(TypeError, match="score_dense"):
        greedy_attack(object(), nx.path_graph(3), nx.path_graph(3), label=True, budget=1)
    with pytest.raises(TypeError, match=r"target_model.*score_dense"):
        SEAGRAM(object()).fit([(nx.path_graph(3), nx.path_graph(4))])

    class WrongShape:
        def score_dense(self, query, corpus, adj):
            return adj.sum()  # one number for a batch

    with pytest.raises(ValueError, match="score_dense"):
        greedy_attack(WrongShape(), nx.path_graph(3), nx.cycle_graph(5), label=True, budget=2)
