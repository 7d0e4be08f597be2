"""Drop-in stdio proxy: a fault-injecting relay between an MCP client and a server subprocess.

The proxy speaks newline-delimited JSON-RPC on its own stdin/stdout, starts the downstream
server command, and relays every line. Lines it does not rewrite are forwarded as the very
same bytes, so with an empty profile the proxy is transparent byte for byte. A
``tools/call`` request is counted per tool (on the proxy's single connection); the other
methods rules can target (``tools/list``, ``resources/list``, ``resources/read``,
``prompts/list``, ``prompts/get``, ...) per method and target, with the same semantics. A fault
that models a failure before the server acts (``tool_error``, ``protocol_error``,
``empty_result``, ``timeout`` without ``hang_s``, ``connection_drop``) is answered by the
proxy and the call never reaches the server; otherwise (``malformed_result``, a delayed
``timeout``, any rule with ``after_server: true``) the call is forwarded and its response
rewritten by :func:`~.injector.apply_fault`. Unparsable or unexpected traffic never stops
the relay: a garbage line from the client is answered with a JSON-RPC parse error
(-32700, ``id: null``); a garbage line from the server is passed on; a server line over
``max_line`` bytes is dropped and the request it answered gets a -32603 error (its id is
read from the line's first bytes); all are logged. Framing is linear in the bytes read.
The two directions are relayed by two threads with blocking reads and writes on the
server's pipes (one lock guards the shared state and the client's stdout, another the
server's stdin); the event loop only runs delayed answers, the server's stderr and the
process, so a call costs two thread wake-ups and no event-loop round trips.
On a ``connection_drop``, a failed ``strict`` check or the server's death the client's
stdout is closed first, then the server's stdin; a server still running 5 s after the
client's EOF is killed. At exit the log gets a ``kind = "stop"`` record with the number of
``tools/call`` relayed and the proxy's own CPU seconds while relaying (``cpu_s``).
A server answer that starts as the SDKs write it (``{"jsonrpc":"2.0","id":N,"result":``)
and needs no rewrite is passed on without parsing the rest of the line (so an invalid
tail is not logged as an anomaly); every other line is parsed.
"""

from __future__ import annotations

import collections
import json
import os
import re
import sys
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

import anyio
import anyio.from_thread
import anyio.lowlevel

from .faults import FaultMode, FaultProfile, FaultSchedule, ProfileError, _parse_profile
from .injector import (
    DISCONNECT,
    DROP,
    FaultInjector,
    request_target,
    response_outcome,
)

__all__ = ["MAX_LINE", "LineSplitter", "ProxyConfig", "load_config", "parse_config", "run_proxy"]

#: Longest server line the proxy relays (bytes); longer ones are answered with an error.
MAX_LINE = 64 * 1024 * 1024
#: Seconds the server gets to exit after the client's stdin EOF before it is killed.
EOF_GRACE_S = 5.0
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
    "after_server",
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
        profile = _parse_profile(prof_data)
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
    """Read a YAML (``yaml.safe_load``), JSON or TOML config file; see :func:`parse_config`.

    Parameters
    ----------
    path : str or Path
        The config file; ``.toml`` files are read with :mod:`tomllib`, anything else as
        YAML (JSON is YAML too). YAML tags that construct Python objects are refused.

    Returns
    -------
    ProxyConfig
        The validated configuration.

    Raises
    ------
    ProfileError
        If the file cannot be read, is not valid YAML/TOML, or fails :func:`parse_config`.
    """
    import yaml

    path = Path(path)
    try:
        text = path.read_text()
    except OSError as e:
        raise ProfileError(f"cannot read config {str(path)!r}: {e.strerror or e}") from e
    if path.suffix.lower() == ".toml":
        import tomllib

        try:
            data = tomllib.loads(text)
        except tomllib.TOMLDecodeError as e:
            raise ProfileError(f"config {str(path)!r}: invalid TOML: {e}") from e
        return parse_config(data, source=f"config {str(path)!r}")
    try:
        data = yaml.safe_load(text)  # JSON is YAML too
    except yaml.YAMLError as e:
        raise ProfileError(f"config {str(path)!r}: invalid YAML: {e}") from e
    except RecursionError:
        raise ProfileError(f"config {str(path)!r}: nested too deeply to read") from None
    return parse_config(data, source=f"config {str(path)!r}")


