"""Shared fixtures: a temporary store and a toy paper for machinery tests."""

from __future__ import annotations

import os
import tempfile

import pytest

from neurips26.registry import Claim, Paper, evaluate_claim
from neurips26.runner import RunRecord
from neurips26.store import Store

# No test may depend on a cached trained model: every session starts with an empty cache.
os.environ["NEURIPS26_CACHE"] = tempfile.mkdtemp(prefix="neurips26-test-cache-")

TOY = Paper(
    slug="toy",
    title="A <toy> & its claims",
    seed="seed.txt",
    paragraph=1,
    field="testing",
    grade="A",
    summary="Checks the machinery; <script>alert(1)</script> must be escaped.",
    claims=(
        Claim("small_mean", "The mean is small", "0", "mean", "<=", 0.5),
        Claim("many", "Enough samples", "10", "n", ">=", 10, uncertainty="n_ci"),
        Claim("paper_only", "Only at scale", "x", "big", ">=", 1, tiers=("paper",)),
    ),
    deviations=("None | really",),
    tiers=(("smoke", "tiny"), ("small", "default"), ("paper", "large")),
)


def make_record(metrics: dict, *, tier: str = "small", status: str = "ok", **kw) -> RunRecord:
    return RunRecord(
        slug=kw.pop("slug", "toy"),
        tier=tier,
        seed=kw.pop("seed", 0),
        config={"seed": 0, "n": 3},
        status=status,
        metrics=metrics,
        volatile=kw.pop("volatile", ()),
        claims=tuple(evaluate_claim(c, metrics, tier) for c in TOY.claims),
        code_version=kw.pop("code_version", "abc"),
        **kw,
    )


@pytest.fixture
def store(tmp_path) -> Store:
    return Store(tmp_path / "runs" / "test.sqlite")
