"""Cost properties of the hot path that do not depend on machine speed (issue 14).

Counts, not clocks: the log file is opened once per injector (not once per record), each
record is one whole-line write, keyed decisions build no numpy generator, and the stdio
proxy writes a ``stop`` record with its call count and its own CPU time.
"""

import builtins
import json
import os
import sys

import anyio
import numpy as np
import pytest
from mcp import Client, StdioServerParameters

from neurips26.papers.mcp_injector import (
    FaultInjector,
    FaultMode,
    FaultProfile,
    FaultRule,
    Persistence,
    default_profile,
    stdio_server_command,
)


def test_log_is_opened_once_and_written_whole_lines(tmp_path, monkeypatch):
    log = tmp_path / "faults.jsonl"
    opened = []
    real_open = builtins.open

    def counting_open(file, *a, **kw):
        if str(file) == str(log):
            opened.append(a[0] if a else kw.get("mode", "r"))
        return real_open(file, *a, **kw)

    monkeypatch.setattr(builtins, "open", counting_open)
    rule = FaultRule(tool="t", mode=FaultMode.TOOL_ERROR, persistence=Persistence.INTERMITTENT,
                     rate=0.5)
    inj = FaultInjector(FaultProfile(rules=(rule,)), seed=3, log_path=log)
    for _ in range(200):
        inj.decide("t", connection="c")
        inj.log_call({"kind": "call", "tool": "t"})
    inj.close()
    assert len(opened) == 1 and "a" in opened[0]  # append-only, opened once
    lines = log.read_text().splitlines()
    assert len(lines) == 1 + len(inj.faults()) + 200  # start marker, faults, calls
    assert all(json.loads(x) for x in lines)
    # a second injector appends after the first run
    FaultInjector(FaultProfile(), log_path=log).close()
    assert len(log.read_text().splitlines()) == len(lines) + 1


def test_decisions_build_no_numpy_generator(monkeypatch):
    built = []
    real = np.random.default_rng

    def counting(*a, **kw):
        built.append(a)
        return real(*a, **kw)

    monkeypatch.setattr(np.random, "default_rng", counting)
    rule = FaultRule(tool="*", mode=FaultMode.TIMEOUT, persistence=Persistence.INTERMITTENT,
                     rate=0.3, hang_s=0.1, jitter="lognormal")
    for prof in (FaultProfile(rules=(rule,)), default_profile()):
        inj = FaultInjector(prof, seed=1)
        for k in range(300):
            inj.decide(f"tool{k % 7}", connection="c")
            inj.decide("", connection="c", method="tools/list")
    assert built == []


def test_stdio_proxy_writes_a_stop_record_with_its_cpu(tmp_path):
    log = tmp_path / "calls.jsonl"
    cmd = [sys.executable, "-m", "neurips26.papers.mcp_injector.cli", "--log", str(log),
           "--", *stdio_server_command()]

    async def go():
        with anyio.fail_after(60):
            async with Client(StdioServerParameters(command=cmd[0], args=cmd[1:],
                                                    env=dict(os.environ))) as c:
                for _ in range(5):
                    await c.call_tool("lookup_airport", {"city": "Paris"})

    anyio.run(go)
    recs = [json.loads(x) for x in log.read_text().splitlines()]
    assert recs[0]["kind"] == "start" and recs[-1]["kind"] == "stop"
    assert recs[-1]["calls"] == 5 and recs[-1]["cpu_s"] >= 0
    assert sum(r["kind"] == "call" for r in recs) == 5


@pytest.mark.parametrize("line, fast", [
    (b'{"jsonrpc":"2.0","id":12,"result":{"content":[]}}', True),
    (b'{"jsonrpc":"2.0","id":"a-1","result":{}}', True),
    (b'{"jsonrpc":"2.0","id":"a\\"b","result":{}}', False),  # escapes: parsed in full
    (b'{"id":1,"jsonrpc":"2.0","result":{}}', False),  # another key order: parsed in full
    (b'{"jsonrpc":"2.0","id":1,"error":{"code":1,"message":"x"}}', False),
])
def test_fast_path_reads_only_sdk_shaped_answers(line, fast):
    from neurips26.papers.mcp_injector.proxy import _FAST_RE

    assert (_FAST_RE.match(line) is not None) == fast
