"""Reproduction of the λ6★ paper's claims on offline benchmarks.

Benchmarks (models × items, several evaluation runs each):

- ``irt``: a 2PL simulation with a ceiling effect and per-run item jitter (known true
  reliability);
- ``imagenet``: benchbench's 112 torchvision models × 1000 ImageNet classes (per-class
  accuracy); runs are binomial resamples of the 50 validation images per class;
- ``digits``: a zoo of ~55 scikit-learn classifiers scored 0/1 on the 899 ``load_digits``
  test images under seeded input perturbations;
- ``mmlu``: benchbench's 98 Open-LLM-Leaderboard submissions × 57 MMLU subjects, a single
  run with K < N (classical λ6 is well-posed there); used for the variance-to-stability
  check and the λ6 / λ6★ comparison only;
- ``fewmodel``: LLM-like binary data from few models, a 3PL simulation (12 models, a
  guessing floor around 0.25, a fifth of the items without signal, log-normal
  discriminations with sd 0.5) with selection claims of its own.

Runs: A selects items and forms cohorts; the other ``num_runs - 1`` runs measure ranking
stability (the mean Kendall tau over every pair of them, restricted to a subset, for the
λ6★ subset and for each random subset alike), and run B measures reliability inside the
cohorts. Each multi-run benchmark is drawn ``num_replicates`` times (a new IRT draw,
ImageNet resample, digits split and zoo; the cheap 3PL simulation
``few_num_replicates`` times); the selection claims read the
replicate means, and the interval of the mean gain is a Student-t interval over the
replicates, so it holds the selection run's own noise and not only that of the random
subsets. The wins are counted over (replicate, budget) pairs, with a Wilson binomial
interval over the pairs.

Tuning apart from judging. The selection setting, the rule (``"strata"``: one item per
difficulty stratum, the one with the largest λ6★ item reliability ``R*_j^2``;
``"redundancy"``; the spec's plain ``"greedy"``) and the duplicates handling (``"keep"``
every item, or ``"collapse"`` to one item per distinct response column), is chosen inside
the run on tuning realisations of the two simulations (``irt`` and ``fewmodel`` at
``Config.tuning_seeds``): the setting with the largest worst-case (over the two
simulations) mean gain over random subsets. The claims' data come from other seeds
(``seed + 7919 r``, offsets 0, 1 and 2 for irt/digits, ImageNet and fewmodel), checked
before the run, and the real tables never enter the choice; the ``tuning`` and ``seeds``
tables and the notes say which seeds tuned and which judged, and ``tune_*_min_gain`` each
candidate's tuning score. An earlier version chose the strata rule after comparing the
rules on realisations that included the small tier's own seeds, and collapsed duplicate
columns; on few-model binary data that collapse weighs the frequent, informative response
patterns as little as the scattered noise patterns (``tune_*_collapse_min_gain`` against
``tune_*_keep_min_gain``). The rules not chosen are reported as context
(``tau_<rule>``, ``*_<rule>_wins``, ``*_<rule>_mean_gain``) but never claimed.

Controls: each selection claim is judged beside the same statistic with a random subset
of the same size (the first random subset drawn for each budget) in place of the λ6★
subset: a rule that passes only as often as a random pick is not evidence. The
population claim's control puts the models into the two cohorts at random (a permutation
of the split run's rows).

Claims at the small tier are computed over the three multi-run benchmarks (``irt``,
``imagenet``, ``digits``), which stand in for the spec's digits / mnist1d / IRT trio
(mnist1d is not installed; the issue asks for a benchbench table instead). A budget larger
than a benchmark's number of non-constant items on run A is skipped for that benchmark.

What reproduces and what does not, and why
------------------------------------------
(The measured values are in the store and the report; this says why.)

- Variance-to-stability mapping: the arcsine prediction from ``rho_{K/2}`` is least
  accurate on the 0/1 IRT data, where the normal-theory mapping is only approximate.
- λ6 ill-posed for K >= N: a property of the estimator (a check). On MMLU (K < N)
  classical λ6 is well-posed and is reported beside λ6★.
- Selection beats random ("on each benchmark"): the difficulty-strata rule beats random
  subsets clearly on the IRT simulation and on ImageNet, and gains little over random
  items on the digits zoo. The two other rules of this run gain little there too
  (``digits_greedy_mean_gain`` and ``digits_redundancy_mean_gain``, the diagnostics of the
  gain claim), so the shortfall is not the choice among these three rules. Why items
  chosen on one digits run do not rank models stably on the others is not yet
  diagnosed for this claim. Our reading: the run-to-run noise is an independent
  perturbation of every test image, so an image's difficulty and its item reliability
  on run A (``R*_j^2``) carry little over to the other runs; the transfer metrics of
  claim smaller_subsets_match (below) measure that carry-over. The gain also swings from one
  realisation of the zoo to the next, and the replicates put that swing into the
  interval (ten at the small tier, enough for
  the gain's interval to decide: it lies below the bar, so on the benchmark with the
  smallest gain the claim does not reproduce rather than passing or failing on one
  draw); the wins claim counts the (replicate, budget) pairs with a positive gain, and
  the pairs lost on digits leave its binomial interval straddling the bar. The item-rest
  top-k baseline is close to λ6★ on every benchmark.
- Few models (``fewmodel``): on 3PL data from 12 models the strata picks with every item
  kept beat random subsets at every budget; the tuning metrics show why the duplicates
  handling matters there (``tune_strata_keep_min_gain`` against
  ``tune_strata_collapse_min_gain``). The simulation's discriminations, guessing floors
  and no-signal share are our choice (the paper's LLM leaderboards are not available
  offline).
- Smaller subsets match a random 200-item subset: the claim counts the benchmarks on
  which a λ6★ subset of at most 100 items reaches the random 200-item stability (each
  benchmark decided on its replicate means), with a percentile bootstrap over the
  replicates, each benchmark's drawn on its own, so a benchmark that reaches the
  reference in only some realisations makes the count uncertain; its control counts the
  same with the random pick in place of the λ6★ subset. The diagnostics locate and
  test the shortfall. ``<bench>_small_subset_gap`` (irt, imagenet, digits) is the
  stability of the λ6★ subset of the largest budget up to 100 minus that of the random
  reference subsets, mean over replicates with a
  Student-t interval (>= 0 where the subset reaches the reference). Two causes are
  tested. (a) On the IRT simulation the 2PL discriminations vary only moderately
  (our choice, log-sd 0.3), so even the most informative 100 items may carry about
  the information of 200 random ones: ``irt_wide_disc_small_subset_gap`` is the same
  gap on the claims' first ``diag_num_replicates`` IRT realisations with the
  discriminations' log-sd set to ``diag_discrimination_sd`` (every other draw the
  same; random subsets from a generator of their own); a gap that turns
  non-negative there while ``irt_small_subset_gap`` is negative supports it. (b) On
  digits the run-to-run noise perturbs every test image independently, so the item
  statistics the strata rule picks by on run A may carry little over to the other
  runs: ``<bench>_difficulty_transfer`` and ``<bench>_item_r2_transfer`` are the
  Spearman correlations, over items, of the item difficulty and of the item
  reliability ``R*_j^2`` between run A and run 1 (mean over replicates, Student-t
  interval); transfer on digits well below that on the IRT simulation and on
  ImageNet supports it.
- Population dependence: the between-model variance shrinks markedly in the higher
  cohort, which lowers its reliability.
"""

