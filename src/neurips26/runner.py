"""Running one reproduction: config, seed, timing, memory, environment, verdicts.

:func:`run_paper` runs a paper's experiment in this process and returns a
:class:`RunRecord`; :func:`run_many` runs several, each in a fresh child process (so
one crash or memory blow-up cannot take the others down, and peak memory is the
run's own), handing each finished record to a callback as soon as it arrives.
"""

from __future__ import annotations

import datetime as _dt
import hashlib
import multiprocessing
import os
import platform
import resource
import subprocess
import sys
import time
import traceback
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from multiprocessing.connection import wait
from pathlib import Path
from typing import Any

from neurips26 import __version__
from neurips26.registry import (
    NOT_AT_TIER,
    RUN_FAILED,
    TIERS,
    ClaimResult,
    evaluate_claim,
    get_paper,
    not_run,
)

PACKAGE_DIR = Path(__file__).resolve().parent

OK = "ok"
FAILED = "failed"


@dataclass(frozen=True)
class RunRecord:
    """Everything stored about one run of one paper."""

    slug: str
    tier: str
    seed: int
    config: dict[str, Any]
    status: str
    metrics: dict[str, Any]
    volatile: tuple[str, ...]
    claims: tuple[ClaimResult, ...]
    tables: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    figures: dict[str, bytes] = field(default_factory=dict)
    notes: tuple[str, ...] = ()
    error: str | None = None
    captions: dict[str, str] = field(default_factory=dict)
    wall_seconds: float = 0.0
    cpu_seconds: float = 0.0
    peak_memory_mb: float = 0.0
    package_version: str = __version__
    git_commit: str = "unknown"
    code_version: str = ""
    environment: dict[str, str] = field(default_factory=dict)
    created_at: str = ""

    def to_json(self) -> dict[str, Any]:
        """The ``--json`` view: everything except figure bytes and tables."""
        return {
            "slug": self.slug,
            "tier": self.tier,
            "seed": self.seed,
            "status": self.status,
            "config": self.config,
            "metrics": self.metrics,
            "claims": [c.to_dict() for c in self.claims],
            "notes": list(self.notes),
            "captions": self.captions,
            "error": self.error,
            "wall_seconds": self.wall_seconds,
            "cpu_seconds": self.cpu_seconds,
            "peak_memory_mb": self.peak_memory_mb,
            "package_version": self.package_version,
            "git_commit": self.git_commit,
            "code_version": self.code_version,
            "environment": self.environment,
            "created_at": self.created_at,
        }


