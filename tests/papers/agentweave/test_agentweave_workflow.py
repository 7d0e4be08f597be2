"""Workflows, flow decomposition, latency model and bad input."""

import math

import networkx as nx
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from neurips26.papers.agentweave import (
    TEMPLATES,
    AgentWeaveScheduler,
    AggregatedScheduler,
    DisaggregatedScheduler,
    FlowAdaptivePolicy,
    LatencyModel,
    ModuleSpec,
    Request,
    RequestState,
    StaticPolicy,
    SystemState,
    Workflow,
    critical_path_latency,
    disaggregated_partition,
    flow_decompose,
    poisson_arrivals,
    simulate,
)


def llm(name, p=100, o=10):
    return ModuleSpec(name, "llm", p, o)


def random_dag(draw, max_n=7):
    n = draw(st.integers(1, max_n))
    edges = [(i, j) for i in range(n) for j in range(i + 1, n) if draw(st.booleans())]
    kinds = [draw(st.sampled_from(["llm", "tool"])) for _ in range(n)]
    mods = tuple(
        ModuleSpec(
            f"m{i}",
            k,
            draw(st.integers(1, 300)),
            draw(st.integers(1, 30)),
            tool_latency=draw(st.floats(0.0, 0.5)),
        )
        for i, k in enumerate(kinds)
    )
    return Workflow("rand", mods, tuple(edges))


@st.composite
def dags(draw):
    return random_dag(draw)


def test_workflow_accepts_names_and_builds_adjacency():
    wf = Workflow("w", (llm("a"), llm("b"), llm("c")), (("a", "b"), ("a", "c")))
    assert wf.edges == ((0, 1), (0, 2))
    assert wf.preds == ((), (0,), (0,))
    assert wf.succs == ((1, 2), (), ())
    assert wf.sources == (0,)
    assert wf.index("c") == 2


def test_cycle_is_named():
    with pytest.raises(ValueError, match=r"cycle: a -> b -> c -> a"):
        Workflow("w", (llm("a"), llm("b"), llm("c")), (("a", "b"), ("b", "c"), ("c", "a")))


@pytest.mark.parametrize("edge", [("a", "zzz"), (0, 7), (-1, 0)])
def test_missing_module_in_edge(edge):
    with pytest.raises(ValueError, match="missing module"):
        Workflow("w", (llm("a"), llm("b")), (edge,))


def test_bad_modules():
    with pytest.raises(ValueError, match="prompt_tokens must be >= 0"):
        ModuleSpec("a", "llm", -1, 5)
    with pytest.raises(ValueError, match="tool_latency must be finite and >= 0"):
        ModuleSpec("t", "tool", tool_latency=-0.1)
    with pytest.raises(ValueError, match="tool_latency"):
        ModuleSpec("t", "tool", tool_latency=math.nan)
    with pytest.raises(ValueError, match="kind must be one of"):
        ModuleSpec("a", "gpu")
    with pytest.raises(TypeError, match="fn must be an async callable"):
        ModuleSpec("a", "llm", fn=42)
    with pytest.raises(ValueError, match="duplicate module names"):
        Workflow("w", (llm("a"), llm("a")))
    with pytest.raises(ValueError, match="no modules"):
        Workflow("w", ())
    with pytest.raises(TypeError, match="must be ModuleSpec"):
        Workflow("w", ("a",))


def test_bad_scheduler_and_run_arguments():
    with pytest.raises(ValueError, match=r"num_workers must lie in \[1, "):
        AgentWeaveScheduler(num_workers=0)
    with pytest.raises(TypeError, match="num_workers must be an int"):
        AggregatedScheduler(num_workers=2.5)
    with pytest.raises(ValueError, match="granularity must be >= 1"):
        flow_decompose(Workflow.chain("c", [llm("a")]), granularity=0)
    with pytest.raises(ValueError, match="granularity must be >= 1"):
        StaticPolicy(granularity=0)
    with pytest.raises(ValueError, match="reserves devices"):
        DisaggregatedScheduler(num_workers=2, partition={"a": (0, 1), "b": (2,)})
    with pytest.raises(ValueError, match="batch_size"):
        AggregatedScheduler(num_workers=1, batch_size=64)
    with pytest.raises(ValueError, match="policy must be one of"):
        AgentWeaveScheduler(num_workers=1, policy="sometimes")
    with pytest.raises(ValueError, match="kappa must be > 0"):
        FlowAdaptivePolicy(kappa=0)
    with pytest.raises(ValueError, match="rate must be > 0"):
        poisson_arrivals([TEMPLATES["rag"]], rate=0.0, horizon=10, seed=0)
    with pytest.raises(ValueError, match="warmup < horizon"):
        simulate(AgentWeaveScheduler(num_workers=1), [], horizon=10.0, warmup=10.0)
    with pytest.raises(ValueError, match="max_batch must be >= 1"):
        LatencyModel(max_batch=0)
    with pytest.raises(ValueError, match="submitted twice"):
        s = AgentWeaveScheduler(num_workers=1)
        wf = Workflow.chain("c", [llm("a")])
        s.submit(Request(0, wf), 0.0)
        s.submit(Request(0, wf), 0.0)


