"""Oracle tests for skill_laws: closed forms, independent implementations, special cases."""

from __future__ import annotations

import math
from collections import Counter

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.feature_extraction.text import TfidfVectorizer
from sklearn.metrics.pairwise import cosine_similarity

from neurips26.papers.skill_laws import (
    BM25Router,
    NoisyRouter,
    OracleRouter,
    QuerySet,
    RandomRouter,
    SkillLibrary,
    TfidfRouter,
    capture_rates,
    classify_errors,
    compare_law_models,
    execution_law,
    fit_log_law,
    flag_black_holes,
    generate_chains,
    generate_library,
    generate_queries,
    nested_candidates,
    optimise_library,
    routing_curve,
    routing_decisions,
    slope_rescue_coupling,
    taxonomy,
)

TOY = [
    "send email message to the contact",
    "book flight and hotel for travel",
    "convert audio recording to text transcript",
    "search email inbox for invoice attachment",
    "summarize long document report into summary",
]


def test_random_router_accuracy_is_one_over_n():
    # uniform random choice among N candidates is right with probability exactly 1/N
    m, q = 60, 40_000
    gold = np.random.default_rng(1).integers(0, m, size=q)
    lib = SkillLibrary.from_lists([f"skill {i}" for i in range(m)])
    scores = RandomRouter(seed=3).fit(lib).scores([f"q{i}" for i in range(q)])
    sizes = (2, 5, 10, 30, 60)
    acc = routing_decisions(scores, gold, sizes=sizes, seed=0).accuracy
    for n, a in zip(sizes, acc, strict=True):
        se = math.sqrt((1 / n) * (1 - 1 / n) / q)
        assert abs(a - 1 / n) < 4 * se, (n, a)
    # and the power law 1/N, not the log law, is the better model of this curve
    cmp = compare_law_models(sizes, acc)
    assert not cmp.log_best
    assert cmp.aic_power < cmp.aic_log


def test_oracle_router_has_accuracy_one_and_zero_slope():
    lib = generate_library(num_families=4, skills_per_family=10, seed=0)
    qs = generate_queries(lib, per_skill=2, seed=1)
    gold = {t: int(g) for t, g in zip(qs.texts, qs.gold, strict=True)}
    # deduplicate texts shared by two skills so the oracle is well defined
    keep = np.array([gold[t] == g for t, g in zip(qs.texts, qs.gold, strict=True)])
    qs = qs.subset(keep)
    law = routing_curve(OracleRouter(gold=gold), lib, qs, sizes=(2, 5, 10, 41), num_bootstrap=20)
    np.testing.assert_allclose(law.accuracy, 1.0)
    assert law.b == pytest.approx(0.0, abs=1e-12)
    assert law.a == pytest.approx(1.0)


def _bm25_loop(docs, query, k1=1.5, b=0.75):
    toks = [d.lower().split() for d in docs]
    n = len(toks)
    avgdl = sum(len(t) for t in toks) / n
    out = []
    for d in toks:
        tf = Counter(d)
        s = 0.0
        for w in query.lower().split():
            df = sum(w in t for t in toks)
            idf = math.log(1 + (n - df + 0.5) / (df + 0.5))
            f = tf[w]
            s += idf * f * (k1 + 1) / (f + k1 * (1 - b + b * len(d) / avgdl))
        out.append(s)
    return np.array(out)


@pytest.mark.parametrize("k1,b", [(1.5, 0.75), (1.2, 0.0), (2.0, 1.0)])
def test_bm25_equals_direct_okapi_loop(k1, b):
    lib = SkillLibrary.from_lists(TOY)
    queries = ["email invoice", "travel hotel hotel", "text to summary report", "unknown words"]
    scores = BM25Router(k1=k1, b=b).fit(lib).scores(queries)
    for i, q in enumerate(queries):
        np.testing.assert_allclose(scores[i], _bm25_loop(TOY, q, k1, b), rtol=1e-12, atol=1e-12)


