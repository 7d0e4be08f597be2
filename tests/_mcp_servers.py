"""Third-party MCP servers for the mcp_injector tests, each in its own cached venv.

A server from PyPI is installed once into a virtual environment under
``.cache/mcp-servers/<name>`` at the repository root (so its ``mcp`` pin cannot change
ours) and reused by later runs; a test that needs it skips when it cannot be installed
(e.g. offline). ``tee_in_front`` records every line that reaches a server, so a test can
tell whether a request was forwarded.
"""

from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from mcp import StdioServerParameters

ROOT = Path(__file__).resolve().parents[1]
SERVERS = ROOT / ".cache" / "mcp-servers"


def installed_server(venv_name: str, pins: tuple[str, ...], entry_point: str) -> Path:
    """Path of ``entry_point`` in ``.cache/mcp-servers/<venv_name>``, installing ``pins``
    there on first use; skips the calling test when that fails."""
    venv = SERVERS / venv_name
    exe = venv / "bin" / entry_point
    stamp = venv / (".installed-" + "-".join(pins).replace("==", "-"))
    SERVERS.mkdir(parents=True, exist_ok=True)
    # One installer at a time: `make test` runs pytest-xdist workers, and two of them
    # may reach the same server on a fresh machine. The loser waits, then sees the stamp.
    with open(SERVERS / f"{venv_name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        _install(venv, pins, stamp)
    if not exe.exists():
        pytest.skip(f"{entry_point} entry point missing in the cached venv")
    return exe


def _install(venv: Path, pins: tuple[str, ...], stamp: Path) -> None:
    if not stamp.exists():
        try:
            if not (venv / "bin" / "python").exists():
                subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True,
                               capture_output=True, timeout=300)  # fmt: skip
            subprocess.run(
                [str(venv / "bin" / "python"), "-m", "pip", "install", "-q",
                 "--disable-pip-version-check", *pins],
                check=True, capture_output=True, timeout=600,
            )  # fmt: skip
        except (subprocess.SubprocessError, OSError) as e:
            err = getattr(e, "stderr", b"") or b""
            pytest.skip(f"cannot install {pins}: {e} {err.decode(errors='replace')[-300:]}")
        stamp.write_text("")


def tee_in_front(server: list[str], seen: Path) -> list[str]:
    """``server`` behind ``tee``: every line that reaches the server is appended to ``seen``."""
    if shutil.which("sh") is None or shutil.which("tee") is None:
        pytest.skip("needs sh and tee")
    return ["sh", "-c", 'tee -a "$0" | exec "$@"', str(seen), *server]


def stdio_params(cmd: list[str]) -> StdioServerParameters:
    """SDK stdio parameters that run ``cmd`` with this process's environment."""
    return StdioServerParameters(command=cmd[0], args=list(cmd[1:]), env=dict(os.environ))


def write_config(tmp_path: Path, text: str, name: str = "faults.yaml") -> str:
    """Write a dedented fault profile into ``tmp_path`` and return its path."""
    path = tmp_path / name
    path.write_text(textwrap.dedent(text))
    return str(path)
