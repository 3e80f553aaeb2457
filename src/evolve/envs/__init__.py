"""Environments: the protocol, and `make_env` to open one by name over a workspace."""

from __future__ import annotations

from pathlib import Path

from evolve.envs._protocol import (
    SPLITS,
    ApiCall,
    Environment,
    Feedback,
    Judgement,
    Split,
    Task,
    Tier,
    Violation,
    World,
)
from evolve.errors import UnknownName


def make_env(name: str, evalset: Path) -> Environment:
    """Open the environment `name` over an evalset folder."""
    if name == "persona_world":
        from evolve.envs.persona_world import PersonaWorldEnv

        return PersonaWorldEnv(evalset)
    if name == "appworld":
        from evolve.envs.appworld import AppWorldEnv

        return AppWorldEnv(evalset)
    raise UnknownName(f"unknown environment {name!r}; choose persona_world or appworld.")


__all__ = [
    "SPLITS",
    "ApiCall",
    "Environment",
    "Feedback",
    "Judgement",
    "Split",
    "Task",
    "Tier",
    "Violation",
    "World",
    "make_env",
]
