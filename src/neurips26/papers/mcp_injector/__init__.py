"""MCP-Injector: seeded, protocol-aware fault injection for Model Context Protocol tool calls.

The paper puts a middleware on the MCP tool-call path that injects faults of chosen
persistence (permanent, transient, intermittent) from seedable, replayable schedules,
calibrated on mined MCP incident data, without changing the agent or the server, and
shows that such faults cut LLM agents' task completion sharply, that bigger models with
longer tool chains meet more faults, and that the framework's error handling matters more
than model size. We implement the middleware on the official ``mcp`` Python SDK (2.3):
a server-side ``ServerMiddleware``, a client-side ``Transport`` wrapper, and a stdio proxy
command, all sharing one keyed schedule and a JSONL fault log.

Deviations from the paper
-------------------------
- The six failure modes are inferred; the mined fault distribution is unavailable, so the
  shipped calibrated profile has placeholder weights (:func:`default_profile`).
- The experiment uses scripted MCP-client agents (two "sizes" x three error-handling
  "stacks") on a toy travel-desk server instead of 20B/120B LLMs in real frameworks: it is
  a mechanism check, not a replication of the LLM numbers. See ``harness.py``.
- The stateless 2026-07-28 protocol has no connections; the server middleware counts calls
  per tool per server there (``connection = "stateless"``).

Public API
----------
FaultMode, Persistence, FaultRule, BurstParams, FaultProfile, FaultDecision, FaultSchedule,
ProfileError, parse_profile, load_profile, profile_from_counts, default_profile,
uniform_severe_profile, FaultInjector, FaultInjectionMiddleware, FaultInjectingTransport,
apply_fault, corrupt_result, fault_result, request_target, FAULT_METHODS, memory_transport,
run_proxy, run_http_proxy, build_http_proxy_app, load_config, parse_config,
build_travel_server, make_tasks, run_grid, analyse,
run_scripted_agent, summarize_log, format_summary, read_log, LogSummary.
"""

from ._compat import SDK_VERSION, memory_transport
from .calllog import LogSummary, format_summary, read_log, summarize_log
from .faults import (
    FAULT_METHODS,
    BurstParams,
    FaultDecision,
    FaultMode,
    FaultProfile,
    FaultRule,
    FaultSchedule,
    Persistence,
    ProfileError,
    default_profile,
    load_profile,
    parse_profile,
    profile_from_counts,
    uniform_severe_profile,
)
from .harness import (
    CONDITIONS,
    SIZES,
    STACKS,
    Analysis,
    GridResult,
    TaskOutcome,
    analyse,
    run_grid,
    run_scripted_agent,
)
from .http_proxy import build_http_proxy_app, run_http_proxy
from .injector import (
    FaultInjectingTransport,
    FaultInjectionMiddleware,
    FaultInjector,
    apply_fault,
    corrupt_result,
    empty_instance,
    fault_result,
    request_target,
)
from .proxy import ProxyConfig, load_config, parse_config, run_proxy
from .travel import TRAVEL_TOOLS, build_travel_server, make_tasks, stdio_server_command

__all__ = [
    "CONDITIONS",
    "FAULT_METHODS",
    "SDK_VERSION",
    "SIZES",
    "STACKS",
    "TRAVEL_TOOLS",
    "Analysis",
    "BurstParams",
    "FaultDecision",
    "FaultInjectingTransport",
    "FaultInjectionMiddleware",
    "FaultInjector",
    "FaultMode",
    "FaultProfile",
    "FaultRule",
    "FaultSchedule",
    "GridResult",
    "LogSummary",
    "Persistence",
    "ProfileError",
    "ProxyConfig",
    "TaskOutcome",
    "analyse",
    "apply_fault",
    "build_http_proxy_app",
    "build_travel_server",
    "corrupt_result",
    "default_profile",
    "empty_instance",
    "fault_result",
    "format_summary",
    "load_config",
    "load_profile",
    "make_tasks",
    "memory_transport",
    "parse_config",
    "parse_profile",
    "profile_from_counts",
    "read_log",
    "request_target",
    "run_grid",
    "run_http_proxy",
    "run_proxy",
    "run_scripted_agent",
    "stdio_server_command",
    "summarize_log",
    "uniform_severe_profile",
]
