"""`reflexion`: one or two sentences per rejected episode; the last three are kept.

The prompt shows the kept reflections with their ids; a reflection may name those it makes
wrong or out of date (`replaces`), which are revoked in its favour whatever their wording,
and `retire` revokes reflections with no successor. With nothing named, the window of three
is the only way an old reflection leaves (its design in the seed). The window's evict makes
room for the new reflection (`room_for`): if the applier refuses the reflection (a
tombstone, review), the old one stays. A reflection already in memory word for word is
refused, not kept twice.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

from evolve._format._render import render_plain
from evolve.envs import ApiCall
from evolve.llm import JsonSchema
from evolve.memory import MemoryUnit
from evolve.memory._similarity import normalize
from evolve.ops import Op, Refusal
from evolve.updaters._base import (
    MAX_STATEMENT,
    RecipeContext,
    Update,
    active_by_age,
    ask,
    evictions,
    load_prompt,
    named_units,
    recipes,
    sentences,
)
from evolve.workspace import EvolveConfig, RecipeCaps

SCHEMA = JsonSchema(
    "reflection",
    {
        "type": "object",
        "properties": {
            "reflection": {"type": "string"},
            "replaces": {"type": "array", "items": {"type": "string"}},
            "retire": {"type": "array", "items": {"type": "string"}},
        },
        "required": ["reflection"],
    },
)


@recipes.register("reflexion")
class ReflexionRecipe:
    name = "reflexion"
    keep: ClassVar[int] = 3

    evict_rule: ClassVar[str] = f"keep the last {keep}: the oldest goes first"

    def default_caps(self, config: EvolveConfig) -> RecipeCaps:
        return RecipeCaps(units=self.keep, chars=MAX_STATEMENT)

    def evict_order(self, units: Sequence[MemoryUnit]) -> list[MemoryUnit]:
        """The window: the oldest-learned reflection leaves first."""
        return active_by_age(units)

    def render(self, units: Sequence[MemoryUnit]) -> str:
        return render_plain(units)

    def verify(self, units: Sequence[MemoryUnit], calls: Sequence[ApiCall]) -> list[str]:
        return []

    def observe(self, ctx: RecipeContext) -> Update:
        update = Update()
        active = active_by_age(ctx.mine(self.name))
        prompt = load_prompt("reflexion").safe_substitute(
            instruction=ctx.episode.instruction,
            actions=ctx.episode.actions,
            complaint=ctx.episode.complaint,
            reflections=self.render(active) or "(none)",
        )
        data = ask(ctx, SCHEMA, load_prompt("system").template, prompt, update)
        if data is None:
            return update
        text = data.get("reflection")
        if not isinstance(text, str) or not text.strip():
            update.refused.append(
                Refusal(op="add", what=str(text)[:80], reason="'reflection' must be text")
            )
            return update
        parts = sentences(text)
        if len(parts) > 2:
            update.notes.append(f"reflection cut from {len(parts)} sentences to two")
        text = " ".join(parts[:2])[:MAX_STATEMENT]
        same = next((u for u in ctx.mine(self.name) if _live_copy(u, text)), None)
        if same is not None:
            update.refused.append(
                Refusal(
                    op="add",
                    what=text[:80],
                    reason=f"the same reflection is already in memory ({same.status}): {same.id}",
                )
            )
            return update
        shown = {u.id: u for u in active}
        retired = named_units(data, shown, update, "retire", "retire") or []
        named = named_units(data, shown, update, "add") or []
        ops: list[Op] = []
        for old in retired:
            if old in named:
                continue
            ops.append(Op(op="revoke", unit=ctx.revoked(old, by=None)))
            update.notes.append(f"revoke {old.id}: retired by the updater")
        unit = ctx.new_unit(
            self.name, "reflection", text, supersedes=named[0].id if named else None
        )
        for old in named:
            ops.append(Op(op="revoke", unit=ctx.revoked(old, by=unit.id)))
            update.notes.append(f"revoke {old.id}: replaced by {unit.id}")
        ops.append(Op(op="add", unit=unit))
        gone = {u.id for u in [*retired, *named]}
        active = [u for u in active if u.id not in gone]
        victims = active[: max(0, len(active) + 1 - self.keep)]
        update.notes += [f"keep last {self.keep}: evicted {v.id}" for v in victims]
        ops += evictions(victims, ops, f"keep last {self.keep}")
        update.ops = ops
        return update


def _live_copy(unit: MemoryUnit, text: str) -> bool:
    """Whether `unit` already says `text` to the agent, or will once reviewed."""
    return unit.status in ("active", "pending") and normalize(unit.text) == normalize(text)
