"""Reproduction of SEAGRAM on real molecular graphs (and the spec's synthetic families).

Data. Queries are FreeSolv molecules with 5-8 heavy atoms, corpus graphs ChEMBL
molecules with 15-25 (element-labelled heavy-atom graphs); each query's corpus is
balanced to 1:1 relevance by planting copies of the query (``dataset="synthetic"``
uses motif queries and Erdos-Renyi / Barabasi-Albert corpora instead). Training
queries and corpus molecules are disjoint from the test ones. Labels are the solver's.

Pipeline. (1) Oracle checks: VF2 against brute force on small graphs, the monotonicity
rules on random rule-safe flips, planted copies. (2) The target matcher (GIN, order
embeddings) is trained on the training split; its test accuracy is a check. (3) For each
of ``num_seeds`` seeds, SEAGRAM is fitted by active learning (uncertainty sampling) and
by random sampling at the same solver budget, each round's classifier evaluated on a
held-out set of solver-labelled flips balanced to equal numbers of critical and
non-critical ones (on the natural distribution about 95% of the hard flips are
non-critical, so a constant "non-critical" predictor would pass a 90% precision bar);
the label count of claim 4 is that of the first round whose R-precision (precision of
the R flips ranked most likely non-critical, R = the number of non-critical ones) reaches
0.9, censored at the fit budget. A thresholded precision is not used: a classifier that
calls almost nothing non-critical has high precision (the first round often does).
(4) Every test pair is attacked by SEAGRAM (with a solver counter that forbids calls),
SEAGRAM-random, the solver-verified greedy oracle, the unconstrained greedy attack and
random label-preserving flips; afterwards (evaluation only) the solver labels every
perturbed graph, and MAP is computed with those true labels.

Units: the clean matcher and the oracle checks (the data, checks, held-out flips and
fit pairs are drawn in ``setup`` from the run's one generator, in the order the run
always drew them), one unit per seed of SEAGRAM's fit (both sampling strategies, then
every test pair attacked), and the baseline attacks.

Controls. The MAP drop is measured the same way for random label-preserving flips at
the same budget (if random flips also lower MAP by 0.10, the drop is not the attack's
doing); the oracle fraction for the random flips' drop against the oracle's; label
preservation for the unconstrained greedy attack, which flips the edges that move the
matcher most with no safety classifier (if it also keeps 95% of labels, most flips are
non-critical anyway and preservation is not the method's doing). Active learning and
the random margin are comparisons against named baselines, their controls.

What does not reproduce at the small tier (the verdicts and numbers are in the store):

- Label preservation (>= 95%). The classifier's final R-precision on the balanced
  held-out hard flips (``final_precision_al``, a diagnostic) stays below what tau = 0.9
  promises; why the chosen flips carry the errors is not yet diagnosed. A small GIN
  classifier trained on at most ``max_solver_calls`` labels is our inference of the
  paper's; the paper's classifier and budget are unknown.
- Active learning saving labels (<= 0.7x). Within the fit budget neither uncertainty
  nor random sampling reaches an R-precision of 0.9 (``final_precision_al``,
  ``final_precision_random``), so both are censored at the budget and the ratio is 1.
- The target matcher's accuracy (>= 85%, a check) is a little short on unseen queries;
  the attack claims are measured against the matcher we have.

Intervals: MAP drops and their ratios carry a percentile bootstrap over test queries
(per-query drops averaged over seeds), as does the matcher's test accuracy (one trained
matcher: its training noise is not in the interval), and so does label preservation
(each query's share of attacked pairs that kept their label, averaged over seeds: the
pairs of one query share its graph, so they are not independent draws); the label-count
ratio of active learning a Student-t interval over seeds on the log scale.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import networkx as nx
import numpy as np

from neurips26.common.cache import cache_key, cached_module
from neurips26.common.experiment import param
from neurips26.experiment import (
    Estimate,
    Experiment,
    Table,
    bootstrap_interval,
    ratio_t_interval,
)

from . import (
    SEAGRAM,
    FlipSet,
    NSGMModel,
    RetrievalSet,
    SolverCounter,
    flip_pair,
    is_subgraph,
    is_subgraph_bruteforce,
    label_flips,
    make_retrieval_set,
    molecule_pools,
    random_attack,
    retrieval_metrics,
    safe_by_rule,
    solver_greedy,
    synthetic_corpus_graph,
    synthetic_query,
    train_matcher,
    unconstrained_greedy,
)

VOCAB = ("C", "N", "O", "S", "F", "Cl", "Br")
PRECISION_TARGET = 0.9
RANDOM_FACTOR = 2.0


@dataclass(frozen=True)
class Config:
    """Settings of the reproduction (see ``neurips26 info seagram``)."""

    seed: int = 0
    dataset: str = param("molecules", help="molecules (FreeSolv/ChEMBL) or synthetic",
                         choices=("molecules", "synthetic"))
    num_train_queries: int = param(200, help="queries of the matcher's training split", min=2)
    num_train_corpus: int = param(16, help="corpus graphs per training query", min=2)
    num_queries: int = param(48, help="test queries", min=2)
    num_corpus: int = param(16, help="corpus graphs per test query", min=2)
    matcher_epochs: int = param(50, help="epochs of the target matcher", min=1)
    matcher_dim: int = param(64, help="width of the target matcher", min=4)
    budget: int = param(3, help="b, flips per corpus graph", min=0)
    tau: float = param(0.9, help="non-criticality threshold of candidates", min=1e-6, max=0.999)
    pool_size: int = param(64, help="m, flips scored exactly per greedy step", min=1)
    init_labels: int = param(200, help="n0, initial random solver labels", min=1)
    per_round: int = param(100, help="k, solver labels per active-learning round", min=1)
    max_solver_calls: int = param(1000, help="solver budget of fit", min=1)
    fit_pairs: int = param(240, help="training pairs SEAGRAM's pool is drawn from", min=1)
    num_candidates: int = param(3000, help="unlabelled pool of active learning", min=1)
    clf_steps: int = param(60, help="Adam steps per active-learning round", min=1)
    eval_flips: int = param(3000, help="held-out hard flips drawn (then balanced)", min=10)
    num_seeds: int = param(2, help="seeds of SEAGRAM's fit (uncertainty bars)", min=1)
    bruteforce_pairs: int = param(300, help="random small pairs checked against brute force",
                                  min=1)


TIERS = {
    "smoke": Config(num_train_queries=12, num_train_corpus=6, num_queries=3, num_corpus=6,
                    matcher_epochs=5, matcher_dim=16, budget=1, init_labels=20, per_round=10,
                    max_solver_calls=40, fit_pairs=40, num_candidates=200, clf_steps=5,
                    eval_flips=200, num_seeds=1, bruteforce_pairs=40, pool_size=16),
    "small": Config(),
    "paper": Config(num_train_queries=240, num_train_corpus=40, num_queries=30, num_corpus=40,
                    matcher_epochs=100, init_labels=200, per_round=100, max_solver_calls=2000,
                    fit_pairs=800, num_candidates=8000, clf_steps=100, eval_flips=8000,
                    num_seeds=5),
}

METRICS: tuple[str, ...] = (
    "bruteforce_disagreements", "rule_violations", "planted_not_relevant",
    "matcher_test_accuracy", "map_clean",
    "map_seagram", "map_drop", "map_drop_oracle", "drop_ratio_oracle",
    "drop_ratio_oracle_random", "map_drop_random", "drop_ratio_random", "random_margin",
    "map_drop_seagram_randsample", "map_drop_unconstrained",
    "label_preserved", "label_preserved_unconstrained",
    "label_preserved_randsample",
    "attack_solver_calls", "oracle_attack_solver_calls", "random_attack_solver_calls",
    "mean_flips_seagram", "mean_flips_oracle",
    "fit_solver_calls", "labels_to_precision_al", "labels_to_precision_random",
    "al_label_ratio", "final_precision_al", "final_precision_random",
    "seagram_attack_s", "oracle_attack_s", "attack_time_ratio",
)
VOLATILE = ("seagram_attack_s", "oracle_attack_s", "attack_time_ratio")


# -- data -------------------------------------------------------------------------------
def _splits(cfg: Config, rng: np.random.Generator) -> tuple[RetrievalSet, RetrievalSet]:
    if cfg.dataset == "molecules":
        queries, corpus = molecule_pools()
        qp, cp = rng.permutation(len(queries)), rng.permutation(len(corpus))
        n_tr = min(cfg.num_train_queries, len(queries) - cfg.num_queries)
        c_tr = [corpus[i] for i in cp[: len(cp) * 2 // 3]]
        c_te = [corpus[i] for i in cp[len(cp) * 2 // 3:]]
        q_tr = [queries[i] for i in qp[:n_tr]]
        q_te = [queries[i] for i in qp[n_tr : n_tr + cfg.num_queries]]

        def draw_tr(r):
            return c_tr[int(r.integers(len(c_tr)))]

        def draw_te(r):
            return c_te[int(r.integers(len(c_te)))]
    else:
        fams = ("path", "cycle", "star", "tree", "dense")

        def q_draw(k):
            return synthetic_query(fams[k % len(fams)], int(rng.integers(5, 9)), rng)

        q_tr = [q_draw(k) for k in range(cfg.num_train_queries)]
        q_te = [q_draw(k) for k in range(cfg.num_queries)]

        def draw_tr(r):
            return synthetic_corpus_graph(("er", "ba")[int(r.integers(2))],
                                          int(r.integers(15, 26)), r)

        draw_te = draw_tr
    train = make_retrieval_set(q_tr, draw_tr, num_corpus=cfg.num_train_corpus, rng=rng,
                               max_draws=60)
    test = make_retrieval_set(q_te, draw_te, num_corpus=cfg.num_corpus, rng=rng, max_draws=60)
    return train, test


# -- oracle checks ----------------------------------------------------------------------
def _oracle_checks(cfg: Config, test: RetrievalSet, rng: np.random.Generator) -> dict:
    disagree = 0
    for _ in range(cfg.bruteforce_pairs):
        nq, nc = int(rng.integers(2, 5)), int(rng.integers(3, 7))
        q = nx.gnp_random_graph(nq, 0.6, seed=int(rng.integers(2**31)))
        c = nx.gnp_random_graph(nc, 0.5, seed=int(rng.integers(2**31)))
        if rng.random() < 0.5:  # labelled variant
            for g in (q, c):
                nx.set_node_attributes(g, {i: "AB"[int(rng.integers(2))] for i in g}, "label")
        disagree += is_subgraph(q, c) != is_subgraph_bruteforce(q, c)
    violations = 0
    for (q, g), y in zip(test.pairs()[:60], test.flat_labels()[:60], strict=True):
        n = g.number_of_nodes()
        for _ in range(3):
            u, v = (int(t) for t in rng.choice(n, size=2, replace=False))
            if safe_by_rule(bool(y), g.has_edge(u, v)):
                violations += is_subgraph(q, flip_pair(g, u, v)) != bool(y)
    planted_bad = sum(
        not is_subgraph(q, g)
        for i, q in enumerate(test.queries)
        for j, g in enumerate(test.corpora[i])
        if test.planted[i, j]
    )
    return {"bruteforce_disagreements": disagree, "rule_violations": violations,
            "planted_not_relevant": planted_bad}


# -- attacks ----------------------------------------------------------------------------
@dataclass(frozen=True)
class AttackRun:
    """Scores after an attack on every test pair, and the solver's post-hoc labels."""

    scores: np.ndarray  # (n_q, n_c)
    labels: np.ndarray  # (n_q, n_c) true labels of the perturbed graphs
    solver_calls: int
    mean_flips: float
    seconds: float


