"""API, shape, bad-input, performance and smoke-run tests."""

from __future__ import annotations

import dataclasses
import warnings
from dataclasses import replace

import numpy as np
import pandas as pd
import pytest

from neurips26.papers import lambda6_star as L
from neurips26.registry import get_paper


@pytest.fixture
def binary():
    rng = np.random.default_rng(0)
    return (rng.normal(size=(30, 1)) + rng.normal(size=(30, 200)) > 0).astype(float)


def test_result_types_are_frozen_dataclasses_with_shapes(binary):
    vc = L.variance_components(binary)
    res = L.lambda6_star(binary)
    sel = L.select_items(binary, 7)
    for obj in (vc, res, sel, L.lambda6_star_loo(binary), L.split_half_tau(binary, num_splits=3)):
        assert dataclasses.is_dataclass(obj)
        with pytest.raises(dataclasses.FrozenInstanceError):
            obj.__setattr__(dataclasses.fields(obj)[0].name, 0)
    k = 200 - vc.dropped_items.size
    assert vc.num_models == 30 and vc.num_items == k
    assert res.item_error_var.shape == res.item_r2.shape == res.kept_items.shape == (k,)
    assert sel.indices.shape == sel.objective_path.shape == (7,)
    assert np.all((res.item_r2 >= 0) & (res.item_r2 <= 1))
    assert 0 < res.shrinkage <= 1


def test_dataframe_input_and_dropped_constant_items():
    rng = np.random.default_rng(1)
    y = (rng.normal(size=(12, 1)) + rng.normal(size=(12, 8)) > 0).astype(float)
    y[:, 2] = 1.0  # every model solves item 2
    y[:, 5] = 0.0
    df = pd.DataFrame(y, index=[f"m{i}" for i in range(12)], columns=[f"q{j}" for j in range(8)])
    vc = L.variance_components(df)
    assert vc.dropped_items.tolist() == [2, 5] and vc.num_items == 6
    assert L.g_coefficient(df) == L.g_coefficient(y)
    res = L.lambda6_star(df)
    assert res.kept_items.tolist() == [0, 1, 3, 4, 6, 7]
    sel = L.select_items(df, 6)
    assert sorted(sel.indices.tolist()) == [0, 1, 3, 4, 6, 7]  # never a constant item
    with pytest.raises(ValueError, match=r"budget must be in \[1, 6\].*2 were dropped"):
        L.select_items(df, 7)


def test_constant_items_do_not_change_rankings_or_reliability():
    rng = np.random.default_rng(2)
    y = rng.normal(size=(15, 1)) + rng.normal(size=(15, 10))
    padded = np.hstack([y, np.ones((15, 3))])
    assert L.g_coefficient(padded) == pytest.approx(L.g_coefficient(y), rel=1e-12)
    assert L.lambda6_star(padded).value == pytest.approx(L.lambda6_star(y).value, rel=1e-12)


def test_analyzer_fit_and_select(binary):
    an = L.ReliabilityAnalyzer(shrinkage=0.2)
    assert an.shrinkage == 0.2 and not hasattr(an, "rho_")
    with pytest.raises(RuntimeError, match="call fit"):
        an.select(3)
    assert an.fit(binary) is an
    assert an.lambda6_ill_posed_ and an.lambda6_ == 1.0
    assert an.lambda6_star_.shrinkage == 0.2
    assert an.rho_ == pytest.approx(an.snr_ / (1 + an.snr_))
    assert an.select(5).indices.shape == (5,)
    assert an.select(5).labels is None