from __future__ import annotations

import time
import warnings
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
from scipy import stats

from neurips26.common.experiment import param
from neurips26.common.plotting import figure_png, new_figure
from neurips26.experiment import Estimate, Experiment, Table, binomial_interval
from neurips26.papers.lambda6_star import (
    IllPosedWarning,
    cohort_reliability,
    digits_zoo,
    expected_kendall_tau,
    g_coefficient,
    guttman_lambda6,
    item_rest_correlation,
    lambda6_star,
    lambda6_star_loo,
    load_benchbench,
    ranking_tau,
    resample_runs,
    select_items,
    signal_to_noise,
    simulate_irt,
    split_half_tau,
    variance_components,
)
from neurips26.papers.lambda6_star.reliability import SELECTION_RULES

#: The multi-run benchmarks the selection, subset and cohort claims count over.
CLAIM_BENCHES = ("irt", "imagenet", "digits")
#: Every multi-run benchmark: the claims' three and the few-model 3PL simulation, which
#: has claims of its own.
MULTI_RUN = (*CLAIM_BENCHES, "fewmodel")
#: The simulated benchmarks whose realisations at ``Config.tuning_seeds`` choose the
#: selection setting (the real tables never enter the choice).
TUNING_BENCHES = ("irt", "fewmodel")
#: Duplicates handling of :func:`select_items`.
DUPLICATES = ("keep", "collapse")
#: Seed offset of the few-model simulation from the run's (or the realisation's) seed.
FEWMODEL_SEED_OFFSET = 2
#: The ``bench`` value of the units of the IRT diagnostic with wider discriminations.
DIAG = "_diag_irt_wide"
#: The subset size claim smaller_subsets_match allows (its diagnostics' budget).
SMALL_SUBSET = 100


@dataclass(frozen=True)
class Config:
    """Settings of one reproduction run.

    Attributes
    ----------
    seed : int
    benchmarks : tuple of str
        Any of ``irt``, ``imagenet``, ``digits``, ``mmlu``, ``fewmodel``.
    irt_num_models, irt_num_items : int
        Size of the 2PL simulation.
    few_num_models, few_num_items, few_guessing, few_null_share, few_discrimination_sd
        The few-model 3PL simulation (LLM-like multiple-choice data).
    few_num_replicates : int
        Its realisations (``num_replicates`` for the other multi-run benchmarks).
    imagenet_num_trials : int
        Validation images per class behind each accuracy (binomial resampling).
    digits_noise, digits_shift_prob : float
        Input perturbation of a digits evaluation run.
    budgets : tuple of int
        Selection budgets k.
    reference_budget : int
        Size of the random subset whose tau the λ6★ subsets must reach (claim 4).
    num_random : int
        Random subsets per budget.
    num_runs : int
        Evaluation runs of each multi-run benchmark: items are selected on run A, and a
        subset's ranking stability is its mean Kendall tau over every pair of the other
        ``num_runs - 1`` runs (3 runs: one pair).
    num_replicates : int
        Independent realisations of each multi-run benchmark (a new IRT draw, ImageNet
        resample, digits split and zoo) behind the selection claims: the claims read the
        replicate means, and the interval of the mean gain is a Student-t interval over
        the replicates (it holds the selection run's own noise). 1: the interval comes
        from the random subsets of the one realisation.
    num_splits : int
        Random split halves for the variance-to-stability check.
    rule : str
        Selection rule of :func:`select_items` behind the λ6★ subsets (``"strata"``,
        ``"redundancy"`` or the spec's plain ``"greedy"``), or ``"tuned"`` (default): the
        rule with the best worst-case gain over random on the tuning realisations; the
        other rules' stability is reported beside it as context.
    duplicates : str
        ``"keep"``, ``"collapse"`` or ``"tuned"`` (default), chosen with the rule.
    tuning_seeds : tuple of int
        Seeds of the simulated realisations (``irt`` at the seed, ``fewmodel`` at the seed
        + 2) on which a ``"tuned"`` setting is chosen; they must differ from every seed
        a claim's data comes from (checked before the run).
    local_matrix : str or None
        Paper tier: path to a local CSV/TSV response matrix (models as rows, items as
        columns, first column the model name) to analyse as an extra single-run benchmark.
    """

    seed: int = 0
    benchmarks: tuple[str, ...] = param(
        ("irt", "imagenet", "digits", "mmlu", "fewmodel"),
        help="Any of ``irt``, ``imagenet``, ``digits``, ``mmlu``, ``fewmodel``",
        choices=("irt", "imagenet", "digits", "mmlu", "fewmodel"),
    )
    irt_num_models: int = param(60, help="Size of the 2PL simulation", min=1)
    irt_num_items: int = param(2000, help="Size of the 2PL simulation", min=1)
    few_num_models: int = param(12, help="models of the few-model 3PL simulation", min=6)
    few_num_items: int = param(10000, help="items of the few-model 3PL simulation", min=2)
    few_guessing: float = param(
        0.25, help="mean guessing floor c of the few-model 3PL items", min=0.0, max=0.6)
    few_null_share: float = param(
        0.2, help="share of few-model items without signal (a = 0)", min=0.0, max=0.9)
    few_discrimination_sd: float = param(
        0.5, help="log-sd of the few-model discriminations", min=0.0, max=3.0)
    few_num_replicates: int = param(
        10, help="independent realisations of the few-model simulation (cheap: more than "
        "num_replicates, so the random-subset control's interval can clear the bar)", min=1)
    imagenet_num_trials: int = param(
        50, help="Validation images per class behind each accuracy (binomial resampling)", min=1
    )
    digits_noise: float = param(
        2.0, help="standard deviation of the input noise of a digits evaluation run", min=0.0
    )
    digits_shift_prob: float = param(
        0.25, help="probability that a digits evaluation run shifts its inputs", min=0.0, max=1.0
    )
    budgets: tuple[int, ...] = param((10, 20, 50, 100, 200), help="Selection budgets k", min=1)
    reference_budget: int = param(
        200, help="Size of the random subset whose tau the λ6★ subsets must reach (claim 4)", min=1
    )
    num_random: int = param(50, help="Random subsets per budget", min=1)
    num_runs: int = param(
        6, help="runs of each multi-run benchmark (selection on one, stability over pairs of "
        "the rest)", min=3,
    )
    num_replicates: int = param(
        10,
        help="independent realisations of each multi-run benchmark behind the selection "
        "claims (their spread gives the interval of the mean gain)",
        min=1,
    )
    num_splits: int = param(
        100, help="Random split halves for the variance-to-stability check", min=1
    )
    rule: str = param(
        "tuned",
        help="selection rule of select_items for the λ6★ subsets, or 'tuned': chosen on the "
        "tuning realisations (the other rules are reported for context, never claimed)",
        choices=(*SELECTION_RULES, "tuned"),
    )
    duplicates: str = param(
        "tuned",
        help="duplicates handling of select_items ('keep', 'collapse'), or 'tuned' (chosen "
        "with the rule on the tuning realisations)",
        choices=(*DUPLICATES, "tuned"),
    )
    tuning_seeds: tuple[int, ...] = param(
        (1_000_000, 1_000_001),
        help="seeds of the simulated realisations (irt, fewmodel) that choose a 'tuned' "
        "selection setting; disjoint from every seed the claims' data come from",
        min=0,
    )
    local_matrix: str | None = param(
        None,
        help="paper tier: a local CSV/TSV response matrix (models as rows), an extra benchmark",
    )
    diag_discrimination_sd: float = param(
        0.6, help="log-sd of the discriminations of the IRT diagnostic realisations (the "
        "claims' IRT simulation uses simulate_irt's 0.3)", min=0.0, max=3.0)
    diag_num_replicates: int = param(
        5, help="realisations of the IRT diagnostic with wider discriminations (the claims' "
        "first IRT seeds; 0: not run)", min=0)


