"""Workspace health probes (PROTECTED: the evolving side can never edit these).

`evolve init` copies this folder into every workspace, and the gate runs it there against
the protected files of the generation's base. In the evolve project itself it runs against
the project's own default harness.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from evolve.envs import SPLITS, make_env
from evolve.memory import load_units
from evolve.workspace import CONFIG_NAME, load_config


def _root() -> Path:
    here = Path(__file__).resolve()
    for folder in here.parents:
        if (folder / CONFIG_NAME).is_file():
            return folder
    pytest.fail("no evolve.yaml above the health probes")


def test_config_is_valid() -> None:
    load_config(_root() / CONFIG_NAME)


def test_evalset_splits_are_frozen_and_disjoint() -> None:
    root = _root()
    env = make_env(load_config(root / CONFIG_NAME).environment, root / "evalset")
    ids = {split: {t.id for t in env.tasks(split)} for split in SPLITS}
    assert all(ids.values()), "every split has tasks"
    assert not (ids["train"] & ids["dev"]) and not (ids["dev"] & ids["holdout"])
    families = {split: {t.family for t in env.tasks(split)} for split in SPLITS}
    assert not families["train"] & (families["dev"] | families["holdout"]), (
        "training families must be disjoint from evaluation families"
    )


def test_system_prompt_exists_and_is_not_empty() -> None:
    system = _root() / "prompts" / "system.md"
    assert system.is_file() and system.read_text(encoding="utf-8").strip()


def test_memory_units_parse() -> None:
    load_units(_root())  # raises MalformedUnit naming the file
