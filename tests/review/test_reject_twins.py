"""Two learners learned one text as two units (twins): after their merge one is active and
the other pending. Rejecting the pending one rejects the text: its active twin is revoked in
the same commit (as the next merge would revoke it), not left rendering until then."""

from __future__ import annotations

import json
from collections.abc import Callable

import pytest

from conftest import run_cli
from evolve.applier import Op
from evolve.memory import MemoryUnit, load_units
from evolve.merge import rules
from evolve.workspace import Workspace
from factories import (
    TWIN_ACTIVE,
    TWIN_PENDING,
    TWIN_TEXT,
    commit_episode,
    memory_unit,
)
from factories import twins_after_a_merge as factory_twins

RunGit = Callable[..., str]
TEXT, ACTIVE, PENDING = TWIN_TEXT, TWIN_ACTIVE, TWIN_PENDING


def twins_after_a_merge(ws: Workspace, run_git: RunGit) -> str:
    """The twins a merge left (factories.twins_after_a_merge), checked as this test reads them."""
    taught = factory_twins(ws, run_git)
    assert _said(ws) == {ACTIVE: "active", PENDING: "pending"}  # the twins the merge left
    return taught


def _said(ws: Workspace) -> dict[str, str]:
    return {u.id: u.status for u in load_units(ws.root) if u.text == TEXT}


def _unit(ws: Workspace, ident: str) -> MemoryUnit:
    return next(u for u in load_units(ws.root) if u.id == ident)


def test_rejecting_a_unit_revokes_its_active_twin_in_the_same_commit(
    ws: Workspace, run_git: RunGit, capsys: pytest.CaptureFixture[str]
) -> None:
    twins_after_a_merge(ws, run_git)
    code, out, err = run_cli(capsys, "review", "reject", PENDING)
    assert code == 0, err
    assert _said(ws) == {ACTIVE: "revoked", PENDING: "tombstoned"}
    assert _unit(ws, ACTIVE).reason == f"tombstone {PENDING}"
    message = run_git(ws.root, "log", "-1", "--format=%B")
    assert f"revoke={ACTIVE}" in message and f"tombstone={PENDING}" in message
    assert run_git(ws.root, "status", "--porcelain") == ""
    code, out, err = run_cli(capsys, "memory", "--json")
    assert TEXT not in json.loads(out)["memory"]
    # The next merge's rules find nothing left to settle for the text.
    assert rules(load_units(ws.root), [], review=False).ops == {}
    # Reverting the rejection brings both back as they were.
    code, out, err = run_cli(capsys, "revert", "HEAD")
    assert code == 0, err
    assert _said(ws) == {ACTIVE: "active", PENDING: "pending"}


def test_rejecting_a_unit_without_a_twin_revokes_nothing_else(
    ws: Workspace, run_git: RunGit, capsys: pytest.CaptureFixture[str]
) -> None:
    twins_after_a_merge(ws, run_git)
    other = memory_unit("ace-cccccccccc", "Pay with the card I use most often.", status="pending")
    commit_episode(ws, 1, [Op(op="add", unit=other)], "ace")
    code, out, err = run_cli(capsys, "review", "reject", "ace-cccccccccc")
    assert code == 0, err
    assert _said(ws) == {ACTIVE: "active", PENDING: "pending"}
