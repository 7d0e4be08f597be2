"""Real SDK Client <-> real MCPServer through the injector, in memory (both layers)."""

import anyio
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
    run_grid,
)

REQUEST_TIMEOUT, CONNECTION_CLOSED = -32001, -32000


def _inj(mode, tool="*", **kw):
    return FaultInjector(FaultProfile(rules=(FaultRule(tool=tool, mode=FaultMode(mode), **kw),)))


async def _client_for(layer, inj, **kw):
    if layer == "middleware":
        srv = build_travel_server(middleware=[inj.middleware()], extra_tools=True)
        return srv, Client(srv, mode="legacy", **kw)
    srv = build_travel_server(extra_tools=True)
    return srv, Client(inj.wrap(memory_transport(srv)), **kw)


LAYERS = ("transport", "middleware")


def run(coro_fn):
    async def main():
        with anyio.fail_after(30):
            return await coro_fn()

    return anyio.run(main)


@pytest.mark.parametrize("layer", LAYERS)
def test_timeout_raises_the_sdk_timeout(layer):
    async def go():
        inj = _inj("timeout", tool="echo")
        _, client = await _client_for(layer, inj, read_timeout_seconds=0.2)
        async with client as c:
            with pytest.raises(MCPError) as e:  # the client's own read timeout
                await c.call_tool("echo", {"text": "a"})
            assert e.value.code == REQUEST_TIMEOUT
            # other tools on the same connection are untouched
            r = await c.call_tool("lookup_airport", {"city": "Paris"})
            assert '"CDG"' in r.content[0].text

    run(go)


def test_timeout_leaves_no_server_task_behind():
    async def go():
        inj = _inj("timeout", tool="slow", persistence=Persistence.TRANSIENT, duration=1)
        srv_mw = build_travel_server(middleware=[inj.middleware()], extra_tools=True)
        async with Client(srv_mw, mode="legacy", read_timeout_seconds=0.2) as c:
            with pytest.raises(MCPError):
                await c.call_tool("slow", {"seconds": 0.0})
            await anyio.sleep(0.1)
            assert inj.cancelled_ == 1  # the held handler observed the cancellation
            r = await c.call_tool("slow", {"seconds": 0.0})  # next call succeeds
            assert not r.is_error
        assert srv_mw.test_state["slow_finished"] == 1  # only the second call ran to the end

    run(go)


@pytest.mark.parametrize("layer", LAYERS)
def test_protocol_error_code(layer):
    async def go():
        inj = _inj("protocol_error", tool="echo", error_code=-32050)
        _, client = await _client_for(layer, inj)
        async with client as c:
            with pytest.raises(MCPError) as e:
                await c.call_tool("echo", {"text": "a"})
            assert e.value.code == -32050

    run(go)


@pytest.mark.parametrize("layer", LAYERS)
def test_tool_error_empty_malformed(layer):
    async def go():
        inj = FaultInjector(FaultProfile(rules=(
            FaultRule(tool="echo_text", mode=FaultMode.TOOL_ERROR),
            FaultRule(tool="get_weather", mode=FaultMode.EMPTY_RESULT),
            FaultRule(tool="echo", mode=FaultMode.MALFORMED_RESULT),
            FaultRule(tool="get_fare", mode=FaultMode.MALFORMED_RESULT),
        )))
        _, client = await _client_for(layer, inj)
        async with client as c:
            r = await c.call_tool("echo_text", {"text": "a"})
            assert r.is_error is True
            assert any(s in r.content[0].text for s in ("429", "503", "401"))
            r = await c.call_tool("get_weather", {"city": "Paris", "date": "d"})
            assert r.content == [] and r.structured_content is None
            with pytest.raises(RuntimeError, match="Invalid structured content"):
                await c.call_tool("echo", {"text": "a"})  # output schema violated
            r = await c.call_tool("get_fare", {"flight": "AB1"})
            import json

            with pytest.raises(json.JSONDecodeError):
                json.loads(r.content[0].text)  # truncated JSON text

    run(go)


