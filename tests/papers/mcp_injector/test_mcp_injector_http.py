"""The Streamable HTTP proxy in front of an SDK-built HTTP MCP server (issue 14).

The upstream is a real ``mcp.server.MCPServer`` run with ``transport="streamable-http"``
in a subprocess (SSE responses, or JSON ones with ``json_response=True``); the proxy is the
``neurips26-mcp-inject --upstream URL`` command; the client is the SDK's ``Client(url)``.
The server's ``record`` tool appends to a file, so a test can tell whether a call reached
it. Everything stays on 127.0.0.1.
"""

import json
import os
import re
import socket
import subprocess
import sys
import textwrap
import threading
import time

import anyio
import pytest
from mcp import Client, MCPError

CLI = [sys.executable, "-m", "neurips26.papers.mcp_injector.cli"]
T = 60
REQUEST_TIMEOUT, CONNECTION_CLOSED = -32001, -32000

SERVER = textwrap.dedent('''
    import sys
    from pathlib import Path
    from mcp.server import MCPServer

    port, seen, json_response = int(sys.argv[1]), Path(sys.argv[2]), sys.argv[3] == "json"
    srv = MCPServer("http-test", log_level="WARNING")

    @srv.tool()
    def record(note: str) -> str:
        """Append a note (a side effect the tests can see)."""
        with seen.open("a") as fh:
            fh.write(note + "\\n")
        return f"recorded {note}"

    @srv.resource("memo://insights", name="memo", mime_type="text/plain")
    def memo() -> str:
        return "No business insights have been discovered yet."

    @srv.prompt(name="demo")
    def demo(topic: str) -> str:
        return f"Explore {topic}."

    srv.run("streamable-http", host="127.0.0.1", port=port, streamable_http_path="/mcp",
            json_response=json_response)
''')


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _wait_port(port, proc):
    t0 = time.monotonic()
    while time.monotonic() - t0 < T:
        if proc.poll() is not None:
            raise RuntimeError(f"server exited: {proc.stderr.read().decode()[-2000:]}")
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.05)
    raise TimeoutError(f"nothing listens on port {port}")


@pytest.fixture(params=("sse", "json"))
def upstream(request, tmp_path):
    script = tmp_path / "server.py"
    script.write_text(SERVER)
    seen = tmp_path / "seen.txt"
    port = _free_port()
    proc = subprocess.Popen([sys.executable, str(script), str(port), str(seen), request.param],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        _wait_port(port, proc)
        yield f"http://127.0.0.1:{port}/mcp", seen
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()


class _Proxy:
    def __init__(self, url, tmp_path, config=None, extra=()):
        args = [*CLI, "--upstream", url, "--listen", "127.0.0.1:0", *extra]
        if config is not None:
            path = tmp_path / "faults.yaml"
            path.write_text(textwrap.dedent(config))
            args[len(CLI):len(CLI)] = ["--config", str(path)]
        self.proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                     env=dict(os.environ))
        self.err = []
        found = threading.Event()

        def read():
            for line in self.proc.stderr:
                self.err.append(line.decode(errors="replace"))
                if "listening on" in self.err[-1]:
                    found.set()

        threading.Thread(target=read, daemon=True).start()
        if not found.wait(T):
            self.close()
            raise RuntimeError(f"proxy did not start: {''.join(self.err)}")
        self.url = re.search(r"listening on (\S+)", "".join(self.err)).group(1)

    def close(self):
        self.proc.terminate()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()


@pytest.fixture
def proxy(tmp_path):
    made = []

    def start(url, config=None, extra=()):
        p = _Proxy(url, tmp_path, config, extra)
        made.append(p)
        return p

    yield start
    for p in made:
        p.close()


def _seen(path):
    return path.read_text().split() if path.exists() else []


async def _everything(url, **kw):
    with anyio.fail_after(T):
        async with Client(url, **kw) as c:
            tools = (await c.list_tools()).model_dump()["tools"]
            r = await c.call_tool("record", {"note": "a"})
            res = [str(x.uri) for x in (await c.list_resources()).resources]
            text = (await c.read_resource("memo://insights")).contents[0].text
            prompt = (await c.get_prompt("demo", {"topic": "fares"})).messages[0].content.text
            return tools, r.content[0].text, r.structured_content, res, text, prompt


