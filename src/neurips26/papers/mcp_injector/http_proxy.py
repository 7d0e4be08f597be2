"""Streamable HTTP proxy: a fault-injecting reverse proxy in front of an HTTP MCP server.

The MCP Streamable HTTP transport carries each JSON-RPC message in a ``POST`` to one
endpoint; the server answers a request with ``application/json`` or with a
``text/event-stream`` whose events carry the response (and any server requests or
notifications on the way); ``GET`` opens a server-to-client event stream and ``DELETE``
ends a session (``Mcp-Session-Id`` header). This proxy listens on its own address and
forwards every request to the upstream endpoint with its headers and body; bodies and event
streams it does not rewrite pass through as the same bytes. A ``POST`` whose JSON-RPC
request is one of :data:`~.faults.FAULT_METHODS` goes through the same
:class:`~.injector.FaultInjector` decision as in the stdio proxy, with the same semantics:

- pre-server faults (``tool_error``, ``protocol_error``, ``empty_result``, ``timeout``
  without ``hang_s``, ``connection_drop``) are answered by the proxy and never forwarded;
  ``after_server: true``, ``malformed_result`` and a delayed ``timeout`` forward and
  rewrite (or delay) the upstream's response, JSON or the response event of the stream;
- ``timeout`` holds the POST open without an answer until the client gives up (its
  ``notifications/cancelled``, or it aborts the request);
- ``connection_drop`` answers with an event stream that ends without a response (the SDK
  client reports a closed connection) and, for a session, ends the session: every later
  request carrying its ``Mcp-Session-Id`` gets HTTP 404 (the SDK's "Session terminated");
- ``cut_bytes`` cuts the response's JSON after that many bytes (``cut_then: close`` ends
  the stream there, ``newline`` sends the truncated event).

Connections are labelled per session in order of first sight (``http-0``, ``http-1``,
...); requests without a session (the stateless 2026-07-28 protocol, or before the
``initialize`` answer) share the label ``http``. With a log, every ``tools/call`` also gets
a ``kind = "call"`` record, as in the stdio proxy. ``strict`` only warns on stderr here
(an HTTP proxy serves many clients; it does not exit on one session's tool list).

Serving (:func:`run_http_proxy`) is a lean relay, built like the stdio proxy: a thread per
client connection reads and writes its socket with blocking calls and HTTP/1.1 framing of
its own (:mod:`._http1`), and forwards over a pool of persistent (keep-alive) upstream
connections, so a call costs a thread wake-up a read (three or four: clients and servers
write a head and its body apart) and no event-loop round trip. Only a ``POST`` body is
parsed (to find the JSON-RPC request); a JSON response is parsed only when a fault, a call
record or a tool list (the bytes ``tools`` in it) needs it; an event stream is passed on
event by event as each is complete, its events parsed only when a fault or a call record
needs the answer; everything else (``DELETE``, other responses) is relayed as bytes,
streamed as they arrive. Why threads and hand framing: served by uvicorn, Starlette and
httpx, the proxy's own CPU a call was most of a direct call's latency (the HTTP line of
``benchmarks/mcp_injector.py`` prints the proxy's CPU per call); minimal relays without
fault logic cost more CPU a call on an asyncio event loop (a pass of the loop a read) than
on blocking sockets in threads. One lock guards the injector and the session state.
:func:`build_http_proxy_app` makes the same proxy an ASGI application, for any ASGI
server.
"""

from __future__ import annotations

import json
import select
import signal
import socket
import ssl
import sys
import threading
import time
from typing import Any
from urllib.parse import urlsplit

import anyio

from ._http1 import (
    LAST_CHUNK,
    MAX_BODY,
    MAX_HEAD,
    REQUEST_HOP,
    RESPONSE_HOP,
    Head,
    ProtocolError,
    Stream,
    encode_chunk,
    parse_request,
    parse_response,
)
from .faults import FaultMode, FaultProfile, FaultSchedule, ProfileError
from .injector import (
    DISCONNECT,
    DROP,
    FaultInjector,
    request_target,
    response_outcome,
)

__all__ = ["build_http_proxy_app", "run_http_proxy", "run_http_proxy_async"]

# Header names the ASGI application does not pass on: the relay's (._http1), and, in a
# response, ``Content-Encoding`` (httpx hands the application a decoded body).
_HOP = frozenset(name.decode() for name in REQUEST_HOP)
_DROP_RESPONSE = frozenset({*(name.decode() for name in RESPONSE_HOP), "content-encoding"})
#: The longest a ``timeout`` fault holds a POST whose client never gives up (seconds).
MAX_HOLD_S = 3600.0
#: Seconds to open an upstream connection before the request is answered with 502.
CONNECT_TIMEOUT_S = 30.0
#: Idle upstream connections kept for reuse.
MAX_IDLE = 32
#: Seconds an idle upstream connection is reused without checking it is still open (a
#: server closes idle keep-alive connections after seconds: uvicorn after 5).
FRESH_S = 1.0
#: Seconds a shutdown waits for the connection threads (held calls get their log records).
SHUTDOWN_GRACE_S = 1.0
#: Seconds the proxy reads on after refusing a request, so that its answer is not lost.
LINGER_S = 2.0
#: The methods the proxy forwards; others are answered with 405.
_METHODS = frozenset({b"GET", b"HEAD", b"POST", b"DELETE"})

