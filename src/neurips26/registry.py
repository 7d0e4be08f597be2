"""The registry of papers and their claims.

A paper is described by a :class:`Paper` in ``papers/<slug>/paper.py``; that file
imports only the standard library and this module, so listing every paper never
imports numpy or torch. The experiment module of a paper is imported only when it
runs.

A claim is data (:class:`Claim`): the paper's statement and figure, the metric that
tests it, a comparison and a tolerance. Its verdict is computed from the measured
metrics by :func:`evaluate_claim`; nothing writes a verdict by hand.
"""

from __future__ import annotations

import difflib
import importlib
import importlib.util
import math
import sys
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

TIERS = ("smoke", "small", "paper")

#: Every registered paper, in the order of the seed lists.
SLUGS: tuple[str, ...] = (
    # seed 000_23679aaaf2254bad.txt
    "lambda6_star",
    "sparse_halfspace",
    "sparse_scaling",
    "agentweave",
    "seagram",
    "geto_lp",
    # seed 004_839af22534344a66.txt
    "monoculture",
    "data_exchange_core",
    "qnn_spectral",
    "score_kalman",
    "mcp_injector",
    "skill_laws",
    "condorcet_dueling",
    "changepoint_bandit",
    "judge_rasch",
    "multiagent_neff",
    "multiagent_performative",
)

#: The verdicts a claim can get.
REPRODUCED = "reproduced"
NOT_REPRODUCED = "not reproduced"
INCONCLUSIVE = "inconclusive"
NOT_RUN = "not run"
VERDICTS = (REPRODUCED, NOT_REPRODUCED, INCONCLUSIVE, NOT_RUN)

COMPARISONS = ("<=", ">=", "<", ">", "==", "abs<=")

#: A claim is a statement of the paper, or a check of ours (oracle, sanity, construction).
CLAIM_KINDS = ("paper", "check")

PAPERS_DIR = Path(__file__).resolve().parent / "papers"


class UnknownPaperError(KeyError):
    """Raised for a slug that is not registered; the message suggests the nearest."""

    def __str__(self) -> str:  # KeyError quotes its message; we want it plain
        return str(self.args[0])


@dataclass(frozen=True)
class Claim:
    """One checkable claim of a paper.

    Parameters
    ----------
    id : str
        Short identifier, unique within the paper (``"exactness"``).
    statement : str
        The claim in our words, as the paper makes it.
    paper_value : str
        The paper's own figure for it, as text (``"1e-7 relative"``, ``"qualitative"``).
    metric : str
        Key of the experiment's metrics that tests the claim.
    comparison : str
        One of ``<=``, ``>=``, ``<``, ``>``, ``==`` and ``abs<=`` (``|measured| <= target``).
    target : float
        The value the metric is compared with.
    tolerance : float
        Slack added in the claim's favour: ``measured <= target + tolerance`` and so on.
        It belongs to the claim (the paper's or the spec's), never tuned to a result.
    uncertainty : str or None
        Key of a metric holding the half-width of the measured value's confidence
        interval. When that interval straddles the threshold the verdict is
        ``inconclusive``.
    tiers : tuple of str
        The tiers at which the claim is meaningful; at other tiers it is ``not run``.
    kind : str
        ``"paper"``: a statement the paper makes, its target at the paper's figure;
        ``"check"``: a sanity check, oracle or property of our construction. Paper
        claims are the headline; checks are shown apart.
    """

    id: str
    statement: str
    paper_value: str
    metric: str
    comparison: str
    target: float
    tolerance: float = 0.0
    uncertainty: str | None = None
    tiers: tuple[str, ...] = ("smoke", "small", "paper")
    kind: str = "paper"

    def __post_init__(self) -> None:
        if self.comparison not in COMPARISONS:
            raise ValueError(
                f"claim {self.id!r}: comparison {self.comparison!r} is not one of {COMPARISONS}"
            )
        if self.tolerance < 0:
            raise ValueError(f"claim {self.id!r}: tolerance must be >= 0, got {self.tolerance}")
        if self.kind not in CLAIM_KINDS:
            raise ValueError(f"claim {self.id!r}: kind {self.kind!r} is not one of {CLAIM_KINDS}")
        unknown = set(self.tiers) - set(TIERS)
        if unknown:
            raise ValueError(f"claim {self.id!r}: unknown tiers {sorted(unknown)}; valid: {TIERS}")

    def describe(self) -> str:
        """The comparison as text, e.g. ``"rel_gap <= 1e-07"``."""
        tol = f" (tolerance {self.tolerance:g})" if self.tolerance else ""
        if self.comparison == "abs<=":
            return f"|{self.metric}| <= {self.target:g}{tol}"
        return f"{self.metric} {self.comparison} {self.target:g}{tol}"


