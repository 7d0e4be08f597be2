"""The results store: one SQLite file, one row per run, one transaction per run.

Each run is written in a single transaction, so a process killed mid-way leaves
every run that had finished intact and no half-written one. The default location is
``runs/neurips26.sqlite`` under the working directory; ``NEURIPS26_STORE`` or the
CLI's ``--store`` moves it.

A row holds the run's key (slug, tier, seed, code version, status) in columns and the
whole :class:`~neurips26.records.RunRecord` as one JSON document; figures (PNG bytes)
live in their own table. The file carries its schema version in SQLite's
``user_version``: a store written by an older package is migrated in place when
opened (in one transaction), and one written by a newer package is refused with a
message saying so. A damaged file is refused at open with a one-line
:class:`StoreError` that says what is wrong and what to do; a single row that does
not decode is skipped and listed in :attr:`Store.problems`.

``reproduce`` takes a *lease* on each (slug, tier, seed, code version) before it
runs it, so two ``reproduce`` processes on one store share the work instead of both
doing all of it; a lease whose process has died is taken over.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import sqlite3
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from neurips26.records import OK, RecordError, RunRecord

DEFAULT_PATH = Path("runs") / "neurips26.sqlite"

#: The schema this package writes. 1: one column per record field (0.1.0, before
#: ``user_version`` was set); 2: the record as one JSON document, and leases.
SCHEMA_VERSION = 2

_RUNS_V2 = """
CREATE TABLE IF NOT EXISTS runs (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    slug TEXT NOT NULL,
    tier TEXT NOT NULL,
    seed INTEGER NOT NULL,
    status TEXT NOT NULL,
    code_version TEXT NOT NULL,
    created_at TEXT NOT NULL,
    record TEXT NOT NULL
)"""

_SCHEMA = (
    _RUNS_V2
    + """;