@settings(max_examples=40, deadline=None)
@given(dags(), st.integers(1, 8))
def test_flow_decompose_preserves_precedence(wf, g):
    units = flow_decompose(wf, granularity=g)
    covered = [m for u in units for m in u.modules]
    assert sorted(covered) == list(range(len(wf.modules)))  # every module exactly once
    assert all(1 <= len(u.modules) <= g for u in units)
    assert len(units) == math.ceil(len(wf.modules) / g)
    unit_of = {m: u.index for u in units for m in u.modules}
    q = nx.DiGraph()
    q.add_nodes_from(range(len(units)))
    for a, b in wf.edges:
        assert unit_of[a] <= unit_of[b]  # edges never point backwards
        if unit_of[a] != unit_of[b]:
            q.add_edge(unit_of[a], unit_of[b])
            assert unit_of[a] in units[unit_of[b]].preds
    assert nx.is_directed_acyclic_graph(q)
    assert len(flow_decompose(wf, granularity=None)) == 1


def test_solo_time_closed_form():
    lm = LatencyModel(c0=0.01, c_prefill=0.001, c_decode=0.1)
    m = ModuleSpec("a", "llm", prompt_tokens=20, output_tokens=3)
    assert lm.solo_time(m) == pytest.approx((0.01 + 0.02) + 3 * 0.11)
    assert lm.solo_time(ModuleSpec("t", "tool", tool_latency=0.7)) == 0.7
    wf = Workflow(
        "d",
        (m, ModuleSpec("t", "tool", tool_latency=0.7), m.__class__("b", "llm", 0, 1)),
        ((0, 2), (1, 2)),
    )
    assert critical_path_latency(wf, lm) == pytest.approx(max(0.36, 0.7) + 0.01 + 0.11)


def test_templates_are_valid_and_seeded():
    for name, t in TEMPLATES.items():
        a = t(rng=np.random.default_rng(3))
        b = t(rng=np.random.default_rng(3))
        assert a == b, name
        assert a.name in ("react", "rag", "debate", "code")
    deb = TEMPLATES["debate"](rng=np.random.default_rng(0))
    assert len(deb.modules) == 7 and deb.preds[6] == (3, 4, 5)
    react_k = [
        sum(
            m.role == "react.reason"
            for m in TEMPLATES["react"](rng=np.random.default_rng(s)).modules
        )
        for s in range(2000)
    ]
    assert np.mean(react_k) == pytest.approx(1 / 0.35, rel=0.06)  # Geometric(0.35) on {1,2,..}


def test_poisson_arrivals_rate():
    reqs = poisson_arrivals([TEMPLATES["rag"]], rate=5.0, horizon=400.0, seed=1)
    assert len(reqs) == pytest.approx(2000, rel=0.08)
    assert [r.id for r in reqs] == list(range(len(reqs)))
    assert np.all(np.diff([r.arrival for r in reqs]) > 0)


def test_partition_proportional_and_never_packed():
    assert disaggregated_partition({"a": 1.0, "b": 1.0}, 4) == {"a": (0, 1), "b": (2, 3)}
    p = disaggregated_partition({"a": 5.0, "b": 1.0, "c": 1.0, "d": 1.0}, 6)
    assert p == {"a": (0, 1, 2), "b": (3,), "c": (4,), "d": (5,)}  # D'Hondt, one each
    with pytest.raises(ValueError, match="needs a device per role: 4 roles"):
        disaggregated_partition({"a": 5.0, "b": 1.0, "c": 1.0, "d": 1.0}, 2)


def test_policies():
    rs = RequestState(0, unit_size=1, num_ready=1, expected_remaining=1.0, expected_ctx_cost=0.02)
    pol = FlowAdaptivePolicy(kappa=1.0)
    assert not pol.should_cut(rs, SystemState(0, 0, 0.05))  # nobody to unblock
    assert pol.should_cut(rs, SystemState(1, 0, 0.05))  # 1 x 1.0 > 0.07
    assert not FlowAdaptivePolicy(kappa=100.0).should_cut(rs, SystemState(1, 0, 0.05))
    assert pol.should_cut(rs, SystemState(0, 1, 0.05))  # a co-batched request counts too
    assert StaticPolicy(granularity=1).should_cut(rs, SystemState(0, 0, 0.0))
    assert not StaticPolicy(granularity=None).should_cut(rs, SystemState(9, 9, 0.0))
    assert not StaticPolicy(granularity=2).should_cut(rs, SystemState(0, 0, 0.0))
