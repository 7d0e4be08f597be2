"""Clock-free schedulers: AgentWeave (flow decomposition + flow-adaptive policy) and baselines.

A scheduler is a state machine that decides *which module of which request starts on
which worker, and when*. It never sleeps or measures time: a driver tells it about
arrivals (:meth:`Scheduler.submit`), finished modules (:meth:`Scheduler.module_done`),
failed attempts and failed workers, and asks it for the next starts
(:meth:`Scheduler.poll`, a list of :class:`Action`). The same scheduler object is driven
on a simulated clock (:func:`~.sim.simulate`, simpy) and on the real clock with async
callables (:func:`~.runtime.run_async`).

AgentWeave keeps the aggregated layout (every worker can run every module) and cuts a
request into *execution units*. A unit holds one batch slot on one worker while it runs
its modules; at each module boundary the policy decides whether the next modules join
the current unit (the request keeps its slot, even across tool calls) or start a new unit
that goes through the global ready queue and may land on another worker (paying the
boundary overhead ``o_sched`` and, off its context's worker, a re-prefill ``o_ctx``).
The flow-adaptive policy cuts iff ``q_t * E[R_r] > kappa * (o_sched + E[o_ctx])``.

Deviations from the paper
-------------------------
- The adaptive rule, the unit/slot model, the placement rule, the KV-memory model and
  the context cost are inferred from the abstract (the spec's system model), not the
  paper's code.
- KV memory (vLLM-style): a request's context occupies KV memory on every device where
  it is resident, also across tool calls. A module starts only when its need (the
  context tokens it must restore plus ``P + O``) fits; unpinned cached contexts are
  evicted first (newest request first) and pinned idle ones are preempted only when the
  device runs nothing (recompute later). Which contexts are pinned is each
  architecture's choice: a live AgentWeave unit, an aggregated batch member, a
  disaggregated request between two LLM modules.
- One context cost for every architecture (:meth:`Scheduler.move_cost`): re-prefill of
  the context tokens not resident on the target device plus the hop ``h`` when the
  request changes device; a KV transfer is priced as that re-prefill.
- ``E[R_r]`` comes from online workflow statistics (:class:`WorkflowStats`: per-role
  mean observed module durations and per-template mean total service), never from the
  instance's own future module sizes; placement's outstanding work uses the same
  per-role means.
- Placement minimises predicted outstanding work plus the context cost, which reduces
  to the spec's "least outstanding work, ties to the context holder" when costs tie.
- ``q_t`` counts co-batched requests predicted to finish first only while some unit or
  module waits for a slot or KV memory: under continuous batching a request that keeps
  its slot holds up nobody when nothing waits (the spec's rule, inferred for lockstep
  batches, would cut at almost every boundary).
- A unit whose first modules are all tools runs off-device (holds no slot); its first LLM
  module then starts a new unit (a forced boundary).
- The global ready queue is ordered by request arrival (older requests first).
- The disaggregated baseline pins every role to devices of its own (at least one per
  role, never two roles on a device); see :mod:`.experiment` for which claims hold.
"""

from __future__ import annotations

import heapq
import math
from collections import deque
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from neurips26.common.validation import check_bool, check_float, check_int

from .workflow import LatencyModel, Request, _check_granularity, kv_tokens

__all__ = [
    "POLICIES",
    "Action",
    "AgentWeaveScheduler",
    "AggregatedScheduler",
    "DisaggregatedScheduler",
    "FlowAdaptivePolicy",
    "RequestState",
    "Scheduler",
    "StaticPolicy",
    "SystemState",
    "WorkflowStats",
    "disaggregated_partition",
    "make_policy",
]


@dataclass(frozen=True)
class Action:
    """Start ``module`` of request ``request`` on ``worker`` after ``delay`` seconds.

    ``worker`` is None for a tool running off-device; ``extra_prefill`` is the number of
    context tokens to re-prefill (``o_ctx``) before the module; ``unit`` identifies the
    execution unit (or batch) the module runs in.
    """

    request: int
    module: int
    worker: int | None
    delay: float = 0.0
    extra_prefill: int = 0
    unit: int = -1


@dataclass(frozen=True)
class RequestState:
    """What the policy sees of request ``r`` at a module boundary.

    Attributes
    ----------
    request : int
        Request id.
    unit_size : int
        Modules run so far in the current unit.
    num_ready : int
        Modules that just became ready.
    expected_remaining : float
        ``E[R_r]``: predicted remaining service time (s).
    expected_ctx_cost : float
        ``E[o_ctx]``: re-prefill time if the next unit moves to another worker (s).
    """

    request: int
    unit_size: int
    num_ready: int
    expected_remaining: float
    expected_ctx_cost: float


@dataclass(frozen=True)
class SystemState:
    """What the policy sees of the system: ``q_t = num_waiting + num_cobatched_first``."""

    num_waiting: int
    num_cobatched_first: int
    sched_overhead: float


