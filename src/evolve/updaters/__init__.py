"""Update recipes: each turns a complaint into proposed memory operations.

Supersession: every recipe's prompt shows the units in force with their ids, and its
reply schema lets the updater name the unit(s) a proposal replaces (`replaces`; ACE `modify`)
or retires (`retire`). A named unit is revoked (`revoked_by` the new one, which `supersedes`
it) whatever the wording; a name the prompt did not show refuses that proposal. Only when the
updater names nothing does each recipe's safety net apply: ACE revokes a similar (trigram >=
0.85) bullet the new one negates or changes; TEPA replaces the precedent under the same key;
TRACE revokes a check on the same api/argument/predicate that cannot hold with the new one;
topl raises beta of a similar (>= 0.7) conflicting entry (it stays in the pool, ranked down);
reflexion relies on its window of three; rewrite's reply is itself the replacement.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from evolve._lazy import lazy_exports
from evolve._registry import IMPORT_PATH, Entry, is_import_path
from evolve.memory import MemoryUnit, Renderer, render_memory
from evolve.updaters._base import (
    MAX_ATTEMPTS,
    EpisodeView,
    Recipe,
    RecipeContext,
    RecipeFactory,
    Update,
    parse_json_reply,
    recipe_caps,
    recipes,
    summarize_actions,
)

if TYPE_CHECKING:
    from evolve.updaters._ace import AceRecipe
    from evolve.updaters._reflexion import ReflexionRecipe
    from evolve.updaters._rewrite import RewriteRecipe
    from evolve.updaters._skills import SkillsRecipe
    from evolve.updaters._tepa import TepaRecipe
    from evolve.updaters._topl import TopLRecipe
    from evolve.updaters._trace import TraceRecipe

# Each recipe's module is imported when its recipe is asked for (by the registry, which finds
# it by name, or by its class's name here): training one recipe imports none of the others.
__getattr__, __dir__ = lazy_exports(
    __name__,
    globals(),
    {
        "evolve.updaters._ace": ("AceRecipe",),
        "evolve.updaters._reflexion": ("ReflexionRecipe",),
        "evolve.updaters._rewrite": ("RewriteRecipe",),
        "evolve.updaters._skills": ("SkillsRecipe",),
        "evolve.updaters._tepa": ("TepaRecipe",),
        "evolve.updaters._topl": ("TopLRecipe",),
        "evolve.updaters._trace": ("TraceRecipe",),
    },
)

# Every recipe by name: evolve's (each registered in its own module, found by scanning this
# package) and installed packages' (`evolve.recipes` entry points).
RECIPES = recipes


def get_recipe(name: str) -> Recipe:
    """The recipe `name` (registered, an installed entry point, or an import path).

    A recipe named by its import path answers to its own `name` from then on too: its units
    carry that name, and the applier finds its caps by it.

    Raises:
        UnknownName: one sentence listing the recipes.
    """
    factory = recipes.lookup(name)
    recipe = factory()
    if recipe.name != name.strip() and is_import_path(name) and recipes.find(recipe.name) is None:
        recipes.add(recipe.name, factory, entry=Entry(recipe.name, IMPORT_PATH, name.strip()))
    return recipe


def renderers_for(names: Iterable[str]) -> dict[str, Renderer]:
    """The renderer of each recipe in `names` (in that order), for `render_memory`.

    Raises:
        UnknownName: a name that is not a recipe.
    """
    out: dict[str, Renderer] = {}
    for name in dict.fromkeys(names):
        recipe = get_recipe(name)
        out[recipe.name] = recipe.render  # its units carry its own name (an import path's too)
    return out


def render_for(units: Iterable[MemoryUnit], scope: str, recipes: Iterable[str]) -> str:
    """Rendered memory for `scope`: hand notes plus the units of `recipes` only.

    A workspace passes the recipes it is configured to render
    (`EvolveConfig.rendered_recipes()`: `render.recipes`, default `train.recipe`).
    """
    return render_memory(units, scope, renderers_for(recipes))


__all__ = [
    "MAX_ATTEMPTS",
    "RECIPES",
    "AceRecipe",
    "EpisodeView",
    "Recipe",
    "RecipeContext",
    "RecipeFactory",
    "ReflexionRecipe",
    "RewriteRecipe",
    "SkillsRecipe",
    "TepaRecipe",
    "TopLRecipe",
    "TraceRecipe",
    "Update",
    "get_recipe",
    "recipe_caps",
    "recipes",
    "render_for",
    "renderers_for",
    "parse_json_reply",
    "summarize_actions",
]
