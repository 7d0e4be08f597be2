"""Tests of the redundancy-aware λ6★ selection rules (issue 12).

The spec's plain greedy rule rewards items that covary strongly with the chosen set, so
its picks pile up in one region of near-duplicate response patterns. ``rule="strata"``
(the default) takes the most λ6★-reliable item of each difficulty stratum;
``rule="redundancy"`` discounts each item's λ6★ gain by ``rho_j^2``, its largest shrunk
correlation with a chosen item.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from neurips26.papers.lambda6_star import (
    digits_zoo,
    item_rest_correlation,
    lambda6_star,
    ranking_tau,
    select_items,
    simulate_irt,
)


def _reference_redundancy(y: np.ndarray, budget: int) -> tuple[list[int], list[float]]:
    """Brute-force reference: every candidate's discounted gain from np.cov / np.corrcoef."""
    full = lambda6_star(y)
    assert full.kept_items.size == y.shape[1]  # no constant columns in these fixtures
    err, delta = full.item_error_var, full.shrinkage
    cov, corr = np.cov(y, rowvar=False), np.corrcoef(y, rowvar=False)
    chosen: list[int] = []
    path: list[float] = []
    prev = 0.0
    for _ in range(budget):
        best = (-np.inf, -1, 0.0)
        for j in range(y.shape[1]):
            if j in chosen:
                continue
            s = [*chosen, j]
            value = 1.0 - err[s].sum() / cov[np.ix_(s, s)].sum()  # lambda6*(S + j), fixed e^2
            gain = value - prev
            rho = (1.0 - delta) * max((abs(corr[i, j]) for i in chosen), default=0.0)
            score = gain - abs(gain) * rho**2
            if score > best[0]:
                best = (score, j, value)
        chosen.append(best[1])
        path.append(best[2])
        prev = best[2]
    return chosen, path


@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("binary", [False, True])
def test_redundancy_rule_matches_a_brute_force_reference(seed, binary):
    rng = np.random.default_rng(seed)
    n, k = 25, 36
    y = rng.normal(size=(n, 1)) + rng.normal(size=(n, k)) + rng.normal(size=(1, k))
    if binary:
        y = (y > 0).astype(float)
        y = y[:, np.ptp(y, axis=0) > 0]
        y = y[:, np.sort(np.unique(y, axis=1, return_index=True)[1])]  # distinct columns
    chosen, path = _reference_redundancy(y, 10)
    sel = select_items(y, 10, rule="redundancy")
    assert sel.rule == "redundancy"
    assert sel.indices.tolist() == chosen
    np.testing.assert_allclose(sel.objective_path, path, atol=1e-12)
    dense = select_items(y, 10, rule="redundancy", solver="dense")
    assert dense.indices.tolist() == chosen


def test_full_shrinkage_removes_the_discount():
    # delta = 1: the shrunk correlation is I, rho_j = 0, so the rule is the plain greedy one
    rng = np.random.default_rng(7)
    y = (rng.normal(size=(30, 1)) + rng.normal(size=(30, 120)) > 0).astype(float)
    red = select_items(y, 15, shrinkage=1.0, rule="redundancy")
    greedy = select_items(y, 15, shrinkage=1.0, rule="greedy")
    np.testing.assert_array_equal(red.indices, greedy.indices)
    # with the automatic delta < 1 the rules part ways
    auto_red = select_items(y, 15, rule="redundancy")
    auto_greedy = select_items(y, 15, rule="greedy")
    assert not np.array_equal(auto_red.indices, auto_greedy.indices)


def _blocks(seed: int, *, n: int = 40, num_blocks: int = 5, per_block: int = 20):
    """Blocks of near-duplicate 0/1 columns (3% of entries flipped) around a common factor."""
    rng = np.random.default_rng(seed)
    theta = rng.normal(size=n)
    cols, labels = [], []
    for b in range(num_blocks):
        base = (theta + rng.normal(size=n) > 0.5 * rng.normal()).astype(float)
        for _ in range(per_block):
            col = base.copy()
            flip = rng.random(n) < 0.03
            col[flip] = 1 - col[flip]
            cols.append(col)
            labels.append(b)
    return np.array(cols).T, np.array(labels)


