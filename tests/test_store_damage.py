"""A damaged, old, foreign or unwritable store gives one line, never a traceback."""

import json
import os
import sqlite3
import subprocess
import sys
from contextlib import contextmanager

import pytest

from conftest import make_record
from neurips26.records import RunRecord
from neurips26.registry import SLUGS
from neurips26.store import SCHEMA_VERSION, Store, StoreError

SLUG = SLUGS[0]


def cli(*args):
    return subprocess.run(
        [sys.executable, "-m", "neurips26", *args], capture_output=True, text=True, timeout=300
    )


def good_store(path, n=3):
    store = Store(path)
    for i in range(n):
        store.save(make_record({"mean": 0.1 * i}, slug=SLUG, figures={"f": b"x" * 40000}))
    return store


def damage(kind, tmp_path):
    path = tmp_path / f"{kind}.sqlite"
    if kind == "truncated":
        good_store(tmp_path / "good.sqlite")
        path.write_bytes((tmp_path / "good.sqlite").read_bytes()[:3000])
    elif kind == "garbage":
        path.write_bytes(bytes(range(256)) * 20)
    elif kind == "directory":
        path.mkdir()
    elif kind == "newer":
        good_store(path)
        with sqlite3.connect(path) as db:
            db.execute("PRAGMA user_version = 99")
    elif kind == "foreign":
        with sqlite3.connect(path) as db:
            db.execute("CREATE TABLE accounts (x)")
    elif kind == "malformed":  # opens, but SQLite's check lists several problems, a line each
        good_store(path)
        data = bytearray(path.read_bytes())
        data[4096] = 0x0D  # the runs table's root page now claims to be a leaf page
        path.write_bytes(bytes(data))
    return path


MESSAGES = {
    "truncated": "not a readable neurips26 store",
    "garbage": "not a readable neurips26 store",
    "directory": "is a folder, not a file",
    "newer": "written by a newer neurips26 (store schema 99",
    "foreign": "not a neurips26 store",
    "malformed": "is damaged (On tree page",
}


@pytest.mark.parametrize("kind", list(MESSAGES))
@pytest.mark.parametrize("command", ["list", "report", "run", "reproduce"])
def test_damaged_store_gives_one_line(kind, command, tmp_path):
    path = damage(kind, tmp_path)
    args = {
        "list": ["list"],
        "report": ["report", "--out", str(tmp_path / "rep")],
        "run": ["run", SLUG, "--tier", "smoke"],
        "reproduce": ["reproduce", "--tier", "smoke", "--only", SLUG],
    }[command]
    out = cli("--store", str(path), *args)
    assert out.returncode == 1, out.stderr
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1, out.stderr
    assert MESSAGES[kind] in lines[0]
    assert "Traceback" not in out.stderr
    assert "give another --store" in lines[0] or "--store a file path" in lines[0]


def test_empty_file_is_an_empty_store(tmp_path):
    path = tmp_path / "empty.sqlite"
    path.touch()
    out = cli("--store", str(path), "list", "--json")
    assert out.returncode == 0, out.stderr
    assert all(p["shown"] is None for p in json.loads(out.stdout))
    Store(path).save(make_record({"mean": 0.0}))
    assert Store(path).count() == 1


def test_undecodable_row_is_skipped_and_reported(tmp_path):
    path = tmp_path / "s.sqlite"
    good_store(path)
    with sqlite3.connect(path) as db:
        db.execute("UPDATE runs SET record = '{not json' WHERE id = 3")
        db.execute("UPDATE runs SET record = CAST(x'80ff' AS TEXT) WHERE id = 2")
    store = Store(path, create=False)
    assert [r.run_id for r in store.runs()] == [1]
    assert store.latest(SLUG).run_id == 1  # falls back past the damaged rows
    assert len(store.problems) == 2
    assert {p.split(" ")[1] for p in store.problems} == {"2", "3"}
    for args in (["list"], ["report", "--out", str(tmp_path / "rep")]):
        out = cli("--store", str(path), *args)
        assert out.returncode == 0, out.stderr
        assert "skipped a damaged row of the store: run 3" in out.stderr
        assert "Traceback" not in out.stderr


def test_list_and_report_create_nothing(tmp_path):
    path = tmp_path / "nowhere" / "s.sqlite"
    assert cli("--store", str(path), "list").returncode == 0
    assert cli("--store", str(path), "report", "--out", str(tmp_path / "rep")).returncode == 0
    assert not (tmp_path / "nowhere").exists()


