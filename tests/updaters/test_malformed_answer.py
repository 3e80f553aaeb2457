"""An updater answer the backend could not use (issue 28: a usage count that is not one, a
body that does not decode) is a logged refusal of that episode, and training goes on."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from evolve.llm import MockLLM, ReplyMalformed
from evolve.train import train
from evolve.workspace import Workspace

DONE = json.dumps({"tool": "supervisor__complete_task", "arguments": {}})
GOOD = json.dumps({"operations": [{"op": "add", "text": "Send payments as private."}]})


def test_a_malformed_updater_answer_is_a_logged_refusal(workspace: Workspace) -> None:
    calls = iter(range(100))

    def updater(_messages: Any, _schema: Any) -> str:
        if next(calls) == 0:
            raise ReplyMalformed(
                "OpenAI answered with usage.prompt_tokens inf, not a count of tokens (a finite "
                "non-negative integer); the reply was not used."
            )
        return GOOD

    report = train(
        workspace, episodes=2, agent_llm=MockLLM(lambda m, s: DONE), updater_llm=MockLLM(updater)
    )
    first, second = report.outcomes
    assert first.commit is None and "usage.prompt_tokens inf" in first.refused[0]
    assert second.commit is not None
    runs = Path(workspace.runs_dir).glob("train-*.jsonl")
    records = [json.loads(x) for p in runs for x in p.read_text("utf-8").splitlines()]
    assert "usage.prompt_tokens inf" in records[0]["refused"][0]
