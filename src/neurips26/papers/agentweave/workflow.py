"""Agent workflows as DAGs of modules, flow decomposition into units, and the latency model.

An agent application is a workflow: a directed acyclic graph whose nodes are *modules*
(LLM calls and tool invocations) and whose edges are precedence constraints. AgentWeave's
flow decomposition cuts one request's workflow into *execution units*: sets of modules run
together on one worker, such that the units keep the workflow's dependencies. This module
holds the data types (:class:`ModuleSpec`, :class:`Workflow`, :class:`Request`), the static
decomposition :func:`flow_decompose`, the parametric continuous-batching latency model
:class:`LatencyModel`, the four workflow templates of the reproduction and
:func:`poisson_arrivals`.

Deviations from the paper
-------------------------
- The latency constants (c0 = 5 ms, c_p = 0.08 ms/token, c_d = 0.25 ms/sequence) are our
  calibration to a 7B model on one GPU, not measurements; every simulated result is
  conditional on them.
- The four templates (ReAct loop, RAG, multi-agent debate, coding agent) stand in for the
  paper's four applications; their token and tool-latency distributions are ours.
- ReAct's loop count is K = Geometric(0.35) on {1, 2, ...} (mean 2.86); the spec's
  "1 + Geometric(0.35)" is ambiguous about the support. ReAct loops and coding-agent fix
  rounds are capped at ``MAX_ITERATIONS = 10`` (agent frameworks cap iterations), so a
  request's whole context always fits one device's KV cache.
- KV-cache memory per device (``LatencyModel.kv_capacity``) is our calibration (a 7B
  model on a 40 GB device); contexts are held in KV memory across tool calls.
"""

from __future__ import annotations

import math
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import networkx as nx
import numpy as np

from neurips26.common.validation import (
    check_array,
    check_float,
    check_int,
    check_rng,
    check_seed,
    check_size,
)

__all__ = [
    "KINDS",
    "TEMPLATES",
    "LatencyModel",
    "ModuleSpec",
    "Request",
    "Unit",
    "Workflow",
    "code_agent",
    "critical_path_latency",
    "debate",
    "flow_decompose",
    "kv_tokens",
    "poisson_arrivals",
    "rag_pipeline",
    "react_loop",
]

KINDS = ("llm", "tool")


@dataclass(frozen=True)
class ModuleSpec:
    """One module of an agent workflow: an LLM call or a tool invocation.

    Parameters
    ----------
    name : str
        Unique within its workflow (``"reason_0"``); upstream outputs are keyed by it.
    kind : {"llm", "tool"}
        An LLM module runs on a worker (a device) and needs a batch slot; a tool does not.
    prompt_tokens : int
        Prompt tokens ``P_m`` prefilled by an LLM module (simulated clock; also used to
        predict its service time).
    output_tokens : int
        Output tokens ``O_m`` decoded by an LLM module.
    tool_latency : float
        Seconds a tool module takes (simulated clock; the prediction on the real clock).
    role : str or None
        Module type for disaggregated serving (modules of one role share a device pool)
        and for statistics; defaults to ``name``.
    fn : async callable or None
        ``async fn(payload, upstream) -> output`` run on the real clock; ``upstream`` maps
        the names of the module's predecessors to their outputs.

    Examples
    --------
    >>> ModuleSpec("answer", "llm", prompt_tokens=800, output_tokens=120).role
    'answer'
    """

    name: str
    kind: str
    prompt_tokens: int = 0
    output_tokens: int = 0
    tool_latency: float = 0.0
    role: str | None = None
    fn: Callable[..., Awaitable[Any]] | None = field(default=None, compare=False, repr=False)

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name:
            raise ValueError(f"module name must be a non-empty string, got {self.name!r}")
        if self.kind not in KINDS:
            raise ValueError(
                f"module {self.name!r}: kind must be one of {KINDS}, got {self.kind!r}"
            )
        for attr in ("prompt_tokens", "output_tokens"):
            v = getattr(self, attr)
            if isinstance(v, bool) or not isinstance(v, (int, np.integer)):
                raise TypeError(f"module {self.name!r}: {attr} must be an int, got {v!r}")
            if v < 0:
                raise ValueError(f"module {self.name!r}: {attr} must be >= 0, got {v}")
            object.__setattr__(self, attr, int(v))
        lat = self.tool_latency
        if isinstance(lat, bool) or not isinstance(lat, (int, float, np.floating, np.integer)):
            raise TypeError(f"module {self.name!r}: tool_latency must be a number, got {lat!r}")
        if not math.isfinite(lat) or lat < 0:
            raise ValueError(
                f"module {self.name!r}: tool_latency must be finite and >= 0, got {lat}"
            )
        object.__setattr__(self, "tool_latency", float(lat))
        if self.fn is not None and not callable(self.fn):
            raise TypeError(
                f"module {self.name!r}: fn must be an async callable, got {type(self.fn).__name__}"
            )
        if self.role is None:
            object.__setattr__(self, "role", self.name)