class FlowAdaptivePolicy:
    """Flow-adaptive decomposition: cut a unit boundary iff the gain beats the overhead.

    Decision at a module boundary of request ``r`` (inferred rule)::

        cut  <=>  q_t * E[R_r] > kappa * (o_sched + E[o_ctx])

    ``q_t`` counts units waiting for a slot or KV memory plus co-batched requests
    predicted to finish before ``r``: the work that ``r`` would hold up by keeping its
    slot (:class:`AgentWeaveScheduler` passes no co-batched count while nothing waits).

    Parameters
    ----------
    kappa : float
        Trade-off weight ``kappa`` (> 0); larger cuts less often.
    overhead : float or None
        The policy's estimate of the per-boundary overhead ``o_sched`` (s); None uses
        the scheduler's true ``sched_overhead``.

    Examples
    --------
    >>> p = FlowAdaptivePolicy(kappa=1.0, overhead=0.05)
    >>> p.should_cut(RequestState(0, 1, 1, 2.0, 0.0), SystemState(0, 0, 0.05))
    False
    >>> p.should_cut(RequestState(0, 1, 1, 2.0, 0.0), SystemState(1, 0, 0.05))
    True
    """

    name = "adaptive"
    granularity = 1  # a cut makes finest units

    def __init__(self, *, kappa: float = 1.0, overhead: float | None = None) -> None:
        if not math.isfinite(kappa) or kappa <= 0:
            raise ValueError(f"kappa must be > 0, got {kappa}")
        if overhead is not None and (not math.isfinite(overhead) or overhead < 0):
            raise ValueError(f"overhead must be >= 0, got {overhead}")
        self.kappa = float(kappa)
        self.overhead = overhead

    def should_cut(self, request_state: RequestState, system_state: SystemState) -> bool:
        o_sched = system_state.sched_overhead if self.overhead is None else self.overhead
        q = system_state.num_waiting + system_state.num_cobatched_first
        gain = q * request_state.expected_remaining
        return gain > self.kappa * (o_sched + request_state.expected_ctx_cost)

    def __repr__(self) -> str:
        return f"FlowAdaptivePolicy(kappa={self.kappa}, overhead={self.overhead})"


class StaticPolicy:
    """Fixed granularity: units of at most ``g`` modules (``g = 1`` always decompose,
    ``g = None`` never decompose, i.e. continuous admission of whole requests)."""

    def __init__(self, *, granularity: int | float | None) -> None:
        self.granularity = _check_granularity(granularity)
        self.name = {1: "always", None: "never"}.get(self.granularity, f"g={self.granularity}")

    def should_cut(self, request_state: RequestState, system_state: SystemState) -> bool:
        del system_state
        if self.granularity is None:
            return False
        return request_state.unit_size + request_state.num_ready > self.granularity

    def __repr__(self) -> str:
        return f"StaticPolicy(granularity={self.granularity})"


POLICIES = ("adaptive", "always", "never")


def make_policy(policy) -> FlowAdaptivePolicy | StaticPolicy:
    """A policy object from ``"adaptive" | "always" | "never"`` or a policy instance."""
    if isinstance(policy, str):
        if policy == "adaptive":
            return FlowAdaptivePolicy()
        if policy == "always":
            return StaticPolicy(granularity=1)
        if policy == "never":
            return StaticPolicy(granularity=None)
        raise ValueError(f"policy must be one of {POLICIES} or a policy object, got {policy!r}")
    if not hasattr(policy, "should_cut"):
        raise TypeError(f"policy must define should_cut(request_state, system_state): {policy!r}")
    return policy


#: Most workers a scheduler accepts.
MAX_WORKERS = 100_000


def _check_workers(num_workers) -> int:
    return check_int(num_workers, "num_workers", min=1, max=MAX_WORKERS)


class WorkflowStats:
    """Online workflow statistics: the predictor of a request's remaining work ``E[R_r]``.

    Nothing here looks at a request's future modules. The scheduler reports the observed
    duration of every finished module (by role) and the total observed service of every
    finished request (by template); the prediction for a running request ``r`` of
    template ``T`` that has received service ``s_r`` so far is::

        E[R_r] = max(mean_T(total service) - s_r, sum of mean_role(d) over its ready modules)

    (the first term is 0 until a request of ``T`` has finished). Before a role has been
    observed its mean is the prompt-only estimate ``c0 + c_p P`` (the prompt is known when
    a module is called; its output length is not).

    Parameters
    ----------
    latency : LatencyModel
        Gives the prompt-only prior.

    Examples
    --------
    >>> st = WorkflowStats(LatencyModel())
    >>> st.observe_module("answer", 2.0); st.observe_module("answer", 4.0)
    >>> st.role_mean("answer", prompt_tokens=1000)
    3.0
    >>> st.observe_request("rag", 10.0)
    >>> st.expected_remaining("rag", served=7.0, ready_estimate=1.0)
    3.0
    """

    def __init__(self, latency: LatencyModel) -> None:
        self.latency = latency
        self._role: dict[str, list[float]] = {}
        self._template: dict[str, list[float]] = {}

    def observe_module(self, role: str, duration: float) -> None:
        """A module of ``role`` took ``duration`` seconds (from its start to its end)."""
        duration = check_float(duration, "duration", min=0)
        acc = self._role.setdefault(role, [0.0, 0.0])
        acc[0] += duration
        acc[1] += 1.0

    def observe_request(self, template: str, service: float) -> None:
        """A request of ``template`` finished after ``service`` seconds of module time."""
        service = check_float(service, "service", min=0)
        acc = self._template.setdefault(template, [0.0, 0.0])
        acc[0] += service
        acc[1] += 1.0

    def role_mean(self, role: str, *, prompt_tokens: int = 0) -> float:
        """Mean observed duration of ``role``'s modules (the prompt-only prior before any)."""
        acc = self._role.get(role)
        if acc is None or acc[1] == 0:
            return self.latency.iteration_time(prompt_tokens, 0)
        return acc[0] / acc[1]

    def expected_remaining(self, template: str, *, served: float, ready_estimate: float) -> float:
        """``E[R_r]`` of a request of ``template`` that has received ``served`` seconds."""
        served = check_float(served, "served", min=0)
        ready_estimate = check_float(ready_estimate, "ready_estimate", min=0)
        acc = self._template.get(template)
        total = acc[0] / acc[1] if acc is not None and acc[1] > 0 else 0.0
        return max(total - served, ready_estimate)