CREATE INDEX IF NOT EXISTS runs_key ON runs (slug, tier, seed, code_version);
CREATE TABLE IF NOT EXISTS figures (
    run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    name TEXT NOT NULL,
    png BLOB NOT NULL,
    PRIMARY KEY (run_id, name)
);
CREATE TABLE IF NOT EXISTS leases (
    slug TEXT NOT NULL,
    tier TEXT NOT NULL,
    seed INTEGER NOT NULL,
    code_version TEXT NOT NULL,
    host TEXT NOT NULL,
    pid INTEGER NOT NULL,
    since REAL NOT NULL,
    PRIMARY KEY (slug, tier, seed, code_version)
);
"""
)

#: The JSON-encoded columns of a schema-1 row.
_V1_JSON = ("config", "metrics", "volatile", "claims", "tables", "notes", "environment")

#: Free disk the store's folder must have before a run starts: room for a record with
#: its figures (the largest stored records are a few MB).
MIN_FREE_BYTES = 16 * 2**20

#: What :meth:`Store.claim` returns, with ``unless_stored``, for a key already stored.
STORED = "already stored"

#: A lease held by a process on another host is considered stale after this long.
FOREIGN_LEASE_SECONDS = 24 * 3600.0


class StoreError(Exception):
    """The store cannot be opened, read or written; the message is one line."""


def default_path() -> Path:
    """``$NEURIPS26_STORE`` if set, else ``runs/neurips26.sqlite``."""
    env = os.environ.get("NEURIPS26_STORE")
    return Path(env) if env else DEFAULT_PATH


def _decode_text(raw: bytes) -> str:
    # A row with bytes that are not UTF-8 must not make a whole query fail.
    return raw.decode("utf-8", errors="replace")


class Store:
    """Runs stored in SQLite.

    Parameters
    ----------
    path : str or Path, optional
        The database file (default :func:`default_path`).
    create : bool
        Create the file and its folder if missing, and check that it can be written
        (what ``run`` and ``reproduce`` need before they start). With ``False`` a
        missing file reads as an empty store and nothing is created (``list``,
        ``report``).

    Raises
    ------
    StoreError
        When the path is a folder, its parent is a file, the file is not a
        neurips26 store or is damaged, was written by a newer package, or (with
        ``create``) cannot be written.
    """

    def __init__(self, path: str | os.PathLike | None = None, *, create: bool = True) -> None:
        self.path = Path(path) if path is not None else default_path()
        #: Rows skipped while reading because they did not decode, one line each.
        self.problems: list[str] = []
        self._absent = False
        if self.path.is_dir():
            raise StoreError(
                f"store {self.path} is a folder, not a file; give --store a file path such "
                f"as {self.path / 'neurips26.sqlite'}"
            )
        existed = self.path.exists()
        if not existed:
            if not create:
                self._absent = True
                return
            self._make_parent()
        try:
            self._open(create)
        except sqlite3.OperationalError as err:
            self._remove_if_new(existed)
            if _is_locked(err):
                raise StoreError(self._locked_message(err)) from err
            raise StoreError(
                f"store {self.path} cannot be opened ({err}); check the disk and the "
                "permissions, or give another --store"
            ) from err
        except sqlite3.DatabaseError as err:
            self._remove_if_new(existed)
            raise StoreError(
                f"store {self.path} is not a readable neurips26 store ({err}); move it aside "
                "(or restore a backup) and run again, or give another --store"
            ) from err
        except StoreError:
            self._remove_if_new(existed)
            raise

    def _locked_message(self, err: sqlite3.Error) -> str:
        return (f"store {self.path} is locked by another process ({err}); wait for it to "
                "finish, or give another --store")

    def _remove_if_new(self, existed: bool) -> None:
        """A store this call created and could not finish leaves no empty file behind."""
        if not existed:
            for suffix in ("", "-journal"):
                Path(str(self.path) + suffix).unlink(missing_ok=True)

    # ------------------------------------------------------------------ opening

    def _make_parent(self) -> None:
        for parent in [self.path.parent, *self.path.parent.parents]:
            if parent.exists():
                if not parent.is_dir():
                    raise StoreError(
                        f"cannot create store {self.path}: {parent} is a file, not a folder; "
                        "give another --store path"
                    )
                break
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as err:
            raise StoreError(
                f"cannot create the folder of store {self.path} ({err.strerror or err}); "
                "give another --store path"
            ) from err

    def _open(self, create: bool) -> None:
        with self._connect() as db:
            version = int(db.execute("PRAGMA user_version").fetchone()[0])
            tables = {
                r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
            }
            if version > SCHEMA_VERSION:
                raise StoreError(
                    f"store {self.path} was written by a newer neurips26 (store schema "
                    f"{version}; this package reads up to {SCHEMA_VERSION}); upgrade neurips26 "
                    "or give another --store"
                )
            if "runs" not in tables:
                user_tables = {t for t in tables if not t.startswith("sqlite_")}
                if user_tables - {"figures", "leases"}:
                    raise StoreError(
                        f"{self.path} is an SQLite database but not a neurips26 store (tables: "
                        f"{', '.join(sorted(user_tables))}); give another --store"
                    )
                if not create:
                    self._absent = True
                    return
                db.executescript(_SCHEMA + f"PRAGMA user_version = {SCHEMA_VERSION};")
            elif version < SCHEMA_VERSION:
                self._migrate(db, version)
            check = [str(r[0]) for r in db.execute("PRAGMA quick_check").fetchall()]
            if check != ["ok"]:
                raise StoreError(
                    f"store {self.path} is damaged ({_one_line(check)}); move it aside (or "
                    "restore a backup) and run again, or give another --store"
                )
            if create:
                self._check_writable(db)

    def _check_writable(self, db: sqlite3.Connection) -> None:
        """Write for real and roll back, and check room for a record, before any run.

        ``BEGIN IMMEDIATE`` alone passes on a read-only file or folder: only a write that
        reaches the file (here a lease row, rolled back) shows that it cannot be kept.
        """
        try:
            db.execute("BEGIN IMMEDIATE")
            db.execute(
                "INSERT INTO leases (slug, tier, seed, code_version, host, pid, since)"
                " VALUES ('', '', -1, '', '', -1, 0)"
            )
            db.execute("ROLLBACK")
        except sqlite3.Error as err:
            raise StoreError(
                f"store {self.path} cannot be written ({err}); check the permissions of the "
                "file and its folder, or give another --store"
            ) from err
        try:
            free = shutil.disk_usage(self.path.parent).free
        except OSError:  # pragma: no cover - the folder vanished meanwhile
            return
        if free < MIN_FREE_BYTES:
            raise StoreError(
                f"store {self.path}: its disk has {free // 2**20} MB free, less than the "
                f"{MIN_FREE_BYTES // 2**20} MB a run's record may need; free some space or "
                "give another --store"
            )

    def keep_unsaved(self, record: RunRecord) -> Path | None:
        """Write a record that could not be saved to a JSON file, so the run is not lost.

        The file goes beside the store (``<store>.unsaved-<slug>-<time>.json``), else into
        the temporary folder; figures are kept as base64. Returns its path, or ``None``
        when no file could be written anywhere.
        """
        import base64
        import tempfile

        data = record.to_dict()
        data["figures_base64"] = {
            k: base64.b64encode(v).decode("ascii") for k, v in record.figures.items()
        }
        text = json.dumps(data, default=str)
        stamp = time.strftime("%Y%m%d-%H%M%S")
        name = f"{self.path.name}.unsaved-{record.slug}-{record.tier}-{stamp}-{os.getpid()}.json"
        for folder in (self.path.parent, Path(tempfile.gettempdir())):
            target = folder / name
            try:
                target.write_text(text)
            except OSError:
                target.unlink(missing_ok=True)
                continue
            return target
        return None

    def _migrate(self, db: sqlite3.Connection, version: int) -> None:
        """Bring a store of an older schema to :data:`SCHEMA_VERSION`, in one transaction."""
        columns = [r[1] for r in db.execute("PRAGMA table_info(runs)")]
        if version != 0 or "metrics" not in columns:
            raise StoreError(
                f"store {self.path} has an unknown layout (schema {version}, columns "
                f"{', '.join(columns)}); this package cannot read it, give another --store"
            )
        if not os.access(self.path, os.W_OK):
            raise StoreError(
                f"store {self.path} was written by an older neurips26 (schema {version or 1}) and "
                "must be migrated, but it cannot be written; make it writable once, or give "
                "another --store"
            )
        db.isolation_level = None  # explicit transaction: DDL included
        db.execute("PRAGMA foreign_keys = OFF")  # keep the figures while runs is rebuilt
        try:
            db.execute("BEGIN IMMEDIATE")
            db.execute("PRAGMA legacy_alter_table = ON")  # renames leave `figures` alone
            db.execute("DROP INDEX IF EXISTS runs_key")
            db.execute(_RUNS_V2.replace("CREATE TABLE IF NOT EXISTS runs", "CREATE TABLE runs_v2"))
            for row in db.execute("SELECT * FROM runs ORDER BY id").fetchall():
                data: dict[str, Any] = {k: row[k] for k in row.keys() if k != "id"}
                for key in _V1_JSON:
                    try:
                        data[key] = json.loads(data[key])
                    except (TypeError, ValueError):
                        data.pop(key, None)  # read back as a damaged row, reported then
                db.execute(
                    "INSERT INTO runs_v2 (id, slug, tier, seed, status, code_version, created_at,"
                    " record) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                    (row["id"], row["slug"], row["tier"], row["seed"], row["status"],
                     row["code_version"], row["created_at"], json.dumps(data, default=str)),
                )
            db.execute("DROP TABLE runs")
            db.execute("ALTER TABLE runs_v2 RENAME TO runs")
            for statement in _SCHEMA.split(";"):
                if statement.strip():
                    db.execute(statement)
            db.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
            db.execute("COMMIT")
        except BaseException:
            if db.in_transaction:
                db.execute("ROLLBACK")
            raise
        finally:
            db.execute("PRAGMA legacy_alter_table = OFF")
            db.execute("PRAGMA foreign_keys = ON")
            db.isolation_level = ""

    @contextmanager
    def _connect(self) -> Iterator[sqlite3.Connection]:
        db = sqlite3.connect(self.path, timeout=30)
        db.row_factory = sqlite3.Row
        db.text_factory = _decode_text
        db.execute("PRAGMA foreign_keys = ON")
        try:
            yield db
        finally:
            db.close()

    # ------------------------------------------------------------------ writing

    def save(self, record: RunRecord) -> int:
        """Store a run and its figures in one transaction; returns its id.

        Raises
        ------
        StoreError
            If the write fails (disk full, file removed, read-only); nothing of the
            run is stored then.
        """
        if self._absent:
            raise StoreError(f"store {self.path} was opened read-only and does not exist")
        text = record.dumps()
        try:
            with self._connect() as db, db:  # the inner `db` commits or rolls back
                cur = db.execute(
                    "INSERT INTO runs (slug, tier, seed, status, code_version, created_at, record)"
                    " VALUES (?, ?, ?, ?, ?, ?, ?)",
                    (record.slug, record.tier, record.seed, record.status, record.code_version,
                     record.created_at, text),
                )
                run_id = int(cur.lastrowid)
                db.executemany(
                    "INSERT INTO figures (run_id, name, png) VALUES (?, ?, ?)",
                    [(run_id, name, png) for name, png in record.figures.items()],
                )
        except (sqlite3.Error, OSError, OverflowError) as err:
            raise StoreError(
                f"could not save the {record.slug} run to store {self.path} ({err})"
            ) from err
        return run_id

    def claim(self, slug: str, tier: str, seed: int, code_version: str, *,
              unless_stored: bool = False) -> str | None:
        """Take the lease on one run key for this process.

        Returns ``None`` when this process now holds it, or a description of the
        live process that holds it (``"pid 123 on host"``). A lease whose process
        has died (or, on another host, is older than a day) is taken over. With
        ``unless_stored``, a successful run of this key already in the store is checked
        in the same transaction (one ``BEGIN IMMEDIATE``: no other process can save or
        lease in between) and :data:`STORED` is returned instead of a lease: a run saves
        before it releases, so a key is always either stored or leased while it runs.
        """
        host, pid, now = socket.gethostname(), os.getpid(), time.time()
        key = (slug, tier, seed, code_version)
        try:
            with self._connect() as db, db:
                db.execute("BEGIN IMMEDIATE")
                if unless_stored and db.execute(
                    "SELECT 1 FROM runs WHERE slug = ? AND tier = ? AND seed = ? AND "
                    "code_version = ? AND status = ? LIMIT 1",
                    (*key, OK),
                ).fetchone() is not None:
                    return STORED
                row = db.execute(
                    "SELECT host, pid, since FROM leases WHERE slug = ? AND tier = ? AND "
                    "seed = ? AND code_version = ?",
                    key,
                ).fetchone()
                if row is not None and (row["host"], row["pid"]) != (host, pid):
                    if _alive(row["host"], row["pid"], row["since"], host, now):
                        return f"pid {row['pid']} on {row['host']}"
                db.execute(
                    "INSERT OR REPLACE INTO leases (slug, tier, seed, code_version, host, pid,"
                    " since) VALUES (?, ?, ?, ?, ?, ?, ?)",
                    (*key, host, pid, now),
                )
        except (sqlite3.Error, OSError) as err:
            raise StoreError(
                f"could not take the lease on {slug} in store {self.path} ({err})"
            ) from err
        return None

    def release(self, slug: str, tier: str, seed: int, code_version: str) -> None:
        """Drop this process's lease on one run key (no error if it holds none, or if
        the store can no longer be written: a lease of a dead process is taken over)."""
        try:
            with self._connect() as db, db:
                db.execute(
                    "DELETE FROM leases WHERE slug = ? AND tier = ? AND seed = ? AND "
                    "code_version = ? AND host = ? AND pid = ?",
                    (slug, tier, seed, code_version, socket.gethostname(), os.getpid()),
                )
        except (sqlite3.Error, OSError):
            pass

    # ------------------------------------------------------------------ reading

    def _rows(self, query: str, args: list[Any] | tuple[Any, ...] = ()) -> Iterator[sqlite3.Row]:
        if self._absent:
            return
        try:
            with self._connect() as db:
                yield from db.execute(query, args).fetchall()
        except sqlite3.DatabaseError as err:
            if isinstance(err, sqlite3.OperationalError) and _is_locked(err):
                raise StoreError(self._locked_message(err)) from err
            raise StoreError(
                f"store {self.path} cannot be read ({err}); move it aside (or restore a backup) "
                "and run again, or give another --store"
            ) from err

    def _record(self, row: sqlite3.Row, *, with_figures: bool) -> StoredRun | None:
        keys = row.keys()
        label = f"run {row['id'] if 'id' in keys else '?'}"
        if "slug" in keys and "tier" in keys:
            label += f" ({row['slug']}, {row['tier']})"
        try:
            if "record" not in keys:
                raise RecordError("the row has no 'record' column (a table of another layout)")
            figures: dict[str, bytes] = {}
            if with_figures:
                for r in self._rows(
                    "SELECT name, png FROM figures WHERE run_id = ? ORDER BY name", (row["id"],)
                ):
                    if not isinstance(r["png"], bytes):
                        raise RecordError(f"figure {r['name']!r} is stored as "
                                          f"{type(r['png']).__name__}, not PNG bytes")
                    figures[str(r["name"])] = r["png"]
            record = RunRecord.loads(row["record"], figures)
        except (RecordError, TypeError, ValueError) as err:
            problem = f"{label} does not decode: {err}"
            if problem not in self.problems:
                self.problems.append(problem)
            return None
        return StoredRun(run_id=row["id"], record=record)

    def _first(self, query: str, args: list[Any], *, with_figures: bool) -> StoredRun | None:
        for row in self._rows(query, args):
            stored = self._record(row, with_figures=with_figures)
            if stored is not None:
                return stored
        return None

    def find(self, slug: str, tier: str, seed: int, code_version: str) -> StoredRun | None:
        """The latest successful run with this key, if any (what ``reproduce`` skips)."""
        return self._first(
            "SELECT * FROM runs WHERE slug = ? AND tier = ? AND seed = ? AND code_version = ?"
            " AND status = ? ORDER BY id DESC",
            [slug, tier, seed, code_version, OK],
            with_figures=False,
        )

    def latest(
        self,
        slug: str,
        tier: str | None = None,
        *,
        with_figures: bool = False,
        status: str | None = None,
    ) -> StoredRun | None:
        """The most recent readable run of ``slug`` (at ``tier``, with ``status``, if given)."""
        query = "SELECT * FROM runs WHERE slug = ?"
        args: list[Any] = [slug]
        if tier is not None:
            query += " AND tier = ?"
            args.append(tier)
        if status is not None:
            query += " AND status = ?"
            args.append(status)
        return self._first(query + " ORDER BY id DESC", args, with_figures=with_figures)

    def runs(self, slug: str | None = None) -> list[StoredRun]:
        """Every readable stored run (of ``slug`` if given), oldest first, without figures."""
        query, args = "SELECT * FROM runs", []
        if slug is not None:
            query, args = query + " WHERE slug = ?", [slug]
        rows = self._rows(query + " ORDER BY id", args)
        out = (self._record(r, with_figures=False) for r in rows)
        return [s for s in out if s is not None]

    def count(self) -> int:
        """Number of stored rows (readable or not)."""
        for row in self._rows("SELECT COUNT(*) FROM runs"):
            return int(row[0])
        return 0


def _one_line(check: list[str]) -> str:
    """SQLite's integrity-check report (rows of lines under a ``*** in database`` header)
    as one line: its first problem and how many more there are."""
    problems = [
        line.strip() for row in check for line in row.splitlines()
        if line.strip() and not line.startswith("*** in database")
    ] or ["integrity check failed"]
    more = len(problems) - 1
    return problems[0] + (f"; and {more} more problem{'s' * (more > 1)}" if more else "")


def _is_locked(err: sqlite3.Error) -> bool:
    """Whether SQLite refused for a lock another connection holds (not for damage)."""
    text = str(err).lower()
    return "locked" in text or "busy" in text


def _alive(holder_host: str, pid: int, since: float, host: str, now: float) -> bool:
    if holder_host != host:
        return now - since < FOREIGN_LEASE_SECONDS
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


class StoredRun:
    """A run read back from the store: its id and its :class:`RunRecord`."""

    __slots__ = ("record", "run_id")

    def __init__(self, run_id: int, record: RunRecord) -> None:
        self.run_id = run_id
        self.record = record

    def __repr__(self) -> str:
        r = self.record
        return f"StoredRun(id={self.run_id}, slug={r.slug!r}, tier={r.tier!r}, status={r.status!r})"