def test_redundancy_rule_spreads_over_blocks_of_near_duplicates():
    covered = {"redundancy": [], "greedy": []}
    for seed in range(5):
        y, labels = _blocks(seed)
        for rule in covered:
            sel = select_items(y, 5, rule=rule)
            covered[rule].append(np.unique(labels[sel.indices]).size)
    assert covered["greedy"] == [1] * 5  # greedy fills the budget from one block
    assert sum(covered["redundancy"]) >= 3 * sum(covered["greedy"])
    assert max(covered["redundancy"]) == 5  # one item per block where the blocks separate


def test_redundancy_rule_takes_fewer_copies_of_one_pattern():
    sim = simulate_irt(num_models=12, num_items=300, num_runs=1, seed=3)
    y = sim.scores[0]
    y = y[:, np.ptp(y, axis=0) > 0]
    copy = y[:, [int(np.argmax(y.var(axis=0)))]]
    y = np.hstack([y, np.repeat(copy, 200, axis=1)])  # one pattern, 201 times
    distinct = {
        rule: np.unique(
            y[:, select_items(y, 20, duplicates="keep", rule=rule).indices], axis=1
        ).shape[1]
        for rule in ("redundancy", "greedy")
    }
    assert distinct["greedy"] == 1
    assert distinct["redundancy"] > distinct["greedy"]


def test_redundancy_selection_beats_random_on_the_digits_zoo_and_greedy_does_not():
    """Real 0/1 data (55 sklearn classifiers x 899 digits test images, 6 runs): chosen on
    run A, judged by the mean Kendall tau over the 10 pairs of the other runs against 40
    random subsets per budget. The plain greedy rule fails the same test on the same data."""
    from neurips26.papers.lambda6_star import experiment

    zoo = digits_zoo(num_runs=6, seed=0)
    cfg = replace(experiment.TIERS["small"], num_random=40)
    s = experiment._selection(zoo.scores, cfg, np.random.default_rng(0),
                              ("redundancy", "collapse"))
    g = experiment._selection(zoo.scores, cfg, np.random.default_rng(0), ("greedy", "collapse"))
    assert s["sel_num_budgets"] == 5

    def beats_random(r: dict) -> bool:
        # wins on 4 of 5 budgets and a mean gain 3 standard errors above the random subsets
        return r["sel_wins"] >= 4 and r["sel_mean_gain"] > 3 * r["sel_mean_gain_se"]

    assert beats_random(s), (s["sel_wins"], s["sel_mean_gain"], s["sel_mean_gain_se"])
    assert not beats_random(g)


def test_rule_bad_input():
    y = np.random.default_rng(0).normal(size=(10, 8))
    for bad in ("fancy", None, 3, ""):
        with pytest.raises(ValueError, match="rule must be 'redundancy', 'greedy' or 'strata'"):
            select_items(y, 3, rule=bad)


def test_strata_rule_matches_a_brute_force_reference():
    rng = np.random.default_rng(11)
    y = rng.normal(size=(30, 1)) + rng.normal(size=(30, 37)) > rng.normal(size=(1, 37))
    y = y.astype(float)
    y = y[:, np.ptp(y, axis=0) > 0]
    y = y[:, np.sort(np.unique(y, axis=1, return_index=True)[1])]
    r2 = lambda6_star(y).item_r2
    k = y.shape[1]
    order = sorted(range(k), key=lambda j: (y[:, j].mean(), j))  # by difficulty, stable
    for budget in (1, 4, 9):
        groups, start = [], 0
        for b in range(budget):  # equal-count strata, the larger ones first
            size = k // budget + (1 if b < k % budget else 0)
            groups.append(order[start : start + size])
            start += size
        picks = [max(g, key=lambda j: (r2[j], -j)) for g in groups]  # first max in a stratum
        sel = select_items(y, budget, rule="strata")
        assert sorted(sel.indices.tolist()) == sorted(picks)
        assert np.all(np.diff(r2[sel.indices]) <= 0)  # taken in order of decreasing R*^2


