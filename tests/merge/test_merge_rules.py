"""The unit rules of a merge (issue 25): a tombstone on one side refuses the unit on the other,
a unit superseded on both sides keeps one replacement (or goes to review), an edit against a
supersession is a conflict said in one sentence with the commands that resolve it, caps hold,
and `evolve merge --fix` settles a plain `git merge`."""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from typing import Any

import pytest

from conftest import one_sentence, run_cli
from conftest import workspace_state as state
from evolve.applier._caps import overflows
from evolve.errors import EvolveError
from evolve.memory import MemoryUnit, dump_unit, load_units, without_counters
from evolve.merge import merge_branch, reconcile
from evolve.workspace import Workspace

RunGit = Callable[..., str]
ALEX = "user:alex"
FRIENDS = "Set my Venmo payments to friends-only visibility."
PUBLIC = "Keep all my Venmo payments public."
PRIVATE = "Keep all my Venmo payments private."
CARD = "Pay with the card I use most often."


def _unit(uid: str, text: str, episode: int, **fields: Any) -> MemoryUnit:
    data: dict[str, Any] = {
        "id": uid,
        "recipe": "ace",
        "kind": "bullet",
        "scope": ALEX,
        "created_episode": episode,
        "updated_episode": episode,
        "valid_from": f"2026-01-01T00:00:{episode:02d}.000000+00:00",
        "text": text,
    }
    data.update(fields)
    return MemoryUnit.model_validate(data)


def _commit(ws: Workspace, run_git: RunGit, units: list[MemoryUnit], message: str) -> None:
    for unit in units:
        path = ws.root / unit.path()
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(dump_unit(without_counters(unit)), encoding="utf-8")
    run_git(ws.root, "add", "-A")
    run_git(ws.root, "commit", "-q", "--allow-empty", "-m", message)


def _diverge(
    ws: Workspace,
    run_git: RunGit,
    base: list[MemoryUnit],
    ours: list[MemoryUnit],
    theirs: list[MemoryUnit],
) -> None:
    _commit(ws, run_git, base, "base")
    run_git(ws.root, "checkout", "-q", "-b", "other")
    _commit(ws, run_git, theirs, "their side")
    run_git(ws.root, "checkout", "-q", "main")
    _commit(ws, run_git, ours, "our side")


def _units(ws: Workspace) -> dict[str, MemoryUnit]:
    return {u.id: u for u in load_units(ws.root)}


def test_a_tombstone_on_one_side_refuses_the_unit_on_the_other(
    workspace: Workspace, run_git: RunGit
) -> None:
    x = _unit("ace-x", PRIVATE, 1)
    stone = x.with_(status="tombstoned", reason="stale", updated_episode=5)
    relearned = _unit("ace-y", PRIVATE, 6)  # the other learner learned the same text again
    _diverge(workspace, run_git, [x], [stone], [relearned])

    result = merge_branch(workspace, "other")

    units = _units(workspace)
    assert units["ace-x"].status == "tombstoned"
    assert units["ace-y"].status == "revoked"
    assert "ace-x" in (units["ace-y"].reason or "")
    assert ("revoke", "ace-y") in result.ops and result.rules == {"tombstone": 1}
    assert PRIVATE not in _rendered(workspace)


def test_the_same_unit_superseded_on_both_sides_keeps_one_replacement(
    workspace: Workspace, run_git: RunGit
) -> None:
    x = _unit("ace-x", PRIVATE, 1)
    a, b = _unit("ace-a", FRIENDS, 5), _unit("ace-b", PUBLIC, 7)  # theirs learned later
    _diverge(
        workspace,
        run_git,
        [x],
        [x.with_(status="revoked", revoked_by="ace-a", revoked_at=5), a],
        [x.with_(status="revoked", revoked_by="ace-b", revoked_at=7), b],
    )

    result = merge_branch(workspace, "other")

    units = _units(workspace)
    assert units["ace-b"].status == "active"
    assert units["ace-a"].status == "revoked" and units["ace-a"].revoked_by == "ace-b"
    assert units["ace-x"].status == "revoked" and units["ace-x"].revoked_by == "ace-b"
    assert result.rules == {"supersede": 2}
    assert "Evolve-Merge-Rules: supersede=2" in run_git(workspace.root, "log", "-1")


def test_with_review_on_the_losing_replacement_goes_to_review(
    workspace: Workspace, run_git: RunGit
) -> None:
    config = workspace.root / "evolve.yaml"
    config.write_text(
        config.read_text("utf-8").replace("  review: false", "  review: true"), "utf-8"
    )
    assert Workspace(workspace.root).config.train.review
    x = _unit("ace-x", PRIVATE, 1)
    a, b = _unit("ace-a", FRIENDS, 8), _unit("ace-b", PUBLIC, 7)  # ours learned later
    _diverge(
        workspace,
        run_git,
        [x],
        [x.with_(status="revoked", revoked_by="ace-a", revoked_at=8), a],
        [x.with_(status="revoked", revoked_by="ace-b", revoked_at=7), b],
    )

    merge_branch(Workspace(workspace.root), "other")

    units = _units(workspace)
    assert units["ace-a"].status == "active"
    assert units["ace-b"].status == "pending"