def _attack_all(test: RetrievalSet, attack) -> AttackRun:
    scores = np.zeros(test.labels.shape)
    labels = np.zeros(test.labels.shape, dtype=bool)
    calls, flips, secs = 0, [], 0.0
    for i, q in enumerate(test.queries):
        for j, g in enumerate(test.corpora[i]):
            start = time.perf_counter()
            res = attack(q, g, bool(test.labels[i, j]))
            secs += time.perf_counter() - start
            scores[i, j] = res.score_after
            calls += res.solver_calls
            flips.append(len(res.flips))
            labels[i, j] = is_subgraph(q, res.perturbed)  # evaluation only
    return AttackRun(scores, labels, calls, float(np.mean(flips)), secs)


def _balanced(flips: FlipSet, rng: np.random.Generator) -> FlipSet:
    crit = np.flatnonzero(~flips.noncritical)
    safe = np.flatnonzero(flips.noncritical)
    k = min(len(crit), len(safe))
    keep = np.sort(np.r_[rng.choice(crit, k, replace=False), rng.choice(safe, k, replace=False)])
    return FlipSet(flips.instances, flips.instance[keep], flips.u[keep], flips.v[keep],
                   flips.noncritical[keep])


def _labels_to_precision(history, budget: int) -> tuple[int, float]:
    """Labels of the first round whose held-out R-precision reaches the target (censored
    at the fit's budget when none does), and the final round's R-precision."""
    for h in history:
        if h.r_precision >= PRECISION_TARGET:
            return h.num_labels, history[-1].r_precision
    return budget, history[-1].r_precision


