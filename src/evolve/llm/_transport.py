"""A lean `httpx` transport for plain-HTTP model servers: HTTP/1.1 over `http.client`.

`httpx`'s default transport (httpcore) spends about 0.2 ms of CPU per request on its
connection pool and HTTP state machine, and more as connections multiply: each request walks
every pooled connection and polls the idle ones' sockets. With 32 episodes in flight against a
local server, the replies of a wave arrive together and are handled one after the other under
the interpreter lock, so that CPU sits between one reply and the next request (see
`benchmarks/bench_concurrency.py`). This transport keeps a last-in-first-out stack of idle
kept-alive connections per origin (O(1) to take or return one) and lets the standard
library's `http.client` write the request and parse the reply: about a third of the CPU.

It is an `httpx.BaseTransport`, so everything above it is still `httpx` (request building,
timeouts per request, the `Response` object, mocks that patch the client). It serves only
`http://` URLs; :func:`plain_http_transport` says when a client should use it (a plain-HTTP
base URL with no proxy configured), and `https` or proxied endpoints keep httpx's own
transport (TLS, HTTP/2 and proxies are its business; their latency dwarfs this CPU anyway).

Failures are raised as the `httpx` exceptions httpcore raises for the same event, so the
retry policy in :mod:`evolve.llm._http` treats both transports alike. A reply that is not read
to its end (a timeout, an interrupt, an error) closes its connection: nothing is left queued
at the server on a connection that would be reused.
"""

from __future__ import annotations

import contextlib
import http.client
import select
import socket
import threading
import time
import urllib.request
from collections.abc import Iterator

import httpx

# Idle connections kept per origin (--concurrency goes to 64).
MAX_IDLE = 64
# An idle connection is checked (is it still open, with nothing unasked-for to read?) before
# reuse once it has been idle this long: always (one non-blocking select), since bytes a server
# sent after a reply would otherwise be read as the next request's reply. One that fails anyway
# before the first byte of its reply is replaced by a new one, once (as browsers do).
RECHECK_AFTER_S = 0.0
_CHUNK = 64 * 1024
# A dropped kept-alive connection shows as one of these before any byte of the reply.
_DROPPED = (BrokenPipeError, ConnectionResetError, ConnectionAbortedError)


def plain_http_transport(base_url: str) -> PlainHTTPTransport | None:
    """A :class:`PlainHTTPTransport` for a client of `base_url`, or None when httpx's own
    transport must serve it: an `https` URL, or any proxy configured for plain HTTP in the
    environment (`http_proxy`, `all_proxy`): httpx honours those, this transport does not."""
    if httpx.URL(base_url).scheme != "http":
        return None
    proxies = urllib.request.getproxies()
    if proxies.get("http") or proxies.get("all"):
        return None
    return PlainHTTPTransport()


class _Connection:
    """One TCP connection; `reused` tells a fresh one from one taken from the pool."""

    __slots__ = ("sock", "reused", "idle_since")

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self.reused = False
        self.idle_since = 0.0

    def stale(self) -> bool:
        """Whether an idle connection can no longer be used: readable means the server hung
        up (or sent something nobody asked for)."""
        try:
            readable, _, _ = select.select([self.sock], [], [], 0)
        except (OSError, ValueError):
            return True
        return bool(readable)

    def close(self) -> None:
        self.sock.close()


