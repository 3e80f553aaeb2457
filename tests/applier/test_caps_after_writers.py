"""Caps are invariants (issue 23 item 2): every writer, reverts and review approvals
included, leaves every scope within its caps. A revert that would bring a unit back over a
cap evicts by the recipe's own rule in the same commit (and says so), or refuses, naming the
cap and what resolves it."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from pathlib import Path

import pytest

from evolve.applier import Op, overflows
from evolve.errors import EvolveError
from evolve.history import revert
from evolve.memory import load_units
from evolve.workspace import Workspace
from factories import commit_episode, memory_unit, reflection

RunGit = Callable[..., str]
ALEX = "user:alex"
_refl = partial(memory_unit, recipe="reflexion", kind="reflection", created_episode=0)


def _window(ws: Workspace) -> list[str]:
    """Reflections 0-2, then 3-6 each evicting the oldest (keep the last 3); the commits."""
    shas = [commit_episode(ws, 0, [Op(op="add", unit=reflection(i)) for i in range(3)])]
    for i in range(3, 7):
        evict = Op(
            op="evict", unit=reflection(i - 3), reason="keep last 3", room_for=f"reflexion-r{i}"
        )
        shas.append(commit_episode(ws, i, [Op(op="add", unit=reflection(i)), evict]))
    return shas


def _active(ws: Workspace) -> set[str]:
    return {u.id for u in load_units(ws.root) if u.status == "active"}


def _trailers(root: Path, run_git: RunGit, rev: str) -> dict[str, str]:
    block = run_git(root, "log", "-1", "--format=%(trailers:only=true,unfold=true)", rev)
    return {k: v.strip() for k, _, v in (line.partition(": ") for line in block.splitlines()) if v}


def test_a_revert_that_brings_an_evicted_reflection_back_keeps_the_window(
    workspace: Workspace, run_git: RunGit
) -> None:
    ws = workspace
    shas = _window(ws)
    assert _active(ws) == {"reflexion-r4", "reflexion-r5", "reflexion-r6"}
    # The commit that added r3 (evicted since) and evicted r0: undoing it brings r0 back ...
    result = revert(ws, shas[1])
    # ... over a window of three, so the window's own rule evicts the oldest: r0 itself.
    assert overflows(ws, load_units(ws.root)) == []
    assert _active(ws) == {"reflexion-r4", "reflexion-r5", "reflexion-r6"}
    body = run_git(ws.root, "log", "-1", "--format=%B", result.commit)
    assert "Evicted to keep memory within its caps" in body
    assert "- reflexion-r0: keep the last 3" in body
    assert "evict=reflexion-r0" in _trailers(ws.root, run_git, result.commit)["Evolve-Ops"]
    assert run_git(ws.root, "status", "--porcelain") == ""


def test_a_revert_of_a_revoke_evicts_the_oldest_active_reflection(
    workspace: Workspace, run_git: RunGit
) -> None:
    ws = workspace
    commit_episode(ws, 0, [Op(op="add", unit=reflection(i)) for i in range(3)])
    retire = commit_episode(ws, 1, [Op(op="revoke", unit=reflection(2).with_(status="revoked"))])
    commit_episode(ws, 2, [Op(op="add", unit=reflection(3))])
    # Undoing the retirement makes r2 active again beside r0, r1 and r3: the oldest, r0, goes.
    result = revert(ws, retire)
    assert _active(ws) == {"reflexion-r1", "reflexion-r2", "reflexion-r3"}
    assert overflows(ws, load_units(ws.root)) == []
    assert not (ws.root / "memory/alex/reflexion-r0.md").exists()
    assert "- reflexion-r0: keep the last 3" in run_git(
        ws.root, "log", "-1", "--format=%B", result.commit
    )


def test_a_revert_over_a_cap_with_no_eviction_rule_is_refused_naming_the_cap(
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
    head = run_git(root, "rev-parse", "HEAD")
    with pytest.raises(EvolveError) as err:
        revert(ws, retire)
    message = str(err.value)
    assert "user:alex holds 2 active units of tepa against its cap of 1" in message
    assert "caps.tepa.units" in message and "`evolve revert`" in message
    assert run_git(root, "rev-parse", "HEAD") == head
    assert run_git(root, "status", "--porcelain") == ""
    assert _active(ws) == {"tepa-note"}


def test_overflows_names_each_scope_and_cap(workspace: Workspace) -> None:
    units = [reflection(i) for i in range(4)]
    (over,) = overflows(workspace, units)
    assert (over.scope, over.recipe, over.cap, over.limit, over.size) == (
        ALEX,
        "reflexion",
        "units",
        3,
        4,
    )
    assert overflows(workspace, units[:3]) == []