class _Req:
    """Per-request bookkeeping shared by the schedulers."""

    __slots__ = (
        "blocks",
        "ctx_total",
        "last_worker",
        "n_done",
        "npred",
        "pinned",
        "ready",
        "request",
        "running_on",
        "served",
        "started",
        "unit_of",
        "wf",
        "where",
    )

    def __init__(self, request: Request) -> None:
        self.request = request
        self.wf = wf = request.workflow
        self.npred = [len(p) for p in wf.preds]
        self.n_done = 0
        self.ready: list[int] = list(wf.sources)
        self.unit_of: dict[int, int] = {}
        self.where: dict[int, int | None] = {}
        self.started: dict[int, float] = {}
        self.served = 0.0  # observed module time so far
        self.ctx_total = 0  # KV tokens of the context (P + O of finished LLM modules)
        self.blocks: dict[int, int] = {}  # worker -> context tokens resident there
        self.running_on: dict[int, int] = {}  # worker -> running LLM modules
        self.pinned = False  # the architecture holds the context (not evictable)
        self.last_worker: int | None = None

    @property
    def finished(self) -> bool:
        return self.n_done == len(self.wf.modules)

    def complete(self, m: int) -> list[int]:
        """Mark ``m`` done; return modules that became ready."""
        self.n_done += 1
        newly = []
        for s in self.wf.succs[m]:
            self.npred[s] -= 1
            if self.npred[s] == 0:
                newly.append(s)
        return newly


