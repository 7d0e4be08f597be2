"""SEAGRAM: a solver-efficient, label-preserving edge-flip attack on subgraph matchers.

Neural subgraph matchers rank corpus graphs ``G`` by a score ``s(Q, G)`` meant to say
whether the query ``Q`` is a subgraph of ``G``. An attack that flips node pairs of ``G``
must keep the true relevance ``y(Q, G)``, and one flip can change it; checking needs an
exact (NP-hard) subgraph solver. SEAGRAM learns which node pairs are *non-critical*
(their flip keeps the label), so that the test-time attack, a greedy search over the
classifier's safe pairs, calls no solver at all; active learning picks which training
flips the solver labels, so that few calls are spent on training too. Monotonicity rules
decide, exactly and for free, the flips that can never be critical (insertions when
``y = 1``, deletions when ``y = 0``).

Deviations from the paper
-------------------------
- Only the abstract is available. The classifier (query-aware GIN over ``G`` and the
  pair features of Eq. (2)), the active-learning criterion (uncertainty sampling, or
  disagreement of a committee of three classifiers), the greedy search with a saliency
  pre-ranking (Eq. (3)) and the monotonicity shortcuts are our reading of it (the
  spec's).
- The classifier is retrained from its previous weights after each round (warm start)
  for a fixed number of full-batch Adam steps.
- The attack is given the true label ``y(Q, G)`` (retrieval benchmarks carry it); it is
  what lets it run without any solver call.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import networkx as nx
import numpy as np
import torch
from sklearn.base import BaseEstimator
from torch import nn

from ._checks import check_bool, check_graph, check_int, check_open_unit, check_pair, check_pairs
from .attack import AttackResult, check_matcher, greedy_attack
from .classifier import CriticalityClassifier, FlipSet, PairBatch, pair_batch
from .model import NSGMModel
from .solver import SolverCounter, is_critical

__all__ = ["SEAGRAM", "FitRound", "hard_flips", "label_flips"]

STRATEGIES = ("uncertainty", "committee", "random")


def hard_flips(corpus: nx.Graph, label: bool) -> tuple[np.ndarray, np.ndarray]:
    """The pairs the rules cannot decide: edges when ``y = 1``, non-edges when ``y = 0``.

    Returns
    -------
    u, v : numpy.ndarray of int
        With ``u < v``.

    Examples
    --------
    >>> import networkx as nx
    >>> hard_flips(nx.path_graph(3), True)
    (array([0, 1]), array([1, 2]))
    """
    label = check_bool(label, "label")
    corpus = check_graph(corpus, "corpus")
    n = corpus.number_of_nodes()
    adj = nx.to_numpy_array(corpus, nodelist=range(n)) > 0
    iu, iv = np.triu_indices(n, k=1)
    keep = adj[iu, iv] == label
    return iu[keep], iv[keep]


def _sample_triples(
    instances: Sequence[tuple[nx.Graph, nx.Graph, bool]], num: int, rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``num`` distinct hard (instance, u, v) triples drawn uniformly (fewer if short)."""
    inst, us, vs = [], [], []
    for i, (_, g, y) in enumerate(instances):
        u, v = hard_flips(g, y)
        inst.append(np.full(len(u), i))
        us.append(u)
        vs.append(v)
    inst_a, u_a, v_a = np.concatenate(inst), np.concatenate(us), np.concatenate(vs)
    pick = rng.permutation(len(inst_a))[:num]
    return inst_a[pick], u_a[pick], v_a[pick]


def label_flips(
    pairs: Sequence[tuple[nx.Graph, nx.Graph]],
    labels: Sequence[bool] | np.ndarray,
    *,
    num: int,
    rng: np.random.Generator,
    solver: SolverCounter,
) -> FlipSet:
    """``num`` random hard flips of the given pairs, labelled by the solver.

    Parameters
    ----------
    pairs : sequence of (networkx.Graph, networkx.Graph)
        (query, corpus) pairs.
    labels : sequence of bool
        Their labels ``y``.
    num : int
        Flips to draw (fewer if the pairs hold fewer hard flips).
    rng : numpy.random.Generator
        Source of the draw.
    solver : SolverCounter
        Charged one call per flip.
    """
    pairs = check_pairs(pairs, "pairs")
    y = np.asarray(labels)
    if y.shape != (len(pairs),) or y.dtype != bool:
        raise ValueError(f"labels: expected {len(pairs)} booleans, got shape {y.shape}")
    check_int(num, "num", low=1)
    instances = tuple((q, g, bool(lab)) for (q, g), lab in zip(pairs, y, strict=True))
    inst, u, v = _sample_triples(instances, num, rng)
    crit = [
        is_critical(instances[i][0], instances[i][1], a, b, label=instances[i][2], solver=solver)
        for i, a, b in zip(inst.tolist(), u.tolist(), v.tolist(), strict=True)
    ]
    return FlipSet(instances, inst, u, v, ~np.asarray(crit, dtype=bool))