class LineSplitter:
    r"""Linear newline framing of a byte stream, with an optional per-line size limit.

    Each chunk is scanned once (no re-concatenation of the buffer): complete lines are
    returned as they end, a partial line is kept as a list of pieces. A line longer than
    ``max_line`` bytes (newline excluded) is discarded up to its newline and reported as
    ``("too_long", head)`` with its first bytes (those seen when the limit was crossed, at
    most 4 KiB), so the caller can find the id it answers.

    Parameters
    ----------
    max_line : int or None
        Largest accepted line in bytes; ``None`` for no limit.

    Examples
    --------
    >>> s = LineSplitter(max_line=4)
    >>> s.feed(b'ab\ncdefgh') + s.feed(b'ij\nk') + s.close()
    [('line', b'ab'), ('too_long', b'cdefgh'), ('line', b'k')]
    """

    HEAD = 4096

    def __init__(self, max_line: int | None = None) -> None:
        self.max_line = max_line
        self._parts: list[bytes] = []
        self._size = 0
        self._skip_head: bytes | None = None  # set while discarding an over-long line

    def _overflow(self, extra: bytes) -> None:
        head = b"".join(self._parts)[: self.HEAD] if self._size < 2 * self.HEAD else b""
        if not head:  # take only what is needed from the pieces
            acc = []
            n = 0
            for part in self._parts:
                acc.append(part[: self.HEAD - n])
                n += len(acc[-1])
                if n >= self.HEAD:
                    break
            head = b"".join(acc)
        self._skip_head = (head + extra)[: self.HEAD]
        self._parts, self._size = [], 0

    def feed(self, chunk: bytes) -> list[tuple[str, bytes]]:
        """Events ``("line", bytes)`` / ``("too_long", head)`` completed by ``chunk``."""
        out: list[tuple[str, bytes]] = []
        lim = self.max_line
        pos = 0
        while True:
            nl = chunk.find(b"\n", pos)
            piece = chunk[pos:] if nl < 0 else chunk[pos:nl]
            if self._skip_head is None:
                if lim is not None and self._size + len(piece) > lim:
                    self._overflow(piece)
                elif nl >= 0:
                    if self._parts:
                        self._parts.append(piece)
                        piece = b"".join(self._parts)
                        self._parts, self._size = [], 0
                    out.append(("line", piece))
                elif piece:
                    self._parts.append(piece)
                    self._size += len(piece)
            if nl < 0:
                return out
            if self._skip_head is not None:
                out.append(("too_long", self._skip_head))
                self._skip_head = None
            pos = nl + 1

    def close(self) -> list[tuple[str, bytes]]:
        """Events for a final line without a newline at end of stream."""
        if self._skip_head is not None:
            head, self._skip_head = self._skip_head, None
            return [("too_long", head)]
        if self._parts:
            line = b"".join(self._parts)
            self._parts, self._size = [], 0
            return [("line", line)]
        return []


#: A server success response as the SDKs write it (``{"jsonrpc":"2.0","id":<int or plain
#: string>,"result":``): its id is read from the first bytes, so a response the proxy does
#: not rewrite is passed on without parsing the whole line.
_FAST_RE = re.compile(rb'\{"jsonrpc":\s*"2\.0",\s*"id":\s*(-?\d+|"[^"\\]*")\s*,\s*"result"\s*:')
_IS_ERROR_RE = re.compile(rb'"isError"\s*:\s*true')
_ID_RE = re.compile(rb'"id"\s*:\s*(-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?|"(?:[^"\\]|\\.)*"|null)')