def test_strata_rule_picks_one_item_per_block_of_near_duplicates():
    # five blocks of near-copies of one pattern each (one 0 and one 1 swapped, so the
    # mean score is the block's own); the blocks differ in difficulty, so the strata are
    # the blocks
    rng = np.random.default_rng(5)
    n, per_block = 40, 15
    theta = rng.normal(size=n)
    cols, labels = [], []
    for b, share in enumerate((0.2, 0.35, 0.5, 0.65, 0.8)):
        base = np.zeros(n)
        base[np.argsort(theta + 0.3 * rng.normal(size=n))[-int(share * n) :]] = 1.0
        for _ in range(per_block):
            col = base.copy()
            col[rng.choice(np.flatnonzero(base == 1))] = 0.0
            col[rng.choice(np.flatnonzero(base == 0))] = 1.0
            cols.append(col)
            labels.append(b)
    y, labels = np.array(cols).T, np.array(labels)
    sel = select_items(y, 5, rule="strata", duplicates="keep")
    assert sorted(labels[sel.indices].tolist()) == [0, 1, 2, 3, 4]
    greedy = select_items(y, 5, rule="greedy", duplicates="keep")
    assert np.unique(labels[greedy.indices]).size < 5


@pytest.mark.slow  # four zoo realisations: about 40 s on 2 shared cores
def test_strata_selection_beats_random_on_the_digits_zoo_over_realisations():
    """The small tier's protocol on the real digits zoo: 4 independent realisations (split,
    zoo training, perturbations), items chosen on run A of each, stability judged against
    random subsets; the replicate means must beat random at >= 4 of 5 budgets with a
    positive mean gain. The redundancy rule fails this test on the same realisations (one
    of them goes badly wrong); the plain greedy rule passes it too, so across realisations
    the digits advantage of strata over greedy is within the realisation noise (the
    claims read inconclusive there, see the experiment docstring)."""
    from neurips26.papers.lambda6_star import experiment

    cfg = replace(experiment.TIERS["small"], benchmarks=("digits",), num_random=30)
    zoo = digits_zoo(num_runs=cfg.num_runs, seed=cfg.seed)
    s = experiment._replicated_selection(
        "digits", zoo.scores, cfg, np.random.default_rng(0), ("strata", "keep"))
    assert s["num_replicates"] == 4 and s["sel_num_budgets"] == 5
    gain = s["sel_mean_gain"].value
    assert s["sel_wins"] >= 4 and gain > 0, (s["sel_wins"], gain)
    assert s["sel_mean_gain"].n == 4 and "replicates" in s["sel_mean_gain"].method
    assert s["redundancy_rule_wins"] < 4  # the same test, failed by the redundancy rule


# ------------------------------------------------------------- few models (issue 30)


def _few_model_data(seed: int):
    """LLM-like binary data from few models: 12 models, a 3PL guessing floor, a fifth of
    the items without signal (seeds apart from the experiment's claims and tuning)."""
    sim = simulate_irt(num_models=12, num_items=3000, num_runs=5, guessing=0.25,
                       null_share=0.2, discrimination_sd=0.5, seed=seed)
    return sim.scores


def _stability(runs, idx):
    held = runs[1:]
    return np.mean([ranking_tau(held[i][:, idx], held[j][:, idx])
                    for i in range(len(held)) for j in range(i + 1, len(held))])


def test_strata_selection_beats_random_on_few_model_data_with_duplicates_kept():
    """On few-model binary data the frequent response patterns are the informative ones;
    keeping every item (the default) lets lambda6*'s covariance weigh them, so the strata
    picks beat random subsets; one item per distinct pattern ("collapse") weighs the
    informative patterns as little as noise and its picks correlate less with the rest."""
    gains, collapse_gains, irc_keep, irc_collapse = [], [], [], []
    for seed in (424242, 424243):
        runs = _few_model_data(seed)
        a = runs[0]
        rng = np.random.default_rng(seed)
        valid = np.flatnonzero(np.ptp(a, axis=0) > 0)
        irc = item_rest_correlation(a)
        for k in (50, 200):
            rand = np.mean([_stability(runs, rng.choice(valid, k, replace=False))
                            for _ in range(20)])
            keep = select_items(a, k)
            collapse = select_items(a, k, duplicates="collapse")
            assert keep.num_duplicates == 0 and collapse.num_duplicates > 0
            gains.append(_stability(runs, keep.indices) - rand)
            collapse_gains.append(_stability(runs, collapse.indices) - rand)
            irc_keep.append(np.nanmean(irc[keep.indices]))
            irc_collapse.append(np.nanmean(irc[collapse.indices]))
    assert min(gains) > 0, gains
    assert np.mean(gains) > np.mean(collapse_gains) + 0.03, (gains, collapse_gains)
    assert np.mean(irc_keep) > np.mean(irc_collapse) + 0.1