class Scheduler:
    """Base class: the protocol every scheduler implements (see the module docstring).

    The base class also owns the KV-cache memory of every worker and the one context
    cost model all architectures share (:meth:`move_cost`): an LLM module of request
    ``r`` started on worker ``w`` re-prefills the context tokens not resident on ``w``
    and pays the hop ``h`` when ``r``'s previous LLM module ran elsewhere. A module
    starts only when its KV need fits ``w``'s free memory (evicting unpinned cached
    contexts first, newest request first; pinned idle contexts are preempted only when
    ``w`` runs nothing, which guarantees progress).

    Parameters
    ----------
    num_workers : int
        Workers (devices) ``D >= 1``.
    latency : LatencyModel or None
        ``max_batch``, ``kv_capacity``, the context cost and the prompt-only prior.

    Attributes
    ----------
    kv_used : list of int
        KV tokens in use per worker (contexts resident there plus running reservations).
    kv_peak : list of int
        Largest ``kv_used`` seen per worker.
    num_evictions, num_preemptions : int
        Cached contexts evicted and pinned contexts preempted (both re-prefilled later).
    num_kv_waits : int
        Times a module was ready to start on a worker but had to wait for KV memory.
    stats : WorkflowStats
        The online predictor of remaining work.
    """

    name = "scheduler"

    def __init__(self, *, num_workers: int, latency: LatencyModel | None = None) -> None:
        self.num_workers = _check_workers(num_workers)
        self.latency = LatencyModel() if latency is None else latency
        if not isinstance(self.latency, LatencyModel):
            raise TypeError("latency must be a LatencyModel")
        self.reset()

    # -- protocol ----------------------------------------------------------------------
    def reset(self) -> None:
        """Forget all requests (start a new run)."""
        d = self.num_workers
        self.reqs: dict[int, _Req] = {}
        self.alive = [True] * d
        self._actions: list[Action] = []
        self._seq = 0
        self.kv_used = [0] * d
        self.kv_peak = [0] * d
        self.kv_residents: list[set[int]] = [set() for _ in range(d)]
        self.llm_running = [0] * d
        self.num_evictions = 0
        self.num_preemptions = 0
        self._kv_waited: set[tuple[int, int]] = set()
        self.stats = WorkflowStats(self.latency)

    @property
    def num_kv_waits(self) -> int:
        """Modules that were ready for a worker but had to wait for KV memory."""
        return len(self._kv_waited)

    def _note_wait(self, r: _Req, m: int) -> None:
        self._kv_waited.add((r.request.id, m))

    def submit(self, request: Request, now: float) -> None:
        """A request arrived."""
        raise NotImplementedError

    def module_done(self, request: int, module: int, now: float) -> None:
        """``module`` of ``request`` finished successfully."""
        raise NotImplementedError

    def module_failed(self, request: int, module: int, now: float) -> None:
        """An attempt of ``module`` failed or was cancelled; it must run again."""
        raise NotImplementedError

    def worker_failed(self, worker: int, now: float) -> None:
        """``worker`` is gone; the driver then reports its running modules as failed."""
        if not self.alive[worker]:
            return
        self.alive[worker] = False
        if not any(self.alive):
            raise RuntimeError("every worker has failed; nothing can run")
        for rid in list(self.kv_residents[worker]):  # its KV memory is lost
            r = self.reqs.get(rid)
            if r is not None:
                self._drop(r, worker)

    def poll(self, now: float) -> list[Action]:
        """Modules to start now."""
        out, self._actions = self._actions, []
        for a in out:
            self.reqs[a.request].started[a.module] = now + a.delay
        return out

    # -- helpers -----------------------------------------------------------------------
    def _new_req(self, request: Request) -> _Req:
        if request.id in self.reqs:
            raise ValueError(f"request id {request.id} submitted twice")
        cap = self.latency.kv_capacity
        total = sum(kv_tokens(m) for m in request.workflow.modules)
        if cap is not None and total > cap:
            raise ValueError(
                f"request {request.id}: its whole context ({total} KV tokens) exceeds "
                f"kv_capacity = {cap} tokens of one device"
            )
        r = _Req(request)
        self.reqs[request.id] = r
        return r

    def _emit(self, r: _Req, m: int, worker, *, delay=0.0, extra=0, unit=-1) -> None:
        r.where[m] = worker
        self._actions.append(Action(r.request.id, m, worker, float(delay), int(extra), unit))

    def _observe(self, r: _Req, m: int, now: float) -> None:
        """Record module ``m``'s observed duration in the statistics."""
        dur = max(0.0, now - r.started.get(m, now))
        r.served += dur
        self.stats.observe_module(r.wf.modules[m].role, dur)
        if r.finished:
            self.stats.observe_request(r.wf.name, r.served)

    def expected_remaining(self, r: _Req, ready: Sequence[int] = ()) -> float:
        """``E[R_r]`` from the workflow statistics (never the instance's future sizes)."""
        est = sum(
            self.stats.role_mean(r.wf.modules[x].role, prompt_tokens=r.wf.modules[x].prompt_tokens)
            for x in ready
        )
        return self.stats.expected_remaining(r.wf.name, served=r.served, ready_estimate=est)

    # -- KV memory and the shared context cost ------------------------------------------
    def move_cost(self, r: _Req, w: int) -> tuple[int, float]:
        """Context cost of starting ``r``'s next LLM module on ``w``: (re-prefill tokens, hop s).

        The same for every architecture: every context token not resident on ``w`` is
        re-prefilled there, and the hop ``h`` is paid when ``r``'s previous LLM module ran
        on another worker.
        """
        restore = r.ctx_total - r.blocks.get(w, 0)
        hop = r.last_worker is not None and r.last_worker != w
        return restore, self.latency.hop_cost if hop else 0.0

    def move_time(self, r: _Req, w: int) -> float:
        """:meth:`move_cost` in seconds (the re-prefill priced at ``c_p`` per token)."""
        restore, hop = self.move_cost(r, w)
        return self.latency.c_prefill * restore + hop

    def _kv_need(self, r: _Req, m: int, w: int) -> int:
        return r.ctx_total - r.blocks.get(w, 0) + kv_tokens(r.wf.modules[m])

    def _idle_contexts(self, w: int, *, pinned: bool, exclude: _Req) -> list[_Req]:
        out = []
        for rid in self.kv_residents[w]:
            q = self.reqs[rid]
            if q is exclude or q.running_on.get(w, 0) or bool(q.pinned) != pinned:
                continue
            out.append(q)
        out.sort(key=lambda q: (-q.request.arrival, -q.request.id))  # newest first
        return out

    def kv_fits(self, r: _Req, m: int, w: int, *, preempt: bool = False) -> bool:
        """Whether module ``m`` of ``r`` can start on ``w`` (after evictions allowed)."""
        cap = self.latency.kv_capacity
        if cap is None:
            return True
        free = cap - self.kv_used[w]
        need = self._kv_need(r, m, w)
        if need <= free:
            return True
        free += sum(q.blocks[w] for q in self._idle_contexts(w, pinned=False, exclude=r))
        if need <= free:
            return True
        if preempt and self.llm_running[w] == 0:
            free += sum(q.blocks[w] for q in self._idle_contexts(w, pinned=True, exclude=r))
        return need <= free

    def _drop(self, r: _Req, w: int) -> None:
        tok = r.blocks.pop(w, 0)
        self.kv_used[w] -= tok
        self.kv_residents[w].discard(r.request.id)

    def _release(self, r: _Req) -> None:
        """Free every KV block of ``r`` (the request finished)."""
        for w in list(r.blocks):
            self._drop(r, w)
        r.pinned = False

    def _kv_start(self, r: _Req, m: int, w: int, *, preempt: bool = False) -> tuple[int, float]:
        """Reserve ``m``'s KV on ``w`` (evicting as needed); return its context cost.

        Call only after :meth:`kv_fits` said yes.
        """
        cap = self.latency.kv_capacity
        need = self._kv_need(r, m, w)
        if cap is not None and self.kv_used[w] + need > cap:
            victims = self._idle_contexts(w, pinned=False, exclude=r)
            if preempt and self.llm_running[w] == 0:
                victims += self._idle_contexts(w, pinned=True, exclude=r)
            for q in victims:
                if self.kv_used[w] + need <= cap:
                    break
                if q.pinned:
                    self.num_preemptions += 1
                else:
                    self.num_evictions += 1
                self._drop(q, w)
        restore, hop = self.move_cost(r, w)
        for w2 in list(r.blocks):  # the context moves to w (copies in use stay)
            if w2 != w and not r.running_on.get(w2, 0):
                self._drop(r, w2)
        r.blocks[w] = r.ctx_total
        self.kv_residents[w].add(r.request.id)
        self.kv_used[w] += need
        self.kv_peak[w] = max(self.kv_peak[w], self.kv_used[w])
        r.running_on[w] = r.running_on.get(w, 0) + 1
        self.llm_running[w] += 1
        r.last_worker = w
        return restore, hop

    def _kv_done(self, r: _Req, m: int, w: int) -> None:
        """``m`` finished on ``w``: its reservation becomes part of the resident context."""
        tok = kv_tokens(r.wf.modules[m])
        r.ctx_total += tok
        r.running_on[w] -= 1
        self.llm_running[w] -= 1
        if w in r.blocks:
            r.blocks[w] += tok
        else:  # pragma: no cover - a reservation always has its block
            self.kv_used[w] -= tok

    def _kv_abort(self, r: _Req, m: int, w: int) -> None:
        """An attempt of ``m`` on ``w`` failed: give its reservation back."""
        r.running_on[w] -= 1
        self.llm_running[w] -= 1
        if self.alive[w]:
            self.kv_used[w] -= kv_tokens(r.wf.modules[m])


class _Unit:
    __slots__ = ("holds_slot", "id", "initial", "modules", "req", "running", "size", "worker")

    def __init__(self, uid: int, req: _Req, modules: list[int], initial: bool) -> None:
        self.id = uid
        self.initial = initial
        self.req = req
        self.modules = modules
        self.worker: int | None = None
        self.running: set[int] = set()
        self.size = 0
        self.holds_slot = False


