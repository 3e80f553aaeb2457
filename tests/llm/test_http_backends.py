"""The OpenAI and Anthropic backends against their documented request and response shapes."""

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
from evolve.llm._errors import RequestFailed
from evolve.llm._http import RetryPolicy
from evolve.llm._openai import OpenAIChat
from evolve.llm._types import JsonSchema, Message, Usage

OPENAI_URL = "https://api.openai.com/v1/chat/completions"
LOCAL_BASE = "http://localhost:8000/v1"
ANTHROPIC_URL = "https://api.anthropic.com/v1/messages"
KEY = "sk-test-SECRET-0123456789"
SCHEMA = JsonSchema("verdict", {"type": "object", "properties": {"ok": {"type": "boolean"}}})
CHAT = [Message("system", "Be brief."), Message("user", "Hi?")]


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL"):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
def router() -> Iterator[respx.MockRouter]:
    # Mocked where the client picks its transport, so the lean plain-HTTP transport and
    # httpx's own are both replaced (tests/llm/test_transport.py runs the former for real).
    with respx.mock(assert_all_mocked=True, using="httpx") as mock:
        yield mock


@pytest.fixture
def sleeps() -> list[float]:
    return []


@pytest.fixture
def retry(sleeps: list[float]) -> RetryPolicy:
    return RetryPolicy(
        max_attempts=4, base_delay=0.5, max_delay=8.0, jitter=0.0, sleep=sleeps.append
    )


def sent(route: respx.Route, index: int = 0) -> tuple[dict[str, Any], httpx.Headers]:
    request = route.calls[index].request
    return json.loads(request.content), request.headers


def openai_reply(content: str | None = "Hello.", **extra: Any) -> dict[str, Any]:
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "model": "gpt-4o-mini-2024-07-18",
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": content, "refusal": None},
                "finish_reason": "stop",
            }
        ],
        "usage": {"prompt_tokens": 12, "completion_tokens": 3, "total_tokens": 15},
        **extra,
    }


def anthropic_reply(content: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "model": "claude-test-1",
        "content": content,
        "stop_reason": "end_turn",
        "usage": {"input_tokens": 20, "output_tokens": 5},
    }


# --- OpenAI ------------------------------------------------------------------------------


def test_openai_sends_the_documented_request_and_parses_the_reply(
    router: respx.MockRouter,
) -> None:
    route = router.post(OPENAI_URL).respond(200, json=openai_reply())
    llm = OpenAIChat("gpt-4o-mini", api_key=KEY)

    completion = llm.complete(CHAT)

    body, headers = sent(route)
    assert body == {
        "model": "gpt-4o-mini",
        "messages": [
            {"role": "system", "content": "Be brief."},
            {"role": "user", "content": "Hi?"},
        ],
        "temperature": 0.0,
    }
    assert headers["authorization"] == f"Bearer {KEY}"
    assert headers["content-type"] == "application/json"
    assert completion.text == "Hello."
    assert completion.usage == Usage(12, 3)
    assert completion.model == "gpt-4o-mini-2024-07-18"
    assert llm.name == "openai/gpt-4o-mini"


def test_openai_json_schema_seed_and_max_tokens(router: respx.MockRouter) -> None:
    route = router.post(OPENAI_URL).respond(200, json=openai_reply('{"ok": true}'))
    llm = OpenAIChat("gpt-4o-mini", api_key=KEY)

    completion = llm.complete(CHAT, json_schema=SCHEMA, temperature=0.7, seed=7, max_tokens=50)

    body, _ = sent(route)
    assert body["temperature"] == 0.7
    assert body["seed"] == 7
    assert body["max_tokens"] == 50
    assert body["response_format"] == {
        "type": "json_schema",
        "json_schema": {"name": "verdict", "schema": SCHEMA.schema, "strict": False},
    }
    assert json.loads(completion.text) == {"ok": True}


