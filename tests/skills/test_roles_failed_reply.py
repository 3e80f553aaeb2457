"""The skills roles (reflection, evolver, selector): a reply the backend refused
(ReplyMalformed) or a request that failed on every try (RequestFailed) is a failed step,
logged, and never ends the command (issue 28's leftover, issue 22)."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from evolve.errors import ModelError
from evolve.llm import JsonSchema, Message, MockLLM, ReplyMalformed, RequestFailed
from evolve.ops import Refusal
from evolve.skills import reflect
from evolve.skills._evolver import ask_evolver
from evolve.skills._select import Skill, SkillPicker
from evolve.workspace import ShelfCaps

ERRORS = [ReplyMalformed, RequestFailed]


def _failing(error: type[ModelError]) -> MockLLM:
    def answer(messages: Sequence[Message], schema: JsonSchema | None) -> str:
        raise error("the server answered with usage.prompt_tokens inf; the reply was not used.")

    return MockLLM(answer)


@pytest.mark.parametrize("error", ERRORS)
def test_reflection_logs_the_failed_step(error: type[ModelError]) -> None:
    found = reflect(
        _failing(error), ref="c1", episode=3, task_id="pay_back-3",
        instruction="Pay Sam back $20.", actions="(no calls)", verifier="not paid",
        tools=("venmo__send_money",), seed=1,
    )  # fmt: skip
    assert found.candidate is None
    [refusal] = found.refused
    assert refusal.op == "reflect" and "not used" in refusal.reason


@pytest.mark.parametrize("error", ERRORS)
def test_the_evolver_logs_the_failed_step(error: type[ModelError]) -> None:
    refused: list[Refusal] = []
    assert ask_evolver(_failing(error), [], [], {}, ShelfCaps(), 1, refused) is None
    assert len(refused) == 1 and "not used" in refused[0].reason


@pytest.mark.parametrize("error", ERRORS)
def test_the_selector_selects_nothing_and_says_why(error: type[ModelError]) -> None:
    skills = [Skill("pay", "paying someone on venmo", "Read the payment back.")]
    picker = SkillPicker(skills, max_injected=2, budget_tokens=1000, selector=_failing(error))
    picked = picker.pick("Pay Sam back on venmo.", 1)
    assert picked.injected == () and "not used" in picked.note
