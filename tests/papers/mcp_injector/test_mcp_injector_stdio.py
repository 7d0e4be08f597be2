"""The stdio proxy and CLI: real subprocesses, every one under a timeout."""

import json
import os
import subprocess
import sys
import textwrap
import threading

import anyio
import pytest
from mcp import Client, MCPError, StdioServerParameters

from neurips26.papers.mcp_injector import FaultInjector, FaultProfile, stdio_server_command
from neurips26.papers.mcp_injector.cli import main

SERVER = stdio_server_command(extra_tools=True)
CLI = [sys.executable, "-m", "neurips26.papers.mcp_injector.cli"]
T = 60  # seconds: upper bound for any subprocess here

def _params(cmd):
    # the SDK passes only a few "safe" variables on; PYTHONPATH keeps this checkout's code
    return StdioServerParameters(command=cmd[0], args=list(cmd[1:]), env=dict(os.environ))


INIT = [
    {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-11-25",
            "capabilities": {},
            "clientInfo": {"name": "raw", "version": "0"},
        },
    },
    {"jsonrpc": "2.0", "method": "notifications/initialized"},
]


def _calls(n=6):
    out = [{"jsonrpc": "2.0", "id": 2, "method": "tools/list"}]
    for i in range(n):
        out.append(
            {
                "jsonrpc": "2.0",
                "id": 10 + i,
                "method": "tools/call",
                "params": {"name": "echo_text", "arguments": {"text": f"m{i}"}},
            }
        )
    return out


class _Done:
    def __init__(self, returncode, stdout, stderr):
        self.returncode, self.stdout, self.stderr = returncode, stdout, stderr


def _raw(cmd, msgs, extra=b"", *, expect=None):
    """Send lines; read ``expect`` lines (default: one per request) before closing stdin.

    Servers cancel in-flight requests at stdin EOF, so we wait for the answers first.
    Every wait is bounded (T seconds); the process is killed on the way out.
    """
    data = b"".join(json.dumps(m).encode() + b"\n" for m in msgs) + extra
    if expect is None:
        expect = sum(1 for m in msgs if "id" in m) + extra.count(b"\n")
    p = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    lines = []

    def reader():
        for line in p.stdout:
            lines.append(line)
            if len(lines) >= expect:
                return

    t = threading.Thread(target=reader, daemon=True)
    t.start()
    try:
        p.stdin.write(data)
        p.stdin.flush()
        t.join(T)
        p.stdin.close()
        p.wait(timeout=T)
        rest, err = p.stdout.read(), p.stderr.read()
    finally:
        p.kill()
    return _Done(p.returncode, b"".join(lines) + rest, err)


def _config(tmp_path, text):
    path = tmp_path / "faults.yaml"
    path.write_text(textwrap.dedent(text))
    return str(path)


def test_proxy_transparent_byte_for_byte():
    direct = _raw(SERVER, INIT + _calls())
    proxied = _raw([*CLI, "--", *SERVER], INIT + _calls())
    assert direct.returncode == 0 and proxied.returncode == 0, proxied.stderr[-2000:]
    a = sorted(direct.stdout.splitlines())
    b = sorted(proxied.stdout.splitlines())
    assert len(a) == 8 and a == b


def test_proxy_sdk_client_sees_faults_and_same_tools(tmp_path):
    cfg = _config(
        tmp_path,
        """\
        seed: 3
        rules:
          - {tool: echo_text, mode: tool_error, persistence: transient, onset: 1, duration: 2}
          - {tool: echo, mode: protocol_error, error_code: -32044}
        """,
    )
    log = tmp_path / "log.jsonl"

    async def go(cmd):
        with anyio.fail_after(T):
            async with Client(_params(cmd)) as c:
                tools = (await c.list_tools()).model_dump()["tools"]
                errs = [(await c.call_tool("echo_text", {"text": "x"})).is_error for _ in range(4)]
                try:
                    await c.call_tool("echo", {"text": "x"})
                    code = None
                except MCPError as e:
                    code = e.code
                return tools, errs, code

    direct = anyio.run(go, SERVER)
    proxied = anyio.run(go, [*CLI, "--config", cfg, "--log", str(log), "--", *SERVER])
    assert proxied[0] == direct[0]
    assert direct[1] == [False] * 4 and direct[2] is None
    assert proxied[1] == [False, True, True, False] and proxied[2] == -32044
    recs = [json.loads(x) for x in log.read_text().splitlines()]
    assert recs[0]["kind"] == "start" and recs[0]["seed"] == 3, recs
    recs = [r for r in recs if r["kind"] == "fault"]
    assert [(r["tool"], r["call_index"]) for r in recs] == [
        ("echo_text", 1),
        ("echo_text", 2),
        ("echo", 0),
    ]