def test_analyzer_select_keeps_the_item_labels(binary):
    # issue 30: select_items returns the chosen columns' labels; the analyzer did not
    df = pd.DataFrame(binary, columns=[f"item{j}" for j in range(binary.shape[1])])
    got = L.ReliabilityAnalyzer(shrinkage=0.2).fit(df).select(5)
    direct = L.select_items(df, 5, shrinkage=0.2)
    assert got.labels == tuple(df.columns[got.indices])
    assert got.labels == direct.labels
    # a constant column first shifts every kept item: labels follow the original columns
    padded = df.copy()
    padded.insert(0, "const", 1.0)
    for dup in ("keep", "collapse"):
        sel = L.ReliabilityAnalyzer(shrinkage=0.2).fit(padded).select(5, duplicates=dup)
        ref = L.select_items(padded, 5, shrinkage=0.2, duplicates=dup)
        assert sel.labels == ref.labels == tuple(padded.columns[sel.indices])
        assert "const" not in sel.labels


def test_cohorts_split_on_one_run_and_measure_on_another():
    sim = L.simulate_irt(num_models=40, num_items=300, seed=3)
    res = L.cohort_reliability(sim.scores[0], sim.scores[1])
    means = sim.scores[0].mean(axis=1)
    assert means[res.higher_models].min() >= means[res.lower_models].max()
    assert set(res.lower_models) | set(res.higher_models) == set(range(40))
    assert 0 <= res.higher_reliability <= 1 and 0 <= res.lower_reliability <= 1


def test_expected_tau_and_spearman_brown_values():
    assert L.expected_kendall_tau(1.0) == pytest.approx(1.0)
    assert L.expected_kendall_tau(0.0) == 0.0
    assert L.spearman_brown(0.3, 1.0) == pytest.approx(0.3)
    assert L.spearman_brown(0.5, 3) == pytest.approx(0.75)


def test_split_half_prediction_is_close_on_gaussian_data():
    rng = np.random.default_rng(4)
    y = rng.normal(size=(60, 1)) * 0.3 + rng.normal(size=(60, 80))
    res = L.split_half_tau(y, num_splits=60, seed=1)
    assert abs(res.predicted_tau - res.observed_tau) < 0.05


@pytest.mark.parametrize(("rule", "least"), [("greedy", 0.9), ("redundancy", 0.9), ("strata", 0.6)])
def test_selection_beats_random_on_heterogeneous_items(rule, least):
    # half the items are pure noise of the same difficulty; lambda6* must prefer the
    # informative ones. The strata rule takes one item from every difficulty stratum, so
    # a stratum of mostly noise items still gives one: it only beats chance (0.5) there.
    rng = np.random.default_rng(5)
    theta = rng.normal(size=(40, 1))
    y = np.hstack([theta + 0.5 * rng.normal(size=(40, 50)), rng.normal(size=(40, 50))])
    sel = L.select_items(y, 20, rule=rule)
    assert np.mean(sel.indices < 50) >= least


# ---------------------------------------------------------------------------------- bad input


@pytest.mark.parametrize(
    ("scores", "exc", "match"),
    [
        (np.ones(5), ValueError, "must be 2-D"),
        (np.ones((2, 3, 4)), ValueError, "must be 2-D"),
        ([[1, 2, 3], [1, 2]], ValueError, "ragged"),
        (np.array([[1.0, np.nan], [2, 3], [4, 5]]), ValueError, "NaN or infinite"),
        (np.array([[1.0, np.inf], [2, 3], [4, 5]]), ValueError, "NaN or infinite"),
        (np.ones((2, 5)), ValueError, "at least 3 models"),
        (np.ones((5, 1)), ValueError, "at least 2 items"),
        (np.ones((5, 4)), ValueError, "all 4 items have zero variance"),
        (np.array([["a", "b"], ["c", "d"], ["e", "f"]]), TypeError, "numeric"),
        (np.zeros((0, 3)), ValueError, "at least 3 models"),
    ],
)
def test_bad_scores_raise_clear_errors(scores, exc, match):
    for fn in (
        L.variance_components,
        L.g_coefficient,
        L.guttman_lambda6,
        L.lambda6_star,
        L.lambda6_star_loo,
    ):
        with pytest.raises(exc, match=match):
            fn(scores)


