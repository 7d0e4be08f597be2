"""Faults on tools/list, resources and prompts (not only tools/call), in memory, both layers.

A real SDK ``Client`` talks to a real ``MCPServer`` that serves tools, one resource and
one prompt, through the client-side transport wrapper or the server middleware (issue 14).
The proxy in front of a real third-party server is in ``test_mcp_injector_real_methods.py``.
"""

import json

import anyio
import pytest
from mcp import Client, MCPError

from neurips26.papers.mcp_injector import (
    FaultDecision,
    FaultInjector,
    FaultMode,
    FaultProfile,
    FaultRule,
    FaultSchedule,
    Persistence,
    ProfileError,
    build_travel_server,
    fault_result,
    memory_transport,
    parse_profile,
    request_target,
)
from neurips26.papers.mcp_injector.faults import keyed_uniforms

REQUEST_TIMEOUT, CONNECTION_CLOSED = -32001, -32000
LAYERS = ("transport", "middleware")
MEMO = "memo://insights"


def _server(middleware=None):
    srv = build_travel_server(middleware=middleware, extra_tools=True)
    srv.test_state.setdefault("reads", 0)
    srv.test_state.setdefault("prompts", 0)

    @srv.resource(MEMO, name="memo", mime_type="text/plain")
    def memo() -> str:
        srv.test_state["reads"] += 1
        return "No business insights have been discovered yet."

    @srv.prompt(name="demo")
    def demo(topic: str) -> str:
        srv.test_state["prompts"] += 1
        return f"Let us explore {topic} with the travel tools."

    return srv


def _client(layer, rules, **kw):
    inj = FaultInjector(FaultProfile(rules=tuple(rules)))
    if layer == "middleware":
        srv = _server([inj.middleware()])
        return inj, srv, Client(srv, mode="legacy", **kw)
    srv = _server()
    return inj, srv, Client(inj.wrap(memory_transport(srv)), **kw)


def run(coro_fn):
    async def main():
        with anyio.fail_after(30):
            return await coro_fn()

    return anyio.run(main)


def test_rules_target_methods_uris_and_prompts():
    p = parse_profile({"rules": [{"uri": "memo://*", "mode": "protocol_error"},
                                 {"prompt": "demo", "mode": "timeout"},
                                 {"method": "tools/list", "mode": "empty_result"}]})
    assert [(r.method, r.tool) for r in p.rules] == [
        ("resources/read", "memo://*"), ("prompts/get", "demo"), ("tools/list", "*")]
    s = FaultSchedule(p)
    assert s.decide(MEMO, 0, method="resources/read").mode is FaultMode.PROTOCOL_ERROR
    assert s.decide("file:///x", 0, method="resources/read") is None
    assert s.decide("memo://insights", 0) is None  # a tool of that name is not the resource
    assert s.decide("demo", 0, method="prompts/get").mode is FaultMode.TIMEOUT
    assert s.decide("demo", 0) is None and s.decide("", 0, method="prompts/list") is None
    assert s.decide("", 0, method="tools/list").method == "tools/list"


@pytest.mark.parametrize("bad, field", [
    ({"uri": "memo://x", "mode": "tool_error"}, "tool_error"),
    ({"method": "resources/list", "tool": "x*", "mode": "empty_result"}, "no target"),
    ({"method": "sampling/createMessage", "mode": "timeout"}, "method"),
    ({"uri": "memo://x", "tool": "y", "mode": "timeout"}, "not both"),
])
def test_bad_method_rules_are_refused_naming_the_field(bad, field):
    with pytest.raises(ProfileError, match=field):
        parse_profile({"rules": [bad]})
    with pytest.raises(ValueError, match="method"):
        FaultSchedule(FaultProfile()).decide("x", 0, method="ping")


def test_tools_call_keys_are_unchanged_and_old_logs_replay():
    # tools/call draws are keyed exactly as before methods existed (key = the bare tool
    # name), so seeds and logs of earlier versions keep their meaning
    rule = FaultRule(tool="book", mode=FaultMode.TOOL_ERROR,
                     persistence=Persistence.INTERMITTENT, rate=0.5)
    s = FaultSchedule(FaultProfile(rules=(rule,)), seed=11)
    from neurips26.papers.mcp_injector.faults import _crc

    want = [keyed_uniforms((11, _crc("c"), _crc("book"), k, 1))[0] < 0.5 for k in range(64)]
    assert [s.decide("book", k, connection="c") is not None for k in range(64)] == want
    # and a resources/read rule of the same pattern draws on its own key
    other = FaultSchedule(FaultProfile(rules=(FaultRule(
        tool="book", mode=FaultMode.PROTOCOL_ERROR, persistence=Persistence.INTERMITTENT,
        rate=0.5, method="resources/read"),)), seed=11)
    got = [other.decide("book", k, connection="c", method="resources/read") is not None
           for k in range(64)]
    assert got != want
    # a record written before the method field existed replays as a tools/call fault
    old = {"kind": "fault", "seed": 11, "connection": "c", "tool": "book", "call_index": 2,
           "mode": "tool_error", "persistence": "intermittent", "source": "rule:0",
           "incident_start": True, "error_code": -32603, "message": "m"}
    replay = FaultSchedule.from_log([old])
    assert replay.decide("book", 2, connection="c").mode is FaultMode.TOOL_ERROR
    assert replay.decide("book", 2, connection="c", method="prompts/get") is None
    d = replay.decide("book", 2, connection="c")
    assert FaultDecision.from_record(json.loads(json.dumps(d.to_record(seed=11)))) == d