@pytest.mark.parametrize("after", (False, True))
def test_proxy_empty_result_is_valid_for_the_output_schema(tmp_path, after):
    """Issue 14, bug 5: the SDK client raised on an empty result of a structured tool."""
    cfg = _config(tmp_path, f"rules: [{{tool: echo, mode: empty_result, "
                            f"after_server: {str(after).lower()}}}]\n")

    async def go(cmd):
        with anyio.fail_after(T):
            async with Client(_params(cmd)) as c:
                await c.list_tools()
                r = await c.call_tool("echo", {"text": "x"})
                return r.content, r.structured_content, r.is_error

    content, structured, is_error = anyio.run(go, [*CLI, "--config", cfg, "--", *SERVER])
    assert content == [] and structured == {"result": ""} and is_error is not True


def test_same_seed_same_log_over_stdio(tmp_path):
    cfg = _config(
        tmp_path,
        """\
        rules:
          - {tool: echo_text, mode: tool_error, persistence: intermittent, rate: 0.5}
        """,
    )
    logs = []
    for seed in (5, 5, 6):
        log = tmp_path / f"log{len(logs)}.jsonl"
        p = _raw(
            [*CLI, "--config", cfg, "--seed", str(seed), "--log", str(log), "--", *SERVER],
            INIT + _calls(20),
        )
        assert p.returncode == 0
        logs.append(
            [
                (r["call_index"], r["message"])
                for r in map(json.loads, log.read_text().splitlines())
                if r["kind"] == "fault"
            ]
        )
    assert logs[0] == logs[1] and len(logs[0]) > 0
    assert logs[0] != logs[2]


def test_garbage_from_client_gets_parse_error_and_proxy_survives():
    p = _raw(
        [*CLI, "--", *SERVER],
        INIT + _calls(2),
        extra=b'this is not json\n{"unterminated": \n'
        + json.dumps(
            {
                "jsonrpc": "2.0",
                "id": 99,
                "method": "tools/call",
                "params": {"name": "echo_text", "arguments": {"text": "after"}},
            }
        ).encode()
        + b"\n",
    )
    assert p.returncode == 0
    msgs = [json.loads(x) for x in p.stdout.splitlines()]
    parse_errors = [m for m in msgs if m.get("error", {}).get("code") == -32700]
    assert len(parse_errors) == 2 and all(m["id"] is None for m in parse_errors)
    assert any(m.get("id") == 99 and "after" in json.dumps(m) for m in msgs)


FAKE = textwrap.dedent("""\
    import json, sys
    for line in sys.stdin:
        msg = json.loads(line)
        print("garbage from server {{{", flush=True)
        if "id" in msg:
            print(json.dumps({"jsonrpc": "2.0", "id": msg["id"], "result": {"ok": 1}}), flush=True)
    """)


def test_garbage_from_server_is_passed_on(tmp_path):
    cfg = _config(tmp_path, "rules: [{tool: t, mode: empty_result, after_server: true}]\n")
    msgs = [
        {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "t"}},
        {"jsonrpc": "2.0", "id": 2, "method": "ping"},
    ]
    p = _raw([*CLI, "--config", cfg, "--", sys.executable, "-c", FAKE], msgs, expect=4)
    assert p.returncode == 0, p.stderr
    lines = p.stdout.splitlines()
    assert lines.count(b"garbage from server {{{") == 2
    parsed = [json.loads(x) for x in lines if x.startswith(b"{")]
    assert parsed[0] == {"jsonrpc": "2.0", "id": 1, "result": {"content": []}}
    assert parsed[1]["result"] == {"ok": 1}


ECHO = textwrap.dedent("""\
    import json, sys
    for line in sys.stdin:
        msg = json.loads(line)
        if isinstance(msg, dict) and "id" in msg:
            print(json.dumps({"jsonrpc": "2.0", "id": msg["id"], "result": {"ok": 1}}), flush=True)
    """)


def test_invalid_request_ids_are_passed_on_without_crashing(tmp_path):
    # JSON-RPC ids are strings, numbers or null; an object or array id (unhashable) used to
    # crash the relay. It must be passed on untracked, and later calls still get faults.
    cfg = _config(tmp_path, "rules: [{tool: t, mode: empty_result, after_server: true}]\n")
    call = {"jsonrpc": "2.0", "method": "tools/call", "params": {"name": "t"}}
    msgs = [{**call, "id": rid} for rid in ({"x": 1}, [1, 2], True, 7)]
    p = _raw([*CLI, "--config", cfg, "--", sys.executable, "-c", ECHO], msgs, expect=4)
    assert p.returncode == 0, p.stderr[-2000:]
    parsed = [json.loads(x) for x in p.stdout.splitlines()]
    assert [m["id"] for m in parsed] == [{"x": 1}, [1, 2], True, 7]
    assert [m["result"] for m in parsed] == [{"ok": 1}] * 3 + [{"content": []}]


def test_cli_usage_and_config_errors(tmp_path, capsys):
    assert main([]) == 2
    assert "no server command" in capsys.readouterr().err
    assert main(["--config", str(tmp_path / "nope.yaml"), "--", "x"]) == 2
    assert "cannot read config" in capsys.readouterr().err
    bad = _config(tmp_path, "rules: [{mode: timeout, rate: 7}]\n")
    assert main(["--config", bad, "--", "x"]) == 2
    err = capsys.readouterr().err
    assert "rule 0" in err and "rate" in err
    bad2 = _config(tmp_path, "sede: 3\n")
    assert main(["--config", bad2, "--", "x"]) == 2
    assert "unknown key" in capsys.readouterr().err


