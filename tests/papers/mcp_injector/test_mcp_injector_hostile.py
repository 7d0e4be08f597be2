"""A client or a server cannot knock the stdio proxy over (issue 32): JSON-RPC 2.0 answers
for what is not a request, and lines past Python's parsing limits are relayed, not fatal."""

import json
import subprocess
import sys
import textwrap

import pytest

CLI = [sys.executable, "-m", "neurips26.papers.mcp_injector.cli"]
T = 60

ECHO = textwrap.dedent("""\
    import json, sys
    for line in sys.stdin:
        try:
            msg = json.loads(line)
        except Exception:
            continue
        if isinstance(msg, dict) and "id" in msg:
            print(json.dumps({"jsonrpc": "2.0", "id": msg["id"], "result": {"n": len(line)}}),
                  flush=True)
    """)

HUGE_ID_SERVER = textwrap.dedent("""\
    import sys
    for line in sys.stdin:
        if '"id"' in line:
            print('{"jsonrpc": "2.0", "id": ' + "9" * 5000 + ', "result": {}}', flush=True)
            print('{"jsonrpc": "2.0", "id": 7, "result": {"after": true}}', flush=True)
    """)

PING = json.dumps({"jsonrpc": "2.0", "id": 7, "method": "ping"})


def _through_proxy(lines, server=ECHO):
    out = subprocess.run([*CLI, "--", sys.executable, "-c", server],
                         input="".join(x + "\n" for x in lines).encode(),
                         capture_output=True, timeout=T)
    return out.returncode, [json.loads(x) for x in out.stdout.splitlines() if x.strip()]


@pytest.mark.parametrize("line", ("null", "42", '"text"', "[]"))
def test_a_line_that_is_not_a_request_is_answered_invalid_request(line):
    rc, answers = _through_proxy([line, PING])
    assert rc == 0
    assert answers[0] == {"jsonrpc": "2.0", "id": None,
                          "error": {"code": -32600, "message": "Invalid Request"}}
    assert answers[1]["id"] == 7  # and the relay goes on


BATCH_SERVER = textwrap.dedent("""\
    import json, sys
    for line in sys.stdin:
        msg = json.loads(line)
        reqs = msg if isinstance(msg, list) else [msg]
        out = [{"jsonrpc": "2.0", "id": r["id"], "result": {"batched": isinstance(msg, list)}}
               for r in reqs if isinstance(r, dict) and "id" in r]
        print(json.dumps(out if isinstance(msg, list) else out[0]), flush=True)
    """)


def test_a_batch_is_relayed_and_its_answer_reaches_the_client():
    batch = json.dumps([{"jsonrpc": "2.0", "id": 1, "method": "ping"},
                        {"jsonrpc": "2.0", "id": 2, "method": "ping"}])
    rc, answers = _through_proxy([batch, PING], server=BATCH_SERVER)
    assert rc == 0
    assert answers == [
        [{"jsonrpc": "2.0", "id": 1, "result": {"batched": True}},
         {"jsonrpc": "2.0", "id": 2, "result": {"batched": True}}],
        {"jsonrpc": "2.0", "id": 7, "result": {"batched": False}},
    ]


@pytest.mark.parametrize("line", (
    '{"jsonrpc": "2.0", "id": ' + "9" * 5000 + ', "method": "ping"}',  # past int()'s limit
    "[" * 100_000 + "]" * 100_000,  # past the recursion limit
))
def test_a_client_line_past_the_parsers_limits_is_relayed_and_the_proxy_goes_on(line):
    rc, answers = _through_proxy([line, PING])
    assert rc == 0 and [a["id"] for a in answers] == [7]


def test_a_server_id_past_ints_limit_is_relayed_and_the_proxy_goes_on():
    out = subprocess.run([*CLI, "--", sys.executable, "-c", HUGE_ID_SERVER],
                         input=(PING + "\n").encode(), capture_output=True, timeout=T)
    lines = out.stdout.splitlines()
    assert out.returncode == 0 and len(lines) == 2
    assert lines[0].endswith(b", \"result\": {}}") and b"9" * 5000 in lines[0]
    assert json.loads(lines[1]) == {"jsonrpc": "2.0", "id": 7, "result": {"after": True}}


def test_a_config_nested_too_deeply_is_refused_with_one_line(tmp_path):
    cfg = tmp_path / "deep.yaml"
    cfg.write_text("x: " + "[" * 5000 + "]" * 5000)
    out = subprocess.run([*CLI, "--config", str(cfg), "--", sys.executable, "-c", "pass"],
                         capture_output=True, timeout=T, text=True)
    assert out.returncode == 2 and "Traceback" not in out.stderr
    assert "nested too deeply" in out.stderr
