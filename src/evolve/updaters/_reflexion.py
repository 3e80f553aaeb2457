"""`reflexion`: one or two sentences per rejected episode; the last three are kept (seed 000 §4)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

from evolve.envs import ApiCall
from evolve.llm import JsonSchema
from evolve.memory import MemoryUnit
from evolve.ops import Op, Refusal
from evolve.updaters._base import (
    MAX_STATEMENT,
    RecipeContext,
    Update,
    active_by_age,
    ask,
    load_prompt,
    sentences,
)

SCHEMA = JsonSchema(
    "reflection",
    {
        "type": "object",
        "properties": {"reflection": {"type": "string"}},
        "required": ["reflection"],
    },
)


class ReflexionRecipe:
    name = "reflexion"
    keep: ClassVar[int] = 3

    def render(self, units: Sequence[MemoryUnit]) -> str:
        return "\n".join(f"- {u.text}" for u in active_by_age(units))

    def verify(self, units: Sequence[MemoryUnit], calls: Sequence[ApiCall]) -> list[str]:
        return []

    def observe(self, ctx: RecipeContext) -> Update:
        update = Update()
        prompt = load_prompt("reflexion").safe_substitute(
            instruction=ctx.episode.instruction,
            actions=ctx.episode.actions,
            complaint=ctx.episode.complaint,
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
        unit = ctx.new_unit(self.name, "reflection", text)
        ops = [Op(op="add", unit=unit)]
        active = active_by_age(ctx.mine(self.name))
        for victim in active[: max(0, len(active) + 1 - self.keep)]:
            ops.append(Op(op="evict", unit=victim))
            update.notes.append(f"keep last {self.keep}: evicted {victim.id}")
        update.ops = ops
        return update