@pytest.mark.parametrize("mode", ("auto", "legacy"))
def test_http_proxy_is_transparent(upstream, proxy, mode):
    url, seen = upstream
    direct = anyio.run(lambda: _everything(url, mode=mode))
    p = proxy(url)
    proxied = anyio.run(lambda: _everything(p.url, mode=mode))
    assert proxied == direct and direct[1] == "recorded a"
    assert _seen(seen) == ["a", "a"]


def test_http_pre_server_faults_are_not_forwarded(upstream, proxy, tmp_path):
    url, seen = upstream
    log = tmp_path / "calls.jsonl"
    p = proxy(url, """
        rules:
          - {tool: record, mode: tool_error, persistence: transient, duration: 1}
          - {uri: "memo://*", mode: protocol_error, error_code: -32002}
          - {prompt: demo, mode: timeout, persistence: transient, duration: 1}
          - {method: tools/list, mode: empty_result, persistence: transient, duration: 1}
        """, extra=("--log", str(log)))

    async def go():
        with anyio.fail_after(T):
            async with Client(p.url, read_timeout_seconds=1.0) as c:
                out = {"tools": (await c.list_tools()).tools}
                first = await c.call_tool("record", {"note": "first"})
                second = await c.call_tool("record", {"note": "second"})
                out["calls"] = (first.is_error, second.is_error, second.content[0].text)
                with pytest.raises(MCPError) as e:
                    await c.read_resource("memo://insights")
                out["read"] = e.value.code
                with pytest.raises(MCPError) as e:
                    await c.get_prompt("demo", {"topic": "x"})
                out["prompt"] = e.value.code
                out["again"] = (await c.get_prompt("demo", {"topic": "x"})).messages
                return out

    out = anyio.run(go)
    assert out["tools"] == [] and out["calls"] == (True, False, "recorded second")
    assert out["read"] == -32002 and out["prompt"] == REQUEST_TIMEOUT
    assert "x" in out["again"][0].content.text
    assert _seen(seen) == ["second"]  # the injected 429 never reached the server
    recs = [json.loads(x) for x in log.read_text().splitlines()]
    calls = [(r["tool"], r["fault"], r["outcome"]) for r in recs if r["kind"] == "call"]
    assert calls == [("record", "tool_error", "is_error"), ("record", None, "ok")]


def test_http_after_server_and_malformed(upstream, proxy):
    url, seen = upstream
    p = proxy(url, """
        rules:
          - {tool: record, mode: protocol_error, after_server: true}
          - {method: prompts/list, mode: malformed_result}
        """)

    async def go():
        with anyio.fail_after(T):
            async with Client(p.url) as c:
                with pytest.raises(MCPError) as e:
                    await c.call_tool("record", {"note": "acted"})
                with pytest.raises(Exception) as bad:  # the client's validation rejects it
                    await c.list_prompts()
                return e.value.code, str(bad.value)

    code, bad = anyio.run(go)
    assert code == -32603 and _seen(seen) == ["acted"] and "name" in bad


def test_http_connection_drop_ends_the_session(upstream, proxy):
    url, seen = upstream
    p = proxy(url, "rules: [{tool: record, mode: connection_drop}]\n")

    async def go():
        with anyio.fail_after(T):
            async with Client(p.url, mode="legacy", read_timeout_seconds=5.0) as c:
                # a closed connection, not the read timeout's error: the stream ended
                with pytest.raises(MCPError) as first:
                    await c.call_tool("record", {"note": "x"})
                with pytest.raises(MCPError) as later:
                    await c.list_tools()
                return first.value.code, later.value.message

    code, later = anyio.run(go)
    assert code == CONNECTION_CLOSED and "terminated" in later.lower()
    assert _seen(seen) == []


def test_http_cli_usage_errors(tmp_path):
    both = subprocess.run([*CLI, "--upstream", "http://127.0.0.1:9/mcp", "--", "true"],
                          capture_output=True, timeout=T)
    assert both.returncode == 2 and b"not both" in both.stderr
    bad = subprocess.run([*CLI, "--upstream", "ftp://x"], capture_output=True, timeout=T)
    assert bad.returncode == 2 and b"upstream" in bad.stderr
    port = subprocess.run([*CLI, "--upstream", "http://127.0.0.1:9/mcp", "--listen", "x"],
                          capture_output=True, timeout=T)
    assert port.returncode == 2 and b"listen" in port.stderr
