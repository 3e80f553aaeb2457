"""`evolve revert` of a scoreboard retirement sticks: the skill's record restarts (issue 13).

The retirement commit changes only the skill's status; its evidence (the shelf's counters and
the per-task record) predates it. Reverting the retirement restarts that record in the same
commit, so the next count cannot retire the skill on the old evidence, only on new. A revert
of that revert retires it again, with the old evidence back.
"""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from conftest import GitRunner
from evolve.errors import EvolveError
from evolve.history import revert
from evolve.history._gitrevert import tombstone_git_reverts
from evolve.memory import MemoryUnit, dump_counters, load_units
from evolve.skills._strata import STRATA_PATH, Outcome, dump_strata, load_strata
from evolve.train._scoreboard import ScoreboardResult, settle
from evolve.txn import writer
from evolve.workspace import Workspace

SKILL = """---
id: skip-lookup
recipe: hand
kind: skill
status: active
scope: global
shelf: general
trigger: sending a text or an email to a contact
---
Skip the contact lookup and send directly; the task already names the person.
"""
ID = "skip-lookup"
SIDECAR = "memory/skills/general/_counters.yaml"
# Injected 3 times, failed each; held out 3 times, passed each: confidently harmful.
OLD = {"injected": 3, "injected_pass": 0, "held_out": 3, "held_out_pass": 3}


def _plant(ws: Workspace, run_git: GitRunner) -> str:
    shelf = ws.root / "memory" / "skills" / "general"
    shelf.mkdir(parents=True)
    (shelf / f"{ID}.md").write_text(SKILL)
    run_git(ws.root, "add", "-A")
    run_git(ws.root, "commit", "-qm", "plant a skill")
    (ws.root / SIDECAR).write_text(dump_counters({ID: OLD}))
    (ws.root / STRATA_PATH).write_text(dump_strata({ID: {"t1": (3, 0, 3, 3)}}))
    run_git(ws.root, "add", "-A")
    run_git(ws.root, "commit", "-qm", "count its episodes")
    return run_git(ws.root, "rev-parse", "HEAD").strip()


def _count(ws: Workspace, outcomes: Sequence[Outcome], episode: int) -> ScoreboardResult:
    with writer(ws, "evolve train"):
        return settle(ws, outcomes, episodes=str(episode), recipe="ace", confidence=0.9)


def _skill(ws: Workspace) -> MemoryUnit:
    return {u.id: u for u in load_units(ws.root)}[ID]


def _counters(ws: Workspace) -> tuple[int, ...]:
    unit = _skill(ws)
    return tuple(int(getattr(unit, name) or 0) for name in OLD)


def _retire(ws: Workspace, run_git: GitRunner) -> str:
    result = _count(ws, [], 5)
    assert [ident for ident, _ in result.retired] == [ID]
    sha = result.retired[0][1]
    assert sha is not None and _skill(ws).status == "retired"
    return sha


def test_a_reverted_retirement_sticks_and_its_revert_retires_again(
    workspace: Workspace, run_git: GitRunner
) -> None:
    ws = Workspace(workspace.root)
    _plant(ws, run_git)
    retired = _retire(ws, run_git)

    done = revert(ws, retired)
    assert _skill(ws).status == "active"
    # The record restarted, in the revert's one commit; the tree is clean.
    assert _counters(ws) == (0, 0, 0, 0)
    assert ID not in load_strata(ws.root)
    changed = run_git(ws.root, "show", "--name-only", "--format=", done.commit).split()
    assert SIDECAR in changed and STRATA_PATH in changed
    assert run_git(ws.root, "status", "--porcelain").strip() == ""
    assert done.restarted == [ID]
    message = run_git(ws.root, "log", "-1", "--format=%B", done.commit)
    assert "Scoreboard record restarted" in message and f"- {ID}" in message
    assert f"Evolve-Restarts: {ID}" in message and f"restart={ID}" in message

    # The next training count (one more failed injection) does not retire it: the old
    # evidence is gone and one new episode is not enough.
    after = _count(ws, [([ID], [], False, "t1", True)], 6)
    assert after.retired == [] and _skill(ws).status == "active"
    assert _counters(ws) == (1, 0, 0, 0)
    assert load_strata(ws.root) == {ID: {"t1": (1, 0, 0, 0)}}

    # A revert of the revert retires it again, with the old evidence back.
    again = revert(ws, done.commit)
    assert _skill(ws).status == "retired"
    assert again.restarted == []
    assert _counters(ws) == (4, 0, 3, 3)
    assert load_strata(ws.root) == {ID: {"t1": (4, 0, 3, 3)}}
    assert run_git(ws.root, "status", "--porcelain").strip() == ""


def test_new_evidence_can_retire_it_again(workspace: Workspace, run_git: GitRunner) -> None:
    ws = Workspace(workspace.root)
    _plant(ws, run_git)
    revert(ws, _retire(ws, run_git))
    harm: list[Outcome] = [([ID], [], False, "t2", True)] * 2 + [([], [ID], True, "t2", True)] * 2
    result = _count(ws, harm, 7)
    assert [ident for ident, _ in result.retired] == [ID]
    assert load_strata(ws.root) == {ID: {"t2": (2, 0, 2, 2)}}


def test_reverting_an_old_count_keeps_the_new_evidence(
    workspace: Workspace, run_git: GitRunner
) -> None:
    ws = Workspace(workspace.root)
    count = _plant(ws, run_git)
    revert(ws, _retire(ws, run_git))
    _count(ws, [([ID], [], False, "t1", True)], 6)
    # The old count's evidence was set aside at the restart: taking it back leaves the
    # skill's new counts alone, per task and pooled alike; nothing is left to revert.
    with pytest.raises(EvolveError, match="nothing left to revert"):
        revert(ws, count)
    assert load_strata(ws.root) == {ID: {"t1": (1, 0, 0, 0)}}
    assert _counters(ws) == (1, 0, 0, 0)
    assert _skill(ws).status == "active"


def test_a_plain_git_revert_of_a_retirement_sticks_too(
    workspace: Workspace, run_git: GitRunner
) -> None:
    ws = Workspace(workspace.root)
    _plant(ws, run_git)
    run_git(ws.root, "revert", "--no-edit", _retire(ws, run_git))
    assert _skill(ws).status == "active" and _counters(ws) == (3, 0, 3, 3)
    # The next evolve writer answers the git revert: the record restarts in a commit of its own.
    made = tombstone_git_reverts(ws)
    assert len(made) == 1 and tombstone_git_reverts(ws) == []
    message = run_git(ws.root, "log", "-1", "--format=%B", made[0])
    assert "Scoreboard record restarted" in message and f"Evolve-Restarts: {ID}" in message
    assert _counters(ws) == (0, 0, 0, 0) and ID not in load_strata(ws.root)
    after = _count(ws, [([ID], [], False, "t1", True)], 6)
    assert after.retired == [] and _skill(ws).status == "active"