@dataclass(frozen=True)
class Workflow:
    """A workflow: modules and precedence edges forming a DAG.

    Parameters
    ----------
    name : str
        Template or application name.
    modules : sequence of ModuleSpec
        The ``n`` modules; a module is referred to by its index or its name.
    edges : sequence of (int or str, int or str)
        Precedence edges ``(u, v)``: ``v`` starts only after ``u`` finished. Names are
        converted to indices.

    Raises
    ------
    ValueError
        On a cycle (the message names it), an edge naming a missing module, duplicate
        module names or an empty workflow.
    TypeError
        When a module is not a :class:`ModuleSpec`.

    Examples
    --------
    >>> wf = Workflow("qa", (ModuleSpec("search", "tool", tool_latency=0.1),
    ...                      ModuleSpec("answer", "llm", prompt_tokens=500, output_tokens=50)),
    ...               (("search", "answer"),))
    >>> wf.edges, wf.sources
    (((0, 1),), (0,))
    """

    name: str
    modules: tuple[ModuleSpec, ...]
    edges: tuple[tuple[int, int], ...] = ()
    preds: tuple[tuple[int, ...], ...] = field(init=False, repr=False, compare=False)
    succs: tuple[tuple[int, ...], ...] = field(init=False, repr=False, compare=False)
    topo_order: tuple[int, ...] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        modules = tuple(self.modules)
        if not modules:
            raise ValueError(f"workflow {self.name!r} has no modules")
        for m in modules:
            if not isinstance(m, ModuleSpec):
                raise TypeError(
                    f"workflow {self.name!r}: modules must be ModuleSpec, got {type(m).__name__}"
                )
        names = [m.name for m in modules]
        if len(set(names)) != len(names):
            dup = sorted({x for x in names if names.count(x) > 1})
            raise ValueError(f"workflow {self.name!r}: duplicate module names {dup}")
        index = {n: i for i, n in enumerate(names)}
        n = len(modules)

        def resolve(x):
            if isinstance(x, str):
                if x not in index:
                    raise ValueError(
                        f"workflow {self.name!r}: edge references missing module {x!r}; "
                        f"modules are {names}"
                    )
                return index[x]
            if isinstance(x, bool) or not isinstance(x, (int, np.integer)) or not 0 <= x < n:
                raise ValueError(
                    f"workflow {self.name!r}: edge references missing module {x!r}; "
                    f"valid indices are 0..{n - 1}"
                )
            return int(x)

        edges = []
        for e in self.edges:
            if len(e) != 2:
                raise ValueError(f"workflow {self.name!r}: an edge is a pair (u, v), got {e!r}")
            edges.append((resolve(e[0]), resolve(e[1])))
        g = nx.DiGraph()
        g.add_nodes_from(range(n))
        g.add_edges_from(edges)
        try:
            cycle = nx.find_cycle(g)
        except nx.NetworkXNoCycle:
            cycle = None
        if cycle is not None:
            path = " -> ".join(names[u] for u, _ in cycle) + f" -> {names[cycle[0][0]]}"
            raise ValueError(f"workflow {self.name!r} has a cycle: {path}")
        object.__setattr__(self, "modules", modules)
        object.__setattr__(self, "edges", tuple(dict.fromkeys(edges)))
        object.__setattr__(self, "preds", tuple(tuple(sorted(g.predecessors(i))) for i in range(n)))
        object.__setattr__(self, "succs", tuple(tuple(sorted(g.successors(i))) for i in range(n)))
        object.__setattr__(self, "topo_order", tuple(nx.lexicographical_topological_sort(g)))

    @property
    def sources(self) -> tuple[int, ...]:
        """Modules without predecessors."""
        return tuple(i for i, p in enumerate(self.preds) if not p)

    def index(self, name: str) -> int:
        """Index of the module called ``name``."""
        for i, m in enumerate(self.modules):
            if m.name == name:
                return i
        raise KeyError(f"workflow {self.name!r} has no module {name!r}")

    @classmethod
    def chain(cls, name: str, modules: Sequence[ModuleSpec]) -> Workflow:
        """A sequential workflow ``m0 -> m1 -> ...``."""
        return cls(name, tuple(modules), tuple((i, i + 1) for i in range(len(modules) - 1)))


