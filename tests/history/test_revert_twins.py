"""`evolve revert SHA --unit ID` of a unit that has a twin (another unit saying the same text,
learned by another learner and merged in): the tombstone refuses the text, so the twin is
tombstoned with it, as a whole-commit revert already did, instead of staying live until the
next merge."""

from __future__ import annotations

import json
from collections.abc import Callable

import pytest

from conftest import run_cli
from evolve.memory import load_units
from evolve.workspace import Workspace
from factories import (
    TWIN_ACTIVE,
    TWIN_PENDING,
    TWIN_TEXT,
)
from factories import twins_after_a_merge as factory_twins

RunGit = Callable[..., str]
TEXT, ACTIVE, PENDING = TWIN_TEXT, TWIN_ACTIVE, TWIN_PENDING


def test_a_per_unit_revert_tombstones_the_units_twin_too(
    ws: Workspace, run_git: RunGit, capsys: pytest.CaptureFixture[str]
) -> None:
    taught = factory_twins(ws, run_git)
    code, out, err = run_cli(capsys, "revert", taught, "--unit", ACTIVE, "--json")
    assert code == 0, err
    said = {u.id: u for u in load_units(ws.root) if u.text == TEXT}
    assert {i: u.status for i, u in said.items()} == {ACTIVE: "tombstoned", PENDING: "tombstoned"}
    assert said[PENDING].reverted_commit == taught
    code, out, err = run_cli(capsys, "review", "list", "--json")
    assert code == 0, err
    assert PENDING not in out  # nothing left to approve the text back
    code, out, err = run_cli(capsys, "memory", "--json")
    assert TEXT not in json.loads(out)["memory"]
    code, out, err = run_cli(capsys, "revert", "HEAD")  # undoing the revert lifts both
    assert code == 0, err
    said = {u.id: u for u in load_units(ws.root) if u.text == TEXT}
    assert {i: u.status for i, u in said.items()} == {ACTIVE: "active", PENDING: "pending"}
