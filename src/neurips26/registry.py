"""The registry of papers and their claims.

A paper is described by a :class:`Paper` in ``papers/<slug>/paper.py``; that file
imports only the standard library and this module, so listing every paper never
imports numpy or torch. The experiment module of a paper is imported only when it
runs.

A claim is data (:class:`Claim`): the paper's statement and figure, the metric that
tests it, a comparison and a tolerance. Its verdict is computed from the measured
metrics by :func:`evaluate_claim`; nothing writes a verdict by hand.

A paper claim must be able to fail: it names a ``control``, the same statistic measured
where the effect must be absent (a random subspace, zero reward, learning rate 0, a
placebo, the baseline given the same information). The claim is ``reproduced`` only when
it passes and its control fails the same test; when the control passes too the verdict
is ``not evidence``. Where no control is meaningful the claim says why in
``no_control``. A negative names ``diagnostics``: the metrics of runs that test the
cause its docstring gives.
"""

from __future__ import annotations

import dataclasses
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
    "bros",
    "blanp",
    "sparse_halfspace",
    "sparse_scaling",
    "ecfr",
    "agentweave",
    "noise_aware_routing",
    "arq_vae",
    "beta_tta",
    "qc_a2s",
    "asvq",
    "adis_law",
    "seagram",
    "geto_lp",
    "delta_mem",
    # seed 004_839af22534344a66.txt
    "monoculture",
    "cil_decentering",
    "state_pred_sep",
    "data_exchange_core",
    "qnn_spectral",
    "wisp",
    "sign_code",
    "steering_hessian",
    "event_distill",
    "score_kalman",
    "mcp_injector",
    "skill_laws",
    "condorcet_dueling",
    "changepoint_bandit",
    "sfd_edgar",
    "judge_rasch",
    "multiagent_neff",
    "discriminator_rl",
    "multiagent_performative",
)

#: The verdicts a claim can get.
REPRODUCED = "reproduced"
NOT_REPRODUCED = "not reproduced"
INCONCLUSIVE = "inconclusive"
NOT_RUN = "not run"
#: The claim passes, but so does its control: the test cannot tell the effect from its
#: absence, so the pass is no evidence for the claim.
NOT_EVIDENCE = "not evidence"
VERDICTS = (REPRODUCED, NOT_REPRODUCED, NOT_EVIDENCE, INCONCLUSIVE, NOT_RUN)

