"""The structured-output ladder against servers that each refuse the rungs above one."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import respx
from llm_cache_isolation import private_cache  # noqa: F401  (autouse)

from evolve.errors import ModelError
from evolve.llm._budget import Budget
from evolve.llm._errors import BudgetSpent, ShapeRefused
from evolve.llm._http import RetryPolicy
from evolve.llm._openai import OpenAIChat
from evolve.llm._structured import ENDPOINTS_FILE, EndpointMemory, endpoint_memory
from evolve.llm._types import JsonSchema, Message

BASE = "http://127.0.0.1:8080/v1"
URL = f"{BASE}/chat/completions"
SCHEMA = JsonSchema(
    "action", {"type": "object", "properties": {"tool": {"type": "string"}}, "required": ["tool"]}
)
CHAT = [Message("system", "You are an agent."), Message("user", "Do it.")]
ANSWER = '{"tool": "shop__buy"}'


def reply(content: str | None = ANSWER, **message: Any) -> dict[str, Any]:
    return {
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": content, **message},
                "finish_reason": "stop",
            }
        ],
        "usage": {"prompt_tokens": 10, "completion_tokens": 4},
    }


def rung(body: dict[str, Any]) -> str:
    if "tools" in body:
        return "tools"
    fmt = body.get("response_format")
    return str(fmt["type"]) if fmt else "prompt"


# How real servers refuse: llama-cpp-python 0.3.36 answers 500 naming the allowed types;
# others answer 400 naming response_format, or 400 naming tools.
REFUSALS = {
    "json_schema": httpx.Response(
        500, json={"error": {"message": "Input should be 'text' or 'json_object'"}}
    ),
    "json_object": httpx.Response(
        400, json={"error": {"message": "response_format is not supported"}}
    ),
    "tools": httpx.Response(400, json={"error": {"message": "tool_choice is not supported"}}),
}


def server_accepting(lowest: str) -> Callable[[httpx.Request], httpx.Response]:
    order = ["json_schema", "json_object", "tools", "prompt"]

    def handle(request: httpx.Request) -> httpx.Response:
        body = json.loads(request.content)
        shape = rung(body)
        if order.index(shape) < order.index(lowest):
            return REFUSALS[shape]
        if shape == "tools":
            call = {"type": "function", "function": {"name": "action", "arguments": ANSWER}}
            return httpx.Response(200, json=reply(None, tool_calls=[call]))
        return httpx.Response(200, json=reply())

    return handle


@pytest.fixture
def router() -> Iterator[respx.MockRouter]:
    # Mocked where the client picks its transport, so the lean plain-HTTP transport and
    # httpx's own are both replaced (tests/llm/test_transport.py runs the former for real).
    with respx.mock(assert_all_mocked=True, using="httpx") as mock:
        yield mock


@pytest.fixture
def memory(tmp_path: Path) -> EndpointMemory:
    return EndpointMemory(tmp_path / ENDPOINTS_FILE)


def sent_rungs(route: respx.Route) -> list[str]:
    return [rung(json.loads(c.request.content)) for c in route.calls]


@pytest.mark.parametrize(
    ("lowest", "expected"),
    [
        ("json_schema", ["json_schema"]),
        ("json_object", ["json_schema", "json_object"]),
        ("tools", ["json_schema", "json_object", "tools"]),
        ("prompt", ["json_schema", "json_object", "tools", "prompt"]),
    ],
)
def test_each_rung_is_reached_when_the_server_refuses_the_ones_above(
    router: respx.MockRouter, memory: EndpointMemory, lowest: str, expected: list[str]
) -> None:
    route = router.post(URL).mock(side_effect=server_accepting(lowest))
    llm = OpenAIChat("m", base_url=BASE, endpoints=memory)

    completion = llm.complete(CHAT, json_schema=SCHEMA)

    assert json.loads(completion.text) == {"tool": "shop__buy"}
    assert sent_rungs(route) == expected  # a refusal is never retried as transient
    # The next request starts at the rung that worked, in this process and from the file.
    llm.complete(CHAT, json_schema=SCHEMA)
    assert sent_rungs(route)[len(expected) :] == [lowest]
    assert memory.path is not None
    if lowest == "json_schema":
        assert not memory.path.exists()
    else:
        assert json.loads(memory.path.read_text()) == {BASE: lowest}
    fresh = OpenAIChat("m", base_url=BASE, endpoints=EndpointMemory(memory.path))
    fresh.complete(CHAT, json_schema=SCHEMA)
    assert sent_rungs(route)[-1] == lowest


def test_the_lower_rungs_carry_the_schema_to_the_server(
    router: respx.MockRouter, memory: EndpointMemory
) -> None:
    route = router.post(URL).mock(side_effect=server_accepting("prompt"))
    OpenAIChat("m", base_url=BASE, endpoints=memory).complete(CHAT, json_schema=SCHEMA)

    bodies = [json.loads(c.request.content) for c in route.calls]
    assert bodies[1]["response_format"] == {"type": "json_object", "schema": SCHEMA.schema}
    assert bodies[2]["tools"][0]["function"]["parameters"] == SCHEMA.schema
    assert bodies[2]["tool_choice"] == {"type": "function", "function": {"name": "action"}}
    for body in bodies[1:]:
        system = body["messages"][0]["content"]
        assert system.startswith("You are an agent.")
        assert json.dumps(SCHEMA.schema, sort_keys=True) in system
    assert "JSON" in bodies[1]["messages"][0]["content"]  # OpenAI's json_object requires it


def test_transient_5xx_without_shape_words_is_still_retried(
    router: respx.MockRouter, memory: EndpointMemory
) -> None:
    route = router.post(URL)
    route.side_effect = [httpx.Response(503, text="busy"), httpx.Response(200, json=reply())]
    retry = RetryPolicy(jitter=0.0, sleep=lambda s: None)
    OpenAIChat("m", base_url=BASE, endpoints=memory, retry=retry).complete(CHAT, json_schema=SCHEMA)
    assert sent_rungs(route) == ["json_schema", "json_schema"]
    assert memory.get(BASE) is None


def test_a_forced_rung_is_used_as_is_and_its_refusal_is_an_error(
    router: respx.MockRouter, memory: EndpointMemory
) -> None:
    route = router.post(URL).mock(side_effect=server_accepting("tools"))
    llm = OpenAIChat("m", base_url=BASE, endpoints=memory, structured="json_object")

    with pytest.raises(ShapeRefused, match=r"HTTP 400 .*models\.structured in evolve\.yaml"):
        llm.complete(CHAT, json_schema=SCHEMA)
    assert sent_rungs(route) == ["json_object"]
    OpenAIChat("m", base_url=BASE, endpoints=memory, structured="tools").complete(
        CHAT, json_schema=SCHEMA
    )
    assert sent_rungs(route)[-1] == "tools"


def test_an_unknown_structured_mode_is_a_clear_error() -> None:
    with pytest.raises(ModelError, match="unknown structured-output mode 'xml'"):
        OpenAIChat("m", base_url=BASE, structured="xml")


def test_prompt_rung_repairs_once(router: respx.MockRouter, memory: EndpointMemory) -> None:
    route = router.post(URL)
    route.side_effect = [
        httpx.Response(200, json=reply("Sure! I will buy it.")),
        httpx.Response(200, json=reply(ANSWER)),
    ]
    llm = OpenAIChat("m", base_url=BASE, endpoints=memory, structured="prompt")

    completion = llm.complete(CHAT, json_schema=SCHEMA)

    assert completion.text == ANSWER
    assert completion.usage.input_tokens == 20 and completion.usage.output_tokens == 8
    repair = json.loads(route.calls[1].request.content)["messages"]
    assert repair[-2] == {"role": "assistant", "content": "Sure! I will buy it."}
    assert repair[-1]["role"] == "user" and "not valid JSON" in repair[-1]["content"]


def test_prompt_rung_repairs_only_once(router: respx.MockRouter, memory: EndpointMemory) -> None:
    route = router.post(URL).respond(200, json=reply("still prose"))
    llm = OpenAIChat("m", base_url=BASE, endpoints=memory, structured="prompt")
    assert llm.complete(CHAT, json_schema=SCHEMA).text == "still prose"
    assert route.call_count == 2


def test_max_tokens_default_is_sent_and_a_call_overrides_it(
    router: respx.MockRouter, memory: EndpointMemory
) -> None:
    route = router.post(URL).respond(200, json=reply())
    llm = OpenAIChat("m", base_url=BASE, endpoints=memory, max_tokens_default=256)
    llm.complete(CHAT)
    llm.complete(CHAT, max_tokens=9)
    assert [json.loads(c.request.content)["max_tokens"] for c in route.calls] == [256, 9]


def test_the_request_timeout_is_sent_and_bounded_by_the_run_budget(
    router: respx.MockRouter, memory: EndpointMemory
) -> None:
    route = router.post(URL).respond(200, json=reply())
    now = [0.0]
    budget = Budget(30.0, clock=lambda: now[0])
    llm = OpenAIChat("m", base_url=BASE, endpoints=memory, timeout=120.0, budget=budget)

    llm.complete(CHAT)
    now[0] = 25.0
    llm.complete(CHAT)
    timeouts = [c.request.extensions["timeout"]["read"] for c in route.calls]
    assert timeouts == [30.0, 5.0]
    now[0] = 31.0
    with pytest.raises(BudgetSpent, match="budget of 30 s is spent"):
        llm.complete(CHAT)
    assert route.call_count == 2


def test_the_default_memory_is_persisted_under_the_cache_folder(
    router: respx.MockRouter, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("EVOLVE_CACHE_DIR", str(tmp_path / "c"))
    router.post(URL).mock(side_effect=server_accepting("json_object"))
    OpenAIChat("m", base_url=BASE).complete(CHAT, json_schema=SCHEMA)
    assert json.loads((tmp_path / "c" / ENDPOINTS_FILE).read_text()) == {BASE: "json_object"}
    assert endpoint_memory(tmp_path / "c" / ENDPOINTS_FILE).get(BASE) == "json_object"
