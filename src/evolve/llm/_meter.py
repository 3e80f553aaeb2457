"""Every token counted: usage and cost per role (agent, updater, reflector, evolver, selector).

A command that runs models opens one :class:`Meter` (``with metering() as meter:``); every
role model built while it is open (`make_role_llm`) counts its replies into it, whichever
thread calls it, and a model handed in from outside is counted through :meth:`Meter.wrap`.
`train`, `evolve` and `run` put the meter's figures in their records, their `--json` output
and the report. A reply served from the request cache counts its tokens (the work the reply
stands for) at no cost, as :class:`~evolve.llm._cost.PricedLLM` prices it.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

from evolve.llm._types import LLM, Completion, JsonSchema, Message

# The order roles are shown in.
ROLE_ORDER = ("agent", "updater", "reflector", "evolver", "selector")


@dataclass(frozen=True)
class RoleUsage:
    """What one role's requests used: requests, tokens in and out, replies from the request
    cache, and US dollars."""

    requests: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cached: int = 0
    cost: float = 0.0

    @property
    def tokens(self) -> int:
        return self.input_tokens + self.output_tokens

    def __add__(self, other: RoleUsage) -> RoleUsage:
        return RoleUsage(
            self.requests + other.requests,
            self.input_tokens + other.input_tokens,
            self.output_tokens + other.output_tokens,
            self.cached + other.cached,
            self.cost + other.cost,
        )

    def __sub__(self, other: RoleUsage) -> RoleUsage:
        return RoleUsage(
            self.requests - other.requests,
            self.input_tokens - other.input_tokens,
            self.output_tokens - other.output_tokens,
            self.cached - other.cached,
            self.cost - other.cost,
        )

    def as_json(self) -> dict[str, Any]:
        return {
            "requests": self.requests,
            "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens,
            "tokens": self.tokens,
            "cached": self.cached,
            "cost": round(self.cost, 8),
        }


Usages = Mapping[str, RoleUsage]


def usage_json(usage: Usages) -> dict[str, dict[str, Any]]:
    """`{role: {requests, input_tokens, output_tokens, tokens, cached, cost}}`, roles in
    their usual order."""
    return {role: usage[role].as_json() for role in _ordered(usage)}


def usage_line(usage: Usages) -> str:
    """One line for a person: `tokens: agent 1,234, updater 56 (3 requests cached); cost
    $0.0012`."""
    if not usage:
        return "tokens: none (no model request)"
    parts = [f"{role} {usage[role].tokens:,}" for role in _ordered(usage)]
    cached = sum(u.cached for u in usage.values())
    tail = f" ({cached} replies from the request cache)" if cached else ""
    return f"tokens: {', '.join(parts)}{tail}; cost ${total(usage).cost:.4f}"


def total(usage: Usages) -> RoleUsage:
    out = RoleUsage()
    for u in usage.values():
        out = out + u
    return out


def difference(after: Usages, before: Usages) -> dict[str, RoleUsage]:
    """What was used between two snapshots (roles that used nothing left out)."""
    out = {role: u - before.get(role, RoleUsage()) for role, u in after.items()}
    return {role: u for role, u in out.items() if u.requests}


def _ordered(usage: Usages) -> list[str]:
    known = [r for r in ROLE_ORDER if r in usage]
    return known + sorted(r for r in usage if r not in ROLE_ORDER)


class Meter:
    """Usage per role, added to from any thread."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._usage: dict[str, RoleUsage] = {}

    def record(self, role: str, reply: Completion) -> None:
        u = reply.usage
        step = RoleUsage(1, u.input_tokens, u.output_tokens, 1 if reply.cached else 0, u.cost)
        with self._lock:
            self._usage[role] = self._usage.get(role, RoleUsage()) + step

    def snapshot(self) -> dict[str, RoleUsage]:
        with self._lock:
            return dict(self._usage)

    def wrap(self, llm: LLM, role: str) -> LLM:
        """`llm`, counted under `role` (as it is when it already is)."""
        if isinstance(llm, MeteredLLM) and llm.meter is self:
            return llm
        return MeteredLLM(llm, self, role)


class MeteredLLM:
    """A model whose every reply is counted into a meter under its role."""

    def __init__(self, inner: LLM, meter: Meter, role: str) -> None:
        self.inner = inner
        self.meter = meter
        self.role = role
        self.name = inner.name

    def complete(
        self,
        messages: Sequence[Message],
        *,
        json_schema: JsonSchema | None = None,
        temperature: float = 0.0,
        seed: int | None = None,
        max_tokens: int | None = None,
    ) -> Completion:
        reply = self.inner.complete(
            messages,
            json_schema=json_schema,
            temperature=temperature,
            seed=seed,
            max_tokens=max_tokens,
        )
        self.meter.record(self.role, reply)
        return reply

    def __getattr__(self, name: str) -> Any:  # the backend's own attributes (sim's env, ...)
        if name in ("inner", "meter", "role") or name.startswith("__"):
            raise AttributeError(name)  # (not set yet: a copy or an unpickling in progress)
        return getattr(self.inner, name)


_current: ContextVar[Meter | None] = ContextVar("evolve_meter", default=None)


def current_meter() -> Meter | None:
    """The meter of the command running in this context, if one is open."""
    return _current.get()


@contextmanager
def metering(meter: Meter | None = None) -> Iterator[Meter]:
    """Open `meter` (a new one by default) for the models built inside the block; an
    enclosing meter stays open for the block when none is given (a generation's training
    counts into the generation's meter)."""
    outer = _current.get()
    use = meter or outer or Meter()
    token = _current.set(use)
    try:
        yield use
    finally:
        _current.reset(token)
