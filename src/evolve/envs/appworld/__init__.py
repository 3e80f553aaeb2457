"""The `appworld` environment (issue 12): AppWorld's engine in a venv of its own, reached
through a worker subprocess; nothing of AppWorld is imported here or written to a workspace."""

from __future__ import annotations

from evolve.envs.appworld._client import AppWorldError, WorkerClient
from evolve.envs.appworld._env import AppWorldEnv, AppWorldEpisode, family_of
from evolve.envs.appworld._paths import APPWORLD_VERSION, data_root, home, venv_python

__all__ = [
    "APPWORLD_VERSION",
    "AppWorldEnv",
    "AppWorldEpisode",
    "AppWorldError",
    "WorkerClient",
    "data_root",
    "family_of",
    "home",
    "venv_python",
]
