"""The `skills:` section of evolve.yaml as selection reads it: whether skills are on, and the
selection's bounds.

Its own module, apart from selection (`_select`), so that a run with skills off (a plain
`evolve train` of any other recipe) learns that they are off without loading the picker, the
triggers' ranking or the skill library.
"""

from __future__ import annotations

from typing import Any

import msgspec

LEXICAL = "lexical"


class SkillSettings(msgspec.Struct, frozen=True):
    """The `skills:` section of evolve.yaml as selection reads it (the defaults are the README's)."""

    enabled: bool = False
    max_injected: int = 3
    budget_tokens: int = 400
    holdout_share: float = 0.2
    retire_confidence: float = 0.9
    selector: str = LEXICAL


def settings_of(config: Any, recipe: str | None = None) -> SkillSettings:
    """The skill settings of an `EvolveConfig`: on when `skills.enabled` is true, the training
    recipe is `skills` (in the file, or `recipe`: the one a run was given), or `skills` is
    among the rendered recipes."""
    section = getattr(config, "skills", None)
    base = SkillSettings()
    recipes = set(config.rendered_recipes()) | {config.train.recipe, recipe or ""}
    enabled = bool(getattr(section, "enabled", False)) or "skills" in recipes
    return SkillSettings(
        enabled=enabled,
        max_injected=int(getattr(section, "max_injected", base.max_injected)),
        budget_tokens=int(getattr(section, "budget_tokens", base.budget_tokens)),
        holdout_share=float(getattr(section, "holdout_share", base.holdout_share)),
        retire_confidence=float(getattr(section, "retire_confidence", base.retire_confidence)),
        selector=str(getattr(config.models, "selector", LEXICAL) or LEXICAL),
    )
