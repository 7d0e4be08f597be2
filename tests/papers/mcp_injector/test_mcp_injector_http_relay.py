"""The HTTP proxy's relay and its HTTP/1.1 framing, against scripted upstreams (issue 14).

The parser (``_http1``) is checked on its own: heads, the hop-by-hop fields it leaves out,
the framing, and the messages it refuses. The relay runs in-process
(``run_http_proxy_async`` on a thread) in front of a scripted upstream that records what
reaches it and writes raw response bytes; the test's client speaks through ``h11`` (an
independent parser) or raw bytes. Counts, not clocks: keep-alive reuse is the number of
upstream connections, streaming is an upstream that waits for the client to have the first
event before it sends the second (a proxy that buffered would hang, and the socket timeout
fail the test). Everything stays on 127.0.0.1.
"""

import io
import json
import re
import socket
import threading
import time

import anyio
import anyio.from_thread
import anyio.lowlevel
import h11
import pytest

from neurips26.papers.mcp_injector import FaultMode, FaultProfile, FaultRule, Persistence
from neurips26.papers.mcp_injector._http1 import (
    ProtocolError,
    Stream,
    encode_chunk,
    parse_request,
    parse_response,
)
from neurips26.papers.mcp_injector.http_proxy import run_http_proxy_async
from neurips26.papers.mcp_injector.injector import FaultInjector

T = 30  # hang guard for every socket read (seconds)


# ------------------------------------------------------------------------------ the parser


def test_parse_request_keeps_end_to_end_fields_and_drops_hop_by_hop_ones():
    h = parse_request(b"POST /mcp?a=1 HTTP/1.1\r\nHost: x\r\nConnection: keep-alive, X-Hop\r\n"
                      b"X-Hop: 1\r\nKeep-Alive: 5\r\nAccept-Encoding: gzip\r\n"
                      b"Mcp-Session-Id:  s \r\nContent-Length: 3\r\nAccept: */*")
    assert (h.method, h.target, h.minor, h.length, h.chunked, h.close) == (
        b"POST", b"/mcp?a=1", 1, 3, False, False)
    assert h.block == b"Mcp-Session-Id:  s \r\nAccept: */*\r\n"  # as received
    assert h.get(b"mcp-session-id") == b"s" and h.get(b"host") == b"x"
    assert h.get(b"missing") is None


@pytest.mark.parametrize(("raw", "close"), [
    (b"GET / HTTP/1.1\r\nHost: x", False),
    (b"GET / HTTP/1.1\r\nConnection: close", True),
    (b"GET / HTTP/1.0", True),
    (b"GET / HTTP/1.0\r\nConnection: Keep-Alive", False),
    (b"GET / HTTP/1.1\r\nConnection: Upgrade, CLOSE", True),
])
def test_parse_request_connection_persistence(raw, close):
    assert parse_request(raw).close is close


def test_parse_request_chunked_and_repeated_equal_lengths():
    h = parse_request(b"POST / HTTP/1.1\r\nTransfer-Encoding: Chunked")
    assert h.chunked and h.length is None
    assert parse_request(b"POST / HTTP/1.1\r\nContent-Length: 7\r\ncontent-length: 7").length == 7
    assert parse_request(b"POST / HTTP/1.1\r\nContent-Length: 7, 7").length == 7


@pytest.mark.parametrize(("raw", "status"), [
    (b"GARBAGE", 400),
    (b"GET / HTTP/2.0", 400),
    (b"GET  / HTTP/1.1", 400),
    (b"GET / HTTP/1.1\r\nHost : x", 400),  # white space before the colon
    (b"GET / HTTP/1.1\r\nX: a\r\n folded", 400),  # obsolete line folding
    (b"GET / HTTP/1.1\r\nX: a\x00b", 400),
    (b"GET / HTTP/1.1\r\n: empty name", 400),
    (b"POST / HTTP/1.1\r\nContent-Length: -1", 400),
    (b"POST / HTTP/1.1\r\nContent-Length: 1\r\nContent-Length: 2", 400),
    (b"POST / HTTP/1.1\r\nContent-Length: 1, 2", 400),
    (b"POST / HTTP/1.1\r\nContent-Length: 99999999999999999999", 400),
    (b"POST / HTTP/1.1\r\nContent-Length: 3\r\nTransfer-Encoding: chunked", 400),
    (b"POST / HTTP/1.0\r\nTransfer-Encoding: chunked", 400),
    (b"POST / HTTP/1.1\r\nTransfer-Encoding: gzip, chunked", 501),
])
def test_parse_request_refuses_bad_heads(raw, status):
    with pytest.raises(ProtocolError) as e:
        parse_request(raw)
    assert e.value.status == status


