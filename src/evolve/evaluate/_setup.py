"""What the agent is given in a workspace: prompt files and memory in the configured mode."""

from __future__ import annotations

from typing import Literal

from evolve.agent import read_prompt_files
from evolve.envs import Environment
from evolve.episode import EpisodeSetup
from evolve.memory import fixed_block, load_units, render_memory, scope_for
from evolve.workspace import Workspace

InjectMode = Literal["none", "recipe", "oracle", "fixed"]
INJECT_MODES: tuple[InjectMode, ...] = ("none", "recipe", "oracle", "fixed")


def agent_memory(ws: Workspace, env: Environment, persona: str, mode: InjectMode) -> str:
    """The `<memory>` text for `persona` in injection mode `mode`.

    `recipe` renders the unit files; `oracle` gives the persona's own preference statements;
    `fixed` is a neutral block as long as the recipe's render (a token-matched control);
    `none` gives nothing.
    """
    if mode == "none":
        return ""
    if mode == "oracle":
        return "\n".join(f"- {s}" for s in env.oracle_statements(persona, None))
    rendered = render_memory(load_units(ws.root), scope_for(persona))
    if mode == "fixed":
        return fixed_block(len(rendered))
    return rendered


def episode_setup(
    ws: Workspace, env: Environment, persona: str, mode: InjectMode | None = None
) -> EpisodeSetup:
    cfg = ws.config
    return EpisodeSetup(
        prompt_files=tuple(read_prompt_files(ws.prompts_dir)),
        memory=agent_memory(ws, env, persona, mode or cfg.memory.inject),
        persona=persona,
        stats=cfg.memory.stats,
        max_turns=cfg.agent.max_turns,
    )
