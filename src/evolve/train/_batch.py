"""The hook between `evolve train` and the skills recipe's batches (`evolve.skills._batch`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from evolve.envs import Environment
from evolve.llm import LLM
from evolve.workspace import Workspace

if TYPE_CHECKING:
    from evolve.skills import SkillsBatches


def skills_batches(
    ws: Workspace,
    recipe: str,
    stream: str,
    persona: str,
    env: Environment,
    review: bool,
    generation: int | None,
    evolver: LLM | None = None,
) -> SkillsBatches | None:
    """The batch state of a `skills` run (None for any other recipe)."""
    if recipe != "skills":
        return None
    from evolve.llm import make_role_llm
    from evolve.skills import SkillsBatches

    return SkillsBatches(
        ws,
        stream,
        persona,
        evolver or make_role_llm(ws.config, "evolver", env=env),
        tuple(env.tools()),
        review=review,
        generation=generation,
    )