# What to do with a request (:meth:`_Proxy.begin`) or a response (:meth:`_Proxy.on_json`,
# :meth:`_Proxy.on_event`): forward it; answer with ``call.reply``; hold it unanswered; end
# with an event stream without a response; 404 (dropped session); 202 (a cancellation that
# released a held request); send the bytes given.
_FORWARD, _REPLY, _HOLD, _END, _GONE, _ACCEPTED, _SEND = (
    "forward", "reply", "hold", "end", "gone", "accepted", "send")
_GONE_MSG = {"jsonrpc": "2.0", "id": None, "error": {
    "code": -32600, "message": "Session terminated (injected connection drop)"}}
_DROPPED_EVENT = b": connection dropped by neurips26-mcp-inject\n\n"
_EVENT_STREAM = b"content-type: text/event-stream; charset=utf-8\r\n"
_JSON = b"content-type: application/json\r\n"
_TEXT = b"content-type: text/plain; charset=utf-8\r\n"


def _sse_events(buf: bytearray) -> list[bytes]:
    """Complete SSE events (blank-line separated) taken off the front of ``buf``."""
    out = []
    while True:
        n = buf.find(b"\n\n")
        r = buf.find(b"\r\n\r\n")
        if n < 0 and r < 0:
            return out
        if r >= 0 and (n < 0 or r < n):
            end, size = r, 4
        else:
            end, size = n, 2
        out.append(bytes(buf[: end + size]))
        del buf[: end + size]


def _event_data(event: bytes) -> tuple[list[bytes], bytes]:
    """``(other field lines, joined data)`` of one SSE event."""
    other, data = [], []
    for line in event.replace(b"\r\n", b"\n").split(b"\n"):
        if line.startswith(b"data:"):
            data.append(line[5:].removeprefix(b" "))
        elif line:
            other.append(line)
    return other, b"\n".join(data)


def _event(other: list[bytes], data: bytes) -> bytes:
    return b"".join(x + b"\n" for x in other) + b"data: " + data + b"\n\n"


def _render(obj: Any) -> bytes:
    """JSON as Starlette's ``JSONResponse`` writes it."""
    return json.dumps(obj, ensure_ascii=False, allow_nan=False, indent=None,
                      separators=(",", ":")).encode("utf-8")


_NO_RID = object()


class _Call:
    """One request on its way through the proxy: label, session, message, fault, record."""

    __slots__ = ("_rid", "conn", "d", "hold_key", "msg", "rec", "reply", "sid")

    def __init__(self, conn: str, sid: str | None, msg: Any):
        self.conn, self.sid, self.msg = conn, sid, msg
        self.d = self.rec = self.reply = self.hold_key = None
        self._rid: Any = _NO_RID

    @property
    def rid(self) -> str | None:
        """The request's id as JSON text, to match its answer (None without an id)."""
        if self._rid is _NO_RID:
            msg = self.msg
            self._rid = (json.dumps(msg.get("id")) if isinstance(msg, dict) and "id" in msg
                         else None)
        return self._rid


