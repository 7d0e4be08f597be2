"""HTTP/1.1 message framing for the Streamable HTTP proxy, on blocking sockets.

Only what a relaying proxy needs (RFC 9112): a message head is read up to its blank line
and checked with one regular expression for its start line and one for all its header
fields; a body is framed by ``Content-Length``, by the chunked transfer coding, or (a
response) by the end of the connection. A parsed :class:`Head` keeps the header lines to
pass on as the bytes they arrived as, less the hop-by-hop fields and the framing, which
the proxy writes itself.

Why not h11 (the well-kept parser, and the oracle of this module's tests): its event
objects, on the proxy's client side and again on its upstream side, cost about the
whole latency budget of a proxied call (a tenth of a direct call) when measured while
writing this module; a head checked by two regular expressions costs an order of
magnitude less.

Strictness: start lines, field names (tokens) and field values (no control characters)
are checked; obsolete line folding, a field name followed by white space, a request with
both ``Content-Length`` and ``Transfer-Encoding``, conflicting or non-numeric lengths, a
transfer coding other than ``chunked``, malformed chunk sizes, and heads or bodies over
:data:`MAX_HEAD` or :data:`MAX_BODY` are refused with :class:`ProtocolError` (the status a
server answers with: 400, 413, 431 or 501).

Examples
--------
>>> h = parse_request(b"POST /mcp?x=1 HTTP/1.1\\r\\nHost: a\\r\\nContent-Length: 2\\r\\n"
...                   b"Mcp-Session-Id: s1")
>>> h.method, h.target, h.length, h.close, h.block, h.get(b"mcp-session-id")
(b'POST', b'/mcp?x=1', 2, False, b'Mcp-Session-Id: s1\\r\\n', b's1')
>>> parse_response(b"HTTP/1.1 200 OK\\r\\ntransfer-encoding: chunked").chunked
True
>>> encode_chunk(b"hi")
b'2\\r\\nhi\\r\\n'
"""

from __future__ import annotations

import re
import select
import socket
from collections.abc import Callable, Iterator

__all__ = [
    "LAST_CHUNK",
    "MAX_BODY",
    "MAX_HEAD",
    "REQUEST_HOP",
    "RESPONSE_HOP",
    "Head",
    "ProtocolError",
    "Stream",
    "encode_chunk",
    "parse_request",
    "parse_response",
]

#: Longest message head read (bytes); a longer request is answered with 431.
MAX_HEAD = 64 * 1024
#: Longest request body read (bytes); a longer one is answered with 413.
MAX_BODY = 64 * 1024 * 1024
#: Bytes asked of one ``recv`` (into a buffer allocated once per stream: a fresh 256 KiB
#: ``bytes`` a read cost an ``mmap`` and page faults).
RECV_SIZE = 64 * 1024
#: The end of a chunked body (no trailers).
LAST_CHUNK = b"0\r\n\r\n"

_HOP = (b"connection", b"keep-alive", b"proxy-connection", b"te", b"trailer",
        b"transfer-encoding", b"upgrade", b"content-length")
#: Request fields a proxy does not pass on: hop-by-hop ones, the framing, ``Host`` (the
#: upstream's is sent), ``Accept-Encoding`` (``identity`` is asked, so bodies stay readable)
#: and ``Expect`` (the proxy reads the whole body before it forwards it).
REQUEST_HOP = frozenset((*_HOP, b"host", b"accept-encoding", b"expect"))
#: Response fields a proxy does not pass on: hop-by-hop ones and the framing.
RESPONSE_HOP = frozenset(_HOP)

_TOKEN = rb"[-!#$%&'*+.^_`|~0-9A-Za-z]+"
_VALUE = rb"[^\x00-\x08\x0a-\x1f\x7f]*"  # HTAB, SP, VCHAR and obs-text
_REQUEST_LINE = re.compile(rb"(%s) ([^\x00-\x20\x7f]+) HTTP/1\.([01])" % _TOKEN)
_STATUS_LINE = re.compile(rb"HTTP/1\.([01]) ([0-9]{3})(?: %s)?" % _VALUE)
_FIELDS = re.compile(rb"%s:%s(?:\r\n%s:%s)*" % (_TOKEN, _VALUE, _TOKEN, _VALUE))
_CHUNK_SIZE = re.compile(rb"([0-9A-Fa-f]{1,15})[ \t]*(?:;%s)?" % _VALUE)