@dataclass(frozen=True)
class Request:
    """One workflow instance submitted at ``arrival`` (seconds) with an optional ``payload``."""

    id: int
    workflow: Workflow
    arrival: float = 0.0
    payload: Any = field(default=None, compare=False)

    def __post_init__(self) -> None:
        if not isinstance(self.workflow, Workflow):
            raise TypeError(f"request {self.id}: workflow must be a Workflow")
        if not math.isfinite(self.arrival) or self.arrival < 0:
            raise ValueError(f"request {self.id}: arrival must be finite and >= 0")


@dataclass(frozen=True)
class Unit:
    """An execution unit: modules of one request that run together on one worker.

    Attributes
    ----------
    index : int
        Position of the unit in the decomposition.
    modules : tuple of int
        Module indices, in topological order.
    preds : tuple of int
        Indices of the units it depends on (edges of the quotient DAG).
    """

    index: int
    modules: tuple[int, ...]
    preds: tuple[int, ...]


def flow_decompose(workflow: Workflow, *, granularity: int | float | None) -> tuple[Unit, ...]:
    """Flow decomposition: cut a workflow into precedence-preserving execution units.

    The modules are put in a canonical topological order (lexicographic by index) and cut
    into consecutive runs of at most ``g`` modules. Because every edge points forward in a
    topological order, the quotient graph of the units is again a DAG, so running units
    in dependency order never starts a module before its predecessors.

    Parameters
    ----------
    workflow : Workflow
        The request's workflow (``n`` modules).
    granularity : int, ``math.inf`` or None
        Modules per unit ``g >= 1``; ``g = 1`` is the finest decomposition ("always
        decompose") and ``None`` or ``inf`` keeps the request whole ("never").

    Returns
    -------
    tuple of Unit
        ``ceil(n / g)`` units covering every module exactly once.

    References
    ----------
    AgentWeave (NeurIPS 2026), flow decomposition.

    Examples
    --------
    >>> wf = Workflow.chain("c", [ModuleSpec(f"m{i}", "llm", 10, 5) for i in range(5)])
    >>> [u.modules for u in flow_decompose(wf, granularity=2)]
    [(0, 1), (2, 3), (4,)]
    """
    g = _check_granularity(granularity)
    order = workflow.topo_order
    n = len(order)
    size = n if g is None else g
    chunks = [tuple(order[i : i + size]) for i in range(0, n, size)]
    unit_of = {m: k for k, chunk in enumerate(chunks) for m in chunk}
    units = []
    for k, chunk in enumerate(chunks):
        preds = sorted({unit_of[p] for m in chunk for p in workflow.preds[m]} - {k})
        units.append(Unit(index=k, modules=chunk, preds=tuple(preds)))
    return tuple(units)


def _check_granularity(granularity) -> int | None:
    if granularity is None:
        return None
    if isinstance(granularity, float) and math.isinf(granularity):
        if granularity < 0:
            raise ValueError(f"granularity must be >= 1 or inf, got {granularity}")
        return None
    if isinstance(granularity, float):
        raise TypeError(f"granularity must be an int >= 1, inf or None, got {granularity!r}")
    return check_int(granularity, "granularity", min=1)


