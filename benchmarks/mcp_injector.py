"""Per-call overhead of MCP-Injector against direct calls, side by side in one run.

Times fault-free ``tools/call`` round trips: in memory (the SDK's JSON-RPC in-memory
transport, bare vs wrapped by the client-side injector), with the server middleware
(in-process client with and without it) and over stdio (direct server subprocess vs the
``neurips26-mcp-inject`` proxy in front of it). Prints each latency ratio.
Spec targets: <= 1.15 in memory, <= 1.5 through the proxy.

    python benchmarks/mcp_injector.py [--tier small|smoke] [--calls N]
"""

from __future__ import annotations

import argparse
import sys
import time

import anyio
from mcp import Client, StdioServerParameters

from neurips26.papers.mcp_injector import (
    FaultInjector,
    FaultProfile,
    build_travel_server,
    memory_transport,
    stdio_server_command,
)

ARGS = {"origin": "CDG", "destination": "LHR", "date": "2026-05-01"}


async def _time(client_factory, n: int) -> tuple[float, float]:
    async with client_factory() as c:
        for _ in range(20):  # warm-up
            await c.call_tool("search_flights", ARGS)
        t0, c0 = time.perf_counter(), time.process_time()
        for _ in range(n):
            await c.call_tool("search_flights", ARGS)
        return (time.perf_counter() - t0) / n, (time.process_time() - c0) / n


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
    server = stdio_server_command()
    proxy = [sys.executable, "-m", "neurips26.papers.mcp_injector.cli", "--", *server]
    pairs = {
        "memory transport": (
            lambda: Client(memory_transport(srv)),
            lambda: Client(empty.wrap(memory_transport(srv))),
        ),
        "server middleware": (lambda: Client(srv), lambda: Client(srv_mw)),
        "stdio proxy": (
            lambda: Client(StdioServerParameters(command=server[0], args=server[1:])),
            lambda: Client(StdioServerParameters(command=proxy[0], args=proxy[1:])),
        ),
    }
    print(f"{n} fault-free tools/call per measurement, best of {a.repeats} (wall) per side")
    print(f"{'path':<20}{'direct ms':>11}{'injected ms':>13}{'ratio':>8}{'cpu ratio':>11}")
    for name, (direct, injected) in pairs.items():
        m = max(10, n // 5) if name == "stdio proxy" else n
        best_d = best_i = (float("inf"), float("inf"))
        for _ in range(a.repeats):  # interleaved so load drifts hit both sides
            best_d = min(best_d, anyio.run(_time, direct, m))
            best_i = min(best_i, anyio.run(_time, injected, m))
        ratio = best_i[0] / best_d[0]
        cpu_ratio = best_i[1] / best_d[1] if best_d[1] > 0 else float("nan")
        print(f"{name:<20}{best_d[0]*1e3:>11.3f}{best_i[0]*1e3:>13.3f}{ratio:>8.2f}"
              f"{cpu_ratio:>11.2f}")
    print("(stdio: the proxy's own CPU runs in its subprocess; wall ratio is the one to read)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
