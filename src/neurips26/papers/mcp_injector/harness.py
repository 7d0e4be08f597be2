"""Experiment harness: scripted MCP-client agents on the travel desk, crossed with fault conditions.

The paper ran 20B/120B LLM agents inside three agent frameworks; here stylised scripted
agents stand in (real MCP clients of the SDK, talking JSON-RPC to a real ``MCPServer``
through :class:`~.injector.FaultInjectingTransport`). "Size" sets per-step accuracy and
how many verification calls the agent makes; "stack" sets the error-handling policy.

Deviations from the paper
-------------------------
- Substitute agents, named generically, not claims about real frameworks:
  ``plan_execute`` retries any failed call up to 2 times, then re-plans (skips the step
  and its dependents); ``obs_loop`` has no retries and aborts the task on an exception
  (an ``is_error`` or empty result is an observation: the step fails, the task goes on);
  ``retry_backoff`` retries exceptions up to 3 times with (simulated) backoff and takes
  ``is_error``/empty results as answers, passing the error text downstream.
- Sizes: ``small`` has step accuracy 0.85 and no verification; ``large`` has accuracy 0.95
  and re-calls a step's tool to verify its answer with probability 0.8 (about 1.8x calls).
  A verification call that fails counts against the step. The chain-length effect is
  therefore built into the substitute; the experiment checks its accounting.
- Completion score = fraction of a task's subgoals whose output equals the ground truth.
- One connection per (task, agent) cell; the same agent random numbers are used under every
  fault condition (common random numbers).
- Time is virtual on the memory transport: the grid runs on trio with a mock clock that
  jumps to the next deadline only when every task waits, so a client timeout fires for a
  withheld response and never because the machine was slow (the tools are async, so no
  worker thread can make the loop look idle). Over stdio the clock is real.
"""

from __future__ import annotations

import json
import math
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import anyio
import numpy as np

from ._compat import memory_transport
from .faults import FaultProfile, default_profile, uniform_severe_profile
from .injector import CONNECTION_CLOSED_CODE, FaultInjector
from .travel import Step, Task, _resolve, build_travel_server, make_tasks, stdio_server_command

__all__ = [
    "CONDITIONS",
    "SIZES",
    "STACKS",
    "Analysis",
    "GridResult",
    "TaskOutcome",
    "analyse",
    "run_grid",
    "run_scripted_agent",
]

#: size -> (step accuracy, probability of a verification call per step)
SIZES: dict[str, tuple[float, float]] = {"small": (0.85, 0.0), "large": (0.95, 0.8)}
STACKS = ("plan_execute", "obs_loop", "retry_backoff")


def _conditions() -> dict[str, FaultProfile]:
    return {
        "none": FaultProfile(label="none"),
        "calibrated": default_profile(),
        "uniform_severe": uniform_severe_profile(),
    }


CONDITIONS = tuple(_conditions())


@dataclass(frozen=True)
class TaskOutcome:
    """What one agent achieved on one task.

    Attributes
    ----------
    completion : float
        Fraction of subgoals met, in [0, 1].
    num_calls : int
        ``tools/call`` requests sent.
    aborted : bool
        The agent gave up on the task.
    attempts : tuple of (tool, k, group, group_ok)
        Every call: tool, its per-tool index ``k`` on the connection, the logical call it
        belongs to, and whether that logical call finally got a valid answer.
    """

    completion: float
    num_calls: int
    aborted: bool
    attempts: tuple[tuple[str, int, int, bool], ...] = ()


class _Abort(Exception):
    pass