class _Relay:
    def __init__(self, injector: FaultInjector, connection: str, out: BinaryIO, err: Any):
        self.inj = injector
        self.conn = connection
        self.out = out
        self.err = err
        self.pending: dict[Any, Any] = {}  # tools/call id -> decision (forwarded calls)
        self.outstanding: dict[Any, str] = {}  # every forwarded request id -> method
        self.swallowed: set[Any] = set()  # ids of calls answered (or dropped) by the proxy
        self.client_eof = False
        self.dropped = False
        self.failed = False
        self.client_closed = False
        self.stderr_tail: collections.deque[bytes] = collections.deque(maxlen=40)
        self.calls: dict[Any, dict[str, Any]] = {}  # tools/call id -> call record so far
        # the two relay threads and the event loop share this state: one lock for it and
        # the client's stdout, one for the server's stdin (never held while waiting on the
        # other, so a server that writes while we write to it cannot deadlock the relay)
        self.lock = threading.RLock()
        self.server_lock = threading.Lock()
        self.server_fd: int | None = None
        self.in_loop: Any = None  # schedule f(*args) on the event loop, from any thread
        self.cancel: Any = None
        self.timers: set[threading.Timer] = set()  # latency faults not yet delivered

    def deliver_later(self, line: bytes, delay: float, key: Any, outcome: str) -> None:
        """Write ``line`` to the client ``delay`` seconds from now (a latency fault), from
        a timer thread: no event-loop task is started from the relay threads."""

        def fire() -> None:
            with self.lock:
                if timer not in self.timers:
                    return  # cancelled at shutdown
                self.timers.discard(timer)
                self.write_client(line)
                self.call_done(key, outcome)

        timer = threading.Timer(delay, fire)
        timer.daemon = True
        with self.lock:
            self.timers.add(timer)
        timer.start()

    def cancel_timers(self) -> None:
        """Drop the latency faults not yet delivered (the proxy is shutting down)."""
        with self.lock:
            for timer in self.timers:
                timer.cancel()
            self.timers.clear()

    def send_server(self, line: bytes) -> bool:
        """Write a line to the server's stdin (blocking); False once it is gone."""
        with self.server_lock:
            fd = self.server_fd
            if fd is None:
                return False
            view = memoryview(line)
            try:
                while view:
                    view = view[os.write(fd, view):]
            except OSError:
                return False
        return True

    def close_server_in(self) -> None:
        with self.server_lock:
            fd, self.server_fd = self.server_fd, None
            if fd is not None:
                try:
                    os.close(fd)
                except OSError:
                    pass

    def call_started(self, key: Any, msg_id: Any, tool: str, params: Any, d: Any) -> None:
        """Open the per-call log record of a ``tools/call`` (closed by :meth:`call_done`)."""
        rec = self.inj.open_call(self.conn, msg_id, tool, params, d)
        if rec is not None:
            self.calls[key] = rec

    def call_done(self, key: Any, outcome: str) -> None:
        """Close a call record: ``outcome`` and the latency as the client saw it."""
        self.inj.close_call(self.calls.pop(key, None), outcome)

    def calls_unanswered(self) -> None:
        for key in list(self.calls):
            self.call_done(key, "unanswered")

    def write_client(self, line: bytes, *, newline: bool = True) -> None:
        if self.client_closed:
            return
        if newline and not line.endswith(b"\n"):
            line += b"\n"
        try:
            self.out.write(line)
            self.out.flush()
        except (BrokenPipeError, OSError, ValueError):
            self.client_closed = True

    def close_client(self) -> None:
        """Close the client's side now, so it sees end of stream without waiting for us."""
        if self.client_closed:
            return
        self.client_closed = True
        try:
            self.out.flush()
        except (OSError, ValueError):
            pass
        try:
            fd = self.out.fileno()
        except (AttributeError, OSError, ValueError):
            fd = None
        if fd is None:
            try:
                self.out.close()
            except (OSError, ValueError):
                pass
            return
        # replace the fd by /dev/null: the pipe's write end closes, the fd number stays valid
        null = os.open(os.devnull, os.O_WRONLY)
        try:
            os.dup2(null, fd)
        finally:
            os.close(null)

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


