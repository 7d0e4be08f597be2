"""Checks every registered paper against the experiment contract (CONTRIBUTING.md)."""

import dataclasses
import importlib

import pytest

from neurips26.common.experiment import RunResult, config_from_dict, config_to_dict
from neurips26.registry import NOT_RUN, SLUGS, TIERS, VERDICTS, get_paper
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


def test_smoke_run_is_deterministic_and_claims_are_evaluated(slug):
    paper = get_paper(slug)
    first = run_paper(slug, tier="smoke", seed=1)
    assert first.status == "ok", first.error
    assert first.wall_seconds < 60, f"smoke tier took {first.wall_seconds:.1f} s"
    second = run_paper(slug, tier="smoke", seed=1)
    stable = RunResult(metrics=first.metrics, volatile=first.volatile).stable_metrics()
    assert stable == RunResult(metrics=second.metrics, volatile=second.volatile).stable_metrics()
    assert [c.id for c in first.claims] == [c.id for c in paper.claims]
    for claim, result in zip(paper.claims, first.claims, strict=True):
        assert result.verdict in VERDICTS
        if "smoke" in claim.tiers:
            assert claim.metric in first.metrics, f"{claim.id}: smoke run lacks {claim.metric!r}"
            assert result.verdict != NOT_RUN, f"{claim.id}: {claim.metric} is not finite"
        else:
            assert result.verdict == NOT_RUN
