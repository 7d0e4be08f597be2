"""Drop-in stdio proxy: a fault-injecting relay between an MCP client and a server subprocess.

The proxy speaks newline-delimited JSON-RPC on its own stdin/stdout, starts the downstream
server command, and relays every line. Lines it does not rewrite are forwarded as the very
same bytes, so with an empty profile the proxy is transparent byte for byte. A
``tools/call`` request is counted per tool (on the proxy's single connection) and its
response rewritten by :func:`~.injector.apply_fault`. Unparsable or unexpected traffic
never stops the relay: a garbage line from the client is answered with a JSON-RPC parse
error (-32700, ``id: null``); a garbage line from the server is passed on; both are logged.
"""

from __future__ import annotations

import collections
import json
import math
import os
import sys
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

import anyio
import anyio.from_thread
import anyio.lowlevel
from anyio.streams.buffered import BufferedByteReceiveStream

from .faults import FaultMode, FaultProfile, ProfileError, parse_profile
from .injector import DISCONNECT, DROP, FaultInjector, apply_fault

__all__ = ["ProxyConfig", "load_config", "parse_config", "run_proxy"]

_MAX_LINE = 64 * 1024 * 1024
_CONFIG_KEYS = {"seed", "log", "strict", "connection", "profile"}
_PROFILE_KEYS = {
    "rules",
    "mode_weights",
    "persistence_weights",
    "fault_rate",
    "transient_duration",
    "intermittent_p",
    "intermittent_window",
    "error_code",
    "label",
}


@dataclass(frozen=True)
class ProxyConfig:
    """The proxy's configuration (from YAML via :func:`load_config`).

    Attributes
    ----------
    profile : FaultProfile
    seed : int
    log_path : str or None
        JSONL fault log.
    strict : bool
        Fail (exit 1) when a rule matches no tool the server lists; else warn on stderr.
    connection : str
        Connection label used for the per-connection counters and the log.
    """

    profile: FaultProfile
    seed: int = 0
    log_path: str | None = None
    strict: bool = False
    connection: str = "stdio"


def parse_config(data: Any, *, source: str = "config") -> ProxyConfig:
    """Validate a config mapping; raise :class:`ProfileError` naming the key at fault.

    Schema (all keys optional)::

        seed: 7                  # integer >= 0
        log: faults.jsonl        # JSONL fault log
        strict: false            # rules must match a listed tool
        connection: stdio        # label in the log
        profile:                 # or the same keys at top level
          rules: [{tool: "search_*", mode: timeout, persistence: transient, duration: 2}]
          mode_weights: {tool_error: 3, timeout: 1}
          persistence_weights: {transient: 1}
          fault_rate: 0.1

    Parameters
    ----------
    data : mapping or None
        The parsed YAML/JSON document (``None``, an empty file, is a transparent proxy).
    source : str
        Name used in error messages (the file path).

    Returns
    -------
    ProxyConfig
        The validated configuration.

    Raises
    ------
    ProfileError
        On an unknown key, a wrong type or an out-of-range value, naming it.
    """
    if data is None:
        data = {}
    if not isinstance(data, Mapping):
        raise ProfileError(f"{source}: top level must be a mapping, got {type(data).__name__}")
    unknown = set(data) - _CONFIG_KEYS - _PROFILE_KEYS
    if unknown:
        raise ProfileError(
            f"{source}: unknown key(s) {sorted(unknown)}; valid: "
            f"{', '.join(sorted(_CONFIG_KEYS | _PROFILE_KEYS))}"
        )
    if "profile" in data and set(data) & _PROFILE_KEYS:
        raise ProfileError(f"{source}: give profile keys either under 'profile:' or at top level")
    prof_data = data.get("profile", {k: v for k, v in data.items() if k in _PROFILE_KEYS})
    try:
        profile = parse_profile(prof_data)
    except ProfileError as e:
        raise ProfileError(f"{source}: {e}") from None
    seed = data.get("seed", 0)
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise ProfileError(f"{source}: seed must be an integer >= 0, got {seed!r}")
    log = data.get("log")
    if log is not None and not isinstance(log, str):
        raise ProfileError(f"{source}: log must be a file path string, got {log!r}")
    strict = data.get("strict", False)
    if not isinstance(strict, bool):
        raise ProfileError(f"{source}: strict must be true or false, got {strict!r}")
    conn = data.get("connection", "stdio")
    if not isinstance(conn, str) or not conn:
        raise ProfileError(f"{source}: connection must be a non-empty string, got {conn!r}")
    return ProxyConfig(profile=profile, seed=seed, log_path=log, strict=strict, connection=conn)