def test_three_parameter_simulation_has_a_guessing_floor_and_no_signal_items():
    sim = simulate_irt(num_models=12, num_items=4000, num_runs=2, guessing=0.25,
                       null_share=0.2, seed=7)
    assert sim.scores.shape == (2, 12, 4000)
    null = sim.discrimination == 0
    assert 0.15 < null.mean() < 0.25
    assert np.all((sim.guessing >= 0.125) & (sim.guessing <= 0.375))
    # no-signal items: every model answers them with the same probability
    irc = item_rest_correlation(sim.scores[0])
    assert abs(np.nanmean(irc[null])) < 0.03 < np.nanmean(irc[~null])
    # the guessing floor: even the weakest model answers above it on average
    assert sim.scores[0].mean(axis=1).min() > 0.2
    # the 2PL stream is unchanged by the new arguments' defaults
    two = simulate_irt(num_models=12, num_items=50, seed=7)
    assert np.all(two.guessing == 0) and np.all(two.discrimination > 0)
    for bad, match in (({"guessing": 0.7}, "guessing"), ({"null_share": 1.0}, "null_share"),
                       ({"discrimination_sd": -1.0}, "discrimination_sd"),
                       ({"guessing": "a"}, "guessing")):
        with pytest.raises((ValueError, TypeError), match=match):
            simulate_irt(num_models=5, num_items=5, **bad)


def _fake_selection(taus: dict[int, tuple[float, float]], ref: float) -> dict:
    """A _selection-shaped result: per budget (lambda6* tau, random-pick tau)."""
    from neurips26.papers.lambda6_star import experiment

    rows = [{"budget": k, "tau_lambda6_star": a, "tau_random_mean": ref - 0.05,
             "tau_random_std": 0.01, "tau_random_pick": b, "tau_item_rest": a,
             "lambda6_star_subset": 0.5}
            | {f"tau_{rule}": a for rule in experiment.SELECTION_RULES}
            for k, (a, b) in taus.items()]
    return {"rows": rows, "ref_random_tau": ref, "num_duplicates": 0, "num_eval_pairs": 1,
            "select_seconds": 0.0}


def test_small_subset_count_is_combines_count_with_a_replicate_bootstrap():
    """The count's point value is what _combine's replicate means decide; its interval
    redraws each benchmark's replicates, so a benchmark that reaches the reference in
    only some replicates makes the count uncertain, and one that always does not."""
    from neurips26.papers.lambda6_star import experiment

    rng = np.random.default_rng(0)
    sels = {
        # reaches the reference at 50 items in every replicate
        "always": [_fake_selection({50: (0.9, 0.1), 200: (0.95, 0.2)}, 0.8)
                   for _ in range(8)],
        # half of the replicates reach it at 50 items: their mean does (0.825 >= 0.8),
        # but a redraw with fewer than four of them does not
        "sometimes": [_fake_selection({50: (0.95 if r % 2 else 0.70, 0.1),
                                       400: (0.7, 0.1)}, 0.8) for r in range(8)],
        "never": [_fake_selection({50: (0.5 + 0.01 * rng.random(), 0.1)}, 0.8)
                  for _ in range(8)],
    }
    combined = {n: experiment._combine(reps, "strata") for n, reps in sels.items()}
    got = experiment._small_match_intervals(combined, seed=1, num_resamples=400)
    est = got["num_small_subset_match"]
    expect = sum(1 for s in combined.values() if 0 < s["min_budget_match"] <= 100)
    assert est.value == expect == 2
    assert est.lo == 1 and est.hi == 2
    assert "bootstrap over replicates, stratified by bench" in est.method and est.n == 24
    ctrl = got["num_small_subset_match_random"]
    assert ctrl.value == ctrl.lo == ctrl.hi == 0