@dataclass(frozen=True)
class ClaimResult:
    """A claim's verdict on one run."""

    id: str
    statement: str
    paper_value: str
    metric: str
    comparison: str
    target: float
    tolerance: float
    measured: float | None
    uncertainty: float | None
    verdict: str

    def to_dict(self) -> dict:
        return {
            "id": self.id,
            "statement": self.statement,
            "paper_value": self.paper_value,
            "metric": self.metric,
            "comparison": self.comparison,
            "target": self.target,
            "tolerance": self.tolerance,
            "measured": self.measured,
            "uncertainty": self.uncertainty,
            "verdict": self.verdict,
        }


def verdict_counts(verdicts) -> dict[str, int]:
    """How many of each verdict, in the canonical order of :data:`VERDICTS`."""
    verdicts = list(verdicts)
    return {v: verdicts.count(v) for v in VERDICTS if v in verdicts}


def summarize_verdicts(verdicts) -> str:
    """One line such as ``"3 reproduced, 1 not reproduced"``."""
    return ", ".join(f"{n} {v}" for v, n in verdict_counts(verdicts).items())


def _as_float(value: object) -> float | None:
    if isinstance(value, bool):
        return float(value)
    if isinstance(value, (int, float)):
        return float(value)
    try:  # numpy scalars
        return float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return None


def _holds(value: float, comparison: str, target: float, tol: float) -> bool:
    if comparison == "<=":
        return value <= target + tol
    if comparison == "<":
        return value < target + tol
    if comparison == ">=":
        return value >= target - tol
    if comparison == ">":
        return value > target - tol
    if comparison == "==":
        return abs(value - target) <= tol
    if comparison == "abs<=":
        return abs(value) <= target + tol
    raise ValueError(f"unknown comparison {comparison!r}")


def evaluate_claim(claim: Claim, metrics: dict, tier: str) -> ClaimResult:
    """Compute a claim's verdict from a run's metrics.

    The verdict is ``not run`` when the tier is not one of the claim's tiers or the
    metric is missing or NaN (infinite values are compared as they are);
    ``inconclusive`` when the metric's confidence interval (``claim.uncertainty``)
    holds values on both sides of the threshold;
    else ``reproduced`` or ``not reproduced``.
    """
    measured = _as_float(metrics.get(claim.metric))
    half = _as_float(metrics.get(claim.uncertainty)) if claim.uncertainty else None
    verdict: str
    # NaN means "not measured"; an infinite value is a measurement (e.g. the RMSE of a
    # filter that diverged) and is compared like any other.
    if tier not in claim.tiers or measured is None or math.isnan(measured):
        verdict = NOT_RUN
    else:
        ok = _holds(measured, claim.comparison, claim.target, claim.tolerance)
        verdict = REPRODUCED if ok else NOT_REPRODUCED
        if half is not None and math.isfinite(half) and half > 0 and claim.comparison != "==":
            lo_ok = _holds(measured - half, claim.comparison, claim.target, claim.tolerance)
            hi_ok = _holds(measured + half, claim.comparison, claim.target, claim.tolerance)
            if lo_ok != hi_ok:
                verdict = INCONCLUSIVE
    return ClaimResult(
        id=claim.id,
        statement=claim.statement,
        paper_value=claim.paper_value,
        metric=claim.metric,
        comparison=claim.comparison,
        target=claim.target,
        tolerance=claim.tolerance,
        measured=measured,
        uncertainty=half,
        verdict=verdict,
    )


