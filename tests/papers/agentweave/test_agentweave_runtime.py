"""Real clock: the same schedulers drive async callables (asyncio), with faults."""

import asyncio

import pytest

from neurips26.papers.agentweave import (
    AgentWeaveScheduler,
    AggregatedScheduler,
    DisaggregatedScheduler,
    ModuleError,
    ModuleSpec,
    Request,
    Workflow,
    run_async,
)

CALLS: list = []


def make_fn(tag, dt=0.01):
    async def fn(payload, upstream):
        CALLS.append((payload, tag))
        await asyncio.sleep(dt)
        return f"{tag}({payload}|{','.join(sorted(upstream.values()))})"

    return fn


def flaky(tag, fail_times):
    state = {"n": 0}

    async def fn(payload, upstream):
        state["n"] += 1
        await asyncio.sleep(0.005)
        if state["n"] <= fail_times:
            raise ConnectionError("tool endpoint down")
        return f"{tag}({payload})"

    return fn


def agent_workflow(i, plan_time=0.01):
    # plan -> (search || lookup) -> answer ; a DAG with a fork and a join
    mods = (
        ModuleSpec("plan", "llm", 200, 20, fn=make_fn("plan", plan_time)),
        ModuleSpec("search", "tool", tool_latency=0.02, fn=make_fn("search", 0.02)),
        ModuleSpec("lookup", "tool", tool_latency=0.01, fn=make_fn("lookup")),
        ModuleSpec("answer", "llm", 400, 40, fn=make_fn("answer")),
    )
    edges = (("plan", "search"), ("plan", "lookup"), ("search", "answer"), ("lookup", "answer"))
    return Workflow(f"agent{i}", mods, edges)


def schedulers():
    part = {"plan": (0, 1), "answer": (2,)}
    return [
        AgentWeaveScheduler(num_workers=3, policy="adaptive", sched_overhead=0.0),
        AgentWeaveScheduler(num_workers=3, policy="always", sched_overhead=0.0),
        AgentWeaveScheduler(num_workers=3, policy="never", sched_overhead=0.0),
        AggregatedScheduler(num_workers=3, batch_size=2),
        DisaggregatedScheduler(num_workers=3, partition=part),
    ]


def check(reqs, res):
    tr = res.trace
    assert sorted(res.latencies) == [r.id for r in reqs]  # every request completes once
    assert not tr.duplicated(["request", "module"]).any()  # no unit duplicated
    assert len(tr) == sum(len(r.workflow.modules) for r in reqs)  # none lost
    end = {(r, m): e for r, m, e in zip(tr.request, tr.module, tr.end, strict=True)}
    for row in tr.itertuples():
        for p in reqs[row.request].workflow.preds[row.module]:
            assert row.start >= end[(row.request, p)]  # in order within its flow
    for r in reqs:
        out = res.outputs[r.id]
        assert out["answer"] == (
            f"answer({r.payload}|lookup({r.payload}|plan({r.payload}|)),"
            f"search({r.payload}|plan({r.payload}|)))"
        )


@pytest.mark.parametrize("idx", range(5))
def test_real_clock_workload_completes_in_order(idx):
    reqs = [Request(i, agent_workflow(i), arrival=0.005 * i, payload=f"q{i}") for i in range(8)]
    res = run_async(schedulers()[idx], reqs, timeout=10.0)
    check(reqs, res)
    assert res.num_retries == 0
    assert res.wall_time < 5.0


@pytest.mark.parametrize("idx", range(5))
def test_worker_failure_and_retries_lose_nothing(idx):
    # every worker is busy planning (50 ms) when worker 1 dies at 20 ms: its in-flight
    # modules are cancelled and must run again elsewhere ...
    reqs = [Request(i, agent_workflow(i, 0.05), payload=f"q{i}") for i in range(10)]
    res = run_async(schedulers()[idx], reqs, timeout=10.0, fail_workers={1: 0.02})
    check(reqs, res)
    assert res.num_retries >= 1
    assert (res.trace[res.trace.start > 0.02].worker != 1).all()  # nothing runs there after
    # ... and a flaky module raises before succeeding
    wf = Workflow.chain(
        "flaky",
        [
            ModuleSpec("plan", "llm", 10, 5, fn=make_fn("plan")),
            ModuleSpec("call", "tool", fn=flaky("call", 2)),
        ],
    )
    res = run_async(schedulers()[idx], [Request(0, wf, payload="x")], timeout=10.0)
    assert res.outputs[0]["call"] == "call(x)" and res.num_retries == 2


