"""Environments: the protocol, and `make_env` to open one by name (the `environments`
registry) over a workspace's evalset."""

from __future__ import annotations

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
from evolve.envs._registry import EnvFactory, environments, make_env

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
    "EnvFactory",
    "environments",
    "make_env",
]