def _stdin_lines(stdin: BinaryIO) -> Any:
    """Lines of ``stdin`` (each ending in a newline but maybe the last), framed linearly.

    ``os.read`` on the raw fd, not ``stdin.readline``: a daemon thread blocked inside a
    ``BufferedReader`` holds its lock and aborts the interpreter at shutdown.
    """
    try:
        fd = stdin.fileno()
    except (AttributeError, OSError, ValueError):
        fd = None
    if fd is None:
        while line := stdin.readline():
            yield line
        return
    split = LineSplitter()
    while chunk := os.read(fd, 1 << 16):
        for _, ln in split.feed(chunk):
            yield ln + b"\n"
    for _, ln in split.close():
        yield ln


def _disconnect(relay: _Relay, why: str) -> None:
    """Drop the connection now: close the client's stdout, then (loop) the server's stdin."""
    relay.dropped = True
    relay.say(why)
    with relay.lock:
        relay.close_client()
    relay.in_loop(relay.cancel)  # run_proxy_async then closes the server's stdin at once


def _client_thread(relay: _Relay, stdin: BinaryIO, on_eof: Any) -> None:
    """Relay client lines to the server (a daemon thread); tell the loop at EOF."""
    try:
        for line in _stdin_lines(stdin):
            if not _from_client(relay, line):
                break
            if relay.dropped:
                return
    except Exception:  # a closed stdin or a loop that is gone: nothing left to relay
        pass
    relay.client_eof = True
    relay.close_server_in()
    try:
        relay.in_loop(on_eof)
    except RuntimeError:  # the loop has already finished
        pass


def _server_thread(relay: _Relay, fd: int, max_line: int, on_eof: Any) -> None:
    """Relay server lines to the client (a daemon thread); tell the loop at EOF."""
    split = LineSplitter(max_line)
    try:
        while True:
            try:
                chunk = os.read(fd, 1 << 16)
            except OSError:
                chunk = b""
            events = split.feed(chunk) if chunk else split.close()
            with relay.lock:
                for kind, line in events:
                    if kind == "too_long":
                        _answer_too_long(relay, line, max_line)
                    elif not _from_server(relay, line):
                        return
            if not chunk:
                break
        relay.in_loop(on_eof)
    except RuntimeError:  # the loop has already finished
        pass
    finally:
        try:
            os.close(fd)
        except OSError:
            pass


async def _after_client_eof(relay: _Relay, proc: Any, eof: Any) -> None:
    await eof.wait()
    # a server that ignores stdin EOF must not keep the proxy alive
    with anyio.move_on_after(EOF_GRACE_S):
        await proc.wait()
    if proc.returncode is None:
        relay.say(f"server still running {EOF_GRACE_S:g} s after stdin EOF; killing it")
        proc.kill()


async def _after_server_eof(relay: _Relay, proc: Any, tg: Any, eof: Any) -> None:
    await eof.wait()
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


def _from_client(relay: _Relay, line: bytes) -> bool:
    """Handle one client line (client thread); False when the server's stdin is gone."""
    if not line.strip():
        return True
    with relay.lock:
        if not _note_client(relay, line):
            return True
    return relay.send_server(line)