def test_openai_local_server_from_env_needs_no_key(
    router: respx.MockRouter, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", LOCAL_BASE + "/")
    route = router.post(f"{LOCAL_BASE}/chat/completions").respond(200, json=openai_reply())

    OpenAIChat("qwen2.5:7b").complete(CHAT)

    _, headers = sent(route)
    assert "authorization" not in headers


def test_openai_key_from_env(router: respx.MockRouter, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    route = router.post(OPENAI_URL).respond(200, json=openai_reply())

    OpenAIChat("gpt-4o-mini").complete(CHAT)

    assert sent(route)[1]["authorization"] == f"Bearer {KEY}"


def test_openai_missing_key_is_an_error_only_for_openai() -> None:
    with pytest.raises(ModelError) as caught:
        OpenAIChat("gpt-4o-mini")
    assert str(caught.value) == (
        "OPENAI_API_KEY is not set; export it, or choose another --model such as sim."
    )
    OpenAIChat("llama", base_url=LOCAL_BASE)


def test_openai_missing_usage_is_estimated(router: respx.MockRouter) -> None:
    reply = openai_reply("four")
    del reply["usage"]
    router.post(OPENAI_URL).respond(200, json=reply)

    completion = OpenAIChat("gpt-4o-mini", api_key=KEY).complete([Message("user", "12345678")])

    assert completion.usage == Usage(2, 1)


def test_openai_null_content_is_an_error(router: respx.MockRouter) -> None:
    router.post(OPENAI_URL).respond(200, json=openai_reply(None))

    with pytest.raises(ModelError, match="no message content"):
        OpenAIChat("gpt-4o-mini", api_key=KEY).complete(CHAT)


def test_openai_unexpected_shape_is_an_error(router: respx.MockRouter) -> None:
    router.post(f"{LOCAL_BASE}/chat/completions").respond(200, json={"choices": []})

    with pytest.raises(ModelError, match="Chat Completions API"):
        OpenAIChat("m", base_url=LOCAL_BASE).complete(CHAT)


def test_openai_non_json_body_is_an_error(router: respx.MockRouter) -> None:
    router.post(f"{LOCAL_BASE}/chat/completions").respond(200, text="<html>hi</html>")

    with pytest.raises(ModelError, match="not JSON"):
        OpenAIChat("m", base_url=LOCAL_BASE).complete(CHAT)


# --- retries -----------------------------------------------------------------------------


def test_retries_429_honouring_retry_after(
    router: respx.MockRouter, retry: RetryPolicy, sleeps: list[float]
) -> None:
    route = router.post(OPENAI_URL)
    route.side_effect = [
        httpx.Response(429, headers={"Retry-After": "3"}, json={"error": {"message": "slow"}}),
        httpx.Response(200, json=openai_reply()),
    ]

    completion = OpenAIChat("gpt-4o-mini", api_key=KEY, retry=retry).complete(CHAT)

    assert completion.text == "Hello."
    assert route.call_count == 2
    assert sleeps == [3.0]


def test_retry_after_is_honoured_past_the_backoff_cap_up_to_max_retry_after(
    router: respx.MockRouter, retry: RetryPolicy, sleeps: list[float]
) -> None:
    route = router.post(OPENAI_URL)
    route.side_effect = [
        httpx.Response(429, headers={"Retry-After": "30"}),
        httpx.Response(429, headers={"Retry-After": "600"}),
        httpx.Response(200, json=openai_reply()),
    ]

    OpenAIChat("gpt-4o-mini", api_key=KEY, retry=retry).complete(CHAT)

    assert sleeps == [30.0, 60.0]


def test_retries_503_then_succeeds_with_backoff(
    router: respx.MockRouter, retry: RetryPolicy, sleeps: list[float]
) -> None:
    route = router.post(OPENAI_URL)
    route.side_effect = [
        httpx.Response(503),
        httpx.Response(503),
        httpx.Response(200, json=openai_reply()),
    ]

    OpenAIChat("gpt-4o-mini", api_key=KEY, retry=retry).complete(CHAT)

    assert route.call_count == 3
    assert sleeps == [0.5, 1.0]


def test_retries_a_connection_error(
    router: respx.MockRouter, retry: RetryPolicy, sleeps: list[float]
) -> None:
    route = router.post(f"{LOCAL_BASE}/chat/completions")
    route.side_effect = [httpx.ConnectError("refused"), httpx.Response(200, json=openai_reply())]

    OpenAIChat("m", base_url=LOCAL_BASE, retry=retry).complete(CHAT)

    assert route.call_count == 2
    assert sleeps == [0.5]


@pytest.mark.parametrize(
    ("status", "advice"),
    [(400, "check the model name"), (401, "check OPENAI_API_KEY")],
)
def test_no_retry_on_client_errors_and_the_key_stays_secret(
    router: respx.MockRouter, retry: RetryPolicy, sleeps: list[float], status: int, advice: str
) -> None:
    # OpenAI echoes (part of) a bad key in its 401 message; the whole key must not leak.
    error = {
        "error": {
            "message": f"Incorrect API key provided: {KEY}.",
            "type": "invalid_request_error",
            "code": "invalid_api_key",
        }
    }
    route = router.post(OPENAI_URL).respond(status, json=error)

    with pytest.raises(ModelError) as caught:
        OpenAIChat("gpt-4o-mini", api_key=KEY, retry=retry).complete(CHAT)

    message = str(caught.value)
    assert route.call_count == 1
    assert sleeps == []
    assert message.startswith(f"OpenAI answered HTTP {status} (invalid_request_error: ")
    assert "Incorrect API key provided" in message
    assert advice in message
    assert KEY not in message
    assert message.endswith(".") and message.count("; ") == 1


def test_gives_up_after_max_attempts(
    router: respx.MockRouter, retry: RetryPolicy, sleeps: list[float]
) -> None:
    route = router.post(OPENAI_URL).respond(
        503, json={"error": {"message": "The engine is currently overloaded", "type": "server"}}
    )

    with pytest.raises(ModelError) as caught:
        OpenAIChat("gpt-4o-mini", api_key=KEY, retry=retry).complete(CHAT)

    assert route.call_count == 4
    assert sleeps == [0.5, 1.0, 2.0]
    assert str(caught.value) == (
        "OpenAI answered HTTP 503 on all 4 attempts (server: The engine is currently "
        "overloaded); the provider is having trouble, so try again later or choose another "
        "--model."
    )


def test_gives_up_on_an_unreachable_server(
    router: respx.MockRouter, retry: RetryPolicy, sleeps: list[float]
) -> None:
    route = router.post(f"{LOCAL_BASE}/chat/completions").mock(
        side_effect=httpx.ConnectError("[Errno 111] Connection refused")
    )

    with pytest.raises(ModelError) as caught:
        OpenAIChat("m", base_url=LOCAL_BASE, retry=retry).complete(CHAT)

    assert route.call_count == 4
    assert len(sleeps) == 3
    assert str(caught.value) == (
        "OpenAI-compatible server could not be reached after 4 attempts (ConnectError: "
        "[Errno 111] Connection refused); is the server at http://localhost:8000/v1 running?"
    )


def test_a_read_timeout_is_retried_with_backoff_then_fails_as_a_request(
    router: respx.MockRouter, sleeps: list[float]
) -> None:
    # Issue 22: a timed-out request is retried (each try's response is closed at once, see
    # tests/llm/test_timeouts.py); after the last try it is a RequestFailed, which makes the
    # episode a failed one instead of ending the run.
    route = router.post(f"{LOCAL_BASE}/chat/completions").mock(
        side_effect=httpx.ReadTimeout("timed out")
    )
    retry = RetryPolicy(max_attempts=4, jitter=0.0, sleep=sleeps.append)

    with pytest.raises(RequestFailed, match="did not answer in time after 4 attempts .*timeout_s"):
        OpenAIChat("m", base_url=LOCAL_BASE, retry=retry).complete(CHAT)
    assert route.call_count == 4
    assert sleeps == [0.5, 1.0, 2.0]


def test_a_connect_timeout_is_retried(router: respx.MockRouter, sleeps: list[float]) -> None:
    route = router.post(f"{LOCAL_BASE}/chat/completions")
    route.side_effect = [httpx.ConnectTimeout("slow"), httpx.Response(200, json=openai_reply())]
    retry = RetryPolicy(max_attempts=2, jitter=0.0, sleep=sleeps.append)

    assert OpenAIChat("m", base_url=LOCAL_BASE, retry=retry).complete(CHAT).text == "Hello."
    assert route.call_count == 2


def test_backoff_grows_is_capped_and_jitters_downward() -> None:
    plain = RetryPolicy(base_delay=1.0, max_delay=5.0, jitter=0.0)
    assert [plain.delay(n) for n in (1, 2, 3, 4)] == [1.0, 2.0, 4.0, 5.0]
    jittered = RetryPolicy(base_delay=1.0, max_delay=5.0, jitter=0.5)
    assert all(0.5 <= jittered.delay(1) <= 1.0 for _ in range(100))
    with pytest.raises(ValueError):
        RetryPolicy(max_attempts=0)


# --- Anthropic ---------------------------------------------------------------------------


def test_anthropic_sends_the_documented_request_and_parses_the_reply(
    router: respx.MockRouter,
) -> None:
    route = router.post(ANTHROPIC_URL).respond(
        200,
        json=anthropic_reply([{"type": "text", "text": "Hel"}, {"type": "text", "text": "lo."}]),
    )
    llm = AnthropicMessages("claude-test", api_key=KEY)
    chat = [Message("system", "Be brief."), Message("system", "Be kind."), *CHAT[1:]]

    completion = llm.complete(chat, temperature=0.2, seed=3)

    body, headers = sent(route)
    assert body == {
        "model": "claude-test",
        "max_tokens": 1024,
        "system": "Be brief.\n\nBe kind.",
        "messages": [{"role": "user", "content": "Hi?"}],
        "temperature": 0.2,
    }
    assert headers["x-api-key"] == KEY
    assert headers["anthropic-version"] == "2023-06-01"
    assert headers["content-type"] == "application/json"
    assert "authorization" not in headers
    assert completion.text == "Hello."
    assert completion.usage == Usage(20, 5)
    assert completion.model == "claude-test-1"
    assert llm.name == "anthropic/claude-test"


def test_anthropic_json_schema_forces_a_tool(
    router: respx.MockRouter, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    tool_use = {"type": "tool_use", "id": "toolu_1", "name": "verdict", "input": {"ok": True}}
    route = router.post(ANTHROPIC_URL).respond(200, json=anthropic_reply([tool_use]))

    completion = AnthropicMessages("claude-test").complete(
        [Message("user", "Judge.")], json_schema=SCHEMA, max_tokens=64
    )

    body, _ = sent(route)
    assert "system" not in body
    assert body["max_tokens"] == 64
    assert body["tools"] == [
        {
            "name": "verdict",
            "description": "Reply in this structure.",
            "input_schema": SCHEMA.schema,
        }
    ]
    assert body["tool_choice"] == {"type": "tool", "name": "verdict"}
    assert completion.text == json.dumps({"ok": True})


def test_anthropic_empty_schema_becomes_an_object(router: respx.MockRouter) -> None:
    tool_use = {"type": "tool_use", "id": "toolu_1", "name": "any", "input": {}}
    route = router.post(ANTHROPIC_URL).respond(200, json=anthropic_reply([tool_use]))

    AnthropicMessages("c", api_key=KEY).complete(CHAT, json_schema=JsonSchema("any"))

    assert sent(route)[0]["tools"][0]["input_schema"] == {"type": "object"}


def test_anthropic_missing_tool_use_is_an_error(router: respx.MockRouter) -> None:
    router.post(ANTHROPIC_URL).respond(200, json=anthropic_reply([{"type": "text", "text": "x"}]))

    with pytest.raises(ModelError, match="no tool_use block"):
        AnthropicMessages("c", api_key=KEY).complete(CHAT, json_schema=SCHEMA)


def test_anthropic_missing_key() -> None:
    with pytest.raises(ModelError, match=r"^ANTHROPIC_API_KEY is not set; "):
        AnthropicMessages("claude-test")


def test_anthropic_retries_529_overloaded(
    router: respx.MockRouter, retry: RetryPolicy, sleeps: list[float]
) -> None:
    overloaded = {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}
    route = router.post(ANTHROPIC_URL)
    route.side_effect = [
        httpx.Response(529, json=overloaded),
        httpx.Response(200, json=anthropic_reply([{"type": "text", "text": "ok"}])),
    ]

    assert AnthropicMessages("c", api_key=KEY, retry=retry).complete(CHAT).text == "ok"
    assert route.call_count == 2
    assert sleeps == [0.5]


def test_anthropic_401_names_the_provider_message_not_the_key(
    router: respx.MockRouter, retry: RetryPolicy
) -> None:
    error = {
        "type": "error",
        "error": {"type": "authentication_error", "message": "invalid x-api-key"},
    }
    route = router.post(ANTHROPIC_URL).respond(401, json=error)

    with pytest.raises(ModelError) as caught:
        AnthropicMessages("c", api_key=KEY, retry=retry).complete(CHAT)

    assert route.call_count == 1
    assert str(caught.value) == (
        "Anthropic answered HTTP 401 (authentication_error: invalid x-api-key); "
        "check ANTHROPIC_API_KEY."
    )
