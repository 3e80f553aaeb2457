"""The recipe protocol and what every recipe shares.

A recipe *proposes*: it reads its state from the unit files it is given, asks the model, and
returns typed operations. It never writes a file or commits; the applier and the store do.
Because state is read from `memory/` at every step, a hand edit or a `git revert` changes the
very next episode.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from string import Template
from typing import TYPE_CHECKING, Any, Protocol

from evolve._format._render import active_by_age as _active_by_age
from evolve._format._units import content_id
from evolve._io import package_text
from evolve._lazy import pattern
from evolve._registry import Registry
from evolve._text import fragment, is_placeholder
from evolve.envs import ApiCall
from evolve.llm import LLM, JsonSchema, Message, ReplyMalformed
from evolve.memory import MemoryUnit, learned_key, learned_time
from evolve.memory._similarity import trigram_cosine
from evolve.ops import Op, Refusal
from evolve.ops._reply import BadReply as BadReply
from evolve.ops._reply import items as items
from evolve.ops._reply import parse_json_reply as parse_json_reply
from evolve.redact import redact

if TYPE_CHECKING:
    from evolve.workspace import EvolveConfig, RecipeCaps

_TICK = timedelta(microseconds=1)
# Attempts an episode's agent gets: the first, and the retries a recipe's enforced checks
# (TRACE's) ask for.
MAX_ATTEMPTS = 3


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
    _last: datetime | None = None

    def stamp(self) -> str:
        """A `valid_from` for a unit that becomes active now: aware ISO with microseconds,
        later than every unit already in memory and than any stamp of this episode.

        So units order by when they were learned even when the clock gives one value to a
        whole episode (or to several episodes in one second), and two units of one episode
        keep the order in which the recipe made them.
        """
        try:
            now = datetime.fromisoformat(self.now.replace("Z", "+00:00"))
        except ValueError:
            now = datetime.now(UTC)
        if now.tzinfo is None:
            now = now.replace(tzinfo=UTC)
        floor = max((learned_time(u) for u in self.units), default=None)
        if self._last is not None:
            floor = self._last if floor is None else max(floor, self._last)
        when = now if floor is None or now > floor else floor + _TICK
        self._last = when
        return when.isoformat(timespec="microseconds")

    def source_line(self, text: str) -> str:
        """The complaint line a statement came from: the line most like it (first on ties).

        A unit's provenance is the complaint about the rule it is about, not the episode's
        first complaint line.
        """
        lines = [ln.strip().lstrip("-*• ").strip() for ln in self.episode.complaint.splitlines()]
        lines = [ln for ln in lines if ln]
        if not lines:
            return ""
        best = max(range(len(lines)), key=lambda i: (trigram_cosine(lines[i], text), -i))
        return lines[best]

    def new_id(self, recipe: str, text: str) -> str:
        """An opaque id, deterministic for (scope, episode, seed, n) and the unit's text: runs
        are reproducible, and two branches of one stream never give one id to two texts
        (`evolve._format._units.content_id`)."""
        self._counter += 1
        origin = f"{self.scope}|{self.episode.episode}|{self.seed}|{recipe}|{self._counter}"
        return content_id(recipe, origin, text)

    def new_unit(
        self, recipe: str, kind: str, text: str, complaint: str | None = None, **fields: Any
    ) -> MemoryUnit:
        return MemoryUnit(
            id=self.new_id(recipe, text),
            recipe=recipe,
            kind=kind,
            status="active",
            scope=self.scope,
            created_episode=self.episode.episode,
            updated_episode=self.episode.episode,
            valid_from=self.stamp(),
            source_task=self.episode.task_id,
            complaint=complaint if complaint is not None else self.source_line(text),
            text=text.strip(),
            **fields,
        )

    def touched(self, unit: MemoryUnit, **changes: Any) -> MemoryUnit:
        return unit.with_(updated_episode=self.episode.episode, **changes)

    def counted(self, unit: MemoryUnit, **counters: Any) -> MemoryUnit:
        """`unit` with moved counters only (a `count` op: the unit file is not rewritten)."""
        return unit.with_(**counters)

    def reactivated(self, unit: MemoryUnit) -> MemoryUnit:
        """A revoked unit made active again: it counts as learned now (a new valid_from)."""
        return self.touched(
            unit,
            status="active",
            revoked_at=None,
            revoked_by=None,
            valid_to=None,
            valid_from=self.stamp(),
        )

    def revoked(self, unit: MemoryUnit, by: str | None) -> MemoryUnit:
        """`unit` revoked now; `by` names the unit that replaced it (None: retired)."""
        return self.touched(
            unit,
            status="revoked",
            revoked_at=self.episode.episode,
            revoked_by=by,
            valid_to=self.stamp(),
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
    """An update recipe: one module each, registered by name (`@recipes.register("ace")`).

    A recipe may also say the limits the applier holds its units to, with a method
    ``default_caps(self, config: EvolveConfig) -> RecipeCaps`` (none without it); evolve.yaml's
    `caps:` is laid over them (:func:`recipe_caps`).
    """

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


RecipeFactory = Callable[[], Recipe]

# Built-ins register where they are defined; `evolve._builtins` names this package, so a new
# recipe module here is found without editing a list.
recipes: Registry[RecipeFactory] = Registry("recipe", "evolve.recipes")


def recipe_caps(config: EvolveConfig, name: str) -> RecipeCaps:
    """The caps the applier enforces on the units of recipe `name`: the recipe's own
    (`default_caps`; none for hand notes or a recipe that is not installed) with evolve.yaml's
    `caps:` laid over them."""
    factory = recipes.find(name)
    own = getattr(factory(), "default_caps", None) if factory is not None else None
    return config.caps_for(name, own(config) if own is not None else None)


EvictOrder = Callable[[Sequence[MemoryUnit]], list[MemoryUnit]]


def recipe_evict_rule(name: str) -> tuple[EvictOrder, str] | None:
    """How recipe `name` makes room under its caps: the order in which it evicts its active
    units (first to go first) and that rule in words, from its optional ``evict_order(units)``
    and ``evict_rule``; None for a recipe that never evicts (or is not installed).

    Writers that bring units back (a revert, a review approval) evict by it, so a cap holds
    after them as it holds after training (`evolve.applier._caps`)."""
    factory = recipes.find(name)
    recipe = factory() if factory is not None else None
    order = getattr(recipe, "evict_order", None)
    if order is None:
        return None
    return order, str(getattr(recipe, "evict_rule", "the recipe's eviction order"))


def evictions(victims: Sequence[MemoryUnit], ops: Sequence[Op], rule: str) -> list[Op]:
    """Evict ops for a recipe's cap `victims` (first to go first), each tied to a new unit of
    `ops` that it makes room for (`Op.room_for`: the applier applies the two together or
    neither). New units are the adds and reactivates that replace nothing (a replacement
    takes its old unit's place); victims beyond them bring memory that was already over the
    cap back to it, and stand alone. Every evict says why (`reason`, from `rule`)."""
    if not victims:
        return []
    replaced = {op.unit.revoked_by for op in ops if op.op == "revoke" and op.unit.revoked_by}
    grown = [op.id for op in ops if op.op in ("add", "reactivate") and op.id not in replaced]
    rooms: list[str | None] = [*([None] * len(victims)), *grown][-len(victims) :]
    out = []
    for victim, room in zip(victims, rooms, strict=True):
        why = f"makes room for {room}" if room else "memory held more than the cap"
        out.append(Op(op="evict", unit=victim, reason=f"{rule}: {why}", room_for=room))
    return out


def age(unit: MemoryUnit) -> tuple[datetime, str]:
    """Order of learning: when a unit became active (`valid_from`), then its id.

    Never the per-stream episode counter, which restarts in every stream.
    """
    return learned_key(unit)


def active_by_age(units: Sequence[MemoryUnit]) -> list[MemoryUnit]:
    """The active units, oldest-learned first (the order recipes render and evict in)."""
    return _active_by_age(units)


def named_units(
    entry: Mapping[str, Any],
    known: Mapping[str, MemoryUnit],
    update: Update,
    op: str,
    field_name: str = "replaces",
    keys: Mapping[str, str] | None = None,
) -> list[MemoryUnit] | None:
    """The existing units a proposal names under `field_name` (ids, or keys via `keys`).

    This is how an updater supersedes or retires a unit whatever the wording: it names what
    the prompt showed it. None (and a refusal) when the field is malformed or names a unit
    that is not among `known` (the active units the prompt showed).
    """
    raw = entry.get(field_name)
    if raw is None:
        return []
    if isinstance(raw, str):
        raw = [raw]
    if not isinstance(raw, list) or not all(isinstance(r, str) for r in raw):
        update.refused.append(
            Refusal(op=op, what=str(raw)[:80], reason=f"'{field_name}' must be a list of ids")
        )
        return None
    out: list[MemoryUnit] = []
    for ref in raw:
        ref = ref.strip().strip("[]")
        if copied_name(ref):  # the schema's own word, not a name: dropped, the entry kept
            reason = f"'{field_name}' holds {ref[:40]!r}, a placeholder, not an id: ignored"
            update.refused.append(Refusal(op=op, what=ref[:80], reason=reason))
            continue
        ident = ref if ref in known else (keys or {}).get(ref)
        if ident is None or ident not in known:
            update.refused.append(
                Refusal(op=op, what=ref[:80], reason=f"'{field_name}' names no active unit shown")
            )
            return None
        if known[ident] not in out:
            out.append(known[ident])
    return out


def copied_name(ref: str) -> bool:
    """Whether a name in a reply is a copied placeholder (`<bullet id>`, `...`, `BULLET`) rather
    than an id: ids are never in capitals."""
    return is_placeholder(ref) or (ref.isupper() and ref.replace("_", "").isalpha())


def load_prompt(name: str) -> Template:
    """A recipe's prompt template from the package's `prompts/` folder."""
    text = package_text("evolve.updaters", "prompts", f"{name}.md")
    return Template(text)


def ask(
    ctx: RecipeContext, schema: JsonSchema, system: str, prompt: str, update: Update
) -> dict[str, Any] | None:
    """Ask the updater model; a reply that is not a JSON object is refused and logged, as is
    an answer the backend could not use at all (:class:`evolve.llm.ReplyMalformed`)."""
    try:
        completion = ctx.llm.complete(
            [Message("system", system), Message("user", prompt)],
            json_schema=schema,
            temperature=0.0,
            seed=ctx.seed,
        )
    except ReplyMalformed as exc:
        update.refused.append(Refusal(op="reply", what="", reason=fragment(str(exc), 300)))
        return None
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
_SENTENCE = pattern(r"(?<=[.!?])\s+")


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
