"""A local OpenAI-compatible stub server, for the concurrency tests and benchmark.

It answers `POST /chat/completions` after a fixed latency, in parallel (one thread per
request), with one valid agent action: `supervisor__complete_task`, so each episode is one
turn. It accepts any `response_format` (json_schema included) and counts the requests in
flight, keeping the highest count seen.
"""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any

ACTION = {"thought": "done", "tool": "supervisor__complete_task", "arguments": {}}


class _Server(ThreadingHTTPServer):
    # The default listen backlog (5) resets connections when 32 episodes connect at once.
    request_queue_size = 256
    daemon_threads = True


class StubServer:
    """`with StubServer(latency_s=0.2) as stub:` serves on `stub.base_url` until the block ends."""

    def __init__(self, latency_s: float = 0.2) -> None:
        self.latency_s = latency_s
        self.requests = 0
        self.in_flight = 0
        self.max_in_flight = 0
        self.formats: set[str] = set()
        self._lock = threading.Lock()
        stub = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            disable_nagle_algorithm = True  # headers and body go out at once, no 40 ms wait

            def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
                return

            def do_POST(self) -> None:  # noqa: N802
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))))
                stub._enter(body)
                try:
                    time.sleep(stub.latency_s)
                    reply = {
                        "id": "stub",
                        "object": "chat.completion",
                        "model": body.get("model", "stub"),
                        "choices": [
                            {
                                "index": 0,
                                "finish_reason": "stop",
                                "message": {"role": "assistant", "content": json.dumps(ACTION)},
                            }
                        ],
                        "usage": {"prompt_tokens": 100, "completion_tokens": 20},
                    }
                finally:
                    stub._leave()
                data = json.dumps(reply).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self._server = _Server(("127.0.0.1", 0), Handler)
        self.base_url = f"http://127.0.0.1:{self._server.server_address[1]}/v1"
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    def _enter(self, body: dict[str, Any]) -> None:
        with self._lock:
            self.requests += 1
            self.in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self.in_flight)
            fmt = body.get("response_format")
            self.formats.add(str(fmt.get("type")) if isinstance(fmt, dict) else "none")

    def _leave(self) -> None:
        with self._lock:
            self.in_flight -= 1

    def reset(self) -> None:
        with self._lock:
            self.requests = self.in_flight = self.max_in_flight = 0
            self.formats.clear()

    def __enter__(self) -> StubServer:
        self._thread.start()
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join()