class PlainHTTPTransport(httpx.BaseTransport):
    """HTTP/1.1 over plain TCP with a pool of kept-alive connections per origin.

    The request is written in one `sendall` (head and body together) and the reply is
    parsed by `http.client.HTTPResponse`; a request costs two system calls that release the
    interpreter lock (the send and the wait for the reply), which matters when dozens of
    threads hand the lock around.

    Args:
        max_idle: idle connections kept per origin; more are closed when returned.
    """

    def __init__(self, max_idle: int = MAX_IDLE) -> None:
        self._max_idle = max_idle
        self._idle: dict[tuple[str, int], list[_Connection]] = {}
        self._lock = threading.Lock()
        self._closed = False

    # --- the pool ---------------------------------------------------------------------------

    def _take(self, origin: tuple[str, int]) -> _Connection | None:
        while True:
            with self._lock:
                stack = self._idle.get(origin)
                conn = stack.pop() if stack else None
            if conn is None:
                return None
            if time.monotonic() - conn.idle_since < RECHECK_AFTER_S or not conn.stale():
                return conn
            conn.close()

    def _give_back(self, origin: tuple[str, int], conn: _Connection) -> None:
        with self._lock:
            if not self._closed:
                stack = self._idle.setdefault(origin, [])
                if len(stack) < self._max_idle:
                    conn.reused = True
                    conn.idle_since = time.monotonic()
                    stack.append(conn)
                    return
        conn.close()

    def close(self) -> None:
        with self._lock:
            self._closed = True
            idle = [c for stack in self._idle.values() for c in stack]
            self._idle.clear()
        for conn in idle:
            conn.close()

    # --- one request ------------------------------------------------------------------------

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        url = request.url
        if url.scheme != "http":
            raise httpx.UnsupportedProtocol(
                f"this transport serves http:// URLs only, not {url.scheme}://", request=request
            )
        timeout = request.extensions.get("timeout", {})
        # The host as bytes (httpx has IDNA-encoded it already): a str host makes the socket
        # module import its IDNA codec on the first connection, inside the first request.
        origin = (url.raw_host.decode("ascii"), url.port or 80)
        address = (url.raw_host, origin[1])
        message = _message(request)
        while True:
            conn = self._take(origin)
            if conn is None:
                conn = _connect(address, timeout.get("connect"), request)
            try:
                reply = _exchange(conn, message, request, timeout)
            except _Dropped as dropped:
                conn.close()
                if conn.reused:
                    continue  # the server had closed it while idle: once more on a new one
                raise dropped.error from dropped.__cause__
            except BaseException:
                conn.close()
                raise
            break
        return httpx.Response(
            reply.status,
            # As received: http.client decodes them as Latin-1, so this gives the bytes back
            # (`getheaders()` would run each through the email package's sanitising).
            headers=[
                (name.encode("latin-1"), value.encode("latin-1"))
                for name, value in reply.msg.raw_items()
            ],
            stream=_Body(self, origin, conn, reply, request),
            extensions={
                "http_version": b"HTTP/1.1" if reply.version == 11 else b"HTTP/1.0",
                "reason_phrase": reply.reason.encode("latin-1", "replace"),
            },
        )


class _Dropped(Exception):
    """The connection was closed before any byte of the reply; `error` is what to raise
    when it was a new one."""

    def __init__(self, error: httpx.TransportError) -> None:
        super().__init__(str(error))
        self.error = error


def _message(request: httpx.Request) -> bytes:
    """The request's head and body, as one buffer."""
    method = request.method.encode("ascii")
    target = request.url.raw_path
    if not method.isalpha() or any(c in target for c in b" \r\n\0"):
        raise httpx.LocalProtocolError("invalid request line", request=request)
    lines = [b"%s %s HTTP/1.1" % (method, target)]
    chunked = False
    for name, value in request.headers.raw:
        if any(c in name or c in value for c in b"\r\n\0") or b":" in name:
            raise httpx.LocalProtocolError(f"invalid header {name!r}", request=request)
        lines.append(b"%s: %s" % (name, value))
        chunked = chunked or (name.lower() == b"transfer-encoding" and b"chunked" in value.lower())
    body = request.read()
    if chunked:  # a streamed body (httpx set the header): framed as the header says
        body = (b"%x\r\n%s\r\n" % (len(body), body) if body else b"") + b"0\r\n\r\n"
    lines.append(b"")
    lines.append(body)
    return b"\r\n".join(lines)


def _connect(
    address: tuple[bytes, int], timeout: float | None, request: httpx.Request
) -> _Connection:
    try:
        sock = socket.create_connection(address, timeout=timeout)  # type: ignore[arg-type]
    except TimeoutError as exc:
        raise httpx.ConnectTimeout(_text(exc, "timed out"), request=request) from exc
    except OSError as exc:
        raise httpx.ConnectError(_text(exc, "connection failed"), request=request) from exc
    with contextlib.suppress(OSError):  # not every platform has it; only latency suffers
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return _Connection(sock)