def test_parse_response_framing():
    r = parse_response(b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
                       b"Transfer-Encoding: chunked\r\nContent-Length: 5")
    assert r.status == 200 and r.chunked and r.length is None and not r.close
    assert r.block == b"Content-Type: text/event-stream\r\n"
    assert parse_response(b"HTTP/1.1 200 OK").until_close  # neither framing field
    assert parse_response(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip").until_close
    assert parse_response(b"HTTP/1.0 204 ").close
    assert parse_response(b"HTTP/1.1 404\r\nContent-Length: 0").length == 0
    with pytest.raises(ProtocolError):
        parse_response(b"HTTP/1.1 2000 OK")


def _stream(*pieces):
    """A Stream reading ``pieces`` (one ``recv`` each, then the end of the stream)."""
    a, b = socket.socketpair()
    a.settimeout(T)

    def feed():
        for p in pieces:
            b.sendall(p)
            time.sleep(0.002)  # separate reads (not asserted: any split must parse)
        b.close()

    threading.Thread(target=feed, daemon=True).start()
    return Stream(a)


def test_stream_reads_heads_split_anywhere_and_skips_blank_lines():
    msg = b"\r\nPOST /a HTTP/1.1\r\nContent-Length: 5\r\n\r\nhelloGET /b HTTP/1.1\r\n\r\n"
    s = _stream(*[msg[i:i + 1] for i in range(len(msg))])  # a byte at a time
    first = parse_request(s.read_head())
    assert s.read_body(first) == b"hello"
    assert parse_request(s.read_head()).target == b"/b"
    assert s.read_head() is None  # a clean end between messages


def test_stream_refuses_partial_and_oversized_heads():
    with pytest.raises(ProtocolError) as e:
        _stream(b"GET / HTTP/1.1\r\nHost").read_head()
    assert e.value.status == 400
    with pytest.raises(ProtocolError) as e:
        _stream(b"GET / HTTP/1.1\r\nX: " + b"a" * 100_000 + b"\r\n\r\n").read_head()
    assert e.value.status == 431
    s = _stream(b"POST / HTTP/1.1\r\nContent-Length: 10\r\n\r\nabc")
    with pytest.raises(ProtocolError):
        s.read_body(parse_request(s.read_head()))
    s = _stream(b"POST / HTTP/1.1\r\nContent-Length: 10\r\n\r\n0123456789")
    with pytest.raises(ProtocolError) as e:
        s.read_body(parse_request(s.read_head()), limit=9)
    assert e.value.status == 413


def test_chunked_bodies_split_anywhere_with_extensions_and_trailers():
    body = (b"5;ext=1\r\nhello\r\n1A\r\n" + b"x" * 26 + b"\r\n0\r\nTrailer: t\r\n\r\n"
            b"NEXT")
    for size in (1, 2, 7, len(body)):
        s = _stream(*[body[i:i + size] for i in range(0, len(body), size)])
        head = parse_response(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked")
        assert b"".join(s.iter_body(head)) == b"hello" + b"x" * 26
        assert s.read_exact(4) == b"NEXT"  # the bytes after the body stay for the next
    s = _stream(b"zz\r\nhello\r\n0\r\n\r\n")
    with pytest.raises(ProtocolError):
        list(s.iter_chunked())
    s = _stream(b"5\r\nhelloXX0\r\n\r\n")
    with pytest.raises(ProtocolError):
        list(s.iter_chunked())
    s = _stream(b"5\r\nhel")
    with pytest.raises(ProtocolError):
        list(s.iter_chunked())


def test_chunked_reader_yields_what_has_arrived_before_blocking():
    a, b = socket.socketpair()
    a.settimeout(T)
    s = Stream(a)
    it = s.iter_chunked()
    b.sendall(b"3\r\nabc\r\n2\r\nde\r\n4\r\nfg")
    assert next(it) == b"abcdefg"  # two chunks and a part of the third, before any more
    b.sendall(b"hi\r\n0\r\n\r\n")
    assert list(it) == [b"hi"]
    assert encode_chunk(b"") == b"" and encode_chunk(b"x" * 17) == b"11\r\n" + b"x" * 17 + b"\r\n"


# ------------------------------------------------------------------ scripted upstream


class Upstream:
    """A scripted HTTP/1.1 server on 127.0.0.1.

    ``respond(req, sock)`` writes the raw response to ``req`` (a dict: method, target,
    headers (lower-case names), body, conn (the connection's number)) and returns whether
    the connection stays open. Requests reaching it are kept in :attr:`requests`.
    """

    def __init__(self, respond):
        self.respond = respond
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]
        self.url = f"http://127.0.0.1:{self.port}/mcp"
        self.requests: list[dict] = []
        self.connections = 0
        self.closed = threading.Event()  # set when a connection ends at the client's side
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self):
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            self.connections += 1
            threading.Thread(target=self._serve, args=(conn, self.connections),
                             daemon=True).start()

    def _serve(self, conn, n):
        conn.settimeout(T)
        buf = b""
        with conn:
            while True:
                while b"\r\n\r\n" not in buf:
                    data = conn.recv(65536)
                    if not data:
                        self.closed.set()
                        return
                    buf += data
                head, buf = buf.split(b"\r\n\r\n", 1)
                lines = head.decode("latin-1").split("\r\n")
                method, target, _ = lines[0].split(" ")
                headers: dict[str, str] = {}
                for line in lines[1:]:
                    k, _, v = line.partition(":")
                    headers[k.strip().lower()] = v.strip()
                size = int(headers.get("content-length", 0))
                while len(buf) < size:
                    buf += conn.recv(65536)
                body, buf = buf[:size], buf[size:]
                req = {"method": method, "target": target, "headers": headers, "body": body,
                       "conn": n}
                self.requests.append(req)
                try:
                    if not self.respond(req, conn):
                        return
                except OSError:
                    self.closed.set()
                    return

    def close(self):
        self.sock.close()


