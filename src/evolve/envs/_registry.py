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
from evolve.envs._protocol import CoreEnvironment, Environment, harnessed

EnvFactory = Callable[[Path], CoreEnvironment]

environments: Registry[EnvFactory] = Registry("environment", "evolve.environments")


def make_env(name: str, evalset: Path) -> Environment:
    """Open the environment `name` over an evalset folder, as the harness calls it: an
    environment that declares only the core protocol gets the defaults of
    :class:`~evolve.envs.Filled` for the capabilities it lacks.

    Raises:
        UnknownName: for a name no environment answers to (one sentence listing the choices).
        ConfigError: what `name` opens is not an environment.
    """
    return harnessed(environments.lookup(name)(evalset))