#: Why a claim is ``not run`` (:attr:`ClaimResult.reason`); empty for evaluated claims.
NOT_AT_TIER = "not at this tier"  # the claim is meaningful only at other tiers
NOT_MEASURED = "not measured"  # the run returned NaN for the metric
MISSING_METRIC = "missing metric"  # the run did not return the metric at all: a bug
RUN_FAILED = "run failed"  # the experiment raised or its process died
NO_RUN_STORED = "no run stored"  # the report lists a tier's claims before any run of it
NOT_RUN_REASONS = (NOT_AT_TIER, NOT_MEASURED, MISSING_METRIC, RUN_FAILED, NO_RUN_STORED)

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
    control : str or None
        Key of the metric holding the same statistic measured where the effect must be
        absent (a random subspace, zero reward, learning rate 0, a placebo, the baseline
        given the same information). It is judged by the same test; the claim is
        ``reproduced`` only when the control fails that test (``not evidence`` when it
        passes too).
    no_control : str
        Why no control is meaningful (an exact identity, an error rate below delta), in
        words a reviewer would accept. A paper claim has a ``control`` or a
        ``no_control``, not both.
    diagnostics : tuple of str
        Keys of metrics from runs that test the cause the docstring gives for a negative
        (trained 5x longer, the other reading of an inferred choice); shown beside the
        verdict.
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
    control: str | None = None
    no_control: str = ""
    diagnostics: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if self.control is not None and self.no_control:
            raise ValueError(f"claim {self.id!r}: give a control or a no_control reason, not both")
        if self.control is not None and (not isinstance(self.control, str) or not self.control):
            raise ValueError(f"claim {self.id!r}: control must name a metric")
        if self.control == self.metric:
            raise ValueError(f"claim {self.id!r}: the control must be another metric")
        object.__setattr__(self, "diagnostics", tuple(self.diagnostics))
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
    """A claim's verdict on one run.

    ``reason`` says why a claim is ``not run`` (one of :data:`NOT_RUN_REASONS`; empty
    otherwise) and ``detail`` explains it, or an ``inconclusive`` verdict, in words.
    ``kind`` and ``tiers`` are copied from the :class:`Claim`. Records stored before
    these fields existed read back with their defaults.
    """

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
    kind: str = "paper"
    tiers: tuple[str, ...] = TIERS
    reason: str = ""
    detail: str = ""
    interval: dict | None = None
    control: dict | None = None
    no_control: str = ""
    diagnostics: dict | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "tiers", tuple(self.tiers))  # JSON gives a list
        object.__setattr__(self, "no_control", self.no_control or "")

    def to_dict(self) -> dict:
        return {
            "id": self.id,
            "kind": self.kind,
            "statement": self.statement,
            "paper_value": self.paper_value,
            "metric": self.metric,
            "comparison": self.comparison,
            "target": self.target,
            "tolerance": self.tolerance,
            "tiers": list(self.tiers),
            "measured": self.measured,
            "uncertainty": self.uncertainty,
            "verdict": self.verdict,
            "reason": self.reason,
            "detail": self.detail,
            "interval": self.interval,
            "control": self.control,
            "no_control": self.no_control,
            "diagnostics": self.diagnostics,
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


_ULPS = 4


def _range_verdict(value: float, lo: float, hi: float, comparison: str, target: float,
                   tol: float):
    """Whether every point of ``[lo, hi]`` passes (``True``), every point fails
    (``False``), or some pass and some fail (``None``).

    Two-sided tests (``==``, ``abs<=``) compare distances to the band's centre with the
    band's half-width plus a few units in the last place, so both sides of the band give
    the same verdict whatever the rounding of the subtraction.
    """
    if comparison in ("==", "abs<="):
        centre = target if comparison == "==" else 0.0
        width = tol if comparison == "==" else target + tol
        far = max(abs(lo - centre), abs(hi - centre))
        near = 0.0 if lo <= centre <= hi else min(abs(lo - centre), abs(hi - centre))
        # A few units in the last place of the numbers involved, so that 0.2 and 0.4 are
        # both within 0.1 of 0.3 although 0.4 - 0.3 rounds above 0.1 and 0.3 - 0.2 below.
        scale = max(abs(value), abs(target), abs(width))
        slack = _ULPS * math.ulp(scale) if math.isfinite(scale) else 0.0
        if far <= width + slack:
            return True
        if near > width + slack:
            return False
        return None
    if comparison == "<=":
        edge = target + tol
        inside, outside = hi <= edge, lo > edge
    elif comparison == "<":
        edge = target + tol
        inside, outside = hi < edge, lo >= edge
    elif comparison == ">=":
        edge = target - tol
        inside, outside = lo >= edge, hi < edge
    elif comparison == ">":
        edge = target - tol
        inside, outside = lo > edge, hi <= edge
    else:
        raise ValueError(f"unknown comparison {comparison!r}")
    if inside:
        return True
    if outside:
        return False
    return None


def not_run(claim: Claim, tier: str, reason: str, detail: str = "") -> ClaimResult:
    """A ``not run`` result of ``claim`` for ``reason`` (one of :data:`NOT_RUN_REASONS`)."""
    if reason not in NOT_RUN_REASONS:
        raise ValueError(f"reason {reason!r} is not one of {NOT_RUN_REASONS}")
    return _result(claim, None, None, NOT_RUN, reason, detail)


def _result(claim, measured, half, verdict, reason="", detail="", *, interval=None,
            control=None, diagnostics=None) -> ClaimResult:
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
        kind=claim.kind,
        tiers=claim.tiers,
        reason=reason,
        detail=detail,
        interval=interval,
        control=control,
        no_control=claim.no_control,
        diagnostics=diagnostics,
    )


#: The method named for an interval given only as a half-width metric (``uncertainty``).
LEGACY_INTERVAL = "half-width metric (method not recorded)"


