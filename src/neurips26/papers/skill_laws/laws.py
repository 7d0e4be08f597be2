"""The routing law, the error taxonomy, the execution law and their coupling.

The paper finds that single-step routing accuracy falls linearly in the log of the
library size, ``Acc(N) = a - b ln N`` (Eq. 1), that errors move from sibling
confusion ("local") to other families ("drift") to capture by broad "black-hole"
skills as ``N`` grows, that routing several steps before any executes succeeds with
about the product of per-step accuracies (Eq. 2), that seeing the executed state of
the previous step rescues hard later decisions (the rescue ratio, Eq. 3), and that the
slope ``b`` predicts the rescue across routers. This module measures all of these for
any router, library and query set.

Deviations from the paper
-------------------------
- Nested libraries are drawn per query: query ``q`` at size ``N`` sees its gold skill
  plus the first ``N - 1`` skills of its own order of the rest of the library, so
  libraries are nested in ``N``, always contain the gold skill, and every query is
  used at every size. The order grows the library hierarchically (inferred; the
  paper's sampling is not described): the next skill to join is a sibling of the
  gold skill with probability proportional to ``sibling_weight`` (default 40) per
  sibling against 1 per stranger, as a curated library grows by domain. With 40
  families of 30 skills a library of 10 is then about half siblings, where uniform
  supersets rarely hold one. An infinite weight puts every sibling first; a finite
  one keeps strangers in the smallest libraries, so that their error mix is
  measured rather than fixed by the sampling.
- Lexical routers are fitted on the full library (their IDF is not refitted for each
  sub-library).
- The execution law is an inferred operationalisation: step ``t`` is routed from its
  clause of the task text ("before"), or from the clause plus the text of the state
  the correctly executed step ``t-1`` produced ("after"). The rescue ratio uses a
  +0.5 continuity correction so that zero errors after stay finite.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
from scipy import optimize, stats

from neurips26.common.validation import check_array, check_float

from .library import ChainSet, QuerySet, SkillLibrary
from .routers import Router

__all__ = [
    "DEFAULT_SIZES",
    "Coupling",
    "ExecutionLaw",
    "LawComparison",
    "LogLaw",
    "RoutingDecisions",
    "RoutingLaw",
    "SkillScalingStudy",
    "StudyResult",
    "Taxonomy",
    "classify_errors",
    "compare_law_models",
    "error_taxonomy",
    "execution_law",
    "fit_log_law",
    "nested_candidates",
    "route_top1",
    "routing_curve",
    "routing_decisions",
    "routing_law",
    "slope_rescue_coupling",
    "taxonomy",
]

DEFAULT_SIZES: tuple[int, ...] = (10, 20, 50, 100, 200, 500, 1000)


def _check_sizes(sizes: Sequence[int], num_skills: int) -> np.ndarray:
    arr = np.asarray(sizes)
    if arr.ndim != 1 or arr.size == 0:
        raise ValueError("sizes must be a non-empty 1-D sequence of ints")
    if not np.issubdtype(arr.dtype, np.integer):
        raise TypeError(f"sizes must be integers, got dtype {arr.dtype}")
    if arr.min() < 2:
        raise ValueError(f"library sizes must be >= 2, got {int(arr.min())}")
    if arr.max() > num_skills:
        raise ValueError(f"library size {int(arr.max())} exceeds the library's {num_skills} skills")
    if np.any(np.diff(arr) <= 0):
        raise ValueError(f"sizes must be strictly increasing, got {arr.tolist()}")
    return arr.astype(np.int64)


def _check_scores(scores: np.ndarray, num_queries: int) -> np.ndarray:
    return check_array(scores, "scores", shape=(num_queries, None), min_size=0)


def _first_sorted(keys: np.ndarray, k: int) -> np.ndarray:
    """Column indices of the ``k`` smallest keys per row, in (key, index) order.

    The same as ``np.argsort(keys, axis=1, kind="stable")[:, :k]`` at O(M) per row
    instead of O(M log M) (a partial selection, then a sort of the ``k`` kept).
    """
    if k == keys.shape[1]:
        return np.argsort(keys, axis=1, kind="stable")
    part = np.argpartition(keys, k - 1, axis=1)[:, :k]  # (Q, k)
    vals = np.take_along_axis(keys, part, axis=1)
    order = np.lexsort((part, vals), axis=1)
    return np.take_along_axis(part, order, axis=1)


def nested_candidates(
    gold: np.ndarray,
    num_skills: int,
    max_size: int,
    *,
    families: np.ndarray | None = None,
    sibling_weight: float = 40.0,
    seed: int = 0,
) -> np.ndarray:
    """Nested candidate libraries that always contain each query's gold skill.

    Without ``families`` each query's library grows as a uniformly random superset.
    With ``families`` it grows hierarchically: the next skill to join is drawn among
    those not yet in with probability proportional to a weight, ``sibling_weight`` for
    the gold skill's siblings (same family) and 1 for strangers (Wallenius' urn:
    exponential clocks of rate ``w``, the order in which they ring). Siblings thus
    tend to join first, and strangers follow; ``sibling_weight=inf`` puts every
    sibling before any stranger and 1 is uniform growth.

    Parameters
    ----------
    gold : ndarray of int, shape (Q,)
        Gold skill per query.
    num_skills : int
        Size ``M`` of the full library.
    max_size : int
        Largest library size needed, ``<= M``.
    families : ndarray of int, shape (M,), optional
        Family of each skill; turns on hierarchical growth.
    sibling_weight : float
        Weight ``w >= 1`` of a sibling against a stranger (``inf`` allowed). With ``S``
        siblings and ``T`` strangers the first skill to join is a sibling with
        probability ``S w / (S w + T)``. Ignored without ``families``.
    seed : int
        Seed of ``np.random.default_rng``.

    Returns
    -------
    ndarray of int, shape (Q, max_size)
        Row ``q`` starts with ``gold[q]``, then the other skills in the order they
        join; the library of size ``N`` for query ``q`` is ``out[q, :N]``.

    Examples
    --------
    >>> fam = np.array([0, 0, 0, 1, 1, 1])
    >>> out = nested_candidates(np.array([0]), 6, 6, families=fam, sibling_weight=np.inf)
    >>> out[0, 0], sorted(out[0, 1:3].tolist())
    (np.int64(0), [1, 2])
    """
    gold = np.asarray(gold, dtype=np.int64)
    if gold.ndim != 1 or gold.size == 0:
        raise ValueError("gold must be a non-empty 1-D int array")
    if gold.min() < 0 or gold.max() >= num_skills:
        raise ValueError(f"gold skills must lie in [0, {num_skills})")
    if not 1 <= max_size <= num_skills:
        raise ValueError(f"max_size must be in [1, {num_skills}], got {max_size}")
    rng = np.random.default_rng(seed)
    rows = np.arange(gold.size)
    if families is None:
        keys = rng.random((gold.size, num_skills))  # (Q, M)
        keys[rows, gold] = -1.0  # gold sorts first
        return _first_sorted(keys, max_size)
    fam = check_array(families, "families", shape=(num_skills,), dtype=None)
    if not np.issubdtype(fam.dtype, np.integer):
        raise TypeError(f"families must be integers, got dtype {fam.dtype}")
    w = check_float(sibling_weight, "sibling_weight", min=1.0, allow_inf=True)
    keys = rng.exponential(size=(gold.size, num_skills))  # (Q, M) arrival times at rate 1
    sib = fam[None, :] == fam[gold][:, None]  # (Q, M) siblings of each query's gold
    if np.isinf(w):
        keys[sib] -= keys.max() + 1.0  # every sibling before any stranger, order random
    else:
        keys[sib] /= w  # a sibling's clock rings w times as fast
    keys[rows, gold] = -np.inf  # gold sorts first
    return _first_sorted(keys, max_size)


def route_top1(scores: np.ndarray, candidates: np.ndarray, *, seed: int = 0) -> np.ndarray:
    """Top-1 choice ``argmax_{s in C_q} score(q, s)`` with random tie-breaking.

    Parameters
    ----------
    scores : ndarray, shape (Q, M)
        Router scores against the full library.
    candidates : ndarray of int, shape (Q, N)
        Candidate skills per query.
    seed : int
        Seed for breaking exact ties uniformly at random.

    Returns
    -------
    ndarray of int, shape (Q,)
        The chosen skill index.
    """
    cand_scores = np.take_along_axis(scores, candidates, axis=1)  # (Q, N)
    pos = cand_scores.argmax(axis=1)  # (Q,) first maximum
    is_max = cand_scores == cand_scores[np.arange(pos.size), pos][:, None]  # (Q, N)
    tied = np.flatnonzero(is_max.sum(axis=1) > 1)
    if tied.size:  # break exact ties uniformly at random
        key = np.random.default_rng(seed).random((tied.size, candidates.shape[1]))
        pos[tied] = np.where(is_max[tied], key, -1.0).argmax(axis=1)
    return candidates[np.arange(candidates.shape[0]), pos]


@dataclass(frozen=True)
class RoutingDecisions:
    """Top-1 choices of one router on nested libraries.

    Attributes
    ----------
    sizes : ndarray of int, shape (S,)
        Library sizes ``N``.
    gold : ndarray of int, shape (Q,)
        Gold skills.
    chosen : ndarray of int, shape (S, Q)
        The chosen skill per size and query.
    """

    sizes: np.ndarray
    gold: np.ndarray
    chosen: np.ndarray

    @property
    def correct(self) -> np.ndarray:
        """Boolean (S, Q): chosen equals gold."""
        return self.chosen == self.gold[None, :]

    @property
    def accuracy(self) -> np.ndarray:
        """Top-1 accuracy per size, shape (S,)."""
        return self.correct.mean(axis=1)


def routing_decisions(
    scores: np.ndarray,
    gold: np.ndarray,
    *,
    sizes: Sequence[int] = DEFAULT_SIZES,
    seed: int = 0,
    candidates: np.ndarray | None = None,
    families: np.ndarray | None = None,
    sibling_weight: float = 40.0,
) -> RoutingDecisions:
    """Route every query on nested libraries of each size, from a score matrix.

    Parameters
    ----------
    scores : ndarray, shape (Q, M)
        ``score(q, s)`` of each query against every skill of the full library.
    gold : ndarray of int, shape (Q,)
        Gold skill per query.
    sizes : sequence of int
        Increasing library sizes ``N`` in [2, M].
    seed : int
        Seed of the nested libraries and of tie-breaking.
    candidates : ndarray of int, shape (Q, >= max(sizes)), optional
        Precomputed :func:`nested_candidates` (to share them between routers).
    families : ndarray of int, shape (M,), optional
        Family of each skill: the libraries grow hierarchically (siblings first, see
        :func:`nested_candidates`); without it they are uniform random supersets.
    sibling_weight : float
        Weight of a sibling against a stranger as the next skill to join (with
        ``families``; see :func:`nested_candidates`).

    Returns
    -------
    RoutingDecisions
    """
    gold = np.asarray(gold)
    scores = _check_scores(scores, gold.shape[0] if gold.ndim == 1 else -1)
    sizes_arr = _check_sizes(sizes, scores.shape[1])
    if candidates is None:
        cand = nested_candidates(
            gold, scores.shape[1], int(sizes_arr[-1]), families=families,
            sibling_weight=sibling_weight, seed=seed,
        )
    else:
        cand = np.asarray(candidates)
        if cand.shape[0] != gold.shape[0] or cand.shape[1] < sizes_arr[-1]:
            raise ValueError(
                f"candidates must have shape ({gold.shape[0]}, >= {int(sizes_arr[-1])}), "
                f"got {cand.shape}"
            )
    chosen = np.stack(
        [route_top1(scores, cand[:, :n], seed=seed + 1 + i) for i, n in enumerate(sizes_arr)]
    )  # (S, Q)
    return RoutingDecisions(sizes=sizes_arr, gold=gold.astype(np.int64), chosen=chosen)


@dataclass(frozen=True)
class LogLaw:
    """Least-squares fit of ``Acc(N) = a - b ln N`` (Eq. 1).

    Attributes
    ----------
    a, b : float
        Intercept and log-decay slope (``b > 0`` means accuracy falls with ``N``).
    r2 : float
        Coefficient of determination of the fit.
    """

    a: float
    b: float
    r2: float


def _numeric(value: object, name: str) -> np.ndarray:
    """A float array; ``None``, strings and objects are refused (``TypeError`` naming it).

    Shape, emptiness and finiteness are left to the caller's own checks.
    """
    return check_array(value, name, dtype=np.float64, finite=False, min_size=0)


def fit_log_law(sizes: Sequence[float], accuracy: Sequence[float]) -> LogLaw:
    """Fit ``Acc(N) = a - b ln N`` by ordinary least squares.

    Parameters
    ----------
    sizes : sequence of float, shape (S,)
        Library sizes ``N > 0`` (at least two distinct).
    accuracy : sequence of float, shape (S,)
        Measured accuracies.

    Returns
    -------
    LogLaw
        ``r2`` is 1 for a perfect fit and for a constant curve fitted exactly.

    Examples
    --------
    >>> import numpy as np
    >>> n = np.array([10, 100, 1000])
    >>> fit = fit_log_law(n, 0.9 - 0.05 * np.log(n))
    >>> round(fit.b, 6), round(fit.r2, 6)
    (0.05, 1.0)
    """
    n = _numeric(sizes, "sizes")  # (S,)
    y = _numeric(accuracy, "accuracy")  # (S,)
    if n.shape != y.shape or n.ndim != 1:
        raise ValueError(
            f"sizes and accuracy must be 1-D of equal length, got {n.shape}, {y.shape}"
        )
    if not (np.all(np.isfinite(n)) and np.all(n > 0)):
        raise ValueError(f"sizes must be finite and > 0, got {n.tolist()}")
    if not np.all(np.isfinite(y)):
        raise ValueError("accuracy contains NaN or infinite values")
    x = np.log(n)  # (S,)
    if np.unique(x).size < 2:
        raise ValueError("need at least two distinct library sizes to fit the law")
    slope, intercept = np.polyfit(x, y, 1)
    resid = y - (intercept + slope * x)
    ss_tot = float(np.sum((y - y.mean()) ** 2))
    ss_res = float(np.sum(resid**2))
    r2 = 1.0 - ss_res / ss_tot if ss_tot > 0 else (1.0 if ss_res < 1e-20 else 0.0)
    return LogLaw(a=float(intercept), b=float(-slope), r2=float(r2))


@dataclass(frozen=True)
class LawComparison:
    """AIC of three two-parameter models of ``Acc(N)`` (lower is better).

    Attributes
    ----------
    aic_log : float
        ``a - b ln N``.
    aic_power : float
        ``c N^{-d}``.
    aic_linear : float
        ``a - b N``.
    log_best : bool
        The log model has the lowest AIC.
    """

    aic_log: float
    aic_power: float
    aic_linear: float
    log_best: bool


def _aic(resid: np.ndarray, k: int) -> float:
    n = resid.size
    rss = max(float(np.sum(resid**2)), 1e-300)
    return n * np.log(rss / n) + 2 * k


def compare_law_models(sizes: Sequence[float], accuracy: Sequence[float]) -> LawComparison:
    """Compare the log law with a power law and a linear-in-``N`` law by AIC.

    ``AIC = n ln(RSS / n) + 2k`` with ``k = 2`` for every model.

    Parameters
    ----------
    sizes, accuracy : sequence of float, shape (S,)
        As for :func:`fit_log_law`; accuracies must be positive for the power law.

    Returns
    -------
    LawComparison
    """
    n = _numeric(sizes, "sizes")
    y = _numeric(accuracy, "accuracy")
    fit = fit_log_law(n, y)
    r_log = y - (fit.a - fit.b * np.log(n))
    lin = np.polyfit(n, y, 1)
    r_lin = y - np.polyval(lin, n)
    yp = np.clip(y, 1e-6, None)
    d0, c0 = np.polyfit(np.log(n), np.log(yp), 1)
    try:
        (c, d), _ = optimize.curve_fit(
            lambda t, c, d: c * t ** (-d), n, y, p0=(np.exp(c0), -d0), maxfev=20000
        )
        r_pow = y - c * n ** (-d)
    except RuntimeError:  # pragma: no cover - fall back to the log-log fit
        r_pow = y - np.exp(c0) * n**d0
    aics = (_aic(r_log, 2), _aic(r_pow, 2), _aic(r_lin, 2))
    return LawComparison(
        aic_log=aics[0], aic_power=aics[1], aic_linear=aics[2], log_best=aics[0] < min(aics[1:])
    )


@dataclass(frozen=True)
class RoutingLaw:
    """The routing law of one router.

    Attributes
    ----------
    sizes : ndarray of int, shape (S,)
        Library sizes ``N``.
    accuracy : ndarray, shape (S,)
        Top-1 accuracy per size.
    accuracy_ci : ndarray, shape (S, 2)
        95% bootstrap interval of the accuracy (queries resampled).
    a, b, r2 : float
        Fit of Eq. (1).
    a_ci, b_ci : ndarray, shape (2,)
        95% bootstrap intervals of ``a`` and ``b``.
    comparison : LawComparison
        AIC of the log, power and linear models.
    """

    sizes: np.ndarray
    accuracy: np.ndarray
    accuracy_ci: np.ndarray
    a: float
    b: float
    r2: float
    a_ci: np.ndarray
    b_ci: np.ndarray
    comparison: LawComparison


def routing_law(
    decisions: RoutingDecisions, *, num_bootstrap: int = 200, seed: int = 0
) -> RoutingLaw:
    """Fit Eq. (1) to routing decisions, with bootstrap intervals over queries.

    Parameters
    ----------
    decisions : RoutingDecisions
        From :func:`routing_decisions`.
    num_bootstrap : int
        Bootstrap resamples (0 gives degenerate intervals at the point estimate).
    seed : int
        Seed of the resampling.

    Returns
    -------
    RoutingLaw
    """
    if num_bootstrap < 0:
        raise ValueError(f"num_bootstrap must be >= 0, got {num_bootstrap}")
    correct = decisions.correct.astype(np.float64)  # (S, Q)
    acc = correct.mean(axis=1)  # (S,)
    fit = fit_log_law(decisions.sizes, acc)
    x = np.log(decisions.sizes.astype(np.float64))  # (S,)
    if num_bootstrap > 0:
        rng = np.random.default_rng(seed)
        q = correct.shape[1]
        idx = rng.integers(0, q, size=(num_bootstrap, q))  # (B, Q)
        boot = np.stack([correct[:, row].mean(axis=1) for row in idx])  # (B, S)
        xc = x - x.mean()
        slopes = boot @ xc / np.sum(xc**2)  # (B,) OLS slope = -b
        intercepts = boot.mean(axis=1) - slopes * x.mean()  # (B,)
        acc_ci = np.percentile(boot, [2.5, 97.5], axis=0).T  # (S, 2)
        b_ci = np.percentile(-slopes, [2.5, 97.5])
        a_ci = np.percentile(intercepts, [2.5, 97.5])
    else:
        acc_ci = np.stack([acc, acc], axis=1)
        a_ci, b_ci = np.array([fit.a, fit.a]), np.array([fit.b, fit.b])
    return RoutingLaw(
        sizes=decisions.sizes,
        accuracy=acc,
        accuracy_ci=acc_ci,
        a=fit.a,
        b=fit.b,
        r2=fit.r2,
        a_ci=a_ci,
        b_ci=b_ci,
        comparison=compare_law_models(decisions.sizes, np.clip(acc, 1e-9, None)),
    )


def _fit_and_score(router: Router, library: SkillLibrary, texts: Sequence[str]) -> np.ndarray:
    if not isinstance(library, SkillLibrary):
        raise TypeError(f"library must be a SkillLibrary, got {type(library).__name__}")
    if not (hasattr(router, "fit") and hasattr(router, "scores")):
        raise TypeError(f"router must have fit(library) and scores(queries), got {router!r}")
    router.fit(library)
    scores = np.asarray(router.scores(list(texts)), dtype=np.float64)
    if scores.shape != (len(texts), library.num_skills):
        raise ValueError(
            f"router returned scores of shape {scores.shape}, expected "
            f"({len(texts)}, {library.num_skills})"
        )
    return scores


def _check_queries(queries: object, library: SkillLibrary) -> QuerySet:
    if not isinstance(queries, QuerySet):
        raise TypeError(f"queries must be a QuerySet, got {type(queries).__name__}")
    queries.check_against(library)
    return queries


def routing_curve(
    router: Router,
    library: SkillLibrary,
    queries: QuerySet,
    *,
    sizes: Sequence[int] = DEFAULT_SIZES,
    num_bootstrap: int = 200,
    sibling_weight: float | None = 40.0,
    seed: int = 0,
) -> RoutingLaw:
    """Fit a router to ``library`` and measure its routing law on nested libraries.

    Parameters
    ----------
    router : Router
        Any object with ``fit(library)`` and ``scores(queries) -> (Q, N)``.
    library : SkillLibrary
        The full library (size ``M >= max(sizes)``).
    queries : QuerySet
        Queries whose gold skills are in ``library``.
    sizes : sequence of int
        Library sizes ``N``.
    num_bootstrap : int
        Bootstrap resamples for the intervals.
    sibling_weight : float or None
        Hierarchical growth of the nested libraries: weight of a sibling against a
        stranger as the next skill to join (see :func:`nested_candidates`); ``None``
        draws uniform random supersets.
    seed : int
        Seed of the nested libraries, tie-breaking and bootstrap.

    Returns
    -------
    RoutingLaw

    Examples
    --------
    >>> from neurips26.papers.skill_laws import generate_library, generate_queries, TfidfRouter
    >>> lib = generate_library(num_families=5, skills_per_family=10, seed=0)
    >>> law = routing_curve(TfidfRouter(), lib, generate_queries(lib), sizes=(5, 10, 50))
    >>> law.accuracy.shape
    (3,)
    """
    queries = _check_queries(queries, library)
    sizes_arr = _check_sizes(sizes, library.num_skills)
    scores = _fit_and_score(router, library, queries.texts)
    dec = routing_decisions(scores, queries.gold, sizes=sizes_arr, seed=seed,
                            **_growth(library, sibling_weight))
    return routing_law(dec, num_bootstrap=num_bootstrap, seed=seed)


def _growth(library: SkillLibrary, sibling_weight: float | None) -> dict:
    """Keyword arguments of :func:`routing_decisions` for a growth setting."""
    if sibling_weight is None:
        return {"families": None}
    return {"families": library.families, "sibling_weight": sibling_weight}


@dataclass(frozen=True)
class Taxonomy:
    """Error taxonomy per library size (each a fraction of all queries).

    Attributes
    ----------
    sizes : ndarray of int, shape (S,)
    error_rate : ndarray, shape (S,)
        ``1 - accuracy``.
    local : ndarray, shape (S,)
        Wrong choice in the gold skill's family (not a black hole).
    drift : ndarray, shape (S,)
        Wrong choice in another family (not a black hole).
    black_hole : ndarray, shape (S,)
        Wrong choice that is a black hole; this is also the hijack rate.

    ``local + drift + black_hole == error_rate``. The ``*_share`` properties divide
    by the error rate (shares of errors).
    """

    sizes: np.ndarray
    error_rate: np.ndarray
    local: np.ndarray
    drift: np.ndarray
    black_hole: np.ndarray

    @property
    def hijack_rate(self) -> np.ndarray:
        """Fraction of all queries captured by a black hole, shape (S,)."""
        return self.black_hole

    def _share(self, part: np.ndarray) -> np.ndarray:
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.where(self.error_rate > 0, part / self.error_rate, np.nan)

    @property
    def local_share(self) -> np.ndarray:
        """Local errors as a share of all errors (NaN where there are none)."""
        return self._share(self.local)

    @property
    def drift_share(self) -> np.ndarray:
        """Drift errors as a share of all errors."""
        return self._share(self.drift)

    @property
    def black_hole_share(self) -> np.ndarray:
        """Black-hole errors as a share of all errors."""
        return self._share(self.black_hole)


def classify_errors(
    chosen: np.ndarray, gold: np.ndarray, families: np.ndarray, black_hole_mask: np.ndarray
) -> np.ndarray:
    """Label each routing decision: 0 correct, 1 local, 2 drift, 3 black hole.

    Parameters
    ----------
    chosen, gold : ndarray of int, same shape
        Chosen and gold skills.
    families : ndarray of int, shape (N,)
        Family per skill.
    black_hole_mask : ndarray of bool, shape (N,)
        True for black holes.

    Returns
    -------
    ndarray of int, same shape as ``chosen``
    """
    chosen = np.asarray(chosen)
    gold = np.asarray(gold)
    if chosen.shape != gold.shape:
        raise ValueError(f"chosen {chosen.shape} and gold {gold.shape} must have equal shapes")
    wrong = chosen != gold
    bh = black_hole_mask[chosen]
    same = families[chosen] == families[gold]
    out = np.zeros(chosen.shape, dtype=np.int64)
    out[wrong & bh] = 3
    out[wrong & ~bh & same] = 1
    out[wrong & ~bh & ~same] = 2
    return out


def taxonomy(decisions: RoutingDecisions, library: SkillLibrary) -> Taxonomy:
    """The error taxonomy of routing decisions (see :class:`Taxonomy`).

    Parameters
    ----------
    decisions : RoutingDecisions
        Top-1 choices on nested libraries, shape (S, Q).
    library : SkillLibrary
        The library the decisions index (families and black holes).

    Returns
    -------
    Taxonomy
        Correct / local / drift / black-hole shares per library size.
    """
    labels = classify_errors(
        decisions.chosen,
        np.broadcast_to(decisions.gold, decisions.chosen.shape),
        library.families,
        library.is_black_hole(),
    )  # (S, Q)
    return Taxonomy(
        sizes=decisions.sizes,
        error_rate=(labels > 0).mean(axis=1),
        local=(labels == 1).mean(axis=1),
        drift=(labels == 2).mean(axis=1),
        black_hole=(labels == 3).mean(axis=1),
    )


def error_taxonomy(
    router: Router,
    library: SkillLibrary,
    queries: QuerySet,
    *,
    sizes: Sequence[int] = DEFAULT_SIZES,
    sibling_weight: float | None = 40.0,
    seed: int = 0,
) -> Taxonomy:
    """Fit a router and classify its errors on nested libraries of each size.

    Parameters are as for :func:`routing_curve`.

    Returns
    -------
    Taxonomy
    """
    queries = _check_queries(queries, library)
    sizes_arr = _check_sizes(sizes, library.num_skills)
    scores = _fit_and_score(router, library, queries.texts)
    dec = routing_decisions(scores, queries.gold, sizes=sizes_arr, seed=seed,
                            **_growth(library, sibling_weight))
    return taxonomy(dec, library)


@dataclass(frozen=True)
class ExecutionLaw:
    """Before/after state realisation on multi-step chains.

    Attributes
    ----------
    joint_before : float
        Fraction of chains whose every step is routed correctly from the task text.
    product_pred : float
        Mean over chains of ``prod_t p_t``, ``p_t`` the before-accuracy at position
        ``t`` (Eq. 2: joint success is the product of per-step accuracies).
    product_gap : float
        ``|joint_before - product_pred| / product_pred``.
    step_accuracy_before, step_accuracy_after : float
        Accuracy over steps ``t >= 2`` without and with the previous executed state.
    hard_error_before, hard_error_after : float
        Error rates on the hardest quartile of steps ``t >= 2`` (lowest before-margin).
    rescue_ratio : float
        ``(wrong_before + 0.5) / (wrong_after + 0.5)`` on those hard steps (Eq. 3).
    hard_chain : ndarray of int, shape (H,)
        Chain index of each hard step (to resample chains for intervals).
    hard_wrong_before, hard_wrong_after : ndarray of bool, shape (H,)
        Whether each hard step is routed wrongly without and with the executed state.
    """

    joint_before: float
    product_pred: float
    product_gap: float
    step_accuracy_before: float
    step_accuracy_after: float
    hard_error_before: float
    hard_error_after: float
    rescue_ratio: float
    hard_chain: np.ndarray | None = None
    hard_wrong_before: np.ndarray | None = None
    hard_wrong_after: np.ndarray | None = None


def execution_law(
    router: Router,
    library: SkillLibrary,
    chains: ChainSet,
    *,
    hard_quantile: float = 0.25,
    seed: int = 0,
) -> ExecutionLaw:
    """Measure the execution law of a router on chains over the full library.

    Parameters
    ----------
    router : Router
        Router to fit on ``library``.
    library : SkillLibrary
        Candidate skills (all of them are candidates at every step).
    chains : ChainSet
        Chains from :func:`~neurips26.papers.skill_laws.generate_chains` or a user's.
    hard_quantile : float
        Fraction in (0, 1] of steps ``t >= 2`` with the smallest before-margin
        (gold score minus best other score) that count as hard.
    seed : int
        Seed of tie-breaking.

    Returns
    -------
    ExecutionLaw
    """
    if not isinstance(chains, ChainSet):
        raise TypeError(f"chains must be a ChainSet, got {type(chains).__name__}")
    chains.check_against(library)
    if not 0.0 < hard_quantile <= 1.0:
        raise ValueError(f"hard_quantile must be in (0, 1], got {hard_quantile}")
    before_texts, after_texts, gold, pos, chain_id = [], [], [], [], []
    for c, (skills, steps, states) in enumerate(
        zip(chains.skills, chains.step_texts, chains.state_texts, strict=True)
    ):
        for t, s in enumerate(skills):
            before_texts.append(steps[t])
            after_texts.append(steps[t] if t == 0 else f"{steps[t]} given {states[t - 1]}")
            gold.append(int(s))
            pos.append(t)
            chain_id.append(c)
    gold_a = np.array(gold)
    pos_a, chain_a = np.array(pos), np.array(chain_id)
    texts = before_texts + after_texts
    scores = _fit_and_score(router, library, texts)  # (2T, M)
    sb, sa = scores[: len(gold)], scores[len(gold) :]  # (T, M) each
    all_cand = np.broadcast_to(np.arange(library.num_skills), sb.shape)
    ok_b = route_top1(sb, all_cand, seed=seed) == gold_a  # (T,)
    ok_a = route_top1(sa, all_cand, seed=seed + 1) == gold_a  # (T,)
    # Eq. (2): joint success before state realisation vs the product of step accuracies
    p_t = np.array([ok_b[pos_a == t].mean() for t in range(pos_a.max() + 1)])  # (K_max,)
    joint = np.array([ok_b[chain_a == c].all() for c in range(chains.num_chains)])
    product = np.array([np.prod(p_t[: len(s)]) for s in chains.skills])
    joint_before, product_pred = float(joint.mean()), float(product.mean())
    gap = abs(joint_before - product_pred) / product_pred if product_pred > 0 else float("inf")
    # Eq. (3): rescue on the hardest steps t >= 2
    later = pos_a > 0
    gold_score = sb[np.arange(len(gold_a)), gold_a]
    others = sb.copy()
    others[np.arange(len(gold_a)), gold_a] = -np.inf
    margin = gold_score - others.max(axis=1)  # (T,)
    cut = np.quantile(margin[later], hard_quantile)
    hard = later & (margin <= cut)
    wrong_b, wrong_a = int((~ok_b[hard]).sum()), int((~ok_a[hard]).sum())
    return ExecutionLaw(
        joint_before=joint_before,
        product_pred=product_pred,
        product_gap=float(gap),
        step_accuracy_before=float(ok_b[later].mean()),
        step_accuracy_after=float(ok_a[later].mean()),
        hard_error_before=wrong_b / int(hard.sum()),
        hard_error_after=wrong_a / int(hard.sum()),
        rescue_ratio=(wrong_b + 0.5) / (wrong_a + 0.5),
        hard_chain=chain_a[hard],
        hard_wrong_before=~ok_b[hard],
        hard_wrong_after=~ok_a[hard],
    )


@dataclass(frozen=True)
class Coupling:
    """How the routing slope ``b`` predicts execution rescue across routers.

    Attributes
    ----------
    spearman_rho, p_value : float
        Spearman rank correlation between ``b`` and the rescue ratio.
    slope, intercept : float
        Least-squares line ``rescue = intercept + slope * b``.
    """

    spearman_rho: float
    p_value: float
    slope: float
    intercept: float


def slope_rescue_coupling(b: Sequence[float], rescue: Sequence[float]) -> Coupling:
    """Spearman correlation and linear fit of rescue ratio on slope ``b``.

    Parameters
    ----------
    b : sequence of float, shape (R,)
        Log-decay slope of each router (R >= 3).
    rescue : sequence of float, shape (R,)
        Rescue ratio of each router.

    Returns
    -------
    Coupling

    Raises
    ------
    ValueError
        Shapes that disagree, fewer than 3 routers, NaN or inf, a constant ``b`` or
        ``rescue`` (the rank correlation is undefined), or values so large that the
        linear fit overflows.
    """
    x = _numeric(b, "b")
    y = _numeric(rescue, "rescue")
    if x.shape != y.shape or x.ndim != 1:
        raise ValueError(f"b and rescue must be 1-D of equal length, got {x.shape}, {y.shape}")
    if x.size < 3:
        raise ValueError(f"need at least 3 routers for a correlation, got {x.size}")
    if not (np.all(np.isfinite(x)) and np.all(np.isfinite(y))):
        raise ValueError("b and rescue must be finite")
    for name, v in (("b", x), ("rescue", y)):
        if np.ptp(v) == 0:
            raise ValueError(f"{name} is constant ({v[0]:g}); its rank correlation is undefined")
    res = stats.spearmanr(x, y)
    with np.errstate(over="ignore", invalid="ignore"):
        slope, intercept = np.polyfit(x, y, 1)
    if not (np.isfinite(slope) and np.isfinite(intercept) and np.isfinite(res.statistic)):
        raise ValueError(
            f"b and rescue are too large to fit a line (max |b| = {np.max(np.abs(x)):g}, "
            f"max |rescue| = {np.max(np.abs(y)):g})"
        )
    return Coupling(
        spearman_rho=float(res.statistic),
        p_value=float(res.pvalue),
        slope=float(slope),
        intercept=float(intercept),
    )


@dataclass(frozen=True)
class StudyResult:
    """Everything :class:`SkillScalingStudy` measured, by router name."""

    laws: dict[str, RoutingLaw]
    taxonomies: dict[str, Taxonomy]
    execution: dict[str, ExecutionLaw] = field(default_factory=dict)
    coupling: Coupling | None = None
    decisions: dict[str, RoutingDecisions] = field(default_factory=dict)


class SkillScalingStudy:
    """Routing law, taxonomy and (with chains) execution law for several routers.

    Parameters
    ----------
    routers : mapping of str to Router
        Named routers (each is fitted on the library).
    sizes : sequence of int
        Library sizes ``N``.
    num_bootstrap : int
        Bootstrap resamples for the law's intervals.
    sibling_weight : float or None
        Hierarchical growth of the nested libraries: weight of a sibling against a
        stranger as the next skill to join (see :func:`nested_candidates`); ``None``
        draws uniform random supersets.
    seed : int
        Seed shared by all routers, so they see the same nested libraries.

    Examples
    --------
    >>> from neurips26.papers.skill_laws import (
    ...     generate_library, generate_queries, TfidfRouter, BM25Router)
    >>> lib = generate_library(num_families=5, skills_per_family=10, seed=0)
    >>> study = SkillScalingStudy(routers={"tfidf": TfidfRouter(), "bm25": BM25Router()},
    ...                           sizes=(5, 10, 50), num_bootstrap=0)
    >>> res = study.run(lib, generate_queries(lib, seed=1))
    >>> sorted(res.laws)
    ['bm25', 'tfidf']
    """

    def __init__(
        self,
        *,
        routers: Mapping[str, Router],
        sizes: Sequence[int] = DEFAULT_SIZES,
        num_bootstrap: int = 200,
        sibling_weight: float | None = 40.0,
        seed: int = 0,
    ):
        self.routers = routers
        self.sizes = sizes
        self.num_bootstrap = num_bootstrap
        self.sibling_weight = sibling_weight
        self.seed = seed

    def run(
        self, library: SkillLibrary, queries: QuerySet, chains: ChainSet | None = None
    ) -> StudyResult:
        """Run the study; with ``chains`` also the execution law and the coupling.

        The coupling is ``None`` without chains, with fewer than 3 routers, or when the
        slopes or the rescue ratios are all equal (their rank correlation is undefined).
        """
        if not self.routers:
            raise ValueError("routers is empty; give at least one named router")
        queries = _check_queries(queries, library)
        sizes = _check_sizes(self.sizes, library.num_skills)
        laws, taxes, execs, decs = {}, {}, {}, {}
        growth = _growth(library, self.sibling_weight)
        cand = nested_candidates(
            queries.gold, library.num_skills, int(sizes[-1]), seed=self.seed, **growth
        )
        for name, router in self.routers.items():
            scores = _fit_and_score(router, library, queries.texts)
            dec = routing_decisions(
                scores, queries.gold, sizes=sizes, seed=self.seed, candidates=cand
            )
            decs[name] = dec
            laws[name] = routing_law(dec, num_bootstrap=self.num_bootstrap, seed=self.seed)
            taxes[name] = taxonomy(dec, library)
            if chains is not None:
                execs[name] = execution_law(router, library, chains, seed=self.seed)
        coupling = None
        if chains is not None and len(self.routers) >= 3:
            names = list(self.routers)
            slopes = [laws[n].b for n in names]
            rescues = [execs[n].rescue_ratio for n in names]
            if np.ptp(slopes) != 0 and np.ptp(rescues) != 0:  # else rho is undefined
                coupling = slope_rescue_coupling(slopes, rescues)
        return StudyResult(
            laws=laws, taxonomies=taxes, execution=execs, coupling=coupling, decisions=decs
        )
