"""`evolve revert` of what refused before (issue 8 item 4): a commit that only moved evidence
counters takes back exactly its deltas; a taught commit takes back the counters it moved too;
a rewrite that only reordered lines puts the parent's order back; a unit revoked and
reactivated since the commit that taught it reverts alone."""

from __future__ import annotations

import re
from collections.abc import Callable
from functools import partial
from pathlib import Path

import pytest
from revert_helpers import episode_commit as _episode
from revert_helpers import units_by_id as _units

from conftest import run_cli as _cli
from evolve.applier import Op
from evolve.errors import EvolveError
from evolve.history import revert
from evolve.memory import MemoryUnit, load_units, parse_counters
from evolve.updaters import RECIPES, render_for
from evolve.workspace import Workspace
from factories import memory_unit

RunGit = Callable[..., str]
ALEX = "user:alex"
FRIENDS = "Set my Venmo payments to friends-only visibility."
PUBLIC = "Keep all my Venmo payments public."
CARD = "Pay with the card I use most often."
SIDECAR = "memory/alex/_counters.yaml"


_unit = partial(memory_unit, created_episode=0)


def _sidecar(ws: Workspace) -> dict[str, dict[str, float | int]]:
    path = ws.root / SIDECAR
    return parse_counters(SIDECAR, path.read_text("utf-8")) if path.is_file() else {}


def _trailers(root: Path, run_git: RunGit, rev: str) -> dict[str, str]:
    block = run_git(root, "log", "-1", "--format=%(trailers:only=true,unfold=true)", rev)
    return {k: v.strip() for k, _, v in (line.partition(": ") for line in block.splitlines()) if v}


def _changed(root: Path, run_git: RunGit, rev: str) -> list[str]:
    return run_git(root, "show", "--name-only", "--format=", rev).split()


# --- counter-only commits --------------------------------------------------------------------


def _counted(ws: Workspace) -> tuple[MemoryUnit, MemoryUnit, str]:
    """a and b added; then three counter-only episodes; returns (a, b, the middle one)."""
    a = _unit("ace-000000000a", FRIENDS, helpful=0, harmful=0)
    b = _unit("ace-000000000b", CARD, helpful=0, harmful=0)
    _episode(ws, 0, [Op(op="add", unit=a), Op(op="add", unit=b)])
    _episode(ws, 1, [Op(op="count", unit=a.with_(helpful=1))])
    middle = _episode(
        ws, 2, [Op(op="count", unit=a.with_(helpful=3)), Op(op="count", unit=b.with_(harmful=1))]
    )
    _episode(ws, 3, [Op(op="count", unit=a.with_(helpful=4))])
    return a, b, middle


def test_a_counter_only_commit_reverts_by_taking_back_exactly_its_deltas(
    ws: Workspace, run_git: RunGit, capsys: pytest.CaptureFixture[str]
) -> None:
    root = ws.root
    a, b, middle = _counted(ws)
    assert _changed(root, run_git, middle) == [SIDECAR]

    code, out, err = _cli(capsys, "revert", middle)
    assert code == 0, err
    assert f"moved {a.id} helpful back: 4 -> 2" in out
    units = _units(ws)
    # a: 4 today, the commit added 2 -> 2; b: 1 today, the commit added 1 -> 0.
    assert units[a.id].helpful == 2 and not units[b.id].harmful  # at 0: no entry
    assert units[a.id].status == units[b.id].status == "active"
    assert not [u for u in units.values() if u.status == "tombstoned"]
    assert _changed(root, run_git, "HEAD") == [SIDECAR]
    trailers = _trailers(root, run_git, "HEAD")
    assert trailers["Evolve-Kind"] == "revert" and trailers["Evolve-Reverts"] == middle
    assert trailers["Evolve-Ops"] == f"count={a.id} count={b.id}"
    body = run_git(root, "log", "-1", "--format=%B", "HEAD")
    assert "Counters moved back" in body
    assert f"{a.id}: helpful 4 -> 2" in body and f"{b.id}: harmful 1 -> 0" in body

    # Reverting that revert gives the evidence back, the same way.
    first_revert = run_git(root, "rev-parse", "HEAD").strip()
    code, out, err = _cli(capsys, "revert", first_revert)
    assert code == 0, err
    units = _units(ws)
    assert units[a.id].helpful == 4 and units[b.id].harmful == 1
    trailers = _trailers(root, run_git, "HEAD")
    assert trailers["Evolve-Reverts"] == first_revert
    assert trailers["Evolve-Ops"] == f"count={a.id} count={b.id}"


