"""Killing ``reproduce`` mid-way leaves finished runs intact; the rerun resumes."""

import os
import signal
import sqlite3
import subprocess
import sys
import time

from neurips26.registry import SLUGS
from neurips26.store import Store

# Three papers whose smoke tier runs in a few seconds and needs no torch import, so the
# three reproduce calls below stay cheap; any registered papers would do.
ONLY = ["lambda6_star", "multiagent_performative", "judge_rasch"]
assert set(ONLY) <= set(SLUGS)


def reproduce(store, *extra, wait=True):
    cmd = [
        sys.executable,
        "-m",
        "neurips26",
        "--store",
        str(store),
        "reproduce",
        "--tier",
        "smoke",
        "--only",
        *ONLY,
        *extra,
    ]
    if wait:
        return subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    return subprocess.Popen(
        cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True
    )


def count(path):
    if not path.exists():
        return 0
    try:
        with sqlite3.connect(path, timeout=5) as db:
            return db.execute("SELECT COUNT(*) FROM runs").fetchone()[0]
    except sqlite3.OperationalError:  # schema not created yet
        return 0


def test_kill_midway_then_resume(tmp_path):
    path = tmp_path / "runs.sqlite"
    proc = reproduce(path, wait=False)
    deadline = time.monotonic() + 300
    while count(path) < 1 and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    killed_midway = proc.poll() is None
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    with sqlite3.connect(path) as db:
        assert db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    finished = Store(path).runs()
    assert 1 <= len(finished) <= len(ONLY)
    if killed_midway:
        assert len(finished) < len(ONLY)
    for stored in finished:  # every stored run is whole
        assert stored.record.status == "ok", stored.record.error
        assert stored.record.metrics and len(stored.record.claims) > 0
    done = {s.record.slug for s in finished}

    out = reproduce(path)
    assert out.returncode == 0, out.stderr
    for slug in done:
        assert f"skip {slug}:" in out.stderr
    runs = Store(path).runs()
    assert sorted(r.record.slug for r in runs) == sorted(ONLY)  # nothing run twice

    again = reproduce(path, "--force")
    assert again.returncode == 0, again.stderr
    assert len(Store(path).runs()) == 2 * len(ONLY)