def _measure(name: str, uncertainty: str | None, metrics: dict, intervals: dict):
    """``(value, lo, hi, interval dict or None, problem)`` of metric ``name``.

    ``problem`` is ``""`` when the value can be judged, else why not: ``"missing"``,
    ``"nan"`` or ``"missing uncertainty"``. An interval in ``intervals`` (the experiment
    layer's Estimate) wins over a half-width metric named by ``uncertainty``.
    """
    measured = _as_float(metrics.get(name))
    if name not in metrics or measured is None:
        return None, None, None, None, "missing"
    if math.isnan(measured):
        return measured, None, None, None, "nan"
    iv = intervals.get(name)
    if isinstance(iv, dict):
        lo, hi = _as_float(iv.get("lo")), _as_float(iv.get("hi"))
        lo = -math.inf if lo is None or math.isnan(lo) else lo
        hi = math.inf if hi is None or math.isnan(hi) else hi
        out = {"lo": lo, "hi": hi, "method": str(iv.get("method") or "unknown"),
               "level": iv.get("level"), "n": iv.get("n")}
        return measured, min(lo, measured), max(hi, measured), out, ""
    if uncertainty:
        half = _as_float(metrics.get(uncertainty))
        if uncertainty not in metrics or half is None:
            return measured, None, None, None, "missing uncertainty"
        half = abs(half) if not math.isnan(half) else math.inf
        lo, hi = measured - half, measured + half
        lo, hi = (-math.inf if math.isnan(lo) else lo), (math.inf if math.isnan(hi) else hi)
        out = {"lo": lo, "hi": hi, "method": LEGACY_INTERVAL, "level": None, "n": None}
        return measured, lo, hi, out, ""
    return measured, measured, measured, None, ""


def evaluate_claim(
    claim: Claim,
    metrics: dict,
    tier: str,
    reasons: dict[str, str] | None = None,
    intervals: dict[str, dict] | None = None,
) -> ClaimResult:
    """Compute a claim's verdict from a run's metrics (and their intervals).

    ``not run``, with :attr:`ClaimResult.reason`:

    - ``not at this tier``: ``tier`` is not one of the claim's tiers;
    - ``missing metric``: the metric (or its uncertainty) is absent, or not a number:
      a bug, which the contract test catches;
    - ``not measured``: the metric is NaN; ``reasons`` (metric name to text, from the
      run) says why, when the experiment gave a reason.

    Infinite values are measurements (e.g. the RMSE of a filter that diverged) and are
    compared like any other. The interval decides: ``intervals[metric]`` (``lo``,
    ``hi``, ``method``, ``level``, ``n``: an Estimate of the experiment layer) or else
    ``measured ± uncertainty``. ``reproduced`` when every value in it passes, ``not
    reproduced`` when none does, else ``inconclusive`` (also when an end is infinite
    on the passing side: nothing is certain then).

    A claim with a ``control`` that passes is ``reproduced`` only when the control,
    judged by the same test on its own interval, fails; a control that passes too
    makes the verdict ``not evidence``, and one that is unmeasured or straddles the
    threshold makes it ``inconclusive``.
    """
    reasons = reasons or {}
    intervals = intervals or {}
    if tier not in claim.tiers:
        where = ", ".join(claim.tiers) if claim.tiers else "no tier (not checked by experiment)"
        return not_run(claim, tier, NOT_AT_TIER, f"meaningful only at {where}")
    diagnostics = None
    if claim.diagnostics:
        diagnostics = {d: _as_float(metrics.get(d)) for d in claim.diagnostics}
    measured, lo, hi, interval, problem = _measure(
        claim.metric, claim.uncertainty, metrics, intervals)
    if problem == "missing":
        return not_run(claim, tier, MISSING_METRIC, f"the run returned no metric {claim.metric!r}")
    if problem == "nan":
        why = reasons.get(claim.metric, "")
        detail = f"{claim.metric} is NaN" + (f": {why}" if why else "")
        return dataclasses.replace(not_run(claim, tier, NOT_MEASURED, detail), measured=measured,
                                   diagnostics=diagnostics)
    if problem == "missing uncertainty":
        detail = f"the run returned no uncertainty {claim.uncertainty!r}"
        return dataclasses.replace(
            not_run(claim, tier, MISSING_METRIC, detail), measured=measured
        )
    half = None
    if interval is not None and interval["method"] == LEGACY_INTERVAL:
        half = abs(_as_float(metrics[claim.uncertainty]))
        half = math.inf if math.isnan(half) else half
    elif interval is not None:
        half = max(measured - lo, hi - measured)
    verdict = _range_verdict(measured, lo, hi, claim.comparison, claim.target, claim.tolerance)
    control = None
    control_verdict = None
    if claim.control is not None:
        cv, clo, chi, civ, cproblem = _measure(claim.control, None, metrics, intervals)
        if cproblem:
            control = {"metric": claim.control, "value": cv, "interval": None,
                       "verdict": NOT_RUN,
                       "detail": reasons.get(claim.control, "") or f"{claim.control}: {cproblem}"}
        else:
            control_verdict = _range_verdict(cv, clo, chi, claim.comparison, claim.target,
                                             claim.tolerance)
            control = {"metric": claim.control, "value": cv, "interval": civ,
                       "verdict": {True: REPRODUCED, False: NOT_REPRODUCED}.get(
                           control_verdict, INCONCLUSIVE)}
    kw = {"interval": interval, "control": control, "diagnostics": diagnostics}
    if verdict is None:
        why = ("the interval straddles the threshold" if math.isfinite(half or 0.0)
               else "the interval is infinite (too few units to know the spread)")
        return _result(claim, measured, half, INCONCLUSIVE, detail=why, **kw)
    if not verdict:
        return _result(claim, measured, half, NOT_REPRODUCED, **kw)
    if control is not None:
        if control["verdict"] == REPRODUCED:
            return _result(claim, measured, half, NOT_EVIDENCE,
                           detail=f"the control {claim.control} passes the same test", **kw)
        if control["verdict"] == NOT_RUN:
            return _result(claim, measured, half, INCONCLUSIVE,
                           detail=f"the control {claim.control} was not measured", **kw)
        if control["verdict"] == INCONCLUSIVE:
            return _result(claim, measured, half, INCONCLUSIVE,
                           detail=f"the control {claim.control}'s interval straddles the "
                                  "threshold", **kw)
    return _result(claim, measured, half, REPRODUCED, **kw)


