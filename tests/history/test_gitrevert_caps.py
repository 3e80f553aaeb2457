"""Caps hold after evolve's answer to a plain `git revert` (issue 23 item 2): a `git revert`
that brings a scope over its cap is answered by the same check `evolve revert` runs
(`applier.fit_files`), evicting by the recipe's own rule in the answering commit, or refusing
in one sentence naming the cap."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial

import pytest

from evolve.applier import Op, overflows
from evolve.errors import EvolveError
from evolve.history import tombstone_git_reverts
from evolve.memory import load_units
from evolve.workspace import Workspace
from factories import commit_episode, memory_unit, reflection

RunGit = Callable[..., str]
ALEX = "user:alex"
_refl = partial(memory_unit, recipe="reflexion", kind="reflection", created_episode=0)


def _active(ws: Workspace) -> set[str]:
    return {u.id for u in load_units(ws.root) if u.status == "active"}


def test_a_git_revert_over_a_cap_is_answered_with_the_recipes_eviction(
    workspace: Workspace, run_git: RunGit
) -> None:
    ws = workspace
    commit_episode(ws, 0, [Op(op="add", unit=reflection(i)) for i in range(3)])
    retire = commit_episode(ws, 1, [Op(op="revoke", unit=reflection(2).with_(status="revoked"))])
    commit_episode(ws, 2, [Op(op="add", unit=reflection(3))])
    run_git(ws.root, "revert", "--no-edit", retire)
    # git brought r2 back beside r0, r1 and r3: four reflections against a window of three.
    assert [o.line() for o in overflows(ws, load_units(ws.root))] == [
        "user:alex holds 4 active units of reflexion against its cap of 3 (caps.reflexion.units)"
    ]

    [answer] = tombstone_git_reverts(ws)

    assert overflows(ws, load_units(ws.root)) == []
    assert _active(ws) == {"reflexion-r1", "reflexion-r2", "reflexion-r3"}
    body = run_git(ws.root, "log", "-1", "--format=%B", answer)
    assert body.startswith("cap evictions for git revert ")
    assert "Evicted to keep memory within its caps (the recipe's own rule):" in body
    assert "- reflexion-r0: keep the last 3" in body
    assert "Evolve-Ops: evict=reflexion-r0" in body
    assert run_git(ws.root, "status", "--porcelain") == ""
    assert tombstone_git_reverts(ws) == []  # answered once


def test_a_git_revert_over_a_cap_no_rule_meets_is_refused_naming_the_cap(
    workspace: Workspace, run_git: RunGit
) -> None:
    root = workspace.root
    config = root / "evolve.yaml"
    config.write_text(
        config.read_text("utf-8").replace("  tepa: {chars: 300}", "  tepa: {units: 1, chars: 300}"),
        "utf-8",
    )
    run_git(root, "commit", "-qam", "caps: one precedent")
    ws = Workspace(root)
    tepa = partial(memory_unit, recipe="tepa", kind="precedent", created_episode=0)
    card = tepa("tepa-card", "Pay with the usual card.", key="payment.card")
    commit_episode(ws, 0, [Op(op="add", unit=card)], "tepa")
    retire = commit_episode(ws, 1, [Op(op="revoke", unit=card.with_(status="revoked"))], "tepa")
    note = tepa("tepa-note", "Put the running total in the note.", key="payment.note")
    commit_episode(ws, 2, [Op(op="add", unit=note)], "tepa")
    run_git(root, "revert", "--no-edit", retire)
    head = run_git(root, "rev-parse", "HEAD")

    with pytest.raises(EvolveError) as err:
        tombstone_git_reverts(ws)

    message = str(err.value)
    assert message.startswith("answering git revert ")
    assert "user:alex holds 2 active units of tepa against its cap of 1" in message
    assert "caps.tepa.units" in message
    assert run_git(root, "rev-parse", "HEAD") == head
    assert run_git(root, "status", "--porcelain") == ""
