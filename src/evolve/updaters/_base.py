"""The recipe protocol and what every recipe shares.

A recipe *proposes*: it reads its state from the unit files it is given, asks the model, and
returns typed operations. It never writes a file or commits; the applier and the store do.
Because state is read from `memory/` at every step, a hand edit or a `git revert` changes the
very next episode.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from importlib import resources
from string import Template
from typing import Any, Protocol

from evolve._io import sha256_hex
from evolve._text import NotJson, ReplyError, fragment, loads_reply, shape_error
from evolve.envs import ApiCall
from evolve.llm import LLM, JsonSchema, Message
from evolve.memory import MemoryUnit
from evolve.ops import Op, Refusal
from evolve.redact import redact


@dataclass(frozen=True)
class EpisodeView:
    """What a recipe may see of an episode: never the rule provenance."""

    episode: int
    task_id: str
    instruction: str
    actions: str
    complaint: str
    accepted: bool


@dataclass
class RecipeContext:
    """Everything one `observe` call needs; recipes keep no state of their own."""

    units: list[MemoryUnit]
    scope: str
    episode: EpisodeView
    llm: LLM
    seed: int
    now: str
    max_memory_chars: int = 1200
    tools: tuple[str, ...] = ()
    _counter: int = 0

    def new_id(self, recipe: str) -> str:
        """An opaque id, deterministic for (scope, episode, seed, n): runs are reproducible."""
        self._counter += 1
        digest = sha256_hex(
            f"{self.scope}|{self.episode.episode}|{self.seed}|{recipe}|{self._counter}"
        )
        return f"{recipe}-{digest[:10]}"

    def new_unit(self, recipe: str, kind: str, text: str, **fields: Any) -> MemoryUnit:
        return MemoryUnit(
            id=self.new_id(recipe),
            recipe=recipe,
            kind=kind,
            status="active",
            scope=self.scope,
            created_episode=self.episode.episode,
            updated_episode=self.episode.episode,
            valid_from=self.now,
            source_task=self.episode.task_id,
            complaint=first_line(self.episode.complaint),
            text=text.strip(),
            **fields,
        )

    def touched(self, unit: MemoryUnit, **changes: Any) -> MemoryUnit:
        return unit.with_(updated_episode=self.episode.episode, **changes)

    def revoked(self, unit: MemoryUnit, by: str) -> MemoryUnit:
        return self.touched(
            unit,
            status="revoked",
            revoked_at=self.episode.episode,
            revoked_by=by,
            valid_to=self.now,
        )

    def mine(self, recipe: str) -> list[MemoryUnit]:
        return [u for u in self.units if u.recipe == recipe and u.scope == self.scope]


@dataclass
class Update:
    """What a recipe proposes for one episode."""

    ops: list[Op] = field(default_factory=list)
    refused: list[Refusal] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


class Recipe(Protocol):
    """An update recipe: one module each, registered by name."""

    name: str

    def render(self, units: Sequence[MemoryUnit]) -> str:
        """The `<memory>` text for this recipe's active units (a pure function of them)."""
        ...

    def observe(self, ctx: RecipeContext) -> Update:
        """Propose operations for a rejected episode."""
        ...

    def verify(self, units: Sequence[MemoryUnit], calls: Sequence[ApiCall]) -> list[str]:
        """Failures of enforced checks in an attempt (only TRACE enforces); [] to accept."""
        ...


def age(unit: MemoryUnit) -> tuple[int, str]:
    """Order of creation: the episode that created a unit, then its id."""
    return (unit.created_episode if unit.created_episode is not None else -1, unit.id)


def active_by_age(units: Sequence[MemoryUnit]) -> list[MemoryUnit]:
    """The active units, oldest first (the order most recipes render and evict in)."""
    return sorted((u for u in units if u.status == "active"), key=age)


def first_line(text: str) -> str:
    return next((line.strip() for line in text.splitlines() if line.strip()), "")


def load_prompt(name: str) -> Template:
    """A recipe's prompt template from the package's `prompts/` folder."""
    text = resources.files("evolve.updaters").joinpath("prompts", f"{name}.md").read_text("utf-8")
    return Template(text)


class BadReply(ValueError):
    pass


_FENCE = re.compile(r"```(?:json)?\s*(.*?)```", re.S)