def json_response(body: bytes, extra: bytes = b"") -> bytes:
    return (b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\n" + extra
            + b"content-length: %d\r\n\r\n" % len(body) + body)


def echo(req, sock):
    """Answer a JSON-RPC request with a result naming its method (and echo other bodies)."""
    try:
        msg = json.loads(req["body"])
        out = json.dumps({"jsonrpc": "2.0", "id": msg.get("id"), "result": {
            "content": [{"type": "text", "text": f"ok {msg.get('method')}"}],
            "isError": False}}).encode()
    except ValueError:
        out = req["body"]
    sock.sendall(json_response(out))
    return True


class Proxy:
    """``run_http_proxy_async`` on its own thread and event loop, in front of ``upstream``."""

    def __init__(self, upstream: str, profile=None, log_path=None):
        self.inj = FaultInjector(profile or FaultProfile(), log_path=log_path)
        self.err = io.StringIO()
        self.token = self.scope = None
        self.status = None
        self.thread = threading.Thread(target=anyio.run, args=(self._main, upstream),
                                       daemon=True)
        self.thread.start()
        deadline = time.monotonic() + T
        while "listening on" not in self.err.getvalue() and time.monotonic() < deadline:
            time.sleep(0.01)
        m = re.search(r"listening on http://([\d.]+):(\d+)(\S*)", self.err.getvalue())
        assert m, self.err.getvalue()
        self.addr = (m.group(1), int(m.group(2)))
        self.url = f"http://{m.group(1)}:{m.group(2)}{m.group(3)}"

    async def _main(self, upstream):
        self.token = anyio.lowlevel.current_token()
        with anyio.CancelScope() as self.scope:
            self.status = await run_http_proxy_async(upstream, self.inj, stderr=self.err)

    def close(self):
        if self.thread.is_alive():
            anyio.from_thread.run_sync(self.scope.cancel, token=self.token)
            self.thread.join(T)


@pytest.fixture
def serve():
    made = []

    def start(respond=echo, profile=None, log_path=None):
        up = Upstream(respond)
        proxy = Proxy(up.url, profile, log_path)
        made.extend((proxy, up))
        return up, proxy

    yield start
    for x in made:
        x.close()


