"""`topl`: the top L assertions of a pool, ranked by a Beta posterior (seed 000 §2, Q1).

Each complaint line is induced into an assertion. Support raises `alpha` of the matching pool
entry (or adds a new one at Beta(1, 1) plus this support); an induced assertion that is
similar to a pool entry but contradicts it raises that entry's `beta`. So both parameters
move, and the posterior mean is not a monotone count of complaints.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

from evolve.envs import ApiCall
from evolve.llm import JsonSchema
from evolve.memory import MemoryUnit
from evolve.memory._similarity import conflicts, normalize, trigram_cosine
from evolve.ops import Op, Refusal
from evolve.updaters._base import MAX_STATEMENT, RecipeContext, Update, ask, load_prompt

SCHEMA = JsonSchema(
    "assertions",
    {
        "type": "object",
        "properties": {"assertions": {"type": "array", "items": {"type": "string"}}},
        "required": ["assertions"],
    },
)


def posterior_mean(u: MemoryUnit) -> float:
    a, b = u.alpha or 1.0, u.beta or 1.0
    return a / (a + b)


class TopLRecipe:
    name = "topl"
    top: ClassVar[int] = 8
    pool_cap: ClassVar[int] = 60
    threshold: ClassVar[float] = 0.7

    def ranked(self, units: Sequence[MemoryUnit]) -> list[MemoryUnit]:
        active = [u for u in units if u.status == "active"]
        return sorted(
            active,
            key=lambda u: (-posterior_mean(u), -(u.alpha or 0), u.created_episode or 0, u.id),
        )

    def render(self, units: Sequence[MemoryUnit]) -> str:
        return "\n".join(f"- {u.text}" for u in self.ranked(units)[: self.top])

    def verify(self, units: Sequence[MemoryUnit], calls: Sequence[ApiCall]) -> list[str]:
        return []

    def observe(self, ctx: RecipeContext) -> Update:
        update = Update()
        prompt = load_prompt("topl").safe_substitute(
            instruction=ctx.episode.instruction, complaint=ctx.episode.complaint
        )
        data = ask(ctx, SCHEMA, load_prompt("system").template, prompt, update)
        if data is None:
            return update
        raw = data.get("assertions", [])
        if not isinstance(raw, list):
            update.refused.append(
                Refusal(op="add", what=str(raw)[:80], reason="'assertions' is not a list")
            )
            return update
        pool = {u.id: u for u in ctx.mine(self.name) if u.status == "active"}
        changed: dict[str, tuple[str, MemoryUnit]] = {}
        for text in raw:
            if not isinstance(text, str) or not text.strip() or len(text) > MAX_STATEMENT:
                update.refused.append(
                    Refusal(
                        op="add",
                        what=str(text)[:80],
                        reason="an assertion must be 1-300 characters of text",
                    )
                )
                continue
            text = text.strip()
            support = next((u for u in pool.values() if normalize(u.text) == normalize(text)), None)
            for u in list(pool.values()):
                if (
                    u is support
                    or trigram_cosine(text, u.text) < self.threshold
                    or not conflicts(text, u.text)
                ):
                    continue
                pool[u.id] = ctx.touched(u, beta=(u.beta or 1.0) + 1.0)
                changed[u.id] = (changed.get(u.id, ("tag",))[0], pool[u.id])
                update.notes.append(f"beta+1 for {u.id}: contradicted by {text[:50]!r}")
            if support is not None:
                support = pool[support.id]
                pool[support.id] = ctx.touched(support, alpha=(support.alpha or 1.0) + 1.0)
                changed[support.id] = (changed.get(support.id, ("tag",))[0], pool[support.id])
                continue
            unit = ctx.new_unit(self.name, "assertion", text, alpha=2.0, beta=1.0)
            pool[unit.id] = unit
            changed[unit.id] = ("add", unit)
        ranked = self.ranked(list(pool.values()))
        for victim in ranked[self.pool_cap :]:
            if changed.get(victim.id, ("",))[0] == "add":
                del changed[victim.id]
            else:
                changed[victim.id] = ("evict", victim)
            update.notes.append(f"pool cap: evicted {victim.id}")
        update.ops = [Op(op=label, unit=unit) for label, unit in changed.values()]
        return update