def test_counters_taken_back_stop_at_zero_and_units_gone_are_skipped(
    ws: Workspace, run_git: RunGit
) -> None:
    a, b, middle = _counted(ws)
    # Since then: a person set a's helpful down by hand (in the sidecar); b was evicted.
    _episode(ws, 4, [Op(op="count", unit=a.with_(helpful=1))])
    _episode(ws, 5, [Op(op="evict", unit=b)])
    result = revert(ws, middle)
    assert not _units(ws)[a.id].helpful  # 1 - 2 stops at 0 (unset: 0)
    assert a.id not in _sidecar(ws)
    assert b.id not in _units(ws)
    body = run_git(ws.root, "log", "-1", "--format=%B", result.commit)
    assert (
        f"Counters not moved back (the unit no longer exists or is tombstoned):\n- {b.id}" in body
    )


def test_topl_alpha_and_beta_are_taken_back_and_stop_at_the_prior(ws: Workspace) -> None:
    a = _unit("topl-000000000a", FRIENDS, recipe="topl", kind="assertion", alpha=2.0, beta=1.0)
    _episode(ws, 0, [Op(op="add", unit=a)])
    moved = _episode(ws, 1, [Op(op="count", unit=a.with_(alpha=3.0, beta=3.0))])
    _episode(ws, 2, [Op(op="count", unit=a.with_(alpha=5.0, beta=1.5))])
    revert(ws, moved)
    unit = _units(ws)[a.id]
    assert unit.alpha == 4.0  # 5 - (3 - 2)
    assert unit.beta == 1.0  # 1.5 - 2 stops at the prior, 1.0
    assert _sidecar(ws)[a.id] == {"alpha": 4.0, "beta": 1.0}


def test_a_taught_commit_takes_back_the_counters_it_moved(ws: Workspace, run_git: RunGit) -> None:
    a = _unit("ace-000000000a", FRIENDS, helpful=0, harmful=0)
    _episode(ws, 0, [Op(op="add", unit=a)])
    b = _unit("ace-000000000b", CARD, helpful=0, harmful=0)
    taught = _episode(ws, 1, [Op(op="add", unit=b), Op(op="count", unit=a.with_(helpful=2))])
    _episode(ws, 2, [Op(op="count", unit=a.with_(helpful=3))])

    result = revert(ws, taught)
    units = _units(ws)
    assert units[b.id].status == "tombstoned"
    assert units[a.id].helpful == 1  # 3 today; the reverted commit added 2; the next one 1
    trailers = _trailers(ws.root, run_git, result.commit)
    assert trailers["Evolve-Ops"] == f"tombstone={b.id} count={a.id}"
    assert SIDECAR in _changed(ws.root, run_git, result.commit)
    assert result.counters == [(a.id, "helpful", 3, 1)] and result.restored == []

    # Reverting the revert lifts the tombstone and gives the evidence back.
    again = revert(ws, result.commit)
    units = _units(ws)
    assert units[b.id].status == "active" and units[a.id].helpful == 3
    assert again.lifted == [b.id]


# --- a rewrite that only reordered lines -----------------------------------------------------


def _doc(text: str) -> MemoryUnit:
    return _unit("rewrite-document", text, recipe="rewrite", kind="document")


def test_a_reorder_only_rewrite_reverts_to_the_parents_order(
    ws: Workspace, run_git: RunGit
) -> None:
    _episode(ws, 0, [Op(op="add", unit=_doc("Line A.\nLine B.\nLine C."))])
    reorder = _episode(ws, 1, [Op(op="modify", unit=_doc("Line C.\nLine A.\nLine B."))])
    _episode(ws, 2, [Op(op="modify", unit=_doc("Line C.\nLine A.\nLine D.\nLine B."))])

    result = revert(ws, reorder)
    # The shared lines go back to A, B, C in the slots they hold; D (added later) stays put.
    assert _units(ws)["rewrite-document"].text == "Line A.\nLine B.\nLine D.\nLine C."
    assert result.tombstones == []
    assert _trailers(ws.root, run_git, result.commit)["Evolve-Kind"] == "revert"