class Client:
    """An HTTP/1.1 client on one connection, framing by ``h11``."""

    def __init__(self, addr):
        self.sock = socket.create_connection(addr, timeout=T)
        self.h = h11.Connection(h11.CLIENT)

    def send(self, method, target="/mcp", headers=(), body=b""):
        hdrs = [("host", "proxy"), *headers]
        if body or method == "POST":
            hdrs.append(("content-length", str(len(body))))
        out = self.h.send(h11.Request(method=method, target=target, headers=hdrs))
        if body:
            out += self.h.send(h11.Data(data=body))
        self.sock.sendall(out + self.h.send(h11.EndOfMessage()))

    def event(self):
        while True:
            ev = self.h.next_event()
            if ev is not h11.NEED_DATA:
                return ev
            self.h.receive_data(self.sock.recv(65536))

    def response(self):
        """``(status, headers, body)`` of the next response (then ready for another)."""
        resp = self.event()
        assert isinstance(resp, h11.Response), resp
        body = b""
        while not isinstance(ev := self.event(), h11.EndOfMessage):
            body += ev.data
        headers = {k.decode(): v.decode() for k, v in resp.headers}
        if self.h.our_state is h11.DONE and self.h.their_state is h11.DONE:
            self.h.start_next_cycle()
        return resp.status_code, headers, body

    def call(self, method, target="/mcp", headers=(), body=b""):
        self.send(method, target, headers, body)
        return self.response()

    def close(self):
        self.sock.close()


def rpc(method, rid=1, **params) -> bytes:
    return json.dumps({"jsonrpc": "2.0", "id": rid, "method": method,
                       "params": params}).encode()


def raw_exchange(addr, data: bytes, *, shut: bool = False) -> bytes:
    """Send raw bytes on a fresh connection (then end the sending side, ``shut``);
    everything the proxy sends until it closes."""
    with socket.create_connection(addr, timeout=T) as s:
        s.sendall(data)
        if shut:
            s.shutdown(socket.SHUT_WR)
        out = b""
        while chunk := s.recv(65536):
            out += chunk
        return out


# ------------------------------------------------------------------------------ the relay


def test_keep_alive_connections_are_reused_both_ways(serve):
    up, proxy = serve()
    c = Client(proxy.addr)
    for i in range(5):
        status, headers, body = c.call("POST", "/anything?x=1", body=rpc("ping", i),
                                       headers=[("content-type", "application/json")])
        assert status == 200 and json.loads(body)["id"] == i
        assert headers["content-type"] == "application/json"
    c.close()
    assert len(up.requests) == 5 and up.connections == 1  # one pooled upstream connection
    req = up.requests[0]
    assert req["headers"]["content-length"] == str(len(rpc("ping", 0)))
    assert "transfer-encoding" not in req["headers"]
    assert req["target"] == "/mcp?x=1"  # the upstream's path, the client's query
    assert req["headers"]["host"] == f"127.0.0.1:{up.port}"
    assert req["headers"]["accept-encoding"] == "identity"


def test_hop_by_hop_fields_are_not_forwarded(serve):
    up, proxy = serve()
    c = Client(proxy.addr)
    c.call("POST", body=rpc("ping"), headers=[
        ("connection", "keep-alive, x-private"), ("x-private", "1"), ("keep-alive", "5"),
        ("te", "trailers"), ("mcp-session-id", "abc"), ("user-agent", "tests")])
    c.close()
    headers = up.requests[0]["headers"]
    assert not {"connection", "x-private", "keep-alive", "te"} & set(headers)
    assert headers["mcp-session-id"] == "abc" and headers["user-agent"] == "tests"


def test_a_large_body_passes_unchanged_both_ways(serve):
    up, proxy = serve()
    big = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
        "name": "t", "arguments": {"blob": "x" * 5_000_000}}}).encode()

    answer = big.replace(b'"method": "tools/call"', b'"result": {}')

    def back(req, sock):
        sock.sendall(json_response(answer))
        return True

    up.respond = back
    c = Client(proxy.addr)
    status, _, body = c.call("POST", body=big)
    c.close()
    assert up.requests[0]["body"] == big
    assert status == 200 and body == answer


