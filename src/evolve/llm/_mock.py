"""`mock`: scripted replies for tests."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field

from evolve.errors import ModelError
from evolve.llm._types import Completion, JsonSchema, Message, Usage, estimate_tokens

Responder = Callable[[Sequence[Message], JsonSchema | None], str]


@dataclass(frozen=True)
class Call:
    """One request the mock received, kept for assertions."""

    messages: tuple[Message, ...]
    json_schema: JsonSchema | None
    temperature: float
    seed: int | None


@dataclass
class MockLLM:
    """Replies from a list (in order) or from a function of the request.

    Every request is recorded in :attr:`calls`, so a test can assert what a component asked.
    """

    script: Iterable[str] | Responder = ()
    name: str = "mock"
    calls: list[Call] = field(default_factory=list)

    def __post_init__(self) -> None:
        self._responder: Responder | None = None
        self._queue: list[str] = []
        if callable(self.script):
            self._responder = self.script
        else:
            self._queue = list(self.script)

    def complete(
        self,
        messages: Sequence[Message],
        *,
        json_schema: JsonSchema | None = None,
        temperature: float = 0.0,
        seed: int | None = None,
        max_tokens: int | None = None,
    ) -> Completion:
        self.calls.append(Call(tuple(messages), json_schema, temperature, seed))
        if self._responder is not None:
            text = self._responder(messages, json_schema)
        elif self._queue:
            text = self._queue.pop(0)
        else:
            raise ModelError("the mock model has no scripted replies left; script more replies.")
        prompt = sum(estimate_tokens(m.content) for m in messages)
        return Completion(text=text, usage=Usage(prompt, estimate_tokens(text)), model=self.name)