def test_a_reorder_only_rewrite_reverts_alone_when_nothing_changed_since(ws: Workspace) -> None:
    _episode(ws, 0, [Op(op="add", unit=_doc("Line A.\nLine B."))])
    reorder = _episode(ws, 1, [Op(op="modify", unit=_doc("Line B.\nLine A."))])
    revert(ws, reorder)
    assert _units(ws)["rewrite-document"].text == "Line A.\nLine B."


def test_a_reorder_already_undone_is_refused_as_nothing_left(ws: Workspace) -> None:
    _episode(ws, 0, [Op(op="add", unit=_doc("Line A.\nLine B."))])
    reorder = _episode(ws, 1, [Op(op="modify", unit=_doc("Line B.\nLine A."))])
    _episode(ws, 2, [Op(op="modify", unit=_doc("Line A.\nLine B.\nLine C."))])
    with pytest.raises(EvolveError, match="nothing left to revert"):
        revert(ws, reorder)


# --- a unit revoked and reactivated since ----------------------------------------------------


def test_a_unit_revoked_and_reactivated_since_reverts_alone(ws: Workspace, run_git: RunGit) -> None:
    a = _unit("ace-000000000a", FRIENDS, updated_episode=0, helpful=0, harmful=0)
    first = _episode(ws, 0, [Op(op="add", unit=a)])
    b = _unit("ace-000000000b", PUBLIC, created_episode=1, supersedes=a.id)
    revoked_a = a.with_(status="revoked", revoked_by=b.id, revoked_at=1, updated_episode=1)
    _episode(ws, 1, [Op(op="revoke", unit=revoked_a), Op(op="add", unit=b)])
    revoked_b = b.with_(status="revoked", revoked_by=a.id, revoked_at=2, updated_episode=2)
    back = a.with_(updated_episode=2, valid_from="2026-01-02T00:00:00+00:00")
    _episode(ws, 2, [Op(op="reactivate", unit=back), Op(op="revoke", unit=revoked_b)])

    result = revert(ws, first, reason="never said that")
    assert [s.id for s in result.tombstones] == [a.id]
    units = _units(ws)
    assert units[a.id].status == "tombstoned" and units[a.id].reverted_commit == first
    assert units[b.id].status == "revoked"  # what the later commits did stays
    memory = render_for(load_units(ws.root), ALEX, RECIPES)
    assert FRIENDS not in memory
    assert re.search(r"^Evolve-Kind: revert$", run_git(ws.root, "log", "-1", "--format=%B"), re.M)


def _old_format(ws: Workspace, run_git: RunGit, helpful: int, message: str) -> str:
    """An old-format unit file (counters in its front matter), committed by hand."""
    path = ws.root / "memory" / "alex" / "ace-00000000c1.md"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(
        "---\nid: ace-00000000c1\nrecipe: ace\nkind: bullet\nscope: user:alex\n"
        f"helpful: {helpful}\nharmful: 0\n---\n{FRIENDS}\n",
        "utf-8",
    )
    run_git(ws.root, "add", "memory")
    run_git(ws.root, "commit", "-q", "-m", message)
    return run_git(ws.root, "rev-parse", "HEAD").strip()


def test_counters_moved_in_an_old_format_unit_file_are_taken_back(
    ws: Workspace, run_git: RunGit
) -> None:
    _old_format(ws, run_git, 1, "old: add")
    moved = _old_format(ws, run_git, 3, "old: helpful +2")
    _old_format(ws, run_git, 4, "old: helpful +1")
    result = revert(ws, moved)
    assert _units(ws)["ace-00000000c1"].helpful == 2  # 4 - 2, in the sidecar (which wins)
    assert _sidecar(ws)["ace-00000000c1"] == {"harmful": 0, "helpful": 2}
    assert _trailers(ws.root, run_git, result.commit)["Evolve-Ops"] == "count=ace-00000000c1"


def test_reverting_an_eviction_brings_the_units_counters_back(ws: Workspace) -> None:
    a, b, _ = _counted(ws)
    evicted = _episode(ws, 4, [Op(op="evict", unit=b)])
    revert(ws, evicted)
    assert _units(ws)[b.id].status == "active" and _units(ws)[b.id].harmful == 1
