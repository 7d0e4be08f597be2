"""Metrics and corpus tools against closed forms and exact computations."""

import math
from itertools import combinations

import numpy as np
import pytest

from neurips26.papers.sfd_edgar import (
    Cell,
    TableGrid,
    cell_triples,
    count_tokens,
    duplication_rate,
    fact_recall,
    ixbrl_facts,
    jaccard,
    near_duplicates,
    ngram_overlap,
    numeric_recall,
    shingles,
    table_metrics,
    teds,
    tokenizer_name,
)
from neurips26.papers.sfd_edgar.metrics import levenshtein, numbers_in

GOLD = TableGrid(rows=((Cell(""), Cell("2024"), Cell("2023")),
                       (Cell("Sales"), Cell("$1,000"), Cell("$900")),
                       (Cell("Costs"), Cell("(400)"), Cell("(350)"))), header_rows=1)


def test_teds_hand_computed():
    a = TableGrid(rows=((Cell("a"), Cell("b")),))
    # table, tbody, tr, 2 x td = 5 nodes; renaming b -> c costs lev/len = 1
    assert teds(TableGrid(rows=((Cell("a"), Cell("c")),)), a) == pytest.approx(0.8)
    assert teds(TableGrid(rows=((Cell("a"),),)), a) == pytest.approx(0.8)  # one deletion
    # a span mismatch costs a full rename: 1 - 1/5
    assert teds(TableGrid(rows=((Cell("a"), Cell("b", colspan=2)),)), a) == pytest.approx(0.8)
    # half the characters of one cell differ: rename cost 0.5
    b = TableGrid(rows=((Cell("a"), Cell("xy")),))
    assert teds(TableGrid(rows=((Cell("a"), Cell("xz")),)), b) == pytest.approx(1 - 0.5 / 5)
    assert teds(GOLD, GOLD) == 1.0


def test_levenshtein_against_brute_force_small():
    assert levenshtein("", "abc") == 3 and levenshtein("flaw", "lawn") == 2


def test_cell_triples_and_metrics():
    t = cell_triples(GOLD)
    assert t[("sales", "2024", "$1,000")] == 1 and sum(t.values()) == 4
    split = TableGrid(rows=((Cell(""), Cell("2024"), Cell(""), Cell("2023")),
                            (Cell("Sales"), Cell("$"), Cell("1,000"), Cell("$900")),
                            (Cell("Costs"), Cell("(400"), Cell(")"), Cell("(350)"))),
                      header_rows=1)
    m = table_metrics(split, GOLD)
    assert m.numeric_recall == 1.0  # every number is still in its row
    assert m.cell_f1 < 0.6 and m.teds < 1.0
    assert table_metrics(None, GOLD).cell_f1 == 0.0
    assert table_metrics(GOLD, GOLD).cell_f1 == 1.0


def test_numeric_recall_counts_multiset():
    wrong_row = TableGrid(rows=((Cell("Sales"), Cell("400"), Cell("350")),
                                (Cell("Costs"), Cell("1,000"), Cell("900"))))
    assert numeric_recall([wrong_row], [GOLD]) == 0.0
    assert numbers_in("$(1,056) 0.50 007") == ["1056", "0.5", "7"]


def test_ixbrl_facts_nested_once():
    html = ("<table><tr><td>Shares</td><td><ix:nonFraction name='a'><ix:nonFraction name='b'>"
            "15,550</ix:nonFraction></ix:nonFraction></td></tr></table>"
            "<ix:header><table><tr><td>x</td><td><ix:nonFraction>9</ix:nonFraction></td></tr>"
            "</table></ix:header>")
    assert ixbrl_facts(html) == [("shares", "15550")]
    grid = TableGrid(rows=((Cell("Shares"), Cell("15,550")),))
    assert fact_recall([grid], ixbrl_facts(html)) == 1.0


def test_duplication_rate_detects_repeats():
    src = "<div><p>" + "The quick brown fox jumps over the lazy dog again." + "</p></div>"
    assert duplication_rate(src, "The quick brown fox jumps over the lazy dog again.") == 0.0
    assert duplication_rate(src, "The quick brown fox jumps over the lazy dog again. " * 2) == 1.0
    with pytest.raises(TypeError, match="output"):
        duplication_rate(src, None)


def test_minhash_identical_and_disjoint():
    rng = np.random.default_rng(0)
    words = [f"w{int(i)}" for i in rng.integers(0, 5000, 400)]
    a = " ".join(words)
    other = " ".join(f"z{int(i)}" for i in rng.integers(0, 5000, 400))
    pairs = near_duplicates({"a": a, "b": a, "c": other})
    assert pairs == [("a", "b", 1.0)]
    assert jaccard(shingles(a), shingles(other)) == 0.0


def test_near_duplicates_equal_exact_pairs():
    """Against brute force: every pair with exact Jaccard >= t is found, none other."""
    rng = np.random.default_rng(1)
    base = [" ".join(f"t{int(i)}" for i in rng.integers(0, 3000, 300)) for _ in range(6)]
    docs = {f"d{k}": t for k, t in enumerate(base)}
    for k, t in enumerate(base[:3]):  # light edits: Jaccard about 0.9
        w = t.split()
        for pos in rng.choice(len(w), 4, replace=False):
            w[int(pos)] = "edited"
        docs[f"e{k}"] = " ".join(w)
    sh = {k: shingles(v) for k, v in docs.items()}
    truth = {tuple(sorted(p)) for p in combinations(docs, 2) if jaccard(*(sh[q] for q in p)) >= 0.8}
    found = {(a, b) for a, b, _ in near_duplicates(docs, threshold=0.8)}
    assert truth and found == truth


def test_ngram_overlap_planted():
    b = ["alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu nu xi"]
    a = [b[0] + " extra words", "completely different text with many other words " * 3]
    r = ngram_overlap(a, b, n=13)
    assert r.fraction_docs == 0.5 and 0 < r.fraction_ngrams < 1
    assert ngram_overlap(["x y z"], ["x y z"], n=13).fraction_docs == 0.0


def test_tokens():
    assert tokenizer_name() == "cl100k_base"
    assert count_tokens("hello world") == 2
    assert count_tokens("") == 0


@pytest.mark.parametrize(
    ("call", "exc", "name"),
    [
        (lambda: near_duplicates(["a"]), TypeError, "docs"),
        (lambda: near_duplicates({"a": "x"}, threshold=1.5), ValueError, "threshold"),
        (lambda: near_duplicates({"a": "x"}, threshold=math.nan), ValueError, "threshold"),
        (lambda: near_duplicates({"a": "x"}, num_perm=2), ValueError, "num_perm"),
        (lambda: near_duplicates({"a": 3}), TypeError, "docs"),
        (lambda: ngram_overlap("abc", ["x"]), TypeError, "corpus_a"),
        (lambda: ngram_overlap([], ["x"]), ValueError, "corpus_a"),
        (lambda: ngram_overlap(["a"], ["x"], n=0), ValueError, "n"),
        (lambda: shingles("a b", k=0), ValueError, "k"),
        (lambda: count_tokens(b"x"), TypeError, "text"),
        (lambda: teds("x", GOLD), TypeError, "pred"),
        (lambda: table_metrics(GOLD, "x"), TypeError, "gold"),
        (lambda: cell_triples([]), TypeError, "grid"),
    ],
)
def test_bad_arguments_named(call, exc, name):
    with pytest.raises(exc, match=name):
        call()