def test_request_target_and_fault_results():
    assert request_target("prompts/get", {"name": "demo"}) == "demo"
    assert request_target("resources/read", {"uri": 3}) is None
    d = FaultSchedule(parse_profile({"rules": [{"method": "prompts/list",
                                                "mode": "empty_result"}]})).decide(
        "", 0, method="prompts/list")
    assert fault_result(d, {"prompts": [{"name": "a"}], "nextCursor": "x"}) == {"prompts": []}
    with pytest.raises(ValueError, match="mode"):
        fault_result(FaultDecision("c", "", 0, FaultMode.TIMEOUT, Persistence.PERMANENT,
                                   "rule:0", True, -1, "m", method="tools/list"), None)


@pytest.mark.parametrize("layer", LAYERS)
def test_protocol_error_on_resource_read_never_runs_the_handler(layer):
    async def go():
        inj, srv, client = _client(layer, [FaultRule(tool="memo://*", method="resources/read",
                                                     mode=FaultMode.PROTOCOL_ERROR,
                                                     error_code=-32002)])
        async with client as c:
            listed = await c.list_resources()  # other methods untouched
            assert [str(r.uri) for r in listed.resources] == [MEMO]
            with pytest.raises(MCPError) as e:
                await c.read_resource(MEMO)
            assert e.value.code == -32002
            r = await c.call_tool("echo", {"text": "a"})
            assert not r.is_error
        assert srv.test_state["reads"] == 0  # failed before the server acted
        conn = inj.faults()[0]["connection"]
        assert inj.method_calls_[(conn, "resources/read", MEMO)] == 1
        assert inj.method_calls_[(conn, "resources/list", "")] == 1
        assert inj.faults()[0]["method"] == "resources/read"

    run(go)


@pytest.mark.parametrize("layer", LAYERS)
def test_empty_and_malformed_lists(layer):
    async def go():
        _inj, _, client = _client(layer, [
            FaultRule(method="tools/list", mode=FaultMode.EMPTY_RESULT,
                      persistence=Persistence.TRANSIENT, duration=1),
            FaultRule(method="prompts/list", mode=FaultMode.MALFORMED_RESULT),
        ])
        async with client as c:
            assert (await c.list_tools()).tools == []
            assert {t.name for t in (await c.list_tools()).tools} >= {"echo", "book"}
            with pytest.raises(Exception) as e:  # the client's own validation rejects it
                await c.list_prompts()
            assert "name" in str(e.value)
            assert len((await c.list_resources()).resources) == 1

    run(go)


@pytest.mark.parametrize("layer", LAYERS)
def test_prompt_timeout_then_recovery(layer):
    async def go():
        _inj, srv, client = _client(layer, [FaultRule(tool="demo", method="prompts/get",
                                                     mode=FaultMode.TIMEOUT,
                                                     persistence=Persistence.TRANSIENT,
                                                     duration=1)],
                                   read_timeout_seconds=0.2)
        async with client as c:
            with pytest.raises(MCPError) as e:
                await c.get_prompt("demo", {"topic": "fares"})
            assert e.value.code == REQUEST_TIMEOUT
            ok = await c.get_prompt("demo", {"topic": "fares"})
            assert "fares" in ok.messages[0].content.text
        assert srv.test_state["prompts"] == 1

    run(go)


@pytest.mark.parametrize("layer", LAYERS)
def test_after_server_and_malformed_resource_read(layer):
    async def go():
        _inj, srv, client = _client(layer, [
            FaultRule(tool=MEMO, method="resources/read", mode=FaultMode.MALFORMED_RESULT,
                      persistence=Persistence.TRANSIENT, duration=1),
            FaultRule(tool="demo", method="prompts/get", mode=FaultMode.EMPTY_RESULT,
                      after_server=True),
        ])
        async with client as c:
            cut = await c.read_resource(MEMO)
            full = await c.read_resource(MEMO)
            assert full.contents[0].text.startswith(cut.contents[0].text)
            assert len(cut.contents[0].text) < len(full.contents[0].text)
            empty = await c.get_prompt("demo", {"topic": "x"})
            assert empty.messages == []
        assert srv.test_state["reads"] == 2 and srv.test_state["prompts"] == 1

    run(go)


def test_connection_drop_on_resources_list_closes_the_transport():
    async def go():
        _inj, _, client = _client("transport", [FaultRule(method="resources/list",
                                                         mode=FaultMode.CONNECTION_DROP)])
        async with client as c:
            with pytest.raises(MCPError) as e:
                await c.list_resources()
            assert e.value.code == CONNECTION_CLOSED
            with pytest.raises(MCPError):
                await c.call_tool("echo", {"text": "a"})

    run(go)
