"""The `appworld` environment: AppWorld's engine in a venv of its own, reached
through a worker subprocess; nothing of AppWorld is imported here or written to a workspace.

The names are imported on first use (PEP 562), so that registering the environment (which
every lookup of an environment does) costs nothing until it is opened.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from evolve._lazy import lazy_exports
from evolve.envs._registry import environments

if TYPE_CHECKING:
    from pathlib import Path

    from evolve.envs._protocol import Environment
    from evolve.envs.appworld._client import AppWorldError, WorkerClient
    from evolve.envs.appworld._env import AppWorldEnv, AppWorldEpisode, family_of
    from evolve.envs.appworld._paths import APPWORLD_VERSION, data_root, home, venv_python

__getattr__, __dir__ = lazy_exports(
    __name__,
    globals(),
    {
        "evolve.envs.appworld._client": ("AppWorldError", "WorkerClient"),
        "evolve.envs.appworld._env": ("AppWorldEnv", "AppWorldEpisode", "family_of"),
        "evolve.envs.appworld._paths": ("APPWORLD_VERSION", "data_root", "home", "venv_python"),
    },
)


@environments.register("appworld")
def open_appworld(evalset: Path) -> Environment:
    """`AppWorldEnv` over `evalset` (imported here: it brings pydantic, PyYAML and the client)."""
    from evolve.envs.appworld._env import AppWorldEnv

    return AppWorldEnv(evalset)


__all__ = [
    "APPWORLD_VERSION",
    "AppWorldEnv",
    "AppWorldEpisode",
    "AppWorldError",
    "WorkerClient",
    "data_root",
    "family_of",
    "home",
    "open_appworld",
    "venv_python",
]