class AgentWeaveScheduler(Scheduler):
    """AgentWeave: aggregated layout, flow decomposition into units, adaptive cutting.

    A unit holds one batch slot on one worker and pins its request's context in that
    worker's KV memory, also across tool calls. At a cut the unit closes: its slot is
    freed and the context becomes an evictable cache entry on the worker, so a new
    request can take the memory; the next unit reuses the cache if it lands there and
    otherwise pays the shared context cost (:meth:`Scheduler.move_cost`).

    Parameters
    ----------
    num_workers : int
        Workers ``D``; each can host every module and holds up to ``max_batch`` units.
    latency : LatencyModel or None
        Batch cap, KV memory and the context cost.
    policy : {"adaptive", "always", "never"} or policy object
        When to cut a unit boundary (:class:`FlowAdaptivePolicy`, :class:`StaticPolicy`).
    sched_overhead : float
        ``o_sched``: fixed cost (s) of every unit boundary (a delay before the new unit).
    context_cost : bool
        False: context moves are free (no re-prefill, no hop, and ``E[o_ctx] = 0`` in the
        adaptive rule), so a boundary costs ``o_sched`` alone; a diagnostic of the
        reproduction (the other reading of a zero-overhead boundary), not the paper's
        system. Default True: the shared context cost (:meth:`Scheduler.move_cost`).

    References
    ----------
    AgentWeave (NeurIPS 2026): flow decomposition and the flow-adaptive scheduler.
    Yu et al., Orca (OSDI 2022): iteration-level scheduling. Kwon et al., vLLM (SOSP 2023):
    KV-cache memory and preemption by recompute.

    Examples
    --------
    >>> from neurips26.papers.agentweave import Request, rag_pipeline
    >>> import numpy as np
    >>> s = AgentWeaveScheduler(num_workers=2, policy="always")
    >>> s.submit(Request(0, rag_pipeline(rng=np.random.default_rng(0))), now=0.0)
    >>> [(a.module, a.worker) for a in s.poll(0.0)]  # the retrieval tool, off-device
    [(0, None)]
    """

    name = "agentweave"

    def __init__(
        self,
        *,
        num_workers: int,
        latency: LatencyModel | None = None,
        policy="adaptive",
        sched_overhead: float = 1e-3,
        context_cost: bool = True,
    ) -> None:
        if not math.isfinite(sched_overhead) or sched_overhead < 0:
            raise ValueError(f"sched_overhead must be >= 0, got {sched_overhead}")
        self.policy = make_policy(policy)
        self.sched_overhead = float(sched_overhead)
        self.context_cost = check_bool(context_cost, "context_cost")
        super().__init__(num_workers=num_workers, latency=latency)

    def move_cost(self, r: _Req, w: int) -> tuple[int, float]:
        """:meth:`Scheduler.move_cost`, or ``(0, 0.0)`` without ``context_cost``."""
        return super().move_cost(r, w) if self.context_cost else (0, 0.0)

    def reset(self) -> None:
        super().reset()
        d = self.num_workers
        self.units: dict[int, _Unit] = {}
        self.queue: list[tuple[float, int, int]] = []  # (arrival, unit id, unit id)
        self.slots = [0] * d
        self.outstanding = [0.0] * d
        self.resident: list[set[int]] = [set() for _ in range(d)]
        self.pending: list[deque[tuple[int, int, float]]] = [deque() for _ in range(d)]
        self.predicted: dict[tuple[int, int], float] = {}
        self.num_units = 0
        self.num_cuts = 0

    # -- units -------------------------------------------------------------------------
    def _open_units(self, r: _Req, modules: list[int], *, initial: bool = False) -> None:
        g = getattr(self.policy, "granularity", 1)
        size = len(modules) if g is None else g
        for i in range(0, len(modules), size):
            u = _Unit(self._seq, r, modules[i : i + size], initial)
            self._seq += 1
            self.units[u.id] = u
            self.num_units += 1
            for m in u.modules:
                r.unit_of[m] = u.id
            if all(r.wf.modules[m].kind == "tool" for m in u.modules):
                self._start_unit(u, None)  # off-device: needs no slot
            else:
                heapq.heappush(self.queue, (r.request.arrival, u.id, u.id))

    def _first_llm(self, u: _Unit) -> int:
        return next(m for m in u.modules if u.req.wf.modules[m].kind == "llm")

    def _start_unit(self, u: _Unit, w: int | None) -> None:
        r = u.req
        delay = 0.0 if u.initial else self.sched_overhead  # o_sched per unit boundary
        if w is not None:
            u.holds_slot = True
            self.slots[w] += 1
            self.resident[w].add(u.id)
            r.pinned += 1
        u.worker = w
        for m in u.modules:
            self._run(u, m, delay=delay)

    def _run(self, u: _Unit, m: int, *, delay=0.0) -> None:
        r = u.req
        u.running.add(m)
        u.size += 1
        r.unit_of[m] = u.id
        w = u.worker
        mod = r.wf.modules[m]
        if w is None or mod.kind == "tool":
            self._emit(r, m, w, delay=delay, unit=u.id)
            return
        pred = self.stats.role_mean(mod.role, prompt_tokens=mod.prompt_tokens)
        self.predicted[(r.request.id, m)] = pred
        self.outstanding[w] += pred
        if not self.pending[w] and self.kv_fits(r, m, w, preempt=True):
            self._launch(u, m, delay)
        else:
            self._note_wait(r, m)
            self.pending[w].append((u.id, m, delay))

    def _launch(self, u: _Unit, m: int, delay: float) -> None:
        extra, hop = self._kv_start(u.req, m, u.worker, preempt=True)
        self._emit(u.req, m, u.worker, delay=delay + hop, extra=extra, unit=u.id)

    def _close(self, u: _Unit) -> None:
        if u.holds_slot and u.worker is not None:
            self.slots[u.worker] -= 1
            self.resident[u.worker].discard(u.id)
            u.req.pinned -= 1  # the context stays cached (evictable) on the worker
        u.holds_slot = False
        self.units.pop(u.id, None)

    def _unpredict(self, r: _Req, m: int, w: int | None) -> None:
        pred = self.predicted.pop((r.request.id, m), None)
        if pred is not None and w is not None:
            self.outstanding[w] -= pred

    # -- protocol ----------------------------------------------------------------------
    def submit(self, request: Request, now: float) -> None:
        r = self._new_req(request)
        ready, r.ready = r.ready, []
        self._open_units(r, ready, initial=True)

    def module_done(self, request: int, module: int, now: float) -> None:
        r = self.reqs[request]
        u = self.units[r.unit_of[module]]
        u.running.discard(module)
        newly = r.complete(module)
        self._observe(r, module, now)
        if u.worker is not None and r.wf.modules[module].kind == "llm":
            self._unpredict(r, module, u.worker)
            self._kv_done(r, module, u.worker)
        if r.finished:
            self._close(u)
            self._release(r)
            return
        if newly:
            if u.worker is None and any(r.wf.modules[x].kind == "llm" for x in newly):
                cut = True  # off-device unit: its first LLM module needs a worker
            else:
                cut = self.policy.should_cut(*self._states(r, u, newly))
            if cut:
                self.num_cuts += 1
                if not u.running:
                    self._close(u)
                self._open_units(r, newly)
                return
            for x in newly:
                self._run(u, x)
        if not u.running:
            self._close(u)

    def _states(self, r: _Req, u: _Unit, newly: list[int]) -> tuple[RequestState, SystemState]:
        e_rem = self.expected_remaining(r, newly)
        cobatched = 0
        if u.worker is not None:
            for uid in self.resident[u.worker]:
                other = self.units.get(uid)
                if (
                    other is not None
                    and other.req is not r
                    and self.expected_remaining(other.req) < e_rem
                ):
                    cobatched += 1
        # E[o_ctx]: the context's re-prefill and hop if the next unit lands elsewhere
        ctx = self.latency.c_prefill * r.ctx_total + self.latency.hop_cost
        if not self.context_cost:
            ctx = 0.0
        rs = RequestState(r.request.id, u.size, len(newly), e_rem, ctx)
        waiting = len(self.queue) + sum(len(p) for p in self.pending)
        if not waiting:  # continuous batching: nobody is held up while nothing waits
            cobatched = 0
        return rs, SystemState(waiting, cobatched, self.sched_overhead)

    def module_failed(self, request: int, module: int, now: float) -> None:
        r = self.reqs[request]
        u = self.units.get(r.unit_of.get(module, -1))
        if u is not None:
            u.running.discard(module)
            if u.worker is not None and r.wf.modules[module].kind == "llm":
                self._unpredict(r, module, u.worker)
                self._kv_abort(r, module, u.worker)
            if not u.running:
                self._close(u)
        self._open_units(r, [module])  # the module goes back through the ready queue

    def worker_failed(self, worker: int, now: float) -> None:
        super().worker_failed(worker, now)
        stuck, self.pending[worker] = self.pending[worker], deque()
        for uid, m, _ in stuck:  # never started: back through the ready queue
            u = self.units.get(uid)
            if u is None:  # pragma: no cover - a pending module keeps its unit alive
                continue
            u.running.discard(m)
            self._unpredict(u.req, m, worker)
            if not u.running:
                self._close(u)
            self._open_units(u.req, [m])
        for uid in list(self.resident[worker]):
            u = self.units.get(uid)
            if u is not None and not u.running:
                self._close(u)

    def poll(self, now: float) -> list[Action]:
        lm = self.latency
        for w in range(self.num_workers):  # continuing units first, in order
            p = self.pending[w]
            while p and self.alive[w]:
                uid, m, delay = p[0]
                u = self.units[uid]
                if not self.kv_fits(u.req, m, w, preempt=True):
                    break
                p.popleft()
                self._launch(u, m, delay)
        while self.queue:
            _, _, uid = self.queue[0]
            u = self.units[uid]
            r = u.req
            m0 = self._first_llm(u)
            free = [
                w
                for w in range(self.num_workers)
                if self.alive[w]
                and self.slots[w] < lm.max_batch
                and not self.pending[w]
                and self.kv_fits(r, m0, w)
            ]
            if not free:
                if any(
                    self.alive[k] and self.slots[k] < lm.max_batch for k in range(self.num_workers)
                ):
                    self._note_wait(r, m0)  # a slot is free: memory is what blocks
                break  # first come, first served: the head waits for a slot or memory
            heapq.heappop(self.queue)
            # least outstanding work, counting the context cost; ties to the context holder
            w = min(
                free,
                key=lambda k: (self.outstanding[k] + self.move_time(r, k), k not in r.blocks, k),
            )
            self._start_unit(u, w)
        return super().poll(now)