def parse_json_reply(text: str, schema: JsonSchema | None = None) -> Any:
    """Parse a JSON reply, tolerating a code fence or prose around one object or array.

    The first candidate that is JSON decides: it is refused if it nests too deep, holds a
    non-finite number or an unsafe character (see :mod:`evolve._text`), or departs from the
    top level of `schema`. Secret-shaped strings in it are redacted.

    Raises:
        BadReply: with the reason, one clause.
    """
    candidates = [text.strip()]
    candidates += [m.strip() for m in _FENCE.findall(text)]
    for opener, closer in (("{", "}"), ("[", "]")):
        start, end = text.find(opener), text.rfind(closer)
        if 0 <= start < end:
            candidates.append(text[start : end + 1])
    first: NotJson | None = None
    for candidate in candidates:
        try:
            data = loads_reply(candidate)
        except NotJson as exc:
            first = first or exc
            continue
        except ReplyError as exc:
            raise BadReply(str(exc)) from None
        if schema is not None:
            error = shape_error(data, schema.schema)
            if error:
                raise BadReply(error)
        return redact(data)
    raise BadReply(str(first) if first else "the reply is not valid JSON")


def ask(
    ctx: RecipeContext, schema: JsonSchema, system: str, prompt: str, update: Update
) -> dict[str, Any] | None:
    """Ask the updater model; a reply that is not a JSON object is refused and logged."""
    completion = ctx.llm.complete(
        [Message("system", system), Message("user", prompt)],
        json_schema=schema,
        temperature=0.0,
        seed=ctx.seed,
    )
    try:
        data = parse_json_reply(completion.text, schema)
    except BadReply as exc:
        update.refused.append(Refusal(op="reply", what=fragment(completion.text), reason=str(exc)))
        return None
    if not isinstance(data, dict):
        update.refused.append(
            Refusal(
                op="reply", what=fragment(completion.text), reason="the reply is not a JSON object"
            )
        )
        return None
    return data


def items(data: dict[str, Any], key: str, update: Update) -> list[dict[str, Any]]:
    """The list under `key` of a reply; anything else is refused."""
    value = data.get(key, [])
    if not isinstance(value, list):
        update.refused.append(
            Refusal(op="reply", what=str(value)[:80], reason=f"'{key}' is not a list")
        )
        return []
    out = []
    for entry in value:
        if isinstance(entry, dict):
            out.append(entry)
        else:
            update.refused.append(
                Refusal(op="reply", what=str(entry)[:80], reason="not a JSON object")
            )
    return out


def strict_fields(
    entry: dict[str, Any], allowed: set[str], required: set[str], update: Update, op: str
) -> bool:
    """Refuse an entry with unknown or missing fields, or non-string values."""
    unknown = set(entry) - allowed
    missing = required - set(entry)
    if unknown or missing:
        what = json.dumps(entry)[:80]
        detail = f"unknown field(s) {sorted(unknown)}" if unknown else f"missing {sorted(missing)}"
        update.refused.append(Refusal(op=op, what=what, reason=detail))
        return False
    bad = [k for k in required if not isinstance(entry.get(k), str) or not str(entry[k]).strip()]
    if bad:
        update.refused.append(
            Refusal(op=op, what=json.dumps(entry)[:80], reason=f"empty or non-text {bad}")
        )
        return False
    return True


MAX_STATEMENT = 300
_SENTENCE = re.compile(r"(?<=[.!?])\s+")


def sentences(text: str) -> list[str]:
    return [s.strip() for s in _SENTENCE.split(text.strip()) if s.strip()]


def summarize_actions(calls: Sequence[ApiCall], limit: int = 40) -> str:
    """A redacted, one-line-per-call summary of what the agent did."""
    lines = []
    for call in list(calls)[:limit]:
        args = json.dumps(redact(dict(call.args)), sort_keys=True)
        if call.ok:
            result = json.dumps(redact(call.result), sort_keys=True)
            if len(result) > 300:
                result = result[:300] + "..."
            lines.append(f"{call.tool}({args}) -> {result}")
        else:
            lines.append(f"{call.tool}({args}) -> error: {redact(call.error)}")
    return "\n".join(lines)


RecipeFactory = Callable[[], Recipe]