def _note_client(relay: _Relay, line: bytes) -> bool:
    """Book-keeping and injection for one client line; False when it is not forwarded."""
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
        return False
    except (ValueError, RecursionError) as e:  # valid JSON past Python's limits
        relay.inj.record_anomaly(
            "client", f"line not parsed ({type(e).__name__}: {str(e)[:120]}); passed on "
            "without injection", connection=relay.conn)
        return True
    if not isinstance(msg, (dict, list)) or msg == []:
        # JSON-RPC 2.0: a request is an object (or a non-empty batch of them).
        relay.inj.record_anomaly("client", f"invalid request {str(msg)[:80]!r} answered",
                                 connection=relay.conn)
        err = {"jsonrpc": "2.0", "id": None,
               "error": {"code": -32600, "message": "Invalid Request"}}
        relay.write_client(json.dumps(err).encode())
        return False
    if isinstance(msg, list):
        relay.inj.record_anomaly("client", "batched message passed through", connection=relay.conn)
    elif isinstance(msg, dict) and "method" in msg:
        method = msg.get("method")
        params = msg.get("params")
        if "id" not in msg:
            if method == "notifications/cancelled" and isinstance(params, dict):
                k = _key(params.get("requestId"))
                if k is not None and k in relay.swallowed:
                    relay.swallowed.discard(k)
                    return False  # the server never saw that request
                relay.outstanding.pop(k, None)
        elif _key(msg["id"]) is None:
            if method == "tools/call":
                relay.inj.record_anomaly(
                    "client",
                    f"tools/call with invalid id {msg['id']!r} passed on without injection",
                    connection=relay.conn,
                )
        else:
            key = _key(msg["id"])
            tool = request_target(method, params)  # tool, URI, prompt name, "" (lists)
            if tool is not None:
                d = relay.inj.decide(tool, connection=relay.conn, method=method)
                if method == "tools/call":
                    relay.call_started(key, msg["id"], tool, params, d)
                if d is not None and not d.reaches_server:
                    if d.mode is FaultMode.CONNECTION_DROP:
                        relay.call_done(key, "disconnected")
                        _disconnect(relay, f"injected connection drop on {method} {tool!r}")
                        return False
                    new = relay.inj.rewrite(d, {"jsonrpc": "2.0", "id": msg["id"]})
                    if new == DROP:
                        relay.swallowed.add(key)
                        relay.call_done(key, "no_response")
                    else:
                        relay.write_client(json.dumps(new, separators=(",", ":")).encode())
                        relay.call_done(key, response_outcome(new))
                    return False  # failed before the server acted: never forwarded
                if d is not None:
                    relay.pending[key] = d
            relay.outstanding[key] = method if isinstance(method, str) else "?"
    return True



def _answer_too_long(relay: _Relay, head: bytes, limit: int) -> None:
    """A server line over the limit was dropped: answer the request it was meant for."""
    key = None
    m = _ID_RE.search(head)
    if m is not None:
        try:
            key = _key(json.loads(m.group(1)))
        except (ValueError, UnicodeDecodeError):
            key = None
    if m is None and len(relay.outstanding) == 1:  # no id in sight: the one in flight
        key = next(iter(relay.outstanding))
    if key not in relay.outstanding:  # e.g. a request from the server: nothing to answer
        key = None
    detail = f"server line longer than {limit} bytes dropped"
    if key is None:
        relay.inj.record_anomaly("server", f"{detail}; no request to answer", connection=relay.conn)
        return
    relay.inj.record_anomaly("server", f"{detail}; answered id {key[1]!r}", connection=relay.conn)
    relay.outstanding.pop(key, None)
    relay.pending.pop(key, None)
    err = {
        "jsonrpc": "2.0",
        "id": key[1],
        "error": {"code": -32603, "message": f"neurips26-mcp-inject: {detail}"},
    }
    relay.write_client(json.dumps(err).encode())
    relay.call_done(key, "error")


