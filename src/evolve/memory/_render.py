"""Rendering memory into the `<memory>` section: a pure function of the unit files.

What is rendered (DESIGN.md §4, "Memory over time"):

- only active units in scope, and only hand-written notes plus the units of the recipes the
  caller names: a workspace renders the recipe(s) it is configured for, never every recipe
  that was ever trained in it;
- every line carries its unit id (`[<id>] text`), so a line of rendered memory maps to its
  file for `evolve show` and `evolve revert`;
- units in the order they were *learned*: the time each became active (`valid_from`, an
  aware ISO timestamp), ties by id. A per-stream episode counter restarts in every stream,
  so it never orders memory; a reactivated unit takes a new `valid_from` and moves last.

There is no global registry filled as a side effect of an import: the caller passes the
renderer of each recipe to render (`evolve.updaters.renderers_for` builds them), and a unit
of a recipe it names without a renderer is an error, not a silent plain rendering.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import UTC, datetime

from evolve.memory._unit import GLOBAL_SCOPE, MemoryUnit

Renderer = Callable[[Sequence[MemoryUnit]], str]
HAND = "hand"
_NEVER = datetime.min.replace(tzinfo=UTC)
_BULLET = re.compile(r"^\s*(?:[-*•]\s+)?")


def learned_time(unit: MemoryUnit) -> datetime:
    """When `unit` became active: its `valid_from` (naive taken as UTC); never set → oldest."""
    if not unit.valid_from:
        return _NEVER
    try:
        when = datetime.fromisoformat(unit.valid_from.replace("Z", "+00:00"))
    except ValueError:
        return _NEVER
    return when if when.tzinfo is not None else when.replace(tzinfo=UTC)


def learned_key(unit: MemoryUnit) -> tuple[datetime, str]:
    """Sort key: when the unit became active, then its id."""
    return (learned_time(unit), unit.id)


def by_learned(units: Iterable[MemoryUnit]) -> list[MemoryUnit]:
    """`units` oldest-learned first."""
    return sorted(units, key=learned_key)


def tagged(unit_id: str, text: str) -> str:
    """`text` with every non-empty line prefixed by the unit id, `[<id>] line`.

    A leading Markdown bullet of the line is dropped (the id takes its place), so the agent
    and the sim read the same statement with or without the id.
    """
    lines = (_BULLET.sub("", line, count=1).rstrip() for line in text.splitlines())
    return "\n".join(f"[{unit_id}] {line}" for line in lines if line.strip())


def render_hand(units: Sequence[MemoryUnit]) -> str:
    """Hand-written notes: their lines as written, each with the note's id."""
    return "\n".join(tagged(u.id, u.text) for u in by_learned(units) if u.status == "active")


def render_memory(
    units: Iterable[MemoryUnit], scope: str, renderers: Mapping[str, Renderer]
) -> str:
    """The text the agent receives for `scope`.

    `renderers` maps each recipe to render to its renderer, in the order the blocks appear;
    units of any other recipe are not rendered. Hand-written notes come first: a person's
    words stand before what a learner wrote.

    Raises:
        TypeError: `renderers` is not a mapping (e.g. a call written for the old signature).
    """
    if not isinstance(renderers, Mapping):
        raise TypeError("render_memory needs a mapping of recipe name to renderer")
    visible = [
        u
        for u in units
        if u.status == "active"
        and u.scope in (scope, GLOBAL_SCOPE)
        and u.text.strip()
        and u.shelf is None  # skills, hand-written ones too, go in <skills>, not <memory>
    ]
    groups: dict[str, list[MemoryUnit]] = {}
    for unit in by_learned(visible):
        groups.setdefault(unit.recipe, []).append(unit)
    blocks = [render_hand(groups.get(HAND, []))]
    for recipe, renderer in renderers.items():
        if recipe != HAND and recipe in groups:
            blocks.append(renderer(groups[recipe]))
    return "\n".join(b.strip() for b in blocks if b.strip())


_FILLER = (
    "Keep each reply short. Use the API documentation to choose calls. Check each result "
    "before the next step. Finish every task by marking it complete. "
)


def fixed_block(length: int) -> str:
    """A neutral block of `length` characters: the token-matched control of seed 003."""
    if length <= 0:
        return ""
    text = (_FILLER * (length // len(_FILLER) + 1))[:length]
    return text.rstrip()
