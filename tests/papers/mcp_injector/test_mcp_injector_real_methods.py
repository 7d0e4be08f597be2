"""Faults on tools/list, resources and prompts through the proxy, in front of a real server.

The third-party server is ``mcp-server-sqlite`` from PyPI (the reference SQLite server: six
tools, the resource ``memo://insights`` and the prompt ``mcp-demo``), installed once into
its own virtual environment under ``.cache/mcp-servers/sqlite-venv`` at the repository
root, pinned with the 1.x SDK it was written for (``mcp==1.30.0``), so neither pin can
change ours; the tests skip when it cannot be installed (e.g. offline). A ``tee`` in front
of the server records every line that reaches it, so a test can tell whether a request
was forwarded (issue 14).
"""

import json
import sys
from pathlib import Path

import anyio
import pytest
from mcp import Client, MCPError

from _mcp_servers import installed_server, stdio_params, tee_in_front, write_config

SQLITE_PINS = ("mcp-server-sqlite==2025.4.25", "mcp==1.30.0")
CLI = [sys.executable, "-m", "neurips26.papers.mcp_injector.cli"]
T = 60
REQUEST_TIMEOUT = -32001
MEMO = "memo://insights"


@pytest.fixture(scope="session")
def sqlite_server(tmp_path_factory):
    """argv of ``mcp-server-sqlite`` (own cached venv) on a fresh database."""
    exe = installed_server("sqlite-venv", SQLITE_PINS, "mcp-server-sqlite")
    db = tmp_path_factory.mktemp("sqlite") / "test.db"
    return [str(exe), "--db-path", str(db)]


def _seen(seen: Path, method: str) -> int:
    if not seen.exists():
        return 0
    msgs = [json.loads(x) for x in seen.read_text().splitlines() if x.strip()]
    return sum(1 for m in msgs if isinstance(m, dict) and m.get("method") == method)


async def _everything(c):
    tools = sorted(t.name for t in (await c.list_tools()).tools)
    res = [(str(r.uri), r.name) for r in (await c.list_resources()).resources]
    memo = (await c.read_resource(MEMO)).contents[0].text
    prompts = [p.name for p in (await c.list_prompts()).prompts]
    demo = (await c.get_prompt("mcp-demo", {"topic": "fares"})).messages[0].content.text
    return tools, res, memo, prompts, demo


def test_resources_and_prompts_pass_through_unchanged(sqlite_server):
    async def go(cmd):
        with anyio.fail_after(T):
            async with Client(stdio_params(cmd)) as c:
                return await _everything(c)

    direct = anyio.run(go, sqlite_server)
    proxied = anyio.run(go, [*CLI, "--", *sqlite_server])
    assert direct[1] == [(MEMO, "Business Insights Memo")] and direct[3] == ["mcp-demo"]
    assert "read_query" in direct[0] and "fares" in direct[4]
    assert proxied == direct


def test_faults_on_lists_resources_and_prompts_in_front_of_real_server(sqlite_server,
                                                                       tmp_path):
    seen = tmp_path / "seen.jsonl"
    log = tmp_path / "faults.jsonl"
    cfg = write_config(tmp_path, """
        rules:
          - {method: tools/list, mode: empty_result, persistence: transient, duration: 1}
          - {uri: "memo://*", mode: protocol_error, error_code: -32002}
          - {prompt: mcp-demo, mode: timeout, persistence: transient, duration: 1}
          - {method: resources/list, mode: malformed_result}
        """)
    cmd = [*CLI, "--config", cfg, "--log", str(log), "--", *tee_in_front(sqlite_server, seen)]

    async def go():
        with anyio.fail_after(T):
            async with Client(stdio_params(cmd), read_timeout_seconds=1.0) as c:
                out = {"empty_tools": (await c.list_tools()).tools}
                out["tools"] = sorted(t.name for t in (await c.list_tools()).tools)
                with pytest.raises(MCPError) as e:
                    await c.read_resource(MEMO)
                out["read_code"] = e.value.code
                with pytest.raises(MCPError) as e:
                    await c.get_prompt("mcp-demo", {"topic": "fares"})
                out["prompt_code"] = e.value.code
                out["prompt"] = (await c.get_prompt("mcp-demo", {"topic": "fares"}))
                with pytest.raises(Exception) as e:  # the SDK client's validation rejects it
                    await c.list_resources()
                out["list_error"] = str(e.value)
                out["prompts"] = [p.name for p in (await c.list_prompts()).prompts]
                return out

    out = anyio.run(go)
    assert out["empty_tools"] == [] and "read_query" in out["tools"]
    assert out["read_code"] == -32002 and out["prompt_code"] == REQUEST_TIMEOUT
    assert "fares" in out["prompt"].messages[0].content.text
    assert "uri" in out["list_error"] or "name" in out["list_error"]
    assert out["prompts"] == ["mcp-demo"]  # an unfaulted method
    # pre-server faults are not forwarded: the real server never saw the read, nor the
    # timed-out prompt (only the retry), nor the first (emptied) tools/list
    assert _seen(seen, "resources/read") == 0
    assert _seen(seen, "prompts/get") == 1
    assert _seen(seen, "resources/list") == 1  # malformed_result needs the real answer
    faults = [r for r in map(json.loads, log.read_text().splitlines()) if r["kind"] == "fault"]
    assert [(r["method"], r["tool"], r["mode"]) for r in faults] == [
        ("tools/list", "", "empty_result"), ("resources/read", MEMO, "protocol_error"),
        ("prompts/get", "mcp-demo", "timeout"), ("resources/list", "", "malformed_result")]


def test_after_server_fault_on_a_prompt_reaches_the_real_server(sqlite_server, tmp_path):
    seen = tmp_path / "seen.jsonl"
    cfg = write_config(tmp_path, """
        rules:
          - {prompt: mcp-demo, mode: protocol_error, after_server: true}
          - {uri: "memo://*", mode: malformed_result}
        """)
    cmd = [*CLI, "--config", cfg, "--", *tee_in_front(sqlite_server, seen)]

    async def go():
        with anyio.fail_after(T):
            async with Client(stdio_params(cmd)) as c:
                with pytest.raises(MCPError) as e:
                    await c.get_prompt("mcp-demo", {"topic": "x"})
                cut = (await c.read_resource(MEMO)).contents[0].text
                return e.value.code, cut

    code, cut = anyio.run(go)
    assert code == -32603 and _seen(seen, "prompts/get") == 1
    full = "No business insights have been discovered yet."
    assert full.startswith(cut) and 0 < len(cut) < len(full)
