"""Per-call overhead of MCP-Injector against direct calls, side by side in one run.

Times fault-free round trips, direct and through each injection layer, for our travel
server and for real third-party servers when the tests have installed them
(``mcp-server-time`` and ``mcp-server-sqlite`` from PyPI, each in its own venv under
``.cache/mcp-servers``):

- in memory: the SDK's in-memory transport, bare vs wrapped by the client-side injector
  with an empty profile, a rule on the called tool, and a calibrated profile that decides
  every call (it never fires, so both sides do the same work downstream);
- the server middleware (in-process client, with and without it; same three profiles);
- the stdio proxy (server subprocess direct vs behind ``neurips26-mcp-inject``), for ours
  and the third-party servers; the proxy's own CPU per call is read from
  ``/proc/<pid>/stat`` of the proxy process after the warm-up and after the timed calls
  (so start-up and the server's cost are excluded; with 500 calls the clock-tick
  resolution is 0.02 ms a call);
- the Streamable HTTP proxy in front of our server run over HTTP; its process's CPU per
  call is read the same way and printed, the mean over repeats (no goal).

Each pair is measured ``--repeats`` times, direct and injected interleaved so load drifts
hit both. The ratio judged is best-of-repeats injected over best-of-repeats direct (as
``timeit`` does: the fastest repeat is the one least disturbed by other load); the range
of the per-repeat ratios is printed beside it (a wide range means a noisy machine, not a
slow injector). The proxy CPU per call judged is the smallest over repeats, for the same
reason. Goals
(the performance goals): stdio proxy <= 1.1x direct latency and <= 0.1 ms proxy CPU per call; server
middleware <= 1.05x; the in-memory transport is held to the spec's 1.15x and the HTTP
proxy (no goal in the issue) to the stdio proxy's 1.1x. Each line says whether its goal is
met.

    python benchmarks/mcp_injector.py [--tier small|smoke] [--calls N] [--repeats R]
"""

from __future__ import annotations

import argparse
import os
import re
import socket
import subprocess
import sys
import tempfile
import threading
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
SQL_ARGS = {"query": "SELECT 1 AS one"}
ROOT = Path(__file__).resolve().parents[1]
#: the real third-party servers the tests install (tests/papers/mcp_injector, own venvs)
TIME_SERVER = ROOT / ".cache/mcp-servers/venv/bin/mcp-server-time"
SQLITE_SERVER = ROOT / ".cache/mcp-servers/sqlite-venv/bin/mcp-server-sqlite"
PROXY = [sys.executable, "-m", "neurips26.papers.mcp_injector.cli"]
GOALS = {"stdio": 1.10, "middleware": 1.05, "memory": 1.15, "http": 1.10}
CPU_GOAL_MS = 0.1


def _proc_cpu(pidfile: Path) -> float:
    """CPU seconds (user + system) so far of the process whose pid is in ``pidfile``."""
    pid = int(pidfile.read_text().split()[0])
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


async def _time(client_factory, n: int, tool: str, args: dict,
                pidfile: Path | None = None) -> tuple[float, float | None]:
    """Seconds per call, and the proxy's CPU seconds per call (``pidfile`` given)."""
    async with client_factory() as c:
        for _ in range(min(20, n)):  # warm-up
            await c.call_tool(tool, args)
        cpu0 = _proc_cpu(pidfile) if pidfile is not None else None
        t0 = time.perf_counter()
        for _ in range(n):
            await c.call_tool(tool, args)
        dt = (time.perf_counter() - t0) / n
        cpu = (_proc_cpu(pidfile) - cpu0) / n if pidfile is not None else None
        return dt, cpu