async def _call(client: Any, tool: str, args: dict, counters: dict, log: list) -> tuple:
    """One ``tools/call``: ``(status, output)``; status in ok/is_error/empty/exception/closed."""
    from mcp import MCPError

    k = counters.get(tool, 0)
    counters[tool] = k + 1
    log.append([tool, k])
    try:
        r = await client.call_tool(tool, args)
    except MCPError as e:
        return ("closed" if e.code == CONNECTION_CLOSED_CODE else "exception"), None
    except Exception:  # schema validation (RuntimeError), pydantic, transport errors
        return "exception", None
    if r.is_error:
        text = r.content[0].text if r.content and hasattr(r.content[0], "text") else ""
        return "is_error", {"error_text": text}
    if not r.content:
        return "empty", {"error_text": ""}
    try:
        out = json.loads(r.content[0].text)
    except (json.JSONDecodeError, AttributeError, TypeError):
        return "exception", None
    return ("ok", out) if isinstance(out, dict) else ("exception", None)


async def _robust_call(client, tool, args, stack, counters, calls, groups) -> tuple:
    """A logical call under a stack's error policy; returns ``(usable, output)``."""
    gid = len(groups)
    groups.append(False)
    start = len(calls)
    if stack == "plan_execute":
        tries = 3
    elif stack == "retry_backoff":
        tries = 4
    else:
        tries = 1
    usable, out = False, None
    for _ in range(tries):
        st, o = await _call(client, tool, args, counters, calls)
        if st == "ok":
            usable, out = True, o
            groups[gid] = True
            break
        if stack == "obs_loop":
            if st in ("exception", "closed"):
                _tag(calls, start, gid)
                raise _Abort
            break  # is_error / empty: an observation; the step fails
        if stack == "retry_backoff" and st in ("is_error", "empty"):
            usable, out = True, o  # the error text taken as the answer
            break
        if st == "closed":
            break
    _tag(calls, start, gid)
    return usable, out


def _tag(calls: list, start: int, gid: int) -> None:
    for c in calls[start:]:
        if len(c) == 2:
            c.append(gid)


def _slip(args: dict, rng: np.random.Generator) -> dict:
    """A plausible wrong argument: the agent's mistake on this step."""
    name = sorted(args)[int(rng.integers(len(args)))]
    v = args[name]
    return {**args, name: v * 1.1 + 1 if isinstance(v, (int, float)) else f"{v}~"}


async def run_scripted_agent(
    client: Any, task: Task, *, size: str, stack: str, rng: np.random.Generator
) -> TaskOutcome:
    """Run one scripted agent (``size`` x ``stack``) on ``task`` over an SDK ``Client``.

    Parameters
    ----------
    client : mcp.Client
        An entered client connected to the travel desk (through the injector or not).
    task : Task
    size : {"small", "large"}
    stack : {"plan_execute", "obs_loop", "retry_backoff"}
    rng : numpy Generator
        Draws the agent's slips and verification decisions.
    """
    if size not in SIZES:
        raise ValueError(f"size must be one of {sorted(SIZES)}, got {size!r}")
    if stack not in STACKS:
        raise ValueError(f"stack must be one of {STACKS}, got {stack!r}")
    acc, verify_p = SIZES[size]
    n = len(task.steps)
    u = rng.random((n, 2))  # (n, [slip, verify]) drawn up front: same under every condition
    outputs: list[Any] = [None] * n
    usable = [False] * n
    counters: dict[str, int] = {}
    calls: list[list] = []
    groups: list[bool] = []
    aborted = False
    try:
        for i, step in enumerate(task.steps):
            step: Step
            if not all(usable[j] for j in step.deps):
                continue  # re-plan: a dependency has no usable answer
            args = _resolve(step, outputs)
            if u[i, 0] > acc:
                args = _slip(args, rng)
            ok, out = await _robust_call(client, step.tool, args, stack, counters, calls, groups)
            if ok and u[i, 1] < verify_p:
                ok2, out2 = await _robust_call(
                    client, step.tool, args, stack, counters, calls, groups
                )
                if not ok2:
                    ok = False  # unverifiable: the step is dropped
                elif out2 != out:
                    out = out2  # trust the verification
            usable[i], outputs[i] = ok, out
    except _Abort:
        aborted = True
    met = [
        usable[i] and json.dumps(outputs[i], sort_keys=True) == task.truth[i] for i in range(n)
    ]
    attempts = tuple((c[0], int(c[1]), int(c[2]), bool(groups[c[2]])) for c in calls)
    return TaskOutcome(
        completion=float(np.mean(met)), num_calls=len(calls), aborted=aborted, attempts=attempts
    )


