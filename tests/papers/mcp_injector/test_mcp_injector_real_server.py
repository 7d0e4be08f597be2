"""The proxy in front of a real third-party MCP server (``mcp-server-time`` from PyPI).

The server is installed once into its own virtual environment under ``.cache/mcp-servers``
at the repository root (so its ``mcp`` pin cannot change ours) and reused by later runs;
the tests skip when it cannot be installed (e.g. offline). A ``tee`` in front of the
server records every byte that reaches it, so a test can tell whether a call was forwarded.
"""

import json
import subprocess
import sys
import threading
import time
from pathlib import Path

import anyio
import pytest
from mcp import Client, MCPError

from _mcp_servers import installed_server, stdio_params, tee_in_front, write_config

TIME_VERSION = "2026.10.19"
CLI = [sys.executable, "-m", "neurips26.papers.mcp_injector.cli"]
T = 60
CONNECTION_CLOSED, REQUEST_TIMEOUT = -32000, -32001
CONVERT = {"source_timezone": "UTC", "time": "12:00", "target_timezone": "Asia/Tokyo"}


@pytest.fixture(scope="session")
def time_server():
    """argv of ``mcp-server-time`` in its own cached venv (installed on first use)."""
    exe = installed_server("venv", (f"mcp-server-time=={TIME_VERSION}",), "mcp-server-time")
    return [str(exe), "--local-timezone", "UTC"]


def _calls_seen(seen: Path, tool: str) -> int:
    if not seen.exists():
        return 0
    msgs = [json.loads(x) for x in seen.read_text().splitlines() if x.strip()]
    return sum(1 for m in msgs if m.get("method") == "tools/call"
               and m.get("params", {}).get("name") == tool)


def test_transparent_pass_through_real_server(time_server):
    async def go(cmd):
        with anyio.fail_after(T):
            async with Client(stdio_params(cmd)) as c:
                tools = (await c.list_tools()).model_dump()["tools"]
                r = await c.call_tool("convert_time", CONVERT)
                return tools, r.is_error, r.structured_content, r.content[0].text

    direct = anyio.run(go, time_server)
    proxied = anyio.run(go, [*CLI, "--", *time_server])
    assert {t["name"] for t in direct[0]} >= {"get_current_time", "convert_time"}
    assert proxied == direct and direct[1] is False


@pytest.mark.parametrize("mode", ("tool_error", "protocol_error", "timeout"))
@pytest.mark.parametrize("after", (False, True))
def test_pre_server_faults_are_not_forwarded_to_real_server(time_server, tmp_path, mode, after):
    seen = tmp_path / "seen.jsonl"
    cfg = write_config(tmp_path, f"rules: [{{tool: convert_time, mode: {mode}, "
                            f"after_server: {str(after).lower()}}}]\n")
    cmd = [*CLI, "--config", cfg, "--", *tee_in_front(time_server, seen)]

    async def go():
        with anyio.fail_after(T):
            async with Client(stdio_params(cmd), read_timeout_seconds=1.0) as c:
                try:
                    r = await c.call_tool("convert_time", CONVERT)
                    out = "is_error" if r.is_error else "ok"
                except MCPError as e:
                    out = e.code
                ok = await c.call_tool("get_current_time", {"timezone": "UTC"})
                return out, ok.is_error

    out, later_error = anyio.run(go)
    expected = {"tool_error": "is_error", "protocol_error": -32603, "timeout": REQUEST_TIMEOUT}
    assert out == expected[mode] and later_error is False
    assert _calls_seen(seen, "get_current_time") == 1
    assert _calls_seen(seen, "convert_time") == (1 if after else 0)


def test_connection_drop_is_seen_promptly_by_client(time_server, tmp_path):
    cfg = write_config(tmp_path, "rules: [{tool: convert_time, mode: connection_drop}]\n")
    cmd = [*CLI, "--config", cfg, "--", *time_server]

    async def go():
        with anyio.fail_after(T):
            async with Client(stdio_params(cmd), read_timeout_seconds=2.0) as c:
                await c.call_tool("get_current_time", {"timezone": "UTC"})
                t0 = anyio.current_time()
                with pytest.raises(MCPError) as e:
                    await c.call_tool("convert_time", CONVERT)
                return e.value.code, anyio.current_time() - t0

    code, dt = anyio.run(go)
    assert code == CONNECTION_CLOSED and dt < 2.0  # a closed connection, not a timeout