TIERS = {
    "smoke": Config(
        benchmarks=("irt",),
        irt_num_models=20,
        irt_num_items=60,
        budgets=(10,),
        reference_budget=20,
        num_random=10,
        num_splits=20,
        num_runs=3,
        num_replicates=1,
        few_num_items=200,
        tuning_seeds=(1_000_000,),
        diag_num_replicates=2,
    ),
    "small": Config(),
    "paper": Config(
        irt_num_models=100, irt_num_items=20000, num_random=200, num_splits=500,
        num_replicates=10, few_num_items=40000, few_num_replicates=20,
        tuning_seeds=(1_000_000, 1_000_001, 1_000_002),
    ),
}


def _summary(y: np.ndarray, cfg: Config, seed: int) -> dict:
    """Reliability diagnostics of one run (N, K)."""
    vc = variance_components(y)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", IllPosedWarning)
        l6 = guttman_lambda6(y)
        # The delta -> 0 limit of the proxy: classical lambda6 computed, not asserted.
        l6_limit = lambda6_star(y, shrinkage=1e-12, solver="woodbury").value
    ill = any(issubclass(w.category, IllPosedWarning) for w in caught)
    star = lambda6_star(y)
    loo = lambda6_star_loo(y)
    sh = split_half_tau(y, num_splits=cfg.num_splits, seed=seed)
    return {
        "num_models": vc.num_models,
        "num_items": vc.num_items,
        "dropped_items": int(vc.dropped_items.size),
        "model_var": vc.model_var,
        "item_var": vc.item_var,
        "residual_var": vc.residual_var,
        "rho": g_coefficient(y),
        "snr": signal_to_noise(y),
        "lambda6": l6,
        "lambda6_limit": l6_limit,
        "lambda6_ill_posed": ill,
        "lambda6_star": star.value,
        "lambda6_star_loo": loo.value,
        "shrinkage": star.shrinkage,
        "loo_ridge": loo.shrinkage,
        "tau_pred": sh.predicted_tau,
        "tau_obs": sh.observed_tau,
        "tau_obs_std": sh.observed_std,
        "tau_abs_err": abs(sh.predicted_tau - sh.observed_tau),
    }


def _selection(runs: np.ndarray, cfg: Config, rng: np.random.Generator,
               setting: tuple[str, str]) -> dict:
    """Items chosen on run A with ``setting = (rule, duplicates)``; stability = mean tau
    over all pairs of the other runs."""
    rule, dup = setting
    a, held = runs[0], runs[1:]
    pairs = [(i, j) for i in range(len(held)) for j in range(i + 1, len(held))]

    def stability(idx) -> float:
        return float(np.mean([ranking_tau(held[i][:, idx], held[j][:, idx]) for i, j in pairs]))

    valid = np.flatnonzero(np.ptp(a, axis=0) > 0)  # items with variance on run A
    budgets = [k for k in cfg.budgets if k <= valid.size]
    ref_k = min(cfg.reference_budget, valid.size)
    t0 = time.perf_counter()
    # one selection per budget: the strata rule's subsets are not nested
    sel = {k: select_items(a, k, rule=rule, duplicates=dup) for k in budgets}
    sel_time = time.perf_counter() - t0
    others = _other_rules(rule)
    alt = {(r, k): select_items(a, k, rule=r, duplicates=dup) for r in others for k in budgets}
    irc = item_rest_correlation(a)
    irc_order = valid[np.argsort(-irc[valid], kind="stable")]
    rows = []

    def rand_taus(k: int) -> np.ndarray:
        out = np.empty(cfg.num_random)
        for d in range(cfg.num_random):
            out[d] = stability(rng.choice(valid, size=k, replace=False))
        return out

    rand_var = []
    for k in budgets:
        idx = sel[k].indices
        taus = rand_taus(k)
        rand_var.append(taus.var(ddof=1) / taus.size if taus.size > 1 else np.nan)
        rows.append(
            {
                "budget": k,
                "tau_lambda6_star": stability(idx),
                "tau_random_mean": float(taus.mean()),
                "tau_random_std": float(taus.std(ddof=1)) if taus.size > 1 else float("nan"),
                # the control: the first random subset taken as if it were the selection
                "tau_random_pick": float(taus[0]),
                "tau_item_rest": stability(irc_order[:k]),
            }
            | {f"tau_{r}": stability(alt[r, k].indices) for r in others}
            | {
                "lambda6_star_subset": float(sel[k].objective_path[-1]),
            }
        )
    ref_tau = float(rand_taus(ref_k).mean())
    gains = [r["tau_lambda6_star"] - r["tau_random_mean"] for r in rows]
    # standard error of the mean gain from the random-subset means (the selected subset's
    # own evaluation noise is averaged over the run pairs)
    gain_se = float(np.sqrt(np.sum(rand_var))) / len(rows) if rows else float("nan")
    return {
        "rows": rows,
        "sel_wins": int(sum(g > 0 for g in gains)),
        "sel_num_budgets": len(rows),
        "sel_mean_gain": float(np.mean(gains)) if gains else float("nan"),
        "sel_mean_gain_se": gain_se,
        **_control_summary(rows, ref_tau),
        **_rule_summary(rows, others),
        "num_duplicates": int(sel[budgets[0]].num_duplicates) if budgets else 0,
        "num_eval_pairs": len(pairs),
        "ref_random_tau": ref_tau,
        "min_budget_match": _min_budget_match(rows, "tau_lambda6_star", ref_tau),
        "select_seconds": sel_time,
    }


#: Seed offset between the independent realisations of a multi-run benchmark.
REPLICATE_STRIDE = 7919


def _small_subset_gap(sel: dict) -> float:
    """Stability of the λ6★ subset of the largest budget <= :data:`SMALL_SUBSET` minus that
    of the random reference subsets, in one :func:`_selection` result (NaN without such a
    budget): >= 0 where that subset reaches the reference."""
    rows = [r for r in sel["rows"] if r["budget"] <= SMALL_SUBSET]
    if not rows:
        return float("nan")
    best = max(rows, key=lambda r: r["budget"])
    return float(best["tau_lambda6_star"] - sel["ref_random_tau"])


def _wide_disc_gap(cfg: Config, r: int, setting: tuple[str, str]) -> float:
    """:func:`_small_subset_gap` on the IRT realisation of replicate ``r`` with the
    discriminations' log-sd set to ``cfg.diag_discrimination_sd``.

    The realisation has the claims' seed of replicate ``r``, so every other draw is the
    claims' one (the discriminations are the same normal draws, scaled); the random
    subsets come from a generator of their own, never the claims' one.
    """
    sim = simulate_irt(num_models=cfg.irt_num_models, num_items=cfg.irt_num_items,
                       num_runs=cfg.num_runs, discrimination_sd=cfg.diag_discrimination_sd,
                       seed=cfg.seed + REPLICATE_STRIDE * r)
    rng = np.random.default_rng([cfg.seed, 4247, r])
    return _small_subset_gap(_selection(sim.scores, cfg, rng, setting))


