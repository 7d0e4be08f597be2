"""Which stored run represents a paper, and how its verdicts are counted and worded.

One policy, used by ``neurips26 list``, the report and the README table alike
(:func:`shown_run`): the latest successful small-tier run, else the latest
successful run of any tier (labelled with its tier). A run that failed after the
shown one does not hide it; it is mentioned in a note. Paper claims are the
headline; checks (oracles, sanity checks, construction properties) are counted
apart (:func:`counts`).

This module imports neither numpy nor the experiments, so ``list`` stays fast.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from neurips26.registry import (
    INCONCLUSIVE,
    NOT_AT_TIER,
    NOT_EVIDENCE,
    NOT_REPRODUCED,
    NOT_RUN,
    REPRODUCED,
    Paper,
    claim_counts,
)

OK = "ok"  # the store's status of a successful run

#: Order in which tiers are shown (the report's sections, the fallback of the policy).
TIER_ORDER = ("small", "paper", "smoke")

_ORDER = (REPRODUCED, NOT_REPRODUCED, NOT_EVIDENCE, INCONCLUSIVE, NOT_RUN)


@dataclass(frozen=True)
class Shown:
    """The run shown for a paper (or for one tier of it) and what came after it.

    Attributes
    ----------
    stored : StoredRun or None
        The run shown: successful if any run succeeded, else the latest failed one,
        else ``None`` (never run).
    later_failure : StoredRun or None
        The latest run, when it failed after ``stored`` was made.
    """

    stored: Any
    later_failure: Any = None

    @property
    def tier(self) -> str | None:
        return self.stored.record.tier if self.stored is not None else None

    @property
    def ok(self) -> bool:
        return self.stored is not None and self.stored.record.status == OK

    @property
    def note(self) -> str:
        """A sentence about a later failed run, or ``""``."""
        f = self.later_failure
        if f is None:
            return ""
        when = f" on {f.record.created_at}" if f.record.created_at else ""
        return (
            f"a later {f.record.tier}-tier run (run {f.run_id}{when}) failed; "
            "the latest successful run is shown"
        )


def _later_failure(store, slug: str, shown, tier: str | None = None):
    latest = store.latest(slug, tier)
    if latest is None or shown is None or latest.run_id <= shown.run_id:
        return None
    return latest if latest.record.status != OK else None


def shown_run(store, slug: str, *, with_figures: bool = False) -> Shown:
    """The run that represents ``slug``: latest successful small-tier run, else the
    latest successful run of any tier, else the latest (failed) run."""
    stored = store.latest(slug, "small", status=OK, with_figures=with_figures)
    if stored is None:
        stored = store.latest(slug, status=OK, with_figures=with_figures)
    if stored is None:
        return Shown(store.latest(slug, with_figures=with_figures))
    return Shown(stored, _later_failure(store, slug, stored))


def shown_tier_run(store, slug: str, tier: str, *, with_figures: bool = False) -> Shown:
    """The same policy within one tier: its latest successful run, else its latest run."""
    stored = store.latest(slug, tier, status=OK, with_figures=with_figures)
    if stored is None:
        return Shown(store.latest(slug, tier, with_figures=with_figures))
    return Shown(stored, _later_failure(store, slug, stored, tier))


def reason_of(result, paper: Paper | None, tier: str) -> str:
    """Why a claim result is ``not run`` (records stored before reasons existed have
    none; the tier exclusion is derived from the registry)."""
    if result.verdict != NOT_RUN:
        return ""
    if result.reason:
        return result.reason
    claim = {c.id: c for c in paper.claims}.get(result.id) if paper is not None else None
    tiers = claim.tiers if claim is not None else result.tiers
    return NOT_AT_TIER if tier not in tiers else ""


def counts(record, paper: Paper | None = None) -> dict[str, dict[str, int]]:
    """Verdict counts of paper claims and checks of a stored run (kinds from the registry)."""
    return claim_counts(record.claims, paper.kinds if paper is not None else None)


def counts_text(c: dict[str, int]) -> str:
    """``"4 reproduced, 1 not reproduced, 0 not evidence, 0 inconclusive, 0 not run"``,
    every verdict named."""
    return ", ".join(f"{c.get(v, 0)} {v}" for v in _ORDER)


def counts_short(c: dict[str, int]) -> str:
    """``"4 / 1 / 0 / 0 / 0"`` (reproduced / not reproduced / not evidence / inconclusive /
    not run)."""
    return " / ".join(str(c.get(v, 0)) for v in _ORDER)


def evaluated(record, paper: Paper | None = None) -> tuple[int, int]:
    """How many of the run's claims were evaluated at its tier, out of how many."""
    n = len(record.claims)
    excluded = sum(reason_of(c, paper, record.tier) == NOT_AT_TIER for c in record.claims)
    return n - excluded, n


def run_line(record, paper: Paper | None = None) -> str:
    """One line per run, as ``reproduce`` prints it: ``"small: paper claims 4 of 5
    reproduced (1 not reproduced); checks 6 of 6 reproduced"``, ``"smoke: 0 of 8 claims
    evaluated at this tier"``; counts are of the claims evaluated at the run's tier."""
    tier = record.tier
    if record.status != OK:
        return f"{tier}: run {record.status}"
    done, n = evaluated(record, paper)
    if done == 0:
        return f"{tier}: 0 of {n} claims evaluated at this tier"
    kept = [c for c in record.claims if reason_of(c, paper, tier) != NOT_AT_TIER]
    c = claim_counts(kept, paper.kinds if paper is not None else None)
    parts = []
    for kind, label in (("paper", "paper claims"), ("check", "checks")):
        k = c[kind]
        total = sum(k.values())
        if not total:
            continue
        rest = ", ".join(
            f"{k[v]} {v}" for v in (NOT_REPRODUCED, NOT_EVIDENCE, INCONCLUSIVE, NOT_RUN) if k[v]
        )
        parts.append(
            f"{label} {k[REPRODUCED]} of {total} reproduced" + (f" ({rest})" if rest else "")
        )
    head = f"{tier}: " + ("" if done == n else f"{done} of {n} claims evaluated at this tier; ")
    return head + "; ".join(parts)