class ProtocolError(Exception):
    """A message that breaks HTTP/1.1 framing; ``status`` is what a server answers."""

    def __init__(self, status: int, message: str):
        super().__init__(message)
        self.status = status


class Head:
    """A parsed message head.

    Attributes
    ----------
    line : bytes
        The start line.
    method, target : bytes
        A request's method and request target (``b""`` for a response).
    status : int
        A response's status code (0 for a request).
    minor : int
        The HTTP/1 minor version (0 or 1).
    fields : dict
        Lower-case field name to its (last) header line; see :meth:`get`.
    block : bytes
        The header lines to pass on, as received, each ending in CRLF: every field but
        the hop-by-hop ones (those named in ``Connection`` too) and the framing.
    length : int or None
        ``Content-Length`` (None: not given, or overridden by ``Transfer-Encoding``).
    chunked : bool
        The body has the chunked transfer coding.
    until_close : bool
        A response body that ends with the connection (a transfer coding other than
        chunked last, or neither framing field).
    close : bool
        The connection ends after this message (``Connection: close``, HTTP/1.0 without
        keep-alive, or a body read until the close).
    """

    __slots__ = ("block", "chunked", "close", "fields", "length", "line", "method", "minor",
                 "status", "target", "until_close")

    def get(self, name: bytes, default: bytes | None = None) -> bytes | None:
        """The (last) value of field ``name`` (lower case), white space stripped."""
        line = self.fields.get(name)
        return default if line is None else line[len(name) + 1:].strip(b" \t")

    def __repr__(self) -> str:
        return f"Head({self.line!r})"


def _parse_fields(head: Head, block: bytes, drop: frozenset, response: bool) -> None:
    """Fill ``head`` from the header lines ``block`` (CRLF-separated)."""
    fields: dict[bytes, bytes] = {}
    kept: list[bytes] = []
    hop: list[tuple[bytes, bytes]] = []
    if block:
        if not _FIELDS.fullmatch(block):
            raise ProtocolError(400, "malformed header field")
        for line in block.split(b"\r\n"):
            name = line[:line.find(b":")].lower()
            fields[name] = line
            if name in drop:
                hop.append((name, line))
            else:
                kept.append(line)
        kept.append(b"")
    length: int | None = None
    coding = connection = None
    for name, line in hop:  # the framing and connection fields
        value = line[len(name) + 1:].strip(b" \t")
        if name == b"content-length":
            if not value.isdigit():
                parts = {v.strip(b" \t") for v in value.split(b",")}
                value = parts.pop() if len(parts) == 1 else b""
                if not value.isdigit():
                    raise ProtocolError(400, "bad Content-Length")
            if len(value) > 18 or (length is not None and int(value) != length):
                raise ProtocolError(400, "bad Content-Length")
            length = int(value)
        elif name == b"transfer-encoding":
            coding = value.lower() if coding is None else coding + b", " + value.lower()
        elif name == b"connection":
            value = value.lower()
            connection = value if connection is None else connection + b", " + value
    head.fields = fields
    head.block = b"\r\n".join(kept)
    head.chunked = head.until_close = False
    close = head.minor == 0
    if connection == b"keep-alive" or connection == b"close":  # the usual ones, quickly
        close = connection == b"close"
    elif connection is not None:
        tokens = {t.strip(b" \t") for t in connection.split(b",")}
        close = b"close" in tokens or (close and b"keep-alive" not in tokens)
        tokens -= {b"close", b"keep-alive", b""}
        if tokens:  # fields the sender named hop-by-hop
            head.block = b"".join(x + b"\r\n" for x in kept[:-1]
                                  if x[:x.find(b":")].lower() not in tokens)
    if coding is not None:
        if not response:
            if head.minor == 0 or length is not None:
                raise ProtocolError(400, "Transfer-Encoding with HTTP/1.0 or Content-Length")
            if coding != b"chunked":
                raise ProtocolError(501, "only the chunked transfer coding is supported")
            head.chunked = True
        elif coding.rsplit(b",", 1)[-1].strip(b" \t") == b"chunked":
            head.chunked = True
        else:
            head.until_close = True
        length = None
    elif response and length is None:
        head.until_close = True
    head.close = close or head.until_close
    head.length = length