@dataclass(frozen=True)
class FitRound:
    """The classifier after one round of active learning.

    Attributes
    ----------
    num_labels : int
        Solver-labelled flips it was trained on.
    precision : float
        On the held-out set: share of predicted non-critical flips (p >= 0.5) that are
        non-critical (NaN without a held-out set; 0 when nothing is predicted).
    coverage : float
        Share of the held-out non-critical flips predicted non-critical (recall).
    precision_at_tau : float
        The same precision for p >= tau, the attack's threshold.
    r_precision : float
        Precision of the ``R`` flips ranked most likely non-critical, ``R`` = the number
        of non-critical held-out flips (threshold-free; equals recall at that rank).
    """

    num_labels: int
    precision: float
    coverage: float
    precision_at_tau: float
    r_precision: float


class SEAGRAM(BaseEstimator):
    """Solver-efficient adversarial graph attack (see the module docstring).

    Parameters
    ----------
    target_model : NSGMModel
        The matcher under attack.
    budget : int
        ``b``, the most flips per corpus graph.
    tau : float
        Probability of non-criticality a flip needs to be a candidate, in (0, 1).
    pool_size : int
        ``m``, flips scored exactly per greedy step after the saliency pre-ranking.
    init_labels : int
        ``n_0``, randomly chosen flips labelled before active learning.
    per_round : int
        ``k``, flips labelled per round.
    max_solver_calls : int
        Solver budget of :meth:`fit` (at least ``init_labels``).
    strategy : str
        ``"uncertainty"`` (p closest to 0.5), ``"committee"`` (largest disagreement of
        three classifiers) or ``"random"`` (the baseline without active learning).
    num_candidates : int
        Size of the unlabelled pool that active learning selects from.
    dim, num_layers : int
        Classifier width and GIN depth.
    num_steps : int
        Full-batch Adam steps per round.
    lr : float
        Adam's learning rate.
    seed : int
        Seed of the pool, the initial labels and the classifier weights.

    Attributes
    ----------
    classifiers_ : list of CriticalityClassifier
        One, or three for ``"committee"``.
    solver_calls_fit_ : int
        Solver calls :meth:`fit` made.
    solver_seconds_fit_ : float
        Seconds :meth:`fit` spent in the solver.
    history_ : tuple of FitRound
        The classifier after each round.

    Examples
    --------
    >>> import networkx as nx
    >>> model = NSGMModel(dim=8)
    >>> pairs = [(nx.path_graph(3), nx.cycle_graph(6)), (nx.cycle_graph(3), nx.path_graph(6))]
    >>> atk = SEAGRAM(model, init_labels=4, per_round=2, max_solver_calls=8, num_steps=5)
    >>> atk = atk.fit(pairs, [True, False])
    >>> atk.solver_calls_fit_
    8
    >>> atk.attack(*pairs[0], label=True, solver=SolverCounter(max_calls=0)).solver_calls
    0
    """

    def __init__(
        self,
        target_model: NSGMModel | None = None,
        *,
        budget: int = 3,
        tau: float = 0.9,
        pool_size: int = 64,
        init_labels: int = 200,
        per_round: int = 100,
        max_solver_calls: int = 2000,
        strategy: str = "uncertainty",
        num_candidates: int = 4000,
        dim: int = 32,
        num_layers: int = 3,
        num_steps: int = 40,
        lr: float = 5e-3,
        seed: int = 0,
    ) -> None:
        self.target_model = target_model
        self.budget = budget
        self.tau = tau
        self.pool_size = pool_size
        self.init_labels = init_labels
        self.per_round = per_round
        self.max_solver_calls = max_solver_calls
        self.strategy = strategy
        self.num_candidates = num_candidates
        self.dim = dim
        self.num_layers = num_layers
        self.num_steps = num_steps
        self.lr = lr
        self.seed = seed

    # -- checks ---------------------------------------------------------------------
    def _check_params(self) -> None:
        check_matcher(self.target_model, "target_model")
        check_int(self.budget, "budget", low=0)
        check_open_unit(self.tau, "tau")
        check_int(self.pool_size, "pool_size", low=1)
        check_int(self.init_labels, "init_labels", low=1)
        check_int(self.per_round, "per_round", low=1)
        check_int(self.max_solver_calls, "max_solver_calls", low=0)
        if self.max_solver_calls < self.init_labels:
            raise ValueError(
                f"max_solver_calls: {self.max_solver_calls} is smaller than init_labels "
                f"({self.init_labels})"
            )
        if self.strategy not in STRATEGIES:
            raise ValueError(f"strategy: {self.strategy!r} is not one of {STRATEGIES}")
        check_int(self.num_candidates, "num_candidates", low=1)
        check_int(self.num_steps, "num_steps", low=1)
        if not (isinstance(self.lr, (int, float)) and np.isfinite(self.lr) and self.lr > 0):
            raise ValueError(f"lr: must be a positive number, got {self.lr!r}")

    # -- training -------------------------------------------------------------------
    def _train(self, members, optims, batch: PairBatch, noncrit, labelled: np.ndarray) -> None:
        idx = torch.as_tensor(np.flatnonzero(labelled))
        target = torch.as_tensor(noncrit[labelled], dtype=torch.float32)
        # Class-balanced weights: critical flips are rare, and they are what matters.
        frac = float(target.mean()) if len(target) else 0.5
        frac = min(max(frac, 1e-3), 1 - 1e-3)
        weight = torch.where(target > 0, 0.5 / frac, 0.5 / (1 - frac))
        for clf, opt in zip(members, optims, strict=True):
            clf.train()
            for _ in range(self.num_steps):
                loss = nn.functional.binary_cross_entropy_with_logits(
                    clf(batch)[idx], target, weight=weight
                )
                opt.zero_grad()
                loss.backward()
                opt.step()
            clf.eval()

    @staticmethod
    def _proba(batch: PairBatch, members) -> np.ndarray:
        """``(K, P)`` probabilities of non-criticality by each committee member."""
        with torch.no_grad():
            return np.stack([torch.sigmoid(c(batch)).numpy() for c in members])

    def _evaluate(self, members, eval_batch, truth, num_labels: int) -> FitRound:
        if eval_batch is None:
            nan = float("nan")
            return FitRound(num_labels, nan, nan, nan, nan)
        p = self._proba(eval_batch, members).mean(0)

        def precision(mask: np.ndarray) -> float:
            return float(truth[mask].mean()) if mask.any() else 0.0

        coverage = float((p >= 0.5)[truth].mean()) if truth.any() else 0.0
        r = int(truth.sum())
        top = np.argsort(-p, kind="stable")[:r]
        r_prec = float(truth[top].mean()) if r else 0.0
        return FitRound(num_labels, precision(p >= 0.5), coverage, precision(p >= self.tau),
                        r_prec)

    def fit(
        self,
        pairs: Sequence[tuple[nx.Graph, nx.Graph]],
        labels: Sequence[bool] | np.ndarray | None = None,
        *,
        eval_set: FlipSet | None = None,
    ) -> SEAGRAM:
        """Learn the non-criticality classifier by active learning under the solver budget.

        Parameters
        ----------
        pairs : sequence of (networkx.Graph, networkx.Graph)
            Training (query, corpus) pairs.
        labels : sequence of bool, optional
            Their known labels ``y``; computed with the solver (and charged to the
            budget) when omitted.
        eval_set : FlipSet, optional
            Held-out solver-labelled flips; each round's precision is recorded in
            ``history_``.

        Returns
        -------
        SEAGRAM
            ``self``, fitted.
        """
        self._check_params()
        pairs = check_pairs(pairs, "pairs")
        if eval_set is not None and not isinstance(eval_set, FlipSet):
            raise TypeError(f"eval_set: expected a FlipSet, got {type(eval_set).__name__}")
        solver = SolverCounter(max_calls=self.max_solver_calls)
        if labels is None:
            y = np.asarray([solver(q, g) for q, g in pairs], dtype=bool)
        else:
            y = np.asarray(labels)
            if y.shape != (len(pairs),) or y.dtype != bool:
                raise ValueError(f"labels: expected {len(pairs)} booleans, got shape {y.shape}")
        rng = np.random.default_rng(self.seed)
        instances = tuple((q, g, bool(lab)) for (q, g), lab in zip(pairs, y, strict=True))
        inst, u, v = _sample_triples(instances, self.num_candidates, rng)
        if len(inst) == 0:
            raise ValueError("pairs: no flip is left undecided by the monotonicity rules")
        vocab = tuple(getattr(self.target_model, "vocab", ()))  # a user's matcher may have none
        batch = pair_batch(FlipSet(instances, inst, u, v, np.zeros(len(inst), dtype=bool)), vocab)
        eval_batch = None if eval_set is None else pair_batch(eval_set, vocab)
        known = np.zeros(len(inst), dtype=bool)
        noncrit = np.zeros(len(inst), dtype=bool)

        def label(idx: np.ndarray) -> None:
            for k in idx.tolist():
                q, g, lab = instances[inst[k]]
                noncrit[k] = not is_critical(q, g, int(u[k]), int(v[k]), label=lab,
                                             solver=solver)
                known[k] = True

        budget_left = self.max_solver_calls - solver.calls
        if budget_left < 1:
            raise ValueError("max_solver_calls: no solver calls are left to label any flip")
        label(rng.permutation(len(inst))[: min(self.init_labels, budget_left)])
        members = [
            CriticalityClassifier(vocab, dim=self.dim, num_layers=self.num_layers,
                                  seed=self.seed * 7 + j)
            for j in range(3 if self.strategy == "committee" else 1)
        ]
        optims = [torch.optim.Adam(m.parameters(), lr=self.lr) for m in members]
        history = []
        while True:
            self._train(members, optims, batch, noncrit, known)
            truth = None if eval_set is None else eval_set.noncritical
            history.append(self._evaluate(members, eval_batch, truth, int(known.sum())))
            left = self.max_solver_calls - solver.calls
            unknown = np.flatnonzero(~known)
            if left < 1 or len(unknown) == 0:
                break
            k = min(self.per_round, left, len(unknown))
            if self.strategy == "random":
                pick = rng.choice(unknown, size=k, replace=False)
            else:
                p = self._proba(batch, members)[:, unknown]  # (K, U)
                if self.strategy == "uncertainty":
                    order = np.argsort(np.abs(p.mean(0) - 0.5), kind="stable")
                else:  # committee: largest variance of the members' probabilities
                    order = np.argsort(-p.var(0), kind="stable")
                pick = unknown[order[:k]]
            label(np.asarray(pick))
        self.classifiers_ = members
        self.solver_calls_fit_ = solver.calls
        self.solver_seconds_fit_ = solver.seconds
        self.history_ = tuple(history)
        return self

    # -- attack ---------------------------------------------------------------------
    def predict_noncritical(self, query: nx.Graph, corpus: nx.Graph, label: bool) -> np.ndarray:
        """``P(non-critical)`` of every pair, with the exact rules applied (safe = 1).

        Returns
        -------
        numpy.ndarray, shape (n, n)
            Symmetric; the diagonal is 0.
        """
        if not hasattr(self, "classifiers_"):
            raise RuntimeError("SEAGRAM is not fitted; call fit(pairs) first")
        q, c = check_pair(query, corpus)
        label = check_bool(label, "label")
        p = np.mean([clf.predict_proba(q, c, label) for clf in self.classifiers_], axis=0)
        n = c.number_of_nodes()
        adj = nx.to_numpy_array(c, nodelist=range(n)) > 0
        safe = adj != label  # the rules: insert when y = 1, delete when y = 0
        np.fill_diagonal(safe, False)
        return np.where(safe, 1.0, p)

    def attack(
        self,
        query: nx.Graph,
        corpus: nx.Graph,
        *,
        label: bool,
        solver: SolverCounter | None = None,
    ) -> AttackResult:
        """Greedy flips among the pairs predicted non-critical; no solver call.

        Parameters
        ----------
        query, corpus : networkx.Graph
            ``Q`` and ``G``.
        label : bool
            The known ``y(Q, G)``.
        solver : SolverCounter, optional
            Never called; pass ``SolverCounter(max_calls=0)`` to assert it. The result's
            ``solver_calls`` is the counter's increase (0).
        """
        if not hasattr(self, "classifiers_"):
            raise RuntimeError("SEAGRAM is not fitted; call fit(pairs) first")
        self._check_params()
        label = check_bool(label, "label")

        def allowed(graph: nx.Graph) -> np.ndarray:
            return self.predict_noncritical(query, graph, label) >= self.tau

        return greedy_attack(
            self.target_model, query, corpus, label=label, budget=self.budget,
            allowed=allowed, pool_size=self.pool_size, solver=solver,
        )
