"""`evolve init --env appworld`: turn a freshly copied harness into an AppWorld workspace."""

from __future__ import annotations

import re
from pathlib import Path

from evolve._io import atomic_write
from evolve.envs.appworld._env import CONFIG_FILE, DEFAULT_APPS, SPLITS_FILE
from evolve.envs.appworld._paths import data_root, venv_python
from evolve.envs.appworld._setup import build_splits, count_tasks, splits_yaml

APPWORLD_MODEL = "openai/gpt-4o-mini"

OPTIONS = f"""\
# AppWorld options of this workspace (protected, like the rest of evalset/).
# apps: the apps whose APIs the agent gets as app__api tools (docs read from AppWorld at run time).
apps: [{", ".join(DEFAULT_APPS)}]
"""

EMPTY_SPLITS = """\
# AppWorld task ids by split. No AppWorld data was found when this workspace was made:
# install it (README: Running on AppWorld), then run `evolve appworld splits`.
train: []
dev: []
holdout: []
"""


def scaffold(target: Path) -> None:
    """Rewrite the copied harness for AppWorld (splits from the installed tasks, if any)."""
    config = target / "evolve.yaml"
    text = config.read_text(encoding="utf-8")
    text = re.sub(r"(?m)^environment:.*$", "environment: appworld", text)
    # The offline sim answers persona_world's tasks only; AppWorld needs a real model.
    text = re.sub(
        r"(?m)^(  (?:agent|updater|reflector):)\s*sim\b.*$", rf"\1 {APPWORLD_MODEL}", text
    )
    atomic_write(config, text)
    evalset = target / "evalset"
    (evalset / "tasks.yaml").unlink(missing_ok=True)
    atomic_write(evalset / CONFIG_FILE, OPTIONS)
    root = data_root()
    if root is not None and venv_python().is_file() and count_tasks(root) > 0:
        splits = build_splits(root.resolve())
        atomic_write(evalset / SPLITS_FILE, splits_yaml(splits, root.resolve()))
    else:
        atomic_write(evalset / SPLITS_FILE, EMPTY_SPLITS)


def missing_data_note(evalset: Path) -> str | None:
    """One sentence for the user when the workspace's splits are still empty."""
    if (evalset / SPLITS_FILE).read_text(encoding="utf-8") != EMPTY_SPLITS:
        return None
    return (
        "No AppWorld data was found, so the splits are empty: run `evolve appworld setup "
        "--root DIR`, then `evolve appworld splits` in this workspace."
    )
