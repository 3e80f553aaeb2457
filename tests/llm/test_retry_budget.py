"""Retries of slow and failing requests (issue 22): backoff with jitter, bounded, and a budget
per role shared by all its requests; what still fails is a RequestFailed."""

from __future__ import annotations

import pytest
from llm_cache_isolation import private_cache  # noqa: F401  (autouse)

from chatstub import Answer, chat_stub
from evolve.llm import RequestFailed
from evolve.llm._budget import RetryBudget
from evolve.llm._http import RetryPolicy
from evolve.llm._openai import OpenAIChat
from evolve.llm._roles import make_role_llm
from evolve.llm._types import Message
from evolve.workspace._config import parse_config

HI = [Message("user", "hi")]


def test_a_request_that_times_out_once_is_retried_and_succeeds() -> None:
    sleeps: list[float] = []
    with chat_stub(lambda n, body: Answer(delay=1.5 if n == 0 else 0.0)) as stub:
        llm = OpenAIChat(
            "stub",
            base_url=stub.base_url,
            timeout=0.5,
            retry=RetryPolicy(max_attempts=3, sleep=sleeps.append),
        )
        assert llm.complete(HI, max_tokens=16).text
        assert len(stub.chats) == 2 and len(sleeps) == 1


def test_backoff_is_jittered_and_bounded() -> None:
    policy = RetryPolicy(base_delay=1.0, max_delay=4.0, jitter=0.25)
    delays = [policy.delay(attempt) for attempt in range(1, 8) for _ in range(20)]
    assert all(0.75 <= d <= 4.0 for d in delays)
    assert len({round(d, 6) for d in delays}) > 10  # drawn, not fixed
    assert max(policy.delay(9) for _ in range(50)) <= 4.0


def test_the_roles_budget_is_shared_by_its_requests() -> None:
    budget = RetryBudget(2)
    with chat_stub(lambda n, body: Answer(status=503, body={"error": "busy"})) as stub:
        llm = OpenAIChat(
            "stub",
            base_url=stub.base_url,
            retry=RetryPolicy(max_attempts=4, sleep=lambda s: None, budget=budget),
        )
        for _ in range(3):
            try:
                llm.complete(HI, max_tokens=16)
            except RequestFailed as exc:
                assert "503" in str(exc)
        # 3 requests, 2 retries in all: the budget, not 3 x 4 tries.
        assert len(stub.chats) == 5
        assert budget.spent == 2


def test_the_budget_and_tries_are_set_under_models_retry(monkeypatch: pytest.MonkeyPatch) -> None:
    config = parse_config(
        "models:\n  agent: openai/stub\n  retry:\n    attempts: 2\n    backoff_s: 0.01\n"
        "    max_backoff_s: 0.02\n    budget:\n      agent: 1\n"
    )
    with chat_stub(lambda n, body: Answer(status=502, body={"error": "down"})) as stub:
        monkeypatch.setenv("OPENAI_BASE_URL", stub.base_url)
        llm = make_role_llm(config, "agent")
        for _ in range(2):
            with pytest.raises(RequestFailed):
                llm.complete(HI, max_tokens=16)
        assert len(stub.chats) == 3  # 2 tries, then 1 (the budget of 1 retry is spent)
