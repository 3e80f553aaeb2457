"""`files`: an environment declared in a workspace's files, no class to write.

``evalset/tasks.jsonl`` holds the tasks (one JSON object a line: ``id``, ``split``,
``instruction``, and optionally ``inputs``, ``expected``, ``family``); ``evalset/checks.py``
the checkers as plain functions; ``evalset/tools.py`` (optional) the tools the agent may call.
See docs/environments.md.
"""

from __future__ import annotations

from evolve.envs.files._env import SUBMIT, FilesEnv, FilesWorld
from evolve.envs.files._load import FilesTask
from evolve.envs.files._scaffold import write_scaffold

__all__ = ["SUBMIT", "FilesEnv", "FilesTask", "FilesWorld", "write_scaffold"]