def load_config(path: str | Path) -> ProxyConfig:
    """Read a YAML (``yaml.safe_load``) or JSON config file; see :func:`parse_config`.

    Parameters
    ----------
    path : str or Path
        The config file. YAML tags that construct Python objects are refused.

    Returns
    -------
    ProxyConfig
        The validated configuration.

    Raises
    ------
    ProfileError
        If the file cannot be read, is not valid YAML, or fails :func:`parse_config`.
    """
    import yaml

    path = Path(path)
    try:
        text = path.read_text()
    except OSError as e:
        raise ProfileError(f"cannot read config {str(path)!r}: {e.strerror or e}") from e
    try:
        data = yaml.safe_load(text)  # JSON is YAML too
    except yaml.YAMLError as e:
        raise ProfileError(f"config {str(path)!r}: invalid YAML: {e}") from e
    return parse_config(data, source=f"config {str(path)!r}")


class _Relay:
    def __init__(self, injector: FaultInjector, connection: str, out: BinaryIO, err: Any):
        self.inj = injector
        self.conn = connection
        self.out = out
        self.err = err
        self.pending: dict[Any, Any] = {}
        self.client_eof = False
        self.dropped = False
        self.stderr_tail: collections.deque[bytes] = collections.deque(maxlen=40)

    def write_client(self, line: bytes) -> None:
        if not line.endswith(b"\n"):
            line += b"\n"
        self.out.write(line)
        self.out.flush()

    def say(self, msg: str) -> None:
        print(f"neurips26-mcp-inject: {msg}", file=self.err, flush=True)


def _key(rid: Any) -> Any:
    """Hashable key of a JSON-RPC id; None for an id that is not a string, number or null.

    Invalid ids (objects, arrays, booleans) are passed on untracked, never hashed.
    """
    if isinstance(rid, str):
        return ("s", rid)
    if rid is None or (isinstance(rid, (int, float)) and not isinstance(rid, bool)):
        return ("n", rid)
    return None


def _start_stdin_reader(stdin: BinaryIO) -> Any:
    """Lines of ``stdin`` on a memory stream, read by a daemon thread (never blocks exit)."""
    send, recv = anyio.create_memory_object_stream[bytes](math.inf)
    token = anyio.lowlevel.current_token()

    def deliver(line: bytes) -> None:
        anyio.from_thread.run_sync(send.send_nowait, line, token=token)

    def pump() -> None:
        # os.read on the raw fd, not stdin.readline: a daemon thread blocked inside a
        # BufferedReader holds its lock and aborts the interpreter at shutdown.
        try:
            fd = stdin.fileno()
        except (AttributeError, OSError, ValueError):
            fd = None
        try:
            if fd is None:
                while line := stdin.readline():
                    deliver(line)
            else:
                buf = b""
                while chunk := os.read(fd, 1 << 16):
                    buf += chunk
                    *lines, buf = buf.split(b"\n")
                    for line in lines:
                        deliver(line + b"\n")
                if buf:
                    deliver(buf)
            deliver(b"")
        except Exception:  # loop gone or stream closed: nothing left to deliver to
            return

    threading.Thread(target=pump, name="mcp-inject-stdin", daemon=True).start()
    return recv


