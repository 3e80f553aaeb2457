"""Environments by name: the `evolve.environments` registry and `make_env`.

An environment is registered as anything that opens it over an evalset folder (its class, or
a function): `persona_world` and `appworld` are evolve's; an installed package adds one with an
``evolve.environments`` entry point, and evolve.yaml may name an import path
(``environment: mypkg.support:SupportDesk``).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from evolve._registry import Registry
from evolve.envs._protocol import Environment

EnvFactory = Callable[[Path], Environment]

environments: Registry[EnvFactory] = Registry("environment", "evolve.environments")


def make_env(name: str, evalset: Path) -> Environment:
    """Open the environment `name` over an evalset folder.

    Raises:
        UnknownName: for a name no environment answers to (one sentence listing the choices).
    """
    return environments.lookup(name)(evalset)
