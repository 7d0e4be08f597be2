"""Checks every registered paper against the experiment contract (CONTRIBUTING.md)."""

import dataclasses
import importlib
import math

import pytest

from neurips26.common.experiment import RunResult, config_from_dict, config_to_dict, is_declared
from neurips26.registry import NOT_AT_TIER, NOT_RUN, SLUGS, TIERS, VERDICTS, get_paper
from neurips26.runner import run_paper


@pytest.fixture(scope="module", params=SLUGS)
def slug(request):
    return request.param


def test_metadata(slug):
    paper = get_paper(slug)
    assert paper.title and paper.summary and paper.claims and paper.deviations
    api = importlib.import_module(f"neurips26.papers.{slug}")
    assert getattr(api, "__all__", None), f"{slug}/__init__.py must define __all__"
    for name in api.__all__:
        assert getattr(api, name).__doc__, f"{slug}.{name} has no docstring"


def test_tiers_and_config_round_trip(slug):
    exp = get_paper(slug).experiment()
    assert set(exp.TIERS) == set(TIERS)
    for tier, config in exp.TIERS.items():
        assert dataclasses.is_dataclass(config) and config.__dataclass_params__.frozen, tier
        assert "seed" in {f.name for f in dataclasses.fields(config)}
        assert config_from_dict(type(config), config_to_dict(config)) == config


def test_every_claim_names_a_declared_metric(slug):
    """At every tier: a claim whose metric nothing produces is a bug, not a 'not run'."""
    paper, exp = get_paper(slug), get_paper(slug).experiment()
    declared = getattr(exp, "METRICS", None)
    assert isinstance(declared, tuple) and declared, f"{slug}: experiment.py must define METRICS"
    assert all(isinstance(n, str) and n for n in declared), f"{slug}: METRICS holds non-names"
    assert len(set(declared)) == len(declared), f"{slug}: METRICS repeats a name"
    for claim in paper.claims:
        # Exactly, not through a pattern: a typo must not hide behind "rmse_*".
        assert claim.metric in declared, f"{slug}/{claim.id}: {claim.metric!r} not in METRICS"
        if claim.uncertainty:
            assert claim.uncertainty in declared, (
                f"{slug}/{claim.id}: uncertainty {claim.uncertainty!r} not in METRICS"
            )


def _same(a: dict, b: dict) -> bool:
    def eq(x, y):
        both_nan = isinstance(x, float) and isinstance(y, float) and math.isnan(x) and math.isnan(y)
        return both_nan or x == y

    return a.keys() == b.keys() and all(eq(a[k], b[k]) for k in a)


def test_smoke_run_is_deterministic_and_claims_are_evaluated(slug):
    paper = get_paper(slug)
    declared = get_paper(slug).experiment().METRICS
    first = run_paper(slug, tier="smoke", seed=1)
    assert first.status == "ok", first.error
    undeclared = sorted(k for k in first.metrics if not is_declared(k, declared))
    assert not undeclared, f"{slug}: the smoke run returns metrics not in METRICS: {undeclared}"
    second = run_paper(slug, tier="smoke", seed=1)
    stable = RunResult(metrics=first.metrics, volatile=first.volatile).stable_metrics()
    again = RunResult(metrics=second.metrics, volatile=second.volatile).stable_metrics()
    changed = sorted(k for k in stable if not _same({k: stable[k]}, {k: again.get(k)}))
    assert _same(stable, again), f"{slug}: non-volatile metrics differ between runs: {changed}"
    uncaptioned = sorted(set(first.figures) - set(first.captions))
    assert not uncaptioned, f"{slug}: figures without a caption (RunResult.captions): {uncaptioned}"
    assert [c.id for c in first.claims] == [c.id for c in paper.claims]
    for claim, result in zip(paper.claims, first.claims, strict=True):
        assert result.verdict in VERDICTS
        as_json = result.to_dict()
        assert {"interval", "control", "no_control", "diagnostics"} <= set(as_json)
        if claim.control and result.verdict != NOT_RUN:
            assert as_json["control"]["metric"] == claim.control
            assert {"value", "verdict"} <= set(as_json["control"])
        iv = as_json["interval"]
        if iv is not None:
            assert {"lo", "hi", "method", "level", "n"} <= set(iv), f"{claim.id}: {iv}"
        assert result.kind == claim.kind and result.tiers == claim.tiers
        if "smoke" in claim.tiers:
            assert claim.metric in first.metrics, f"{claim.id}: smoke run lacks {claim.metric!r}"
            if claim.uncertainty:
                assert claim.uncertainty in first.metrics, (
                    f"{claim.id}: smoke run lacks {claim.uncertainty!r}"
                )
            assert result.verdict != NOT_RUN, f"{claim.id}: {claim.metric} is not finite"
        else:
            assert (result.verdict, result.reason) == (NOT_RUN, NOT_AT_TIER)


#: Helpers that compute an interval by hand; a ported experiment gets its intervals from
#: ``neurips26.experiment`` instead.
HAND_INTERVALS = ("seed_ci", "bootstrap_ci", "stats.t.ppf", "np.percentile(reps")


def test_claims_name_declared_controls_and_diagnostics(slug):
    paper, exp = get_paper(slug), get_paper(slug).experiment()
    for claim in paper.claims:
        for name in ((claim.control,) if claim.control else ()) + claim.diagnostics:
            assert name in exp.METRICS, f"{slug}/{claim.id}: {name!r} not in METRICS"


def test_every_paper_runs_on_the_layer_and_every_paper_claim_can_fail(slug):
    from pathlib import Path

    from neurips26.experiment import Experiment

    exp = get_paper(slug).experiment()
    driver = getattr(exp, "EXPERIMENT", None)
    assert isinstance(driver, Experiment), f"{slug}: experiment.py must expose EXPERIMENT"
    for claim in get_paper(slug).claims:
        if claim.kind == "paper":
            assert claim.control or len(claim.no_control) >= 20, (
                f"{slug}/{claim.id}: a paper claim needs a control or a no_control reason"
            )
    text = Path(exp.__file__).read_text()
    hand = [h for h in HAND_INTERVALS if h in text]
    assert not hand, f"{slug}: intervals computed by hand in experiment.py: {hand}"