def test_store_whose_parent_is_a_file_fails_before_the_run(tmp_path):
    (tmp_path / "afile").write_text("x")
    out = cli("--store", str(tmp_path / "afile" / "s.sqlite"), "run", SLUG, "--tier", "smoke")
    assert out.returncode == 1
    assert out.stderr.strip().splitlines() == [
        f"neurips26: error: cannot create store {tmp_path / 'afile' / 's.sqlite'}: "
        f"{tmp_path / 'afile'} is a file, not a folder; give another --store path"
    ]
    assert "tier smoke" not in out.stdout  # nothing ran


def test_read_only_store_fails_before_the_run(tmp_path):
    path = tmp_path / "s.sqlite"
    Store(path)
    path.chmod(0o444)
    try:
        if os.access(path, os.W_OK):  # root ignores file modes
            pytest.skip("running as root: the file stays writable")
        with pytest.raises(StoreError, match="cannot be written"):
            Store(path)
        assert Store(path, create=False).count() == 0  # reading still works
    finally:
        path.chmod(0o644)


V1_SCHEMA = """
CREATE TABLE runs (
    id INTEGER PRIMARY KEY AUTOINCREMENT, slug TEXT NOT NULL, tier TEXT NOT NULL,
    seed INTEGER NOT NULL, status TEXT NOT NULL, config TEXT NOT NULL, metrics TEXT NOT NULL,
    volatile TEXT NOT NULL, claims TEXT NOT NULL, tables TEXT NOT NULL, notes TEXT NOT NULL,
    error TEXT, wall_seconds REAL NOT NULL, cpu_seconds REAL NOT NULL,
    peak_memory_mb REAL NOT NULL, package_version TEXT NOT NULL, git_commit TEXT NOT NULL,
    code_version TEXT NOT NULL, environment TEXT NOT NULL, created_at TEXT NOT NULL
);
CREATE INDEX runs_key ON runs (slug, tier, seed, code_version);
CREATE TABLE figures (
    run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    name TEXT NOT NULL, png BLOB NOT NULL, PRIMARY KEY (run_id, name)
);
"""


def write_v1(path, record: RunRecord) -> None:
    """A store as neurips26 0.1.0 wrote it (schema 1: a column per field)."""
    with sqlite3.connect(path) as db:
        db.executescript(V1_SCHEMA)
        d = record.to_dict()
        db.execute(
            "INSERT INTO runs (slug, tier, seed, status, config, metrics, volatile, claims,"
            " tables, notes, error, wall_seconds, cpu_seconds, peak_memory_mb, package_version,"
            " git_commit, code_version, environment, created_at)"
            " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                d["slug"], d["tier"], d["seed"], d["status"], json.dumps(d["config"]),
                json.dumps(d["metrics"]), json.dumps(d["volatile"]), json.dumps(d["claims"]),
                json.dumps(d["tables"]), json.dumps(d["notes"]), d["error"], d["wall_seconds"],
                d["cpu_seconds"], d["peak_memory_mb"], d["package_version"], d["git_commit"],
                d["code_version"], json.dumps(d["environment"]), d["created_at"],
            ),
        )
        db.execute("INSERT INTO figures VALUES (1, 'f', ?)", (b"\x89PNG",))
        db.execute(
            "INSERT INTO runs (slug, tier, seed, status, config, metrics, volatile, claims,"
            " tables, notes, wall_seconds, cpu_seconds, peak_memory_mb, package_version,"
            " git_commit, code_version, environment, created_at)"
            " VALUES ('toy', 'small', 0, 'ok', '{', '{}', '[]', '[]', '{}', '[]', 0, 0, 0,"
            " '0.1.0', 'x', 'abc', '{}', 'now')"
        )


