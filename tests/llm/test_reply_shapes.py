"""Every hostile reply shape is a logged refusal, through the real HTTP client and a real local
server: usage counts that are not finite non-negative integers, bodies that do not decode
(100,000 levels deep included), text holding a lone surrogate, and bidi controls, the BOM and
zero-width spaces in the reply. Each becomes a failed turn with its reason; none raises; an
answer the backend cannot use leaves the conversation as it was, and text that cannot be
encoded never enters it (the next request is sent).

`SHAPES` is the list of shapes tried; `test_every_shape_tried_is_refused` counts them. The
shapes in `ALREADY` were refused before issue 28 (as failed turns, by `parse_action`); they stay
in the count and out of the per-shape test, which is for what used to raise or pass.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from llm_cache_isolation import private_cache  # noqa: F401  (autouse)

from evolve.agent import run_agent
from evolve.envs import ApiCall
from evolve.llm._anthropic import AnthropicMessages
from evolve.llm._http import RetryPolicy
from evolve.llm._openai import OpenAIChat

TOOLS = ["app__api"]
GOOD_ACTION = json.dumps({"tool": "app__api", "arguments": {"q": "ok"}})


@dataclass
class Stub:
    """A local HTTP server answering each POST with the next body of `bodies` (raw bytes),
    then with `fallback`; it keeps every request body it received."""

    bodies: list[bytes]
    fallback: bytes
    received: list[bytes] = field(default_factory=list)
    url: str = ""


@pytest.fixture
def stub() -> Iterator[Stub]:
    state = Stub([], b"")

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802  (http.server's name)
            length = int(self.headers.get("content-length", "0"))
            state.received.append(self.rfile.read(length))
            body = state.bodies.pop(0) if state.bodies else state.fallback
            self.send_response(200)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    state.url = f"http://127.0.0.1:{server.server_address[1]}"
    try:
        yield state
    finally:
        server.shutdown()
        server.server_close()


class World:
    """The smallest world: every call succeeds and completes the task."""

    def __init__(self) -> None:
        self.completed = False
        self.calls: list[ApiCall] = []

    def call(self, tool: str, arguments: dict[str, Any]) -> ApiCall:
        app, _, api = tool.partition("__")
        call = ApiCall(app=app, api=api, args=arguments, ok=True, result={"done": True})
        self.calls.append(call)
        self.completed = True
        return call


def _openai(content: str = GOOD_ACTION, usage: str | None = None) -> bytes:
    """A Chat Completions answer with `content`; `usage` is spliced in as raw JSON text."""
    body = json.dumps(
        {"choices": [{"message": {"content": content}, "finish_reason": "stop"}], "model": "m"}
    )
    if usage is not None:
        body = body[:-1] + f', "usage": {usage}}}'
    return body.encode()


def _anthropic(content: str = GOOD_ACTION, usage: str | None = None) -> bytes:
    counts = usage if usage is not None else '{"input_tokens": 3, "output_tokens": 2}'
    body = json.dumps(
        {"content": [{"type": "tool_use", "input": json.loads(content)}], "stop_reason": "end"}
    )
    return (body[:-1] + f', "usage": {counts}}}').encode()


def _deep(n: int) -> bytes:
    return b"[" * n + b"]" * n


def _with_raw_text(envelope: bytes, raw: str) -> bytes:
    """`envelope` (an OpenAI answer whose content is "RAW") with `raw` spliced in as the JSON
    string's escaped source (so an escape like ``\\ud800`` reaches the decoder)."""
    return envelope.replace(b'"RAW"', b'"' + raw.encode() + b'"')


ACTION_WITH = '{{\\"tool\\": \\"app__api\\", \\"arguments\\": {{\\"q\\": \\"{}\\"}}}}'

