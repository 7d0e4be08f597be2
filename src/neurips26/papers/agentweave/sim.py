"""Simulated clock: a simpy discrete-event driver for any :class:`~.scheduler.Scheduler`.

Each device is a simpy process running iteration-level continuous batching
(:class:`~.workflow.LatencyModel`): an iteration admits waiting sequences (their prefill
tokens) and advances every decoding sequence by one token. Stretches of identical
decode-only iterations are simulated as one timed segment (cut short at the next
iteration boundary when a new sequence arrives), which is exact and keeps the engine
fast. Tools are timers that occupy no device. No wall-clock sleeping happens anywhere.

Deviations from the paper
-------------------------
- GPUs running real LLMs are replaced by the parametric latency model (spec grade C).
- Capacity is estimated from a flood (every request arrives at t = 0) instead of a
  bisection on the arrival rate: the completion rate between the 10th and 90th percentile
  completions of a saturated system.
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
import simpy

from .scheduler import Action, Scheduler
from .workflow import LatencyModel, Request, Workflow

__all__ = ["SimResult", "estimate_capacity", "simulate"]

_TRACE_COLUMNS = [
    "request",
    "module",
    "name",
    "kind",
    "worker",
    "unit",
    "extra_prefill",
    "delay",
    "ready",
    "start",
    "end",
]


@dataclass(frozen=True)
class SimResult:
    """Outcome of one simulated run.

    Attributes
    ----------
    throughput : float
        Requests completed per simulated second in ``[warmup, horizon)``.
    mix_throughput : float
        The rate of the *offered mix* the run sustained: the smallest, over workflow
        names, of that workflow's completion rate in the window over its share of the
        arrivals in the window. Under saturating arrivals this is the server's capacity
        for the mix even when some pools (disaggregated) keep serving their own
        workflows while another starves; equal to ``throughput`` for one workflow.
    mean_latency, p90_latency : float
        End-to-end latency (s) of the requests that arrived in ``[warmup, horizon)`` and
        completed (NaN when none did).
    num_completed : int
        Requests completed over the whole run.
    num_unfinished : int
        Requests still in the system when the run stopped.
    utilization : numpy.ndarray
        Shape ``(D,)``: fraction of ``[0, end]`` each device spent in iterations.
    requests : pandas.DataFrame
        One row per request: ``request, workflow, arrival, finish, latency``.
    trace : pandas.DataFrame
        One row per module execution: ``request, module, name, kind, worker, unit,
        extra_prefill`` (context tokens re-prefilled), ``delay`` (overheads and hop, s),
        ``ready`` (time the action was issued), ``start`` (after the delay), ``end``.
    end_time : float
        Simulated time when the run stopped (s).
    kv_peak : numpy.ndarray
        Shape ``(D,)``: the most KV-cache tokens each device held at once.
    counters : dict
        The scheduler's ``num_kv_waits``, ``num_evictions`` and ``num_preemptions``.
    """

    throughput: float
    mix_throughput: float
    mean_latency: float
    p90_latency: float
    num_completed: int
    num_unfinished: int
    utilization: np.ndarray
    requests: pd.DataFrame
    trace: pd.DataFrame
    end_time: float
    kv_peak: np.ndarray = field(default_factory=lambda: np.zeros(0))
    counters: dict = field(default_factory=dict)


class _Device:
    """One device: iteration-level continuous batching (Eq. 1 of the latency model)."""

    def __init__(self, env: simpy.Environment, lm: LatencyModel, on_finish) -> None:
        self.env = env
        self.lm = lm
        self.on_finish = on_finish
        self.waiting: deque = deque()
        self.decoding: list[list] = []  # [remaining tokens, payload]
        self.wake: simpy.Event | None = None
        self.busy = 0.0
        env.process(self._loop())

    def add(self, prefill: int, decode: int, payload) -> None:
        self.waiting.append((prefill, decode, payload))
        if self.wake is not None and not self.wake.triggered:
            self.wake.succeed()

    def _finish(self, done: list) -> None:
        for payload in done:
            self.on_finish(payload)

    def _loop(self):
        env, lm = self.env, self.lm
        while True:
            if not self.waiting and not self.decoding:
                self.wake = env.event()
                yield self.wake
                self.wake = None
                continue
            if self.waiting and len(self.decoding) < lm.max_batch:
                admit = []
                while self.waiting and len(self.decoding) + len(admit) < lm.max_batch:
                    admit.append(self.waiting.popleft())
                # Eq. (1): prefill iteration for the admitted sequences
                tau = lm.iteration_time(sum(a[0] for a in admit), len(self.decoding))
                yield env.timeout(tau)
                self.busy += tau
                done = self._advance(1)
                for _prefill, decode, payload in admit:
                    if decode > 0:
                        self.decoding.append([decode, payload])
                    else:
                        done.append(payload)
                self._finish(done)
                continue
            # a stretch of identical decode-only iterations: tau each, k of them
            tau = lm.iteration_time(0, len(self.decoding))
            k = min(d[0] for d in self.decoding)
            start = env.now
            timer = env.timeout(k * tau)
            if self.waiting:  # batch full: nothing can be admitted before a completion
                yield timer
                j = k
            else:
                self.wake = env.event()
                yield timer | self.wake
                self.wake = None
                if timer.processed:
                    j = k
                else:  # an arrival: finish the current iteration, then admit it
                    j = min(k, max(0, math.ceil((env.now - start) / tau - 1e-9)))
                    rest = start + j * tau - env.now
                    if rest > 0:
                        yield env.timeout(rest)
            self.busy += j * tau
            if j:
                self._finish(self._advance(j))

    def _advance(self, j: int) -> list:
        done, keep = [], []
        for d in self.decoding:
            d[0] -= j
            (done if d[0] <= 0 else keep).append(d)
        self.decoding = keep
        return [d[1] for d in done]


def simulate(
    scheduler: Scheduler,
    requests: Sequence[Request],
    *,
    horizon: float,
    warmup: float = 0.0,
    latency: LatencyModel | None = None,
    drain: bool = True,
    max_time: float | None = None,
) -> SimResult:
    """Run ``requests`` through ``scheduler`` on a simulated clock (simpy).

    Parameters
    ----------
    scheduler : Scheduler
        Any scheduler (:class:`~.scheduler.AgentWeaveScheduler` or a baseline); it is
        reset first.
    requests : sequence of Request
        Arrivals (``Request.arrival`` in simulated seconds); sampled lengths inside.
    horizon : float
        End of the measurement window (s).
    warmup : float
        Start of the measurement window (s), ``0 <= warmup < horizon``.
    latency : LatencyModel or None
        Device model; defaults to the scheduler's.
    drain : bool
        Keep simulating after ``horizon`` until every request completed (latency runs);
        otherwise stop at ``horizon`` (throughput runs).
    max_time : float or None
        Hard stop of the simulated clock when draining (None: no limit).

    Returns
    -------
    SimResult
        Throughput, latency statistics, per-device utilisation and the traces.

    Examples
    --------
    >>> from neurips26.papers.agentweave import (AgentWeaveScheduler, poisson_arrivals,
    ...                                          rag_pipeline)
    >>> reqs = poisson_arrivals([rag_pipeline], rate=1.0, horizon=20.0, seed=0)
    >>> res = simulate(AgentWeaveScheduler(num_workers=1), reqs, horizon=20.0)
    >>> res.num_completed == len(reqs)
    True
    """
    if not math.isfinite(horizon) or horizon <= 0:
        raise ValueError(f"horizon must be > 0, got {horizon}")
    if not math.isfinite(warmup) or not 0 <= warmup < horizon:
        raise ValueError(f"need 0 <= warmup < horizon, got warmup={warmup}, horizon={horizon}")
    if not isinstance(scheduler, Scheduler):
        raise TypeError(f"scheduler must be a Scheduler, got {type(scheduler).__name__}")
    lm = scheduler.latency if latency is None else latency
    scheduler.reset()
    env = simpy.Environment()
    reqs = {r.id: r for r in requests}
    if len(reqs) != len(requests):
        raise ValueError("request ids must be unique")
    left = {r.id: len(r.workflow.modules) for r in requests}
    finish: dict[int, float] = {}
    trace: list[tuple] = []

    def on_finish(payload) -> None:
        rid, m, a_ready, a_start, worker, unit, extra, delay = payload
        mod = reqs[rid].workflow.modules[m]
        trace.append(
            (rid, m, mod.name, mod.kind, worker, unit, extra, delay, a_ready, a_start, env.now)
        )
        left[rid] -= 1
        if left[rid] == 0:
            finish[rid] = env.now
        scheduler.module_done(rid, m, env.now)
        dispatch()

    devices = [_Device(env, lm, on_finish) for _ in range(scheduler.num_workers)]

    def start(a: Action, issued: float) -> None:
        mod = reqs[a.request].workflow.modules[a.module]
        payload = (a.request, a.module, issued, env.now, a.worker, a.unit, a.extra_prefill, a.delay)
        if mod.kind == "tool":
            env.process(_timer(mod.tool_latency, payload))
        else:
            devices[a.worker].add(mod.prompt_tokens + a.extra_prefill, mod.output_tokens, payload)

    def _timer(dt, payload):
        yield env.timeout(dt)
        on_finish(payload)

    def _delayed(a: Action):
        issued = env.now
        yield env.timeout(a.delay)
        start(a, issued)

    def dispatch() -> None:
        for a in scheduler.poll(env.now):
            if a.delay > 0:
                env.process(_delayed(a))
            else:
                start(a, env.now)

    def arrivals():
        order = sorted(requests, key=lambda q: (q.arrival, q.id))
        for i, r in enumerate(order):
            if r.arrival > env.now:
                yield env.timeout(r.arrival - env.now)
            scheduler.submit(r, env.now)
            if i + 1 == len(order) or order[i + 1].arrival > r.arrival:
                dispatch()  # simultaneous arrivals are admitted together

    env.process(arrivals())
    if drain:
        env.run(until=max_time)
    else:
        env.run(until=horizon)
    end = float(env.now)

    rows = [(r.id, r.workflow.name, r.arrival, finish.get(r.id, math.nan)) for r in requests]
    rq = pd.DataFrame(rows, columns=["request", "workflow", "arrival", "finish"])
    rq["latency"] = rq["finish"] - rq["arrival"]
    fin = rq["finish"].to_numpy()
    arr = rq["arrival"].to_numpy()
    in_window = (fin >= warmup) & (fin < horizon)
    throughput = float(np.sum(in_window)) / (horizon - warmup)
    # the offered mix's sustainable rate: the scarcest workflow's completions per share
    names = rq["workflow"].to_numpy()
    arrived = (arr >= warmup) & (arr < horizon)
    mix_rate = math.inf
    for name in np.unique(names[arrived]) if arrived.any() else ():
        share = float(np.mean(names[arrived] == name))
        done = float(np.sum(in_window & (names == name))) / (horizon - warmup)
        mix_rate = min(mix_rate, done / share)
    mix_throughput = throughput if not math.isfinite(mix_rate) else float(mix_rate)
    lat = rq["latency"].to_numpy()[(arr >= warmup) & (arr < horizon) & np.isfinite(fin)]
    mean = float(lat.mean()) if lat.size else math.nan
    p90 = float(np.quantile(lat, 0.9)) if lat.size else math.nan
    util = np.array([d.busy for d in devices]) / max(end, 1e-12)
    tr = pd.DataFrame(trace, columns=_TRACE_COLUMNS)
    return SimResult(
        throughput=throughput,
        mix_throughput=mix_throughput,
        mean_latency=mean,
        p90_latency=p90,
        num_completed=len(finish),
        num_unfinished=len(requests) - len(finish),
        utilization=util,
        requests=rq,
        trace=tr,
        end_time=end,
        kv_peak=np.array(scheduler.kv_peak, dtype=float),
        counters={
            k: int(getattr(scheduler, k))
            for k in ("num_kv_waits", "num_evictions", "num_preemptions")
        },
    )


def estimate_capacity(
    make_scheduler: Callable[[], Scheduler],
    workflows: Sequence[Workflow],
    *,
    latency: LatencyModel | None = None,
) -> float:
    """Saturated throughput (requests/s) of a scheduler on a set of workflow instances.

    Every workflow arrives at ``t = 0`` (a flood); the capacity is the completion rate
    between the 10th and the 90th percentile completion, which leaves out the start-up
    and the tail of the flood.

    Parameters
    ----------
    make_scheduler : callable
        Returns a fresh scheduler.
    workflows : sequence of Workflow
        At least 10 instances (e.g. sampled from the templates).
    latency : LatencyModel or None
        Device model; defaults to the scheduler's.

    Returns
    -------
    float
        Estimated capacity ``mu`` (requests/s).
    """
    if len(workflows) < 10:
        raise ValueError(f"need at least 10 workflows to estimate capacity, got {len(workflows)}")
    reqs = [Request(i, wf, 0.0) for i, wf in enumerate(workflows)]
    res = simulate(make_scheduler(), reqs, horizon=1.0, latency=latency, drain=True)
    t = np.sort(res.requests["finish"].to_numpy())
    n = len(t)
    lo, hi = int(0.1 * n), int(0.9 * n) - 1
    return float((hi - lo) / max(t[hi] - t[lo], 1e-12))
