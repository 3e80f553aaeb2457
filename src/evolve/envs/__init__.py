"""Environments: the protocol, and `make_env` to open one by name (the `environments`
registry) over a workspace's evalset."""

from __future__ import annotations

from evolve.envs._protocol import (
    CAPABILITIES,
    SPLITS,
    ApiCall,
    CoreEnvironment,
    Drift,
    Environment,
    Feedback,
    Filled,
    Judgement,
    Oracle,
    Personas,
    RuleNames,
    Split,
    Stats,
    Task,
    Tier,
    Violation,
    World,
    capabilities,
    harnessed,
    personas_of,
)
from evolve.envs._registry import EnvFactory, environments, make_env

__all__ = [
    "CAPABILITIES",
    "SPLITS",
    "ApiCall",
    "CoreEnvironment",
    "Drift",
    "Environment",
    "Filled",
    "Oracle",
    "Personas",
    "RuleNames",
    "Stats",
    "capabilities",
    "harnessed",
    "personas_of",
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
