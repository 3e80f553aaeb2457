"""The lean plain-HTTP transport against hostile servers (real local sockets): a body cut
short, a Content-Length that lies, bytes sent after a reply on a kept-alive connection."""

from __future__ import annotations

import contextlib
import socket
import threading
import time
from collections.abc import Callable, Iterator

import httpx
import pytest

from evolve.llm._transport import PlainHTTPTransport
from listeners import stop_listening

# (request number, counted over all connections; socket; the bytes of the request read so
# far) -> None: writes whatever it likes.
Answer = Callable[[int, socket.socket, bytes], None]


def _read_request(conn: socket.socket) -> bytes | None:
    """Read one request (head and Content-Length body) from `conn`; None at its end."""
    data = b""
    while b"\r\n\r\n" not in data:
        more = conn.recv(65536)
        if not more:
            return None
        data += more
    head, _, rest = data.partition(b"\r\n\r\n")
    length = 0
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            length = int(value)
    while len(rest) < length:
        rest += conn.recv(65536)
    return data[: data.index(b"\r\n\r\n") + 4] + rest


@pytest.fixture
def serve() -> Iterator[Callable[[Answer], str]]:
    socks: list[tuple[socket.socket, threading.Thread]] = []

    def start(answer: Answer) -> str:
        sock = socket.socket()
        sock.bind(("127.0.0.1", 0))
        sock.listen()

        count = iter(range(1, 1_000_000))

        def talk(conn: socket.socket) -> None:
            with conn, contextlib.suppress(OSError):
                while (request := _read_request(conn)) is not None:
                    answer(next(count), conn, request)

        def accept() -> None:
            while True:
                try:
                    conn, _ = sock.accept()
                except OSError:
                    return
                threading.Thread(target=talk, args=(conn,), daemon=True).start()

        thread = threading.Thread(target=accept, daemon=True)
        thread.start()
        socks.append((sock, thread))
        return f"http://127.0.0.1:{sock.getsockname()[1]}/v1/chat"

    yield start
    for sock, thread in socks:
        stop_listening(sock, thread)


def _client() -> httpx.Client:
    return httpx.Client(transport=PlainHTTPTransport(), timeout=5.0)


def test_a_body_cut_short_of_its_content_length_is_an_error(
    serve: Callable[[Answer], str],
) -> None:
    def answer(_: int, conn: socket.socket, request: bytes) -> None:
        conn.sendall(b'HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n{"a": 1}')
        conn.shutdown(socket.SHUT_RDWR)

    url = serve(answer)
    with _client() as http, pytest.raises(httpx.RemoteProtocolError):
        http.post(url, json={})


@pytest.mark.parametrize(
    "lengths",
    [b"Content-Length: 2\r\nContent-Length: 9", b"Content-Length: -5", b"Content-Length: 9, 9"],
)
def test_a_bad_or_conflicting_content_length_is_an_error(
    serve: Callable[[Answer], str], lengths: bytes
) -> None:
    def answer(_: int, conn: socket.socket, request: bytes) -> None:
        conn.sendall(b"HTTP/1.1 200 OK\r\n" + lengths + b"\r\n\r\n{}{}{}{}{")

    url = serve(answer)
    with (
        httpx.Client(transport=PlainHTTPTransport(), timeout=0.5) as http,
        pytest.raises(httpx.RemoteProtocolError),  # not a wait for the server to close
    ):
        http.post(url, json={})


def test_bytes_sent_after_a_reply_are_never_read_as_the_next_reply(
    serve: Callable[[Answer], str],
) -> None:
    # A server (or a bug in one) writes a second, unasked-for reply on the kept-alive
    # connection; the next request must get its own reply, not that one.
    def answer(number: int, conn: socket.socket, request: bytes) -> None:
        if number == 1:
            conn.sendall(b'HTTP/1.1 200 OK\r\nContent-Length: 9\r\n\r\n"genuine"')
            time.sleep(0.05)
            conn.sendall(b'HTTP/1.1 200 OK\r\nContent-Length: 6\r\n\r\n"evil"')
        else:
            conn.sendall(b'HTTP/1.1 200 OK\r\nContent-Length: 8\r\n\r\n"second"')

    url = serve(answer)
    with _client() as http:
        assert http.post(url, json={}).json() == "genuine"
        time.sleep(0.2)  # the unasked-for bytes arrive
        assert http.post(url, json={}).json() == "second"


def test_a_streamed_request_body_is_sent_chunked_as_its_header_says(
    serve: Callable[[Answer], str],
) -> None:
    # httpx marks a body given as an iterator `Transfer-Encoding: chunked`; sent raw, the
    # server reads "hello" as a chunk size and the request never ends.
    bodies: list[bytes] = []

    def answer(_: int, conn: socket.socket, request: bytes) -> None:
        data = request.partition(b"\r\n\r\n")[2]
        while not data.endswith(b"0\r\n\r\n"):
            more = conn.recv(65536)
            if not more:
                return
            data += more
        bodies.append(data)
        conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}")

    def parts() -> Iterator[bytes]:
        yield b"hello "
        yield b"world"

    url = serve(answer)
    with httpx.Client(transport=PlainHTTPTransport(), timeout=2.0) as http:
        assert http.post(url, content=parts()).json() == {}
    assert bodies == [b"b\r\nhello world\r\n0\r\n\r\n"]


def test_an_informational_reply_before_the_reply_is_skipped(
    serve: Callable[[Answer], str],
) -> None:
    def answer(number: int, conn: socket.socket, request: bytes) -> None:
        conn.sendall(
            b"HTTP/1.1 103 Early Hints\r\nLink: </style.css>\r\n\r\n"
            b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n%d" % (len(str(number)), number)
        )

    url = serve(answer)
    with _client() as http:
        first = http.post(url, json={})
        assert (first.status_code, first.json()) == (200, 1)
        assert http.post(url, json={}).json() == 2  # the same connection, in step
