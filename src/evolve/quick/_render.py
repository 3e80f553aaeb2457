"""Each recipe's renderer, found by name without importing the recipes (the fast path must
not import the update machinery, pydantic included). The rendering itself is
:mod:`evolve._format._render`, which the recipes render with too."""

from __future__ import annotations

from evolve._format._render import (
    render_document,
    render_keyed,
    render_plain,
    render_top,
)
from evolve.quick._git import Unhandled

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterable

    from evolve._format._render import Renderer, UnitLike

RENDERERS: dict[str, Renderer[UnitLike]] = {
    "ace": render_plain,
    "tepa": render_keyed,
    "trace": render_plain,
    "reflexion": render_plain,
    "rewrite": render_document,
    "topl": render_top,
}


def renderers_for(names: Iterable[str]) -> dict[str, Renderer[UnitLike]]:
    """`evolve.updaters.renderers_for`, without importing the recipes.

    Raises:
        Unhandled: a name without a light renderer (the full command knows it, or says so).
    """
    out = {}
    for name in dict.fromkeys(names):
        if name not in RENDERERS:
            raise Unhandled(f"no light renderer for {name!r}")
        out[name] = RENDERERS[name]
    return out