class AggregatedScheduler(Scheduler):
    """Aggregated lockstep batching (baseline).

    Each worker admits up to ``batch_size`` waiting requests as a batch. The batch runs
    stage by stage: every unfinished member starts all of its ready modules, and the next
    stage begins only when every module of the stage has finished. The worker admits a
    new batch only once every member has completed its whole workflow. Members' contexts
    stay pinned in the worker's KV memory for the batch's life (a member frees its own
    when it completes); a stage module that does not fit waits for memory.

    Parameters
    ----------
    num_workers : int
        Workers ``D``.
    batch_size : int
        Batch size ``b`` (1 <= b <= max_batch).
    latency : LatencyModel or None
        Batch cap and KV memory.
    """

    name = "aggregated"

    def __init__(
        self, *, num_workers: int, batch_size: int = 8, latency: LatencyModel | None = None
    ) -> None:
        lm = LatencyModel() if latency is None else latency
        if isinstance(batch_size, bool) or not isinstance(batch_size, (int, np.integer)):
            raise TypeError(f"batch_size must be an int, got {batch_size!r}")
        if not 1 <= batch_size <= lm.max_batch:
            raise ValueError(
                f"batch_size must be in [1, max_batch={lm.max_batch}], got {batch_size}"
            )
        self.batch_size = int(batch_size)
        super().__init__(num_workers=num_workers, latency=lm)

    def reset(self) -> None:
        super().reset()
        d = self.num_workers
        self.waiting: deque[_Req] = deque()
        self.batch: list[list[_Req] | None] = [None] * d
        self.running = [0] * d
        self.batch_id = [-1] * d
        self.orphans: deque[list[_Req]] = deque()
        self.pending: list[deque[tuple[_Req, int]]] = [deque() for _ in range(d)]
        self.num_batches = 0

    def submit(self, request: Request, now: float) -> None:
        self.waiting.append(self._new_req(request))

    def _start(self, r: _Req, m: int, w: int) -> None:
        if r.wf.modules[m].kind == "tool":
            self._emit(r, m, w, unit=self.batch_id[w])
        elif not self.pending[w] and self.kv_fits(r, m, w, preempt=True):
            extra, hop = self._kv_start(r, m, w, preempt=True)
            self._emit(r, m, w, delay=hop, extra=extra, unit=self.batch_id[w])
        else:
            self._note_wait(r, m)
            self.pending[w].append((r, m))

    def _stage(self, w: int) -> None:
        batch = self.batch[w]
        started = 0
        for r in batch:
            ready, r.ready = r.ready, []
            for m in ready:
                self._start(r, m, w)
                started += 1
        self.running[w] = started
        if started == 0:  # every member finished: the worker is free
            self.batch[w] = None

    def module_done(self, request: int, module: int, now: float) -> None:
        r = self.reqs[request]
        w = r.where[module]
        r.ready.extend(r.complete(module))  # held back until the stage ends (lockstep)
        self._observe(r, module, now)
        if r.wf.modules[module].kind == "llm":
            self._kv_done(r, module, w)
        if r.finished:
            self._release(r)
        self.running[w] -= 1
        if self.running[w] == 0 and self.batch[w] is not None:
            self._stage(w)

    def module_failed(self, request: int, module: int, now: float) -> None:
        r = self.reqs[request]
        w = r.where[module]
        if r.wf.modules[module].kind == "llm":
            self._kv_abort(r, module, w)
        if self.alive[w]:
            self._start(r, module, w)  # retry within the stage
        else:
            r.ready.append(module)  # the orphaned batch reruns it elsewhere

    def worker_failed(self, worker: int, now: float) -> None:
        super().worker_failed(worker, now)
        for r, m in self.pending[worker]:
            r.ready.append(m)
        self.pending[worker] = deque()
        if self.batch[worker] is not None:
            self.orphans.append(self.batch[worker])
            self.batch[worker] = None
            self.running[worker] = 0

    def poll(self, now: float) -> list[Action]:
        for w in range(self.num_workers):
            p = self.pending[w]
            while p and self.alive[w] and self.kv_fits(p[0][0], p[0][1], w, preempt=True):
                r, m = p.popleft()
                extra, hop = self._kv_start(r, m, w, preempt=True)
                self._emit(r, m, w, delay=hop, extra=extra, unit=self.batch_id[w])
        for w in range(self.num_workers):
            if not self.alive[w] or self.batch[w] is not None:
                continue
            if self.orphans:
                members = self.orphans.popleft()
            elif self.waiting:
                members = [
                    self.waiting.popleft() for _ in range(min(self.batch_size, len(self.waiting)))
                ]
            else:
                continue
            for r in members:
                r.pinned = True
            self.batch[w] = members
            self.batch_id[w] = self.num_batches
            self.num_batches += 1
            self._stage(w)
        return super().poll(now)