def test_tfidf_equals_sklearn_cosine_and_numpy_formula():
    lib = SkillLibrary.from_lists(TOY)
    queries = ["email invoice attachment", "travel booking hotel", "audio to text"]
    ours = TfidfRouter().fit(lib).scores(queries)
    vec = TfidfVectorizer().fit(TOY)  # default analyser; the toy corpus has no 1-char words
    ref = cosine_similarity(vec.transform(queries), vec.transform(TOY))
    np.testing.assert_allclose(ours, ref, atol=1e-12)
    # independent numpy formula: smooth idf = ln((1 + n) / (1 + df)) + 1, l2-normalised
    vocab = sorted({w for d in TOY for w in d.split()})
    tf = np.array([[d.split().count(w) for w in vocab] for d in TOY], float)
    df = (tf > 0).sum(0)
    idf = np.log((1 + len(TOY)) / (1 + df)) + 1
    dv = tf * idf
    dv /= np.linalg.norm(dv, axis=1, keepdims=True)
    qtf = np.array([[q.split().count(w) for w in vocab] for q in queries], float) * idf
    qtf /= np.linalg.norm(qtf, axis=1, keepdims=True)
    np.testing.assert_allclose(ours, qtf @ dv.T, atol=1e-12)


def test_nested_libraries_are_nested_and_contain_gold():
    gold = np.array([0, 3, 3, 7, 9])
    cand = nested_candidates(gold, 10, 10, seed=4)
    assert cand.shape == (5, 10)
    np.testing.assert_array_equal(cand[:, 0], gold)
    for row in cand:
        assert sorted(row) == list(range(10))  # a permutation: no duplicates
    # prefix property: library N is a subset of library N' > N for the same query
    for n1, n2 in [(2, 5), (5, 9)]:
        for row in cand:
            assert set(row[:n1]) <= set(row[:n2])


@settings(max_examples=40, deadline=None)
@given(
    a=st.floats(0.2, 1.2),
    b=st.floats(-0.1, 0.3),
    sizes=st.lists(st.integers(2, 5000), min_size=3, max_size=8, unique=True),
)
def test_log_fit_recovers_parameters_exactly(a, b, sizes):
    n = np.sort(np.array(sizes))
    fit = fit_log_law(n, a - b * np.log(n))
    assert fit.a == pytest.approx(a, abs=1e-9)
    assert fit.b == pytest.approx(b, abs=1e-9)
    assert fit.r2 == pytest.approx(1.0, abs=1e-9) or abs(b) < 1e-9


def test_log_law_beats_alternatives_on_a_log_curve():
    n = np.array([10, 20, 50, 100, 200, 500, 1000])
    cmp = compare_law_models(n, 0.95 - 0.04 * np.log(n) + 0.001 * np.sin(n))
    assert cmp.log_best
    lin = compare_law_models(n, 0.95 - 0.0004 * n)
    assert not lin.log_best and lin.aic_linear < lin.aic_log


def test_error_classes_on_hand_built_confusions():
    families = np.array([0, 0, 1, 1, 2])
    bh = np.array([False, False, False, False, True])
    gold = np.array([0, 0, 0, 2, 2, 4, 4])
    chosen = np.array([0, 1, 2, 3, 4, 4, 0])
    labels = classify_errors(chosen, gold, families, bh)
    # correct, local, drift, local, black hole, correct (gold is a BH), drift
    np.testing.assert_array_equal(labels, [0, 1, 2, 1, 3, 0, 2])


def test_taxonomy_shares_sum_to_error_rate():
    lib = generate_library(num_families=5, skills_per_family=10, seed=2)
    qs = generate_queries(lib, per_skill=4, seed=3)
    scores = NoisyRouter(TfidfRouter(), temperature=0.5, seed=1).fit(lib).scores(qs.texts)
    dec = routing_decisions(scores, qs.gold, sizes=(5, 10, 25, 51), seed=0)
    tax = taxonomy(dec, lib)
    np.testing.assert_allclose(tax.local + tax.drift + tax.black_hole, tax.error_rate)
    np.testing.assert_allclose(tax.error_rate, 1 - dec.accuracy)
    ok = tax.error_rate > 0
    np.testing.assert_allclose((tax.local_share + tax.drift_share + tax.black_hole_share)[ok], 1.0)


