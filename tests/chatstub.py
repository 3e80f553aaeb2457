"""A stub OpenAI-compatible chat server for the ways a real one fails: slow replies, timeouts,
busy answers, a context window (`/props`, `/v1/models`) and refusals for length.

`ChatStub.plan` decides each chat request's answer from its number (0-based, in the order the
requests arrived) and its JSON body; the default replies with a valid agent action at once.
Every request is kept (`chats`, `gets`), so a test can assert what was sent, and how often.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

ACTION = json.dumps({"tool": "phone__search_contacts", "arguments": {"query": "Sam"}})


@dataclass(frozen=True)
class Answer:
    """How to answer one request: after `delay` seconds, `status` with `body` (a reply with
    `text` as its content when `body` is None)."""

    text: str = ACTION
    delay: float = 0.0
    status: int = 200
    body: Any = None
    prompt_tokens: int | None = None


Plan = Callable[[int, dict[str, Any]], Answer]


def reply(text: str, prompt_tokens: int = 50) -> dict[str, Any]:
    return {
        "id": "stub",
        "object": "chat.completion",
        "model": "stub",
        "choices": [
            {"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}
        ],
        "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": 9, "total_tokens": 59},
    }


@dataclass
class ChatStub:
    url: str = ""
    plan: Plan = lambda n, body: Answer()
    props: dict[str, Any] | None = None  # GET /props (None: 404, as llama-cpp-python)
    models: dict[str, Any] | None = None  # GET /v1/models (None: 404)
    chats: list[dict[str, Any]] = field(default_factory=list)
    gets: list[str] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def base_url(self) -> str:
        return f"{self.url}/v1"


def _handler(stub: ChatStub) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def _send(self, status: int, body: Any) -> None:
            data = json.dumps(body).encode("utf-8")
            try:
                self.send_response(status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)
            except OSError:
                pass  # the client gave up (a timeout): nothing to answer

        def do_GET(self) -> None:  # noqa: N802  (http.server's name)
            with stub.lock:
                stub.gets.append(self.path)
            found = {"/props": stub.props, "/v1/models": stub.models}.get(self.path)
            if found is None:
                self._send(404, {"detail": "Not Found"})
            else:
                self._send(200, found)

        def do_POST(self) -> None:  # noqa: N802
            length = int(self.headers.get("content-length", "0"))
            body = json.loads(self.rfile.read(length))
            with stub.lock:
                number = len(stub.chats)
                stub.chats.append(body)
            answer = stub.plan(number, body)
            if answer.delay:
                time.sleep(answer.delay)
            if answer.body is not None:
                self._send(answer.status, answer.body)
            else:
                tokens = answer.prompt_tokens if answer.prompt_tokens is not None else 50
                self._send(answer.status, reply(answer.text, tokens))

        def log_message(self, *args: Any) -> None:
            pass

    return Handler


@contextmanager
def chat_stub(plan: Plan | None = None, **options: Any) -> Iterator[ChatStub]:
    """A running stub; `plan` and the other `ChatStub` fields as given."""
    stub = ChatStub(**options)
    if plan is not None:
        stub.plan = plan
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(stub))
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    stub.url = f"http://127.0.0.1:{server.server_address[1]}"
    try:
        yield stub
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture(autouse=True)
def stub_cache(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Imported by the tests that use the stub: the endpoint memory (`endpoints.json`) and
    the request cache go to a folder of the test's own, not the user's `~/.cache/evolve`."""
    root = tmp_path_factory.mktemp("evolve-cache")
    monkeypatch.setenv("EVOLVE_CACHE_DIR", str(root))
    return root
