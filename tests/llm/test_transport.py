"""The lean plain-HTTP transport against real local servers (sockets, no mocks)."""

from __future__ import annotations

import contextlib
import json
import socket
import threading
import time
from collections.abc import Callable, Iterator

import httpx
import pytest
from llm_cache_isolation import private_cache  # noqa: F401  (autouse)

from evolve.llm import _transport
from evolve.llm._http import JsonPoster, RetryPolicy
from evolve.llm._transport import PlainHTTPTransport, plain_http_transport
from listeners import stop_listening

Reply = Callable[[int, bytes], bytes]  # (request number, request bytes) -> raw reply bytes


def ok(payload: object, *extra: str) -> bytes:
    body = json.dumps(payload).encode()
    head = [
        "HTTP/1.1 200 OK",
        "Content-Type: application/json",
        f"Content-Length: {len(body)}",
        *extra,
    ]
    return ("\r\n".join(head) + "\r\n\r\n").encode() + body


class Server:
    """Answers each request on a connection with `reply(n, request)`; `close_after` closes
    the connection after each reply (without saying so). Counts connections and requests."""

    def __init__(self, reply: Reply, *, close_after: bool = False) -> None:
        self.reply = reply
        self.close_after = close_after
        self.connections = 0
        self.requests: list[bytes] = []
        self._lock = threading.Lock()
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen()
        self.base_url = f"http://127.0.0.1:{self.sock.getsockname()[1]}/v1"
        self.thread = threading.Thread(target=self._accept, daemon=True)
        self.thread.start()

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            with self._lock:
                self.connections += 1
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _serve(self, conn: socket.socket) -> None:
        with contextlib.suppress(OSError):  # the client hung up
            self._answer(conn)

    def _answer(self, conn: socket.socket) -> None:
        with conn:
            buffer = b""
            while True:
                while b"\r\n\r\n" not in buffer:
                    data = conn.recv(65536)
                    if not data:
                        return
                    buffer += data
                head, _, rest = buffer.partition(b"\r\n\r\n")
                length = 0
                for line in head.split(b"\r\n")[1:]:
                    name, _, value = line.partition(b":")
                    if name.strip().lower() == b"content-length":
                        length = int(value)
                while len(rest) < length:
                    rest += conn.recv(65536)
                request, buffer = head + b"\r\n\r\n" + rest[:length], rest[length:]
                with self._lock:
                    self.requests.append(request)
                    number = len(self.requests)
                conn.sendall(self.reply(number, request))
                if self.close_after:
                    return

    def stop(self) -> None:
        stop_listening(self.sock, self.thread)


@pytest.fixture
def serve() -> Iterator[Callable[..., Server]]:
    servers: list[Server] = []

    def start(reply: Reply, **options: bool) -> Server:
        servers.append(Server(reply, **options))
        return servers[-1]

    yield start
    for server in servers:
        server.stop()


def client() -> httpx.Client:
    return httpx.Client(transport=PlainHTTPTransport(), timeout=5.0)


def test_kept_alive_connections_are_reused_and_the_request_is_sent_whole(
    serve: Callable[..., Server],
) -> None:
    server = serve(lambda n, _: ok({"n": n}))
    with client() as http:
        replies = [
            http.post(f"{server.base_url}/chat", json={"i": i}, headers={"X-Key": "k"}).json()
            for i in range(3)
        ]
    assert replies == [{"n": 1}, {"n": 2}, {"n": 3}]
    assert server.connections == 1
    head, _, body = server.requests[0].partition(b"\r\n\r\n")
    lines = head.split(b"\r\n")
    assert lines[0] == b"POST /v1/chat HTTP/1.1"
    assert b"x-key: k" in [line.lower() for line in lines]
    assert json.loads(body) == {"i": 0}