def _from_server(relay: _Relay, line: bytes) -> bool:
    """Handle one server line (server thread, ``relay.lock`` held); False to stop."""
    raw = line + b"\n"
    fast = _FAST_RE.match(line)
    if fast is not None and len(fast.group(1)) <= 4000:  # hot path: a plain answer to a
        rid = fast.group(1)  # request we do not rewrite (ids past int()'s limit go slow)
        key = ("s", rid[1:-1].decode("utf-8", "replace")) if rid[:1] == b'"' \
            else ("n", int(rid))  # fmt: skip
        if key not in relay.pending and relay.outstanding.get(key) != "tools/list":
            relay.outstanding.pop(key, None)
            relay.write_client(raw)
            if relay.calls:  # a call record to close (only with a log)
                relay.call_done(key, "is_error" if _IS_ERROR_RE.search(line) else "ok")
            return True
    if not line.strip():
        return True
    try:
        msg = json.loads(line)
    except (ValueError, UnicodeDecodeError, RecursionError) as e:  # also past int()/depth limits
        relay.inj.record_anomaly("server", f"unparsable line passed on: {str(e)[:200]}",
                                 connection=relay.conn)
        relay.write_client(raw)
        return True
    if not (isinstance(msg, dict) and "id" in msg and "method" not in msg):
        relay.write_client(raw)
        return True
    key = _key(msg.get("id"))
    if key is not None:
        relay.outstanding.pop(key, None)
    if ("result" in msg or "error" in msg) and key is not None and key not in relay.pending:
        relay.call_done(key, response_outcome(msg))  # a call record to close, if any
    if ("result" in msg or "error" in msg) and key is not None and key in relay.pending:
        d = relay.pending.pop(key)
        if d is not None and d.method == "tools/list" and isinstance(msg.get("result"), dict):
            relay.inj.note_tools(msg["result"].get("tools"))  # the real schemas, then the fault
        new = relay.inj.rewrite(d, msg)
        if new == DROP:
            relay.call_done(key, "no_response")
            return True
        if new == DISCONNECT:  # connection_drop after the server acted
            relay.call_done(key, "disconnected")
            _disconnect(relay, f"injected connection drop after {d.tool!r}")
            return False
        if d is not None and d.cut_bytes is not None:  # wire-level: the real line, cut
            relay.write_client(raw[: d.cut_bytes], newline=d.cut_then == "newline")
            relay.call_done(key, "cut")
            if d.cut_then == "close":
                _disconnect(relay, f"injected cut after {d.cut_bytes} bytes of the "
                            f"response to {d.tool!r}")  # fmt: skip
                return False
            return True
        out = raw if new is msg else (json.dumps(new, separators=(",", ":")) + "\n").encode()
        if d is not None and d.mode is FaultMode.TIMEOUT and d.hang_s is not None:
            relay.deliver_later(out, d.hang_s, key, response_outcome(new))
            return True
        relay.write_client(out)
        relay.call_done(key, response_outcome(new))
        return True
    if isinstance(msg.get("result"), dict) and isinstance(msg["result"].get("tools"), list):
        relay.inj.note_tools(msg["result"]["tools"])
        names = [t.get("name") for t in msg["result"]["tools"] if isinstance(t, dict)]
        try:
            for pattern in relay.inj.check_tools_quiet(names):
                relay.say(f"warning: fault rule {pattern!r} matches no listed tool")
        except ValueError as e:
            relay.write_client(raw)
            relay.failed = True
            _disconnect(relay, f"error: {e}")
            return False
    relay.write_client(raw)
    return True