def test_older_store_is_migrated_in_place(tmp_path):
    path = tmp_path / "v1.sqlite"
    rec = make_record({"mean": 0.2, "n": 12, "n_ci": 1.0}, tables={"t": [{"a": 1}]}, notes=("x",))
    write_v1(path, rec)
    store = Store(path, create=False)
    got = store.latest("toy", "small", with_figures=True)
    assert got is not None and got.run_id == 1
    assert got.record == RunRecord.from_dict(rec.to_dict(), {"f": b"\x89PNG"})
    assert [r.run_id for r in store.runs()] == [1]  # the v1 row with bad JSON is reported
    assert "run 2" in store.problems[0]
    with sqlite3.connect(path) as db:
        assert db.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
        assert db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        assert db.execute("PRAGMA foreign_key_check").fetchall() == []
    run_id = Store(path).save(rec)  # and it goes on as a current store
    assert run_id == 3
    assert Store(path).latest("toy", with_figures=True).record.metrics == rec.metrics


def test_disk_full_save_raises_store_error(tmp_path):
    path = tmp_path / "s.sqlite"
    store = Store(path)
    store.save(make_record({"mean": 0.1}))
    with sqlite3.connect(path) as db:
        pages = db.execute("PRAGMA page_count").fetchone()[0]
    real = store._connect

    @contextmanager  # max_page_count holds per connection: a disk that is full now
    def full():
        with real() as db:
            db.execute(f"PRAGMA max_page_count = {pages}")
            yield db

    store._connect = full
    with pytest.raises(StoreError, match=r"could not save the toy run.*full"):
        store.save(make_record({"mean": 0.1}, figures={"big": b"x" * 200000}))
    store._connect = real
    assert store.count() == 1  # nothing half-written


def test_leases_share_work_and_expire_with_their_process(tmp_path):
    store = Store(tmp_path / "s.sqlite")
    key = ("toy", "small", 0, "abc")
    assert store.claim(*key) is None
    assert store.claim(*key) is None  # the holder may claim again
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True).stdout.strip()
    with sqlite3.connect(store.path) as db:
        db.execute("UPDATE leases SET pid = ?", (int(dead),))
    assert store.claim(*key) is None  # a dead holder's lease is taken over
    with sqlite3.connect(store.path) as db:
        db.execute("UPDATE leases SET pid = 1")  # a live process (init) holds it
    assert store.claim(*key) == f"pid 1 on {__import__('socket').gethostname()}"
    store.release(*key)  # not ours: stays
    assert store.claim(*key) is not None


def _read_only_connections(monkeypatch):
    """Every connection of the store opens the file read-only (as a read-only file or
    folder does for a user who is not root; the tests run as root, which ignores modes)."""

    @contextmanager
    def connect(self):
        db = sqlite3.connect(f"file:{self.path}?mode=ro", uri=True, timeout=30)
        db.row_factory = sqlite3.Row
        try:
            yield db
        finally:
            db.close()

    monkeypatch.setattr(Store, "_connect", connect)


def test_a_store_that_cannot_be_written_is_found_by_a_real_write(tmp_path, monkeypatch):
    path = tmp_path / "s.sqlite"
    Store(path)
    _read_only_connections(monkeypatch)
    with pytest.raises(StoreError, match="cannot be written"):
        Store(path)
    assert Store(path, create=False).count() == 0  # reading still works


def test_a_disk_without_room_for_a_record_is_refused_before_the_run(tmp_path, monkeypatch):
    import shutil

    import neurips26.store as store_module

    usage = shutil.disk_usage(tmp_path)
    monkeypatch.setattr(store_module.shutil, "disk_usage",
                        lambda p: usage._replace(free=2**20))
    with pytest.raises(StoreError, match="1 MB free"):
        Store(tmp_path / "s.sqlite")


def test_a_run_whose_save_fails_is_kept_beside_the_store(tmp_path, monkeypatch, capsys):
    from neurips26.cli import main

    path = tmp_path / "s.sqlite"

    def fail(self, record):
        raise StoreError("disk I/O error (simulated)")

    monkeypatch.setattr(Store, "save", fail)
    code = main(["--store", str(path), "run", "geto_lp", "--tier", "smoke", "--quiet"])
    err = capsys.readouterr().err
    assert code == 1 and "disk I/O error" in err and "kept in" in err
    kept = list(tmp_path.glob("s.sqlite.unsaved-geto_lp-smoke-*.json"))
    assert len(kept) == 1
    record = RunRecord.from_dict(json.loads(kept[0].read_text()))
    assert record.slug == "geto_lp" and record.status == "ok" and record.claims


