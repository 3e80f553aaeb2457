"""Twins: live units that say a tombstoned unit's text.

Two learners that learned the same lesson hold it as two units (two ids, one text). A
tombstone refuses its text, not only its own unit, so the other unit must not stay active:
`evolve merge` revokes it (its reason naming the tombstone), `evolve review reject` does the
same in the rejection's commit, and `evolve revert` tombstones it with the unit it takes back.
One predicate, so all three agree on what a twin is.
"""

from __future__ import annotations

from collections.abc import Iterable

from evolve.memory import MemoryUnit
from evolve.memory._similarity import normalize

LIVE = ("active", "pending")


def twins(units: Iterable[MemoryUnit], stone: MemoryUnit) -> list[MemoryUnit]:
    """The live units (active or pending) other than `stone` that say its text, normalized:
    in its scope, or in any scope when the tombstone is global."""
    text = normalize(stone.text)
    if not text:
        return []
    return [
        u
        for u in units
        if u.status in LIVE
        and u.id != stone.id
        and (stone.scope == "global" or u.scope == stone.scope)
        and normalize(u.text) == text
    ]
