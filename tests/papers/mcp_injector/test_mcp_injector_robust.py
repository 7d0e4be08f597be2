"""Regression tests for issue 14 against our own servers (real subprocesses, bounded waits)."""

import json
import subprocess
import sys
import textwrap
import time

import anyio
import numpy as np
import pytest
from mcp import Client, MCPError

from neurips26.papers.mcp_injector import (
    FaultInjector,
    FaultMode,
    FaultProfile,
    FaultRule,
    FaultSchedule,
    Persistence,
    build_travel_server,
    memory_transport,
)
from neurips26.papers.mcp_injector.cli import main
from neurips26.papers.mcp_injector.proxy import LineSplitter, load_config

CLI = [sys.executable, "-m", "neurips26.papers.mcp_injector.cli"]
T = 60

BIG = textwrap.dedent("""\
    import json, sys
    for line in sys.stdin:
        msg = json.loads(line)
        if "id" not in msg:
            continue
        if msg.get("method") == "tools/call" and msg["params"]["name"] == "big":
            text = "x" * 2_000_000
        else:
            text = "small"
        res = {"content": [{"type": "text", "text": text}]}
        print(json.dumps({"jsonrpc": "2.0", "id": msg["id"], "result": res}), flush=True)
    """)


def _call(rid, name, **args):
    return {"jsonrpc": "2.0", "id": rid, "method": "tools/call",
            "params": {"name": name, "arguments": args}}


def _readline(p, deadline):
    """One stdout line of ``p`` or fail (stdout read in a thread so the wait is bounded)."""
    out = []

    def read():
        out.append(p.stdout.readline())

    import threading

    t = threading.Thread(target=read, daemon=True)
    t.start()
    t.join(max(0.0, deadline - time.monotonic()))
    assert out, "no line from the proxy before the deadline"
    return out[0]


def test_line_splitter_matches_split_for_any_chunking():
    rng = np.random.default_rng(0)
    for _ in range(200):
        n = int(rng.integers(0, 60))
        data = bytes(rng.choice(np.frombuffer(b"ab\n", dtype=np.uint8), size=n))
        cuts = np.sort(rng.integers(0, n + 1, size=int(rng.integers(0, 6))))
        s = LineSplitter()
        events = []
        for a, b in zip([0, *cuts], [*cuts, n], strict=True):
            events += s.feed(data[a:b])
        events += s.close()
        want = data.split(b"\n")
        if want and want[-1] == b"":
            want = want[:-1]
        assert [e[1] for e in events] == want and all(e[0] == "line" for e in events)
        # with a limit, exactly the over-long lines are reported as such
        s = LineSplitter(max_line=3)
        ev = []
        for a, b in zip([0, *cuts], [*cuts, n], strict=True):
            ev += s.feed(data[a:b])
        ev += s.close()
        assert [k for k, _ in ev] == ["too_long" if len(x) > 3 else "line" for x in want]


def test_overlong_server_line_is_answered_and_proxy_goes_on(tmp_path):
    log = tmp_path / "log.jsonl"
    cmd = [*CLI, "--max-line-bytes", "100000", "--log", str(log), "--",
           sys.executable, "-c", BIG]
    p = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + T
        p.stdin.write((json.dumps(_call(1, "big")) + "\n").encode())
        p.stdin.flush()
        first = json.loads(_readline(p, deadline))
        assert first["id"] == 1 and first["error"]["code"] == -32603
        assert "longer than 100000 bytes" in first["error"]["message"]
        p.stdin.write((json.dumps(_call(2, "small")) + "\n").encode())
        p.stdin.flush()
        second = json.loads(_readline(p, deadline))
        assert second["id"] == 2 and second["result"]["content"][0]["text"] == "small"
        p.stdin.close()  # stdin EOF: the proxy must end
        assert p.wait(timeout=10) == 0
    finally:
        p.kill()
    recs = [json.loads(x) for x in log.read_text().splitlines()]
    too_long = [r for r in recs if "longer than" in r.get("detail", "")]
    assert len(too_long) == 1  # one record, not a spinning loop


ECHO = textwrap.dedent("""\
    import json, sys
    for line in sys.stdin:
        msg = json.loads(line)
        if "id" in msg:
            print(json.dumps({"jsonrpc": "2.0", "id": msg["id"], "result": {"n": len(line)}}),
                  flush=True)
    """)


def _one_request(cmd, payload):
    p = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                         stderr=subprocess.DEVNULL)
    try:
        out, _ = p.communicate(payload, timeout=T)
        return json.loads(out.splitlines()[-1])
    finally:
        p.kill()


def test_large_request_is_relayed_whole():
    # a 32 MB request through the proxy: the answer is the echo server's own
    big = json.dumps(_call(1, "t", blob="y" * (32 << 20))).encode() + b"\n"
    server = [sys.executable, "-c", ECHO]
    a = _one_request(server, big)
    b = _one_request([*CLI, "--", *server], big)
    assert a == b and a["result"]["n"] == len(big)


class _CountingBytes(bytes):
    """bytes whose ``find`` counts the bytes it scans (slices are plain bytes)."""

    scanned = 0

    def find(self, sub, start=0, *rest):
        found = bytes.find(self, sub, start, *rest)
        _CountingBytes.scanned += (len(self) if found < 0 else found + len(sub)) - start
        return found