def _transfer(runs: np.ndarray) -> dict[str, float]:
    """How well run A's item statistics carry over to another run (run 1).

    Spearman correlations, over the items with variance on both runs, of the item
    difficulty (mean score) and of the λ6★ item reliability ``R*_j^2`` (each run's own
    :func:`lambda6_star` on its items), the two statistics the strata rule picks by.
    """
    a, b = runs[0], runs[1]
    both = np.flatnonzero((np.ptp(a, axis=0) > 0) & (np.ptp(b, axis=0) > 0))
    if both.size < 3:
        return {"transfer_difficulty": float("nan"), "transfer_r2": float("nan")}
    r2 = [lambda6_star(y[:, both]).item_r2 for y in (a, b)]
    return {
        "transfer_difficulty": float(stats.spearmanr(a[:, both].mean(axis=0),
                                                     b[:, both].mean(axis=0))[0]),
        "transfer_r2": float(stats.spearmanr(r2[0], r2[1])[0]),
    }


def _subset_diagnostics(table: Table, cfg: Config) -> dict[str, Estimate]:
    """The diagnostics of claim smaller_subsets_match, each a mean over replicates with
    its Student-t interval: per claim benchmark the gap of the small λ6★ subset to the
    random reference (``<bench>_small_subset_gap``) and the transfer of item statistics
    from run A to run 1 (``<bench>_difficulty_transfer``, ``<bench>_item_r2_transfer``);
    and the gap on IRT realisations with wider discriminations
    (``irt_wide_disc_small_subset_gap``)."""
    out: dict = {}
    for name in CLAIM_BENCHES:
        rows = [r for r in table.where(bench=name) if "sel" in r]
        if not rows:
            continue
        per = Table([{"replicate": r["replicate"], "gap": _small_subset_gap(r["sel"]),
                      "difficulty": r.get("transfer_difficulty", float("nan")),
                      "r2": r.get("transfer_r2", float("nan"))} for r in rows])
        out[f"{name}_small_subset_gap"] = per.mean_over("gap", unit="replicate")
        out[f"{name}_difficulty_transfer"] = per.mean_over("difficulty", unit="replicate")
        out[f"{name}_item_r2_transfer"] = per.mean_over("r2", unit="replicate")
    diag = table.where(bench=DIAG)
    if len(diag):
        out["irt_wide_disc_small_subset_gap"] = diag.mean_over("gap", unit="replicate")
    elif "irt" in cfg.benchmarks:
        out["irt_wide_disc_small_subset_gap"] = Estimate.missing(
            "diag_num_replicates is 0")
    return out


def _other_rules(rule: str) -> list[str]:
    """The selection rules run beside the claimed ``rule`` as context (never claimed)."""
    return [r for r in SELECTION_RULES if r != rule]


def _rule_summary(rows: list[dict], rules: list[str]) -> dict:
    """Wins and mean gain over random of each context rule (``<rule>_rule_wins``, ...)."""
    out: dict = {}
    for rule in rules:
        gains = [r[f"tau_{rule}"] - r["tau_random_mean"] for r in rows]
        out[f"{rule}_rule_wins"] = int(sum(g > 0 for g in gains))
        out[f"{rule}_rule_mean_gain"] = float(np.mean(gains)) if gains else float("nan")
    return out


def _replicated_selection(name: str, runs: np.ndarray, cfg: Config, rng,
                          setting: tuple[str, str]) -> dict:
    """:func:`_selection` on ``cfg.num_replicates`` independent realisations of a benchmark.

    Replicate 0 is ``runs``; replicate r >= 1 redraws the benchmark (a new IRT draw, a new
    ImageNet resample, a new digits split, zoo training and perturbations) with seed
    ``cfg.seed + REPLICATE_STRIDE * r``; :func:`_combine` reads the replicate means.
    """
    reps = [_selection(runs, cfg, rng, setting)]
    if name in MULTI_RUN:
        for r in range(1, cfg.num_replicates):
            runs_r, _ = _load(name, cfg, seed=cfg.seed + REPLICATE_STRIDE * r)
            reps.append(_selection(runs_r, cfg, rng, setting))
    return _combine(reps, setting[0])


def _control_summary(rows: list[dict], ref_tau: float) -> dict:
    """The selection claims' control: the same statistics with a random subset (the first
    of the random subsets of each budget) in place of the λ6★ subset."""
    gains = [r["tau_random_pick"] - r["tau_random_mean"] for r in rows]
    return {
        "ctrl_wins": int(sum(g > 0 for g in gains)),
        "ctrl_mean_gain": float(np.mean(gains)) if gains else float("nan"),
        "ctrl_min_budget_match": _min_budget_match(rows, "tau_random_pick", ref_tau),
    }


def _combine(reps: list[dict], rule: str) -> dict:
    """The replicate means of :func:`_selection` results of one benchmark.

    The claims read the replicate means: the gain per budget, the wins (budgets whose mean
    gain is > 0), the mean gain with a Student-t interval over the replicates (which holds
    the selection run's own noise, not only that of the random subsets; infinite with one
    replicate), and the smallest budget whose mean tau reaches the mean tau of the random
    reference subsets; the same for the control (a random subset as the selection).
    ``gain_rows`` holds, per replicate and budget, both gains, the two subsets' taus and
    the replicate's random reference tau (for the bootstraps over replicates of the wins
    and of the small-subset match).
    """
    budgets = [r["budget"] for r in reps[0]["rows"]]
    budgets = [k for k in budgets if all(k in [r["budget"] for r in p["rows"]] for p in reps)]
    others = _other_rules(rule)
    rows = []
    for k in budgets:
        per = [next(r for r in p["rows"] if r["budget"] == k) for p in reps]
        rows.append({key: (k if key == "budget" else float(np.mean([r[key] for r in per])))
                     for key in per[0]} | {"num_replicates": len(reps)})  # fmt: skip
    gains = [r["tau_lambda6_star"] - r["tau_random_mean"] for r in rows]
    gain_rows = [
        {"replicate": i, "budget": r["budget"],
         "gain": r["tau_lambda6_star"] - r["tau_random_mean"],
         "ctrl_gain": r["tau_random_pick"] - r["tau_random_mean"],
         "tau": r["tau_lambda6_star"], "tau_pick": r["tau_random_pick"],
         "ref": p["ref_random_tau"]}
        for i, p in enumerate(reps) for r in p["rows"] if r["budget"] in budgets
    ]  # fmt: skip
    ref_tau = float(np.mean([p["ref_random_tau"] for p in reps]))
    per_rep = Table(gain_rows)
    return {
        "win_share": _win_share(gain_rows, "gain"),
        "ctrl_win_share": _win_share(gain_rows, "ctrl_gain"),
        "rows": rows,
        "gain_rows": gain_rows,
        "sel_wins": int(sum(g > 0 for g in gains)),
        "sel_num_budgets": len(rows),
        "sel_mean_gain": _replicate_mean(gains, per_rep, "gain"),
        "ctrl_mean_gain": _replicate_mean(
            [r["tau_random_pick"] - r["tau_random_mean"] for r in rows], per_rep, "ctrl_gain"),
        **{k: v for k, v in _control_summary(rows, ref_tau).items() if k != "ctrl_mean_gain"},
        **_rule_summary(rows, others),
        "num_duplicates": reps[0]["num_duplicates"],
        "num_eval_pairs": reps[0]["num_eval_pairs"],
        "ref_random_tau": ref_tau,
        "min_budget_match": _min_budget_match(rows, "tau_lambda6_star", ref_tau),
        "select_seconds": float(sum(p["select_seconds"] for p in reps)),
        "num_replicates": len(reps),
    }


