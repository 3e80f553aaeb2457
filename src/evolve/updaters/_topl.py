"""`topl`: the top L assertions of a pool, ranked by a Beta posterior.

Each complaint line is induced into an assertion. Support raises `alpha` of the matching pool
entry and re-affirms it (a `reaffirm` op: it counts as learned now, so it renders as the
newest), or adds a new one at Beta(1, 1) plus this support. The parameters move in
the counter sidecar; an assertion's file changes with its text, status or `valid_from`.

The prompt shows the pool with ids. An assertion may name (`replaces`) the entries it
contradicts: each named entry's `beta` rises *and* it is revoked in favour of the newer one,
so a contradicted assertion stops rendering once a newer one on the same subject exists,
whatever the textual similarity, and so is an entry on the same `subject` (an assertion may
give one, kept in the unit's `key`) that says something else. Safety net when the updater
names nothing and gives no subject: an entry that is
similar (trigram cosine >= 0.7) but disagrees (`conflicts`) gets `beta` + 1 and stays in the
pool, where the posterior ranks it down. Support for a revoked entry's exact text brings it
back (alpha + 1) and revokes what replaced it: the newest statement wins.

The rendered top L appear in the order they were learned, like every recipe's memory.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

from evolve._format._render import TOPL_TOP, ranked_by_posterior, render_top
from evolve._format._render import posterior_mean as posterior_mean  # re-exported
from evolve.envs import ApiCall
from evolve.llm import JsonSchema
from evolve.memory import MemoryUnit
from evolve.memory._similarity import conflicts, normalize, trigram_cosine
from evolve.ops import Op, Refusal
from evolve.updaters._base import (
    MAX_STATEMENT,
    RecipeContext,
    Update,
    ask,
    evictions,
    load_prompt,
    named_units,
    recipes,
)
from evolve.updaters._supersede import (
    newest,
    reaffirmed,
    same_subject,
    shown_line,
    subject_of,
)
from evolve.workspace import EvolveConfig, RecipeCaps

SCHEMA = JsonSchema(
    "assertions",
    {
        "type": "object",
        "properties": {
            "assertions": {
                "type": "array",
                "items": {
                    "anyOf": [
                        {"type": "string"},
                        {
                            "type": "object",
                            "properties": {
                                "text": {"type": "string"},
                                "replaces": {"type": "array", "items": {"type": "string"}},
                                "subject": {"type": "string"},
                            },
                            "required": ["text"],
                        },
                    ]
                },
            }
        },
        "required": ["assertions"],
    },
)


@recipes.register("topl")
class TopLRecipe:
    name = "topl"
    top: ClassVar[int] = TOPL_TOP
    pool_cap: ClassVar[int] = 60
    threshold: ClassVar[float] = 0.7

    def default_caps(self, config: EvolveConfig) -> RecipeCaps:
        return RecipeCaps(units=self.pool_cap, chars=MAX_STATEMENT)

    evict_rule: ClassVar[str] = f"pool cap of {pool_cap}: the lowest posterior goes first"

    def evict_order(self, units: Sequence[MemoryUnit]) -> list[MemoryUnit]:
        """The pool ranked by its posterior, lowest first."""
        return self.ranked(units)[::-1]

    def ranked(self, units: Sequence[MemoryUnit]) -> list[MemoryUnit]:
        return ranked_by_posterior(units)

    def render(self, units: Sequence[MemoryUnit]) -> str:
        return render_top(units, self.top)

    def pool(self, units: Sequence[MemoryUnit]) -> str:
        """The pool as the updater sees it: every active entry, best first, with its id."""
        return "\n".join(
            f"{shown_line(u)} (alpha {u.alpha or 1.0:g}, beta {u.beta or 1.0:g})"
            for u in self.ranked(units)
        )

    def verify(self, units: Sequence[MemoryUnit], calls: Sequence[ApiCall]) -> list[str]:
        return []

    def observe(self, ctx: RecipeContext) -> Update:
        update = Update()
        mine = ctx.mine(self.name)
        prompt = load_prompt("topl").safe_substitute(
            instruction=ctx.episode.instruction,
            complaint=ctx.episode.complaint,
            pool=self.pool(mine) or "(empty)",
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
        pool = {u.id: u for u in mine if u.status == "active"}
        shown = dict(pool)
        archive = {u.id: u for u in mine if u.status == "revoked"}
        changed: dict[str, tuple[str, MemoryUnit]] = {}

        def put(op: str, unit: MemoryUnit) -> None:
            prev = changed.get(unit.id, ("count",))[0]
            # A content op outranks a counter move; an add or a reactivation stays what it was.
            keep = prev != "count" and not (prev == "reaffirm" and op in ("revoke", "evict"))
            changed[unit.id] = (prev if keep else op, unit)
            if unit.status == "active":
                pool[unit.id] = unit
                archive.pop(unit.id, None)
            else:
                pool.pop(unit.id, None)
                archive[unit.id] = unit

        for item in raw:
            entry: dict[str, Any] = {"text": item} if isinstance(item, str) else item
            text = entry.get("text") if isinstance(entry, dict) else None
            if not isinstance(text, str) or not text.strip() or len(text) > MAX_STATEMENT:
                update.refused.append(
                    Refusal(
                        op="add",
                        what=str(item)[:80],
                        reason="an assertion must be 1-300 characters of text",
                    )
                )
                continue
            text = text.strip()
            named = named_units(entry, shown, update, "add")
            if named is None:
                continue
            named = [
                pool[u.id] for u in named if u.id in pool and normalize(u.text) != normalize(text)
            ]
            # The entries on this assertion's subject that say something else: replaced too.
            subject = subject_of(entry)
            named += [u for u in same_subject(pool, subject, normalize(text)) if u not in named]
            support = next((u for u in pool.values() if normalize(u.text) == normalize(text)), None)
            back = next((u for u in archive.values() if normalize(u.text) == normalize(text)), None)
            if support is None and back is not None:
                # Support for a revoked text: it comes back; what replaced it gives way.
                support = ctx.reactivated(back)
                if back.revoked_by in pool and all(u.id != back.revoked_by for u in named):
                    named.append(pool[back.revoked_by])
                put("reactivate", support)
            if not named:  # the safety net: similar and disagreeing entries lose support
                for u in list(pool.values()):
                    if (
                        u is support
                        or u.id == getattr(support, "id", None)
                        or trigram_cosine(text, u.text) < self.threshold
                        or not conflicts(text, u.text)
                    ):
                        continue
                    put("count", ctx.counted(u, beta=(u.beta or 1.0) + 1.0, alpha=u.alpha or 1.0))
                    update.notes.append(f"beta+1 for {u.id}: contradicted by {text[:50]!r}")
            if support is not None:
                # Support re-affirms the entry: alpha + 1, and it counts as learned now.
                support = pool[support.id]
                counted = ctx.counted(
                    support, alpha=(support.alpha or 1.0) + 1.0, beta=support.beta or 1.0
                )
                if newest(support, pool.values()):  # already renders last: counters only
                    put("count", counted)
                else:
                    put("reaffirm", reaffirmed(ctx, counted))
                winner = support.id
            else:
                unit = ctx.new_unit(
                    self.name, "assertion", text, alpha=2.0, beta=1.0,
                    supersedes=named[0].id if named else None, key=subject,
                )  # fmt: skip
                winner = unit.id
            for old in named:
                old = pool.get(old.id, old)
                contradicted = ctx.counted(
                    old, beta=(old.beta or 1.0) + 1.0, alpha=old.alpha or 1.0
                )
                put("revoke", ctx.revoked(contradicted, by=winner))
                update.notes.append(f"beta+1 and revoke {old.id}: replaced by {winner}")
            if support is None:
                put("add", unit)
        victims = []
        for victim in self.evict_order(list(pool.values()))[: max(0, len(pool) - self.pool_cap)]:
            if changed.get(victim.id, ("",))[0] == "add":
                del changed[victim.id]
            else:
                changed.pop(victim.id, None)
                victims.append(victim)
            update.notes.append(f"pool cap: evicted {victim.id}")
        ops = [Op(op=label, unit=unit) for label, unit in changed.values()]
        update.ops = ops + evictions(victims, ops, f"pool cap of {self.pool_cap}")
        return update
