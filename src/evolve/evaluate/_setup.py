"""What the agent is given in a workspace: prompt files and memory in the configured mode."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Literal

from evolve.agent import read_prompt_files, workspace_agent
from evolve.envs import ApiCall, Environment
from evolve.episode import EpisodeSetup, Redactor
from evolve.harness import load_harness
from evolve.llm import LLM
from evolve.memory import MemoryUnit, fixed_block, in_scope, load_units, scope_for
from evolve.skills._settings import settings_of
from evolve.updaters import MAX_ATTEMPTS, RECIPES, get_recipe, render_for
from evolve.workspace import Workspace, max_turns

if TYPE_CHECKING:
    from pathlib import Path

    from evolve.agent import Agent
    from evolve.skills._select import SkillPicker
    from evolve.workspace import AgentConfig

InjectMode = Literal["none", "recipe", "oracle", "fixed"]
INJECT_MODES: tuple[InjectMode, ...] = ("none", "recipe", "oracle", "fixed")


def make_verifier(
    units: Sequence[MemoryUnit], rendered: Sequence[str] | None = None
) -> Callable[[Sequence[ApiCall]], list[str]] | None:
    """The enforced checks of the recipes whose active units are in memory, if any (only of
    the `rendered` recipes when given: a recipe the workspace does not render enforces nothing).

    Only TRACE enforces checks today; other recipes' `verify` accepts every attempt.
    """
    recipes = sorted(
        {
            u.recipe
            for u in units
            if u.status == "active"
            and u.recipe in RECIPES
            and (rendered is None or u.recipe in rendered)
        }
    )
    if not recipes:
        return None
    checkers = [get_recipe(name) for name in recipes]

    def verify(calls: Sequence[ApiCall]) -> list[str]:
        return [failure for recipe in checkers for failure in recipe.verify(units, calls)]

    return verify


def agent_memory(
    ws: Workspace,
    env: Environment,
    persona: str,
    mode: InjectMode,
    units: Sequence[MemoryUnit] | None = None,
) -> str:
    """The `<memory>` text for `persona` in injection mode `mode`.

    `recipe` renders the unit files (`units` when the caller has read them already);
    `oracle` gives the persona's own preference statements; `fixed` is a neutral block as
    long as the recipe's render (a token-matched control); `none` gives nothing.
    """
    if mode == "none":
        return ""
    if mode == "oracle":
        return "\n".join(f"- {s}" for s in env.oracle_statements(persona, None))
    units = load_units(ws.root) if units is None else units
    rendered = render_for(units, scope_for(persona), ws.config.rendered_recipes())
    if mode == "fixed":
        return fixed_block(len(rendered))
    return rendered


def episode_setup(
    ws: Workspace, env: Environment, persona: str, mode: InjectMode | None = None
) -> EpisodeSetup:
    cfg = ws.config
    mode = mode or cfg.memory.inject
    # Read once: the render and the verifier see the same files.
    every = load_units(ws.root) if mode in ("recipe", "fixed") else []
    units = in_scope(every, scope_for(persona)) if mode == "recipe" else []
    return EpisodeSetup(
        prompt_files=tuple(read_prompt_files(ws.prompts_dir)),
        memory=agent_memory(ws, env, persona, mode, every),
        persona=persona,
        stats=cfg.memory.stats,
        max_turns=max_turns(ws.root, cfg),
        verifier=make_verifier(units, cfg.rendered_recipes()),
        max_attempts=MAX_ATTEMPTS,
        redactor=Redactor.from_settings(cfg.redact.values, cfg.redact.env),
        # The skills visible to the persona (global ones and its own), as in training.
        skills=_picker(ws, env, units) if mode == "recipe" else None,
        harness=load_harness(ws.root),  # prompts/harness.yaml (absent: the defaults)
        agent=command_agent_of(cfg.agent, ws.root),  # None: evolve's own agent over the model
    )


def command_agent_of(config: AgentConfig, root: Path) -> Agent | None:
    """`agent.command`'s agent, or None (evolve's own agent plays: the sandbox is not
    imported)."""
    if not config.command:
        return None
    from evolve.agent._command import command_agent

    return command_agent(config, root)


def with_agent(setup: EpisodeSetup, ws: Workspace, llm: LLM) -> EpisodeSetup:
    """`setup` played by the agent the workspace names (`agent.name`) over the agent model
    `llm`; unchanged for evolve's own agent.

    Raises:
        UnknownName: no agent answers to the name.
        ConfigError: its factory did not return an agent.
    """
    agent = workspace_agent(ws.config.agent.agent_name, llm, ws.root)
    return setup if agent is None else replace(setup, agent=agent)


def _picker(ws: Workspace, env: Environment, units: Sequence[MemoryUnit]) -> SkillPicker | None:
    """The same `<skills>` section the agent gets in training, with nothing held out: ties
    broken by the evidence in this memory's scoreboard record (`memory/skills/_strata.yaml`,
    read only when skills are on), as training broke them."""
    if not settings_of(ws.config).enabled:
        return None
    from evolve.skills._select import make_picker  # the picker loads only where skills are on
    from evolve.skills._strata import load_strata

    return make_picker(ws.config, units, training=False, env=env, strata=load_strata(ws.root))