AgentFn = Callable[..., Awaitable[TaskOutcome]]


@dataclass(frozen=True)
class GridResult:
    """Cells of a grid run.

    Attributes
    ----------
    cells : pandas.DataFrame
        One row per (condition, size, stack, task): completion, num_calls, num_faulted,
        aborted, transport, connection.
    faults : dict of str to list of dict
        The fault log of each condition.
    attempts : list of dict
        Every call of every cell with its fault (if any) and whether its logical call was
        recovered.
    """

    cells: Any
    faults: dict[str, list[dict]] = field(default_factory=dict)
    attempts: list[dict] = field(default_factory=list)


async def _run_cells(specs, profiles, *, seed, transport, client_timeout, agent, tasks):
    from mcp import Client

    server = build_travel_server() if transport == "memory" else None
    injectors = {c: FaultInjector(profiles[c], seed=seed) for c in profiles}
    rows, attempts = [], []
    for cond, size, stack, task in specs:
        inj = injectors[cond]
        label = f"{size}/{stack}/task{task.id}"
        if transport == "memory":
            inner = memory_transport(server)
        else:
            from mcp import StdioServerParameters, stdio_client

            cmd = stdio_server_command()
            inner = stdio_client(StdioServerParameters(command=cmd[0], args=cmd[1:]))
        rng = np.random.default_rng(
            [seed, task.id, list(SIZES).index(size), STACKS.index(stack)]
        )
        n_before = len(inj.log_)
        with anyio.fail_after(60 + 20 * client_timeout * 50):
            async with Client(
                inj.wrap(inner, connection=label), read_timeout_seconds=client_timeout
            ) as client:
                out = await (agent or run_scripted_agent)(
                    client, task, size=size, stack=stack, rng=rng
                )
        cell_faults = {
            (r["tool"], r["call_index"]): r for r in inj.log_[n_before:] if r["kind"] == "fault"
        }
        for tool, k, gid, gok in out.attempts:
            f = cell_faults.get((tool, k))
            attempts.append(
                {
                    "condition": cond,
                    "size": size,
                    "stack": stack,
                    "task": task.id,
                    "tool": tool,
                    "k": k,
                    "group": gid,
                    "recovered": gok,
                    "mode": f["mode"] if f else "",
                    "persistence": f["persistence"] if f else "",
                }
            )
        rows.append(
            {
                "condition": cond,
                "size": size,
                "stack": stack,
                "task": task.id,
                "chain_length": len(task.steps),
                "completion": out.completion,
                "num_calls": out.num_calls,
                "num_faulted": sum(1 for t, k, _, _ in out.attempts if (t, k) in cell_faults),
                "aborted": out.aborted,
                "transport": transport,
                "connection": label,
            }
        )
    return rows, {c: inj.faults() for c, inj in injectors.items()}, attempts


def _backend(virtual: bool) -> dict:
    """``anyio.run`` options: trio with an autojumping mock clock, or plain asyncio."""
    if not virtual:
        return {"backend": "asyncio"}
    from trio.testing import MockClock

    return {"backend": "trio", "backend_options": {"clock": MockClock(autojump_threshold=0)}}