def test_an_edit_against_a_supersession_is_a_conflict_in_one_sentence(
    ws: Workspace, run_git: RunGit, capsys: pytest.CaptureFixture[str]
) -> None:
    x = _unit("ace-x", PRIVATE, 1)
    edited = x.with_(text="Keep my Venmo payments private, except to family.")
    b = _unit("ace-b", PUBLIC, 7)
    _diverge(ws, run_git, [x], [edited], [x.with_(status="revoked", revoked_by="ace-b"), b])
    before = state(ws.root, run_git)

    code, _, err = run_cli(capsys, "merge", "other")

    assert code != 0
    sentence = one_sentence(err)
    assert "memory/alex/ace-x.md was edited on this branch and superseded by ace-b" in sentence
    assert "`evolve merge other --take ace-x=ours`" in sentence
    assert "`evolve merge other --take ace-x=theirs`" in sentence
    assert state(ws.root, run_git) == before  # nothing half-done

    code, _, err = run_cli(capsys, "merge", "other", "--take", "ace-x=theirs")
    assert code == 0, err
    units = _units(ws)
    assert units["ace-x"].status == "revoked" and units["ace-b"].status == "active"


def test_the_edit_kept_when_asked(ws: Workspace, run_git: RunGit) -> None:
    x = _unit("ace-x", PRIVATE, 1)
    edited = x.with_(text="Keep my Venmo payments private, except to family.")
    b = _unit("ace-b", PUBLIC, 7)
    _diverge(ws, run_git, [x], [edited], [x.with_(status="revoked", revoked_by="ace-b"), b])
    merge_branch(ws, "other", take={"ace-x": "ours"})
    assert _units(ws)["ace-x"].text == edited.text
    assert _units(ws)["ace-x"].status == "active"


def test_caps_hold_after_a_merge(workspace: Workspace, run_git: RunGit) -> None:
    ours = [
        _unit(f"ace-o{i}", f"Our preference number {i} about payments.", 10 + i) for i in range(7)
    ]
    theirs = [
        _unit(f"ace-t{i}", f"Their preference number {i} about emails.", 20 + i) for i in range(7)
    ]
    _diverge(workspace, run_git, [], ours, theirs)

    result = merge_branch(workspace, "other")

    units = list(_units(workspace).values())
    assert overflows(workspace, units) == []
    active = [u for u in units if u.status == "active"]
    assert len(active) == 12
    evicted = [ident for op, ident in result.ops if op == "evict"]
    assert len(evicted) == 2 and result.rules == {"cap": 2}