@dataclass(frozen=True)
class LatencyModel:
    """Iteration-level (continuous batching) latency model of one device.

    One iteration over the active batch takes
    ``c0 + c_prefill * (prefill tokens admitted) + c_decode * |decoding sequences|``
    (Eq. 1, inferred; it mirrors Orca/vLLM-style servers). An LLM module is prefilled in
    the iteration that admits it, then decodes one token per iteration.

    Parameters
    ----------
    c0 : float
        Fixed cost per iteration ``c0`` (s).
    c_prefill : float
        Cost per prefilled token ``c_p`` (s/token).
    c_decode : float
        Cost per decoding sequence ``c_d`` (s/sequence).
    max_batch : int
        Most sequences (and resident units) per device.
    hop_cost : float
        Fixed cost ``h`` (s) of moving a request's context to another device (a network
        hop), paid by every architecture whenever an LLM module runs on a device other
        than the one that ran the request's previous LLM module.
    kv_capacity : int or None
        KV-cache memory of one device in tokens ``M`` (None: unlimited). A request's
        context (the prompt and output tokens of its finished LLM modules) occupies KV
        memory wherever it is resident, also while the request waits for a tool; a
        running LLM module reserves ``P + O`` more. The default, 40,000 tokens, is a
        7B multi-head-attention model (0.5 MB of fp16 KV per token) on a 40 GB device
        after its 14 GB of weights and activation headroom.

    Notes
    -----
    Context moves cost the same in every architecture (one cost model): the context
    tokens not resident on the target device are re-prefilled there (``c_p`` per token,
    Eq. 1, on the device) plus the fixed hop ``h``.

    Examples
    --------
    >>> lm = LatencyModel()
    >>> round(lm.solo_time(ModuleSpec("a", "llm", prompt_tokens=1000, output_tokens=10)), 6)
    0.1375
    """

    c0: float = 5e-3
    c_prefill: float = 8e-5
    c_decode: float = 2.5e-4
    max_batch: int = 32
    hop_cost: float = 2e-3
    kv_capacity: int | None = 40_000

    def __post_init__(self) -> None:
        for attr in ("c0", "c_prefill", "c_decode", "hop_cost"):
            v = getattr(self, attr)
            if not isinstance(v, (int, float)) or not math.isfinite(v) or v < 0:
                raise ValueError(f"LatencyModel.{attr} must be finite and >= 0, got {v!r}")
        if self.c0 + self.c_decode <= 0:
            raise ValueError("LatencyModel: c0 + c_decode must be > 0 (iterations take time)")
        if isinstance(self.max_batch, bool) or not isinstance(self.max_batch, int):
            raise TypeError(f"LatencyModel.max_batch must be an int, got {self.max_batch!r}")
        if self.max_batch < 1:
            raise ValueError(f"LatencyModel.max_batch must be >= 1, got {self.max_batch}")
        cap = self.kv_capacity
        if cap is not None:
            if isinstance(cap, bool) or not isinstance(cap, (int, np.integer)):
                raise TypeError(f"LatencyModel.kv_capacity must be an int or None, got {cap!r}")
            if cap < 1:
                raise ValueError(f"LatencyModel.kv_capacity must be >= 1 token, got {cap}")
            object.__setattr__(self, "kv_capacity", int(cap))

    def iteration_time(self, prefill_tokens: int, num_decoding: int) -> float:
        """Eq. (1): duration of one iteration."""
        return self.c0 + self.c_prefill * prefill_tokens + self.c_decode * num_decoding

    def solo_time(self, module: ModuleSpec, *, extra_prefill: int = 0) -> float:
        """Service time of ``module`` alone on an idle device (tools: their latency).

        Prefill iteration ``c0 + c_p (P + extra)`` then ``O`` decode iterations of
        ``c0 + c_d`` each.
        """
        if module.kind == "tool":
            return module.tool_latency
        prefill = self.iteration_time(module.prompt_tokens + extra_prefill, 0)
        return prefill + module.output_tokens * self.iteration_time(0, 1)


def kv_tokens(module: ModuleSpec) -> int:
    """KV-cache tokens an LLM module adds to its request's context, ``P_m + O_m`` (0 for tools)."""
    if not isinstance(module, ModuleSpec):
        raise TypeError(f"module must be a ModuleSpec, got {type(module).__name__}")
    return module.prompt_tokens + module.output_tokens if module.kind == "llm" else 0


