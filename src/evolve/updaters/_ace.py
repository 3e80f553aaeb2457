"""`ace`: a playbook of bullets, with the owed fixes.

- Supersession is named: an `add` may list the bullets it `replaces`, a `modify` names the
  bullet it corrects, and `retire` names a bullet to revoke with no successor. Named bullets
  are revoked (`revoked_by` the new one, which `supersedes` the first of them) whatever the
  textual similarity: "Payments should be public." -> "...private." is a replacement because
  the updater says so, not because trigrams agree.
- Subjects: an operation may give its statement's `subject` (kept in the bullet's
  `key`, shown to the updater as `[id] [subject] text`); an active bullet on the same subject
  that says something else is revoked in favour of the new one, with no name given.
- Safety net, only when the updater names nothing: similar bullets are found by surface
  similarity (a protocol; trigram cosine by default) and judged for polarity separately: a
  newer bullet that negates or changes an older similar one *replaces* it (the older is
  revoked, not silently kept). A true duplicate of an active bullet re-affirms that bullet
  (a `reaffirm` op: it counts as learned now and renders last) instead of being dropped.
- Ids are opaque. A modify revokes the old bullet and adds the corrected one with a new id
  that `supersedes` it, so no id ever names text it no longer has. Re-adding a superseded text
  reactivates that bullet and revokes the one that replaced it: the newest statement wins.
- `helpful` / `harmful` move with the episode's tags (`count` ops: the counter sidecar, never
  the bullet's file) and the cap evicts by them before age.
- The commit records what dedup and the cap actually did.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

from evolve._format._render import render_plain
from evolve.envs import ApiCall
from evolve.llm import JsonSchema
from evolve.memory import MemoryUnit
from evolve.memory._similarity import Similarity, conflicts, normalize, trigram_cosine
from evolve.ops import Op, Refusal
from evolve.updaters._base import (
    MAX_STATEMENT,
    RecipeContext,
    Update,
    active_by_age,
    age,
    ask,
    copied_name,
    evictions,
    items,
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
    "ace_deltas",
    {
        "type": "object",
        "properties": {
            "operations": {
                "type": "array",
                "items": {
                    "type": "object",
                    "properties": {
                        "op": {"enum": ["add", "modify", "retire"]},
                        "id": {"type": "string"},
                        "text": {"type": "string"},
                        "replaces": {"type": "array", "items": {"type": "string"}},
                        "subject": {"type": "string"},
                    },
                    "required": ["op"],
                },
            },
            "bullet_tags": {
                "type": "array",
                "items": {
                    "type": "object",
                    "properties": {
                        "id": {"type": "string"},
                        "tag": {"enum": ["helpful", "harmful", "neutral"]},
                    },
                    "required": ["id", "tag"],
                },
            },
        },
        "required": ["operations"],
    },
)


class _Playbook:
    """The bullets while one episode's proposals are merged; records what actually happened."""

    def __init__(self, ctx: RecipeContext, recipe: AceRecipe, units: Sequence[MemoryUnit]) -> None:
        self.ctx = ctx
        self.recipe = recipe
        self.update = Update()
        self.active = {u.id: u for u in active_by_age(units)}
        self.revoked = {u.id: u for u in units if u.status == "revoked"}
        self.existing = {u.id for u in units}
        self.changed: dict[str, tuple[str, MemoryUnit]] = {}
        self.victims: list[MemoryUnit] = []  # active bullets the cap evicts, first to go first

    def put(self, op: str, unit: MemoryUnit, reason: str = "") -> None:
        prev = self.changed.get(unit.id)
        # A unit born this episode stays an add whatever happens to it next; a content op
        # keeps its label through a later counter move.
        label = op
        if prev is not None and (prev[0] == "add" or op == "count"):
            label = prev[0]
        self.changed[unit.id] = (label, unit)
        if unit.status == "active":
            self.active[unit.id] = unit
            self.revoked.pop(unit.id, None)
        else:
            self.active.pop(unit.id, None)
            if unit.status == "revoked":
                self.revoked[unit.id] = unit
        if reason:
            self.update.notes.append(f"{op} {unit.id}: {reason}")

    def tag(self, ident: str, kind: str) -> None:
        u = self.active[ident]
        if kind == "helpful":
            self.put(
                "count", self.ctx.counted(u, helpful=(u.helpful or 0) + 1, harmful=u.harmful or 0)
            )
        elif kind == "harmful":
            self.put(
                "count", self.ctx.counted(u, harmful=(u.harmful or 0) + 1, helpful=u.helpful or 0)
            )

    def retire(self, ident: str) -> None:
        self.put("revoke", self.ctx.revoked(self.active[ident], by=None), "retired by the updater")

    def place(
        self, text: str, named: Sequence[str], verb: str = "replaced by", subject: str | None = None
    ) -> None:
        """Put a new bullet in. Bullets the updater `named` are revoked in its favour,
        whatever their wording, and so are the bullets on its `subject` that say something
        else. Otherwise the safety net: a similar bullet that the new one negates or changes
        is revoked in its favour. A duplicate of an active bullet re-affirms that bullet (it
        renders as the newest); a superseded text comes back."""
        ctx, sim, threshold = self.ctx, self.recipe.similarity, self.recipe.threshold
        olds = [self.active[i] for i in named if i in self.active]
        on_subject = [
            u for u in same_subject(self.active, subject, normalize(text)) if u.id not in named
        ]
        olds += on_subject
        supersedes = olds[0].id if olds else None
        similar = [
            u for u in self.active.values() if u.id not in named and sim(text, u.text) >= threshold
        ]
        duplicate = next((u for u in similar if not conflicts(text, u.text)), None)
        if named:
            similar = []  # the updater said what this replaces: the net stays out of it
        if duplicate is not None:
            stale = [u for u in (*olds, *similar) if u.id != duplicate.id and u is not duplicate]
            for old in {u.id: u for u in stale if u.id in self.active}.values():
                self.put(
                    "revoke",
                    ctx.revoked(self.active[old.id], by=duplicate.id),
                    f"{verb} a duplicate of {duplicate.id}",
                )
            if newest(self.active[duplicate.id], self.active.values()):
                self.update.notes.append(
                    f"dedup: dropped new bullet {text[:60]!r}, duplicate of {duplicate.id} "
                    "(which already renders last)"
                )
                return
            self.put(
                "reaffirm",
                reaffirmed(ctx, self.active[duplicate.id]),
                f"re-affirmed: proposed again as {text[:60]!r}",
            )
            return
        back = next(
            (
                r
                for r in self.revoked.values()
                if normalize(r.text) == normalize(text)
                or (sim(text, r.text) >= threshold and not conflicts(text, r.text))
            ),
            None,
        )
        target = back.id if back is not None else ctx.new_id(self.recipe.name, text)
        if back is not None and back.revoked_by in self.active and back.revoked_by not in named:
            # The unit that replaced the re-added text gives way, however it was worded.
            similar.append(self.active[back.revoked_by])
        for u in similar:
            if u.id in self.active and u not in olds:
                self.put(
                    "revoke",
                    ctx.revoked(self.active[u.id], by=target),
                    f"negated or changed by newer bullet {target}",
                )
        for old in olds:
            if old.id in self.active:
                why = "on the same subject as" if old in on_subject else verb
                self.put("revoke", ctx.revoked(self.active[old.id], by=target), f"{why} {target}")
        if back is not None:
            self.put("reactivate", ctx.reactivated(back), "re-added: the newest statement wins")
            return
        unit = ctx.new_unit(
            self.recipe.name, "bullet", text, helpful=0, harmful=0, supersedes=supersedes,
            key=subject,
        )  # fmt: skip
        self.put("add", unit.with_(id=target))

    def cap(self) -> None:
        """Evict beyond the cap by (helpful - harmful), then age; bound the archive too."""
        while len(self.active) > self.recipe.cap:
            victim = self.recipe.evict_order(list(self.active.values()))[0]
            del self.active[victim.id]
            self._drop(
                victim,
                f"cap: evicted {victim.id} (helpful {victim.helpful or 0}, harmful {victim.harmful or 0})",
            )
            if victim.id in self.existing:
                self.victims.append(victim)
        archive = sorted(self.revoked.values(), key=age)
        for victim in archive[: max(0, len(archive) - self.recipe.archive_cap)]:
            del self.revoked[victim.id]
            self._drop(victim, f"cap: dropped archived bullet {victim.id}")

    def _drop(self, victim: MemoryUnit, note: str) -> None:
        if victim.id in self.existing:
            self.changed[victim.id] = ("evict", victim)
        else:
            self.changed.pop(victim.id, None)  # born this episode: never written
        self.update.notes.append(note)

    def ops(self) -> list[Op]:
        """The episode's ops; an evict of an active bullet goes with the new bullet it makes
        room for (`evictions`), an archived bullet's evict stands alone."""
        capped = {v.id for v in self.victims}
        ops = [
            Op(op=label, unit=unit, reason="archive cap" if label == "evict" else "")
            for label, unit in self.changed.values()
            if unit.id not in capped
        ]
        return ops + evictions(self.victims, ops, f"cap of {self.recipe.cap}")