def parse_request(raw: bytes, drop: frozenset = REQUEST_HOP) -> Head:
    """Parse a request head (without its final blank line).

    Parameters
    ----------
    raw : bytes
        The request line and header lines, CRLF-separated.
    drop : frozenset of bytes
        Lower-case names of the fields left out of :attr:`Head.block` (besides those
        named in ``Connection``).

    Returns
    -------
    Head

    Raises
    ------
    ProtocolError
        400 for a malformed head, 501 for an unsupported transfer coding.
    """
    line, block, m = _start_line(raw, _REQUEST_LINE, "request line")
    h = Head()
    h.line, h.status = line, 0
    h.method, h.target, minor = m.groups()
    h.minor = 1 if minor == b"1" else 0
    _parse_fields(h, block, drop, False)
    return h


def parse_response(raw: bytes, drop: frozenset = RESPONSE_HOP) -> Head:
    """Parse a response head (without its final blank line); as :func:`parse_request`.

    A response without ``Content-Length`` or chunked coding has :attr:`Head.until_close`
    set; whether it has a body at all (``HEAD``, 1xx, 204, 304) is the caller's to know.
    """
    line, block, m = _start_line(raw, _STATUS_LINE, "status line")
    h = Head()
    h.line, h.method, h.target = line, b"", b""
    h.minor = 1 if m.group(1) == b"1" else 0
    h.status = int(m.group(2))
    _parse_fields(h, block, drop, True)
    return h


def _start_line(raw: bytes, pattern: re.Pattern, what: str):
    """``(start line, field block, match)`` of a head; 400 when the line is malformed."""
    i = raw.find(b"\r\n")
    line, block = (raw, b"") if i < 0 else (raw[:i], raw[i + 2:])
    m = pattern.fullmatch(line)
    if m is None:
        raise ProtocolError(400, f"malformed {what}")
    return line, block, m


def encode_chunk(data: bytes) -> bytes:
    """``data`` as one chunk of a chunked body (empty data: nothing, not the last chunk)."""
    return b"%x\r\n%s\r\n" % (len(data), data) if data else b""