# name -> (provider, the answer's raw bytes, a word the failed turn's reason holds)
SHAPES: dict[str, tuple[str, bytes, str]] = {
    "openai usage.prompt_tokens Infinity": (
        "openai", _openai(usage='{"prompt_tokens": Infinity, "completion_tokens": 1}'), "inf"
    ),
    "openai usage.prompt_tokens NaN": (
        "openai", _openai(usage='{"prompt_tokens": NaN, "completion_tokens": 1}'), "nan"
    ),
    "openai usage.prompt_tokens 1e999": (
        "openai", _openai(usage='{"prompt_tokens": 1e999, "completion_tokens": 1}'), "inf"
    ),
    "openai usage.prompt_tokens \"abc\"": (
        "openai", _openai(usage='{"prompt_tokens": "abc", "completion_tokens": 1}'), "str"
    ),
    "openai usage.prompt_tokens -5": (
        "openai", _openai(usage='{"prompt_tokens": -5, "completion_tokens": 1}'), "-5"
    ),
    "openai usage.completion_tokens 2.5": (
        "openai", _openai(usage='{"prompt_tokens": 1, "completion_tokens": 2.5}'), "2.5"
    ),
    "openai usage.completion_tokens 10**400": (
        "openai",
        _openai(usage='{"prompt_tokens": 1, "completion_tokens": 1' + "0" * 400 + "}"),
        "digits",
    ),
    "openai usage.prompt_tokens true": (
        "openai", _openai(usage='{"prompt_tokens": true, "completion_tokens": 1}'), "True"
    ),
    "openai usage.prompt_tokens object": (
        "openai", _openai(usage='{"prompt_tokens": {"a": 1}, "completion_tokens": 1}'), "dict"
    ),
    "body nested 100,000 deep": ("openai", _deep(100_000), "deeper"),
    "body nested 100,000 deep in a field": (
        "openai", b'{"choices": ' + _deep(100_000) + b"}", "deeper"
    ),
    "body not JSON": ("openai", b"<html>hello</html>", "not JSON"),
    "body truncated": ("openai", _openai()[:-7], "not JSON"),
    "body not UTF-8, not the API's shape": (
        "openai", b'{"choices": "\xff\xfe\xfa"}', "choices[0]"
    ),
    "content with an escaped lone surrogate": (
        "openai", _with_raw_text(_openai("RAW"), "\\ud800 hi"), "surrogate"
    ),
    "content with an escaped low surrogate in the arguments": (
        "openai", _with_raw_text(_openai("RAW"), ACTION_WITH.format("\\\\udfff")), "U+DFFF"
    ),
    "content with a bidi override": (
        "openai", _openai(json.dumps({"tool": "app__api", "arguments": {"q": "a\u202eb"}})),
        "U+202E",
    ),
    "content with a bidi isolate": (
        "openai", _openai(json.dumps({"tool": "app__api", "arguments": {"q": "a\u2067b"}})),
        "U+2067",
    ),
    "content starting with a BOM": ("openai", _openai("\ufeff" + GOOD_ACTION), "BOM"),
    "content with a BOM in a string": (
        "openai", _openai(json.dumps({"tool": "app__api", "arguments": {"q": "a\ufeffb"}})),
        "U+FEFF",
    ),
    "content with a zero-width space in the tool name": (
        "openai", _openai(json.dumps({"tool": "app__api\u200b", "arguments": {}})), "U+200B"
    ),
    "anthropic usage.input_tokens Infinity": (
        "anthropic", _anthropic(usage='{"input_tokens": Infinity, "output_tokens": 2}'), "inf"
    ),
    "anthropic usage.output_tokens \"abc\"": (
        "anthropic", _anthropic(usage='{"input_tokens": 1, "output_tokens": "abc"}'), "str"
    ),
    "anthropic usage.cache_read_input_tokens -1": (
        "anthropic",
        _anthropic(usage='{"input_tokens": 1, "output_tokens": 2, "cache_read_input_tokens": -1}'),
        "-1",
    ),
    "anthropic body nested 100,000 deep": ("anthropic", _deep(100_000), "deeper"),
    "anthropic input with an escaped lone surrogate": (
        "anthropic",
        _anthropic().replace(b'"ok"', b'"\\ud800"'),
        "U+D800",
    ),
}  # fmt: skip


def _model(provider: str, url: str) -> Any:
    retry = RetryPolicy(max_attempts=1)
    if provider == "openai":
        return OpenAIChat("m", base_url=f"{url}/v1", retry=retry, structured="json_schema")
    return AnthropicMessages("m", api_key="k" * 12, base_url=url, retry=retry)


def _run(provider: str, stub: Stub, bad: bytes) -> tuple[Any, World]:
    """Two turns: the bad answer, then a good one (which completes the task)."""
    stub.bodies = [bad]
    stub.fallback = _openai() if provider == "openai" else _anthropic()
    world = World()
    trace = run_agent(
        _model(provider, stub.url),
        world,  # type: ignore[arg-type]
        system_prompt="Act.",
        task_message="Task: do it",
        tools=TOOLS,
        max_turns=3,
        seed=1,
    )
    return trace, world


ALREADY = {
    "content with an escaped low surrogate in the arguments",
    "content starting with a BOM",
    "anthropic input with an escaped lone surrogate",
}


@pytest.mark.parametrize("name", [n for n in SHAPES if n not in ALREADY])
def test_a_hostile_reply_is_a_failed_turn_with_its_reason(stub: Stub, name: str) -> None:
    provider, body, word = SHAPES[name]

    trace, world = _run(provider, stub, body)

    first = trace.turns[0]
    assert first.call is None
    assert first.bad_reply is not None and word in first.bad_reply, first.bad_reply
    # The next request went out (it could be encoded) and the task was done with it.
    assert len(stub.received) == 2
    assert [c.tool for c in world.calls] == ["app__api"]
    sent = json.dumps(json.loads(stub.received[1]), ensure_ascii=False)
    assert "\ud800" not in sent and "\udfff" not in sent
    # Nothing hidden reached the world.
    assert world.calls[0].args == {"q": "ok"}
    # Usage counted only from answers that were used: every count is a finite integer.
    assert isinstance(trace.usage.input_tokens, int) and trace.usage.input_tokens >= 0
    assert isinstance(trace.usage.output_tokens, int) and trace.usage.output_tokens >= 0


def test_a_malformed_answer_leaves_the_conversation_unchanged(stub: Stub) -> None:
    _run("openai", stub, _openai(usage='{"prompt_tokens": Infinity}'))

    first, second = (json.loads(r)["messages"] for r in stub.received)
    assert second == first


def test_every_shape_tried_is_refused(stub: Stub) -> None:
    """The figure for the issue: of the shapes tried, how many end as a failed turn with a
    reason (the rest would have raised)."""
    refused = 0
    for provider, body, _word in SHAPES.values():
        stub.received.clear()
        trace, _world = _run(provider, stub, body)
        refused += trace.turns[0].bad_reply is not None
    assert refused == len(SHAPES) == 26
    # A good count is still counted; an integral float (some servers send 12.0) is a count.
    stub.bodies = [_openai(usage='{"prompt_tokens": 12.0, "completion_tokens": 3}')]
    completion = _model("openai", stub.url).complete([])
    assert (completion.usage.input_tokens, completion.usage.output_tokens) == (12, 3)
