"""An agent model that does nothing: it ends every task at once, calling no app (a model
registered by import path, `idle_agent:factory`, as a user names their own)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from evolve.llm import Completion, JsonSchema, Message, Usage


class IdleAgent:
    name = "idle"

    def complete(
        self,
        messages: Sequence[Message],
        *,
        json_schema: JsonSchema | None = None,
        temperature: float = 0.0,
        seed: int | None = None,
        max_tokens: int | None = None,
    ) -> Completion:
        reply = {"tool": "supervisor__complete_task", "arguments": {}}
        return Completion(json.dumps(reply), Usage(10, 5))


def factory(model: str, /, *, env: Any = None, **options: Any) -> IdleAgent:
    return IdleAgent()