INIT = [
    {"jsonrpc": "2.0", "id": 1, "method": "initialize",
     "params": {"protocolVersion": "2025-11-25", "capabilities": {},
                "clientInfo": {"name": "raw", "version": "0"}}},
    {"jsonrpc": "2.0", "method": "notifications/initialized"},
    {"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
]


def test_strict_exits_promptly_with_status_1(time_server, tmp_path):
    cfg = write_config(tmp_path, "strict: true\nrules: [{tool: no_such_tool, mode: tool_error}]\n")
    p = subprocess.Popen([*CLI, "--config", cfg, "--", *time_server], stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    lines = []

    def read():  # stdout must reach EOF (client side closed) although stdin stays open
        lines.extend(p.stdout)

    t = threading.Thread(target=read, daemon=True)
    try:
        t.start()
        p.stdin.write(b"".join(json.dumps(m).encode() + b"\n" for m in INIT))
        p.stdin.flush()
        t0 = time.monotonic()
        while len(lines) < 2 and time.monotonic() - t0 < T:
            time.sleep(0.01)
        t.join(T)  # a proxy that kept stdout open would leave the reader blocked
        reached_eof = not t.is_alive()
        rc = p.wait(timeout=T)
        err = p.stderr.read()
    finally:
        p.kill()
    assert len(lines) == 2 and json.loads(lines[1])["id"] == 2
    assert reached_eof
    assert rc == 1 and b"no_such_tool" in err


def test_rate_limit_with_retry_after_in_front_of_real_server(time_server, tmp_path):
    seen = tmp_path / "seen.jsonl"
    cfg = write_config(tmp_path, """
        rules:
          - {tool: convert_time, mode: tool_error, retry_after_s: 2, persistence: transient,
             duration: 1}
        """)
    cmd = [*CLI, "--config", cfg, "--", *tee_in_front(time_server, seen)]

    async def go():
        with anyio.fail_after(T):
            async with Client(stdio_params(cmd)) as c:
                limited = await c.call_tool("convert_time", CONVERT)
                retried = await c.call_tool("convert_time", CONVERT)
                return limited, retried

    limited, retried = anyio.run(go)
    assert limited.is_error and limited.meta == {"retryAfter": 2.0}
    assert "retry after 2 s" in limited.content[0].text
    assert retried.is_error is False and retried.structured_content
    assert _calls_seen(seen, "convert_time") == 1  # the limited call never reached the server


def _wire(cmd, msgs, *, want_lines):
    """Send ``msgs``, keep stdin open, read stdout bytes until ``want_lines`` newlines or
    EOF (then close stdin)."""
    p = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE)
    chunks, eof = [], threading.Event()

    def read():
        while True:
            b = p.stdout.read1(65536)
            if not b:
                eof.set()
                return
            chunks.append(b)

    t = threading.Thread(target=read, daemon=True)
    try:
        t.start()
        p.stdin.write(b"".join(json.dumps(m).encode() + b"\n" for m in msgs))
        p.stdin.flush()
        t0 = time.monotonic()
        while b"".join(chunks).count(b"\n") < want_lines and not eof.is_set() \
                and time.monotonic() - t0 < T:
            time.sleep(0.01)
        time.sleep(0.3)  # anything more that would follow
        closed = eof.is_set()
        p.stdin.close()
        p.wait(timeout=T)
    finally:
        p.kill()
    return b"".join(chunks), closed


CALL = {"jsonrpc": "2.0", "id": 3, "method": "tools/call",
        "params": {"name": "convert_time", "arguments": CONVERT}}


@pytest.mark.parametrize("then", ("newline", "close"))
def test_wire_cut_of_a_real_server_response(time_server, tmp_path, then):
    direct, _ = _wire(time_server, [*INIT, CALL], want_lines=3)
    full = direct.split(b"\n")[2] + b"\n"  # the server's own response to the call
    assert json.loads(full)["id"] == 3
    cfg = write_config(tmp_path, f"rules: [{{tool: convert_time, mode: malformed_result, "
                            f"cut_bytes: 37, cut_then: {then}}}]\n")
    out, closed = _wire([*CLI, "--config", cfg, "--", *time_server], [*INIT, CALL],
                        want_lines=3 if then == "newline" else 2)
    head = out.split(b"\n", 2)
    assert json.loads(head[0])["id"] == 1 and json.loads(head[1])["id"] == 2
    if then == "newline":  # a truncated JSON line, and the proxy goes on serving
        assert head[2] == full[:37] + b"\n" and not closed
    else:  # cut mid-response: the client sees end of stream right after the bytes
        assert head[2] == full[:37] and closed
    with pytest.raises(json.JSONDecodeError):
        json.loads(full[:37])


def test_cli_replay_of_a_log_repeats_the_faults_call_for_call(time_server, tmp_path):
    log = tmp_path / "faults.jsonl"
    cfg = write_config(tmp_path, """
        seed: 5
        rules:
          - {tool: convert_time, mode: tool_error, persistence: intermittent, rate: 0.5}
        """)

    async def go(cmd):
        with anyio.fail_after(T):
            async with Client(stdio_params(cmd)) as c:
                return [(await c.call_tool("convert_time", CONVERT)).is_error for _ in range(8)]

    first = anyio.run(go, [*CLI, "--config", cfg, "--log", str(log), "--", *time_server])
    assert 0 < sum(first) < 8
    replay_log = tmp_path / "replay.jsonl"
    again = anyio.run(go, [*CLI, "--replay", str(log), "--log", str(replay_log), "--",
                           *time_server])
    assert again == first
    faults = [json.loads(x) for x in replay_log.read_text().splitlines()]
    assert sum(r.get("kind") == "fault" for r in faults) == sum(first)
    bad = subprocess.run([*CLI, "--replay", str(tmp_path / "nope.jsonl"), "--", "true"],
                         capture_output=True, timeout=T)
    assert bad.returncode == 2 and b"--replay" in bad.stderr


def test_every_call_is_logged_and_the_report_summarises_it(time_server, tmp_path):
    log = tmp_path / "calls.jsonl"
    cfg = write_config(tmp_path, """
        rules:
          - {tool: convert_time, mode: tool_error, persistence: transient, duration: 1}
        """)
    cmd = [*CLI, "--config", cfg, "--log", str(log), "--", *time_server]

    async def go():
        with anyio.fail_after(T):
            async with Client(stdio_params(cmd)) as c:
                await c.call_tool("get_current_time", {"timezone": "UTC"})
                first = await c.call_tool("convert_time", CONVERT)
                retry = await c.call_tool("convert_time", CONVERT)  # the same call again
                return first.is_error, retry.is_error

    assert anyio.run(go) == (True, False)
    calls = [r for r in map(json.loads, log.read_text().splitlines()) if r["kind"] == "call"]
    assert [(c["tool"], c["fault"], c["outcome"]) for c in calls] == [
        ("get_current_time", None, "ok"), ("convert_time", "tool_error", "is_error"),
        ("convert_time", None, "ok")]
    assert calls[1]["arg_hash"] == calls[2]["arg_hash"] != calls[0]["arg_hash"]
    assert all(c["latency_ms"] >= 0 and isinstance(c["id"], int) for c in calls)
    out = subprocess.run([*CLI, "report", str(log), "--json"], capture_output=True, timeout=T)
    assert out.returncode == 0, out.stderr
    s = json.loads(out.stdout)
    assert (s["num_calls"], s["num_retries"], s["num_faults"]) == (3, 1, 1)
    assert s["faults_by_mode"] == {"tool_error": 1} and s["outcomes"] == {"is_error": 1, "ok": 2}
    text = subprocess.run([*CLI, "report", str(log)], capture_output=True, timeout=T)
    assert b"retries: 1" in text.stdout and b"latency ms: p50" in text.stdout
    bad = subprocess.run([*CLI, "report", str(tmp_path / "none.jsonl")], capture_output=True,
                         timeout=T)
    assert bad.returncode == 2 and b"cannot read" in bad.stderr