@pytest.mark.parametrize("layer", LAYERS)
def test_empty_result_on_a_tool_with_an_output_schema_is_valid_for_it(layer):
    """Issue 14, bug 5: the SDK client used to raise on an empty result of ``echo``."""

    async def go():
        inj = FaultInjector(FaultProfile(rules=(FaultRule(tool="echo",
                                                          mode=FaultMode.EMPTY_RESULT),)))
        _, client = await _client_for(layer, inj)
        async with client as c:
            tools = {t.name: t for t in (await c.list_tools()).tools}
            assert tools["echo"].output_schema is not None
            r = await c.call_tool("echo", {"text": "a"})
            assert r.content == [] and r.structured_content == {"result": ""}
            assert r.is_error is not True

    run(go)


def test_empty_instance_is_valid_for_its_schema():
    jsonschema = pytest.importorskip("jsonschema")
    from neurips26.papers.mcp_injector import empty_instance

    schemas = [
        {"type": "object", "properties": {"a": {"type": "string", "minLength": 2},
                                          "b": {"type": "integer", "minimum": 3},
                                          "c": {"type": "array", "minItems": 1,
                                                "items": {"type": "boolean"}},
                                          "d": {"enum": ["x", "y"]}},
         "required": ["a", "b", "c", "d"]},
        {"$defs": {"P": {"type": "object", "properties": {"n": {"type": "number",
                                                                "exclusiveMinimum": 0}},
                         "required": ["n"]}},
         "type": "object", "properties": {"p": {"$ref": "#/$defs/P"}}, "required": ["p"]},
        {"anyOf": [{"type": "string"}, {"type": "integer"}]},
        {"type": ["object", "null"]},
        {},
    ]
    for schema in schemas:
        jsonschema.validate(empty_instance(schema), schema)
    with pytest.raises(TypeError, match="schema"):
        empty_instance(None)
    with pytest.raises(ValueError, match="schema"):
        empty_instance({"$ref": "#"})  # a schema that refers to itself forever


def test_connection_drop_ends_connection():
    async def go():
        inj = _inj("connection_drop", tool="book")
        srv = build_travel_server()
        async with Client(inj.wrap(memory_transport(srv))) as c:
            await c.call_tool("get_fare", {"flight": "x"})
            with pytest.raises(MCPError) as e:
                await c.call_tool("book", {"flight": "x", "passenger": "p"})
            assert e.value.code == CONNECTION_CLOSED
            with pytest.raises(MCPError):
                await c.call_tool("get_fare", {"flight": "x"})

    run(go)


@pytest.mark.parametrize("layer", LAYERS)
def test_transparent_with_empty_profile(layer):
    async def go():
        srv = build_travel_server(extra_tools=True)
        inj = FaultInjector(FaultProfile())
        _, client = await _client_for(layer, inj)
        calls = [("echo", {"text": f"t{i}"}) if i % 3 == 0 else
                 ("search_flights", {"origin": "CDG", "destination": "LHR", "date": str(i)})
                 if i % 3 == 1 else ("convert_currency", {"amount": i, "currency": "EUR"})
                 for i in range(100)]
        mode = "legacy" if layer == "middleware" else "auto"
        async with Client(srv, mode=mode) as d, client as c:
            tools_d = (await d.list_tools()).model_dump()
            tools_c = (await c.list_tools()).model_dump()
            assert tools_d["tools"] == tools_c["tools"]
            for name, args in calls:
                a = (await d.call_tool(name, args)).model_dump(exclude={"meta"})
                b = (await c.call_tool(name, args)).model_dump(exclude={"meta"})
                assert a == b
        assert inj.log_ == [] and sum(inj.calls_.values()) == 100

    run(go)


def test_counters_are_per_connection():
    async def go():
        rule = FaultRule(tool="get_fare", mode=FaultMode.TOOL_ERROR,
                         persistence=Persistence.TRANSIENT, onset=1, duration=1)
        inj = FaultInjector(FaultProfile(rules=(rule,)))
        srv = build_travel_server()
        out = []
        for _ in range(2):
            async with Client(inj.wrap(memory_transport(srv))) as c:
                out.append([(await c.call_tool("get_fare", {"flight": "x"})).is_error
                            for _ in range(3)])
        assert out == [[False, True, False], [False, True, False]]
        assert {(r["connection"], r["call_index"]) for r in inj.faults()} == {
            ("conn-0", 1), ("conn-1", 1)}

    run(go)


