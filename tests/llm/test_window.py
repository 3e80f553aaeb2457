"""The model's context window (issue 22): learned from the server or evolve.yaml, requests
fitted into it (the oldest turns first, then the reply bound), and what cannot fit refused
before it is sent, in one sentence naming the setting."""

from __future__ import annotations

import time
from typing import Any

import pytest
from llm_cache_isolation import private_cache  # noqa: F401  (autouse)

from chatstub import Answer, chat_stub
from evolve.llm import ContextTooSmall
from evolve.llm._http import RetryPolicy
from evolve.llm._openai import OpenAIChat
from evolve.llm._types import Message
from evolve.llm._window import Window, overflow

# llama-cpp-python 0.3.36's answer to a prompt longer than its window (measured).
LLAMA_PY_400 = {
    "error": {
        "message": "This model's maximum context length is 2048 tokens. However, you requested "
        "2628 tokens (2116 in the messages, 512 in the completion). Please reduce the length of "
        "the messages or completion.",
        "type": "invalid_request_error",
        "param": "messages",
        "code": "context_length_exceeded",
    }
}
# llama.cpp's own server.
LLAMA_CPP_400 = {
    "error": {
        "code": 400,
        "message": "the request exceeds the available context size, try increasing it",
        "type": "exceed_context_size_error",
        "n_prompt_tokens": 3000,
        "n_ctx": 2048,
    }
}


def _llm(url: str, **options: Any) -> OpenAIChat:
    options.setdefault("retry", RetryPolicy(max_attempts=1))
    options.setdefault("structured", "prompt")
    return OpenAIChat("stub", base_url=url, **options)


def _conversation(turns: int, size: int = 400) -> list[Message]:
    out = [Message("system", "s" * 800), Message("user", "Task: pay Sam back.")]
    for i in range(turns):
        out += [Message("assistant", f"call {i} " + "a" * size), Message("user", f"result {i}")]
    return out


def test_the_window_comes_from_llama_cpp_props() -> None:
    with chat_stub(props={"default_generation_settings": {"n_ctx": 4096}}) as stub:
        llm = _llm(stub.base_url, context_tokens=99_999)
        llm.complete([Message("user", "hi")], max_tokens=16)
        assert llm.window.tokens == 4096 and llm.window.source == "server"
        assert stub.gets[0] == "/props"


def test_the_window_comes_from_v1_models_metadata() -> None:
    models = {"data": [{"id": "other"}, {"id": "stub", "meta": {"n_ctx_train": 8192}}]}
    with chat_stub(models=models) as stub:
        llm = _llm(stub.base_url)
        llm.complete([Message("user", "hi")], max_tokens=16)
        assert llm.window.tokens == 8192
        assert stub.gets == ["/props", "/v1/models"]


def test_the_window_falls_back_to_models_context_tokens() -> None:
    with chat_stub() as stub:  # says nothing of its window, as llama-cpp-python
        llm = _llm(stub.base_url, context_tokens=3000)
        llm.complete([Message("user", "hi")], max_tokens=16)
        assert llm.window.tokens == 3000 and llm.window.source == "models.context_tokens"


def test_the_oldest_turns_are_cut_first_and_the_task_never() -> None:
    # 1,000 tokens of window; the server counts 1 token per character (prompt_tokens below).
    with chat_stub(props={"n_ctx": 1000}) as stub:
        stub.plan = lambda n, body: Answer(
            prompt_tokens=sum(len(m["content"]) for m in body["messages"])
        )
        llm = _llm(stub.base_url)
        llm.complete([Message("system", "s"), Message("user", "hi")], max_tokens=64)
        messages = _conversation(turns=4, size=150)
        llm.complete(messages, max_tokens=64)
        sent = [m["content"] for m in stub.chats[-1]["messages"]]
        assert sent[:2] == [messages[0].content, messages[1].content]  # system, task
        assert sent[-1] == messages[-1].content  # the latest turn stays
        assert "call 0 " + "a" * 150 not in sent  # the oldest turn went first
        assert len(sent) < len(messages)
        assert sum(len(c) for c in sent) + 64 <= 1000


def test_the_reply_bound_is_lowered_to_what_is_left() -> None:
    window = Window(1000)
    window.learn([Message("user", "x" * 100)], 100 + 8)  # one token per character
    fitted, bound = window.fit(
        [Message("system", "s" * 700), Message("user", "t")], 512, name="m", base_url="u"
    )
    assert len(fitted) == 2 and bound is not None and 128 <= bound < 512


def test_what_cannot_fit_is_refused_before_it_is_sent() -> None:
    with chat_stub(props={"default_generation_settings": {"n_ctx": 2048}}) as stub:
        stub.plan = lambda n, body: Answer(prompt_tokens=1800)
        llm = _llm(stub.base_url)
        llm.complete([Message("system", "s" * 1800), Message("user", "hi")], max_tokens=32)
        sent = len(stub.chats)
        with pytest.raises(ContextTooSmall) as caught:
            llm.complete([Message("system", "s" * 3000), Message("user", "hi")], max_tokens=512)
        assert len(stub.chats) == sent  # nothing sent
        message = str(caught.value)
        assert "2,048-token context window" in message and "--n_ctx 4096" in message
        assert message.count(". ") == 0 and message.endswith(".")


@pytest.mark.parametrize(
    "body", [LLAMA_PY_400, LLAMA_CPP_400], ids=["llama-cpp-python", "llama.cpp"]
)
def test_a_refusal_for_length_is_learned_and_refused_in_one_sentence(body: Any) -> None:
    with chat_stub(lambda n, b: Answer(status=400, body=body)) as stub:
        llm = _llm(stub.base_url)
        started = time.monotonic()
        with pytest.raises(ContextTooSmall, match="context window") as caught:
            llm.complete([Message("system", "s" * 6000), Message("user", "hi")], max_tokens=512)
        assert time.monotonic() - started < 5
        assert llm.window.tokens == 2048
        assert len(stub.chats) == 1  # learned from the refusal; the refit could not fit
        assert "--n_ctx" in str(caught.value)


def test_a_refusal_for_length_is_fitted_and_sent_again() -> None:
    def plan(n: int, body: dict[str, Any]) -> Answer:
        return Answer(status=400, body=LLAMA_PY_400) if n == 0 else Answer()

    with chat_stub(plan) as stub:
        llm = _llm(stub.base_url)
        # 2116 tokens counted for these characters; cutting the old turns makes it fit.
        messages = _conversation(turns=6, size=800)
        scale = 2116 / sum(len(m.content) for m in messages)
        completion = llm.complete(messages, max_tokens=512)
        assert completion.text
        assert len(stub.chats) == 2
        second = stub.chats[1]["messages"]
        assert len(second) < len(messages)
        assert sum(len(m["content"]) for m in second) * scale + 512 <= 2048


def test_overflow_reads_the_servers_numbers() -> None:
    import json

    assert overflow(json.dumps(LLAMA_PY_400)) is not None
    over = overflow(json.dumps(LLAMA_PY_400))
    assert over is not None and (over.window, over.prompt_tokens) == (2048, 2116)
    over = overflow(json.dumps(LLAMA_CPP_400))
    assert over is not None and (over.window, over.prompt_tokens) == (2048, 3000)
    assert overflow('{"error": {"message": "unknown model"}}') is None