def test_reproduce_goes_on_when_a_lease_cannot_be_written(tmp_path, monkeypatch, capsys):
    from neurips26.cli import main

    calls = []

    def fail(self, slug, *args, **kwargs):
        calls.append(slug)
        raise StoreError("attempt to write a readonly database (simulated)")

    monkeypatch.setattr(Store, "claim", fail)
    code = main(["--store", str(tmp_path / "s.sqlite"), "reproduce", "--tier", "smoke",
                 "--only", "geto_lp", "sparse_scaling"])
    err = capsys.readouterr().err
    assert code == 1 and calls == ["geto_lp", "sparse_scaling"]  # both tried, no traceback
    assert "Traceback" not in err and err.count("not run: attempt to write") == 2


@pytest.mark.parametrize("damage", (
    {"metrics": [1, 2]},
    {"claims": [{"id": "x", "verdict": None}]},
    {"claims": [{"id": "x", "verdict": "reproduced", "kind": "rumour"}]},
    {"config": "seed=0"},
    {"seed": "zero"},
))
def test_a_crafted_row_is_skipped_with_a_warning(tmp_path, damage):
    path = tmp_path / "s.sqlite"
    store = Store(path)
    good = make_record({"m": 1.0})
    store.save(good)
    data = good.to_dict() | damage
    with sqlite3.connect(path) as db:
        db.execute("INSERT INTO runs (slug, tier, seed, status, code_version, created_at, record)"
                   " VALUES ('toy', 'small', 0, 'ok', 'abc', 'now', ?)", (json.dumps(data),))
    again = Store(path, create=False)
    runs = again.runs()
    assert len(runs) == 1 and runs[0].record == good
    assert len(again.problems) == 1 and "does not decode" in again.problems[0]


def test_a_figure_stored_as_text_and_a_table_without_records_are_skipped(tmp_path):
    path = tmp_path / "s.sqlite"
    store = Store(path)
    run_id = store.save(make_record({"m": 1.0}))
    with sqlite3.connect(path) as db:
        db.execute("INSERT INTO figures (run_id, name, png) VALUES (?, 'f', 'not bytes')",
                   (run_id,))
    again = Store(path, create=False)
    assert again.latest("toy", with_figures=True) is None
    assert "stored as str" in again.problems[0]
    other = tmp_path / "other.sqlite"
    with sqlite3.connect(other) as db:
        db.executescript("CREATE TABLE runs (id INTEGER PRIMARY KEY, slug TEXT, tier TEXT, "
                         "seed INTEGER, status TEXT, code_version TEXT, created_at TEXT);"
                         f"PRAGMA user_version = {SCHEMA_VERSION};"
                         "INSERT INTO runs VALUES (1, 'toy', 'small', 0, 'ok', 'abc', 'now');")
    foreign = Store(other, create=False)
    assert foreign.runs() == [] and "no 'record' column" in foreign.problems[0]


def test_a_locked_store_is_reported_as_locked(tmp_path):
    path = tmp_path / "s.sqlite"
    Store(path)
    holder = sqlite3.connect(path)
    holder.execute("BEGIN EXCLUSIVE")
    try:
        import neurips26.store as store_module

        real = sqlite3.connect
        store_module.sqlite3.connect = lambda p, timeout=30: real(p, timeout=0.1)
        try:
            with pytest.raises(StoreError, match="is locked by another process"):
                Store(path)
        finally:
            store_module.sqlite3.connect = real
    finally:
        holder.rollback()
        holder.close()


def test_a_store_locked_while_it_is_read_is_reported_as_locked(tmp_path, monkeypatch):
    import neurips26.store as store_module

    path = tmp_path / "s.sqlite"
    Store(path).save(make_record({"m": 1.0}))
    reader = Store(path, create=False)
    real = sqlite3.connect
    monkeypatch.setattr(store_module.sqlite3, "connect",
                        lambda p, timeout=30: real(p, timeout=0.1))
    holder = real(path)
    holder.execute("BEGIN EXCLUSIVE")  # another process writing: readers must wait
    try:
        with pytest.raises(StoreError) as err:
            reader.runs()
    finally:
        holder.rollback()
        holder.close()
    assert "is locked by another process" in str(err.value)
    assert "move it aside" not in str(err.value)  # nothing is wrong with the file
    assert reader.runs()[0].record.metrics == {"m": 1.0}  # readable once the lock is gone