class _Proxy:
    """State and decisions of one HTTP proxy, shared by its servers (no I/O here).

    The injector, the session labels, the dropped sessions and the held requests; every
    method that touches them takes :attr:`lock` (the relay serves connections on threads).
    """

    def __init__(self, upstream: str, injector: FaultInjector, connection: str, err: Any):
        self.upstream = upstream
        self.inj = injector
        self.conn = connection
        self.err = err
        self.labels: dict[str, str] = {}
        self.dropped: set[str] = set()
        self.held: dict[tuple[str, Any], Any] = {}
        self.client: Any = None
        self.lock = threading.Lock()

    def say(self, msg: str) -> None:
        print(f"neurips26-mcp-inject: {msg}", file=self.err, flush=True)

    def label(self, sid: str | None) -> str:
        if not sid:
            return self.conn
        lab = self.labels.get(sid)
        if lab is None:
            lab = f"{self.conn}-{len(self.labels)}"
            self.labels[sid] = lab
        return lab

    def call_record(self, conn: str, msg: dict, d: Any) -> dict | None:
        if msg.get("method") != "tools/call":
            return None
        params = msg.get("params") if isinstance(msg.get("params"), dict) else {}
        return self.inj.open_call(conn, msg.get("id"), params.get("name"), params, d)

    def note(self, msg: Any) -> None:
        res = msg.get("result") if isinstance(msg, dict) else None
        if isinstance(res, dict) and isinstance(res.get("tools"), list):
            self.inj.note_tools(res["tools"])
            names = [t.get("name") for t in res["tools"] if isinstance(t, dict)]
            for pattern in self.inj.unmatched_tool_rules(names):
                self.say(f"warning: fault rule {pattern!r} matches no listed tool")

    def _note_data(self, data: bytes) -> None:
        try:
            msg = json.loads(data)
        except (ValueError, UnicodeDecodeError, RecursionError):
            return
        with self.lock:
            self.note(msg)

    def finish(self, call: _Call, outcome: str | None) -> None:
        """Close the call's log record with ``outcome`` (a no-op without one)."""
        if call.rec is not None and outcome is not None:
            with self.lock:
                self.inj.close_call(call.rec, outcome)
            call.rec = None

    def begin(self, sid: str | None, body: bytes | None) -> tuple[str, _Call]:
        """Decide what to do with a request before it is forwarded.

        Parameters
        ----------
        sid : str or None
            Its ``Mcp-Session-Id``.
        body : bytes or None
            A ``POST``'s body (None for the other methods: not looked at).

        Returns
        -------
        (str, _Call)
            ``_FORWARD``; ``_GONE`` (a dropped session); ``_ACCEPTED`` (a cancellation
            that released a held request, answered 202); ``_REPLY`` (a pre-server fault's
            answer, ``call.reply``; its record is closed); ``_HOLD`` (hold it under
            ``call.hold_key``); ``_END`` (a dropped connection).
        """
        msg: Any = None
        bad = False
        if body:
            try:
                msg = json.loads(body)
            except (ValueError, UnicodeDecodeError, RecursionError):
                bad = True
        with self.lock:  # one lock a request: label, session, decision, record
            conn = self.label(sid)
            if sid and conn in self.dropped:
                return _GONE, _Call(conn, sid, None)
            if bad:
                self.inj.record_anomaly("client", "unparsable POST body passed on",
                                        connection=conn)
            call = _Call(conn, sid, msg)
            if not (isinstance(msg, dict) and "method" in msg):
                return _FORWARD, call
            method, params = msg.get("method"), msg.get("params")
            if "id" not in msg:
                if method == "notifications/cancelled" and isinstance(params, dict):
                    ev = self.held.get((conn, json.dumps(params.get("requestId"))))
                    if ev is not None:  # the server never saw that request
                        ev.set()
                        return _ACCEPTED, call
                return _FORWARD, call
            target = request_target(method, params)
            if target is None:
                return _FORWARD, call
            d = call.d = self.inj.decide(target, connection=conn, method=method)
            call.rec = self.call_record(conn, msg, d)
            if d is None or d.reaches_server:
                return _FORWARD, call
            if d.mode is FaultMode.CONNECTION_DROP:
                if sid:
                    self.dropped.add(conn)
                self.say(f"injected connection drop on {method} {target!r}")
                return _END, call
            new = self.inj.rewrite(d, {"jsonrpc": "2.0", "id": msg["id"]})
        if new == DROP:
            call.hold_key = (conn, json.dumps(msg["id"]))
            return _HOLD, call
        self.finish(call, response_outcome(new))
        call.reply = new
        return _REPLY, call

    def on_json(self, call: _Call, raw: bytes) -> tuple[str, bytes | None, str | None, float]:
        """What to send for an ``application/json`` response ``raw`` to ``call``.

        Returns
        -------
        (str, bytes or None, str or None, float)
            ``(kind, data, outcome, delay)``: ``_SEND`` ``data`` after ``delay`` seconds,
            then close the record with ``outcome``; ``_HOLD`` the request under
            ``call.hold_key``; ``_END`` with an event stream without a response.
        """
        d = call.d
        if d is None and call.rec is None:  # nothing to decide: only a tool list to note
            if b"tools" in raw:
                self._note_data(raw)
            return _SEND, raw, None, 0.0
        try:
            out = json.loads(raw)
        except (ValueError, UnicodeDecodeError, RecursionError):
            return _SEND, raw, "ok", 0.0
        if d is None or not (isinstance(out, dict) and ("result" in out or "error" in out)):
            if d is None or d.method == "tools/list":
                with self.lock:
                    self.note(out)
            return _SEND, raw, response_outcome(out), 0.0
        new = self._apply(call, out)
        if new == DROP:
            call.hold_key = (call.conn, json.dumps(out.get("id")))
            return _HOLD, None, None, 0.0
        if new == DISCONNECT:
            return _END, None, None, 0.0
        if d.cut_bytes is not None:
            return _SEND, raw[: d.cut_bytes], "cut", 0.0
        data = raw if new is out else json.dumps(new, separators=(",", ":")).encode()
        return _SEND, data, response_outcome(new), _delay(d)

    def on_event(self, call: _Call, ev: bytes) -> tuple[str, bytes | None, str | None, float]:
        """What to send for one complete event ``ev`` of a ``text/event-stream`` response.

        Returns
        -------
        (str, bytes or None, str or None, float)
            As :meth:`on_json`; ``_END`` ends the stream after ``data`` (when not None)
            and closes the record with ``outcome``; ``_HOLD`` withholds the answer and
            ends the stream when the hold ends; ``outcome`` None leaves the record open
            (the event is not the answer).
        """
        d = call.d
        if d is None and call.rec is None:
            if b"tools" in ev:
                self._note_data(_event_data(ev)[1])
            return _SEND, ev, None, 0.0
        other, data = _event_data(ev)
        try:
            m = json.loads(data) if data else None
        except (ValueError, UnicodeDecodeError, RecursionError):
            m = None
        is_answer = (isinstance(m, dict) and "method" not in m
                     and ("result" in m or "error" in m)
                     and json.dumps(m.get("id")) == call.rid)
        if not is_answer:
            return _SEND, ev, None, 0.0
        if d is None:
            return _SEND, ev, response_outcome(m), 0.0
        new = self._apply(call, m)
        if new == DROP:  # withhold the answer; keep the stream open
            call.hold_key = (call.conn, call.rid)
            return _HOLD, None, None, 0.0
        if new == DISCONNECT:
            return _END, None, "disconnected", 0.0
        if d.cut_bytes is not None:
            cut = data[: d.cut_bytes]
            if d.cut_then == "close":
                return _END, b"".join(x + b"\n" for x in other) + b"data: " + cut, "cut", 0.0
            return _SEND, _event(other, cut), "cut", 0.0
        out = ev if new is m else _event(other, json.dumps(new, separators=(",", ":")).encode())
        return _SEND, out, response_outcome(new), _delay(call.d)

    def _apply(self, call: _Call, answer: dict) -> Any:
        """The fault's rewrite of the server's ``answer`` to ``call`` (its decision
        ``call.d``), as :func:`~.injector.apply_fault` returns it; a tool list is noted,
        and a disconnect ends the call's session."""
        d = call.d
        with self.lock:
            if d.method == "tools/list":
                self.note(answer)
            new = self.inj.rewrite(d, answer)
            if new == DISCONNECT and call.sid:
                self.dropped.add(call.conn)
        return new

    def hold(self, key: tuple[str, Any], waiter: Any) -> None:
        """Register a held request; a ``notifications/cancelled`` for it sets ``waiter``."""
        with self.lock:
            self.held[key] = waiter

    def release(self, call: _Call) -> None:
        """End a hold: forget it and log the call as never answered."""
        with self.lock:
            self.held.pop(call.hold_key, None)
        self.finish(call, "no_response")

    def unreachable(self, call: _Call, err: Exception) -> dict:
        """The 502 answer to a request the upstream did not answer (the record gets
        ``error``)."""
        self.say(f"upstream {self.upstream} unreachable: {err}")
        self.finish(call, "error")
        msg = call.msg
        return {"jsonrpc": "2.0", "id": msg.get("id") if isinstance(msg, dict) else None,
                "error": {"code": -32603, "message": f"upstream unreachable: {err}"}}