def test_a_chunked_reply_is_read_whole(serve: Callable[..., Server]) -> None:
    body = json.dumps({"text": "x" * 5000}).encode()
    chunks = b"".join(
        b"%x\r\n%s\r\n" % (len(body[i : i + 700]), body[i : i + 700])
        for i in range(0, len(body), 700)
    )
    raw = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n" + chunks + b"0\r\n\r\n"
    server = serve(lambda n, _: raw)
    with client() as http:
        assert http.post(server.base_url, json={}).json() == {"text": "x" * 5000}
        assert http.post(server.base_url, json={}).json() == {"text": "x" * 5000}
    assert server.connections == 1


def test_a_reply_that_says_close_is_not_reused(serve: Callable[..., Server]) -> None:
    server = serve(lambda n, _: ok({"n": n}, "Connection: close"), close_after=True)
    with client() as http:
        assert [http.post(server.base_url, json={}).json()["n"] for _ in range(2)] == [1, 2]
    assert server.connections == 2


def test_a_connection_the_server_dropped_while_idle_is_replaced(
    serve: Callable[..., Server], monkeypatch: pytest.MonkeyPatch
) -> None:
    # The server hangs up after each reply without saying so. Checked before reuse (idle
    # long enough), or not checked and failing before any byte of the reply: either way the
    # request goes out once more on a new connection, and the caller never sees the drop.
    server = serve(lambda n, _: ok({"n": n}), close_after=True)
    for recheck in (0.0, 3600.0):
        monkeypatch.setattr(_transport, "RECHECK_AFTER_S", recheck)
        with client() as http:
            first = http.post(server.base_url, json={}).json()["n"]
            time.sleep(0.05)  # the server's close arrives
            assert http.post(server.base_url, json={}).json()["n"] == first + 1
    assert server.connections == 4


def test_a_reply_not_read_to_its_end_closes_its_connection(serve: Callable[..., Server]) -> None:
    server = serve(lambda n, _: ok({"text": "y" * 100_000}))
    with client() as http:
        with http.stream("POST", server.base_url, json={}) as response:
            assert response.status_code == 200  # the body is never read
        assert http.post(server.base_url, json={}).status_code == 200
    assert server.connections == 2


def test_failures_are_the_httpx_errors_the_retry_policy_knows(
    serve: Callable[..., Server],
) -> None:
    with socket.socket() as unused:
        unused.bind(("127.0.0.1", 0))
        port = unused.getsockname()[1]
    with client() as http, pytest.raises(httpx.ConnectError, match="Connection refused"):
        http.post(f"http://127.0.0.1:{port}/v1", json={})
    garbage = serve(lambda n, _: b"NOT HTTP AT ALL\r\n\r\n")
    with client() as http, pytest.raises(httpx.RemoteProtocolError):
        http.post(garbage.base_url, json={})
    with client() as http, pytest.raises(httpx.LocalProtocolError):
        http.post(garbage.base_url, json={}, headers={"X-Evil": "a\r\nInjected: 1"})


def test_retry_after_is_honoured_through_the_transport(serve: Callable[..., Server]) -> None:
    def reply(n: int, _: bytes) -> bytes:
        if n == 1:
            return b"HTTP/1.1 429 Too Many\r\nRetry-After: 2\r\nContent-Length: 0\r\n\r\n"
        return ok({"fine": True})

    server = serve(reply)
    sleeps: list[float] = []
    poster = JsonPoster(
        server.base_url,
        provider="Local",
        key_env="KEY",
        retry=RetryPolicy(max_attempts=3, jitter=0.0, sleep=sleeps.append),
    )
    try:
        assert poster.post("/chat/completions", {"a": 1}, {}) == {"fine": True}
    finally:
        poster.close()
    assert sleeps == [2.0]
    assert len(server.requests) == 2 and server.connections == 1


def test_only_plain_http_without_a_proxy_gets_the_lean_transport(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    for name in ("http_proxy", "HTTP_PROXY", "all_proxy", "ALL_PROXY"):
        monkeypatch.delenv(name, raising=False)
    assert isinstance(plain_http_transport("http://127.0.0.1:8080/v1"), PlainHTTPTransport)
    assert plain_http_transport("https://api.openai.com/v1") is None
    monkeypatch.setenv("http_proxy", "http://proxy.local:3128")
    assert plain_http_transport("http://127.0.0.1:8080/v1") is None
