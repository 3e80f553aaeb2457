"""The applier's part of the skill shelves: their caps, enforced in code.

A shelf is `memory/skills/general/` or `memory/skills/topics/<topic>/`; it may hold at most
`skills.caps.general` / `skills.caps.per_topic` live (active or pending) skills at once, hand
written ones included. An update that would leave a shelf over its cap is refused — the ops
that grow that shelf, as a group — whatever the proposer did; a shelf a person filled over its
cap by hand is not trimmed, it only takes no more.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from evolve.memory import MemoryUnit
from evolve.ops import Op
from evolve.workspace import ShelfCaps

_LIVE = ("active", "pending")


def shelf_of(unit: MemoryUnit) -> str | None:
    """`general`, `topics/<topic>`, or None for a unit that is not a skill on a shelf."""
    if unit.shelf is None:
        return None
    return "general" if unit.shelf == "general" else f"topics/{unit.topic}"


def shelf_cap(shelf: str, caps: ShelfCaps) -> int:
    return caps.general if shelf == "general" else caps.per_topic


def occupies(unit: MemoryUnit) -> bool:
    """Whether `unit` takes a slot: live, and not a pending proposed change to another skill
    (under review that proposal stands in its original's slot)."""
    if unit.status == "pending" and unit.supersedes:
        return False
    return unit.status in _LIVE


def occupancy(units: Mapping[str, MemoryUnit] | Sequence[MemoryUnit]) -> dict[str, int]:
    """Slots taken per shelf."""
    values = units.values() if isinstance(units, Mapping) else units
    out: dict[str, int] = {}
    for unit in values:
        shelf = shelf_of(unit)
        if shelf is not None and occupies(unit):
            out[shelf] = out.get(shelf, 0) + 1
    return out


def over_caps(
    ops: Sequence[Op],
    before: Mapping[str, MemoryUnit],
    final: Mapping[str, MemoryUnit],
    reasons: Mapping[int, str],
    groups: Sequence[Sequence[int]],
    caps: ShelfCaps,
) -> dict[int, str]:
    """Refusals for the last group of ops that grows a shelf left over its cap, or {}."""
    after, was = occupancy(final), occupancy(before)
    for shelf in sorted(after):
        limit = shelf_cap(shelf, caps)
        if after[shelf] <= limit or after[shelf] <= was.get(shelf, 0):
            continue
        for members in reversed(groups):
            live = [i for i in members if i not in reasons]
            grows = sum(_delta(before.get(ops[i].id), ops[i], shelf) for i in live)
            if live and grows > 0:
                why = (
                    f"the skill shelf {shelf} is full ({limit} skills, skills.caps in "
                    "evolve.yaml): nothing more can be added there"
                )
                return dict.fromkeys(live, why)
    return {}


def _delta(before: MemoryUnit | None, op: Op, shelf: str) -> int:
    def on(unit: MemoryUnit | None) -> int:
        return int(unit is not None and shelf_of(unit) == shelf and occupies(unit))

    return (0 if op.op == "evict" else on(op.unit)) - on(before)


def overflowing(
    before: Sequence[MemoryUnit], after: Sequence[MemoryUnit], caps: ShelfCaps
) -> list[str]:
    """Shelves that `after` leaves over their cap and fuller than `before` did (a shelf a
    person filled over its cap by hand may stay so; it only takes no more), each as
    `<shelf> (<n> skills, cap <cap>)`."""
    was, now = occupancy(before), occupancy(after)
    return [
        f"{shelf} ({n} skills, cap {shelf_cap(shelf, caps)})"
        for shelf, n in sorted(now.items())
        if n > shelf_cap(shelf, caps) and n > was.get(shelf, 0)
    ]