class Stream:
    """A blocking socket with a read buffer: message heads and bodies off a connection.

    Parameters
    ----------
    sock : socket.socket
        A connected socket in blocking mode.

    Attributes
    ----------
    buf : bytearray
        Bytes received and not yet consumed.
    wait : callable or None
        Called before every blocking ``recv``; it returns once the socket is readable, or
        raises to abandon the read (the proxy watches the client's socket with it while
        it streams a response).
    """

    __slots__ = ("_into", "buf", "sock", "wait")

    def __init__(self, sock: socket.socket):
        self.sock = sock
        self.buf = bytearray()
        self.wait: Callable[[], None] | None = None
        self._into = memoryview(bytearray(RECV_SIZE))

    def fill(self) -> bool:
        """Receive more bytes into :attr:`buf`; False at the end of the stream."""
        if self.wait is not None:
            self.wait()
        n = self.sock.recv_into(self._into)
        if not n:
            return False
        self.buf += self._into[:n]
        return True

    def readable(self) -> bool:
        """Whether a read would not block (bytes or the end of the stream are waiting)."""
        pending = getattr(self.sock, "pending", None)  # TLS: bytes decrypted, not read yet
        if pending is not None and pending():
            return True
        return bool(select.select([self.sock], [], [], 0)[0])

    def read_head(self, limit: int = MAX_HEAD) -> bytes | None:
        """The next message head, without its blank line; None at a clean end of stream.

        Empty lines before a head are skipped (RFC 9112, section 2.2).

        Raises
        ------
        ProtocolError
            431 for a head over ``limit`` bytes, 400 for a stream that ends inside one.
        """
        buf = self.buf
        start = 0
        while True:
            while buf.startswith(b"\r\n"):
                del buf[:2]
            i = buf.find(b"\r\n\r\n", start)
            if i >= 0:
                break
            if len(buf) > limit:
                raise ProtocolError(431, "message head too large")
            start = max(0, len(buf) - 3)
            if not self.fill():
                if buf:
                    raise ProtocolError(400, "connection closed inside a message head")
                return None
        if i > limit:
            raise ProtocolError(431, "message head too large")
        head = bytes(buf[:i])
        del buf[:i + 4]
        return head

    def read_exact(self, n: int) -> bytes:
        """The next ``n`` bytes (400 :class:`ProtocolError` if the stream ends first)."""
        buf = self.buf
        while len(buf) < n:
            if not self.fill():
                raise ProtocolError(400, "connection closed inside a message body")
        data = bytes(buf[:n])
        del buf[:n]
        return data

    def _line(self) -> bytes:
        buf = self.buf
        while True:
            i = buf.find(b"\r\n")
            if i >= 0:
                line = bytes(buf[:i])
                del buf[:i + 2]
                return line
            if len(buf) > MAX_HEAD:
                raise ProtocolError(400, "chunk line too long")
            if not self.fill():
                raise ProtocolError(400, "connection closed inside a chunked body")

    def iter_chunked(self) -> Iterator[bytes]:
        """The data of a chunked body, as it arrives.

        Yields whatever the buffer holds before each blocking read (a part of a chunk, or
        several chunks joined), so a stream is passed on as soon as its bytes come in.
        Trailer fields are read and dropped.
        """
        buf = self.buf
        out: list[bytes] = []
        left = -1  # data bytes left in the current chunk; -1: a size line; -2: its CRLF
        while True:
            if left > 0:
                if buf:
                    piece = bytes(buf[:left])
                    del buf[:len(piece)]
                    out.append(piece)
                    left -= len(piece)
                    if left == 0:
                        left = -2
                    continue
            elif left == -2:
                if len(buf) >= 2:
                    if buf[:2] != b"\r\n":
                        raise ProtocolError(400, "chunk data not followed by CRLF")
                    del buf[:2]
                    left = -1
                    continue
            else:
                i = buf.find(b"\r\n")
                if i >= 0:
                    m = _CHUNK_SIZE.fullmatch(buf, 0, i)
                    if m is None:
                        raise ProtocolError(400, "bad chunk size")
                    left = int(m.group(1), 16)
                    del buf[:i + 2]
                    if left == 0:
                        if out:
                            yield b"".join(out)
                        while self._line():  # trailer fields
                            pass
                        return
                    continue
                if len(buf) > MAX_HEAD:
                    raise ProtocolError(400, "chunk line too long")
            if out:
                yield b"".join(out)
                out = []
            if not self.fill():
                raise ProtocolError(400, "connection closed inside a chunked body")

    def iter_length(self, n: int) -> Iterator[bytes]:
        """The next ``n`` bytes, as they arrive."""
        buf = self.buf
        while n:
            if not buf and not self.fill():
                raise ProtocolError(400, "connection closed inside a message body")
            piece = bytes(buf[:n])
            del buf[:len(piece)]
            n -= len(piece)
            yield piece

    def iter_until_close(self) -> Iterator[bytes]:
        """Every byte until the end of the stream, as it arrives."""
        buf = self.buf
        while True:
            if buf:
                piece = bytes(buf)
                buf.clear()
                yield piece
            if not self.fill():
                return

    def iter_body(self, head: Head) -> Iterator[bytes]:
        """The body framed by ``head`` (chunked, ``Content-Length`` or until the close)."""
        if head.chunked:
            return self.iter_chunked()
        if head.until_close:
            return self.iter_until_close()
        return self.iter_length(head.length or 0)

    def read_body(self, head: Head, limit: int | None = None) -> bytes:
        """The whole body framed by ``head``.

        Raises
        ------
        ProtocolError
            413 for a body over ``limit`` bytes; 400 for a stream that ends inside it.
        """
        if not head.chunked and not head.until_close:
            n = head.length or 0
            if limit is not None and n > limit:
                raise ProtocolError(413, "body too large")
            return self.read_exact(n) if n else b""
        parts, size = [], 0
        for piece in self.iter_body(head):
            size += len(piece)
            if limit is not None and size > limit:
                raise ProtocolError(413, "body too large")
            parts.append(piece)
        return b"".join(parts)
