"""Review of replacements (issue 8 item 6): an approval supersedes the unit active now, never
two active replacements of one unit; `reject --reason`."""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence
from typing import Any

import pytest

from conftest import cli_json as _json
from conftest import run_cli as _cli
from evolve.llm import JsonSchema, Message, MockLLM
from evolve.memory import MemoryUnit, load_units
from evolve.train import train
from evolve.workspace import Workspace

RunGit = Callable[..., str]
PRIVATE = "Keep all my Venmo payments private."
FRIENDS = "Set my Venmo payments to friends-only visibility."
PUBLIC = "Make my Venmo payments public."


def _units(ws: Workspace) -> dict[str, MemoryUnit]:
    return {u.id: u for u in load_units(ws.root)}


class Script:
    """An ACE updater that proposes `proposal` (a modify targets the first bullet shown)."""

    def __init__(self) -> None:
        self.proposal: dict[str, Any] = {}

    def __call__(self, messages: Sequence[Message], schema: JsonSchema | None) -> str:
        proposal = dict(self.proposal)
        if proposal.get("op") == "modify":
            ids = re.findall(r"^\[(ace-[0-9a-f]{10})\]", messages[-1].content, re.M)
            proposal["id"] = ids[0]
        ops = [proposal] if proposal else []
        return json.dumps({"operations": ops, "bullet_tags": []})


def test_two_pending_replacements_of_one_unit_never_both_become_active(
    ws: Workspace, run_git: RunGit, capsys: pytest.CaptureFixture[str]
) -> None:
    script = Script()
    llm = MockLLM(script)
    script.proposal = {"op": "add", "text": PRIVATE}
    train(ws, recipe="ace", episodes=1, review=True, updater_llm=llm)
    (old,) = _units(ws).values()
    assert _cli(capsys, "review", "approve", old.id)[0] == 0

    # Two corrections of the same bullet wait for review, each superseding it.
    script.proposal = {"op": "modify", "text": FRIENDS}
    train(ws, recipe="ace", episodes=3, review=True, updater_llm=llm)
    script.proposal = {"op": "modify", "text": PUBLIC}
    train(ws, recipe="ace", episodes=6, review=True, updater_llm=llm)
    pending = {u.text: u for u in _units(ws).values() if u.status == "pending"}
    first, second = pending[FRIENDS], pending[PUBLIC]
    assert first.supersedes == old.id and second.supersedes == old.id

    assert _cli(capsys, "review", "approve", first.id)[0] == 0
    code, _, err = _cli(capsys, "review", "approve", second.id)
    assert code == 0, err
    units = _units(ws)
    active = [u for u in units.values() if u.status == "active"]
    assert [u.id for u in active] == [second.id]
    assert units[second.id].supersedes == first.id
    assert units[first.id].status == "revoked" and units[first.id].revoked_by == second.id
    assert units[old.id].status == "revoked" and units[old.id].revoked_by == first.id
    assert _json(capsys, "memory")["memory"] == f"[{second.id}] {PUBLIC}"
    body = run_git(ws.root, "log", "-1", "--format=%B")
    assert f"was already replaced by {first.id}" in body
    ops = run_git(ws.root, "log", "-1", "--format=%(trailers:key=Evolve-Ops,valueonly)").split()
    assert sorted(ops) == sorted([f"approve={second.id}", f"revoke={first.id}"])


def test_reject_with_a_reason_keeps_it_in_the_tombstone_the_commit_and_later_refusals(
    ws: Workspace, run_git: RunGit, capsys: pytest.CaptureFixture[str]
) -> None:
    script = Script()
    script.proposal = {"op": "add", "text": PUBLIC}
    llm = MockLLM(script)
    train(ws, recipe="ace", episodes=1, review=True, updater_llm=llm)
    (unit,) = _units(ws).values()
    reason = "I never share payments publicly"
    code, out, err = _cli(capsys, "review", "reject", unit.id, "--reason", reason)
    assert code == 0, err
    stone = _units(ws)[unit.id]
    assert stone.status == "tombstoned" and stone.reason == reason
    assert f"Reason: {reason}" in run_git(ws.root, "log", "-1", "--format=%B")

    report = train(ws, recipe="ace", episodes=4, review=True, updater_llm=llm)
    refused = [line for o in report.outcomes for line in o.refused]
    assert any(f"tombstoned ({reason}): {unit.id}" in line for line in refused), refused