def disaggregated_partition(
    load: Mapping[str, float], num_workers: int
) -> dict[str, tuple[int, ...]]:
    """Pin module roles to disjoint device pools in proportion to their expected load.

    Every role gets one device of its own and the remaining devices go, one at a time,
    to the role with the highest load per device (D'Hondt). Roles never share a device:
    packing two roles onto one device would be aggregation by another name, so more
    roles than devices is refused.

    Parameters
    ----------
    load : mapping of str to float
        Expected device work per role (any unit), every value >= 0.
    num_workers : int
        Devices ``D`` (at least the number of roles).

    Returns
    -------
    dict of str to tuple of int
        Devices of each role's pool.

    Raises
    ------
    ValueError
        With more roles than devices, no roles, or a negative or non-finite load.

    Examples
    --------
    >>> disaggregated_partition({"reason": 3.0, "answer": 1.0}, 4)
    {'reason': (0, 1, 2), 'answer': (3,)}
    """
    d = _check_workers(num_workers)
    if not load:
        raise ValueError("load must name at least one module role")
    for k, v in load.items():
        check_float(v, f"load[{k!r}]", min=0)
    roles = sorted(load, key=lambda k: (-load[k], k))
    if len(roles) > d:
        raise ValueError(
            f"the disaggregated partition needs a device per role: {len(roles)} roles "
            f"({', '.join(roles)}) but num_workers = {d}"
        )
    count = dict.fromkeys(roles, 1)
    for _ in range(d - len(roles)):
        best = max(roles, key=lambda k: (load[k] / count[k], -roles.index(k)))
        count[best] += 1
    out, nxt = {}, 0
    for k in roles:
        out[k] = tuple(range(nxt, nxt + count[k]))
        nxt += count[k]
    return out