def _matcher(cfg: Config, train: RetrievalSet, vocab: tuple[str, ...]):
    """The trained target matcher, from the common model cache when present (the data
    and the training are deterministic in the fields of the key)."""
    fields = ("dataset", "num_train_queries", "num_train_corpus", "num_queries", "num_corpus",
              "matcher_epochs", "matcher_dim")
    key = cache_key("seagram_matcher", {f: getattr(cfg, f) for f in fields}, cfg.seed,
                    modules=("neurips26.papers.seagram",))

    def train_into(model: NSGMModel) -> None:
        trained = train_matcher(train.pairs(), train.flat_labels(), vocab=vocab,
                                dim=cfg.matcher_dim, num_epochs=cfg.matcher_epochs,
                                seed=cfg.seed).model
        model.load_state_dict(trained.state_dict())

    return cached_module("seagram_matcher", key,
                         lambda: NSGMModel(vocab, dim=cfg.matcher_dim, seed=cfg.seed), train_into)


def _drops(table) -> dict[str, np.ndarray]:
    """Per-query AP drops (queries whose relevant set emptied are skipped by nanmean): the
    SEAGRAM attacks averaged over seeds, the baselines from their one run."""
    clean = table.where(kind="clean_query")
    ap_clean = clean.column("ap_clean")
    sg = table.where(kind="query")
    seeds = sg.unique("seed")

    def seed_mean(col):
        per = np.stack([sg.where(seed=s).column(col) for s in seeds])
        return np.nanmean(per, axis=0)

    base = table.where(kind="baseline_query")
    return {"sg": ap_clean - seed_mean("ap"), "rs": ap_clean - seed_mean("ap_rand"),
            "or": ap_clean - base.column("ap_or"), "rd": ap_clean - base.column("ap_rd"),
            "un": ap_clean - base.column("ap_un"),
            # per-query shares of attacked pairs whose true label survived
            "kept": seed_mean("kept"), "kept_un": base.column("kept_un")}


