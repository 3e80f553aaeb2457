"""Rendering memory into the `<memory>` section: a pure function of the unit files.

What is rendered:

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

from collections.abc import Callable, Sequence

# The rendering itself lives with the reading commands' fast path (no pydantic, no `re`), so
# that `evolve memory` and the trainer render with the very same functions.
from evolve._format._render import (
    HAND,
    by_learned,
    learned_key,
    learned_time,
    render_hand,
    render_memory,
    tagged,
)
from evolve.memory._unit import MemoryUnit

__all__ = [
    "HAND",
    "Renderer",
    "by_learned",
    "fixed_block",
    "learned_key",
    "learned_time",
    "render_hand",
    "render_memory",
    "tagged",
]

Renderer = Callable[[Sequence[MemoryUnit]], str]

_FILLER = (
    "Keep each reply short. Use the API documentation to choose calls. Check each result "
    "before the next step. Finish every task by marking it complete. "
)


def fixed_block(length: int) -> str:
    """A neutral block of `length` characters: the token-matched control."""
    if length <= 0:
        return ""
    text = (_FILLER * (length // len(_FILLER) + 1))[:length]
    # Exactly `length` characters: a cut that ends on a space (stripped where the block is
    # rendered) ends on a full stop instead, so the control is never a character short.
    return text[:-1] + "." if text[-1].isspace() else text