def _delay(d: Any) -> float:
    """Seconds a delayed ``timeout`` (one with ``hang_s``) holds the answer back."""
    return d.hang_s if d.mode is FaultMode.TIMEOUT and d.hang_s is not None else 0.0


class _ClientGone(Exception):
    """The client closed its connection while the proxy streamed or held its response."""


class _Waiter:
    """A held request's wake-up: :meth:`set` from any thread ends :meth:`wait`."""

    def __init__(self) -> None:
        self._r, self._w = socket.socketpair()

    def set(self) -> None:
        try:
            self._w.send(b"\0")
        except OSError:  # already closed: the hold has ended
            pass

    def wait(self, client: Stream, timeout: float) -> bool:
        """Wait until set or ``timeout`` (True), or until the client leaves (False).

        Bytes the client sends meanwhile (a pipelined request) are kept in its buffer.
        """
        deadline = time.monotonic() + timeout
        watch = [self._r, client.sock]
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                return True
            ready = select.select(watch, [], [], left)[0]
            if self._r in ready:
                return True
            if ready:
                try:
                    if not client.fill():
                        return False
                except OSError:
                    return False
                if len(client.buf) > MAX_HEAD:  # enough read ahead
                    watch = [self._r]

    def close(self) -> None:
        self._r.close()
        self._w.close()


_REASONS = {200: b"200 OK", 202: b"202 Accepted", 400: b"400 Bad Request",
            404: b"404 Not Found", 405: b"405 Method Not Allowed",
            413: b"413 Content Too Large", 431: b"431 Request Header Fields Too Large",
            501: b"501 Not Implemented", 502: b"502 Bad Gateway"}