def test_downstream_failures_are_named():
    p = subprocess.run(
        [*CLI, "--", "/nonexistent/server-binary"], input=b"", capture_output=True, timeout=T
    )
    assert p.returncode == 1 and b"/nonexistent/server-binary" in p.stderr
    dying = [sys.executable, "-c", "import sys; sys.stderr.write('boom: no config'); sys.exit(3)"]
    p = subprocess.Popen(
        [*CLI, "--", *dying], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    try:
        p.wait(timeout=T)  # stdin stays open: the server dies while the client is connected
        err = p.stderr.read()
    finally:
        p.kill()
    assert p.returncode == 1
    assert b"exited (code 3)" in err and b"boom: no config" in err


def test_connection_drop_over_stdio(tmp_path):
    cfg = _config(tmp_path, "rules: [{tool: book, mode: connection_drop}]\n")
    cmd = [*CLI, "--config", cfg, "--", *SERVER]

    async def go():
        with anyio.fail_after(T):
            async with Client(_params(cmd)) as c:
                await c.call_tool("get_fare", {"flight": "x"})
                with pytest.raises(MCPError):
                    await c.call_tool("book", {"flight": "x", "passenger": "p"})

    anyio.run(go)


def test_client_transport_over_stdio():
    inj = FaultInjector(FaultProfile())

    async def go():
        from mcp import stdio_client

        with anyio.fail_after(T):
            params = _params(SERVER)
            async with Client(inj.wrap(stdio_client(params))) as c:
                r = await c.call_tool("lookup_airport", {"city": "Lima"})
                return r.content[0].text

    assert '"LIM"' in anyio.run(go)
    assert inj.calls_ == {("conn-0", "lookup_airport"): 1}


@pytest.mark.parametrize("jitter", ("", ", jitter: uniform, jitter_scale: 0.5"))
def test_latency_rule_delivers_late_through_the_stdio_proxy(tmp_path, jitter):
    """A ``timeout`` rule with ``hang_s`` (the latency fault) delays the real answer and
    delivers it: the SDK client gets the echo, the log records the fault, and the proxy
    logs no error. Nothing is timed: the answer arriving at all is the property."""
    cfg = _config(tmp_path, f"rules: [{{tool: echo_text, mode: timeout, hang_s: 0.2{jitter}}}]\n")
    log = tmp_path / "log.jsonl"
    cmd = [*CLI, "--config", cfg, "--log", str(log), "--", *SERVER]

    async def go():
        with anyio.fail_after(T):
            async with Client(_params(cmd)) as c:
                await c.list_tools()
                results = [await c.call_tool("echo_text", {"text": f"late{i}"}) for i in range(3)]
                return [r.content[0].text for r in results], [r.is_error for r in results]

    texts, errors = anyio.run(go)
    assert all(f"late{i}" in t for i, t in enumerate(texts)) and errors == [False] * 3
    recs = [json.loads(x) for x in log.read_text().splitlines()]
    faults = [r for r in recs if r["kind"] == "fault"]
    assert len(faults) == 3 and all(r["hang_s"] > 0 for r in faults), faults


def test_help_names_the_report_command(capsys):
    assert main(["--help"]) == 0
    assert "report LOG" in capsys.readouterr().out


def test_report_counts_retries_after_failures_only_and_no_latency_when_unanswered():
    from neurips26.papers.mcp_injector.calllog import summarize_log

    def call(outcome, latency=1.0, args="a"):
        return {"kind": "call", "connection": "c", "tool": "t", "arg_hash": args,
                "outcome": outcome, "latency_ms": latency}

    recs = [{"kind": "start"}, call("ok"), call("ok"), call("ok"),  # repeats, not retries
            call("is_error"), call("ok", 2.0),                       # one retry
            call("error", args="b"), call("error", args="b"), call("ok", args="b")]  # two
    s = summarize_log(recs)
    assert s.num_retries == 3 and s.num_calls == 8
    s2 = summarize_log([{"kind": "start"}, call("ok", 1.0), call("unanswered", None)])
    assert s2.latency_ms["max"] == 1.0


def test_a_call_never_answered_is_logged_without_latency(tmp_path):
    log = tmp_path / "log.jsonl"
    inj = FaultInjector(FaultProfile(), log_path=log)
    inj.close_call(inj.open_call("c", 1, "t", {}, None), "unanswered")
    inj.close_call(inj.open_call("c", 2, "t", {}, None), "ok")
    calls = [r for r in map(json.loads, log.read_text().splitlines()) if r["kind"] == "call"]
    assert [c["outcome"] for c in calls] == ["unanswered", "ok"]
    assert calls[0]["latency_ms"] is None and calls[1]["latency_ms"] >= 0