def run_grid(
    *,
    sizes: Sequence[str] = tuple(SIZES),
    stacks: Sequence[str] = STACKS,
    conditions: Sequence[str] | Mapping[str, Any] = CONDITIONS,
    num_tasks: int = 25,
    seed: int = 0,
    transport: str = "memory",
    client_timeout: float = 0.05,
    agent: AgentFn | None = None,
    clock: str = "auto",
) -> GridResult:
    """Run every (condition, size, stack, task) cell; one MCP connection per cell.

    Parameters
    ----------
    sizes, stacks : sequences of str
        Agent variants (see :data:`SIZES`, :data:`STACKS`).
    conditions : sequence of names or mapping of name to FaultProfile or FaultSchedule
        Names from :data:`CONDITIONS` (``none``, ``calibrated``, ``uniform_severe``) or
        your own profiles (a schedule from :meth:`FaultSchedule.from_log` replays a run).
    num_tasks : int
        Tasks per (condition, size, stack) group.
    seed : int
        Seeds the faults, the tasks and the agents.
    transport : {"memory", "stdio"}
        The SDK's in-memory JSON-RPC transport, or a subprocess per cell over stdio.
    client_timeout : float
        The client's ``read_timeout_seconds`` (an injected timeout costs this long), in
        seconds of the chosen clock.
    agent : callable or None
        ``async agent(client, task, *, size, stack, rng) -> TaskOutcome``: plug in your own
        (e.g. an LLM) agent; ``None`` uses :func:`run_scripted_agent`.
    clock : {"auto", "virtual", "real"}
        ``"virtual"`` runs the grid on trio with a mock clock that jumps to the next deadline
        whenever every task waits (``trio.testing.MockClock(autojump_threshold=0)``): a
        timeout fires exactly when nothing else can happen, never because the machine was
        slow, so outcomes do not depend on load and a run costs no waiting. It needs every
        wait to be in-process (the memory transport, async tools). ``"real"`` uses asyncio
        and the wall clock (needed for subprocesses and agents that do real I/O).
        ``"auto"``: virtual for the memory transport with the scripted agents, real otherwise.

    Returns
    -------
    GridResult
    """
    import pandas as pd

    if transport not in ("memory", "stdio"):
        raise ValueError(f"transport must be 'memory' or 'stdio', got {transport!r}")
    if clock not in ("auto", "virtual", "real"):
        raise ValueError(f"clock must be 'auto', 'virtual' or 'real', got {clock!r}")
    if clock == "virtual" and transport != "memory":
        raise ValueError("clock: 'virtual' needs transport='memory' (a subprocess waits in "
                         "real time)")  # fmt: skip
    virtual = clock == "virtual" or (clock == "auto" and transport == "memory" and agent is None)
    if not (isinstance(client_timeout, (int, float)) and client_timeout > 0):
        raise ValueError(f"client_timeout must be > 0, got {client_timeout!r}")
    if isinstance(conditions, Mapping):
        profiles = dict(conditions)
    else:
        known = _conditions()
        bad = [c for c in conditions if c not in known]
        if bad:
            raise ValueError(f"unknown conditions {bad}; valid: {list(known)}")
        profiles = {c: known[c] for c in conditions}
    for s in sizes:
        if s not in SIZES:
            raise ValueError(f"unknown size {s!r}; valid: {list(SIZES)}")
    for s in stacks:
        if s not in STACKS:
            raise ValueError(f"unknown stack {s!r}; valid: {list(STACKS)}")
    tasks = make_tasks(num_tasks, seed=seed)
    specs = [(c, s, st, t) for c in profiles for s in sizes for st in stacks for t in tasks]
    rows, faults, attempts = anyio.run(
        lambda: _run_cells(
            specs,
            profiles,
            seed=seed,
            transport=transport,
            client_timeout=client_timeout,
            agent=agent,
            tasks=tasks,
        ),
        **_backend(virtual),
    )
    return GridResult(cells=pd.DataFrame(rows), faults=faults, attempts=attempts)