class _Relay:
    """The proxy's server: a thread per client connection, pooled upstream connections.

    Parameters
    ----------
    state : _Proxy
        The proxy's state and decisions (its ``upstream`` URL is where requests go).
    """

    def __init__(self, state: _Proxy):
        parts = urlsplit(state.upstream)
        self.st = state
        self.tls = ssl.create_default_context() if parts.scheme == "https" else None
        self.addr = (parts.hostname or "", parts.port or (443 if self.tls else 80))
        host = parts.netloc.rpartition("@")[2]
        try:
            self.host_line = b"host: " + host.encode("idna")
        except UnicodeError:
            self.host_line = b"host: " + host.encode()
        self.target = ((parts.path or "/") + (f"?{parts.query}" if parts.query else "")).encode()
        self.query_sep = b"&" if parts.query else b"?"
        self.idle: list[tuple[Stream, float]] = []  # with the time each fell idle
        self.lock = threading.Lock()
        self.socks: set[socket.socket] = set()
        self.threads: set[threading.Thread] = set()
        self.closed = False

    # -- connections ----------------------------------------------------------------------

    def start(self, sock: socket.socket) -> None:
        """Serve a newly accepted client connection on its own thread."""
        t = threading.Thread(target=self._serve, args=(sock,), daemon=True,
                             name="neurips26-mcp-inject-http")
        with self.lock:
            if self.closed:
                sock.close()
                return
            self.socks.add(sock)
            self.threads.add(t)
        t.start()

    def close(self, grace: float = SHUTDOWN_GRACE_S) -> None:
        """Shut every connection down; wait up to ``grace`` seconds for their threads."""
        with self.lock:
            self.closed = True
            socks, threads = list(self.socks), list(self.threads)
            self.idle.clear()
        for s in socks:
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        deadline = time.monotonic() + grace
        for t in threads:
            t.join(max(0.0, deadline - time.monotonic()))

    def _serve(self, sock: socket.socket) -> None:
        client = Stream(sock)
        try:
            sock.setblocking(True)
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            while self._exchange(client):
                pass
        except (OSError, _ClientGone):  # the client left
            pass
        except Exception as e:  # pragma: no cover - a bug; say it, keep serving others
            self.st.say(f"internal error on a client connection: {e!r}")
        finally:
            with self.lock:
                self.socks.discard(sock)
                self.threads.discard(threading.current_thread())
            sock.close()

    def _checkout(self, new: bool = False) -> tuple[Stream, bool]:
        """An upstream connection: an idle one still open (True), else a new one (False).

        One idle for over :data:`FRESH_S` is checked first (it has nothing to read unless
        the upstream closed it); a fresher one is used as it is (a failure before any
        answer is retried by :meth:`_upstream`), which saves a system call a request.
        ``new``: open a new connection.
        """
        while not new:
            with self.lock:
                up, since = self.idle.pop() if self.idle else (None, 0.0)
            if up is None:
                break
            if time.monotonic() - since < FRESH_S or not up.readable():
                return up, True
            self._discard(up)
        sock = socket.create_connection(self.addr, timeout=CONNECT_TIMEOUT_S)
        try:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            if self.tls is not None:
                sock = self.tls.wrap_socket(sock, server_hostname=self.addr[0])
            sock.settimeout(None)
        except BaseException:
            sock.close()
            raise
        with self.lock:
            self.socks.add(sock)
        return Stream(sock), False

    def _checkin(self, up: Stream, resp: Head) -> None:
        """Keep ``up`` for the next request when its response ended cleanly."""
        if not resp.close and not up.buf:
            with self.lock:
                if not self.closed and len(self.idle) < MAX_IDLE:
                    self.idle.append((up, time.monotonic()))
                    return
        self._discard(up)

    def _discard(self, up: Stream) -> None:
        with self.lock:
            self.socks.discard(up.sock)
        up.sock.close()

    def _upstream(self, data: bytes, body: bytes) -> tuple[Stream, Head]:
        """Send a request upstream; its connection and response head.

        A reused connection that fails before any byte of an answer (the upstream closed
        it while idle) is replaced by a new one once.
        """
        for attempt in (0, 1):
            up, reused = self._checkout(new=attempt > 0)
            try:
                _sendall(up.sock, data, body)
                raw = up.read_head()
                resp = None
                while raw is not None:
                    resp = parse_response(raw)
                    if resp.status >= 200:
                        break
                    raw = up.read_head()  # an interim 1xx response: not passed on
            except OSError:
                self._discard(up)
                if reused and attempt == 0:
                    continue
                raise
            except ProtocolError:
                self._discard(up)
                raise
            if resp is None or raw is None:
                self._discard(up)
                if reused and attempt == 0 and resp is None:
                    continue
                raise ConnectionError("the upstream closed the connection without answering")
            return up, resp
        raise AssertionError("unreachable")  # pragma: no cover

    # -- one request ----------------------------------------------------------------------

    def _exchange(self, client: Stream) -> bool:
        """Serve one request of ``client``; whether its connection stays open."""
        try:
            raw = client.read_head()
            if raw is None:
                return False
            req = parse_request(raw)
            if not req.minor:  # HTTP/1.0: one request a connection
                req.close = True
            if req.method not in _METHODS:
                _send(client, b"405 Method Not Allowed",
                      b"allow: GET, HEAD, POST, DELETE\r\n" + _TEXT, b"Method Not Allowed",
                      True)
                _linger(client.sock)
                return False
            if (req.minor and (req.chunked or len(client.buf) < (req.length or 0))
                    and (req.get(b"expect") or b"").lower() == b"100-continue"):
                client.sock.sendall(b"HTTP/1.1 100 Continue\r\n\r\n")
            body = client.read_body(req, MAX_BODY)
        except ProtocolError as e:
            _send(client, _REASONS.get(e.status, b"400 Bad Request"), _TEXT,
                  str(e).encode(), True)
            _linger(client.sock)
            return False
        return self._handle(client, req, body) and not req.close

    def _handle(self, client: Stream, req: Head, body: bytes) -> bool:
        """Answer a request read whole: from the proxy, or by forwarding it."""
        sid = req.get(b"mcp-session-id")
        kind, call = self.st.begin(sid.decode("latin-1") if sid is not None else None,
                                   body if req.method == b"POST" else None)
        if kind is _FORWARD:
            return self._forward(client, req, body, call)
        if kind is _GONE:
            _send(client, b"404 Not Found", _JSON, _render(_GONE_MSG), req.close)
        elif kind is _ACCEPTED:
            _send(client, b"202 Accepted", b"", b"", req.close)
        elif kind is _REPLY:
            _send(client, b"200 OK", _JSON, _render(call.reply), req.close)
        elif kind is _HOLD:
            return self._hold(client, req, call, None)
        else:
            return self._ended(client, req, call)
        return True

    def _request(self, req: Head, body: bytes) -> bytes:
        """The head of ``req`` as sent upstream (to the upstream's path, with the query)."""
        target = self.target
        q = req.target.find(b"?")
        if 0 <= q < len(req.target) - 1:
            target += self.query_sep + req.target[q + 1:]
        length = b"content-length: %d\r\n" % len(body) if body or req.method == b"POST" else b""
        return b"%s %s HTTP/1.1\r\n%s\r\naccept-encoding: identity\r\n%s%s\r\n" % (
            req.method, target, self.host_line, req.block, length)

    def _forward(self, client: Stream, req: Head, body: bytes, call: _Call) -> bool:
        """Forward a request and relay (or rewrite) its response."""
        st = self.st
        try:
            up, resp = self._upstream(self._request(req, body), body)
        except (OSError, ProtocolError) as e:
            _send(client, b"502 Bad Gateway", _JSON, _render(st.unreachable(call, e)),
                  req.close)
            return True
        status = resp.line[9:]
        if req.method == b"HEAD" or resp.status in (204, 304):
            self._checkin(up, resp)
            st.finish(call, "ok")
            block = resp.block if resp.length is None else (
                resp.block + b"content-length: %d\r\n" % resp.length)
            client.sock.sendall(_head(status, block, req.close))
            return True
        ctype = (resp.get(b"content-type") or b"").lower()
        coding = (resp.get(b"content-encoding") or b"identity").lower()
        if ctype.startswith(b"application/json") and coding == b"identity":
            try:
                raw = up.read_body(resp)
            except (OSError, ProtocolError) as e:
                self._discard(up)
                _send(client, b"502 Bad Gateway", _JSON, _render(st.unreachable(call, e)),
                      req.close)
                return True
            self._checkin(up, resp)
            kind, data, outcome, delay = st.on_json(call, raw)
            if kind is _HOLD:
                return self._hold(client, req, call, None)
            if kind is _END:
                return self._ended(client, req, call)
            if delay:
                time.sleep(delay)
            st.finish(call, outcome)
            _send(client, status, resp.block, data, req.close)
            return True
        if ctype.startswith(b"text/event-stream") and coding == b"identity":
            return self._events(client, req, up, resp, call, status)
        st.finish(call, "ok")
        return self._pass(client, req, up, resp, status)

    # -- streamed and held responses --------------------------------------------------------

    def _watch(self, up: Stream, client: Stream) -> None:
        """Wait until ``up`` is readable, keeping what the client sends meanwhile.

        Raises
        ------
        _ClientGone
            When the client closes its connection (the stream is abandoned).
        """
        pending = getattr(up.sock, "pending", None)
        if pending is not None and pending():
            return
        watch = [up.sock, client.sock]
        while True:
            ready = select.select(watch, [], [])[0]
            if up.sock in ready:
                return
            if not client.fill():
                raise _ClientGone
            if len(client.buf) > MAX_HEAD:
                watch = [up.sock]

    def _stream_head(self, client: Stream, req: Head, status: bytes, block: bytes) -> bool:
        """Send the head of a streamed response; whether it is chunked (HTTP/1.1).

        An HTTP/1.0 client gets the stream unframed, ended by the close.
        """
        chunked = req.minor == 1
        framing = b"transfer-encoding: chunked\r\n" if chunked else b""
        client.sock.sendall(_head(status, block + framing, not chunked or req.close))
        return chunked

    def _end_stream(self, client: Stream, chunked: bool) -> bool:
        """End a streamed response (the last chunk); whether the connection stays open."""
        if chunked:
            client.sock.sendall(LAST_CHUNK)
        return chunked

    def _hold(self, client: Stream, req: Head, call: _Call, chunked: bool | None) -> bool:
        """Hold the request without an answer until the client cancels it or leaves.

        ``chunked`` None: the event-stream head is sent first (the answer to a POST);
        else the hold is inside a stream already started.
        """
        waiter = _Waiter()
        self.st.hold(call.hold_key, waiter)
        try:
            if chunked is None:
                chunked = self._stream_head(client, req, b"200 OK", _EVENT_STREAM)
            stayed = waiter.wait(client, MAX_HOLD_S)
        finally:
            self.st.release(call)
            waiter.close()
        return stayed and self._end_stream(client, chunked)

    def _ended(self, client: Stream, req: Head, call: _Call) -> bool:
        """An event stream that ends without a response (an injected connection drop)."""
        chunked = self._stream_head(client, req, b"200 OK", _EVENT_STREAM)
        self.st.finish(call, "disconnected")
        client.sock.sendall(encode_chunk(_DROPPED_EVENT) if chunked else _DROPPED_EVENT)
        return self._end_stream(client, chunked)

    def _pass(self, client: Stream, req: Head, up: Stream, resp: Head, status: bytes) -> bool:
        """Relay a response body as bytes, as they arrive."""
        chunked = False
        up.wait = lambda: self._watch(up, client)
        try:
            if resp.length is not None:
                client.sock.sendall(_head(status, resp.block + b"content-length: %d\r\n"
                                          % resp.length, req.close))
            else:
                chunked = self._stream_head(client, req, status, resp.block)
            for piece in up.iter_body(resp):
                client.sock.sendall(encode_chunk(piece) if chunked else piece)
        except (OSError, ProtocolError, _ClientGone):
            self._discard(up)
            return False
        up.wait = None
        self._checkin(up, resp)
        return resp.length is not None or self._end_stream(client, chunked)

    def _events(self, client: Stream, req: Head, up: Stream, resp: Head, call: _Call,
                status: bytes) -> bool:
        """Relay an event stream event by event, each as soon as it is complete."""
        st = self.st
        sock = client.sock
        buf = bytearray()
        up.wait = lambda: self._watch(up, client)
        try:
            chunked = self._stream_head(client, req, status, resp.block)
            for piece in up.iter_body(resp):
                buf += piece
                out: list[bytes] = []
                for ev in _sse_events(buf):
                    kind, data, outcome, delay = st.on_event(call, ev)
                    if kind is _SEND and not delay:
                        st.finish(call, outcome)
                        out.append(data)
                        continue
                    if out:
                        _send_piece(sock, b"".join(out), chunked)
                        out = []
                    if kind is _SEND:
                        time.sleep(delay)
                        st.finish(call, outcome)
                        out.append(data)
                        continue
                    self._discard(up)  # the rest of the upstream's stream is not read
                    if kind is _HOLD:
                        return self._hold(client, req, call, chunked)
                    if data:
                        _send_piece(sock, data, chunked)
                    st.finish(call, outcome)
                    return self._end_stream(client, chunked)
                if out:
                    _send_piece(sock, b"".join(out), chunked)
            if buf:
                _send_piece(sock, bytes(buf), chunked)
        except (OSError, ProtocolError, _ClientGone):
            self._discard(up)
            return False
        up.wait = None
        self._checkin(up, resp)
        return self._end_stream(client, chunked)