def _exchange(
    conn: _Connection, message: bytes, request: httpx.Request, timeout: dict[str, float | None]
) -> http.client.HTTPResponse:
    sock = conn.sock
    try:
        sock.settimeout(timeout.get("write"))
        sock.sendall(message)
    except TimeoutError as exc:
        raise httpx.WriteTimeout(_text(exc, "timed out"), request=request) from exc
    except _DROPPED as exc:
        raise _Dropped(httpx.WriteError(_text(exc, "write failed"), request=request)) from exc
    except OSError as exc:
        raise httpx.WriteError(_text(exc, "write failed"), request=request) from exc
    source = _Source(sock)
    informed = False  # an informational (1xx) reply came first
    reply = http.client.HTTPResponse(source, method=request.method)  # type: ignore[arg-type]
    try:
        sock.settimeout(timeout.get("read"))
        reply.begin()
        # http.client skips `100 Continue` only; the others (`103 Early Hints`) precede the
        # reply, as httpx's own transport reads them.
        while 100 <= reply.status < 200 and reply.status != 101:
            informed = True
            reply.fp = None  # type: ignore[assignment]  # its reader is the next reply's
            reply = http.client.HTTPResponse(source, method=request.method)  # type: ignore[arg-type]
            reply.begin()
    except TimeoutError as exc:
        reply.close()
        raise httpx.ReadTimeout(_text(exc, "timed out"), request=request) from exc
    except (http.client.RemoteDisconnected, *_DROPPED) as exc:
        reply.close()
        error = httpx.RemoteProtocolError(
            "Server disconnected without sending a response.", request=request
        )
        if informed:
            raise error from exc
        raise _Dropped(error) from exc
    except http.client.HTTPException as exc:
        reply.close()
        raise httpx.RemoteProtocolError(_text(exc, "bad reply"), request=request) from exc
    except OSError as exc:
        reply.close()
        raise httpx.ReadError(_text(exc, "read failed"), request=request) from exc
    given = [value.strip() for value in reply.msg.get_all("content-length") or []]
    if not reply.chunked and (
        len(given) > 1 or any(not (v.isascii() and v.isdigit()) for v in given)
    ):  # http.client would read some length of it and leave the rest on the connection, or
        # (for "5, 5") none and wait for the server to close it
        reply.close()
        raise httpx.RemoteProtocolError("bad or conflicting Content-Length", request=request)
    return reply


class _Source:
    """The socket as `http.client.HTTPResponse` reads it: one buffered reader for every reply
    of an exchange (an informational reply, then the reply), so no read-ahead byte is lost."""

    __slots__ = ("file",)

    def __init__(self, sock: socket.socket) -> None:
        self.file = sock.makefile("rb")

    def makefile(self, mode: str) -> object:
        return self.file


class _Body(httpx.SyncByteStream):
    """The reply's body; when it has been read to its end, the connection goes back to the
    pool (unless the server asked to close it); otherwise it is closed."""

    def __init__(
        self,
        pool: PlainHTTPTransport,
        origin: tuple[str, int],
        conn: _Connection,
        reply: http.client.HTTPResponse,
        request: httpx.Request,
    ) -> None:
        self._pool = pool
        self._origin = origin
        self._conn: _Connection | None = conn
        self._reply = reply
        self._request = request
        self._complete = False

    def __iter__(self) -> Iterator[bytes]:
        request = self._request
        try:
            while True:
                chunk = self._reply.read(_CHUNK)
                if not chunk:
                    break
                yield chunk
            if self._reply.length:  # http.client stops quietly where the server hung up
                raise httpx.RemoteProtocolError(
                    "peer closed connection without sending complete message body",
                    request=request,
                )
        except TimeoutError as exc:
            raise httpx.ReadTimeout(_text(exc, "timed out"), request=request) from exc
        except http.client.HTTPException as exc:
            raise httpx.RemoteProtocolError(_text(exc, "bad reply"), request=request) from exc
        except OSError as exc:
            raise httpx.ReadError(_text(exc, "read failed"), request=request) from exc
        self._complete = True

    def close(self) -> None:
        conn, self._conn = self._conn, None
        if conn is None:
            return
        self._reply.close()
        if self._complete and not self._reply.will_close:
            self._pool._give_back(self._origin, conn)
        else:
            conn.close()


def _text(exc: BaseException, default: str) -> str:
    return str(exc) or default