def _ratio(a, b) -> float:
    den = np.nanmean(b)
    return float(np.nanmean(a) / den) if den > 0 else float("inf")


def _margin(a, b) -> float:
    return float(np.nanmean(a) - RANDOM_FACTOR * np.nanmean(b))


def _query_bootstrap(drops: dict, stat, keys: tuple[str, ...], seed: int) -> Estimate:
    """Percentile bootstrap over test queries of ``stat`` of the per-query drops."""
    # the unit column is named as the interval's method names it ("over queries")
    rows = Table({"queries": i, **{k: float(drops[k][i]) for k in keys}}
                 for i in range(len(drops[keys[0]])))
    return rows.bootstrap(lambda t: stat(*(t.column(k) for k in keys)), unit="queries",
                          num_resamples=1000, seed=seed)


class SeagramExperiment(Experiment):
    """Units: the oracle checks and the clean matcher (drawn in setup, from the run's one
    generator), one per seed of SEAGRAM's fit (both sampling strategies, then every test
    pair attacked), and the baseline attacks."""

    Config, TIERS, METRICS, VOLATILE = Config, TIERS, METRICS, VOLATILE
    UNIT_TABLE = None

    def setup(self, cfg: Config, ctx):
        import torch

        torch.set_num_threads(1)
        rng = np.random.default_rng(cfg.seed)
        train, test = _splits(cfg, rng)
        checks = _oracle_checks(cfg, test, rng)
        vocab = VOCAB if cfg.dataset == "molecules" else ()
        matcher, cache_hit = _matcher(cfg, train, vocab)
        eval_set = _balanced(label_flips(test.pairs(), test.flat_labels(), num=cfg.eval_flips,
                                         rng=rng, solver=SolverCounter()), rng)
        pick = rng.permutation(len(train.pairs()))[: cfg.fit_pairs]
        return {"cfg": cfg, "train": train, "test": test, "checks": checks,
                "matcher": matcher, "cache_hit": cache_hit, "eval_set": eval_set,
                "fit_pairs": [train.pairs()[k] for k in pick],
                "fit_labels": train.flat_labels()[pick]}

    def grid(self, cfg: Config):
        return [{"part": "clean"}, *({"part": "fit", "seed": k} for k in range(cfg.num_seeds)),
                {"part": "baselines"}]

    def measure(self, unit, st, ctx):
        import torch

        cfg, test, matcher = st["cfg"], st["test"], st["matcher"]
        part = unit["part"]
        if part == "clean":
            with torch.no_grad():
                s_clean = matcher.score([q for q, _ in test.pairs()],
                                        [g for _, g in test.pairs()])
                logit = matcher.logit(s_clean).numpy()
            s_clean = s_clean.numpy().reshape(test.labels.shape)
            correct = ((logit > 0) == test.flat_labels()).reshape(test.labels.shape)
            # a query's pairs share that query: resample queries (rows), not pairs
            acc = bootstrap_interval(correct.astype(float), np.mean, num_resamples=1000,
                                     seed=cfg.seed, unit="test queries")
            clean = retrieval_metrics(s_clean, test.labels)
            return [{"kind": "clean", **st["checks"], "map_clean": clean["map"],
                     "num_train_queries": len(st["train"].queries),
                     "num_test_queries": len(test.queries), "eval_flips": len(st["eval_set"]),
                     "cache_hit": bool(st["cache_hit"])},
                    {"kind": "matcher", "metric": "matcher_test_accuracy", **acc.to_dict()},
                    *({"kind": "clean_query", "query": i, "ap_clean": float(a)}
                      for i, a in enumerate(clean["ap"]))]
        if part == "fit":
            return self._fit(unit["seed"], st)
        return self._baselines(st)

    @staticmethod
    def _fit(k: int, st) -> list[dict]:
        cfg, test = st["cfg"], st["test"]
        s = cfg.seed * 1000 + k
        common = dict(budget=cfg.budget, tau=cfg.tau, pool_size=cfg.pool_size,
                      init_labels=cfg.init_labels, per_round=cfg.per_round,
                      max_solver_calls=cfg.max_solver_calls, num_candidates=cfg.num_candidates,
                      num_steps=cfg.clf_steps, seed=s)
        fitted = {}
        for strategy in ("uncertainty", "random"):
            atk = SEAGRAM(st["matcher"], strategy=strategy, **common)
            fitted[strategy] = atk.fit(st["fit_pairs"], st["fit_labels"],
                                       eval_set=st["eval_set"])
        al, rs = fitted["uncertainty"], fitted["random"]
        row = {"kind": "seed", "fit_calls": al.solver_calls_fit_}
        for name, atk in (("al", al), ("rs", rs)):
            row[f"need_{name}"], row[f"prec_{name}"] = _labels_to_precision(
                atk.history_, cfg.max_solver_calls)

        def sg(q, g, y, atk=al):
            return atk.attack(q, g, label=y, solver=SolverCounter(max_calls=0))

        run_al = _attack_all(test, sg)
        run_rs = _attack_all(test, lambda q, g, y, atk=rs: atk.attack(q, g, label=y))
        ap_al = retrieval_metrics(run_al.scores, run_al.labels)["ap"]
        ap_rs = retrieval_metrics(run_rs.scores, run_rs.labels)["ap"]
        row.update(kept_rand=int((run_rs.labels == test.labels).sum()), pairs=test.labels.size,
                   calls=run_al.solver_calls, secs=run_al.seconds, flips=run_al.mean_flips)
        curve = [{"kind": "curve", "strategy": name, "num_labels": h.num_labels,
                  "r_precision": h.r_precision, "precision": h.precision,
                  "precision_at_tau": h.precision_at_tau, "coverage": h.coverage}
                 for name, atk in (("uncertainty", al), ("random", rs)) for h in atk.history_]
        kept = (run_al.labels == test.labels).mean(axis=1)  # (n_q,): per query
        return [row, *curve, *({"kind": "query", "query": i, "ap": float(a), "ap_rand": float(b),
                                "kept": float(k)}
                               for i, (a, b, k) in enumerate(zip(ap_al, ap_rs, kept,
                                                                 strict=True)))]

    @staticmethod
    def _baselines(st) -> list[dict]:
        cfg, test, matcher = st["cfg"], st["test"], st["matcher"]
        oracle_solver = SolverCounter()
        run_or = _attack_all(test, lambda q, g, y: solver_greedy(
            matcher, q, g, label=y, budget=cfg.budget, solver=oracle_solver))
        run_un = _attack_all(test, lambda q, g, y: unconstrained_greedy(
            matcher, q, g, label=y, budget=cfg.budget, pool_size=cfg.pool_size))
        rand_rng = np.random.default_rng(cfg.seed + 17)
        rand_solver = SolverCounter()
        run_rd = _attack_all(test, lambda q, g, y: random_attack(
            matcher, q, g, label=y, budget=cfg.budget, solver=rand_solver, rng=rand_rng))
        ap_or = retrieval_metrics(run_or.scores, run_or.labels)["ap"]
        ap_rd = retrieval_metrics(run_rd.scores, run_rd.labels)["ap"]
        ap_un = retrieval_metrics(run_un.scores, test.labels)["ap"]  # the ORIGINAL labels
        row = {"kind": "baseline", "oracle_calls": run_or.solver_calls,
               "oracle_flips": run_or.mean_flips, "oracle_secs": run_or.seconds,
               "random_calls": run_rd.solver_calls, "pairs": test.labels.size,
               "kept_oracle": int((run_or.labels == test.labels).sum()),
               "kept_random": int((run_rd.labels == test.labels).sum())}
        kept_un = (run_un.labels == test.labels).mean(axis=1)  # (n_q,): per query
        return [row, *({"kind": "baseline_query", "query": i, "ap_or": float(a),
                        "ap_rd": float(b), "ap_un": float(c), "kept_un": float(k)}
                       for i, (a, b, c, k) in enumerate(zip(ap_or, ap_rd, ap_un, kept_un,
                                                            strict=True)))]

    def summarize(self, table, cfg: Config, ctx):
        clean = table.where(kind="clean").rows[0]
        m: dict = {k: clean[k] for k in ("bruteforce_disagreements", "rule_violations",
                                         "planted_not_relevant", "map_clean")}
        m["matcher_test_accuracy"] = Estimate.from_dict(table.where(kind="matcher").rows[0])
        d = _drops(table)
        seeds = table.where(kind="seed")
        base = table.where(kind="baseline").rows[0]
        bseed = cfg.seed + 99

        def nanmean(k):
            return _query_bootstrap(d, lambda a: float(np.nanmean(a)), (k,), bseed)

        need_al, need_rs = seeds.column("need_al"), seeds.column("need_rs")
        secs = float(np.mean(seeds.column("secs")))
        m.update(
            map_seagram=float(np.nanmean(table.where(kind="clean_query").column("ap_clean")
                                         - d["sg"])),
            map_drop=nanmean("sg"),
            map_drop_oracle=float(np.nanmean(d["or"])),
            drop_ratio_oracle=_query_bootstrap(d, _ratio, ("sg", "or"), bseed),
            drop_ratio_oracle_random=_query_bootstrap(d, _ratio, ("rd", "or"), bseed),
            map_drop_random=nanmean("rd"),
            drop_ratio_random=_ratio(d["sg"], d["rd"]),
            # Claim 5 as a margin (drop_SEAGRAM - 2 drop_random >= 0): the ratio's bootstrap
            # explodes when the random baseline's drop is near zero.
            random_margin=_query_bootstrap(d, _margin, ("sg", "rd"), bseed),
            map_drop_seagram_randsample=float(np.nanmean(d["rs"])),
            map_drop_unconstrained=float(np.nanmean(d["un"])),
            # pairs of one query share its graph and the matcher's view of it: the interval
            # resamples queries (each query's share averaged over seeds)
            label_preserved=nanmean("kept"),
            label_preserved_unconstrained=nanmean("kept_un"),
            label_preserved_randsample=float(np.mean(seeds.column("kept_rand")
                                                     / seeds.column("pairs"))),
            attack_solver_calls=int(seeds.column("calls").sum()),
            oracle_attack_solver_calls=base["oracle_calls"],
            random_attack_solver_calls=base["random_calls"],
            mean_flips_seagram=float(np.mean(seeds.column("flips"))),
            mean_flips_oracle=base["oracle_flips"],
            fit_solver_calls=int(np.mean(seeds.column("fit_calls"))),
            labels_to_precision_al=float(need_al.mean()),
            labels_to_precision_random=float(need_rs.mean()),
            al_label_ratio=ratio_t_interval(need_al, need_rs),
            final_precision_al=float(np.mean(seeds.column("prec_al"))),
            final_precision_random=float(np.mean(seeds.column("prec_rs"))),
            seagram_attack_s=secs,
            oracle_attack_s=base["oracle_secs"],
            attack_time_ratio=float(secs / max(base["oracle_secs"], 1e-12)),
        )
        return m

    def tables(self, table, summary, cfg: Config):
        val = {k: (v.value if isinstance(v, Estimate) else v) for k, v in summary.items()}
        d = _drops(table)
        base = table.where(kind="baseline").rows[0]
        last = table.where(kind="seed").rows[-1]["seed"]  # the last seed's learning curves
        curve = [{k: r[k] for k in ("strategy", "num_labels", "r_precision", "precision",
                                    "precision_at_tau", "coverage")}
                 for r in table.where(kind="curve", seed=last)]
        attacks = [
            {"attack": "SEAGRAM", "map_drop": val["map_drop"],
             "label_preserved": val["label_preserved"],
             "attack_solver_calls": val["attack_solver_calls"]},
            {"attack": "SEAGRAM (random sampling)", "map_drop": float(np.nanmean(d["rs"])),
             "label_preserved": val["label_preserved_randsample"], "attack_solver_calls": 0},
            {"attack": "solver-verified greedy", "map_drop": float(np.nanmean(d["or"])),
             "label_preserved": base["kept_oracle"] / base["pairs"],
             "attack_solver_calls": base["oracle_calls"]},
            {"attack": "unconstrained greedy", "map_drop": float(np.nanmean(d["un"])),
             "label_preserved": val["label_preserved_unconstrained"],
             "attack_solver_calls": 0},
            {"attack": "random label-preserving", "map_drop": float(np.nanmean(d["rd"])),
             "label_preserved": base["kept_random"] / base["pairs"],
             "attack_solver_calls": base["random_calls"]},
        ]
        return {"learning_curve": curve, "attacks": attacks}

    def notes(self, table, summary, cfg: Config):
        c = table.where(kind="clean").rows[0]
        return (
            f"dataset {cfg.dataset}: {c['num_train_queries']} x {cfg.num_train_corpus} "
            f"training pairs, {c['num_test_queries']} x {cfg.num_corpus} test pairs; held-out "
            f"flips {c['eval_flips']} (balanced critical / non-critical)",
            f"target matcher {'from the model cache' if c['cache_hit'] else 'trained in this run'}"
            "; the graphs are tiny and every tensor stays on CPU",
            "unconstrained greedy's MAP uses the ORIGINAL labels (it is not a valid attack); the "
            "others use the solver's labels of the perturbed graphs",
        )


EXPERIMENT = SeagramExperiment()
run = EXPERIMENT.run
