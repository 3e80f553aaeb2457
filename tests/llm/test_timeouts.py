"""A request that times out is closed at once and not sent again (nothing left queued)."""

from __future__ import annotations

import socket
import threading
import time

import pytest
from llm_cache_isolation import private_cache  # noqa: F401  (autouse)

from evolve.errors import ModelError
from evolve.llm._http import RetryPolicy
from evolve.llm._openai import OpenAIChat
from evolve.llm._types import Message


class SilentServer:
    """Accepts connections, reads the request and never answers; notes when each closes."""

    def __init__(self) -> None:
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen()
        self.port = int(self.sock.getsockname()[1])
        self.connections = 0
        self.closed_at: list[float] = []
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            self.connections += 1
            threading.Thread(target=self._hold, args=(conn,), daemon=True).start()

    def _hold(self, conn: socket.socket) -> None:
        with conn:
            while conn.recv(65536):
                pass  # the request; then wait for the client to hang up
            self.closed_at.append(time.monotonic())

    def stop(self) -> None:
        self.sock.close()


def test_a_timed_out_request_is_closed_and_not_repeated() -> None:
    server = SilentServer()
    try:
        llm = OpenAIChat(
            "m",
            base_url=f"http://127.0.0.1:{server.port}/v1",
            timeout=0.5,
            retry=RetryPolicy(max_attempts=4, sleep=lambda s: None),
        )
        started = time.monotonic()
        with pytest.raises(ModelError, match="did not answer in time after 1 attempt"):
            llm.complete([Message("user", "hi")], max_tokens=8)
        deadline = time.monotonic() + 5
        while not server.closed_at and time.monotonic() < deadline:
            time.sleep(0.02)
        assert server.connections == 1
        assert server.closed_at and server.closed_at[0] - started < 3.0
    finally:
        server.stop()