class DisaggregatedScheduler(Scheduler):
    """Disaggregated serving (baseline): each module role is pinned to its own device pool.

    Every pool has its own queue and continuous batching; tools run off-device. A
    request's context stays pinned in the KV memory of the device that ran its last LLM
    module until its next LLM module starts (it is freed at once when the next modules
    are all LLM modules of other pools); that module pays the same context cost as
    any other architecture (:meth:`Scheduler.move_cost`): re-prefill of the context not
    resident on its device plus the hop ``h`` when it changes device.

    Parameters
    ----------
    num_workers : int
        Workers ``D``.
    partition : mapping of str to sequence of int
        Devices of each role's pool (:func:`disaggregated_partition`); at least one device
        per role, and no device shared by two roles.
    latency : LatencyModel or None
        Batch cap, KV memory and the context cost.

    Raises
    ------
    ValueError
        When the partition reserves more devices than exist, names a device >= D, gives a
        role no device or puts two roles on one device.
    """

    name = "disaggregated"

    def __init__(
        self,
        *,
        num_workers: int,
        partition: Mapping[str, Sequence[int]],
        latency: LatencyModel | None = None,
    ) -> None:
        d = _check_workers(num_workers)
        if not partition:
            raise ValueError("partition must map at least one module role to devices")
        owner: dict[int, str] = {}
        pools: list[tuple[int, ...]] = []
        pool_of: dict[str, int] = {}
        for role, devs in partition.items():
            devs = tuple(sorted({int(x) for x in devs}))
            if not devs:
                raise ValueError(f"partition gives role {role!r} no devices")
            for x in devs:
                if x in owner:
                    raise ValueError(
                        f"partition packs roles {owner[x]!r} and {role!r} on device {x}; "
                        "disaggregated roles need devices of their own"
                    )
                owner[x] = role
            pool_of[role] = len(pools)
            pools.append(devs)
        used = sorted(owner)
        if max(used) >= d or min(used) < 0:
            raise ValueError(
                f"the disaggregated partition reserves devices {used} but only {d} exist "
                f"(0..{d - 1})"
            )
        self.pool_devices = [list(devs) for devs in pools]
        self.base_pool_of = pool_of
        super().__init__(num_workers=d, latency=latency)

    def reset(self) -> None:
        super().reset()
        self.pool_of = dict(self.base_pool_of)
        self.pools = [list(p) for p in self.pool_devices]
        self.queues: list[list] = [[] for _ in self.pools]
        self.slots = [0] * self.num_workers

    def _enqueue(self, r: _Req, m: int) -> None:
        mod = r.wf.modules[m]
        if mod.kind == "tool":
            self._emit(r, m, None)
            return
        p = self.pool_of.get(mod.role)
        if p is None:
            raise ValueError(f"module role {mod.role!r} has no pool in the partition")
        self._seq += 1
        heapq.heappush(self.queues[p], (r.request.arrival, self._seq, r, m))

    def submit(self, request: Request, now: float) -> None:
        r = self._new_req(request)
        r.pinned = True  # its context stays where its last LLM module ran
        ready, r.ready = r.ready, []
        for m in ready:
            self._enqueue(r, m)

    def module_done(self, request: int, module: int, now: float) -> None:
        r = self.reqs[request]
        w = r.where[module]
        newly = r.complete(module)
        self._observe(r, module, now)
        if w is not None:
            self.slots[w] -= 1
            self._kv_done(r, module, w)
        if r.finished:
            self._release(r)
        elif (
            w is not None
            and newly
            and not any(r.running_on.values())
            and all(
                r.wf.modules[x].kind == "llm"
                and self.pool_of.get(r.wf.modules[x].role) != self._pool_of_worker(w)
                for x in newly
            )
        ):
            self._drop(r, w)  # the context must leave this pool anyway: free it now
        for x in newly:
            self._enqueue(r, x)

    def _pool_of_worker(self, w: int) -> int | None:
        return next((p for p, devs in enumerate(self.pools) if w in devs), None)

    def module_failed(self, request: int, module: int, now: float) -> None:
        r = self.reqs[request]
        w = r.where[module]
        if w is not None:
            self.slots[w] -= 1
            self._kv_abort(r, module, w)
        self._enqueue(r, module)

    def worker_failed(self, worker: int, now: float) -> None:
        super().worker_failed(worker, now)
        for p, devs in enumerate(self.pools):
            if worker in devs:
                devs.remove(worker)
                if not devs:  # degraded mode: the pool's roles move to the lightest pool
                    target = min(
                        (q for q in range(len(self.pools)) if self.pools[q]),
                        key=lambda q: len(self.queues[q]) / len(self.pools[q]),
                    )
                    for role, q in self.pool_of.items():
                        if q == p:
                            self.pool_of[role] = target
                    for item in self.queues[p]:
                        heapq.heappush(self.queues[target], item)
                    self.queues[p] = []

    def poll(self, now: float) -> list[Action]:
        cap = self.latency.max_batch
        for p, devs in enumerate(self.pools):
            q = self.queues[p]
            while q and devs:
                _, _, r, m = q[0]
                ok = [
                    k for k in devs if self.slots[k] < cap and self.kv_fits(r, m, k, preempt=True)
                ]
                if not ok:
                    if any(self.slots[k] < cap for k in devs):
                        self._note_wait(r, m)  # a slot is free: memory is what blocks
                    break  # first come, first served within the pool
                w = min(ok, key=lambda k: (self.move_time(r, k), self.slots[k], k))
                heapq.heappop(q)
                self.slots[w] += 1
                extra, hop = self._kv_start(r, m, w, preempt=True)
                self._emit(r, m, w, delay=hop, extra=extra)
        return super().poll(now)