@dataclass(frozen=True)
class Paper:
    """A registered paper: what it proposes, its claims, and where its code lives.

    Parameters
    ----------
    slug : str
        The package name under ``neurips26.papers``.
    title : str
        Our title for the paper (the seeds give abstracts, not titles).
    seed : str
        The seed file the abstract comes from.
    paragraph : int
        The abstract's paragraph in that file.
    field : str
        Research field.
    grade : str
        ``A`` faithful on CPU, ``B`` faithful method with a scaled-down experiment,
        ``C`` a substitute model or data set stands in.
    summary : str
        What the paper proposes, in our words.
    claims : tuple of Claim
        The claims the reproduction checks.
    deviations : tuple of str
        What we inferred, scaled down or substituted.
    tiers : dict
        One line per tier saying what it runs.
    """

    slug: str
    title: str
    seed: str
    paragraph: int
    field: str
    grade: str
    summary: str
    claims: tuple[Claim, ...]
    deviations: tuple[str, ...]
    tiers: tuple[tuple[str, str], ...]

    def __post_init__(self) -> None:
        ids = [c.id for c in self.claims]
        if len(ids) != len(set(ids)):
            raise ValueError(f"paper {self.slug!r}: duplicate claim ids {ids}")
        if self.grade not in ("A", "B", "C"):
            raise ValueError(f"paper {self.slug!r}: grade must be A, B or C, got {self.grade!r}")
        if tuple(t for t, _ in self.tiers) != TIERS:
            raise ValueError(f"paper {self.slug!r}: tiers must describe {TIERS} in order")

    @property
    def experiment_module(self) -> str:
        return f"neurips26.papers.{self.slug}.experiment"

    def experiment(self) -> ModuleType:
        """Import and return the paper's experiment module (heavy imports happen here)."""
        return importlib.import_module(self.experiment_module)

    def evaluate(self, metrics: dict, tier: str) -> list[ClaimResult]:
        """Verdicts of every claim on one run's metrics."""
        return [evaluate_claim(c, metrics, tier) for c in self.claims]


_CACHE: dict[str, Paper] = {}


def check_slug(slug: str) -> str:
    """Return ``slug`` if registered; else raise with the nearest valid slug."""
    if slug in SLUGS:
        return slug
    near = difflib.get_close_matches(slug, SLUGS, n=1, cutoff=0.4)
    hint = f"did you mean {near[0]!r}? " if near else ""
    raise UnknownPaperError(f"unknown paper {slug!r}; {hint}valid slugs: {', '.join(SLUGS)}")


def _load_metadata(slug: str) -> ModuleType:
    # paper.py is loaded by path, so the paper's package __init__ (the public API and
    # its numpy/torch imports) is not executed just to list the paper.
    name = f"neurips26._paper_meta.{slug}"
    if name in sys.modules:
        return sys.modules[name]
    path = PAPERS_DIR / slug / "paper.py"
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:  # pragma: no cover - broken install
        raise ImportError(f"cannot load {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def get_paper(slug: str) -> Paper:
    """The :class:`Paper` registered under ``slug``."""
    check_slug(slug)
    if slug not in _CACHE:
        paper = _load_metadata(slug).PAPER
        if paper.slug != slug:
            raise ValueError(f"papers/{slug}/paper.py declares slug {paper.slug!r}")
        _CACHE[slug] = paper
    return _CACHE[slug]


def all_papers() -> list[Paper]:
    """Every registered paper, in registry order."""
    return [get_paper(s) for s in SLUGS]