def test_chunked_upstream_bodies_are_reframed(serve):
    payload = json.dumps({"jsonrpc": "2.0", "id": 7, "result": {"content": [], "isError": False}}
                         ).encode()
    stream = (b"".join(encode_chunk(payload[i:i + 5]) for i in range(0, len(payload), 5))
              + b"0\r\nx-trailer: 1\r\n\r\n")

    def chunked(req, sock):
        sock.sendall(b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\n"
                     b"transfer-encoding: chunked\r\n\r\n")
        for i in range(0, len(stream), 3):
            sock.sendall(stream[i:i + 3])
        return True

    rule = FaultRule(tool="t", mode=FaultMode.PROTOCOL_ERROR, after_server=True)
    up, proxy = serve(chunked, FaultProfile(rules=(rule,)))
    c = Client(proxy.addr)
    status, headers, body = c.call("POST", body=rpc("ping", 7))
    assert status == 200 and body == payload and headers["content-length"] == str(len(body))
    status, _, body = c.call("POST", body=rpc("tools/call", 7, name="t", arguments={}))
    assert status == 200 and json.loads(body)["error"]["code"] == -32603  # rewritten
    c.close()
    assert up.connections == 1


def _events_upstream(first_seen: threading.Event, rid=1):
    """An upstream answering with an event stream: a notification, then (once the test has
    it through the proxy) the answer, then the end."""
    def respond(req, sock):
        sock.sendall(b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n"
                     b"transfer-encoding: chunked\r\n\r\n")
        note = b'data: {"jsonrpc":"2.0","method":"notifications/progress","params":{}}\n\n'
        sock.sendall(encode_chunk(b"event: message\n") + encode_chunk(note[:20]))
        sock.sendall(encode_chunk(note[20:]))
        if not first_seen.wait(T):
            return False
        answer = json.dumps({"jsonrpc": "2.0", "id": rid, "result": {
            "content": [{"type": "text", "text": "done"}], "isError": False}}).encode()
        sock.sendall(encode_chunk(b"event: message\ndata: " + answer + b"\n\n") + b"0\r\n\r\n")
        return True
    return respond


@pytest.mark.parametrize("with_log", (False, True))
def test_event_streams_are_relayed_event_by_event(serve, tmp_path, with_log):
    """The first event reaches the client while the upstream still holds the rest back
    (with a log the proxy parses each event to find the call's answer; without, it does not
    look into them)."""
    first_seen = threading.Event()
    log = tmp_path / "log.jsonl" if with_log else None
    _up, proxy = serve(_events_upstream(first_seen), log_path=log)
    c = Client(proxy.addr)
    c.send("POST", body=rpc("tools/call", 1, name="t", arguments={}))
    resp = c.event()
    assert resp.status_code == 200
    assert (b"content-type", b"text/event-stream") in resp.headers
    got = b""
    while b"progress" not in got:
        got += c.event().data  # the first event, before the upstream sends the second
    assert b"done" not in got
    first_seen.set()
    while not isinstance(ev := c.event(), h11.EndOfMessage):
        got += ev.data
    assert got.count(b"data: ") == 2 and b'"done"' in got
    c.close()
    if with_log:
        calls = [json.loads(x) for x in log.read_text().splitlines()]
        assert [(r["tool"], r["outcome"]) for r in calls if r["kind"] == "call"] == [("t", "ok")]


def test_event_stream_answer_is_rewritten_and_cut(serve):
    first_seen = threading.Event()
    first_seen.set()
    rule = FaultRule(tool="t", mode=FaultMode.MALFORMED_RESULT, cut_bytes=10,
                     cut_then="close")
    _up, proxy = serve(_events_upstream(first_seen), FaultProfile(rules=(rule,)))
    c = Client(proxy.addr)
    status, _, body = c.call("POST", body=rpc("tools/call", 1, name="t", arguments={}))
    c.close()
    assert status == 200 and b"progress" in body
    assert body.endswith(b'data: {"jsonrpc"')  # cut after 10 bytes, the stream ended


