"""Supersession that does not need the updater to name what it replaces.

Real models often name nothing (`replaces`, `retire`, ACE's `modify`). Two things then keep a
stale statement from winning:

- **Re-affirming.** A proposal that states what an active unit already states does not vanish
  as a duplicate: the unit is re-affirmed (a `reaffirm` op: it counts as learned now, so it
  renders as the newest and a later, older-looking statement no longer overrides it). A unit
  that already renders last is left as it is (nothing the agent reads would change). Without
  this, "friends-only" learned at episode 0, "private" at episode 3 and "friends-only" again
  after the preference drifted back left "private" rendering last, forever.
- **Subjects.** ACE and topl ask the updater for each statement's *subject* (what it is about,
  a few words; the prompt shows the subjects in use so the model can reuse one), like TEPA's
  keys. A statement on the subject of an active unit that says something else replaces it:
  a value flip is caught without a name and whatever the wording. The subject is kept in the
  unit's `key`. TEPA's keys and TRACE's (api, argument, predicate) are already such slots.

Where the recipe cannot know the slot (no subject given, a reflexion or a rewrite) only the
similarity net and re-affirming apply: docs/updaters.md, "When the updater names nothing".
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

from evolve._format._render import learned_key, tagged
from evolve._lazy import pattern
from evolve.memory import MemoryUnit
from evolve.memory._similarity import normalize
from evolve.updaters._base import RecipeContext, Update

MAX_SUBJECT = 48
_SLUG = pattern(r"[^a-z0-9]+")
# A subject made only of these says nothing (a copied field name: "SUBJECT", "the topic").
_EMPTY_WORDS = frozenset(
    {"subject", "topic", "key", "id", "text", "none", "null", "string", "the", "a"}
)


def subject_of(entry: Mapping[str, Any]) -> str | None:
    """The proposal's `subject`, folded to a key (lower case words joined by `_`), or None.

    A subject that is not text, holds no word or only a field's name ("SUBJECT") is ignored
    (the statement is still learned).
    """
    raw = entry.get("subject")
    if not isinstance(raw, str):
        return None
    slug = _SLUG.sub("_", raw.lower()).strip("_")[:MAX_SUBJECT].strip("_")
    if all(w in _EMPTY_WORDS for w in slug.split("_")):
        return None
    return slug


def newest(unit: MemoryUnit, units: Iterable[MemoryUnit]) -> bool:
    """Whether `unit` already renders last: no other active unit was learned after it (then
    a repeat changes nothing the agent reads, and re-affirming it would be an empty commit)."""
    mine = learned_key(unit)
    return not any(
        u.id != unit.id and u.status == "active" and learned_key(u) > mine for u in units
    )


def reaffirmed(ctx: RecipeContext, unit: MemoryUnit) -> MemoryUnit:
    """`unit` re-affirmed now: learned at a new `valid_from`, everything else as it was."""
    return unit.with_(valid_from=ctx.stamp(), updated_episode=ctx.episode.episode)


def same_subject(
    units: Mapping[str, MemoryUnit] | list[MemoryUnit], subject: str | None, text_key: str
) -> list[MemoryUnit]:
    """The active units on `subject` that say something else than the normalized `text_key`."""
    if subject is None:
        return []
    pool = units.values() if isinstance(units, Mapping) else units
    return [
        u
        for u in pool
        if u.status == "active" and u.key == subject and normalize(u.text) != text_key
    ]


def shown_line(unit: MemoryUnit) -> str:
    """A unit as an updater prompt shows it: `[id] [subject] text` (no subject: `[id] text`)."""
    return tagged(unit.id, f"[{unit.key}] {unit.text}" if unit.key else unit.text)


def reaffirm(
    ctx: RecipeContext,
    unit: MemoryUnit,
    put: Callable[[str, MemoryUnit], None],
    update: Update,
    units: Iterable[MemoryUnit],
) -> None:
    """Re-affirm the active `unit` a proposal repeats, through the recipe's `put`, and say so;
    when it already renders last (`newest` among `units`) only the note is written."""
    if newest(unit, units):
        update.notes.append(f"duplicate of {unit.id}, which already renders last")
        return
    put("reaffirm", reaffirmed(ctx, unit))
    update.notes.append(f"reaffirm {unit.id}: proposed again, it counts as learned now")
