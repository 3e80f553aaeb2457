"""Update recipes: each turns a complaint into proposed memory operations."""

from __future__ import annotations

from evolve.errors import UnknownName
from evolve.memory import register_renderer
from evolve.updaters._ace import AceRecipe
from evolve.updaters._base import (
    EpisodeView,
    Recipe,
    RecipeContext,
    Update,
    parse_json_reply,
    summarize_actions,
)
from evolve.updaters._reflexion import ReflexionRecipe
from evolve.updaters._rewrite import RewriteRecipe
from evolve.updaters._tepa import TepaRecipe
from evolve.updaters._topl import TopLRecipe
from evolve.updaters._trace import MAX_ATTEMPTS, TraceRecipe

RECIPES: dict[str, type] = {
    "ace": AceRecipe,
    "tepa": TepaRecipe,
    "trace": TraceRecipe,
    "reflexion": ReflexionRecipe,
    "rewrite": RewriteRecipe,
    "topl": TopLRecipe,
}


def get_recipe(name: str) -> Recipe:
    """The recipe `name`.

    Raises:
        UnknownName: one sentence listing the recipes.
    """
    try:
        cls = RECIPES[name]
    except KeyError:
        raise UnknownName(f"unknown recipe {name!r}; choose one of {', '.join(RECIPES)}.") from None
    recipe: Recipe = cls()
    return recipe


for _name in RECIPES:
    register_renderer(_name, get_recipe(_name).render)

__all__ = [
    "MAX_ATTEMPTS",
    "RECIPES",
    "AceRecipe",
    "EpisodeView",
    "Recipe",
    "RecipeContext",
    "ReflexionRecipe",
    "RewriteRecipe",
    "TepaRecipe",
    "TopLRecipe",
    "TraceRecipe",
    "Update",
    "get_recipe",
    "parse_json_reply",
    "summarize_actions",
]