def _replicate_mean(gains: list, per_rep: Table, column: str) -> Estimate:
    """The mean gain over budgets (of the replicate means) with its Student-t interval over
    the replicates' own mean gains (infinite with one replicate)."""
    if not gains:
        return Estimate.missing("no budget fits every replicate")
    e = per_rep.mean_over(column, unit="replicate")
    return Estimate(float(np.mean(gains)), e.lo, e.hi, e.method, e.level, e.n)


def _min_budget_match(rows, tau: str, ref_tau: float) -> int:
    """The smallest budget whose subset stability (column ``tau`` of ``rows``, one row per
    budget) reaches ``ref_tau``, the random reference; -1 where none does."""
    reached = [int(r["budget"]) for r in rows if r[tau] >= ref_tau]
    return min(reached) if reached else -1


def _matched_small(rows: Table, tau: str) -> float:
    """How many benchmarks' subset (column ``tau``: the λ6★ subset, or ``tau_pick`` for
    the control) reaches the random reference at a budget of at most
    :data:`SMALL_SUBSET` items: per benchmark, the smallest budget whose replicate-mean tau
    is at least the replicate mean of the reference taus, as :func:`_combine` decides it.
    ``rows`` are the benchmarks' ``gain_rows`` with a ``bench`` column (a drawn replicate
    counts as often as it was drawn)."""
    count = 0
    for sub in rows.groups("bench").values():
        by_budget: dict[int, list[float]] = {}
        for r in sub:
            by_budget.setdefault(int(r["budget"]), []).append(float(r[tau]))
        means = [{"budget": k, tau: float(np.mean(v))} for k, v in by_budget.items()]
        k = _min_budget_match(means, tau, float(np.mean(sub.column("ref"))))
        count += 0 < k <= SMALL_SUBSET
    return float(count)


def _small_match_intervals(sels: dict, seed: int, num_resamples: int) -> dict[str, Estimate]:
    """``num_small_subset_match`` and its control with percentile intervals of a bootstrap
    over replicates, each benchmark's replicates drawn on their own (a benchmark with one
    realisation is fixed); the point values are :func:`_combine`'s counts."""
    rows = Table([{"bench": name, **r} for name, s in sels.items() for r in s["gain_rows"]])
    return {metric: rows.bootstrap(lambda t, col=col: _matched_small(t, col),
                                   unit="replicate", strata="bench",
                                   num_resamples=num_resamples, seed=seed)
            for metric, col in (("num_small_subset_match", "tau"),
                                ("num_small_subset_match_random", "tau_pick"))}


def _win_share(gain_rows: list[dict], column: str) -> Estimate:
    """The share of (replicate, budget) pairs whose gain over the mean random subset is
    > 0, with its Wilson binomial interval over those pairs (the budgets of one replicate
    share its selection run, so the pairs are not fully independent: the interval is a
    lower bound on the uncertainty, and the claim needs its lower end above the bar)."""
    if not gain_rows:
        return Estimate.missing("no budget fits every replicate")
    wins = sum(1 for r in gain_rows if r[column] > 0)
    return binomial_interval(wins, len(gain_rows), level=0.95, method="wilson",
                             unit="(replicate, budget) pairs")


#: The ``bench`` value of the tuning units.
TUNE = "_tune"


def _settings(cfg: Config) -> list[tuple[str, str]]:
    """The candidate ``(rule, duplicates)`` settings: every one a ``"tuned"`` field allows."""
    rules = SELECTION_RULES if cfg.rule == "tuned" else (cfg.rule,)
    dups = DUPLICATES if cfg.duplicates == "tuned" else (cfg.duplicates,)
    return [(r, d) for r in rules for d in dups]


def _claim_seeds(cfg: Config) -> dict[str, list[int]]:
    """The seeds every claim's data come from, per multi-run benchmark (see :func:`_load`)."""
    offset = {"irt": 0, "imagenet": 1, "digits": 0, "fewmodel": FEWMODEL_SEED_OFFSET}
    return {b: [cfg.seed + REPLICATE_STRIDE * r + offset[b]
                for r in range(_num_replicates(b, cfg))]
            for b in cfg.benchmarks if b in MULTI_RUN}  # fmt: skip


def _num_replicates(name: str, cfg: Config) -> int:
    """Realisations of a multi-run benchmark."""
    return cfg.few_num_replicates if name == "fewmodel" else cfg.num_replicates


def _tuning_seeds(cfg: Config) -> dict[str, list[int]]:
    """The seeds of the tuning realisations, per simulated benchmark."""
    offset = {"irt": 0, "fewmodel": FEWMODEL_SEED_OFFSET}
    return {b: [t + offset[b] for t in cfg.tuning_seeds] for b in TUNING_BENCHES}


def _check_seeds(cfg: Config) -> None:
    """Refuse tuning seeds whose realisations share a seed with a claim's data."""
    if len(set(cfg.tuning_seeds)) != len(cfg.tuning_seeds):
        raise ValueError(f"tuning_seeds must be distinct, got {cfg.tuning_seeds}")
    claims = {s for seeds in _claim_seeds(cfg).values() for s in seeds}
    tuning = {s for seeds in _tuning_seeds(cfg).values() for s in seeds}
    if claims & tuning:
        raise ValueError(
            f"tuning_seeds {cfg.tuning_seeds} give realisations with seeds "
            f"{sorted(claims & tuning)} that the claims' data also use; choose tuning seeds "
            "apart from seed + 7919 r (+ 0, 1, 2)"
        )


def _tune(name: str, seed: int, cfg: Config) -> list[dict]:
    """The gain over the mean random subset of every candidate setting, per budget, on the
    tuning realisation ``seed`` of the simulated benchmark ``name`` (the same protocol as
    :func:`_selection`: items chosen on run A, stability over pairs of the other runs)."""
    runs, _ = _load(name, cfg, seed=seed)
    a, held = runs[0], runs[1:]
    pairs = [(i, j) for i in range(len(held)) for j in range(i + 1, len(held))]

    def stability(idx) -> float:
        return float(np.mean([ranking_tau(held[i][:, idx], held[j][:, idx]) for i, j in pairs]))

    rng = np.random.default_rng([seed, 11])  # not the claims' generator
    valid = np.flatnonzero(np.ptp(a, axis=0) > 0)
    rows = []
    for k in (k for k in cfg.budgets if k <= valid.size):
        rand = float(np.mean([stability(rng.choice(valid, size=k, replace=False))
                              for _ in range(cfg.num_random)]))  # fmt: skip
        for rule, dup in _settings(cfg):
            try:
                gain = stability(select_items(a, k, rule=rule, duplicates=dup).indices) - rand
            except ValueError:  # fewer distinct response columns than k ("collapse")
                gain = -np.inf
            rows.append({"tune_bench": name, "tune_seed": seed, "budget": k, "rule": rule,
                         "duplicates": dup, "gain": gain})  # fmt: skip
    return rows


