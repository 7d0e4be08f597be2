import sqlite3

from conftest import make_record
from neurips26.store import Store


def test_save_and_read_back(store):
    rec = make_record(
        {"mean": 0.1, "n": 12, "n_ci": 1.0},
        figures={"f": b"\x89PNG"},
        tables={"t": [{"a": 1}]},
        notes=("converged",),
    )
    run_id = store.save(rec)
    got = store.latest("toy", "small", with_figures=True)
    assert got.run_id == run_id
    assert got.record.metrics == rec.metrics
    assert got.record.claims == rec.claims
    assert got.record.figures == {"f": b"\x89PNG"}
    assert got.record.tables == {"t": [{"a": 1}]}
    assert got.record.notes == ("converged",)


def test_find_matches_key_and_ignores_failures(store):
    store.save(make_record({"mean": 0.1}, code_version="v1"))
    store.save(make_record({}, status="failed", code_version="v2"))
    assert store.find("toy", "small", 0, "v1") is not None
    assert store.find("toy", "small", 0, "v2") is None
    assert store.find("toy", "small", 1, "v1") is None
    assert store.find("toy", "smoke", 0, "v1") is None
    assert store.latest("toy").record.status == "failed"
    assert len(store.runs("toy")) == 2


def test_store_path_from_environment(tmp_path, monkeypatch):
    path = tmp_path / "elsewhere" / "x.sqlite"
    monkeypatch.setenv("NEURIPS26_STORE", str(path))
    Store().save(make_record({"mean": 0.0}))
    assert sqlite3.connect(path).execute("SELECT COUNT(*) FROM runs").fetchone()[0] == 1


def test_a_store_written_before_captions_and_claim_kinds_reads_back(tmp_path):
    import json

    from test_store_damage import V1_SCHEMA

    path = tmp_path / "old.sqlite"
    db = sqlite3.connect(path)
    db.executescript(V1_SCHEMA)  # schema 1: no captions column, claims without kinds
    assert "captions" not in {r[1] for r in db.execute("PRAGMA table_info(runs)")}
    old_claim = {
        "id": "small_mean", "statement": "s", "paper_value": "0", "metric": "mean",
        "comparison": "<=", "target": 0.5, "tolerance": 0.0, "measured": 0.1,
        "uncertainty": None, "verdict": "reproduced",
    }  # fmt: skip
    db.execute(
        "INSERT INTO runs (slug, tier, seed, status, config, metrics, volatile, claims, tables,"
        " notes, error, wall_seconds, cpu_seconds, peak_memory_mb, package_version, git_commit,"
        " code_version, environment, created_at) VALUES"
        " ('toy', 'small', 0, 'ok', '{}', '{\"mean\": 0.1}', '[]', ?, '{}', '[]', NULL, 1, 1, 1,"
        " '0.1', 'x', 'v', '{}', 'then')",
        (json.dumps([old_claim]),),
    )
    db.commit()
    db.close()
    got = Store(path).latest("toy")
    assert got.record.captions == {}
    claim = got.record.claims[0]
    assert (claim.kind, claim.reason, claim.tiers) == ("paper", "", ("smoke", "small", "paper"))