def test_client_abort_of_a_stream_closes_the_upstream_connection(serve):
    gone = []

    def stream(req, sock):
        sock.sendall(b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n"
                     b"transfer-encoding: chunked\r\n\r\n" + encode_chunk(b": hi\n\n"))
        gone.append(sock.recv(1))  # an idle GET stream: sends nothing more, waits
        return False

    _up, proxy = serve(stream)
    c = Client(proxy.addr)
    c.send("GET", headers=[("accept", "text/event-stream")])
    assert c.event().status_code == 200 and c.event().data == b": hi\n\n"
    c.close()  # the client leaves: the proxy drops the upstream stream
    deadline = time.monotonic() + T
    while not gone and time.monotonic() < deadline:
        time.sleep(0.01)
    assert gone == [b""]  # the upstream saw its connection end


def test_other_responses_pass_as_bytes(serve):
    def respond(req, sock):
        if req["method"] == "HEAD":
            sock.sendall(b"HTTP/1.1 200 OK\r\ncontent-type: text/plain\r\ncontent-length: 5\r\n"
                         b"\r\n")
        elif req["method"] == "DELETE":
            sock.sendall(b"HTTP/1.1 204 No Content\r\n\r\n")
        else:  # until the close, compressed (not looked into)
            sock.sendall(b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\n"
                         b"content-encoding: gzip\r\n\r\n\x1f\x8b binary")
            return False
        return True

    _up, proxy = serve(respond)
    c = Client(proxy.addr)
    status, headers, body = c.call("HEAD")
    assert status == 200 and headers["content-length"] == "5" and body == b""
    assert c.call("DELETE")[0] == 204
    status, headers, body = c.call("GET")
    assert headers["content-encoding"] == "gzip" and body == b"\x1f\x8b binary"
    c.close()


def test_a_closed_idle_upstream_connection_is_replaced(serve):
    def once(req, sock):  # closes after each answer, without saying so
        echo(req, sock)
        return False

    up, proxy = serve(once)
    c = Client(proxy.addr)
    for i in range(3):
        assert json.loads(c.call("POST", body=rpc("ping", i))[2])["id"] == i
    c.close()
    assert up.connections == 3 and len(up.requests) == 3  # each sent once


def test_unreachable_upstream_is_a_502_with_the_request_id():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # nothing listens here once closed
    proxy = Proxy(f"http://127.0.0.1:{port}/mcp")
    try:
        c = Client(proxy.addr)
        status, _, body = c.call("POST", body=rpc("tools/call", 9, name="t", arguments={}))
        c.close()
    finally:
        proxy.close()
    msg = json.loads(body)
    assert status == 502 and msg["id"] == 9 and msg["error"]["code"] == -32603
    assert "unreachable" in proxy.err.getvalue()


@pytest.mark.parametrize(("data", "status"), [
    (b"NONSENSE\r\n\r\n", b"400"),
    (b"GET / HTTP/1.1\r\nBad Header: x\r\n\r\n", b"400"),
    (b"POST / HTTP/1.1\r\nContent-Length: 2\r\nTransfer-Encoding: chunked\r\n\r\n", b"400"),
    (b"POST / HTTP/1.1\r\nTransfer-Encoding: gzip\r\n\r\n", b"501"),
    (b"GET / HTTP/1.1\r\nX: " + b"y" * 70_000 + b"\r\n\r\n", b"431"),
    (b"GET / HTTP/1.1\r\nX: " + b"y" * 3_000_000 + b"\r\n\r\n", b"431"),
    (b"PUT / HTTP/1.1\r\nContent-Length: 0\r\n\r\n", b"405"),
])
def test_bad_requests_are_answered_and_the_connection_closed(serve, data, status):
    up, proxy = serve()
    out = raw_exchange(proxy.addr, data)
    assert out.startswith(b"HTTP/1.1 " + status) and b"connection: close" in out.lower()
    assert up.requests == []
    c = Client(proxy.addr)  # the proxy still serves
    assert c.call("POST", body=rpc("ping"))[0] == 200
    c.close()


@pytest.mark.parametrize("data", [
    b"POST /mcp HTTP/1.1\r\nContent-Le",
    b"POST /mcp HTTP/1.1\r\nContent-Length: 9\r\n\r\n{}",
    b"POST /mcp HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nab",
])
def test_partial_requests_then_close_do_not_reach_the_upstream(serve, data):
    up, proxy = serve()
    assert raw_exchange(proxy.addr, data, shut=True).startswith(b"HTTP/1.1 400")
    assert raw_exchange(proxy.addr, b"", shut=True) == b""  # connected, sent nothing
    assert up.requests == []