def critical_path_latency(
    workflow: Workflow, latency: LatencyModel, *, edge_cost: float = 0.0
) -> float:
    """Longest path of solo module times through the DAG (no contention).

    Parameters
    ----------
    workflow : Workflow
        The workflow.
    latency : LatencyModel
        Gives each module's solo time.
    edge_cost : float
        Time added on every edge (a per-boundary overhead when every module is its own
        unit).

    Returns
    -------
    float
        End-to-end latency of the request on an uncontended system (s).

    Refuses a non-``Workflow`` workflow, a latency without ``solo_time``, a non-finite
    ``edge_cost`` and one so large that the path length overflows to inf.
    """
    if not isinstance(workflow, Workflow):
        raise TypeError(f"workflow must be a Workflow, got {type(workflow).__name__}")
    if not callable(getattr(latency, "solo_time", None)):
        raise TypeError(
            f"latency must be a LatencyModel (with solo_time), got {type(latency).__name__}"
        )
    edge_cost = check_float(edge_cost, "edge_cost")
    finish = [0.0] * len(workflow.modules)
    for m in workflow.topo_order:
        start = max((finish[p] + edge_cost for p in workflow.preds[m]), default=0.0)
        finish[m] = start + latency.solo_time(workflow.modules[m])
    total = max(finish)
    if not math.isfinite(total):
        raise ValueError(f"edge_cost = {edge_cost:g} makes the path latency overflow to inf")
    return total


# --------------------------------------------------------------------------------------
# Templates of the reproduction (token and tool latencies drawn from lognormals).


#: Largest ``tool_cv_scale`` the templates accept (``log1p(cv**2)`` overflows near 1e154).
MAX_TOOL_CV_SCALE = 1e100


def _check_template_args(rng: Any, tool_cv_scale: Any) -> float:
    """Check a template's ``rng`` and ``tool_cv_scale``; return the scale as a float."""
    check_rng(rng, "rng")
    return check_float(tool_cv_scale, "tool_cv_scale", min=0, max=MAX_TOOL_CV_SCALE)


def _lognormal(rng: np.random.Generator, mean: float, cv: float) -> float:
    if cv <= 0:
        return float(mean)
    s2 = math.log1p(cv * cv)
    return float(rng.lognormal(math.log(mean) - s2 / 2, math.sqrt(s2)))


def _tokens(rng, mean, cv=0.5) -> int:
    return max(1, round(_lognormal(rng, mean, cv)))


def _llm(rng, name, role, prompt, output):
    return ModuleSpec(name, "llm", _tokens(rng, prompt), _tokens(rng, output), role=role)


def _tool(rng, name, role, mean, cv):
    return ModuleSpec(name, "tool", tool_latency=_lognormal(rng, mean, cv), role=role)


#: Most loop iterations of the ReAct and coding templates (agent frameworks cap them too).
MAX_ITERATIONS = 10


def react_loop(*, rng: np.random.Generator, tool_cv_scale: float = 1.0) -> Workflow:
    """ReAct: (LLM reason -> tool) x K, K ~ Geometric(0.35) on {1, 2, ...} capped at
    :data:`MAX_ITERATIONS`, then an answer."""
    tool_cv_scale = _check_template_args(rng, tool_cv_scale)
    k = min(int(rng.geometric(0.35)), MAX_ITERATIONS)
    mods = []
    for i in range(k):
        mods.append(_llm(rng, f"reason_{i}", "react.reason", 1500, 150))
        mods.append(_tool(rng, f"tool_{i}", "react.tool", 1.0, 1.0 * tool_cv_scale))
    mods.append(_llm(rng, "answer", "react.answer", 2000, 300))
    return Workflow.chain("react", mods)


def rag_pipeline(*, rng: np.random.Generator, tool_cv_scale: float = 1.0) -> Workflow:
    """RAG: fast retrieval tool -> short LLM rerank -> long LLM answer.

    ``rng`` must be a numpy Generator and ``tool_cv_scale`` in ``[0, 1e100]`` (as for
    every template).
    """
    tool_cv_scale = _check_template_args(rng, tool_cv_scale)
    mods = [
        _tool(rng, "retrieve", "rag.retrieve", 0.1, 0.5 * tool_cv_scale),
        _llm(rng, "rerank", "rag.rerank", 1500, 50),
        _llm(rng, "answer", "rag.answer", 2000, 400),
    ]
    return Workflow.chain("rag", mods)