def _loop_caller() -> Any:
    """``f(*args)`` scheduled on the running event loop, callable from any thread."""
    try:
        import asyncio

        loop = asyncio.get_running_loop()
        return loop.call_soon_threadsafe
    except RuntimeError:  # another backend (trio)
        token = anyio.lowlevel.current_token()
        return lambda f, *a: anyio.from_thread.run_sync(f, *a, token=token)


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
    max_line: int = MAX_LINE,
) -> int:
    """Async core of :func:`run_proxy`; returns the exit status (0 ok, 1 downstream failure)."""
    stdin = stdin if stdin is not None else sys.stdin.buffer
    stdout = stdout if stdout is not None else sys.stdout.buffer
    stderr = stderr if stderr is not None else sys.stderr
    relay = _Relay(injector, connection, stdout, stderr)
    cmd = [str(c) for c in command]
    # the server's stdin and stdout are our own pipes, relayed by two threads with blocking
    # reads and writes (the loop only runs timers, stderr and the process): a call costs
    # two thread wake-ups and no event-loop round trips
    in_r, in_w = os.pipe()
    out_r, out_w = os.pipe()
    try:
        proc = await anyio.open_process(cmd, stdin=in_r, stdout=out_w, stderr=-1)
    except OSError as e:
        for fd in (in_r, in_w, out_r, out_w):
            os.close(fd)
        relay.say(f"cannot start downstream server {' '.join(cmd)!r}: {e}")
        return 1
    os.close(in_r)
    os.close(out_w)
    relay.server_fd = in_w
    cpu0 = time.process_time()
    async with proc:
        client_eof, server_eof = anyio.Event(), anyio.Event()
        async with anyio.create_task_group() as tg:
            relay.in_loop = _loop_caller()
            relay.cancel = tg.cancel_scope.cancel
            tg.start_soon(_relay_stderr, relay, proc)
            tg.start_soon(_after_client_eof, relay, proc, client_eof)
            tg.start_soon(_after_server_eof, relay, proc, tg, server_eof)
            threading.Thread(target=_server_thread, args=(relay, out_r, max_line,
                             server_eof.set), name="mcp-inject-server", daemon=True).start()
            threading.Thread(target=_client_thread, args=(relay, stdin, client_eof.set),
                             name="mcp-inject-stdin", daemon=True).start()
        # the client is told first; then the server gets EOF and a grace period
        relay.cancel_timers()
        with relay.lock:
            relay.close_client()
            relay.calls_unanswered()
        relay.close_server_in()
        if proc.returncode is None:
            with anyio.move_on_after(5):
                await proc.wait()
            if proc.returncode is None:
                proc.kill()
                await proc.wait()
    # the proxy's own CPU while it relayed (start-up excluded), for `report` and benchmarks
    injector._write({"kind": "stop", "calls": sum(injector.calls_.values()),
                     "cpu_s": round(time.process_time() - cpu0, 6), "time": time.time()})
    return 1 if relay.failed else 0


def run_proxy(
    command: Sequence[str],
    profile: FaultProfile | FaultSchedule,
    *,
    seed: int = 0,
    log_path: str | Path | None = None,
    strict: bool = False,
    connection: str = "stdio",
    max_line: int = MAX_LINE,
) -> int:
    """Run the stdio proxy in front of ``command`` until the client or the server goes away.

    Parameters
    ----------
    command : sequence of str
        The downstream MCP server command (``["python", "server.py"]``).
    profile : FaultProfile or FaultSchedule
        What to inject; a schedule from :meth:`FaultSchedule.from_log` replays a log.
    seed : int
    log_path : path or None
        JSONL fault log.
    strict : bool
        Exit when a rule matches no tool the server lists.
    connection : str
        Label of the proxy's connection in the log.
    max_line : int
        Longest server line relayed, in bytes; a longer one is dropped and its request
        answered with a JSON-RPC error (-32603).

    Returns
    -------
    int
        Exit status: 0 when the client closed stdin (or a ``connection_drop`` was injected),
        1 when the downstream server could not start or died first, or ``strict`` failed.

    Raises
    ------
    ValueError
        For an empty command or a bad ``max_line``.
    ProfileError
        When the log file cannot be opened for appending.
    """
    if not command:
        raise ValueError("run_proxy: command is empty; give the downstream server command")
    if isinstance(max_line, bool) or not isinstance(max_line, int) or max_line < 1:
        raise ValueError(f"run_proxy: max_line must be an integer >= 1, got {max_line!r}")
    try:
        inj = FaultInjector(profile, seed=seed, log_path=log_path, strict=strict)
    except OSError as e:
        raise ProfileError(f"cannot open log {str(log_path)!r}: {e.strerror or e}") from None
    try:
        return anyio.run(
            lambda: run_proxy_async(command, inj, connection=connection, max_line=max_line)
        )
    finally:
        inj.close()