def test_pipelined_chunked_and_expect_continue_requests(serve):
    up, proxy = serve()
    body = rpc("ping", 3)
    chunked = (b"POST /mcp HTTP/1.1\r\nHost: p\r\nTransfer-Encoding: chunked\r\n\r\n"
               + encode_chunk(body[:4]) + encode_chunk(body[4:]) + b"0\r\n\r\n")
    plain = (b"POST /mcp HTTP/1.1\r\nHost: p\r\nConnection: close\r\n"
             b"Content-Length: %d\r\n\r\n%s" % (len(body), body))
    out = raw_exchange(proxy.addr, chunked + plain)  # two requests in one write
    assert out.count(b"HTTP/1.1 200") == 2 and out.count(b'"id": 3') == 2
    assert [r["body"] for r in up.requests] == [body, body]
    with socket.create_connection(proxy.addr, timeout=T) as s:
        s.sendall(b"POST /mcp HTTP/1.1\r\nHost: p\r\nExpect: 100-continue\r\n"
                  b"Content-Length: %d\r\n\r\n" % len(body))
        assert s.recv(100) == b"HTTP/1.1 100 Continue\r\n\r\n"
        s.sendall(body)
        assert s.recv(65536).startswith(b"HTTP/1.1 200")
    assert "expect" not in up.requests[-1]["headers"]


def test_http10_clients_get_close_delimited_streams(serve):
    first_seen = threading.Event()
    first_seen.set()
    _up, proxy = serve(_events_upstream(first_seen))
    out = raw_exchange(proxy.addr, b"POST /mcp HTTP/1.0\r\nContent-Length: %d\r\n\r\n%s" % (
        len(rpc("tools/call", 1, name="t")), rpc("tools/call", 1, name="t")))
    head, body = out.split(b"\r\n\r\n", 1)
    assert b"transfer-encoding" not in head.lower() and b"connection: close" in head.lower()
    assert body.count(b"data: ") == 2


def test_held_call_is_released_by_a_cancellation_and_logged(serve, tmp_path):
    log = tmp_path / "log.jsonl"
    rule = FaultRule(tool="t", mode=FaultMode.TIMEOUT, persistence=Persistence.TRANSIENT,
                     duration=2)
    up, proxy = serve(profile=FaultProfile(rules=(rule,)), log_path=log)
    held = Client(proxy.addr)
    held.send("POST", body=rpc("tools/call", 5, name="t", arguments={}))
    assert held.event().status_code == 200  # the stream's head; no answer in it
    other = Client(proxy.addr)
    cancel = json.dumps({"jsonrpc": "2.0", "method": "notifications/cancelled",
                         "params": {"requestId": 5}}).encode()
    assert other.call("POST", body=cancel)[0] == 202  # the upstream never saw the request
    assert isinstance(held.event(), h11.EndOfMessage)
    held.h.start_next_cycle()
    # the second call is held too; the client aborts it
    held.send("POST", body=rpc("tools/call", 6, name="t", arguments={}))
    assert held.event().status_code == 200
    held.close()
    third = other.call("POST", body=rpc("tools/call", 7, name="t", arguments={}))
    other.close()
    assert third[0] == 200 and b"ok tools/call" in third[2]
    deadline = time.monotonic() + T
    while log.read_text().count('"kind": "call"') < 3 and time.monotonic() < deadline:
        time.sleep(0.01)  # the aborted hold is logged when the proxy sees the close
    calls = [json.loads(x) for x in log.read_text().splitlines()]
    outcomes = [(r["id"], r["outcome"]) for r in calls if r["kind"] == "call"]
    assert sorted(outcomes) == [(5, "no_response"), (6, "no_response"), (7, "ok")]
    assert [json.loads(r["body"])["id"] for r in up.requests] == [7]