@recipes.register("ace")
class AceRecipe:
    name = "ace"
    cap: ClassVar[int] = 12
    archive_cap: ClassVar[int] = 12
    threshold: ClassVar[float] = 0.85

    def __init__(self, similarity: Similarity = trigram_cosine) -> None:
        self.similarity = similarity

    evict_rule: ClassVar[str] = f"cap of {cap}: lowest helpful - harmful first, then oldest"

    def default_caps(self, config: EvolveConfig) -> RecipeCaps:
        return RecipeCaps(units=self.cap, chars=MAX_STATEMENT)

    def evict_order(self, units: Sequence[MemoryUnit]) -> list[MemoryUnit]:
        """Lowest (helpful - harmful) first, then the oldest learned."""
        return sorted(units, key=lambda u: ((u.helpful or 0) - (u.harmful or 0), age(u)))

    def render(self, units: Sequence[MemoryUnit]) -> str:
        return render_plain(units)

    def verify(self, units: Sequence[MemoryUnit], calls: Sequence[ApiCall]) -> list[str]:
        return []

    def observe(self, ctx: RecipeContext) -> Update:
        book = _Playbook(ctx, self, ctx.mine(self.name))
        update = book.update
        prompt = load_prompt("ace").safe_substitute(
            instruction=ctx.episode.instruction,
            actions=ctx.episode.actions,
            complaint=ctx.episode.complaint,
            bullets="\n".join(shown_line(u) for u in book.active.values()) or "(empty)",
        )
        data = ask(ctx, SCHEMA, load_prompt("system").template, prompt, update)
        if data is None:
            return update
        rendered = set(book.active)
        for tag in items(data, "bullet_tags", update):
            ident, kind = tag.get("id"), tag.get("tag")
            if not isinstance(ident, str) or ident not in rendered or ident not in book.active:
                update.refused.append(
                    Refusal(op="tag", what=str(ident), reason="unknown bullet id")
                )
            elif kind not in ("helpful", "harmful", "neutral"):
                update.refused.append(Refusal(op="tag", what=ident, reason=f"unknown tag {kind!r}"))
            else:
                book.tag(ident, kind)
        shown = {i: u for i, u in book.active.items() if i in rendered}
        for proposal in items(data, "operations", update):
            op, text = proposal.get("op"), proposal.get("text")
            if op not in ("add", "modify", "retire"):
                update.refused.append(
                    Refusal(
                        op=str(op),
                        what=str(text)[:80],
                        reason="the ace recipe has only add, modify and retire",
                    )
                )
                continue
            if (
                op == "modify"
                and isinstance(proposal.get("id"), str)
                and copied_name(proposal["id"])
            ):
                # a copied `<bullet id>`: the statement is still learned, as an add
                update.refused.append(
                    Refusal(
                        op=op,
                        what=str(proposal["id"])[:80],
                        reason="a placeholder, not a bullet id: added instead",
                    )
                )
                proposal = {k: v for k, v in proposal.items() if k != "id"}
                op = "add"
            if op in ("modify", "retire"):
                ident = proposal.get("id")
                if not isinstance(ident, str) or ident not in book.active:
                    update.refused.append(
                        Refusal(op=op, what=str(ident), reason="unknown bullet id")
                    )
                    continue
                if op == "retire":
                    book.retire(ident)
                    continue
            if not isinstance(text, str) or not text.strip() or len(text) > MAX_STATEMENT:
                update.refused.append(
                    Refusal(op=op, what=str(text)[:80], reason="text must be 1-300 characters")
                )
                continue
            named = named_units(proposal, shown, update, op)
            if named is None:
                continue
            ids = [u.id for u in named if u.id in book.active]
            subject = subject_of(proposal)
            if op == "modify":
                ident = str(proposal["id"])
                if normalize(book.active[ident].text) == normalize(text):
                    update.notes.append(f"modify {ident}: no change")
                    continue
                ids = [ident, *(i for i in ids if i != ident)]
                subject = subject or book.active[ident].key
            verb = "modified into" if op == "modify" else "replaced by"
            book.place(text.strip(), ids, verb, subject)
        book.cap()
        update.ops = book.ops()
        return update
