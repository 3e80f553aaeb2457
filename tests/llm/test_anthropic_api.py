"""Anthropic's Messages API: recorded request/response pairs shaped like the documented API."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
import respx
from llm_cache_isolation import private_cache  # noqa: F401  (autouse)

from evolve.errors import ModelError
from evolve.llm._anthropic import AnthropicMessages
from evolve.llm._errors import ReplyCut, ReplyRefused, TurnPaused
from evolve.llm._http import RetryPolicy
from evolve.llm._types import JsonSchema, Message

URL = "https://api.anthropic.com/v1/messages"
SCHEMA = JsonSchema("verdict", {"type": "object", "properties": {"ok": {"type": "boolean"}}})
CHAT = [Message("system", "Judge."), Message("user", "Is it fine?")]

# A forced tool call, as documented: content holds one tool_use block; usage counts the
# prompt-cache reads and writes apart from input_tokens.
TOOL_REPLY: dict[str, Any] = {
    "id": "msg_01",
    "type": "message",
    "role": "assistant",
    "model": "claude-sonnet-4-5",
    "content": [{"type": "tool_use", "id": "toolu_01", "name": "verdict", "input": {"ok": True}}],
    "stop_reason": "tool_use",
    "stop_sequence": None,
    "usage": {
        "input_tokens": 30,
        "cache_creation_input_tokens": 5,
        "cache_read_input_tokens": 7,
        "output_tokens": 9,
    },
}
OVERLOADED = {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}


@pytest.fixture
def router() -> Iterator[respx.MockRouter]:
    # Mocked where the client picks its transport, so the lean plain-HTTP transport and
    # httpx's own are both replaced (tests/llm/test_transport.py runs the former for real).
    with respx.mock(assert_all_mocked=True, using="httpx") as mock:
        yield mock


def llm(sleeps: list[float] | None = None, **options: Any) -> AnthropicMessages:
    retry = RetryPolicy(jitter=0.0, sleep=(sleeps if sleeps is not None else []).append)
    return AnthropicMessages("claude-sonnet-4-5", api_key="sk-ant-k", retry=retry, **options)


def test_a_forced_tool_call_is_the_structured_reply_with_full_usage(
    router: respx.MockRouter,
) -> None:
    route = router.post(URL).respond(200, json=TOOL_REPLY)

    completion = llm(max_tokens_default=300).complete(CHAT, json_schema=SCHEMA)

    body = json.loads(route.calls[0].request.content)
    assert body["tool_choice"] == {"type": "tool", "name": "verdict"}
    assert body["tools"][0]["input_schema"] == SCHEMA.schema
    assert body["max_tokens"] == 300
    assert body["system"] == "Judge."
    assert json.loads(completion.text) == {"ok": True}
    assert (completion.usage.input_tokens, completion.usage.output_tokens) == (42, 9)
    assert completion.finish_reason == "tool_use"


def test_a_tool_call_cut_at_max_tokens_is_not_used(router: respx.MockRouter) -> None:
    cut = {**TOOL_REPLY, "stop_reason": "max_tokens"}
    cut["content"] = [{"type": "tool_use", "id": "t", "name": "verdict", "input": {}}]
    router.post(URL).respond(200, json=cut)
    with pytest.raises(
        ReplyCut, match=r"cut at max_tokens after 9 tokens; raise models\.max_tokens"
    ):
        llm().complete(CHAT, json_schema=SCHEMA)


def test_free_text_cut_at_max_tokens_is_returned_with_its_reason(
    router: respx.MockRouter,
) -> None:
    text = {
        **TOOL_REPLY,
        "stop_reason": "max_tokens",
        "content": [{"type": "text", "text": "Yes, b"}],
    }
    router.post(URL).respond(200, json=text)
    completion = llm().complete(CHAT)
    assert (completion.text, completion.finish_reason) == ("Yes, b", "max_tokens")


def test_refusal_and_pause_turn_have_their_own_errors(router: respx.MockRouter) -> None:
    route = router.post(URL)
    route.side_effect = [
        httpx.Response(200, json={**TOOL_REPLY, "stop_reason": "refusal", "content": []}),
        httpx.Response(200, json={**TOOL_REPLY, "stop_reason": "pause_turn", "content": []}),
    ]
    with pytest.raises(ReplyRefused, match="declined to answer"):
        llm().complete(CHAT, json_schema=SCHEMA)
    with pytest.raises(TurnPaused, match="pause_turn"):
        llm().complete(CHAT, json_schema=SCHEMA)


@pytest.mark.parametrize("status", [529, 429, 503])
def test_overloaded_honours_retry_after_beyond_eight_seconds(
    router: respx.MockRouter, status: int
) -> None:
    route = router.post(URL)
    route.side_effect = [
        httpx.Response(status, headers={"retry-after": "20"}, json=OVERLOADED),
        httpx.Response(200, json=TOOL_REPLY),
    ]
    sleeps: list[float] = []
    llm(sleeps).complete(CHAT, json_schema=SCHEMA)
    assert sleeps == [20.0]


def test_retry_after_is_capped_at_the_configured_maximum(router: respx.MockRouter) -> None:
    route = router.post(URL)
    route.side_effect = [
        httpx.Response(529, headers={"retry-after": "3600"}, json=OVERLOADED),
        httpx.Response(200, json=TOOL_REPLY),
    ]
    sleeps: list[float] = []
    retry = RetryPolicy(jitter=0.0, max_retry_after=45.0, sleep=sleeps.append)
    AnthropicMessages("m", api_key="k", retry=retry).complete(CHAT, json_schema=SCHEMA)
    assert sleeps == [45.0]


def test_persistent_overload_names_the_error_type(router: respx.MockRouter) -> None:
    router.post(URL).respond(529, json=OVERLOADED)
    with pytest.raises(
        ModelError, match="HTTP 529 on all 4 attempts \\(overloaded_error: Overloaded\\)"
    ):
        llm().complete(CHAT)