@dataclass(frozen=True)
class Analysis:
    """The paper's statistics on a grid.

    Attributes
    ----------
    relative_drop : float
        ``1 - mean(completion | faulted) / mean(completion | none)``.
    mannwhitney_p : float
        Two-sided Mann-Whitney U p-value, faulted vs fault-free cells.
    completion : dict
        ``(condition, size) -> mean completion``.
    faulted_calls_per_task : dict
        ``size -> mean faulted calls per task`` under the faulted condition.
    anova_table : list of dict
        Type-II two-way ANOVA rows (``completion ~ C(stack) * C(size)``, faulted cells).
    partial_eta2 : dict
        ``stack``, ``size``, ``stack:size`` -> SS_effect / (SS_effect + SS_residual).
    interaction_p : float
    recovery : dict
        ``persistence -> fraction of faulted calls whose logical call finally succeeded``
        for the ``plan_execute`` (retrying) stack.
    """

    relative_drop: float
    mannwhitney_p: float
    completion: dict
    faulted_calls_per_task: dict
    anova_table: list
    partial_eta2: dict
    interaction_p: float
    recovery: dict


def analyse(
    grid: GridResult,
    *,
    faulted: str = "calibrated",
    anova_conditions: Sequence[str] = ("calibrated", "uniform_severe"),
    retry_stack: str = "plan_execute",
) -> Analysis:
    """Completion drop (Mann-Whitney), chain-length exposure, stack x size ANOVA, recovery.

    Parameters
    ----------
    grid : GridResult
    faulted : str
        The faulted condition compared with ``none``.
    anova_conditions : sequence of str
        Conditions whose cells enter the two-way ANOVA.
    retry_stack : str
        The stack whose recovery by persistence is reported.
    """
    import statsmodels.api as sm
    import statsmodels.formula.api as smf
    from scipy.stats import mannwhitneyu

    df = grid.cells
    if len(df) == 0:
        raise ValueError("analyse: the grid has no cells")
    base = df[df.condition == "none"].completion.to_numpy(float)
    hit = df[df.condition == faulted].completion.to_numpy(float)
    drop, p_mw = math.nan, math.nan
    if len(base) and len(hit):
        drop = float(1.0 - hit.mean() / base.mean()) if base.mean() > 0 else math.nan
        p_mw = float(mannwhitneyu(base, hit, alternative="two-sided").pvalue)
    completion = {
        (c, s): float(g.completion.mean()) for (c, s), g in df.groupby(["condition", "size"])
    }
    fc = df[df.condition == faulted]
    per_task = {s: float(g.num_faulted.mean()) for s, g in fc.groupby("size")}
    sub = df[df.condition.isin(list(anova_conditions))]
    table, eta, p_int = [], {}, math.nan
    if sub["stack"].nunique() > 1 and sub["size"].nunique() > 1:
        model = smf.ols("completion ~ C(stack) * C(size)", data=sub).fit()
        aov = sm.stats.anova_lm(model, typ=2)  # type II sums of squares
        ss_res = float(aov.loc["Residual", "sum_sq"])
        names = {"C(stack)": "stack", "C(size)": "size", "C(stack):C(size)": "stack:size"}
        for idx, row in aov.iterrows():
            table.append(
                {
                    "term": names.get(idx, idx),
                    "sum_sq": float(row["sum_sq"]),
                    "df": float(row["df"]),
                    "F": float(row["F"]) if np.isfinite(row["F"]) else math.nan,
                    "p": float(row["PR(>F)"]) if np.isfinite(row["PR(>F)"]) else math.nan,
                }
            )
            if idx in names:
                eta[names[idx]] = float(row["sum_sq"]) / (float(row["sum_sq"]) + ss_res)
        p_int = float(aov.loc["C(stack):C(size)", "PR(>F)"])
    recovery = {}
    att = [a for a in grid.attempts if a["stack"] == retry_stack and a["persistence"]]
    for q in ("permanent", "transient", "intermittent"):
        sel = [a["recovered"] for a in att if a["persistence"] == q]
        recovery[q] = float(np.mean(sel)) if sel else math.nan
    return Analysis(
        relative_drop=drop,
        mannwhitney_p=p_mw,
        completion=completion,
        faulted_calls_per_task=per_task,
        anova_table=table,
        partial_eta2=eta,
        interaction_p=p_int,
        recovery=recovery,
    )