def _choose(rows, cfg: Config) -> tuple[tuple[str, str], dict[tuple[str, str], float]]:
    """The setting with the largest worst-case mean gain over the tuning benchmarks (mean
    over tuning seeds and budgets, then the minimum over benchmarks); ties go to the first
    candidate. With one candidate (no ``"tuned"`` field) it is chosen without rows."""
    settings = _settings(cfg)
    if len(settings) == 1:
        return settings[0], {}
    score = {}
    for st in settings:
        per = [[r["gain"] for r in rows if (r["rule"], r["duplicates"]) == st
                and r["tune_bench"] == b] for b in TUNING_BENCHES]  # fmt: skip
        score[st] = float(min(np.mean(g) if g else -np.inf for g in per))
    return max(settings, key=lambda st: score[st]), score


def _load(name: str, cfg: Config, seed: int | None = None) -> tuple[np.ndarray, dict]:
    """Runs (R, N, K) of a benchmark (realisation ``seed``, default ``cfg.seed``)."""
    seed = cfg.seed if seed is None else seed
    if name == "irt":
        sim = simulate_irt(
            num_models=cfg.irt_num_models, num_items=cfg.irt_num_items,
            num_runs=cfg.num_runs, seed=seed,
        )
        return sim.scores, {"true_reliability": sim.true_reliability}
    if name == "fewmodel":
        sim = simulate_irt(
            num_models=cfg.few_num_models, num_items=cfg.few_num_items,
            num_runs=cfg.num_runs, guessing=cfg.few_guessing, null_share=cfg.few_null_share,
            discrimination_sd=cfg.few_discrimination_sd, seed=seed + FEWMODEL_SEED_OFFSET,
        )
        return sim.scores, {"true_reliability": sim.true_reliability}
    if name == "imagenet":
        table = load_benchbench("imagenet").to_numpy()
        runs = resample_runs(
            table, num_trials=cfg.imagenet_num_trials, num_runs=cfg.num_runs, seed=seed + 1
        )
        return runs, {}
    if name == "digits":
        zoo = digits_zoo(
            num_runs=cfg.num_runs, noise=cfg.digits_noise, shift_prob=cfg.digits_shift_prob,
            seed=seed,
        )
        return zoo.scores, {}
    if name == "mmlu":
        return load_benchbench("mmlu").to_numpy()[None], {}
    raise ValueError(
        f"unknown benchmark {name!r}; valid: irt, imagenet, digits, mmlu, fewmodel")


def _read_local(path: str) -> np.ndarray:
    p = Path(path)
    if not p.exists():
        raise FileNotFoundError(f"local_matrix {path!r} does not exist")
    sep = "\t" if p.suffix in (".tsv", ".tab") else ","
    return pd.read_csv(p, sep=sep, index_col=0).to_numpy(dtype=float)[None]


#: Every metric name ``run()`` can return (``*`` stands for a family of names, such as
#: one per size or data set); claims name theirs exactly. Checked by the contract test.
METRICS: tuple[str, ...] = (
    "lambda6_ill_posed",
    "num_higher_cohort_less_reliable",
    "num_multi_run_benchmarks",
    "num_small_subset_match",
    "num_wide_benchmarks",
    "random_selection_min_mean_gain",
    "random_selection_min_win_share",
    "num_higher_cohort_less_reliable_random",
    "num_small_subset_match_random",
    "selection_min_mean_gain",
    "selection_min_num_budgets",
    "selection_min_win_share",
    "num_tuning_realisations",
    "fewmodel_sel_mean_gain",
    "fewmodel_ctrl_mean_gain",
    "fewmodel_win_share",
    "fewmodel_ctrl_win_share",
    "digits_greedy_mean_gain",
    "digits_redundancy_mean_gain",
    "tune_*_min_gain",
    "*_win_share",
    "digits_difficulty_transfer",
    "digits_item_r2_transfer",
    "digits_small_subset_gap",
    "imagenet_difficulty_transfer",
    "imagenet_item_r2_transfer",
    "imagenet_small_subset_gap",
    "irt_difficulty_transfer",
    "irt_item_r2_transfer",
    "irt_small_subset_gap",
    "irt_wide_disc_small_subset_gap",
    "*_difficulty_transfer",
    "*_item_r2_transfer",
    "*_small_subset_gap",
    "*_ctrl_win_share",
    "*_ctrl_mean_gain",
    "split_half_tau_max_abs_error",
    "*_dropped_items",
    "*_item_var",
    "*_lambda6",
    "*_lambda6_ill_posed",
    "*_lambda6_limit",
    "*_lambda6_star",
    "*_lambda6_star_higher",
    "*_lambda6_star_loo",
    "*_lambda6_star_lower",
    "*_loo_ridge",
    "*_min_budget_match",
    "*_model_var",
    "*_num_duplicates",
    "*_num_eval_pairs",
    "*_num_items",
    "*_greedy_mean_gain",
    "*_greedy_wins",
    "*_redundancy_mean_gain",
    "*_redundancy_wins",
    "*_strata_mean_gain",
    "*_strata_wins",
    "*_num_models",
    "*_num_replicates",
    "*_ref_random_tau",
    "*_residual_var",
    "*_rho",
    "*_rho_higher",
    "*_rho_lower",
    "*_seconds",
    "*_sel_mean_gain",
    "*_sel_num_budgets",
    "*_sel_wins",
    "*_select_seconds",
    "*_shrinkage",
    "*_snr",
    "*_tau_abs_err",
    "*_tau_obs",
    "*_tau_obs_std",
    "*_tau_pred",
    "*_true_reliability",
)


#: Figure captions for the report: what is plotted and the claims it illustrates.
CAPTIONS: dict[str, str] = {
    "tau_mapping": (
        "Observed split-half Kendall tau against the prediction (2/pi) arcsin(rho_{K/2}) "
        "from variance components, per benchmark (claim variance_to_stability)."
    ),
    "selection": (
        "Ranking stability (mean Kendall tau over pairs of evaluation runs) against the "
        "number of items k: lambda6* "
        "subsets, random subsets and item-rest top-k, per benchmark (claims "
        "selection_beats_random_wins, selection_beats_random_gain, "
        "smaller_subsets_match)."
    ),
    "cohorts": (
        "Reliability rho_K inside the lower and the higher-performing cohort, per "
        "benchmark (claim population_dependence)."
    ),
}


