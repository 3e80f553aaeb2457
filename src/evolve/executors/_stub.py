"""A local OpenAI-compatible stub server, for the concurrency tests and benchmark.

It answers `POST /chat/completions` after a fixed latency with one valid agent action:
`supervisor__complete_task`, so each episode is one turn. It accepts any `response_format`
(json_schema included) and counts the requests in flight, keeping the highest count seen.

The server is one asyncio event loop on a thread of its own: every request waits its latency
with `asyncio.sleep`, so any number are in flight at once (unlimited parallelism), and the
work per request is a few dozen microseconds of parsing. (A thread per request, as
`http.server` does, woke 32 threads at once after each latency and served their replies one
after the other: that queue alone cost the benchmark several points of efficiency at C = 32.)
HTTP/1.1 keep-alive is honoured, so a client reuses its connections.

The latency is measured from the moment the request's head is read (reading and parsing the
body are part of it) and kept to about 0.1 ms by a timer thread: the event loop alone wakes
up to a millisecond late (epoll waits in whole milliseconds, rounded up), which made every
request ~0.8 ms slower than asked, so each wave of a benchmark ~1 ms slower than the bound
says. The stub never answers early.
"""

from __future__ import annotations

import asyncio
import contextlib
import heapq
import itertools
import json
import threading
import time
from types import TracebackType
from typing import Any

GATHER_WAIT_S = 30.0
ACTION = {"thought": "done", "tool": "supervisor__complete_task", "arguments": {}}
_MAX_HEADER = 64 * 1024


class StubServer:
    """`with StubServer(latency_s=0.2) as stub:` serves on `stub.base_url` until the block ends."""

    def __init__(self, latency_s: float = 0.2) -> None:
        self.latency_s = latency_s
        self.requests = 0
        self.in_flight = 0
        self.max_in_flight = 0
        self.formats: set[str] = set()
        # `reset(gather=N)`: requests wait (beyond their latency) until N are in flight at
        # once, or GATHER_WAIT_S pass; after that, none waits. A test of "the bound is
        # reached" then waits on that event instead of on timing a loaded machine keeps.
        self.gather: int | None = None
        self._gathered: asyncio.Event | None = None
        self._lock = threading.Lock()
        self._writers: set[asyncio.StreamWriter] = set()
        self._loop = asyncio.new_event_loop()
        self._timer = _Timer(self._loop)
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)
        self._server = self._loop.run_until_complete(
            asyncio.start_server(self._serve, "127.0.0.1", 0, backlog=1024)
        )
        port = self._server.sockets[0].getsockname()[1]
        self.base_url = f"http://127.0.0.1:{port}/v1"

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self._writers.add(writer)
        try:
            while True:
                try:
                    head = await reader.readuntil(b"\r\n\r\n")
                except (asyncio.IncompleteReadError, asyncio.LimitOverrunError, OSError):
                    return
                if len(head) > _MAX_HEADER:
                    return
                arrived = time.monotonic()
                lines = head.decode("latin-1").split("\r\n")
                headers = {}
                for line in lines[1:]:
                    name, sep, value = line.partition(":")
                    if sep:
                        headers[name.strip().lower()] = value.strip()
                body = await reader.readexactly(int(headers.get("content-length", "0")))
                status, reply = await self._answer(lines[0], body, arrived)
                data = json.dumps(reply).encode()
                writer.write(
                    f"HTTP/1.1 {status}\r\nContent-Type: application/json\r\n"
                    f"Content-Length: {len(data)}\r\n\r\n".encode()
                    + data
                )
                await writer.drain()
                if headers.get("connection", "").lower() == "close":
                    return
        except (ConnectionError, asyncio.IncompleteReadError):
            return
        finally:
            self._writers.discard(writer)
            writer.close()

    async def _answer(
        self, request_line: str, raw: bytes, arrived: float
    ) -> tuple[str, dict[str, Any]]:
        method, _, rest = request_line.partition(" ")
        path = rest.partition(" ")[0]
        if method != "POST" or not path.endswith("/chat/completions"):
            return "404 Not Found", {"error": {"message": f"no route {method} {path}"}}
        try:
            body = json.loads(raw)
        except ValueError:
            return "400 Bad Request", {"error": {"message": "the body is not JSON"}}
        self._enter(body)
        try:
            gathered = self._gathered
            if gathered is not None and not gathered.is_set():
                with contextlib.suppress(asyncio.TimeoutError):
                    await asyncio.wait_for(gathered.wait(), GATHER_WAIT_S)
            await self._timer.until(arrived + self.latency_s)
        finally:
            self._leave()
        return "200 OK", {
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

    def _enter(self, body: dict[str, Any]) -> None:
        with self._lock:
            self.requests += 1
            self.in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self.in_flight)
            if self._gathered is not None and self.gather and self.in_flight >= self.gather:
                self._gathered.set()
            fmt = body.get("response_format")
            self.formats.add(str(fmt.get("type")) if isinstance(fmt, dict) else "none")

    def _leave(self) -> None:
        with self._lock:
            self.in_flight -= 1

    def reset(self, gather: int | None = None) -> None:
        """Zero the counts; with `gather`, hold requests until that many are in flight."""
        with self._lock:
            self.requests = self.in_flight = self.max_in_flight = 0
            self.formats.clear()
            self.gather = gather
            self._gathered = None
        if gather:

            async def make() -> asyncio.Event:
                return asyncio.Event()

            event = asyncio.run_coroutine_threadsafe(make(), self._loop).result()
            with self._lock:
                self._gathered = event

    def __enter__(self) -> StubServer:
        self._thread.start()
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        async def stop() -> None:
            self._server.close()
            for writer in list(self._writers):
                writer.close()
            await self._server.wait_closed()

        asyncio.run_coroutine_threadsafe(stop(), self._loop).result(timeout=10)
        self._timer.stop()
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join()
        self._loop.close()


class _Timer:
    """Wakes coroutines of `loop` at monotonic deadlines, from a thread of its own that
    sleeps until the next one (a condition's timed wait: ~0.1 ms late, against up to 1 ms for
    the loop's own timers)."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self._loop = loop
        self._due: list[tuple[float, int, asyncio.Future[None]]] = []
        self._order = itertools.count()
        self._cond = threading.Condition()
        self._stopped = False
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    async def until(self, deadline: float) -> None:
        """Return at `deadline` (time.monotonic), not before."""
        if deadline <= time.monotonic():
            return
        future: asyncio.Future[None] = self._loop.create_future()
        with self._cond:
            heapq.heappush(self._due, (deadline, next(self._order), future))
            self._cond.notify()
        await future

    def _run(self) -> None:
        with self._cond:
            while not self._stopped:
                now = time.monotonic()
                while self._due and self._due[0][0] <= now:
                    _, _, future = heapq.heappop(self._due)
                    self._loop.call_soon_threadsafe(_wake, future)
                wait = self._due[0][0] - now if self._due else None
                self._cond.wait(wait)

    def stop(self) -> None:
        with self._cond:
            self._stopped = True
            self._cond.notify()
        self._thread.join()


def _wake(future: asyncio.Future[None]) -> None:
    if not future.done():  # not cancelled meanwhile
        future.set_result(None)
