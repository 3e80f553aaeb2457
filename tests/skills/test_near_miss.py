"""`skills.near_misses`: a pass after retries, or with more than twice the median turns, teaches."""

from __future__ import annotations

import json
from collections.abc import Sequence
from types import SimpleNamespace
from typing import Any, cast

from evolve.llm import JsonSchema, Message, MockLLM
from evolve.train import SkillsBatches
from evolve.workspace import Workspace

TASK = SimpleNamespace(id="pay_back-1", instruction="Pay Sam back $5.00 on Venmo for tea.")


def _result(turns: int, attempt: int = 1) -> Any:
    record = SimpleNamespace(turns=[None] * turns, attempt=attempt)
    return SimpleNamespace(record=record, trace=SimpleNamespace(calls=[]))


def _batches(ws: Workspace, on: bool) -> tuple[SkillsBatches, MockLLM, list[str]]:
    cfg = ws.config
    skills = cfg.skills.model_copy(update={"near_misses": on})
    ws = Workspace(ws.root, config=cfg.model_copy(update={"skills": skills}))
    asked: list[str] = []

    def answer(messages: Sequence[Message], schema: JsonSchema | None) -> str:
        asked.append(messages[-1].content)
        return json.dumps({"lesson": "Search before writing.", "trigger": "a write"})

    evolver = MockLLM(lambda m, s: "{}")
    batches = SkillsBatches(ws, "alex/skills/0/instance", "alex", evolver, ("venmo__x",))
    return batches, MockLLM(answer), asked


def test_near_misses_reflect_only_behind_the_flag(workspace: Workspace) -> None:
    for on in (False, True):
        batches, llm, asked = _batches(workspace, on)
        for k, (turns, attempt) in enumerate([(4, 1), (4, 1), (5, 1), (11, 1), (4, 2)]):
            batches.near_miss(k, cast(Any, TASK), _result(turns, attempt), llm, seed=k)
        if not on:
            assert asked == [] and batches.candidates == []
            continue
        assert [c.episode for c in batches.candidates] == [3, 4]  # 11 > 2 x 4; attempt 2
        assert "took 11 turns (the median is 4)" in asked[0]
        assert "only on attempt 2" in asked[1]