def _head(status: bytes, block: bytes, close: bool) -> bytes:
    """A response head: status, header lines (each ending in CRLF), blank line."""
    return b"HTTP/1.1 %s\r\n%s%s\r\n" % (status, block,
                                            b"connection: close\r\n" if close else b"")


def _sendall(sock: socket.socket, head: bytes, body: bytes) -> None:
    """Send a head and a body, in one segment when the body is small."""
    if len(body) <= 65536:
        sock.sendall(head + body)
    else:
        sock.sendall(head)
        sock.sendall(body)


def _send(client: Stream, status: bytes, block: bytes, body: bytes, close: bool) -> None:
    """Send a whole response with a ``Content-Length``."""
    _sendall(client.sock, _head(status, block + b"content-length: %d\r\n" % len(body), close),
             body)


def _linger(sock: socket.socket) -> None:
    """End the sending side and read what the client still sends, then let it close.

    Closing a socket with unread bytes resets the connection, and the client may lose the
    error response it has not read yet; this drains up to :data:`~._http1.MAX_BODY` bytes
    or :data:`LINGER_S` seconds.
    """
    try:
        sock.shutdown(socket.SHUT_WR)
        sock.settimeout(LINGER_S)
        left = MAX_BODY
        while left > 0:
            n = len(sock.recv(65536))
            if not n:
                break
            left -= n
    except OSError:
        pass