def debate(*, rng: np.random.Generator, tool_cv_scale: float = 1.0) -> Workflow:
    """Multi-agent debate: 3 agents x 2 rounds (parallel within a round), then a judge."""
    _check_template_args(rng, tool_cv_scale)  # no tools: the scale is unused
    mods, edges = [], []
    for r in range(2):
        for a in range(3):
            mods.append(_llm(rng, f"agent{a}_round{r}", "debate.agent", 800 + 700 * r, 250))
            if r:
                edges += [(p, len(mods) - 1) for p in range(3)]
    mods.append(_llm(rng, "judge", "debate.judge", 2000, 150))
    edges += [(p, 6) for p in range(3, 6)]
    return Workflow("debate", tuple(mods), tuple(edges))


def code_agent(*, rng: np.random.Generator, tool_cv_scale: float = 1.0) -> Workflow:
    """Coding agent: LLM write -> execute (heavy-tailed) -> LLM fix -> ... until a
    Bernoulli(0.6) success, at most :data:`MAX_ITERATIONS` fixes."""
    tool_cv_scale = _check_template_args(rng, tool_cv_scale)
    mods = [
        _llm(rng, "write", "code.write", 1000, 400),
        _tool(rng, "exec_0", "code.exec", 2.0, 2.0 * tool_cv_scale),
    ]
    i = 0
    while i < MAX_ITERATIONS and rng.random() >= 0.6:
        i += 1
        mods.append(_llm(rng, f"fix_{i}", "code.fix", 1500, 300))
        mods.append(_tool(rng, f"exec_{i}", "code.exec", 2.0, 2.0 * tool_cv_scale))
    return Workflow.chain("code", mods)


#: The reproduction's templates by name.
TEMPLATES: dict[str, Callable[..., Workflow]] = {
    "react": react_loop,
    "rag": rag_pipeline,
    "debate": debate,
    "code": code_agent,
}


#: Most expected arrivals :func:`poisson_arrivals` generates.
MAX_ARRIVALS = 1_000_000


def poisson_arrivals(
    templates: Sequence[Callable[..., Workflow]],
    *,
    rate: float,
    horizon: float,
    mix: Sequence[float] | None = None,
    seed: int,
    tool_cv_scale: float = 1.0,
) -> list[Request]:
    """Open-loop Poisson arrivals of workflow instances.

    Parameters
    ----------
    templates : sequence of callables
        ``template(rng=..., tool_cv_scale=...) -> Workflow`` (e.g. :data:`TEMPLATES` values).
    rate : float
        Arrival rate ``lambda`` (requests/s), > 0.
    horizon : float
        Arrivals fall in ``[0, horizon)`` (s), > 0. More than ``MAX_ARRIVALS`` expected
        arrivals (``rate * horizon``) are refused.
    mix : sequence of float or None
        Template probabilities (uniform when None).
    seed : int
        Seed of the arrival times, template choice and sampled lengths.
    tool_cv_scale : float
        Multiplies every tool-latency coefficient of variation (sensitivity sweeps); in
        ``[0, MAX_TOOL_CV_SCALE]``.

    Returns
    -------
    list of Request
        Sorted by arrival time, ids ``0..N-1``.

    Examples
    --------
    >>> reqs = poisson_arrivals([rag_pipeline], rate=2.0, horizon=10.0, seed=0)
    >>> all(0 <= r.arrival < 10 for r in reqs)
    True
    """
    if not templates:
        raise ValueError("templates must be a non-empty sequence")
    rate = check_float(rate, "rate", min=0, min_inclusive=False)
    horizon = check_float(horizon, "horizon", min=0, min_inclusive=False)
    check_size(rate * horizon, "rate * horizon", limit=MAX_ARRIVALS, what="expected arrivals")
    k = len(templates)
    p = (
        np.full(k, 1.0 / k)
        if mix is None
        else check_array(mix, "mix", ndim=None, min_size=0, finite=False)
    )
    if p.shape != (k,) or np.any(p < 0) or not np.isclose(p.sum(), 1.0):
        raise ValueError(f"mix must be {k} non-negative probabilities summing to 1, got {mix}")
    tool_cv_scale = check_float(tool_cv_scale, "tool_cv_scale", min=0, max=MAX_TOOL_CV_SCALE)
    rng = np.random.default_rng(check_seed(seed, "seed"))
    out, t = [], 0.0
    while True:
        t += float(rng.exponential(1.0 / rate))
        if t >= horizon:
            return out
        j = int(rng.choice(k, p=p))
        wf = templates[j](rng=rng, tool_cv_scale=tool_cv_scale)
        out.append(Request(len(out), wf, t))