def test_merge_refuses_an_unknown_ref_and_a_dirty_tree(
    ws: Workspace, run_git: RunGit, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = run_cli(capsys, "merge", "no-such-branch")
    assert code != 0 and "names no commit here" in one_sentence(err)
    _diverge(ws, run_git, [_unit("ace-x", PRIVATE, 1)], [], [_unit("ace-y", CARD, 2)])
    (ws.root / "memory" / "alex" / "ace-x.md").write_text("hand\n", encoding="utf-8")
    before = state(ws.root, run_git)
    code, _, err = run_cli(capsys, "merge", "other")
    assert code != 0 and "uncommitted changes" in one_sentence(err)
    assert state(ws.root, run_git) == before


def test_fix_settles_a_plain_git_merge(workspace: Workspace, run_git: RunGit) -> None:
    x = _unit("ace-x", PRIVATE, 1)
    a, b = _unit("ace-a", FRIENDS, 5), _unit("ace-b", PUBLIC, 7)
    dup_ours, dup_theirs = _unit("ace-d1", CARD, 3), _unit("ace-d2", CARD, 4)
    _diverge(
        workspace,
        run_git,
        [x],
        [x.with_(status="revoked", revoked_by="ace-a", revoked_at=5), a, dup_ours],
        [x.with_(status="revoked", revoked_by="ace-b", revoked_at=7), b, dup_theirs],
    )
    done = subprocess.run(
        ["git", "merge", "--no-edit", "other"], cwd=workspace.root, capture_output=True, text=True
    )
    assert done.returncode != 0  # ace-x.md: both sides changed it
    with pytest.raises(EvolveError, match="git merge"):
        merge_branch(workspace, "other")  # a writer refuses a merge in progress

    result = reconcile(workspace)

    assert result.commit is not None
    parents = run_git(workspace.root, "log", "-1", "--format=%P").split()
    assert len(parents) == 2
    units = _units(workspace)
    assert units["ace-b"].status == "active" and units["ace-a"].revoked_by == "ace-b"
    assert units["ace-d1"].status == "revoked" and units["ace-d1"].revoked_by == "ace-d2"
    assert run_git(workspace.root, "status", "--porcelain") == ""


def _rendered(ws: Workspace) -> str:
    from evolve.updaters import RECIPES, render_for

    return render_for(load_units(ws.root), ALEX, RECIPES)


def test_fix_after_a_merge_git_committed(workspace: Workspace, run_git: RunGit) -> None:
    # Both learned the same text under their own ids; git merges the files cleanly.
    _diverge(workspace, run_git, [], [_unit("ace-d1", CARD, 3)], [_unit("ace-d2", CARD, 4)])
    run_git(workspace.root, "merge", "--no-edit", "-q", "other")
    merge = run_git(workspace.root, "rev-parse", "HEAD").strip()

    result = reconcile(workspace)

    assert result.commit is not None
    assert run_git(workspace.root, "rev-parse", "HEAD^").strip() == merge
    units = _units(workspace)
    assert units["ace-d1"].status == "revoked" and units["ace-d2"].status == "active"
    message = run_git(workspace.root, "log", "-1", "--format=%B")
    assert "Evolve-Kind: merge fix" in message and "Evolve-Merge-Rules: duplicate=1" in message
    assert reconcile(workspace).commit is None  # settled: nothing more to do


def test_a_caller_holding_the_writer_lock_merges_within_it(
    workspace: Workspace, run_git: RunGit
) -> None:
    from evolve import txn

    _diverge(workspace, run_git, [], [_unit("ace-a", FRIENDS, 3)], [_unit("ace-b", CARD, 4)])
    with txn.writer(workspace, "evolve pull"):
        result = merge_branch(workspace, "other")
    assert result.commit is not None
    assert {"ace-a", "ace-b"} <= set(_units(workspace))


def test_a_unit_edited_on_both_sides_keeps_one_text_active_and_the_other(
    workspace: Workspace, run_git: RunGit
) -> None:
    x = _unit("ace-x", PRIVATE, 1)
    mine = x.with_(text="Keep my Venmo payments private, friends included.", updated_episode=4)
    theirs = x.with_(text="Keep my Venmo payments private, family excepted.", updated_episode=6)
    _diverge(workspace, run_git, [x], [mine], [theirs])

    result = merge_branch(workspace, "other")

    units = _units(workspace)
    assert units["ace-x"].text == theirs.text and units["ace-x"].status == "active"
    (kept,) = [u for u in units.values() if u.text == mine.text]
    assert kept.id != "ace-x" and kept.status == "revoked" and kept.revoked_by == "ace-x"
    assert result.rules == {"edited": 1}


def test_a_hand_note_edited_on_both_sides_is_a_conflict(
    ws: Workspace, run_git: RunGit, capsys: pytest.CaptureFixture[str]
) -> None:
    note = ws.root / "memory" / "alex" / "rent.md"
    note.parent.mkdir(parents=True, exist_ok=True)
    note.write_text("Alex pays rent on the 1st.\n", encoding="utf-8")
    _commit(ws, run_git, [], "a note")
    run_git(ws.root, "checkout", "-q", "-b", "other")
    note.write_text("Alex pays rent on the 3rd.\n", encoding="utf-8")
    _commit(ws, run_git, [], "their note")
    run_git(ws.root, "checkout", "-q", "main")
    note.write_text("Alex pays rent on the 5th.\n", encoding="utf-8")
    _commit(ws, run_git, [], "our note")

    code, _, err = run_cli(capsys, "merge", "other")

    assert code != 0
    sentence = one_sentence(err)
    assert "memory/alex/rent.md was edited by hand on this branch and on other" in sentence
    assert "--take rent=theirs" in sentence
    code, _, err = run_cli(capsys, "merge", "other", "--take", "rent=theirs")
    assert code == 0, err
    assert note.read_text("utf-8") == "Alex pays rent on the 3rd.\n"


def test_a_sidecar_a_driver_refuses_stops_the_merge_in_one_sentence(
    ws: Workspace, run_git: RunGit, capsys: pytest.CaptureFixture[str]
) -> None:
    sidecar = "memory/alex/_counters.yaml"
    base = "ace-x:\n  harmful: 1\n  helpful: 0\n"
    _diverge(ws, run_git, [_unit("ace-x", PRIVATE, 1)], [], [])
    (ws.root / sidecar).write_text(base, encoding="utf-8")
    _commit(ws, run_git, [], "counts")
    run_git(ws.root, "checkout", "-q", "other")
    run_git(ws.root, "merge", "-q", "--no-edit", "main")
    (ws.root / sidecar).write_text("ace-x: [1\n", encoding="utf-8")  # hostile
    _commit(ws, run_git, [], "their counts")
    run_git(ws.root, "checkout", "-q", "main")
    (ws.root / sidecar).write_text(base.replace("1", "2", 1), encoding="utf-8")
    _commit(ws, run_git, [], "our counts")
    before = state(ws.root, run_git)

    code, _, err = run_cli(capsys, "merge", "other")

    assert code != 0
    sentence = one_sentence(err)
    assert f"{sidecar} could not be merged (their side: " in sentence
    assert "`evolve merge --fix`" in sentence
    assert state(ws.root, run_git) == before