def test_one_varying_item_is_not_enough():
    y = np.ones((6, 4))
    y[:, 0] = np.arange(6)
    with pytest.raises(ValueError, match="only 1 item"):
        L.lambda6_star(y)


def test_non_numeric_dataframe_column():
    df = pd.DataFrame({"a": [1.0, 0, 1], "b": ["x", "y", "z"]})
    with pytest.raises(TypeError, match=r"non-numeric columns: \['b'\]"):
        L.g_coefficient(df)


def test_bad_hyperparameters(binary):
    with pytest.raises(ValueError, match=r"shrinkage must lie in \[0, 1\]"):
        L.lambda6_star(binary, shrinkage=1.5)
    with pytest.raises(ValueError, match="shrinkage must lie"):
        L.lambda6_star(binary, shrinkage=-0.1)
    with pytest.raises(ValueError, match="'auto'"):
        L.lambda6_star(binary, shrinkage="ledoit")
    with pytest.raises(ValueError, match="solver"):
        L.lambda6_star(binary, solver="cholesky")
    with pytest.raises(ValueError, match="ridge must be > 0"):
        L.lambda6_star_loo(binary, ridge=0.0)
    with pytest.raises(ValueError, match="budget must be in"):
        L.select_items(binary, 0)
    with pytest.raises(ValueError, match="budget must be in"):
        L.select_items(binary, 10_000)
    with pytest.raises(TypeError, match="budget must be an int"):
        L.select_items(binary, 2.5)
    with pytest.raises(ValueError, match="refit"):
        L.select_items(binary, 3, refit="always")
    with pytest.raises(ValueError, match="shrinkage must be > 0"):
        L.select_items(binary, 3, shrinkage=0.0)
    with pytest.raises(ValueError, match="num_items must be >= 1"):
        L.g_coefficient(binary, num_items=0)
    with pytest.raises(ValueError, match="reliability must lie"):
        L.expected_kendall_tau(1.2)
    with pytest.raises(ValueError, match="against"):
        L.expected_kendall_tau(0.5, against="oracle")
    with pytest.raises(ValueError, match="factor must be > 0"):
        L.spearman_brown(0.5, 0)
    with pytest.raises(ValueError, match="num_splits"):
        L.split_half_tau(binary, num_splits=0)


def test_cohort_bad_input():
    rng = np.random.default_rng(0)
    y = rng.normal(size=(5, 10))
    with pytest.raises(ValueError, match="at least 3 models"):
        L.cohort_reliability(y, y)
    y = rng.normal(size=(8, 10))
    with pytest.raises(ValueError, match="same shape"):
        L.cohort_reliability(y, y[:, :9])
    with pytest.raises(ValueError, match="split must be 'median'"):
        L.cohort_reliability(y, y, split="tercile")


def test_dense_solver_is_refused_above_2000_items():
    y = np.random.default_rng(0).normal(size=(10, 2100))
    with pytest.raises(ValueError, match="refused for K > 2000"):
        L.lambda6_star(y, solver="dense")


# --------------------------------------------------------------------------------- performance


def _wide_scores() -> np.ndarray:
    rng = np.random.default_rng(0)
    return (rng.normal(size=(100, 1)) + rng.normal(size=(100, 5000)) > 0).astype(float)


def test_no_dense_inverse_above_2000_items(monkeypatch):
    def boom(*args, **kwargs):
        raise AssertionError("dense K x K inverse used")

    y = _wide_scores()
    monkeypatch.setattr(np.linalg, "inv", boom)
    res = L.lambda6_star(y)
    sel = L.select_items(y, 500)
    for rule in ("greedy", "redundancy"):
        assert L.select_items(y, 500, rule=rule).indices.size == 500
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", L.IllPosedWarning)
        L.guttman_lambda6(y)
    assert 0 < res.value < 1 and sel.indices.size == 500


# ---------------------------------------------------------------------------------- experiment


