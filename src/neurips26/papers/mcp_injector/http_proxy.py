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
"""

from __future__ import annotations

import json
import sys
from typing import Any
from urllib.parse import urlsplit

import anyio

from .faults import FaultMode, FaultProfile, FaultSchedule, ProfileError
from .injector import (
    DISCONNECT,
    DROP,
    FaultInjector,
    apply_fault,
    request_target,
    response_outcome,
)

__all__ = ["build_http_proxy_app", "run_http_proxy", "run_http_proxy_async"]

_HOP = {"host", "content-length", "connection", "transfer-encoding", "keep-alive",
        "accept-encoding", "upgrade", "te", "trailer", "proxy-connection"}
_DROP_RESPONSE = {"content-length", "transfer-encoding", "connection", "content-encoding",
                  "keep-alive"}
#: The longest a ``timeout`` fault holds a POST whose client never gives up (seconds).
MAX_HOLD_S = 3600.0


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


class _Proxy:
    """State of one HTTP proxy: the injector, session labels, held and dropped requests."""

    def __init__(self, upstream: str, injector: FaultInjector, connection: str, err: Any):
        self.upstream = upstream
        self.inj = injector
        self.conn = connection
        self.err = err
        self.labels: dict[str, str] = {}
        self.dropped: set[str] = set()
        self.held: dict[tuple[str, Any], anyio.Event] = {}
        self.client: Any = None

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

    def call_done(self, rec: dict | None, outcome: str) -> None:
        self.inj.close_call(rec, outcome)

    def note(self, msg: Any) -> None:
        res = msg.get("result") if isinstance(msg, dict) else None
        if isinstance(res, dict) and isinstance(res.get("tools"), list):
            self.inj.note_tools(res["tools"])
            names = [t.get("name") for t in res["tools"] if isinstance(t, dict)]
            for pattern in self.inj.unmatched_tool_rules(names):
                self.say(f"warning: fault rule {pattern!r} matches no listed tool")



def build_http_proxy_app(upstream: str, injector: FaultInjector, *, connection: str = "http",
                         stderr: Any = None) -> Any:
    """The proxy as an ASGI application (Starlette), forwarding to ``upstream``.

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

    async def hold(conn: str, rid: Any, rec: dict | None) -> Any:
        """A response that never answers: held until the client gives up."""
        ev = anyio.Event()
        state.held[(conn, json.dumps(rid))] = ev

        async def body():
            try:
                with anyio.move_on_after(MAX_HOLD_S):
                    await ev.wait()
            finally:
                state.held.pop((conn, json.dumps(rid)), None)
                state.call_done(rec, "no_response")
            yield b""

        return StreamingResponse(body(), media_type="text/event-stream")

    def ended_stream(rec: dict | None) -> Any:
        async def body():
            state.call_done(rec, "disconnected")
            yield b": connection dropped by neurips26-mcp-inject\n\n"

        return StreamingResponse(body(), media_type="text/event-stream")

    async def handle(request: Any) -> Any:
        client = state.client
        sid = request.headers.get("mcp-session-id")
        conn = state.label(sid)
        if sid and conn in state.dropped:
            return JSONResponse({"jsonrpc": "2.0", "id": None, "error": {
                "code": -32600, "message": "Session terminated (injected connection drop)"}},
                status_code=404)
        body = await request.body() if request.method == "POST" else b""
        msg: Any = None
        if body:
            try:
                msg = json.loads(body)
            except (ValueError, UnicodeDecodeError, RecursionError):
                injector.record_anomaly("client", "unparsable POST body passed on",
                                        connection=conn)
        d = rec = None
        if isinstance(msg, dict) and "method" in msg:
            method, params = msg.get("method"), msg.get("params")
            if "id" not in msg:
                if method == "notifications/cancelled" and isinstance(params, dict):
                    ev = state.held.get((conn, json.dumps(params.get("requestId"))))
                    if ev is not None:  # the server never saw that request
                        ev.set()
                        return Response(status_code=202)
            else:
                target = request_target(method, params)
                if target is not None:
                    d = injector.decide(target, connection=conn, method=method)
                    rec = state.call_record(conn, msg, d)
                    if d is not None and not d.reaches_server:
                        if d.mode is FaultMode.CONNECTION_DROP:
                            if sid:
                                state.dropped.add(conn)
                            state.say(f"injected connection drop on {method} {target!r}")
                            return ended_stream(rec)
                        schema = injector.output_schema(target) if method == "tools/call" \
                            else None  # fmt: skip
                        new = apply_fault(d, {"jsonrpc": "2.0", "id": msg["id"]},
                                          output_schema=schema)
                        if new == DROP:
                            return await hold(conn, msg["id"], rec)
                        state.call_done(rec, response_outcome(new))
                        return JSONResponse(new)
        url = state.upstream
        if request.url.query:
            url = f"{url}{'&' if '?' in url else '?'}{request.url.query}"
        req = client.build_request(request.method, url, headers=fwd_headers(request),
                                   content=body if body else None)
        try:
            resp = await client.send(req, stream=True)
        except httpx2.HTTPError as e:
            state.say(f"upstream {state.upstream} unreachable: {e}")
            state.call_done(rec, "error")
            return JSONResponse({"jsonrpc": "2.0", "id": msg.get("id") if isinstance(
                msg, dict) else None, "error": {"code": -32603, "message": "upstream "
                                                f"unreachable: {e}"}}, status_code=502)
        ctype = resp.headers.get("content-type", "").lower()
        headers = back_headers(resp)
        rid = json.dumps(msg.get("id")) if isinstance(msg, dict) and "id" in msg else None
        if ctype.startswith("application/json"):
            raw = await resp.aread()
            await resp.aclose()
            try:
                out = json.loads(raw)
            except (ValueError, UnicodeDecodeError, RecursionError):
                state.call_done(rec, "ok")
                return Response(raw, status_code=resp.status_code, headers=headers)
            if d is not None and d.method == "tools/list":
                state.note(out)
            elif d is None:
                state.note(out)
            return await reply_json(out, raw, resp.status_code, headers, d, rec, conn, sid)
        if ctype.startswith("text/event-stream"):
            return StreamingResponse(stream(resp, rid, d, rec, conn, sid),
                                     status_code=resp.status_code, headers=headers)

        async def passthrough():
            try:
                async for chunk in resp.aiter_raw():
                    yield chunk
            finally:
                await resp.aclose()

        state.call_done(rec, "ok")
        return StreamingResponse(passthrough(), status_code=resp.status_code, headers=headers)

    async def reply_json(out, raw, status, headers, d, rec, conn, sid):
        if d is None or not (isinstance(out, dict) and ("result" in out or "error" in out)):
            state.call_done(rec, response_outcome(out))
            return Response(raw, status_code=status, headers=headers)
        schema = injector.output_schema(d.tool) if d.method == "tools/call" else None
        new = apply_fault(d, out, output_schema=schema)
        if new == DROP:
            return await hold(conn, out.get("id"), rec)
        if new == DISCONNECT:
            if sid:
                state.dropped.add(conn)
            return ended_stream(rec)
        data = raw if new is out else json.dumps(new, separators=(",", ":")).encode()
        if d.cut_bytes is not None:
            state.call_done(rec, "cut")
            return Response(raw[: d.cut_bytes], status_code=status, headers=headers)
        if d.mode is FaultMode.TIMEOUT and d.hang_s is not None:
            await anyio.sleep(d.hang_s)
        state.call_done(rec, response_outcome(new))
        return Response(data, status_code=status, headers=headers)

    async def stream(resp, rid, d, rec, conn, sid):
        buf = bytearray()
        try:
            async for chunk in resp.aiter_raw():
                if d is None and rec is None:
                    buf.extend(chunk)
                    for ev in _sse_events(buf):
                        if b"tools" in ev:
                            other, data = _event_data(ev)
                            try:
                                state.note(json.loads(data))
                            except (ValueError, UnicodeDecodeError, RecursionError):
                                pass
                        yield ev
                    continue
                buf.extend(chunk)
                for ev in _sse_events(buf):
                    other, data = _event_data(ev)
                    try:
                        m = json.loads(data) if data else None
                    except (ValueError, UnicodeDecodeError, RecursionError):
                        m = None
                    is_answer = (isinstance(m, dict) and "method" not in m
                                 and ("result" in m or "error" in m)
                                 and json.dumps(m.get("id")) == rid)
                    if not is_answer:
                        yield ev
                        continue
                    if d is None:
                        state.call_done(rec, response_outcome(m))
                        yield ev
                        continue
                    if d.method == "tools/list":
                        state.note(m)
                    schema = injector.output_schema(d.tool) if d.method == "tools/call" \
                        else None  # fmt: skip
                    new = apply_fault(d, m, output_schema=schema)
                    if new == DROP:  # withhold the answer; keep the stream open
                        ev_hold = anyio.Event()
                        state.held[(conn, rid)] = ev_hold
                        try:
                            with anyio.move_on_after(MAX_HOLD_S):
                                await ev_hold.wait()
                        finally:
                            state.held.pop((conn, rid), None)
                            state.call_done(rec, "no_response")
                        return
                    if new == DISCONNECT:
                        if sid:
                            state.dropped.add(conn)
                        state.call_done(rec, "disconnected")
                        return
                    if d.cut_bytes is not None:
                        state.call_done(rec, "cut")
                        cut = data[: d.cut_bytes]
                        if d.cut_then == "close":
                            yield b"".join(x + b"\n" for x in other) + b"data: " + cut
                            return
                        yield _event(other, cut)
                        continue
                    if d.mode is FaultMode.TIMEOUT and d.hang_s is not None:
                        await anyio.sleep(d.hang_s)
                    state.call_done(rec, response_outcome(new))
                    yield ev if new is m else _event(other, json.dumps(
                        new, separators=(",", ":")).encode())
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


async def run_http_proxy_async(upstream: str, injector: FaultInjector, *,
                               listen: str = "127.0.0.1:0", connection: str = "http",
                               stderr: Any = None) -> int:
    """Serve the proxy with uvicorn until interrupted; returns the exit status (0).

    The address it listens on is printed to ``stderr`` as ``listening on <url>`` (the
    upstream's path on the proxy's host and port; port 0 picks a free one).
    """
    import uvicorn

    err = stderr if stderr is not None else sys.stderr
    host, port = _parse_listen(listen)
    app = build_http_proxy_app(upstream, injector, connection=connection, stderr=err)
    server = uvicorn.Server(uvicorn.Config(app, host=host, port=port, log_level="warning",
                                           lifespan="on", timeout_graceful_shutdown=1))
    async with anyio.create_task_group() as tg:
        tg.start_soon(server.serve)
        while not server.started:
            if server.should_exit:
                return 1
            await anyio.sleep(0.02)
        sock = server.servers[0].sockets[0].getsockname()
        path = urlsplit(upstream).path or "/"
        print(f"neurips26-mcp-inject: listening on http://{sock[0]}:{sock[1]}{path} "
              f"(upstream {upstream})", file=err, flush=True)
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