def claim_counts(results, kinds: dict[str, str] | None = None) -> dict[str, dict[str, int]]:
    """Verdict counts of paper claims and of checks: ``{"paper": {...}, "check": {...}}``.

    Each inner dict holds every verdict of :data:`VERDICTS` (zeros included).
    ``kinds`` (claim id to kind, from the registry) overrides the kind stored with a
    result, so records stored before claims were classified count correctly.
    """
    kinds = kinds or {}
    out = {k: dict.fromkeys(VERDICTS, 0) for k in CLAIM_KINDS}
    for r in results:
        out[kinds.get(r.id, r.kind)][r.verdict] += 1
    return out


def format_counts(counts: dict[str, int]) -> str:
    """``"3 reproduced, 1 not reproduced"``: the non-zero counts, or ``"none"``."""
    text = ", ".join(f"{n} {v}" for v, n in counts.items() if n)
    return text or "none"


@dataclass(frozen=True)
class Resources:
    """What one run of a paper needs; both backends of ``reproduce`` honour it.

    Parameters
    ----------
    cpus : int
        Cores (the local backend's slots and BLAS threads; Ray's ``num_cpus``).
    memory_gb : float
        Memory (Ray's ``memory`` resource; the local backend does not enforce it).
    gpu : float
        GPUs (Ray's ``num_gpus``; the local backend runs on what the machine has).
    """

    cpus: int = 1
    memory_gb: float = 2.0
    gpu: float = 0.0

    def __post_init__(self) -> None:
        if not isinstance(self.cpus, int) or self.cpus < 1:
            raise ValueError(f"resources: cpus must be an integer >= 1, got {self.cpus!r}")
        if not self.memory_gb > 0:
            raise ValueError(f"resources: memory_gb must be > 0, got {self.memory_gb!r}")
        if not self.gpu >= 0:
            raise ValueError(f"resources: gpu must be >= 0, got {self.gpu!r}")


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
    resources : Resources
        Cores, memory and GPUs one run needs (default 1 core, 2 GB, no GPU).
    paper_hours : float or None
        Expected hours of the ``paper`` tier on the machine its tier text names;
        ``None`` if unknown. ``run --tier paper`` warns of it and asks for ``--yes``
        above an hour.
    link : str
        A link the abstract gives (the authors' code or notebook); empty where it gives
        none.
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
    resources: Resources = Resources()
    paper_hours: float | None = None
    link: str = ""

    def __post_init__(self) -> None:
        if self.link and not self.link.startswith("https://"):
            raise ValueError(f"paper {self.slug!r}: link must be an https:// address")
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

    def evaluate(
        self,
        metrics: dict,
        tier: str,
        reasons: dict[str, str] | None = None,
        intervals: dict[str, dict] | None = None,
    ) -> list[ClaimResult]:
        """Verdicts of every claim on one run's metrics (see :func:`evaluate_claim`)."""
        return [evaluate_claim(c, metrics, tier, reasons, intervals) for c in self.claims]

    @property
    def kinds(self) -> dict[str, str]:
        """Claim id to kind (``"paper"`` or ``"check"``)."""
        return {c.id: c.kind for c in self.claims}


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