def _capturing_library():
    # four ordinary families and two planted black holes, each containing every query
    # word of two families: every (vague) query is captured by one of them
    words = {0: "email inbox", 1: "flight hotel", 2: "audio podcast", 3: "garden plant"}
    desc, fam = [], []
    for f, w in words.items():
        for k in range(4):
            desc.append(f"{w} task{f}{k}")
            fam.append(f)
    desc += [
        f"general helper {words[0]} {words[1]} please help anything",
        f"general helper {words[2]} {words[3]} please help anything",
    ]
    fam += [4, 4]
    lib = SkillLibrary.from_lists(desc, families=fam, black_holes=[16, 17])
    texts, gold = [], []
    for s in range(16):
        texts.append(f"please help {words[fam[s]]}")  # only the family words: vague
        gold.append(s)
    return lib, QuerySet.from_lists(texts, gold, lib)


def test_black_hole_detection_finds_planted_black_holes():
    lib, qs = _capturing_library()
    cap = capture_rates(TfidfRouter(), lib, qs)
    assert set(flag_black_holes(cap).tolist()) == {16, 17}
    res = optimise_library(lib, qs, fixes=("black_hole",))
    assert set(res.flagged.tolist()) == set(lib.black_holes.tolist())
    dec = routing_decisions(TfidfRouter().fit(lib).scores(qs.texts), qs.gold, sizes=(18,))
    assert taxonomy(dec, lib).hijack_rate[0] == 1.0  # captured by construction
    dec2 = routing_decisions(TfidfRouter().fit(res.library).scores(qs.texts), qs.gold, sizes=(18,))
    assert taxonomy(dec2, res.library).hijack_rate[0] == 0.0  # narrowed: no capture


class _FixedScores:
    """A router whose scores are the same fixed vector for every query."""

    def __init__(self, s):
        self.s = np.asarray(s, float)

    def fit(self, library):
        return self

    def scores(self, queries):
        return np.tile(self.s, (len(queries), 1))


def test_noisy_router_is_a_softmax_sampler():
    s = np.array([0.0, 1.0, 2.0, 0.5])
    temp = 0.7
    lib = SkillLibrary.from_lists([f"s{i}" for i in range(4)])
    router = NoisyRouter(_FixedScores(s), temperature=temp, seed=5).fit(lib)
    q = 20_000
    picks = router.scores([f"q{i}" for i in range(q)]).argmax(axis=1)
    freq = np.bincount(picks, minlength=4) / q
    p = np.exp(s / (temp * s.std()))
    p /= p.sum()
    np.testing.assert_allclose(freq, p, atol=4 * np.sqrt(p * (1 - p) / q).max())


def test_execution_law_oracle_and_rescue():
    lib = generate_library(num_families=6, skills_per_family=12, seed=0)
    ch = generate_chains(lib, num_chains=60, seed=1)
    for s, t in zip(ch.skills, ch.state_texts, strict=True):
        for k in range(1, len(s)):  # state-connected
            assert lib.inputs[s[k]] == lib.outputs[s[k - 1]]
            assert t[k - 1] == f"a {lib.outputs[s[k - 1]]}"
    gold = {}
    for s, steps, states in zip(ch.skills, ch.step_texts, ch.state_texts, strict=True):
        for k, (g, q) in enumerate(zip(s, steps, strict=True)):
            gold[q] = int(g)
            if k:
                gold[f"{q} given {states[k - 1]}"] = int(g)
    ex = execution_law(OracleRouter(gold=gold), lib, ch)
    assert ex.joint_before == 1.0 and ex.product_pred == 1.0 and ex.product_gap == 0.0
    assert ex.rescue_ratio == 1.0
    tf = execution_law(TfidfRouter(), lib, ch)
    assert tf.step_accuracy_after > tf.step_accuracy_before
    assert tf.rescue_ratio > 1.0


def test_coupling_on_monotone_data():
    c = slope_rescue_coupling([0.01, 0.02, 0.03, 0.05], [4.0, 3.0, 2.5, 1.0])
    assert c.spearman_rho == pytest.approx(-1.0)
    assert c.slope < 0