def test_a_malformed_store_is_one_line_with_the_first_problem(tmp_path):
    path = damage("malformed", tmp_path)
    with pytest.raises(StoreError) as err:
        Store(path, create=False)
    text = str(err.value)
    assert "\n" not in text and "*** in database" not in text
    assert text.startswith(f"store {path} is damaged (On tree page ") and "more problem" in text
    assert text.endswith("move it aside (or restore a backup) and run again, or give "
                         "another --store")


def test_claim_unless_stored_checks_the_store_in_the_lease_transaction(tmp_path):
    store = Store(tmp_path / "s.sqlite")
    key = ("toy", "small", 0, "abc")
    assert store.claim(*key, unless_stored=True) is None  # nothing stored: leased
    store.save(make_record({"m": 1.0}))  # the run finishes and saves ...
    store.release(*key)  # ... then releases
    from neurips26.store import STORED

    assert store.claim(*key, unless_stored=True) == STORED  # no lease on a stored key
    with sqlite3.connect(store.path) as db:
        assert db.execute("SELECT COUNT(*) FROM leases").fetchone()[0] == 0
    assert store.claim(*key) is None  # without unless_stored (--force) it is leased
    store.save(make_record({"m": 1.0}, status="failed"))
    assert store.claim("toy", "small", 1, "abc", unless_stored=True) is None  # other seed


_WORKER = """
import sys
from neurips26.store import Store
sys.path.insert(0, {tests!r})
from conftest import make_record

store = Store({path!r})
ran = []
for i in range({n}):
    key = ("toy", "small", i, "abc")
    if store.claim(*key, unless_stored=True) is None:
        store.save(make_record({{"m": 1.0}}, seed=i))
        store.release(*key)
        ran.append(i)
print(len(ran))
"""


def test_two_reproduce_processes_never_run_one_key_twice(tmp_path):
    """Two processes race over the same keys, each a lease-run-save-release loop: every
    key is run by exactly one of them (the check and the lease are one transaction)."""
    from pathlib import Path

    path = tmp_path / "s.sqlite"
    Store(path)
    n = 40
    script = _WORKER.format(tests=str(Path(__file__).parent), path=str(path), n=n)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    procs = [subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True, env=env) for _ in range(2)]
    outs = [p.communicate(timeout=120) for p in procs]
    assert all(p.returncode == 0 for p in procs), [o[1] for o in outs]
    with sqlite3.connect(path) as db:
        per_key = dict(db.execute("SELECT seed, COUNT(*) FROM runs GROUP BY seed").fetchall())
    assert per_key == dict.fromkeys(range(n), 1)
    assert sum(int(o[0]) for o in outs) == n


def test_reproduce_skips_a_paper_stored_between_its_check_and_its_lease(tmp_path, monkeypatch,
                                                                         capsys):
    """The race: reproduce found no stored run, then another process saved one and released
    its lease before this one took the lease. The paper must not run a second time."""
    from neurips26.cli import main
    from neurips26.runner import code_version

    path = tmp_path / "s.sqlite"
    real_claim = Store.claim
    other = []

    def claim_after_another_process_finished(self, slug, tier, seed, version, **kwargs):
        if not other:  # the other process: lease, run, save, release (a second connection)
            rival = Store(path)
            other.append(rival.save(make_record({"m": 1.0}, slug=slug, tier=tier, seed=seed,
                                                code_version=version)))
        return real_claim(self, slug, tier, seed, version, **kwargs)

    monkeypatch.setattr(Store, "claim", claim_after_another_process_finished)
    code = main(["--store", str(path), "reproduce", "--tier", "smoke", "--only", "geto_lp"])
    err = capsys.readouterr().err
    assert code == 0, err
    assert "skip geto_lp: stored by another process meanwhile" in err
    runs = Store(path, create=False).runs("geto_lp")
    assert [r.run_id for r in runs] == other  # the rival's run only
    assert runs[0].record.code_version == code_version("geto_lp")


def test_a_new_store_that_cannot_be_finished_leaves_no_file(tmp_path, monkeypatch):
    import shutil

    import neurips26.store as store_module

    usage = shutil.disk_usage(tmp_path)
    monkeypatch.setattr(store_module.shutil, "disk_usage", lambda p: usage._replace(free=0))
    with pytest.raises(StoreError, match="MB free"):
        Store(tmp_path / "new.sqlite")
    assert not (tmp_path / "new.sqlite").exists()
