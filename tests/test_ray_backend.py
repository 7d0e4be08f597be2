"""``reproduce --backend ray`` on a local Ray started here: the store fills, a killed task fails."""

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from neurips26.store import Store

ray = pytest.importorskip("ray")

CHEAP, LONG = "agentweave", "multiagent_neff"  # a second or two; ten seconds at smoke


@pytest.fixture(scope="module")
def ray_address():
    ray.init(num_cpus=2, include_dashboard=False, logging_level="ERROR")
    try:
        yield ray.get_runtime_context().gcs_address
    finally:
        ray.shutdown()


def task_pids(slug):
    """Processes whose title is the Ray task of ``slug`` (Ray names them ray::<task>)."""
    out = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                cmd = (entry / "cmdline").read_bytes()
            except OSError:
                continue
            if cmd.startswith(f"ray::neurips26:{slug}".encode()):
                out.append(int(entry.name))
    return out


def test_ray_backend_stores_results_and_records_a_killed_task(ray_address, tmp_path):
    path = tmp_path / "s.sqlite"
    cmd = [
        sys.executable, "-m", "neurips26", "--store", str(path), "reproduce", "--backend", "ray",
        "--ray-address", ray_address, "--tier", "smoke", "--only", CHEAP, LONG,
    ]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    killed = []
    deadline = time.monotonic() + 120
    while not killed and proc.poll() is None and time.monotonic() < deadline:
        for pid in task_pids(LONG):
            os.kill(pid, signal.SIGKILL)
            killed.append(pid)
        time.sleep(0.02)
    _, err = proc.communicate(timeout=180)
    assert killed, f"never saw the {LONG} task running: {err}"
    assert proc.returncode == 1, err
    runs = {r.record.slug: r.record for r in Store(path).runs()}
    assert set(runs) == {CHEAP, LONG}, err
    assert runs[CHEAP].status == "ok" and runs[CHEAP].metrics, runs[CHEAP].error
    assert runs[LONG].status == "failed"
    assert "the Ray task failed" in runs[LONG].error
    assert "Traceback" not in err

