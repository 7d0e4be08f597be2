"""Per-call overhead of MCP-Injector against direct calls, side by side in one run.

Times fault-free ``tools/call`` round trips: in memory (the SDK's JSON-RPC in-memory
transport, bare vs wrapped by the client-side injector with an empty profile, a rule on
the called tool, and a calibrated profile that never fires but decides every call), with
the server middleware
(in-process client with and without it) and over stdio (direct server subprocess vs the
``neurips26-mcp-inject`` proxy in front of it), for our travel server and for the real
third-party ``mcp-server-time`` when the tests have installed it. Prints each latency ratio.
Spec targets: <= 1.15 in memory, <= 1.5 through the proxy.

    python benchmarks/mcp_injector.py [--tier small|smoke] [--calls N]
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import anyio
from mcp import Client, StdioServerParameters

from neurips26.papers.mcp_injector import (
    FaultInjector,
    FaultMode,
    FaultProfile,
    FaultRule,
    Persistence,
    build_travel_server,
    default_profile,
    memory_transport,
    stdio_server_command,
)

ARGS = {"origin": "CDG", "destination": "LHR", "date": "2026-05-01"}
TIME_ARGS = {"source_timezone": "UTC", "time": "12:00", "target_timezone": "Asia/Tokyo"}
#: the real third-party server the tests install (tests/papers/mcp_injector, own venv)
TIME_SERVER = Path(__file__).resolve().parents[1] / ".cache/mcp-servers/venv/bin/mcp-server-time"


async def _time(client_factory, n: int, tool: str, args: dict) -> tuple[float, float]:
    async with client_factory() as c:
        for _ in range(20):  # warm-up
            await c.call_tool(tool, args)
        t0, c0 = time.perf_counter(), time.process_time()
        for _ in range(n):
            await c.call_tool(tool, args)
        return (time.perf_counter() - t0) / n, (time.process_time() - c0) / n


def _children_cpu() -> float:
    t = os.times()
    return t.children_user + t.children_system


async def _session_cpu(client_factory, n: int, tool: str, args: dict) -> float:
    """CPU of the subprocesses (server, or proxy + server) of one session of 20 + n calls.

    Counted from ``os.times()`` once the SDK has reaped them; the difference between a
    session of ``20 + n`` and one of ``20`` calls removes start-up and shutdown.
    """
    c0 = _children_cpu()
    async with client_factory() as c:
        for _ in range(20 + n):
            await c.call_tool(tool, args)
    return _children_cpu() - c0


def _proxy_cpu_per_call(direct, injected, m: int, tool: str, args: dict) -> float:
    def per_call(factory):
        full = anyio.run(_session_cpu, factory, m, tool, args)
        base = anyio.run(_session_cpu, factory, 0, tool, args)
        return (full - base) / m

    return per_call(injected) - per_call(direct)


def _stdio(cmd):
    # the SDK passes only "safe" variables on; keep PYTHONPATH so the proxy is this checkout
    return lambda: Client(
        StdioServerParameters(command=cmd[0], args=list(cmd[1:]), env=dict(os.environ))
    )


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tier", default="small", choices=("smoke", "small"))
    ap.add_argument("--calls", type=int, default=None)
    ap.add_argument("--repeats", type=int, default=3)
    a = ap.parse_args(argv)
    n = a.calls or (100 if a.tier == "smoke" else 1000)
    srv = build_travel_server()
    srv_mw = build_travel_server(middleware=[FaultInjector(FaultProfile()).middleware()])
    empty = FaultInjector(FaultProfile())
    # never fire, but every call pays for its decision: a rule on the called tool, and a
    # calibrated profile with a negligible incident rate
    never = FaultRule(tool="search_flights", mode=FaultMode.TOOL_ERROR,
                      persistence=Persistence.INTERMITTENT, rate=0.0)
    ruled = FaultInjector(FaultProfile(rules=(never,)))
    calib = default_profile()
    calibrated = FaultInjector(FaultProfile(mode_weights=calib.mode_weights,
                                            persistence_weights=calib.persistence_weights,
                                            fault_rate=1e-12))
    server = stdio_server_command()
    proxy = [sys.executable, "-m", "neurips26.papers.mcp_injector.cli", "--"]
    pairs = {
        "memory, empty": (
            lambda: Client(memory_transport(srv)),
            lambda: Client(empty.wrap(memory_transport(srv))),
        ),
        "memory, rule": (
            lambda: Client(memory_transport(srv)),
            lambda: Client(ruled.wrap(memory_transport(srv))),
        ),
        "memory, calibrated": (
            lambda: Client(memory_transport(srv)),
            lambda: Client(calibrated.wrap(memory_transport(srv))),
        ),
        "server middleware": (lambda: Client(srv), lambda: Client(srv_mw)),
        "stdio proxy, ours": (_stdio(server), _stdio([*proxy, *server])),
    }
    tools = {name: ("search_flights", ARGS) for name in pairs}
    if TIME_SERVER.exists():
        real = [str(TIME_SERVER), "--local-timezone", "UTC"]
        pairs["stdio proxy, mcp-server-time"] = (_stdio(real), _stdio([*proxy, *real]))
        tools["stdio proxy, mcp-server-time"] = ("convert_time", TIME_ARGS)
    else:
        print(f"(no {TIME_SERVER}: run tests/papers/mcp_injector once to install it)")
    print(f"{n} fault-free tools/call per measurement, best of {a.repeats} (wall) per side")
    print(f"{'path':<30}{'direct ms':>11}{'injected ms':>13}{'ratio':>8}{'cpu ratio':>11}")
    for name, (direct, injected) in pairs.items():
        tool, args = tools[name]
        m = max(10, n // 5) if name.startswith("stdio") else n
        best_d = best_i = (float("inf"), float("inf"))
        for _ in range(a.repeats):  # interleaved so load drifts hit both sides
            best_d = min(best_d, anyio.run(_time, direct, m, tool, args))
            best_i = min(best_i, anyio.run(_time, injected, m, tool, args))
        ratio = best_i[0] / best_d[0]
        cpu_ratio = best_i[1] / best_d[1] if best_d[1] > 0 else float("nan")
        print(f"{name:<30}{best_d[0]*1e3:>11.3f}{best_i[0]*1e3:>13.3f}{ratio:>8.2f}"
              f"{cpu_ratio:>11.2f}")
        if name.startswith("stdio"):
            extra = _proxy_cpu_per_call(direct, injected, m, tool, args)
            print(f"{'':<30}proxy process CPU per call: {extra * 1e3:.3f} ms")
    print("(stdio: 'cpu ratio' is this client's CPU; the proxy's own is the line below each)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
