"""The results store: one SQLite file, one row per run, one transaction per run.

Each run is written in a single transaction, so a process killed mid-way leaves
every run that had finished intact and no half-written one. The default location is
``runs/neurips26.sqlite`` under the working directory; ``NEURIPS26_STORE`` or the
CLI's ``--store`` moves it.
"""

from __future__ import annotations

import json
import os
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from neurips26.registry import ClaimResult
from neurips26.runner import OK, RunRecord

DEFAULT_PATH = Path("runs") / "neurips26.sqlite"

_SCHEMA = """
CREATE TABLE IF NOT EXISTS runs (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    slug TEXT NOT NULL,
    tier TEXT NOT NULL,
    seed INTEGER NOT NULL,
    status TEXT NOT NULL,
    config TEXT NOT NULL,
    metrics TEXT NOT NULL,
    volatile TEXT NOT NULL,
    claims TEXT NOT NULL,
    tables TEXT NOT NULL,
    notes TEXT NOT NULL,
    error TEXT,
    wall_seconds REAL NOT NULL,
    cpu_seconds REAL NOT NULL,
    peak_memory_mb REAL NOT NULL,
    package_version TEXT NOT NULL,
    git_commit TEXT NOT NULL,
    code_version TEXT NOT NULL,
    environment TEXT NOT NULL,
    created_at TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS runs_key ON runs (slug, tier, seed, code_version);
CREATE TABLE IF NOT EXISTS figures (
    run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    name TEXT NOT NULL,
    png BLOB NOT NULL,
    PRIMARY KEY (run_id, name)
);
"""


def default_path() -> Path:
    """``$NEURIPS26_STORE`` if set, else ``runs/neurips26.sqlite``."""
    env = os.environ.get("NEURIPS26_STORE")
    return Path(env) if env else DEFAULT_PATH


class Store:
    """Runs stored in SQLite.

    Parameters
    ----------
    path : str or Path, optional
        The database file; created with its folder if missing.
    """

    def __init__(self, path: str | os.PathLike | None = None) -> None:
        self.path = Path(path) if path is not None else default_path()
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with self._connect() as db:
            db.executescript(_SCHEMA)
            columns = {r["name"] for r in db.execute("PRAGMA table_info(runs)")}
            if "captions" not in columns:  # stores written before figures had captions
                db.execute("ALTER TABLE runs ADD COLUMN captions TEXT NOT NULL DEFAULT '{}'")
                db.commit()

    @contextmanager
    def _connect(self) -> Iterator[sqlite3.Connection]:
        db = sqlite3.connect(self.path, timeout=30)
        db.row_factory = sqlite3.Row
        db.execute("PRAGMA foreign_keys = ON")
        try:
            yield db
        finally:
            db.close()

    def save(self, record: RunRecord) -> int:
        """Store a run and its figures in one transaction; returns its id."""
        with self._connect() as db, db:  # the inner `db` commits or rolls back
            cur = db.execute(
                "INSERT INTO runs (slug, tier, seed, status, config, metrics, volatile, claims,"
                " tables, notes, error, wall_seconds, cpu_seconds, peak_memory_mb, package_version,"
                " git_commit, code_version, environment, created_at, captions)"
                " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    record.slug,
                    record.tier,
                    record.seed,
                    record.status,
                    json.dumps(record.config),
                    json.dumps(record.metrics),
                    json.dumps(list(record.volatile)),
                    json.dumps([c.to_dict() for c in record.claims]),
                    json.dumps(record.tables, default=str),
                    json.dumps(list(record.notes)),
                    record.error,
                    record.wall_seconds,
                    record.cpu_seconds,
                    record.peak_memory_mb,
                    record.package_version,
                    record.git_commit,
                    record.code_version,
                    json.dumps(record.environment),
                    record.created_at,
                    json.dumps(record.captions),
                ),
            )
            run_id = int(cur.lastrowid)
            db.executemany(
                "INSERT INTO figures (run_id, name, png) VALUES (?, ?, ?)",
                [(run_id, name, png) for name, png in record.figures.items()],
            )
        return run_id

    def _record(self, row: sqlite3.Row, *, with_figures: bool) -> StoredRun:
        figures: dict[str, bytes] = {}
        if with_figures:
            with self._connect() as db:
                figures = {
                    r["name"]: bytes(r["png"])
                    for r in db.execute(
                        "SELECT name, png FROM figures WHERE run_id = ? ORDER BY name", (row["id"],)
                    )
                }
        record = RunRecord(
            slug=row["slug"],
            tier=row["tier"],
            seed=row["seed"],
            config=json.loads(row["config"]),
            status=row["status"],
            metrics=json.loads(row["metrics"]),
            volatile=tuple(json.loads(row["volatile"])),
            claims=tuple(ClaimResult(**c) for c in json.loads(row["claims"])),
            tables=json.loads(row["tables"]),
            figures=figures,
            notes=tuple(json.loads(row["notes"])),
            error=row["error"],
            wall_seconds=row["wall_seconds"],
            cpu_seconds=row["cpu_seconds"],
            peak_memory_mb=row["peak_memory_mb"],
            package_version=row["package_version"],
            git_commit=row["git_commit"],
            code_version=row["code_version"],
            environment=json.loads(row["environment"]),
            created_at=row["created_at"],
            captions=json.loads(row["captions"]),
        )
        return StoredRun(run_id=row["id"], record=record)

    def find(self, slug: str, tier: str, seed: int, code_version: str) -> StoredRun | None:
        """The latest successful run with this key, if any (what ``reproduce`` skips)."""
        with self._connect() as db:
            row = db.execute(
                "SELECT * FROM runs WHERE slug = ? AND tier = ? AND seed = ? AND code_version = ?"
                " AND status = ? ORDER BY id DESC LIMIT 1",
                (slug, tier, seed, code_version, OK),
            ).fetchone()
        return self._record(row, with_figures=False) if row else None

    def latest(
        self,
        slug: str,
        tier: str | None = None,
        *,
        with_figures: bool = False,
        status: str | None = None,
    ) -> StoredRun | None:
        """The most recent run of ``slug`` (at ``tier``, with ``status``, if given)."""
        query = "SELECT * FROM runs WHERE slug = ?"
        args: list[Any] = [slug]
        if tier is not None:
            query += " AND tier = ?"
            args.append(tier)
        if status is not None:
            query += " AND status = ?"
            args.append(status)
        with self._connect() as db:
            row = db.execute(query + " ORDER BY id DESC LIMIT 1", args).fetchone()
        return self._record(row, with_figures=with_figures) if row else None

    def runs(self, slug: str | None = None) -> list[StoredRun]:
        """Every stored run (of ``slug`` if given), oldest first, without figures."""
        query, args = "SELECT * FROM runs", []
        if slug is not None:
            query, args = query + " WHERE slug = ?", [slug]
        with self._connect() as db:
            rows = db.execute(query + " ORDER BY id", args).fetchall()
        return [self._record(r, with_figures=False) for r in rows]

    def count(self) -> int:
        with self._connect() as db:
            return int(db.execute("SELECT COUNT(*) FROM runs").fetchone()[0])


class StoredRun:
    """A run read back from the store: its id and its :class:`RunRecord`."""

    __slots__ = ("record", "run_id")

    def __init__(self, run_id: int, record: RunRecord) -> None:
        self.run_id = run_id
        self.record = record

    def __repr__(self) -> str:
        r = self.record
        return f"StoredRun(id={self.run_id}, slug={r.slug!r}, tier={r.tier!r}, status={r.status!r})"