@pytest.mark.parametrize("chunk", (4096, 65536))
def test_line_framing_scans_each_byte_once(chunk):
    """Framing is linear: the old reader re-split the whole buffer per 64 KiB chunk, so the
    bytes it scanned grew with the square of the line's length. Counted, not timed."""
    from neurips26.papers.mcp_injector.proxy import LineSplitter

    for size in (1 << 20, 8 << 20):
        data = b"y" * size + b"\n" + b"z" * 10 + b"\n"
        split = LineSplitter(max_line=64 << 20)
        _CountingBytes.scanned = 0
        events = []
        for i in range(0, len(data), chunk):
            events += split.feed(_CountingBytes(data[i:i + chunk]))
        events += split.close()
        assert [len(x) for _, x in events] == [size, 10]
        assert _CountingBytes.scanned == len(data), (size, _CountingBytes.scanned)


@pytest.mark.parametrize("layer", ("transport", "middleware"))
@pytest.mark.parametrize("mode", ("tool_error", "protocol_error", "empty_result", "timeout"))
@pytest.mark.parametrize("after", (False, True))
def test_pre_server_faults_do_not_run_the_tool(layer, mode, after):
    rule = FaultRule(tool="slow", mode=FaultMode(mode), after_server=after)
    inj = FaultInjector(FaultProfile(rules=(rule,)))
    if layer == "middleware":
        srv = build_travel_server(middleware=[inj.middleware()], extra_tools=True)
        client = Client(srv, mode="legacy", read_timeout_seconds=0.5)
    else:
        srv = build_travel_server(extra_tools=True)
        client = Client(inj.wrap(memory_transport(srv)), read_timeout_seconds=0.5)

    async def go():
        with anyio.fail_after(30):
            async with client as c:
                try:
                    r = await c.call_tool("slow", {"seconds": 0.0})
                    seen = "is_error" if r.is_error else ("empty" if not r.content else "ok")
                except MCPError as e:  # protocol_error, timeout
                    seen = e.code
                await anyio.sleep(0.05)
        return seen

    seen = anyio.run(go)
    assert seen != "ok"
    assert srv.test_state["slow_finished"] == (1 if after else 0)


def test_unwritable_log_is_one_line_error(tmp_path, capsys):
    blocker = tmp_path / "file"
    blocker.write_text("")
    rc = main(["--log", str(blocker / "log.jsonl"), "--", sys.executable, "-c", "pass"])
    err = capsys.readouterr().err
    assert rc == 2 and "cannot open log" in err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1


def test_toml_config_equals_yaml(tmp_path):
    y = tmp_path / "f.yaml"
    y.write_text("seed: 4\nrules:\n  - {tool: add, mode: tool_error, persistence: transient}\n")
    t = tmp_path / "f.toml"
    t.write_text('seed = 4\n[[rules]]\ntool = "add"\nmode = "tool_error"\n'
                 'persistence = "transient"\n')
    assert load_config(t) == load_config(y)
    bad = tmp_path / "bad.toml"
    bad.write_text("seed = = 1\n")
    assert main(["--config", str(bad), "--", "x"]) == 2


def test_log_is_appended_with_start_markers_and_replays_last_run(tmp_path):
    log = tmp_path / "log.jsonl"
    rule = FaultRule(tool="t", mode=FaultMode.TOOL_ERROR, persistence=Persistence.INTERMITTENT,
                     rate=0.5)
    runs = []
    for seed in (1, 2):
        inj = FaultInjector(FaultProfile(rules=(rule,)), seed=seed, log_path=log)
        runs.append([inj.decide("t") is not None for _ in range(30)])
    recs = [json.loads(x) for x in log.read_text().splitlines()]
    assert [r["seed"] for r in recs if r["kind"] == "start"] == [1, 2]
    assert runs[0] != runs[1]
    replay = FaultSchedule.from_log(log)
    assert [replay.decide("t", k) is not None for k in range(30)] == runs[1]




def test_proxy_exits_on_stdin_eof_even_if_server_ignores_it():
    stubborn = [sys.executable, "-c", "import time\nwhile True: time.sleep(1)"]
    # A proxy that waited for the server would hang: subprocess.run raises at the timeout.
    p = subprocess.run([*CLI, "--", *stubborn], input=b"", capture_output=True, timeout=T)
    assert b"killing it" in p.stderr


def test_after_server_is_validated_and_round_trips():
    from neurips26.papers.mcp_injector import ProfileError, parse_profile

    with pytest.raises(ProfileError, match="after_server"):
        parse_profile({"rules": [{"mode": "timeout", "after_server": "yes"}]})
    with pytest.raises(ProfileError, match="after_server"):
        parse_profile({"after_server": 1})
    p = parse_profile({"rules": [{"mode": "tool_error", "after_server": True}]})
    assert parse_profile(p.to_dict()) == p and p.rules[0].after_server is True
    d = FaultSchedule(p).decide("x", 0)
    assert d.reaches_server and d.to_record(seed=0)["after_server"] is True
