"""No finished run lost: save before join, quiet signals, no orphans, failed saves go on."""

import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from neurips26 import cli, runner
from neurips26.store import Store, StoreError

# Three papers whose smoke tier takes a second or two.
CHEAP = ["agentweave", "skill_laws", "monoculture"]


def reproduce_cmd(store, *only, extra=()):
    return [
        sys.executable, "-m", "neurips26", "--store", str(store), "reproduce", "--tier", "smoke",
        "--only", *only, *extra,
    ]


def children_of(pid):
    """Pids whose parent is ``pid`` (Linux /proc)."""
    out = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
                out.append(int(entry.name))
    return out


def alive(pid):
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def wait_for(predicate, timeout=120.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.05)
    return False


def stored_count(path):
    try:
        with sqlite3.connect(path, timeout=5) as db:
            return db.execute("SELECT COUNT(*) FROM runs").fetchone()[0]
    except sqlite3.OperationalError:
        return 0


def test_record_is_saved_before_the_child_is_joined(monkeypatch):
    events = []
    real_join = runner.multiprocessing.get_context("spawn").Process.join

    def join(self, *a, **k):
        events.append("join")
        return real_join(self, *a, **k)

    monkeypatch.setattr(runner.multiprocessing.get_context("spawn").Process, "join", join)
    runner.run_many(
        CHEAP[:1], tier="smoke", seed=0, on_done=lambda r: events.append(("done", r.status))
    )
    assert events[0] == ("done", "ok"), events
    assert "join" in events[1:]


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_signal_stops_children_quietly_and_keeps_finished_runs(sig, tmp_path):
    path = tmp_path / "s.sqlite"
    proc = subprocess.Popen(
        reproduce_cmd(path, *CHEAP), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        start_new_session=True,
    )
    assert wait_for(lambda: stored_count(path) >= 1 or proc.poll() is not None)
    kids = children_of(proc.pid)
    if sig == signal.SIGINT:
        os.killpg(proc.pid, sig)  # Ctrl-C reaches the whole process group
    else:
        os.kill(proc.pid, sig)  # `kill PID` reaches the parent only
    _, err = proc.communicate(timeout=60)
    if stored_count(path) == len(CHEAP):
        pytest.skip("every paper finished before the signal")
    assert proc.returncode == 128 + sig, err
    assert "Traceback" not in err, err
    assert "interrupted; every run that had finished is in the store" in err
    assert wait_for(lambda: not any(alive(k) for k in kids), 10), "a child outlived its parent"
    runs = Store(path).runs()
    assert runs and all(r.record.status == "ok" for r in runs)
    with sqlite3.connect(path) as db:
        assert db.execute("SELECT COUNT(*) FROM leases").fetchone()[0] == 0


def test_child_stops_itself_when_its_parent_dies(tmp_path):
    path = tmp_path / "s.sqlite"
    proc = subprocess.Popen(
        reproduce_cmd(path, "multiagent_neff"), stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL, start_new_session=True,
    )
    assert wait_for(lambda: children_of(proc.pid), 60)
    kids = children_of(proc.pid)
    time.sleep(0.5)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    assert wait_for(lambda: not any(alive(k) for k in kids), 15), "an orphan ran on"


def test_failed_save_is_reported_and_reproduce_goes_on(tmp_path, monkeypatch, capsys):
    path = tmp_path / "s.sqlite"
    real_save = Store.save
    calls = []

    def save(self, record):
        calls.append(record.slug)
        if len(calls) == 1:
            raise StoreError(f"could not save the {record.slug} run to store {self.path} "
                             "(database or disk is full)")
        return real_save(self, record)

    monkeypatch.setattr(Store, "save", save)
    code = cli.main(["--store", str(path), "reproduce", "--tier", "smoke", "--only", *CHEAP[:2]])
    err = capsys.readouterr().err
    assert code == 1
    assert f"{CHEAP[0]}: not saved: could not save" in err and "disk is full" in err
    assert f"1 paper(s) failed: {CHEAP[0]}" in err
    assert [r.record.slug for r in Store(path).runs()] == [CHEAP[1]]


def test_two_reproduce_on_one_store_share_the_work(tmp_path):
    path = tmp_path / "s.sqlite"
    Store(path)
    procs = [
        subprocess.Popen(reproduce_cmd(path, *CHEAP[:2]), stderr=subprocess.PIPE,
                         stdout=subprocess.DEVNULL, text=True)
        for _ in range(2)
    ]
    errs = [p.communicate(timeout=300)[1] for p in procs]
    assert all(p.returncode == 0 for p in procs), errs
    slugs = sorted(r.record.slug for r in Store(path).runs())
    assert slugs == sorted(CHEAP[:2]), errs  # each paper ran once
    assert sum(e.count("skip ") for e in errs) == 2


def test_timeout_records_a_failed_run(tmp_path, capsys):
    path = tmp_path / "s.sqlite"
    code = cli.main(
        ["--store", str(path), "reproduce", "--tier", "smoke", "--only", CHEAP[0],
         "--timeout", "0.5"]
    )
    assert code == 1
    (run,) = Store(path).runs()
    assert run.record.status == "failed"
    assert "timed out" in run.record.error and "0.5 s" in run.record.error


def test_ctrl_c_during_run_is_quiet(tmp_path):
    path = tmp_path / "s.sqlite"
    proc = subprocess.Popen(
        [sys.executable, "-m", "neurips26", "--store", str(path), "run", "multiagent_neff",
         "--tier", "smoke"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True,
    )
    assert wait_for(path.exists, 60)  # the store is opened before the run starts
    time.sleep(1.0)
    os.killpg(proc.pid, signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    if proc.returncode in (0, 1):
        pytest.skip("the run finished before the signal")
    assert proc.returncode == 130, err
    assert "Traceback" not in err
    last = err.strip().splitlines()[-1]
    assert last.startswith("neurips26: interrupted")
    # a single run has nothing to resume: it says so instead of reproduce's resume advice
    assert "nothing was stored" in last and "resume" not in last