def test_smoke_run_produces_every_smoke_claim_metric():
    from neurips26.papers.lambda6_star import experiment

    result = experiment.run(experiment.TIERS["smoke"])
    paper = get_paper("lambda6_star")
    verdicts = {c.id: c.verdict for c in paper.evaluate(result.metrics, "smoke")}
    for claim in paper.claims:
        if "smoke" in claim.tiers:
            assert claim.metric in result.metrics
            assert verdicts[claim.id] != "not run"
    assert result.metrics["lambda6_ill_posed"] is True
    assert set(result.figures) >= {"tau_mapping", "selection", "cohorts"}
    again = experiment.run(experiment.TIERS["smoke"])
    assert again.stable_metrics() == result.stable_metrics()
    # the selection setting is chosen on tuning realisations, recorded beside the claims'
    assert {f"tune_{r}_{d}_min_gain" for r in ("strata", "greedy", "redundancy")
            for d in ("keep", "collapse")} <= set(result.metrics)
    assert result.metrics["num_tuning_realisations"] == 2
    assert sum(row["chosen"] for row in result.tables["tuning"]) == 1
    roles = {row["role"] for row in result.tables["seeds"]}
    assert roles == {"tuning", "claims"}
    assert any("chosen on the tuning realisations" in n for n in result.notes)
    # the selection claims' controls: the same statistics with a random subset
    for name in ("random_selection_min_win_share", "random_selection_min_mean_gain",
                 "num_small_subset_match_random", "num_higher_cohort_less_reliable_random"):
        assert name in result.metrics, name
    share = result.intervals["selection_min_win_share"]
    assert share["method"].startswith("wilson binomial") and share["level"] == 0.95


def test_tuning_seeds_must_stay_apart_from_the_claims_seeds():
    from neurips26.papers.lambda6_star import experiment

    smoke = experiment.TIERS["smoke"]
    for bad in ((smoke.seed,), (smoke.seed - 2,), (5, 5)):
        with pytest.raises(ValueError, match="tuning_seeds"):
            experiment.run(replace(smoke, tuning_seeds=bad))
    # a fixed setting needs no tuning units
    fixed = experiment.run(replace(smoke, rule="strata", duplicates="keep"))
    assert fixed.metrics["num_tuning_realisations"] == 0
    assert not any(k.startswith("tune_") for k in fixed.metrics)


def test_simulation_true_reliability_is_recovered():
    sim = L.simulate_irt(num_models=200, num_items=400, seed=1)
    assert L.g_coefficient(sim.scores[0]) == pytest.approx(sim.true_reliability, abs=0.01)


def test_benchbench_tables_load():
    pytest.importorskip("benchbench")  # presence only; its python modules are never imported
    mmlu = L.load_benchbench("mmlu")
    imagenet = L.load_benchbench("imagenet")
    assert mmlu.shape == (98, 57) and imagenet.shape == (112, 1000)
    assert 0 <= mmlu.to_numpy().min() and imagenet.to_numpy().max() <= 1
    with pytest.raises(ValueError, match="unknown benchbench table"):
        L.load_benchbench("helm_typo")


def test_dataframes_in_labelled_results_out():
    import pandas as pd

    rng = np.random.default_rng(3)
    y = (rng.normal(size=(20, 1)) + rng.normal(size=(20, 30)) > 0).astype(float)
    frame = pd.DataFrame(y, index=[f"model{i}" for i in range(20)],
                         columns=[f"q{j}" for j in range(30)])
    irc = L.item_rest_correlation(frame)
    assert isinstance(irc, pd.Series) and list(irc.index) == list(frame.columns)
    np.testing.assert_allclose(irc.to_numpy(), L.item_rest_correlation(y), rtol=1e-12)
    sel = L.select_items(frame, 5)
    assert sel.labels == tuple(frame.columns[sel.indices])
    assert L.select_items(y, 5).labels is None
    np.testing.assert_array_equal(L.select_items(y, 5).indices, sel.indices)
