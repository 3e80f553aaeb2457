"""Rendering memory into the `<memory>` section: a pure function of the unit files.

Only active units in scope are rendered. Each recipe renders its own units (ACE shows ids,
TEPA keys); hand-written notes are rendered as they are.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence

from evolve.memory._unit import MemoryUnit

Renderer = Callable[[Sequence[MemoryUnit]], str]
RENDERERS: dict[str, Renderer] = {}


def register_renderer(recipe: str, renderer: Renderer) -> None:
    RENDERERS[recipe] = renderer


def _plain(units: Sequence[MemoryUnit]) -> str:
    return "\n".join(f"- {u.text}" if "\n" not in u.text else u.text for u in units)


def _order(unit: MemoryUnit) -> tuple[int, str]:
    return (unit.created_episode if unit.created_episode is not None else -1, unit.id)


def render_memory(units: Iterable[MemoryUnit], scope: str) -> str:
    """The text the agent receives for `scope`."""
    visible = [
        u for u in units if u.status == "active" and u.scope in (scope, "global") and u.text.strip()
    ]
    groups: dict[str, list[MemoryUnit]] = {}
    for unit in sorted(visible, key=_order):
        groups.setdefault(unit.recipe, []).append(unit)
    blocks = []
    # Hand-written notes first: a person's words stand before what a learner wrote.
    for recipe in sorted(groups, key=lambda r: (r != "hand", r)):
        renderer = RENDERERS.get(recipe, _plain)
        text = renderer(groups[recipe]).strip()
        if text:
            blocks.append(text)
    return "\n".join(blocks)


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