class Lambda6Star(Experiment):
    """The reproduction on the experiment layer (see the module docstring).

    Units: first the tuning realisations (each simulated benchmark of
    :data:`TUNING_BENCHES` at each of ``Config.tuning_seeds``), which choose the selection
    setting; then each (benchmark, replicate); replicate 0 of a benchmark also measures its
    reliability summary and its cohorts. One generator seeded by the run's seed (the
    ``setup`` state) draws every random subset of the claims' units in unit order, as the
    monolithic run did (the tuning units draw theirs from their own seeds). Rows carry the
    selection results, so the unit table is not given to the report.
    """

    Config, TIERS, METRICS = Config, TIERS, METRICS
    CAPTIONS = CAPTIONS
    VOLATILE = ("*_seconds",)
    UNIT_TABLE = None

    def setup(self, config: Config, ctx):
        _check_seeds(config)
        return {"config": config, "rng": np.random.default_rng(config.seed), "runs": {},
                "tune_rows": []}

    def grid(self, config: Config):
        names = list(config.benchmarks) + (["local"] if config.local_matrix else [])
        units = []
        if len(_settings(config)) > 1:
            units += [{"bench": TUNE, "tune_bench": b, "tune_seed": t, "replicate": -1}
                      for t in config.tuning_seeds for b in TUNING_BENCHES]
        for i, name in enumerate(names):
            units.append({"bench": name, "index": i, "replicate": 0})
            if name in MULTI_RUN:
                units += [{"bench": name, "index": i, "replicate": r}
                          for r in range(1, _num_replicates(name, config))]
        if "irt" in config.benchmarks:  # the diagnostic, last: its own generators
            units += [{"bench": DIAG, "replicate": r}
                      for r in range(config.diag_num_replicates)]
        return units

    def measure(self, unit, state, ctx):
        cfg, rng = state["config"], state["rng"]
        name, r = unit["bench"], unit["replicate"]
        t0 = time.perf_counter()
        if name == TUNE:
            rows = _tune(unit["tune_bench"], unit["tune_seed"], cfg)
            state["tune_rows"] += rows
            return rows
        if "setting" not in state:  # every tuning unit came first
            state["setting"] = _choose(state["tune_rows"], cfg)[0]
        setting = state["setting"]
        if name == DIAG:
            return {"gap": _wide_disc_gap(cfg, r, setting)}
        if r > 0:
            if not state["runs"].get(name):
                return {}
            runs_r, _ = _load(name, cfg, seed=cfg.seed + REPLICATE_STRIDE * r)
            return {"sel": _selection(runs_r, cfg, rng, setting),
                    "seconds": time.perf_counter() - t0,
                    **(_transfer(runs_r) if name in CLAIM_BENCHES else {})}
        runs, extra = _read_local(cfg.local_matrix) if name == "local" else _load(name, cfg)
        res = _summary(runs[0], cfg, seed=cfg.seed + 100 + unit["index"])
        res.update(extra)
        state["runs"][name] = runs.shape[0] >= 3
        row = {"summary": res}
        if runs.shape[0] >= 3:
            row["sel"] = _selection(runs, cfg, rng, setting)
            row["cohort"] = cohort_reliability(runs[0], runs[1])
            # the cohorts' control: models assigned to cohorts at random (a permutation of
            # the split run's rows), so that "higher" carries no performance
            perm = np.random.default_rng([cfg.seed, 77, unit["index"]]).permutation(
                runs.shape[1])
            row["cohort_random"] = cohort_reliability(runs[0][perm], runs[1])
            if name in CLAIM_BENCHES:
                row.update(_transfer(runs))
        row["seconds"] = time.perf_counter() - t0
        return row

    def _results(self, table: Table, config: Config) -> dict:
        results: dict[str, dict] = {}
        rule = _choose(table.where(bench=TUNE).rows, config)[0][0]
        for name, g in table.groups("bench").items():
            if name in (TUNE, DIAG):
                continue
            first = g.where(replicate=0).rows[0]
            res = dict(first["summary"])
            sels = [r["sel"] for r in g if "sel" in r]
            if "sel" in first:
                res["selection"] = _combine(sels, rule)
                res["cohort"] = first["cohort"]
                res["cohort_random"] = first["cohort_random"]
            res["_seconds"] = float(sum(r.get("seconds", 0.0) for r in g))
            results[name] = res
        return results

    def summarize(self, table: Table, config: Config, ctx) -> dict:
        results = self._results(table, config)
        metrics: dict = {}
        for name, res in results.items():
            for key, value in res.items():
                if key.startswith("_"):
                    continue
                if isinstance(value, (bool, np.bool_)):
                    metrics[f"{name}_{key}"] = bool(value)
                elif isinstance(value, (int, np.integer)):
                    metrics[f"{name}_{key}"] = int(value)
                elif isinstance(value, (float, np.floating)):
                    metrics[f"{name}_{key}"] = float(value)
            if "selection" in res:
                s = res["selection"]
                for key in ("sel_wins", "sel_num_budgets", "min_budget_match", "num_duplicates",
                            "num_eval_pairs", "num_replicates"):  # fmt: skip
                    metrics[f"{name}_{key}"] = int(s[key])
                for key, value in s.items():
                    if key.endswith(("_rule_wins", "_rule_mean_gain")):
                        metrics[f"{name}_{key.replace('_rule', '')}"] = value
                metrics[f"{name}_sel_mean_gain"] = s["sel_mean_gain"]
                metrics[f"{name}_ctrl_mean_gain"] = s["ctrl_mean_gain"]
                metrics[f"{name}_win_share"] = s["win_share"]
                metrics[f"{name}_ctrl_win_share"] = s["ctrl_win_share"]
                metrics[f"{name}_ref_random_tau"] = float(s["ref_random_tau"])
                metrics[f"{name}_select_seconds"] = float(s["select_seconds"])
                coh = res["cohort"]
                metrics[f"{name}_rho_lower"] = coh.lower_reliability
                metrics[f"{name}_rho_higher"] = coh.higher_reliability
                metrics[f"{name}_lambda6_star_lower"] = coh.lower_lambda6_star
                metrics[f"{name}_lambda6_star_higher"] = coh.higher_lambda6_star
            metrics[f"{name}_seconds"] = res["_seconds"]

        # Claim 1: variance-to-stability mapping on every benchmark.
        metrics["split_half_tau_max_abs_error"] = max(
            r["tau_abs_err"] for r in results.values())
        # Claim 2: classical lambda6 collapses to 1 where K >= N, lambda6* stays in (0, 1).
        wide = [r for r in results.values() if r["num_items"] >= r["num_models"]]
        metrics["num_wide_benchmarks"] = len(wide)
        if wide:
            metrics["lambda6_ill_posed"] = bool(
                all(
                    abs(r["lambda6"] - 1.0) <= 1e-9
                    and abs(r["lambda6_limit"] - 1.0) <= 1e-9
                    and 0.0 < r["lambda6_star"] < 1.0
                    for r in wide
                )
            )
        # Claims 3-5 over the multi-run benchmarks, each beside its control (a random
        # subset as the selection; models put into cohorts at random).
        multi = {n: r for n, r in results.items() if "selection" in r and n in CLAIM_BENCHES}
        if multi:
            sels = {n: r["selection"] for n, r in multi.items()
                    if r["selection"]["sel_num_budgets"]}
            # the wins: the benchmark with the smallest share of won (replicate, budget)
            # pairs, with its binomial interval; the same for a random subset as the pick
            for metric, key in (("selection_min_win_share", "win_share"),
                                ("random_selection_min_win_share", "ctrl_win_share")):
                metrics[metric] = min((s[key] for s in sels.values()), key=lambda e: e.value)
            metrics["selection_min_num_budgets"] = min(s["sel_num_budgets"] for s in sels.values())
            worst = min(sels.values(), key=lambda s: s["sel_mean_gain"].value)
            metrics["selection_min_mean_gain"] = worst["sel_mean_gain"]
            worst_ctrl = min(sels.values(), key=lambda s: s["ctrl_mean_gain"].value)
            metrics["random_selection_min_mean_gain"] = worst_ctrl["ctrl_mean_gain"]
            # the count of benchmarks, with a bootstrap over each benchmark's replicates
            # (the replicate means decide a budget, so redrawn replicates can flip it)
            metrics.update(_small_match_intervals(sels, config.seed + 53, 1000))
            cohorts = [r["cohort"] for r in multi.values()]
            metrics["num_higher_cohort_less_reliable"] = sum(
                1 for c in cohorts if c.higher_reliability < c.lower_reliability
            )
            metrics["num_higher_cohort_less_reliable_random"] = sum(
                1 for r in multi.values()
                if r["cohort_random"].higher_reliability < r["cohort_random"].lower_reliability
            )
            metrics["num_multi_run_benchmarks"] = len(multi)
        # The choice of the selection setting on the tuning realisations (never on the
        # claims' seeds): each candidate's worst-case mean gain over random.
        tune = table.where(bench=TUNE).rows
        _, score = _choose(tune, config)
        for (rule, dup), value in score.items():
            metrics[f"tune_{rule}_{dup}_min_gain"] = value
        metrics["num_tuning_realisations"] = len({(r["tune_bench"], r["tune_seed"])
                                                  for r in tune})  # fmt: skip
        metrics.update(_subset_diagnostics(table, config))
        return metrics

    def tables(self, table: Table, summary: dict, config: Config) -> dict:
        results = self._results(table, config)
        summary_rows, sel_rows, cohort_rows = [], [], []
        for name, res in results.items():
            summary_rows.append(
                {"benchmark": name}
                | {
                    k: (round(v, 6) if isinstance(v, float) else v)
                    for k, v in res.items()
                    if isinstance(v, (int, float, bool)) and not k.startswith("_")
                }
            )
            if "selection" in res:
                sel_rows += [{"benchmark": name} | r for r in res["selection"]["rows"]]
                coh = res["cohort"]
                cohort_rows.append(
                    {
                        "benchmark": name,
                        "rho_lower": coh.lower_reliability,
                        "rho_higher": coh.higher_reliability,
                        "lambda6_star_lower": coh.lower_lambda6_star,
                        "lambda6_star_higher": coh.higher_lambda6_star,
                        "model_var_lower": coh.lower_model_var,
                        "model_var_higher": coh.higher_model_var,
                        "items_dropped_lower": coh.lower_dropped,
                        "items_dropped_higher": coh.higher_dropped,
                        "rho_lower_random_split": res["cohort_random"].lower_reliability,
                        "rho_higher_random_split": res["cohort_random"].higher_reliability,
                    }
                )
        (rule, dup), score = _choose(table.where(bench=TUNE).rows, config)
        tuning = [{"rule": r, "duplicates": d, "worst_mean_gain_over_random": v,
                   "chosen": (r, d) == (rule, dup)} for (r, d), v in score.items()]
        seeds = ([{"role": "tuning", "benchmark": b, "seeds": str(v)}
                  for b, v in _tuning_seeds(config).items()] if score else []) + [
            {"role": "claims", "benchmark": b, "seeds": str(v)}
            for b, v in _claim_seeds(config).items()]
        return {"benchmarks": summary_rows, "selection": sel_rows, "cohorts": cohort_rows,
                "tuning": tuning, "seeds": seeds}

    def figures(self, table: Table, summary: dict, config: Config) -> dict:
        t = self.tables(table, summary, config)
        return _figures(self._results(table, config), t["selection"], t["cohorts"])

    def notes(self, table: Table, summary: dict, config: Config) -> tuple:
        results = self._results(table, config)
        multi = sorted(n for n, r in results.items() if "selection" in r and n in CLAIM_BENCHES)
        (rule, dup), score = _choose(table.where(bench=TUNE).rows, config)
        how = ("chosen on the tuning realisations " + ", ".join(
            f"{b} seeds {v}" for b, v in _tuning_seeds(config).items()) if score
            else "fixed by the config")
        notes = [
            f"selection setting rule={rule!r}, duplicates={dup!r}, {how}; the claims are "
            "judged on " + ", ".join(f"{b} seeds {v}" for b, v in _claim_seeds(config).items()),
            f"claims 3-5 are computed over {multi} (multi-run benchmarks); the few-model 3PL "
            "simulation has claims of its own",
            "mmlu is a single run with K < N: only the tau mapping and lambda6 are checked there",
        ]
        if "irt" in results:
            notes.append(
                f"irt true reliability {results['irt']['true_reliability']:.4f} vs rho "
                f"{results['irt']['rho']:.4f}, lambda6* {results['irt']['lambda6_star']:.4f}"
            )
        return tuple(notes)


