"""Real clock: an asyncio driver that runs workflow modules (async callables) on workers.

The driver feeds a :class:`~.scheduler.Scheduler` with arrivals and finished modules
and starts the actions it returns as asyncio tasks: ``await module.fn(payload,
upstream)``. A worker is a logical slot pool (an accelerator, a model replica, an API
key): LLM modules are placed on workers and hold their batch slots, tools run anywhere.
A module attempt that raises, or that is cancelled because its worker failed, is handed
back to the scheduler and runs again; its output is recorded only once, on success, so
no unit is lost or duplicated.
"""

from __future__ import annotations

import asyncio
import inspect
import math
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import pandas as pd

from .scheduler import Action, Scheduler
from .workflow import Request

__all__ = ["AsyncRunResult", "ModuleError", "run_async"]


class ModuleError(RuntimeError):
    """A module kept failing after ``max_retries`` retries."""


@dataclass(frozen=True)
class AsyncRunResult:
    """Outcome of a real-clock run.

    Attributes
    ----------
    outputs : dict
        ``{request id: {module name: output}}``.
    latencies : dict
        ``{request id: seconds from arrival to completion}``.
    trace : pandas.DataFrame
        One row per successful module execution: ``request, module, name, worker, unit,
        attempt, start, end`` (seconds since the run began).
    num_retries : int
        Attempts that failed or were cancelled and ran again.
    wall_time : float
        Seconds the run took.
    """

    outputs: dict[int, dict[str, Any]]
    latencies: dict[int, float]
    trace: pd.DataFrame
    num_retries: int
    wall_time: float


async def _run(scheduler, requests, fail_workers, max_retries):
    loop = asyncio.get_running_loop()
    t0 = loop.time()
    reqs = {r.id: r for r in requests}
    outputs: dict[int, dict[str, Any]] = {r.id: {} for r in requests}
    left = {r.id: len(r.workflow.modules) for r in requests}
    latencies: dict[int, float] = {}
    attempts: dict[tuple[int, int], int] = {}
    running: dict[tuple[int, int], tuple[asyncio.Task, int | None]] = {}
    cancelled: set[asyncio.Task] = set()
    trace: list[tuple] = []
    retries = 0
    all_done = asyncio.Event()
    error: list[BaseException] = []

    def now() -> float:
        return loop.time() - t0

    async def guarded(func, *args) -> None:
        try:
            await func(*args)
        except asyncio.CancelledError:
            raise
        except BaseException as exc:  # a scheduler error stops the run instead of hanging
            error.append(exc)
            all_done.set()

    def dispatch() -> None:
        for a in scheduler.poll(now()):
            key = (a.request, a.module)
            if key in running:  # pragma: no cover - a scheduler bug
                raise RuntimeError(f"scheduler started module {key} twice")
            task = asyncio.ensure_future(guarded(execute, a))
            running[key] = (task, a.worker)

    async def execute(a: Action) -> None:
        nonlocal retries
        key = (a.request, a.module)
        req = reqs[a.request]
        wf = req.workflow
        mod = wf.modules[a.module]
        attempts[key] = attempts.get(key, 0) + 1
        try:
            if a.delay > 0:
                await asyncio.sleep(a.delay)
            start = now()
            upstream = {
                wf.modules[p].name: outputs[a.request][wf.modules[p].name]
                for p in wf.preds[a.module]
            }
            pending_out = mod.fn(req.payload, upstream)
            if not inspect.isawaitable(pending_out):  # a programming error: never retried
                running.pop(key, None)
                error.append(
                    TypeError(
                        f"module {mod.name!r} of request {a.request}: fn returned "
                        f"{type(pending_out).__name__}, not an awaitable; module callables "
                        "must be async (async def fn(payload, upstream))"
                    )
                )
                all_done.set()
                return
            out = await pending_out
        except asyncio.CancelledError as exc:
            task = asyncio.current_task()
            if task in cancelled:  # worker failure: already handed back
                return
            if task is None or task.cancelling() > 0:  # the run itself is being cancelled
                raise
            # The callable raised CancelledError without this task being cancelled (e.g. an
            # inner call it awaited was cancelled): a failed attempt, retried like any other,
            # never a lost unit.
            failure: BaseException | None = exc
        except Exception as exc:
            failure = exc
        else:
            failure = None
        if failure is not None:
            running.pop(key, None)
            if attempts[key] > max_retries:
                error.append(
                    ModuleError(
                        f"module {mod.name!r} of request {a.request} failed "
                        f"{attempts[key]} times: {failure!r}"
                    )
                )
                all_done.set()
                return
            retries += 1
            scheduler.module_failed(a.request, a.module, now())
            dispatch()
            return
        # no await below: a cancellation cannot split recording from reporting
        running.pop(key, None)
        if mod.name in outputs[a.request]:  # pragma: no cover - would be a duplicate
            raise RuntimeError(f"module {mod.name!r} of request {a.request} ran twice")
        outputs[a.request][mod.name] = out
        trace.append((a.request, a.module, mod.name, a.worker, a.unit, attempts[key], start, now()))
        left[a.request] -= 1
        if left[a.request] == 0:
            latencies[a.request] = now() - req.arrival
            if len(latencies) == len(reqs):
                all_done.set()
        scheduler.module_done(a.request, a.module, now())
        dispatch()

    async def fail(worker: int, at: float) -> None:
        nonlocal retries
        await asyncio.sleep(at)
        scheduler.worker_failed(worker, now())
        for key, (task, w) in list(running.items()):
            if w == worker and not task.done():
                cancelled.add(task)
                task.cancel()
                running.pop(key)
                retries += 1
                scheduler.module_failed(key[0], key[1], now())
        dispatch()

    async def arrive() -> None:
        for r in sorted(requests, key=lambda q: (q.arrival, q.id)):
            delay = r.arrival - now()
            if delay > 0:
                await asyncio.sleep(delay)
            scheduler.submit(r, now())
            dispatch()

    helpers = [asyncio.ensure_future(guarded(arrive))]
    helpers += [asyncio.ensure_future(guarded(fail, w, t)) for w, t in fail_workers.items()]
    try:
        if requests:
            await all_done.wait()
    finally:
        pending = helpers + [task for task, _ in running.values()]
        for task in pending:
            task.cancel()
        await asyncio.gather(*pending, return_exceptions=True)
    if error:
        raise error[0]
    tr = pd.DataFrame(
        trace, columns=["request", "module", "name", "worker", "unit", "attempt", "start", "end"]
    )
    return outputs, latencies, tr, retries


