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