EXPERIMENT = Lambda6Star()
run = EXPERIMENT.run


def _figures(results: dict, sel_rows: list, cohort_rows: list) -> dict[str, bytes]:
    figs: dict[str, bytes] = {}
    fig, (ax,) = new_figure(1)
    grid = np.linspace(0, 1, 101)
    ax.plot(grid, [expected_kendall_tau(g) for g in grid], "k-", lw=1, label="(2/π) arcsin ρ")
    for name, r in results.items():
        rho_half = np.sin(np.pi * r["tau_pred"] / 2)
        ax.errorbar(rho_half, r["tau_obs"], yerr=r["tau_obs_std"], fmt="o", label=name)
    ax.set_xlabel("ρ_{K/2} from variance components")
    ax.set_ylabel("observed split-half Kendall τ")
    ax.set_title("Variance components predict rank stability")
    ax.legend(fontsize=8)
    figs["tau_mapping"] = figure_png(fig)

    sel_names = sorted({r["benchmark"] for r in sel_rows})
    if sel_names:
        fig, axes = new_figure(len(sel_names), width=4.0)
        for ax, name in zip(axes, sel_names, strict=True):
            rows = [r for r in sel_rows if r["benchmark"] == name]
            k = [r["budget"] for r in rows]
            mean = np.array([r["tau_random_mean"] for r in rows])
            std = np.array([r["tau_random_std"] for r in rows])
            ax.plot(k, [r["tau_lambda6_star"] for r in rows], "o-", label="λ6★ (chosen rule)")
            for other in (key for key in rows[0] if key[4:] in SELECTION_RULES):
                ax.plot(k, [r[other] for r in rows], "x-.", lw=0.8, label=f"λ6★ {other[4:]}")
            ax.plot(k, mean, "s--", label="random (mean ± sd)")
            ax.fill_between(k, mean - std, mean + std, alpha=0.2, color="C1")
            ax.plot(k, [r["tau_item_rest"] for r in rows], "^:", label="item-rest top-k")
            ax.axhline(results[name]["selection"]["ref_random_tau"], color="gray", lw=0.8)
            ax.set_xscale("log")
            ax.set_xlabel("items k")
            ax.set_title(name)
        axes[0].set_ylabel("mean Kendall τ over evaluation-run pairs")
        axes[0].legend(fontsize=7)
        figs["selection"] = figure_png(fig)

    if cohort_rows:
        fig, (ax,) = new_figure(1)
        x = np.arange(len(cohort_rows))
        ax.bar(x - 0.2, [r["rho_lower"] for r in cohort_rows], 0.4, label="lower cohort")
        ax.bar(x + 0.2, [r["rho_higher"] for r in cohort_rows], 0.4, label="higher cohort")
        ax.set_xticks(x, [r["benchmark"] for r in cohort_rows])
        lo = min(min(r["rho_lower"], r["rho_higher"]) for r in cohort_rows)
        ax.set_ylim(max(0.0, lo - 0.05), 1.0)
        ax.set_ylabel("ρ_K inside the cohort (run B)")
        ax.set_title("Reliability is population-dependent")
        ax.legend(fontsize=8)
        figs["cohorts"] = figure_png(fig)
    return figs