async def _client_to_server(relay: _Relay, stdin: BinaryIO, proc: Any, tg: Any) -> None:
    lines = _start_stdin_reader(stdin)
    while True:
        try:
            line = await lines.receive()
        except anyio.EndOfStream:
            break
        if not line:
            break
        if not line.strip():
            continue
        try:
            msg = json.loads(line)
        except (json.JSONDecodeError, UnicodeDecodeError) as e:
            relay.inj.record_anomaly("client", f"unparsable line: {e}", connection=relay.conn)
            err = {
                "jsonrpc": "2.0",
                "id": None,
                "error": {"code": -32700, "message": "Parse error"},
            }
            relay.write_client(json.dumps(err).encode())
            continue
        if isinstance(msg, list):
            relay.inj.record_anomaly(
                "client", "batched message passed through", connection=relay.conn
            )
        elif isinstance(msg, dict) and msg.get("method") == "tools/call" and "id" in msg:
            params = msg.get("params")
            tool = params.get("name") if isinstance(params, dict) else None
            if _key(msg["id"]) is None:
                relay.inj.record_anomaly(
                    "client",
                    f"tools/call with invalid id {msg['id']!r} passed on without injection",
                    connection=relay.conn,
                )
            elif isinstance(tool, str):
                d = relay.inj.decide(tool, connection=relay.conn)
                if d is not None and d.mode is FaultMode.CONNECTION_DROP:
                    relay.dropped = True
                    relay.say(f"injected connection drop on tools/call {tool!r}")
                    tg.cancel_scope.cancel()
                    return
                relay.pending[_key(msg["id"])] = d
        try:
            await proc.stdin.send(line)
        except (anyio.BrokenResourceError, anyio.ClosedResourceError):
            break
    relay.client_eof = True
    try:
        await proc.stdin.aclose()
    except (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
        pass


async def _deliver_later(relay: _Relay, line: bytes, delay: float) -> None:
    await anyio.sleep(delay)
    relay.write_client(line)


async def _server_to_client(relay: _Relay, proc: Any, tg: Any) -> None:
    stream = BufferedByteReceiveStream(proc.stdout)
    while True:
        try:
            line = await stream.receive_until(b"\n", _MAX_LINE)
        except (anyio.EndOfStream, anyio.IncompleteRead, anyio.ClosedResourceError):
            break
        except anyio.DelimiterNotFound:
            relay.inj.record_anomaly("server", "line too long; dropped", connection=relay.conn)
            continue
        raw = line + b"\n"
        if not line.strip():
            continue
        try:
            msg = json.loads(line)
        except (json.JSONDecodeError, UnicodeDecodeError) as e:
            relay.inj.record_anomaly(
                "server", f"unparsable line passed on: {e}", connection=relay.conn
            )
            relay.write_client(raw)
            continue
        if (
            isinstance(msg, dict)
            and ("result" in msg or "error" in msg)
            and _key(msg.get("id")) is not None
            and _key(msg.get("id")) in relay.pending
        ):
            d = relay.pending.pop(_key(msg.get("id")))
            new = apply_fault(d, msg)
            if new == DROP:
                continue
            if new == DISCONNECT:  # pragma: no cover - handled on the request
                tg.cancel_scope.cancel()
                return
            out = raw if new is msg else (json.dumps(new, separators=(",", ":")) + "\n").encode()
            if d is not None and d.mode is FaultMode.TIMEOUT and d.hang_s is not None:
                tg.start_soon(_deliver_later, relay, out, d.hang_s)
                continue
            relay.write_client(out)
            continue
        if isinstance(msg, dict) and "id" in msg and "method" not in msg:
            if isinstance(msg.get("result"), dict) and isinstance(msg["result"].get("tools"), list):
                names = [t.get("name") for t in msg["result"]["tools"] if isinstance(t, dict)]
                try:
                    for pattern in relay.inj.check_tools_quiet(names):
                        relay.say(f"warning: fault rule {pattern!r} matches no listed tool")
                except ValueError as e:
                    relay.say(f"error: {e}")
                    relay.write_client(raw)
                    tg.cancel_scope.cancel()
                    return
        relay.write_client(raw)
    # downstream EOF
    if not relay.client_eof:
        code = proc.returncode
        with anyio.move_on_after(2):
            code = await proc.wait()
        tail = b"".join(relay.stderr_tail).decode("utf-8", "replace")[-2000:]
        relay.say(
            f"downstream server exited (code {code}) while the client was still connected; "
            f"stderr tail:\n{tail}"
        )
        relay.failed = True
    tg.cancel_scope.cancel()


async def _relay_stderr(relay: _Relay, proc: Any) -> None:
    async for chunk in proc.stderr:
        relay.stderr_tail.append(chunk)
        try:
            relay.err.write(chunk.decode("utf-8", "replace"))
            relay.err.flush()
        except (OSError, ValueError):
            pass


async def run_proxy_async(
    command: Sequence[str],
    injector: FaultInjector,
    *,
    connection: str = "stdio",
    stdin: BinaryIO | None = None,
    stdout: BinaryIO | None = None,
    stderr: Any = None,
) -> int:
    """Async core of :func:`run_proxy`; returns the exit status (0 ok, 1 downstream failure)."""
    stdin = stdin if stdin is not None else sys.stdin.buffer
    stdout = stdout if stdout is not None else sys.stdout.buffer
    stderr = stderr if stderr is not None else sys.stderr
    relay = _Relay(injector, connection, stdout, stderr)
    relay.failed = False
    cmd = [str(c) for c in command]
    try:
        proc = await anyio.open_process(cmd, stdin=-1, stdout=-1, stderr=-1)
    except OSError as e:
        relay.say(f"cannot start downstream server {' '.join(cmd)!r}: {e}")
        return 1
    async with proc:
        async with anyio.create_task_group() as tg:
            tg.start_soon(_relay_stderr, relay, proc)
            tg.start_soon(_server_to_client, relay, proc, tg)
            tg.start_soon(_client_to_server, relay, stdin, proc, tg)
        if proc.returncode is None:
            with anyio.move_on_after(5):
                await proc.wait()
            if proc.returncode is None:
                proc.kill()
                await proc.wait()
    return 1 if relay.failed else 0


def run_proxy(
    command: Sequence[str],
    profile: FaultProfile,
    *,
    seed: int = 0,
    log_path: str | Path | None = None,
    strict: bool = False,
    connection: str = "stdio",
) -> int:
    """Run the stdio proxy in front of ``command`` until the client or the server goes away.

    Parameters
    ----------
    command : sequence of str
        The downstream MCP server command (``["python", "server.py"]``).
    profile : FaultProfile
    seed : int
    log_path : path or None
        JSONL fault log.
    strict : bool
        Exit when a rule matches no tool the server lists.
    connection : str
        Label of the proxy's connection in the log.

    Returns
    -------
    int
        Exit status: 0 when the client closed stdin (or a ``connection_drop`` was injected),
        1 when the downstream server could not start or died first.
    """
    if not command:
        raise ValueError("run_proxy: command is empty; give the downstream server command")
    inj = FaultInjector(profile, seed=seed, log_path=log_path, strict=strict)
    return anyio.run(lambda: run_proxy_async(command, inj, connection=connection))