def test_same_seed_replays_and_log_replays_outcomes(tmp_path):
    kw = dict(sizes=("large",), stacks=("obs_loop",), conditions=("uniform_severe",),
              num_tasks=3, client_timeout=0.5)  # real seconds: loose under load
    a = run_grid(seed=2, **kw)
    b = run_grid(seed=2, **kw)
    c = run_grid(seed=3, **kw)
    assert a.faults == b.faults and len(a.faults["uniform_severe"]) > 0
    assert a.faults != c.faults
    sched = FaultSchedule.from_log(a.faults["uniform_severe"])
    r = run_grid(**{**kw, "conditions": {"uniform_severe": sched}}, seed=2)
    assert r.faults == a.faults
    assert r.cells.completion.tolist() == a.cells.completion.tolist()


def test_injector_bad_input_and_strict():
    with pytest.raises(TypeError, match="FaultProfile"):
        FaultInjector({"rules": []})
    with pytest.raises(TypeError, match="async context manager"):
        FaultInjector(FaultProfile()).wrap(object())
    inj = FaultInjector(FaultProfile(rules=(FaultRule(tool="nope_*"),)), strict=True)
    with pytest.raises(ValueError, match="match no tool"):
        inj.check_tools(["book"])
    with pytest.warns(UserWarning, match="nope_"):
        FaultInjector(FaultProfile(rules=(FaultRule(tool="nope_*"),))).check_tools(["book"])
    with pytest.raises(ValueError, match="transport"):
        run_grid(transport="carrier-pigeon")
    with pytest.raises(ValueError, match="unknown conditions"):
        run_grid(conditions=("apocalypse",))


def test_calibrated_profile_through_sdk_injects_several_modes():
    g = run_grid(sizes=("large",), stacks=("retry_backoff",), conditions=("uniform_severe",),
                 num_tasks=10, seed=0)
    modes = {r["mode"] for r in g.faults["uniform_severe"]}
    assert len(modes) >= 4


@pytest.mark.parametrize("layer", LAYERS)
def test_rate_limit_carries_a_retry_after_hint(layer):
    """A rate limit tells the client when to retry, in the text and machine-readably."""

    async def go():
        inj = FaultInjector(FaultProfile(rules=(
            FaultRule(tool="echo_text", mode=FaultMode.TOOL_ERROR, retry_after_s=2.5),
            FaultRule(tool="echo", mode=FaultMode.PROTOCOL_ERROR, retry_after_s=0.75,
                      error_code=-32029),
        )))  # fmt: skip
        _, client = await _client_for(layer, inj)
        async with client as c:
            r = await c.call_tool("echo_text", {"text": "a"})
            assert r.is_error and "retry after 2.5 s" in r.content[0].text
            assert r.meta["retryAfter"] == 2.5
            with pytest.raises(MCPError) as e:
                await c.call_tool("echo", {"text": "a"})
            assert e.value.code == -32029 and e.value.error.data == {"retryAfter": 0.75}
        assert [f["retry_after_s"] for f in inj.faults()] == [2.5, 0.75]

    run(go)


def test_virtual_clock_makes_outcomes_independent_of_machine_speed(monkeypatch):
    """A server that is 3x slower than the client timeout changes nothing on the virtual
    clock; on the real clock the same grid times out."""
    import time

    from neurips26.papers.mcp_injector import travel

    kw = dict(sizes=("large",), stacks=("obs_loop",), conditions=("none", "uniform_severe"),
              num_tasks=1, seed=1, client_timeout=0.05)  # fmt: skip
    fast = run_grid(**kw)
    answer = travel.tool_answer

    def slow_answer(tool, args):
        time.sleep(0.15)  # a loaded machine: the tool blocks 3x the client timeout
        return answer(tool, args)

    monkeypatch.setattr(travel, "tool_answer", slow_answer)
    slow = run_grid(**kw)
    assert slow.faults == fast.faults
    assert slow.cells.completion.tolist() == fast.cells.completion.tolist()
    real = run_grid(**{**kw, "conditions": ("none",), "num_tasks": 1}, clock="real")
    assert real.cells.completion.max() < 1.0  # every call timed out in real time
    with pytest.raises(ValueError, match="clock"):
        run_grid(clock="sundial")
    with pytest.raises(ValueError, match="clock"):
        run_grid(clock="virtual", transport="stdio")
