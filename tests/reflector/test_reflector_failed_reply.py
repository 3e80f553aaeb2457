"""A reflector reply the backend refused (ReplyMalformed) or a request that failed on every
try (RequestFailed) is a failed step, logged as a refusal; it does not end the command."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from evolve.errors import ModelError
from evolve.llm import JsonSchema, Message, MockLLM, ReplyMalformed, RequestFailed
from evolve.reflector import Reflector


@pytest.mark.parametrize("error", [ReplyMalformed, RequestFailed])
def test_a_refused_reply_is_a_logged_failed_step(error: type[ModelError]) -> None:
    def answer(messages: Sequence[Message], schema: JsonSchema | None) -> str:
        raise error("the server answered HTTP 200 with a body that is not JSON.")

    proposal = Reflector(MockLLM(answer)).propose(
        ["Sign texts with -A."], [], parameters={}, max_chars=6000, seed=1
    )
    assert proposal.guidance is None and not proposal.edits and not proposal.parameters
    [refusal] = proposal.refused
    assert refusal.op == "reply" and "not JSON" in refusal.reason