def _send_piece(sock: socket.socket, data: bytes, chunked: bool) -> None:
    if data:
        sock.sendall(encode_chunk(data) if chunked else data)


def build_http_proxy_app(upstream: str, injector: FaultInjector, *, connection: str = "http",
                         stderr: Any = None) -> Any:
    """The proxy as an ASGI application (Starlette), forwarding to ``upstream``.

    The same proxy as :func:`run_http_proxy` serves (the same decisions), for an ASGI
    server of one's own; it forwards with an ``httpx`` client and costs more a call than
    the relay :func:`run_http_proxy` runs.

    Parameters
    ----------
    upstream : str
        The upstream MCP endpoint, ``http(s)://host:port/path``.
    injector : FaultInjector
        Decides and logs the faults.
    connection : str
        Label prefix of the sessions in the log (``<connection>-<n>``).
    stderr : file or None
        Where warnings go (default ``sys.stderr``).

    Returns
    -------
    starlette.applications.Starlette
        Serves every path and method; run it with any ASGI server.
    """
    import httpx2
    from starlette.applications import Starlette
    from starlette.responses import JSONResponse, Response, StreamingResponse
    from starlette.routing import Route

    _check_url(upstream)
    state = _Proxy(upstream, injector, connection, stderr if stderr is not None else sys.stderr)

    def fwd_headers(request: Any) -> dict[str, str]:
        return {k: v for k, v in request.headers.items() if k.lower() not in _HOP}

    def back_headers(resp: Any) -> dict[str, str]:
        return {k: v for k, v in resp.headers.items() if k.lower() not in _DROP_RESPONSE}

    def held(call: _Call) -> Any:
        """Register a held request; the event a cancellation sets."""
        ev = anyio.Event()
        state.hold(call.hold_key, ev)
        return ev

    async def wait_released(call: _Call, ev: Any) -> None:
        try:
            with anyio.move_on_after(MAX_HOLD_S):
                await ev.wait()
        finally:
            state.release(call)

    def hold(call: _Call) -> Any:
        """A response that never answers: held until the client gives up."""
        ev = held(call)

        async def body():
            await wait_released(call, ev)
            yield b""

        return StreamingResponse(body(), media_type="text/event-stream")

    def ended_stream(call: _Call) -> Any:
        async def body():
            state.finish(call, "disconnected")
            yield _DROPPED_EVENT

        return StreamingResponse(body(), media_type="text/event-stream")

    async def handle(request: Any) -> Any:
        client = state.client
        post = request.method == "POST"
        body = await request.body() if post else b""
        kind, call = state.begin(request.headers.get("mcp-session-id"), body if post else None)
        if kind is _GONE:
            return JSONResponse(_GONE_MSG, status_code=404)
        if kind is _ACCEPTED:
            return Response(status_code=202)
        if kind is _REPLY:
            return JSONResponse(call.reply)
        if kind is _HOLD:
            return hold(call)
        if kind is _END:
            return ended_stream(call)
        url = state.upstream
        if request.url.query:
            url = f"{url}{'&' if '?' in url else '?'}{request.url.query}"
        req = client.build_request(request.method, url, headers=fwd_headers(request),
                                   content=body if body else None)
        try:
            resp = await client.send(req, stream=True)
        except httpx2.HTTPError as e:
            return JSONResponse(state.unreachable(call, e), status_code=502)
        ctype = resp.headers.get("content-type", "").lower()
        headers = back_headers(resp)
        if ctype.startswith("application/json"):
            raw = await resp.aread()
            await resp.aclose()
            kind, data, outcome, delay = state.on_json(call, raw)
            if kind is _HOLD:
                return hold(call)
            if kind is _END:
                return ended_stream(call)
            if delay:
                await anyio.sleep(delay)
            state.finish(call, outcome)
            return Response(data, status_code=resp.status_code, headers=headers)
        if ctype.startswith("text/event-stream"):
            return StreamingResponse(stream(resp, call), status_code=resp.status_code,
                                     headers=headers)

        async def passthrough():
            try:
                async for chunk in resp.aiter_raw():
                    yield chunk
            finally:
                await resp.aclose()

        state.finish(call, "ok")
        return StreamingResponse(passthrough(), status_code=resp.status_code, headers=headers)

    async def stream(resp: Any, call: _Call):
        buf = bytearray()
        try:
            async for chunk in resp.aiter_raw():
                buf.extend(chunk)
                for ev in _sse_events(buf):
                    kind, data, outcome, delay = state.on_event(call, ev)
                    if kind is _HOLD:  # withhold the answer; keep the stream open
                        await wait_released(call, held(call))
                        return
                    if delay:
                        await anyio.sleep(delay)
                    state.finish(call, outcome)
                    if data:
                        yield data
                    if kind is _END:
                        return
            if buf:
                yield bytes(buf)
        finally:
            await resp.aclose()

    async def lifespan(app):
        async with httpx2.AsyncClient(timeout=httpx2.Timeout(30.0, read=None)) as c:
            state.client = c
            yield

    from contextlib import asynccontextmanager

    return Starlette(
        routes=[Route("/{path:path}", handle, methods=["GET", "POST", "DELETE"])],
        lifespan=asynccontextmanager(lifespan),
    )