def git_commit() -> str:
    """The checkout's commit (with ``-dirty`` for uncommitted changes), or ``unknown``."""
    try:
        sha = subprocess.run(
            ["git", "rev-parse", "HEAD"],
            cwd=PACKAGE_DIR,
            capture_output=True,
            text=True,
            timeout=5,
            check=True,
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=no", "--", "."],
            cwd=PACKAGE_DIR,
            capture_output=True,
            text=True,
            timeout=5,
            check=True,
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    return sha + ("-dirty" if dirty else "")


def code_version(slug: str) -> str:
    """A hash of the code a paper's result depends on: its package and ``common/``.

    Two runs with the same slug, tier, seed and code version are the same run, so
    ``reproduce`` skips the second.
    """
    digest = hashlib.sha256(__version__.encode())
    for folder in (PACKAGE_DIR / "papers" / slug, PACKAGE_DIR / "common"):
        for path in sorted(folder.rglob("*.py")):
            digest.update(str(path.relative_to(PACKAGE_DIR)).encode())
            digest.update(path.read_bytes())
    return digest.hexdigest()[:16]


def environment() -> dict[str, str]:
    """Versions and machine facts recorded with each run."""
    env = {
        "python": platform.python_version(),
        "platform": platform.platform(),
        "machine": platform.machine(),
        "cpu_count": str(os.cpu_count()),
    }
    for name in ("numpy", "scipy", "torch", "sklearn", "pandas"):
        module = sys.modules.get(name)
        if module is not None:
            env[name] = str(getattr(module, "__version__", "?"))
    return env


def _peak_rss_mb() -> float:
    # ru_maxrss is in kilobytes on Linux: the peak resident set of this process.
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def resolve_config(slug: str, tier: str, seed: int, overrides: dict[str, str] | None = None):
    """The experiment module and the tier's config with ``seed`` and overrides applied."""
    from neurips26.common.experiment import ConfigError, apply_overrides

    if tier not in TIERS:
        raise ConfigError(f"unknown tier {tier!r}; valid tiers: {', '.join(TIERS)}")
    experiment = get_paper(slug).experiment()
    config = apply_overrides(experiment.TIERS[tier], overrides, seed=seed)
    return experiment, config


def run_paper(
    slug: str,
    *,
    tier: str = "small",
    seed: int = 0,
    overrides: dict[str, str] | None = None,
) -> RunRecord:
    """Run one paper's reproduction in this process.

    Configuration errors (unknown tier, bad override) raise
    :class:`~neurips26.common.experiment.ConfigError`. An exception inside the
    experiment does not raise: it gives a record with ``status="failed"`` and the
    traceback, and every claim ``not run``.
    """
    from neurips26.common.experiment import config_to_dict
    from neurips26.common.seeding import seed_everything

    paper = get_paper(slug)
    experiment, config = resolve_config(slug, tier, seed, overrides)
    started = _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds")
    seed_everything(seed)
    t0, c0 = time.perf_counter(), time.process_time()
    try:
        result = experiment.run(config)
        status, error = OK, None
    except Exception:
        result, status, error = None, FAILED, traceback.format_exc()
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    metrics = dict(result.metrics) if result is not None else {}
    reasons = dict(getattr(result, "reasons", {}) or {})
    claims = tuple(
        evaluate_claim(c, metrics, tier, reasons) if status == OK else _not_run(c, tier)
        for c in paper.claims
    )
    return RunRecord(
        slug=slug,
        tier=tier,
        seed=seed,
        config=config_to_dict(config),
        status=status,
        metrics=metrics,
        volatile=tuple(result.volatile) if result is not None else (),
        claims=claims,
        tables=dict(result.tables) if result is not None else {},
        figures=dict(result.figures) if result is not None else {},
        notes=tuple(result.notes) if result is not None else (),
        captions=dict(getattr(result, "captions", {}) or {}) if result is not None else {},
        error=error,
        wall_seconds=wall,
        cpu_seconds=cpu,
        peak_memory_mb=_peak_rss_mb(),
        git_commit=git_commit(),
        code_version=code_version(slug),
        environment=environment(),
        created_at=started,
    )


def _not_run(claim, tier: str) -> ClaimResult:
    result = evaluate_claim(claim, {}, tier)
    if result.reason == NOT_AT_TIER:
        return result
    return not_run(claim, tier, RUN_FAILED, "the run failed before measuring it")


def failed_record(
    slug: str, tier: str, seed: int, error: str, overrides: dict[str, str] | None = None
) -> RunRecord:
    """A record for a run that died before it could report (crash, kill, OOM)."""
    paper = get_paper(slug)
    return RunRecord(
        slug=slug,
        tier=tier,
        seed=seed,
        config={"overrides": overrides or {}},
        status=FAILED,
        metrics={},
        volatile=(),
        claims=tuple(_not_run(c, tier) for c in paper.claims),
        error=error,
        git_commit=git_commit(),
        code_version=code_version(slug),
        environment=environment(),
        created_at=_dt.datetime.now(_dt.UTC).isoformat(timespec="seconds"),
    )


THREAD_VARIABLES = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")


def _child(
    conn, slug: str, tier: str, seed: int, overrides: dict[str, str] | None, threads: int
) -> None:
    # Before numpy or torch load: share the cores among the runs instead of letting each
    # BLAS pool claim all of them (oversubscription slows numerical code many times over).
    for name in THREAD_VARIABLES:
        os.environ.setdefault(name, str(threads))
    try:
        record = run_paper(slug, tier=tier, seed=seed, overrides=overrides)
    except Exception:
        record = failed_record(slug, tier, seed, traceback.format_exc(), overrides)
    conn.send(record)
    conn.close()


def run_many(
    slugs: Iterable[str],
    *,
    tier: str,
    seed: int,
    jobs: int = 1,
    overrides: dict[str, str] | None = None,
    on_done: Callable[[RunRecord], None],
    on_start: Callable[[str], None] | None = None,
) -> None:
    """Run several papers, each in its own child process, ``jobs`` at a time.

    ``on_done`` receives each record as soon as its run ends (failed ones included),
    so the caller can store it before the next finishes. Each child gets
    ``cpu_count // jobs`` BLAS/OpenMP threads unless the environment already sets them.
    """
    if jobs < 1:
        raise ValueError(f"jobs must be >= 1, got {jobs}")
    ctx = multiprocessing.get_context("spawn")
    threads = max(1, (os.cpu_count() or 1) // jobs)
    pending = list(slugs)
    running: dict[Any, tuple[str, Any]] = {}  # connection -> (slug, process)
    while pending or running:
        while pending and len(running) < jobs:
            slug = pending.pop(0)
            parent, child = ctx.Pipe(duplex=False)
            proc = ctx.Process(target=_child, args=(child, slug, tier, seed, overrides, threads))
            proc.start()
            child.close()
            running[parent] = (slug, proc)
            if on_start is not None:
                on_start(slug)
        for conn in wait(list(running)):
            slug, proc = running.pop(conn)
            try:
                record = conn.recv()
            except EOFError:
                proc.join()
                record = failed_record(
                    slug,
                    tier,
                    seed,
                    f"the run's process died with exit code {proc.exitcode} before reporting",
                    overrides,
                )
            conn.close()
            proc.join()
            on_done(record)
