"""The workspace's secrets at the model seam: what each role is sent, what its replies hold.

Every role's model is wrapped (`make_role_llm`) with the workspace's one redactor (the values
of `redact:` in evolve.yaml, the variables it names, and the model API keys, beside the
built-in secret shapes; see `evolve.redact`):

- **the agent** is sent its task turn as it is (the task's instruction, the world's results,
  its own earlier replies: it needs a task's arguments to do the task), while its system
  prompt (prompt files, memory, skills, statistics: text read from workspace files) has every
  configured secret replaced by value. Its replies reach the world as they are; what an
  episode records of them is redacted there (`evolve.episode`).
- **every other role** (updater, reflector, evolver, selector) is sent every message redacted,
  and its reply is redacted before anyone parses it: a secret a model echoes never reaches a
  unit, a commit, a record or a prompt file.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from evolve.llm._types import LLM, Completion, JsonSchema, Message
from evolve.redact import Redactor, hide_in

AGENT = "agent"


def redact_reply(text: str, redactor: Redactor, *, shapes: bool = True) -> str:
    """`text` with secrets hidden (by value, and by shape unless `shapes` is False); a JSON
    reply is redacted value by value (so a secret that JSON escapes is found too, and the
    reply stays valid JSON). A reply with nothing to hide comes back as it was, byte for
    byte."""
    hide = redactor.text if shapes else redactor.values_text
    try:
        data = json.loads(text)
    except (ValueError, RecursionError):
        return hide(text)
    if not isinstance(data, dict | list):
        return hide(text)
    hidden = redactor(data) if shapes else hide_in(data, redactor.values)
    return text if hidden == data else json.dumps(hidden, ensure_ascii=False)


class RedactingLLM:
    """A role's model behind the workspace's redactor (see the module docstring).

    Args:
        inner: the role's model (its cache and price included).
        redactor: the workspace's redactor.
        role: the role it plays; "agent" keeps its task turn and its replies as they are.
    """

    def __init__(self, inner: LLM, redactor: Redactor, role: str) -> None:
        self.inner = inner
        self.name = inner.name
        self.redactor = redactor
        self.role = role

    def __getattr__(self, name: str) -> Any:  # the wrapped model's extras (hits, bounds)
        return getattr(self.__dict__["inner"], name)

    def sent(self, messages: Sequence[Message]) -> list[Message]:
        """What the model is sent of `messages`."""
        if self.role == AGENT:
            return [
                replace(m, content=self.redactor.values_text(m.content))
                if m.role == "system"
                else m
                for m in messages
            ]
        return [replace(m, content=self.redactor.text(m.content)) for m in messages]

    def complete(
        self,
        messages: Sequence[Message],
        *,
        json_schema: JsonSchema | None = None,
        temperature: float = 0.0,
        seed: int | None = None,
        max_tokens: int | None = None,
    ) -> Completion:
        completion = self.inner.complete(
            self.sent(messages),
            json_schema=json_schema,
            temperature=temperature,
            seed=seed,
            max_tokens=max_tokens,
        )
        if self.role == AGENT:
            return completion
        return replace(completion, text=redact_reply(completion.text, self.redactor))
