"""Law-guided library optimisation: audit, boundary rewriting, black holes, anchoring.

The paper turns its laws into four fixes of the *library* (not the router): separate
near-duplicate skills (local competition), make each skill's boundary explicit
(drift), narrow over-general skills (black holes) and anchor routing on the skill
family. This module implements concrete, router-agnostic text rewrites of each fix;
they need only the descriptions, the family labels and a validation query split.

Deviations from the paper
-------------------------
All four concrete forms are inferred (the paper names the fixes only):

- ``audit``: pairs whose TF-IDF description cosine is at least ``audit_tau`` get a
  contrastive clause; because bag-of-words and small embedding routers do not
  understand "not for ...", the clause restates each skill's own distinctive words
  (``"specifically: ..."``) instead of negating the neighbour's.
- ``rewrite``: the ``num_keywords`` most discriminative words against the siblings
  (TF-IDF with document frequencies within the family) move to the front and generic
  words (in more than ``generic_df`` of all descriptions) are dropped, except the state
  types.
- ``black_hole``: a skill is flagged when its capture rate on the validation split
  (share of all validation queries routed to it at full library size) is an outlier
  of the library's capture distribution: a robust z-score (median and MAD, the
  Iglewicz-Hoaglin rule) above ``black_hole_z`` (:func:`flag_black_holes`). The spec's
  fixed rule (capture above ``5/N``) is not used: it depends on how many black holes
  share the captured queries and, with many of them, flags none. A flagged skill is
  narrowed to its name, its state types and the description words its own
  validation queries use more often than the queries it captured, dropping words
  found in more than ``generic_df`` of all validation queries (so it loses the
  generic words it steals with), or removed (``black_hole_action="remove"``, which
  makes its own queries fail).
- ``anchor``: instead of a two-stage router, each description is prefixed with its
  family anchor, the family's most characteristic words (within-family document
  frequency times global IDF); routers then match the family in any of its synonyms.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from neurips26.common.validation import check_array, check_float, check_int

from .laws import route_top1
from .library import QuerySet, SkillLibrary, generate_queries, generic_draws, tokenize
from .routers import Router, TfidfRouter

__all__ = [
    "FIXES",
    "BlackHoleCalibration",
    "OptimisationResult",
    "calibrate_black_holes",
    "capture_rates",
    "flag_black_holes",
    "optimise_library",
]

#: The fixes :func:`optimise_library` knows, in the order they are applied.
FIXES: tuple[str, ...] = ("black_hole", "rewrite", "audit", "anchor")


@dataclass(frozen=True)
class OptimisationResult:
    """An optimised library and what the optimiser changed.

    Attributes
    ----------
    library : SkillLibrary
        The rewritten library (same skills and order unless black holes were removed).
    fixes : tuple of str
        The fixes applied.
    audited_pairs : int
        Skill pairs given contrastive clauses.
    flagged : ndarray of int
        Indices (in the input library) of skills flagged as black holes.
    kept : ndarray of int
        Index in the input library of each skill of the output library.
    """

    library: SkillLibrary
    fixes: tuple[str, ...]
    audited_pairs: int
    flagged: np.ndarray
    kept: np.ndarray


def _route_all(
    router: Router,
    library: SkillLibrary,
    queries: QuerySet,
    *,
    seed: int = 0,
    exclude: np.ndarray | None = None,
) -> np.ndarray:
    """Top-1 choice of each query over the whole library (less ``exclude``), shape (Q,)."""
    if not isinstance(queries, QuerySet):
        raise TypeError(f"queries must be a QuerySet, got {type(queries).__name__}")
    queries.check_against(library)
    router.fit(library)
    scores = np.asarray(router.scores(list(queries.texts)), dtype=np.float64)  # (Q, N)
    if exclude is not None and np.any(exclude):
        scores[:, exclude] = -np.inf
    cand = np.broadcast_to(np.arange(library.num_skills), scores.shape)
    return route_top1(scores, cand, seed=seed)  # (Q,)


def capture_rates(
    router: Router, library: SkillLibrary, queries: QuerySet, *, seed: int = 0
) -> np.ndarray:
    """Routing share of each skill: the fraction of all queries routed to it.

    A skill's fair share is ``1/N``; a black hole's is many times that.

    Parameters
    ----------
    router : Router
        Fitted here on ``library``; every skill is a candidate.
    library : SkillLibrary
        The library (size ``N``).
    queries : QuerySet
        Validation queries.
    seed : int
        Tie-breaking seed.

    Returns
    -------
    ndarray, shape (N,)
        ``capture[s] = #{q : chosen(q) = s} / Q``.
    """
    chosen = _route_all(router, library, queries, seed=seed)  # (Q,)
    counts = np.bincount(chosen, minlength=library.num_skills)
    return counts / queries.num_queries


def flag_black_holes(
    capture: np.ndarray, *, z: float = 3.5, min_ratio: float = 2.0
) -> np.ndarray:
    """Skills whose capture rate is an outlier of the library's capture distribution.

    The robust z-score of skill ``s`` is ``z_s = (c_s - median(c)) / (1.4826 MAD(c))``
    (the Iglewicz-Hoaglin modified z-score; ``1.4826 MAD`` estimates the standard
    deviation of a normal sample). When more than half the rates are equal, the MAD is
    zero and the scale falls back to ``1.2533`` times the mean absolute deviation from
    the median; when that is zero too the distribution is flat and nothing is flagged.
    A flagged skill must also take at least ``min_ratio`` times the median share, so
    that the sampling noise of a flat distribution (whose tail has a few z-outliers
    in a large library) is not mistaken for a black hole.

    Parameters
    ----------
    capture : array_like of float, shape (N,)
        Capture rate (or count) of each skill, >= 0, e.g. from :func:`capture_rates`.
    z : float
        Threshold on the robust z-score (> 0); 3.5 is Iglewicz and Hoaglin's.
    min_ratio : float
        Least multiple of the median capture a black hole takes (>= 1).

    Returns
    -------
    ndarray of int, shape (B,)
        Indices of the flagged skills, increasing.

    Examples
    --------
    >>> flag_black_holes([0.01, 0.012, 0.011, 0.009, 0.01, 0.2, 0.01])
    array([5])
    >>> flag_black_holes([0.1] * 10).size
    0
    """
    c = check_array(capture, "capture", dtype=np.float64, ndim=1, min=0.0)
    z = check_float(z, "z", min=0.0, min_inclusive=False)
    min_ratio = check_float(min_ratio, "min_ratio", min=1.0)
    med = float(np.median(c))
    dev = np.abs(c - med)
    scale = 1.4826 * float(np.median(dev))
    if scale <= 0:
        scale = 1.2533 * float(dev.mean())
    if scale <= 0:  # flat: every skill takes the same share
        return np.array([], dtype=np.int64)
    with np.errstate(over="ignore"):
        out = ((c - med) / scale > z) & (c >= min_ratio * med)
    return np.flatnonzero(out).astype(np.int64)


@dataclass(frozen=True)
class BlackHoleCalibration:
    """The generic-phrasing probability that gives black holes a target capture rate.

    Attributes
    ----------
    generic_prob : float
        The value of ``generate_queries(generic_prob=...)`` to use.
    capture : float
        The black holes' capture rate it gives on the validation split (reference
        router, full library).
    target : float
        The capture rate asked for.
    capture_range : tuple of float
        Capture rate at ``generic_prob`` 0 and 1 (the reachable range).
    """

    generic_prob: float
    capture: float
    target: float
    capture_range: tuple[float, float]


def calibrate_black_holes(
    library: SkillLibrary,
    *,
    target_capture: float = 0.224,
    router: Router | None = None,
    per_skill: int = 5,
    keyword_dropout: float = 0.3,
    distractor_prob: float = 0.2,
    heldout_frac: float = 0.6,
    seed: int = 0,
) -> BlackHoleCalibration:
    """Set the simulator's query vagueness so black holes capture ``target_capture``.

    The hijack rate is not forced: it is moved through the generative model, the
    probability ``generic_prob`` that a query is phrased vaguely (see
    :func:`~neurips26.papers.skill_laws.generate_queries`). Which queries turn
    generic is nested in ``generic_prob`` (:func:`generic_draws`), so scoring the
    validation split once without and once with every query generic gives the capture
    rate at every ``generic_prob`` exactly; the value whose capture is closest to the
    target is returned. Only the validation (non-held-out) split is used.

    Parameters
    ----------
    library : SkillLibrary
        A generated library with black holes.
    target_capture : float
        Share of all validation queries routed to a black hole, in (0, 1) (the paper's
        hijack rate before optimisation is 22.4%).
    router : Router, optional
        Reference router (default :class:`TfidfRouter`), fitted on ``library``.
    per_skill, keyword_dropout, distractor_prob, heldout_frac, seed
        The settings later given to :func:`generate_queries` (same ``seed``).

    Returns
    -------
    BlackHoleCalibration
        ``generic_prob`` is 1 when even fully generic queries fall short of the target
        (``capture`` then says how far).
    """
    if not isinstance(library, SkillLibrary):
        raise TypeError(f"library must be a SkillLibrary, got {type(library).__name__}")
    target = check_float(
        target_capture, "target_capture", min=0.0, max=1.0, min_inclusive=False,
        max_inclusive=False,
    )
    if library.black_holes.size == 0:
        raise ValueError("library has no black holes; nothing to calibrate")
    kw = dict(
        per_skill=per_skill,
        keyword_dropout=keyword_dropout,
        distractor_prob=distractor_prob,
        heldout_frac=heldout_frac,
        seed=seed,
    )
    plain = generate_queries(library, generic_prob=0.0, **kw)
    vague = generate_queries(library, generic_prob=1.0, **kw)
    u = generic_draws(seed, plain.num_queries)[0]  # (Q,)
    val = ~plain.heldout
    router = router or TfidfRouter()
    bh = library.is_black_hole()
    c0 = bh[_route_all(router, library, plain.subset(val), seed=seed)]  # (V,)
    c1 = bh[_route_all(router, library, vague.subset(val), seed=seed)]  # (V,)
    uv = u[val]
    order = np.argsort(uv, kind="stable")
    uv, c0, c1 = uv[order], c0[order].astype(float), c1[order].astype(float)
    n = uv.size
    # capture when the k queries with the smallest u are generic, k = 0..n
    cap = (np.concatenate([[0.0], np.cumsum(c1)]) + c0.sum()
           - np.concatenate([[0.0], np.cumsum(c0)])) / n  # (n + 1,)
    k = int(np.argmin(np.abs(cap - target)))
    edges = np.concatenate([[0.0], uv, [1.0]])
    gp = 1.0 if k == n else float(0.5 * (edges[k] + edges[k + 1]))
    return BlackHoleCalibration(
        generic_prob=gp, capture=float(cap[k]), target=target,
        capture_range=(float(cap[0]), float(cap[-1])),
    )


def _doc_freq(token_sets: Sequence[set[str]]) -> Counter:
    df: Counter = Counter()
    for toks in token_sets:
        df.update(toks)
    return df


def optimise_library(
    library: SkillLibrary,
    validation: QuerySet,
    *,
    router: Router | None = None,
    fixes: Sequence[str] = FIXES,
    audit_tau: float = 0.5,
    black_hole_z: float = 3.5,
    num_keywords: int = 3,
    generic_df: float = 0.1,
    black_hole_action: str = "narrow",
    black_hole_rounds: int = 3,
    seed: int = 0,
) -> OptimisationResult:
    """Rewrite a skill library as the routing laws suggest.

    Parameters
    ----------
    library : SkillLibrary
        The library to fix (``N`` skills).
    validation : QuerySet
        Validation queries (never the held-out split): used only to find black holes
        and the words users use for a skill.
    router : Router, optional
        Router used to measure capture rates (default :class:`TfidfRouter`).
    fixes : sequence of str
        Subset of ``("black_hole", "rewrite", "audit", "anchor")``.
    audit_tau : float
        TF-IDF cosine in (0, 1] above which two descriptions are audited.
    black_hole_z : float
        A skill whose capture rate on the validation queries has a robust z-score
        above ``black_hole_z`` is a black hole (> 0; see :func:`flag_black_holes`).
    num_keywords : int
        Discriminative words front-loaded by ``rewrite`` (>= 1).
    generic_df : float
        Document-frequency share in (0, 1] above which ``rewrite`` drops a word from
        descriptions, and ``black_hole`` narrowing drops a word common in queries.
    black_hole_action : {"narrow", "remove"}
        What happens to a flagged skill.
    black_hole_rounds : int
        Rounds of flag-and-fix (>= 1): capture is measured again after each round,
        since the queries a fixed black hole held can fall to the next one.
    seed : int
        Tie-breaking seed for the capture measurement.

    Returns
    -------
    OptimisationResult

    Examples
    --------
    >>> from neurips26.papers.skill_laws import generate_library, generate_queries
    >>> lib = generate_library(num_families=4, skills_per_family=8, black_hole_frac=0.1)
    >>> val = generate_queries(lib, seed=1)
    >>> res = optimise_library(lib, val.subset(~val.heldout))
    >>> res.library.num_skills <= lib.num_skills
    True
    """
    if not isinstance(library, SkillLibrary):
        raise TypeError(f"library must be a SkillLibrary, got {type(library).__name__}")
    if not isinstance(validation, QuerySet):
        raise TypeError(f"validation must be a QuerySet, got {type(validation).__name__}")
    validation.check_against(library)
    if isinstance(fixes, str):
        raise TypeError("fixes must be a sequence of fix names, not a single string")
    unknown = sorted(set(fixes) - set(FIXES))
    if unknown:
        raise ValueError(f"unknown fixes {unknown}; valid fixes: {FIXES}")
    if not 0.0 < audit_tau <= 1.0:
        raise ValueError(f"audit_tau must be in (0, 1], got {audit_tau}")
    black_hole_z = check_float(black_hole_z, "black_hole_z", min=0.0, min_inclusive=False)
    black_hole_rounds = check_int(black_hole_rounds, "black_hole_rounds", min=1)
    if num_keywords < 1:
        raise ValueError(f"num_keywords must be >= 1, got {num_keywords}")
    if not 0.0 < generic_df <= 1.0:
        raise ValueError(f"generic_df must be in (0, 1], got {generic_df}")
    if black_hole_action not in ("narrow", "remove"):
        raise ValueError(
            f"black_hole_action must be 'narrow' or 'remove', got {black_hole_action!r}"
        )
    n = library.num_skills
    desc = list(library.descriptions)
    keep = np.ones(n, dtype=bool)
    flagged = np.array([], dtype=np.int64)
    state_words = [
        set(tokenize(f"{library.inputs[s]} {library.outputs[s]}"))
        if library.inputs is not None and library.outputs is not None
        else set()
        for s in range(n)
    ]

    if "black_hole" in fixes:
        q_tokens = [set(tokenize(t)) for t in validation.texts]
        q_df = _doc_freq(q_tokens)  # words generic across the users' requests
        done: list[int] = []
        # rounds: once the worst black holes are narrowed, the queries they held can
        # fall to the next ones, which the next round flags
        for _ in range(black_hole_rounds):
            chosen = _route_all(
                router or TfidfRouter(), library.with_descriptions(desc), validation,
                seed=seed, exclude=~keep,
            )  # (Q,)
            cap = np.bincount(chosen, minlength=n) / validation.num_queries  # (N,)
            new = [int(s) for s in flag_black_holes(cap, z=black_hole_z) if s not in done]
            if not new:
                break
            done += new
            for s in new:
                if black_hole_action == "remove":
                    keep[s] = False
                    continue
                own_q = np.flatnonzero(validation.gold == s)
                stolen_q = np.flatnonzero((chosen == s) & (validation.gold != s))
                own = Counter(w for q in own_q for w in q_tokens[q])
                stolen = Counter(w for q in stolen_q for w in q_tokens[q])

                def specific(w: str, own=own, stolen=stolen, n_own=own_q.size,
                             n_stolen=stolen_q.size) -> bool:
                    # used by its own intents more often than by the intents it captures,
                    # and not a generic request word (in more than generic_df of queries)
                    rate_own = own[w] / max(n_own, 1)
                    rate_stolen = stolen[w] / max(n_stolen, 1)
                    generic = q_df[w] > generic_df * validation.num_queries
                    return rate_own > rate_stolen and not generic

                name_toks = tokenize(library.names[s].replace("_", " "))
                words = [w for w in tokenize(desc[s]) if specific(w) or w in state_words[s]]
                desc[s] = " ".join(dict.fromkeys(name_toks + words))
        flagged = np.array(sorted(done), dtype=np.int64)

    token_sets = [set(tokenize(d)) for d in desc]
    df_all = _doc_freq(token_sets)
    fam = library.families
    fam_df = {f: _doc_freq([token_sets[s] for s in np.flatnonzero(fam == f)]) for f in set(fam)}
    fam_n = {f: int(np.sum(fam == f)) for f in set(fam)}

    def sibling_rank(s: int) -> list[str]:
        f = fam[s]
        toks = list(dict.fromkeys(tokenize(desc[s])))
        # TF-IDF against siblings: idf within the family, then global rarity
        return sorted(
            toks,
            key=lambda w: (-np.log((1 + fam_n[f]) / (1 + fam_df[f][w])), df_all[w], w),
        )

    if "rewrite" in fixes:
        new = []
        for s in range(n):
            front = [w for w in sibling_rank(s) if df_all[w] <= generic_df * n][:num_keywords]
            rest = [
                w
                for w in tokenize(desc[s])
                if (df_all[w] <= generic_df * n or w in state_words[s]) and w not in front
            ]
            new.append(f"{' '.join(front)}: {' '.join(rest)}")
        desc = new

    audited = 0
    if "audit" in fixes:
        router_a = TfidfRouter().fit(library.with_descriptions(desc))
        sim = router_a.scores(desc)  # (N, N) description cosine
        np.fill_diagonal(sim, 0.0)
        sim[~keep, :] = 0.0
        sim[:, ~keep] = 0.0
        extra: list[list[str]] = [[] for _ in range(n)]
        rows, cols = np.nonzero(np.triu(sim >= audit_tau))
        for i, j in zip(rows, cols, strict=True):
            audited += 1
            ti, tj = set(tokenize(desc[i])), set(tokenize(desc[j]))
            extra[i] += [w for w in sibling_rank(i) if w not in tj][:num_keywords]
            extra[j] += [w for w in sibling_rank(j) if w not in ti][:num_keywords]
        desc = [
            f"{d}; specifically: {' '.join(dict.fromkeys(e))}" if e else d
            for d, e in zip(desc, extra, strict=True)
        ]

    if "anchor" in fixes:
        token_sets = [set(tokenize(d)) for d in desc]
        df_all = _doc_freq(token_sets)
        anchors = {}
        for f in set(fam):
            members = np.flatnonzero(fam == f)
            df_f = _doc_freq([token_sets[s] for s in members])
            # family anchor: within-family document frequency times global IDF
            score = {
                w: (c / members.size) * np.log(n / df_all[w]) for w, c in df_f.items() if c >= 2
            }
            anchors[f] = sorted(score, key=lambda w: (-score[w], w))[:4]
        desc = [f"[{' '.join(anchors[fam[s]])}] {d}" for s, d in enumerate(desc)]

    kept = np.flatnonzero(keep)
    names = tuple(library.names[s] for s in kept)
    old_to_new = -np.ones(n, dtype=np.int64)
    old_to_new[kept] = np.arange(kept.size)
    bh_new = old_to_new[library.black_holes]
    out = SkillLibrary(
        names=names,
        descriptions=tuple(desc[s] for s in kept),
        families=library.families[kept],
        family_names=library.family_names,
        black_holes=bh_new[bh_new >= 0],
        inputs=None if library.inputs is None else tuple(library.inputs[s] for s in kept),
        outputs=None if library.outputs is None else tuple(library.outputs[s] for s in kept),
    )
    return OptimisationResult(
        library=out,
        fixes=tuple(f for f in FIXES if f in fixes),
        audited_pairs=audited,
        flagged=flagged,
        kept=kept,
    )
