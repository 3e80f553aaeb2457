"""What model requests cost: token counts times the prices in `evolve.yaml`."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

from evolve.llm._types import LLM, Completion, JsonSchema, Message, Usage

PER = 1_000_000  # prices are quoted per million tokens


@dataclass(frozen=True)
class Rate:
    """US dollars per million input and output tokens."""

    input: float
    output: float

    def cost(self, usage: Usage) -> float:
        return (usage.input_tokens * self.input + usage.output_tokens * self.output) / PER


def find_rate(name: str, prices: Mapping[str, Rate]) -> Rate | None:
    """The price of backend `name` ("openai/gpt-4o-mini"), listed by that name or by the
    model alone ("gpt-4o-mini")."""
    if name in prices:
        return prices[name]
    _, _, model = name.partition("/")
    return prices.get(model) if model else None


class PricedLLM:
    """Wraps a backend so each reply's usage carries its cost in dollars.

    A reply served from the request cache cost nothing: its tokens are kept, its cost is 0.
    """

    def __init__(self, inner: LLM, rate: Rate) -> None:
        self.inner = inner
        self.name = inner.name
        self.rate = rate

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
            messages,
            json_schema=json_schema,
            temperature=temperature,
            seed=seed,
            max_tokens=max_tokens,
        )
        cost = 0.0 if completion.cached else self.rate.cost(completion.usage)
        return replace(completion, usage=replace(completion.usage, cost=cost))
