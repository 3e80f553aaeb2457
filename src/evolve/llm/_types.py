"""The one narrow model protocol every component uses."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, runtime_checkable

Role = Literal["system", "user", "assistant"]


@dataclass(frozen=True)
class Message:
    """One chat message."""

    role: Role
    content: str


@dataclass(frozen=True)
class Usage:
    """Token counts as the provider reported them (or estimated, for offline backends)."""

    input_tokens: int = 0
    output_tokens: int = 0
    cost: float = 0.0
    """US dollars, from the prices in `evolve.yaml` (0 when the model has no price)."""

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            self.input_tokens + other.input_tokens,
            self.output_tokens + other.output_tokens,
            self.cost + other.cost,
        )

    @property
    def total(self) -> int:
        return self.input_tokens + self.output_tokens


@dataclass(frozen=True)
class JsonSchema:
    """A JSON schema the reply must follow; `name` also tells offline backends the role."""

    name: str
    schema: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Completion:
    """A model's reply: its text and what it cost.

    `finish_reason` is the provider's word for why the reply ended ("stop", "length",
    "tool_use", ...), empty where unknown; `cached` is True when the reply came from the
    request cache rather than the model.
    """

    text: str
    usage: Usage = Usage()
    model: str = ""
    finish_reason: str = ""
    cached: bool = False


@runtime_checkable
class LLM(Protocol):
    """A chat model. Implementations are selected by name with :func:`evolve.llm.make_llm`."""

    name: str

    def complete(
        self,
        messages: Sequence[Message],
        *,
        json_schema: JsonSchema | None = None,
        temperature: float = 0.0,
        seed: int | None = None,
        max_tokens: int | None = None,
    ) -> Completion:
        """Return the model's reply to `messages`.

        Args:
            messages: the conversation, system message first.
            json_schema: ask for a JSON reply of this schema where the provider supports it.
            temperature: 0 for evaluation.
            seed: a sampling seed where the provider supports one; offline backends key their
                randomness on it.
            max_tokens: an upper bound on the reply's length.

        Raises:
            ModelError: when the backend cannot produce a reply (after its retries).
        """
        ...


def estimate_tokens(text: str) -> int:
    """A rough count (4 characters a token) for backends that report none."""
    return max(1, (len(text) + 3) // 4) if text else 0