def test_connection_drop_ends_the_session(serve):
    rule = FaultRule(tool="t", mode=FaultMode.CONNECTION_DROP)
    up, proxy = serve(profile=FaultProfile(rules=(rule,)))
    c = Client(proxy.addr)
    sid = [("mcp-session-id", "s-1")]
    status, headers, body = c.call("POST", headers=sid, body=rpc("tools/call", 1, name="t"))
    assert status == 200 and headers["content-type"].startswith("text/event-stream")
    assert b"data:" not in body  # no response in the stream
    status, _, body = c.call("POST", headers=sid, body=rpc("tools/list", 2))
    assert status == 404 and b"terminated" in body.lower()
    assert c.call("POST", headers=[("mcp-session-id", "s-2")], body=rpc("ping", 3))[0] == 200
    c.close()
    assert [json.loads(r["body"])["method"] for r in up.requests] == ["ping"]
    assert proxy.inj.faults()[0]["connection"] == "http-0"


def test_listen_failure_returns_1():
    with socket.create_server(("127.0.0.1", 0)) as taken:
        port = taken.getsockname()[1]
        err = io.StringIO()
        status = anyio.run(lambda: run_http_proxy_async(
            "http://127.0.0.1:9/mcp", FaultInjector(FaultProfile()),
            listen=f"127.0.0.1:{port}", stderr=err))
    assert status == 1 and "cannot listen" in err.getvalue()



def test_shutdown_logs_held_calls(serve, tmp_path):
    log = tmp_path / "log.jsonl"
    rule = FaultRule(tool="t", mode=FaultMode.TIMEOUT)
    _up, proxy = serve(profile=FaultProfile(rules=(rule,)), log_path=log)
    c = Client(proxy.addr)
    c.send("POST", body=rpc("tools/call", 1, name="t", arguments={}))
    assert c.event().status_code == 200
    proxy.close()  # cancels run_http_proxy_async: connections are shut down
    assert not proxy.thread.is_alive()
    with pytest.raises(h11.RemoteProtocolError):
        c.event()  # the held stream ends without its last chunk
    c.close()
    calls = [json.loads(x) for x in log.read_text().splitlines()]
    assert [r["outcome"] for r in calls if r["kind"] == "call"] == ["no_response"]


# ---------------------------------------------------------------- the ASGI application


def test_asgi_app_makes_the_same_decisions(tmp_path):
    """``build_http_proxy_app`` under uvicorn: the same proxy, forwarding with httpx."""
    import uvicorn

    from neurips26.papers.mcp_injector import build_http_proxy_app

    first_seen = threading.Event()
    first_seen.set()
    events = _events_upstream(first_seen)

    def respond(req, sock):
        if json.loads(req["body"]).get("method") == "prompts/get":
            return events(req, sock)
        return echo(req, sock)

    up = Upstream(respond)
    rules = (FaultRule(tool="bad", mode=FaultMode.TOOL_ERROR),
             FaultRule(tool="p", method="prompts/get", mode=FaultMode.PROTOCOL_ERROR,
                       after_server=True))
    inj = FaultInjector(FaultProfile(rules=rules), log_path=tmp_path / "log.jsonl")
    app = build_http_proxy_app(up.url, inj, stderr=io.StringIO())
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=0, log_level="warning",
                                           lifespan="on"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    try:
        deadline = time.monotonic() + T
        while not server.started and time.monotonic() < deadline:
            time.sleep(0.01)
        c = Client(server.servers[0].sockets[0].getsockname()[:2])
        ok = c.call("POST", body=rpc("tools/call", 1, name="good", arguments={}))
        bad = c.call("POST", body=rpc("tools/call", 2, name="bad", arguments={}))
        prompt = c.call("POST", body=rpc("prompts/get", 1, name="p"))
        c.close()
    finally:
        server.should_exit = True
        thread.join(T)
        up.close()
    assert ok[0] == 200 and b"ok tools/call" in ok[2]
    assert json.loads(bad[2])["result"]["isError"] is True
    assert b"progress" in prompt[2] and b'"code":-32603' in prompt[2]
    assert [json.loads(r["body"])["params"]["name"] for r in up.requests] == ["good", "p"]
    calls = [json.loads(x) for x in (tmp_path / "log.jsonl").read_text().splitlines()]
    assert [(r["tool"], r["outcome"]) for r in calls if r["kind"] == "call"] == [
        ("good", "ok"), ("bad", "is_error")]