def _stdio(cmd, mode="auto"):
    # the SDK passes only "safe" variables on; keep PYTHONPATH so the proxy is this checkout
    return lambda: Client(
        StdioServerParameters(command=cmd[0], args=list(cmd[1:]), env=dict(os.environ)),
        mode=mode,
    )


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _start_http(tmp: Path):
    """Our travel server over Streamable HTTP and the HTTP proxy in front of it."""
    port = _free_port()
    code = ("import sys; from neurips26.papers.mcp_injector import build_travel_server; "
            "build_travel_server().run('streamable-http', host='127.0.0.1', "
            f"port={port}, streamable_http_path='/mcp')")
    srv = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL)
    t0 = time.monotonic()
    while time.monotonic() - t0 < 60:
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                break
        time.sleep(0.05)
    url = f"http://127.0.0.1:{port}/mcp"
    prx = subprocess.Popen([*PROXY, "--upstream", url], stdout=subprocess.DEVNULL,
                           stderr=subprocess.PIPE)
    (tmp / "http.pid").write_text(str(prx.pid))  # for its own CPU time
    found: list[str] = []
    ready = threading.Event()

    def read():
        for line in prx.stderr:
            m = re.search(rb"listening on (\S+)", line)
            if m:
                found.append(m.group(1).decode())
                ready.set()

    threading.Thread(target=read, daemon=True).start()
    ready.wait(60)
    return url, (found[0] if found else None), (srv, prx)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tier", default="small", choices=("smoke", "small"))
    ap.add_argument("--calls", type=int, default=None)
    ap.add_argument("--repeats", type=int, default=None)
    a = ap.parse_args(argv)
    n = a.calls or (100 if a.tier == "smoke" else 1000)
    repeats = a.repeats or (3 if a.tier == "smoke" else 5)
    tmp = Path(tempfile.mkdtemp(prefix="mcp-inject-bench-"))
    never = FaultRule(tool="search_flights", mode=FaultMode.TOOL_ERROR,
                      persistence=Persistence.INTERMITTENT, rate=0.0)
    calib = default_profile()
    profiles = {
        "empty": FaultProfile(),
        "rule": FaultProfile(rules=(never,)),
        # decides every call, never fires (incident rate 1e-12)
        "calibrated": FaultProfile(mode_weights=calib.mode_weights,
                                   persistence_weights=calib.persistence_weights,
                                   fault_rate=1e-12),
    }
    srv = build_travel_server()
    pairs: dict[str, tuple] = {}
    for name, prof in profiles.items():
        inj = FaultInjector(prof)
        pairs[f"memory, {name}"] = ("memory", lambda: Client(memory_transport(srv)),
                                    (lambda i=inj: Client(i.wrap(memory_transport(srv)))),
                                    "search_flights", ARGS)
    for name, prof in profiles.items():
        srv_mw = build_travel_server(middleware=[FaultInjector(prof).middleware()])
        pairs[f"middleware, {name}"] = ("middleware", lambda: Client(srv),
                                        (lambda s=srv_mw: Client(s)), "search_flights", ARGS)
    servers = {"ours": (stdio_server_command(), "search_flights", ARGS)}
    if TIME_SERVER.exists():
        servers["mcp-server-time"] = ([str(TIME_SERVER), "--local-timezone", "UTC"],
                                      "convert_time", TIME_ARGS)
    else:
        print(f"(no {TIME_SERVER}: run tests/papers/mcp_injector once to install it)")
    if SQLITE_SERVER.exists():
        servers["mcp-server-sqlite"] = ([str(SQLITE_SERVER), "--db-path",
                                         str(tmp / "bench.db")], "read_query", SQL_ARGS)
    else:
        print(f"(no {SQLITE_SERVER}: run tests/papers/mcp_injector once to install it)")
    pidfiles = {}
    for name, (cmd, tool, args) in servers.items():
        pidfiles[name] = tmp / f"{name}.pid"  # the proxy's pid, for its own CPU time
        proxied = ["sh", "-c", 'echo $$ > "$0"; exec "$@"', str(pidfiles[name]), *PROXY,
                   "--", *cmd]
        mode = "legacy" if name == "mcp-server-sqlite" else "auto"  # a 1.x SDK server
        pairs[f"stdio proxy, {name}"] = ("stdio", _stdio(cmd, mode), _stdio(proxied, mode),
                                         tool, args)
    http_url, http_proxy, procs = _start_http(tmp)
    if http_proxy is not None:
        pidfiles["http"] = tmp / "http.pid"
        pairs["http proxy, ours"] = ("http", lambda: Client(http_url),
                                     lambda: Client(http_proxy), "search_flights", ARGS)
    else:
        print("(the HTTP proxy did not start; no HTTP line)")
    print(f"{n} fault-free calls per measurement in memory, {max(50, n // 2)} over stdio "
          f"and HTTP; {repeats} interleaved repeats per pair")
    print(f"{'path':<32}{'direct ms':>10}{'ratio':>8}{'range':>15}{'goal':>7}  met"
          "   (best of repeats; range: per-repeat ratios)")
    met_all = True
    try:
        for name, (kind, direct, injected, tool, args) in pairs.items():
            m = n if kind in ("memory", "middleware") else max(50, n // 2)
            d_t, i_t, ratios, cpus = [], [], [], []
            pidfile = (pidfiles.get(name.split(", ", 1)[1]) if kind == "stdio"
                       else pidfiles.get("http") if kind == "http" else None)
            for _ in range(repeats):
                d, _ = anyio.run(_time, direct, m, tool, args)
                i, cpu = anyio.run(_time, injected, m, tool, args, pidfile)
                d_t.append(d)
                i_t.append(i)
                ratios.append(i / d)
                cpus.append(cpu)
            med = min(i_t) / min(d_t)  # best of repeats on both sides
            goal = GOALS[kind]
            ok = med <= goal
            met_all &= ok
            print(f"{name:<32}{min(d_t) * 1e3:>10.3f}{med:>8.3f}"
                  f"{f'[{min(ratios):.2f}, {max(ratios):.2f}]':>15}{goal:>7.2f}  "
                  f"{'yes' if ok else 'NO'}")
            if kind == "stdio":
                cpu = 1e3 * min(cpus)
                ok_cpu = cpu <= CPU_GOAL_MS + 1e-9
                met_all &= ok_cpu
                print(f"{'':<32}proxy process CPU per call {cpu:.3f} ms "
                      f"[{1e3 * min(cpus):.3f}, {1e3 * max(cpus):.3f}] (goal <= "
                      f"{CPU_GOAL_MS} ms)  {'yes' if ok_cpu else 'NO'}")
            elif kind == "http":  # the mean: a repeat's clock ticks are coarse at m calls
                print(f"{'':<32}proxy process CPU per call {1e3 * sum(cpus) / repeats:.3f} "
                      f"ms, mean of [{1e3 * min(cpus):.3f}, {1e3 * max(cpus):.3f}] (no goal)")
    finally:
        for p in procs:
            p.terminate()
    print(f"all goals met: {'yes' if met_all else 'no'} (clock ratios from one run on this "
          "machine; a loaded machine widens the ranges)")
    return 0


if __name__ == "__main__":
    from _harness import run_pinned

    sys.exit(run_pinned(main))