def run_async(
    scheduler: Scheduler,
    requests: Sequence[Request],
    *,
    timeout: float = 60.0,
    fail_workers: Mapping[int, float] | None = None,
    max_retries: int = 3,
) -> AsyncRunResult:
    """Serve ``requests`` on the real clock with their modules' async callables.

    Parameters
    ----------
    scheduler : Scheduler
        AgentWeave or a baseline; it is reset first.
    requests : sequence of Request
        ``Request.arrival`` is an offset in seconds from the start; every module needs
        ``fn`` (``async fn(payload, upstream) -> output``).
    timeout : float
        Seconds before the run is abandoned (every task cancelled, ``TimeoutError``).
    fail_workers : mapping of int to float or None
        Fault injection: ``{worker: seconds}`` makes the worker fail at that time; its
        running modules are cancelled and rescheduled elsewhere.
    max_retries : int
        Failed attempts allowed per module before :class:`ModuleError`.

    Returns
    -------
    AsyncRunResult
        Outputs, latencies and the trace.

    Examples
    --------
    >>> import asyncio
    >>> from neurips26.papers.agentweave import AgentWeaveScheduler, ModuleSpec, Workflow
    >>> async def shout(payload, upstream):
    ...     await asyncio.sleep(0.001)
    ...     return str(payload).upper()
    >>> wf = Workflow.chain("one", [ModuleSpec("shout", "llm", 10, 5, fn=shout)])
    >>> res = run_async(AgentWeaveScheduler(num_workers=1), [Request(0, wf, payload="hi")])
    >>> res.outputs[0]
    {'shout': 'HI'}
    """
    if not isinstance(scheduler, Scheduler):
        raise TypeError(f"scheduler must be a Scheduler, got {type(scheduler).__name__}")
    if not math.isfinite(timeout) or timeout <= 0:
        raise ValueError(f"timeout must be > 0, got {timeout}")
    if isinstance(max_retries, bool) or not isinstance(max_retries, int) or max_retries < 0:
        raise ValueError(f"max_retries must be an int >= 0, got {max_retries!r}")
    fail_workers = dict(fail_workers or {})
    for w, t in fail_workers.items():
        if not 0 <= w < scheduler.num_workers:
            raise ValueError(
                f"fail_workers names worker {w}, but there are {scheduler.num_workers}"
            )
        if not math.isfinite(t) or t < 0:
            raise ValueError(f"failure time of worker {w} must be >= 0, got {t}")
    ids = [r.id for r in requests]
    if len(set(ids)) != len(ids):
        raise ValueError("request ids must be unique")
    for r in requests:
        for m in r.workflow.modules:
            if m.fn is None:
                raise TypeError(
                    f"module {m.name!r} of workflow {r.workflow.name!r} has no callable; "
                    "real-clock runs need ModuleSpec(fn=async_callable)"
                )
    scheduler.reset()

    async def main():
        return await asyncio.wait_for(
            _run(scheduler, list(requests), fail_workers, max_retries), timeout
        )

    t0 = time.perf_counter()
    try:
        outputs, latencies, trace, retries = asyncio.run(main())
    except TimeoutError as exc:
        raise TimeoutError(f"run_async did not finish within {timeout} s") from exc
    return AsyncRunResult(outputs, latencies, trace, retries, time.perf_counter() - t0)