def test_give_up_after_max_retries_and_timeout():
    wf = Workflow.chain("bad", [ModuleSpec("call", "tool", fn=flaky("call", 99))])
    with pytest.raises(ModuleError, match="failed 2 times"):
        run_async(AgentWeaveScheduler(num_workers=1), [Request(0, wf)], max_retries=1, timeout=5)

    async def forever(payload, upstream):
        await asyncio.sleep(100)

    slow = Workflow.chain("slow", [ModuleSpec("s", "llm", fn=forever)])
    with pytest.raises(TimeoutError, match=r"did not finish within 0\.2 s"):
        run_async(AgentWeaveScheduler(num_workers=1), [Request(0, slow)], timeout=0.2)


def test_real_clock_bad_input():
    wf = Workflow.chain("nofn", [ModuleSpec("a", "llm", 1, 1)])
    with pytest.raises(TypeError, match="has no callable"):
        run_async(AgentWeaveScheduler(num_workers=1), [Request(0, wf)])
    with pytest.raises(ValueError, match="fail_workers names worker 5"):
        run_async(
            AgentWeaveScheduler(num_workers=1),
            [Request(0, agent_workflow(0))],
            fail_workers={5: 0.1},
        )
    with pytest.raises(TypeError, match="must be a Scheduler"):
        run_async(object(), [])


def test_adaptive_never_cuts_when_alone_and_cuts_under_queueing():
    """On the real clock too: one lonely request stays one unit; a crowd gets decomposed."""
    chain = Workflow.chain(
        "c", [ModuleSpec(f"m{i}", "llm", 100, 10, fn=make_fn(f"m{i}", 0.003)) for i in range(4)]
    )
    s = AgentWeaveScheduler(num_workers=1, policy="adaptive", sched_overhead=0.0)
    res = run_async(s, [Request(0, chain)], timeout=5.0)
    assert res.trace.unit.nunique() == 1 and s.num_cuts == 0
    from neurips26.papers.agentweave import LatencyModel

    s = AgentWeaveScheduler(
        num_workers=1, policy="adaptive", sched_overhead=0.0, latency=LatencyModel(max_batch=2)
    )
    res = run_async(s, [Request(i, chain) for i in range(6)], timeout=5.0)
    assert s.num_cuts > 0 and res.trace.unit.nunique() > 6


def cancelled_once(tag):
    """A module whose first attempt is cancelled from inside (an awaited call cancelled)."""
    state = {"n": 0}

    async def fn(payload, upstream):
        state["n"] += 1
        await asyncio.sleep(0.005)
        if state["n"] == 1:
            raise asyncio.CancelledError
        return f"{tag}({payload}|{','.join(sorted(upstream.values()))})"

    return fn


@pytest.mark.parametrize("idx", range(5))
def test_module_cancelled_from_inside_is_retried_not_lost(idx):
    # Before, a CancelledError raised inside a module (not a worker failure) left the unit
    # running forever and the run hung until its timeout.
    reqs = [Request(i, agent_workflow(i), payload=f"q{i}") for i in range(4)]
    mods = list(reqs[2].workflow.modules)
    mods[1] = ModuleSpec("search", "tool", tool_latency=0.02, fn=cancelled_once("search"))
    reqs[2] = Request(2, Workflow("agent2", tuple(mods), reqs[2].workflow.edges), payload="q2")
    res = run_async(schedulers()[idx], reqs, timeout=10.0, fail_workers={1: 0.005})
    check(reqs, res)
    assert res.num_retries >= 1


def test_sync_module_callable_gets_a_clear_error_and_no_retries():
    calls = []

    def not_async(payload, upstream):
        calls.append(payload)
        return "x"

    wf = Workflow.chain("sync", [ModuleSpec("a", "llm", 1, 1, fn=not_async)])
    with pytest.raises(TypeError, match="not an awaitable"):
        run_async(AgentWeaveScheduler(num_workers=1), [Request(0, wf, payload="p")], timeout=5.0)
    assert calls == ["p"]