def _check_url(upstream: Any) -> None:
    if not isinstance(upstream, str):
        raise TypeError(f"upstream must be a URL string, got {type(upstream).__name__}")
    parts = urlsplit(upstream)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise ValueError(f"upstream must be an http(s)://host[:port]/path URL, got "
                         f"{upstream!r}")


def _parse_listen(listen: str) -> tuple[str, int]:
    host, sep, port = str(listen).rpartition(":")
    if not sep or not host:
        raise ValueError(f"listen must be HOST:PORT, got {listen!r}")
    try:
        p = int(port)
    except ValueError:
        raise ValueError(f"listen: port must be an integer, got {port!r}") from None
    if not 0 <= p <= 65535:
        raise ValueError(f"listen: port must be in [0, 65535], got {p}")
    return host.strip("[]"), p


async def _stop_on_signal(scope: anyio.CancelScope) -> None:
    """Cancel ``scope`` on SIGINT or SIGTERM (only in the main thread; else a no-op)."""
    try:
        with anyio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
            async for _ in signals:
                scope.cancel()
                return
    except (ValueError, RuntimeError, NotImplementedError):  # not the main thread
        return


async def run_http_proxy_async(upstream: str, injector: FaultInjector, *,
                               listen: str = "127.0.0.1:0", connection: str = "http",
                               stderr: Any = None) -> int:
    """Serve the proxy until interrupted; returns the exit status.

    The address it listens on is printed to ``stderr`` as ``listening on <url>`` (the
    upstream's path on the proxy's host and port; port 0 picks a free one). Connections
    are served by the relay described in the module's docstring (on threads; the event
    loop only accepts them, so any anyio backend runs it).

    Returns
    -------
    int
        0 after SIGINT or SIGTERM (caught in the main thread: connections are shut down
        and held calls logged, within :data:`SHUTDOWN_GRACE_S`), 1 when the address cannot
        be bound. Cancelled, it shuts down the same way and lets the cancellation through.
    """
    err = stderr if stderr is not None else sys.stderr
    _check_url(upstream)
    host, port = _parse_listen(listen)
    state = _Proxy(upstream, injector, connection, err)
    try:
        lsock = socket.create_server(
            (host, port), family=socket.AF_INET6 if ":" in host else socket.AF_INET)
    except OSError as e:
        state.say(f"error: cannot listen on {listen}: {e.strerror or e}")
        return 1
    relay = _Relay(state)
    try:
        lsock.setblocking(False)
        name = lsock.getsockname()
        shown = f"[{name[0]}]" if ":" in name[0] else name[0]
        path = urlsplit(upstream).path or "/"
        state.say(f"listening on http://{shown}:{name[1]}{path} (upstream {upstream})")
        async with anyio.create_task_group() as tg:
            tg.start_soon(_stop_on_signal, tg.cancel_scope)
            while True:
                await anyio.wait_readable(lsock)
                try:
                    sock, _ = lsock.accept()
                except (BlockingIOError, InterruptedError, ConnectionAbortedError):
                    continue
                except OSError as e:  # out of file descriptors: wait for some to close
                    state.say(f"cannot accept a connection: {e}")
                    await anyio.sleep(0.1)
                    continue
                relay.start(sock)
    finally:
        lsock.close()
        relay.close()
    return 0


def run_http_proxy(upstream: str, profile: FaultProfile | FaultSchedule, *,
                   listen: str = "127.0.0.1:0", seed: int = 0, log_path: Any = None,
                   strict: bool = False, connection: str = "http") -> int:
    """Run the Streamable HTTP proxy in front of ``upstream`` until interrupted.

    Parameters
    ----------
    upstream : str
        The upstream MCP endpoint URL (``http://127.0.0.1:8000/mcp``).
    profile : FaultProfile or FaultSchedule
        What to inject; a schedule from :meth:`FaultSchedule.from_log` replays a log.
    listen : str
        ``HOST:PORT`` to listen on (port 0: a free port, printed on stderr).
    seed : int
    log_path : path or None
        JSONL log (appended to).
    strict : bool
        Accepted for symmetry with :func:`~.proxy.run_proxy`; the HTTP proxy only warns
        about rules that match no listed tool (it serves many clients and does not exit).
    connection : str
        Label prefix of the sessions in the log.

    Returns
    -------
    int
        Exit status (0 after a normal shutdown, 1 when the address cannot be bound).

    Raises
    ------
    ValueError
        For a bad ``upstream`` URL or ``listen`` address.
    ProfileError
        When the log file cannot be opened for appending.
    """
    _check_url(upstream)
    _parse_listen(listen)
    try:
        inj = FaultInjector(profile, seed=seed, log_path=log_path, strict=False)
    except OSError as e:
        raise ProfileError(f"cannot open log {str(log_path)!r}: {e.strerror or e}") from None
    return anyio.run(lambda: run_http_proxy_async(upstream, inj, listen=listen,
                                                  connection=connection))
