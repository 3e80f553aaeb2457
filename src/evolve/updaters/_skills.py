"""`skills`: skill compilation, the per-episode half.

A failed episode is reflected on at once (one call over the compressed trajectory and the
verifier's words; the library is not shown) and the candidate is screened by the mechanical
filter (`evolve.skills._filter`). The recipe proposes no operation for the episode: it returns
the candidate (`SkillsUpdate`), which training keeps for the batch (`evolve.train._batch`);
the batch's evolver decides ADD / MERGE / REVISE / SKIP against the capped shelves
(`evolve.skills._batch`) and the batch makes one commit.

Skills are not rendered in `<memory>`: they are selected per task and injected in their own
`<skills>` section (the read path), so `render` gives nothing.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from evolve.envs import ApiCall
from evolve.memory import MemoryUnit
from evolve.updaters._base import RecipeContext, Update, recipes
from evolve.workspace import EvolveConfig, RecipeCaps

if TYPE_CHECKING:
    from evolve.skills import Candidate


@dataclass
class SkillsUpdate(Update):
    """What the skills recipe returns for one failed episode: no ops, a candidate (or not)."""

    candidate: Candidate | None = None


@recipes.register("skills")
class SkillsRecipe:
    name = "skills"

    def default_caps(self, config: EvolveConfig) -> RecipeCaps:
        """A lesson (`skills._reflect.MAX_LESSON`); the shelves' caps are `skills.caps`."""
        return RecipeCaps(chars=400)

    def render(self, units: Sequence[MemoryUnit]) -> str:
        return ""

    def verify(self, units: Sequence[MemoryUnit], calls: Sequence[ApiCall]) -> list[str]:
        return []

    def observe(self, ctx: RecipeContext) -> Update:
        from evolve.skills._reflect import reflect  # the write path's modules, on first use

        found = reflect(
            ctx.llm,
            ref="c?",
            episode=ctx.episode.episode,
            task_id=ctx.episode.task_id,
            instruction=ctx.episode.instruction,
            actions=ctx.episode.actions,
            verifier=ctx.episode.complaint,
            tools=ctx.tools,
            seed=ctx.seed,
        )
        return SkillsUpdate(refused=found.refused, candidate=found.candidate)
