"""The memory applier: refusals with reasons, atomic writes, the journal and recovery."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from functools import partial
from pathlib import Path

import pytest

from evolve._io import atomic_write
from evolve.applier import MemoryApplier, Op, Refusal
from evolve.memory import MemoryUnit, dump_unit, load_units, parse_unit
from evolve.txn._journal import ApplyJournal, journal_path, recover
from evolve.workspace import Workspace
from factories import memory_unit

RunGit = Callable[..., str]
ALEX = "user:alex"


_unit = partial(memory_unit, created_episode=0, helpful=0, harmful=0)


def _memory_files(root: Path) -> dict[str, bytes]:
    """Every file under memory/ (a symlink as its target), without following links."""
    out: dict[str, bytes] = {}
    for dirpath, dirnames, filenames in os.walk(root / "memory"):
        for name in [*dirnames, *filenames]:
            path = Path(dirpath) / name
            rel = path.relative_to(root).as_posix()
            if path.is_symlink():
                out[rel] = b"-> " + os.readlink(path).encode()
            elif path.is_file():
                out[rel] = path.read_bytes()
    return out


def _status(root: Path, run_git: RunGit) -> str:
    return run_git(root, "status", "--porcelain", "--untracked-files=all")


@pytest.fixture
def seeded(workspace: Workspace) -> tuple[Workspace, list[MemoryUnit]]:
    """A workspace with two committed ACE units and a committed tombstone for Alex."""
    units = [
        _unit("ace-a", "Sign every text with my first name."),
        _unit("ace-b", "Pay with the card I use most often."),
        _unit(
            "stone-1",
            "Use emoji in every text message.",
            status="tombstoned",
            reason="reverted by the user",
            reverted_commit="abcdef0123456789",
        ),
    ]
    applier = MemoryApplier(workspace, ALEX)
    result = applier.apply([Op(op="add", unit=u) for u in units], [])
    assert not result.refused
    assert workspace.store.commit(result.paths, "seed units") is not None
    applier.done()
    return workspace, load_units(workspace.root)


def _refused(ws: Workspace, units: list[MemoryUnit], op: Op, scope: str = ALEX) -> Refusal:
    before = _memory_files(ws.root)
    result = MemoryApplier(ws, scope).apply([op], units)
    assert result.applied == []
    assert result.paths == []
    assert len(result.refused) == 1
    assert _memory_files(ws.root) == before  # nothing written
    assert not journal_path(ws.store).exists()  # nothing even begun
    refusal = result.refused[0]
    assert refusal.op == op.op
    assert refusal.reason
    assert refusal.line().startswith(f"refused {op.op} ")
    return refusal


# --- refusals ----------------------------------------------------------------------------


def test_refuses_an_op_of_another_scope(seeded: tuple[Workspace, list[MemoryUnit]]) -> None:
    ws, units = seeded
    foreign = _unit("ace-z", "Blair likes long texts.", scope="user:blair")
    refusal = _refused(ws, units, Op(op="add", unit=foreign))
    assert "user:blair" in refusal.reason and ALEX in refusal.reason
    assert not (ws.root / "memory/blair").exists()


def test_refuses_an_op_on_another_users_unit_even_with_the_same_id(
    seeded: tuple[Workspace, list[MemoryUnit]],
) -> None:
    ws, units = seeded
    mine = next(u for u in units if u.id == "ace-a")
    refusal = _refused(ws, units, Op(op="modify", unit=mine.with_(text="x")), scope="user:blair")
    assert "scope" in refusal.reason


def test_refuses_an_add_whose_id_exists(seeded: tuple[Workspace, list[MemoryUnit]]) -> None:
    ws, units = seeded
    refusal = _refused(ws, units, Op(op="add", unit=_unit("ace-a", "A different text.")))
    assert "ace-a" in refusal.reason and "exists" in refusal.reason


@pytest.mark.parametrize("op", ["modify", "revoke", "evict", "tag", "reactivate"])
def test_refuses_changes_to_an_unknown_id(
    seeded: tuple[Workspace, list[MemoryUnit]], op: str
) -> None:
    ws, units = seeded
    ghost = _unit("ace-ghost", "Nobody wrote this.")
    refusal = _refused(ws, units, Op(op=op, unit=ghost))
    assert "ace-ghost" in refusal.reason


def test_refuses_a_protected_unit_path(workspace: Workspace) -> None:
    cfg = workspace.config.model_copy(
        update={"protected": (*workspace.config.protected, "memory/alex/")}
    )
    ws = Workspace(workspace.root, config=cfg)
    refusal = _refused(ws, [], Op(op="add", unit=_unit("ace-a", "Hello.")))
    assert "protected" in refusal.reason


def test_refuses_a_unit_whose_file_is_a_symlink_into_a_protected_path(
    workspace: Workspace,
) -> None:
    folder = workspace.root / "memory/alex"
    folder.mkdir(parents=True, exist_ok=True)
    target = workspace.root / "evalset/splits.yaml"
    assert target.parent.is_dir()
    (folder / "ace-a.md").symlink_to(Path("../../evalset/splits.yaml"))
    before = target.read_bytes() if target.exists() else None
    refusal = _refused(workspace, [], Op(op="add", unit=_unit("ace-a", "Hello.")))
    assert "protected" in refusal.reason
    assert (target.read_bytes() if target.exists() else None) == before


def test_refuses_a_unit_path_that_escapes_the_workspace(
    workspace: Workspace, tmp_path: Path
) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    folder = workspace.root / "memory/alex"
    if folder.exists():
        folder.rmdir()
    folder.symlink_to(outside, target_is_directory=True)
    refusal = _refused(workspace, [], Op(op="add", unit=_unit("ace-a", "Hello.")))
    assert "outside the workspace" in refusal.reason
    assert list(outside.iterdir()) == []


@pytest.mark.parametrize(
    "text",
    [
        "Use emoji in every text message.",
        "  use EMOJI in every text message  ",
    ],
)
@pytest.mark.parametrize("op", ["add", "modify", "reactivate"])
def test_refuses_text_matching_a_tombstone(
    seeded: tuple[Workspace, list[MemoryUnit]], text: str, op: str
) -> None:
    ws, units = seeded
    uid = "ace-new" if op == "add" else "ace-a"
    refusal = _refused(ws, units, Op(op=op, unit=_unit(uid, text)))
    assert "tombstoned" in refusal.reason
    assert "stone-1" in refusal.reason and "reverted by the user" in refusal.reason


def test_a_global_tombstone_refuses_too_and_another_users_does_not(workspace: Workspace) -> None:
    stones = [
        _unit("g-stone", "Always cc my boss.", scope="global", status="tombstoned"),
        _unit(
            "b-stone", "Use emoji in every text message.", scope="user:blair", status="tombstoned"
        ),
    ]
    applier = MemoryApplier(workspace, ALEX)
    result = applier.apply(
        [
            Op(op="add", unit=_unit("ace-1", "Always cc my boss.")),
            Op(op="add", unit=_unit("ace-2", "Use emoji in every text message.")),
        ],
        stones,
    )
    applier.done()
    assert [r.what for r in result.refused] == ["Always cc my boss."]
    assert [op.id for op in result.applied] == ["ace-2"]


def test_a_revoke_of_a_tombstoned_text_is_not_refused(
    seeded: tuple[Workspace, list[MemoryUnit]],
) -> None:
    """Tombstones stop text reaching the agent; taking text away is always allowed."""
    ws, units = seeded
    unit = _unit("ace-x", "Use emoji in every text message.", status="revoked")
    result = MemoryApplier(ws, ALEX).apply([Op(op="add", unit=unit)], units)
    assert result.refused == [] and [op.id for op in result.applied] == ["ace-x"]


def test_one_refusal_does_not_stop_the_other_ops(
    seeded: tuple[Workspace, list[MemoryUnit]],
) -> None:
    ws, units = seeded
    ops = [
        Op(op="add", unit=_unit("ace-a", "Dup id.")),
        Op(op="add", unit=_unit("ace-c", "Email subjects start with [Alex].")),
        Op(op="modify", unit=_unit("ace-ghost", "x")),
    ]
    result = MemoryApplier(ws, ALEX).apply(ops, units)
    assert [op.id for op in result.applied] == ["ace-c"]
    assert len(result.refused) == 2
    assert result.paths == ["memory/alex/ace-c.md"]


# --- writing -------------------------------------------------------------------------------


def test_accepted_ops_are_written_canonically_and_atomically(
    seeded: tuple[Workspace, list[MemoryUnit]], run_git: RunGit
) -> None:
    ws, units = seeded
    by_id = {u.id: u for u in units}
    new = _unit("ace-c", "Email subjects start with [Alex].", created_episode=4)
    modified = by_id["ace-a"].with_(text="Sign every text with '-Alex'.", updated_episode=4)
    ops = [
        Op(op="add", unit=new),
        Op(op="modify", unit=modified),
        Op(op="evict", unit=by_id["ace-b"]),
    ]
    applier = MemoryApplier(ws, ALEX)
    result = applier.apply(ops, units)
    assert result.refused == []
    assert result.paths == ["memory/alex/ace-a.md", "memory/alex/ace-b.md", "memory/alex/ace-c.md"]
    folder = ws.root / "memory/alex"
    assert (folder / "ace-c.md").read_text("utf-8") == dump_unit(new)
    assert (folder / "ace-a.md").read_text("utf-8") == dump_unit(modified)
    assert not (folder / "ace-b.md").exists()
    assert not [p.name for p in folder.iterdir() if p.name.startswith(".")]  # no temp files
    sha = ws.store.commit(result.paths, "episode 4")
    applier.done()
    assert sha is not None
    assert _status(ws.root, run_git) == ""
    assert {u.id for u in load_units(ws.root)} == {"ace-a", "ace-c", "stone-1"}


def test_the_journal_is_written_before_the_files_and_removed_by_done(
    seeded: tuple[Workspace, list[MemoryUnit]], monkeypatch: pytest.MonkeyPatch
) -> None:
    ws, units = seeded
    seen: list[tuple[str, bool]] = []

    def spy(path: Path, data: str | bytes, **kw: bool) -> None:
        seen.append((path.name, journal_path(ws.store).exists()))
        atomic_write(path, data, **kw)

    monkeypatch.setattr("evolve.applier._memory.atomic_write", spy)
    applier = MemoryApplier(ws, ALEX, ApplyJournal(ws.store))
    result = applier.apply(
        [Op(op="add", unit=_unit("ace-c", "Email subjects start with [Alex]."))], units
    )
    assert seen == [("ace-c.md", True)]
    journal = json.loads(journal_path(ws.store).read_text("utf-8"))
    assert journal == {"head": ws.store.head(), "paths": result.paths}
    ws.store.commit(result.paths, "episode")
    applier.done()
    assert not journal_path(ws.store).exists()


def test_nothing_accepted_writes_no_journal(seeded: tuple[Workspace, list[MemoryUnit]]) -> None:
    ws, units = seeded
    result = MemoryApplier(ws, ALEX, ApplyJournal(ws.store)).apply([], units)
    assert result.paths == [] and not journal_path(ws.store).exists()


# --- recovery ------------------------------------------------------------------------------


def test_recover_restores_half_applied_paths_to_head(
    seeded: tuple[Workspace, list[MemoryUnit]], run_git: RunGit
) -> None:
    ws, units = seeded
    head_files = _memory_files(ws.root)
    by_id = {u.id: u for u in units}
    ops = [
        Op(op="add", unit=_unit("ace-c", "A brand new bullet.")),
        Op(op="modify", unit=by_id["ace-a"].with_(text="A changed bullet.")),
        Op(op="evict", unit=by_id["ace-b"]),
    ]
    result = MemoryApplier(ws, ALEX, ApplyJournal(ws.store)).apply(ops, units)
    assert len(result.applied) == 3
    assert _memory_files(ws.root) != head_files
    # ... the process dies here: no commit, no done().
    assert journal_path(ws.store).exists()
    restored = recover(ws.store)
    assert sorted(restored) == result.paths
    assert _memory_files(ws.root) == head_files
    assert not (ws.root / "memory/alex/ace-c.md").exists()
    assert not journal_path(ws.store).exists()
    assert _status(ws.root, run_git) == ""
    assert recover(ws.store) == []  # idempotent: no journal, nothing to do


def test_recover_after_the_commit_is_a_no_op(
    seeded: tuple[Workspace, list[MemoryUnit]], run_git: RunGit
) -> None:
    ws, units = seeded
    applier = MemoryApplier(ws, ALEX, ApplyJournal(ws.store))
    result = applier.apply([Op(op="add", unit=_unit("ace-c", "Committed bullet."))], units)
    ws.store.commit(result.paths, "episode")
    # ... the process dies after the commit and before done().
    committed = _memory_files(ws.root)
    recover(ws.store)
    assert _memory_files(ws.root) == committed
    assert (ws.root / "memory/alex/ace-c.md").exists()
    assert _status(ws.root, run_git) == ""


def test_recover_leaves_files_outside_the_journal_alone(
    seeded: tuple[Workspace, list[MemoryUnit]],
) -> None:
    ws, units = seeded
    MemoryApplier(ws, ALEX, ApplyJournal(ws.store)).apply(
        [Op(op="add", unit=_unit("ace-c", "Half written."))], units
    )
    hand = ws.root / "memory/alex/my-note.md"
    hand.write_text("A note I am still writing.\n", encoding="utf-8")
    recover(ws.store)
    assert hand.read_text("utf-8") == "A note I am still writing.\n"
    assert not (ws.root / "memory/alex/ace-c.md").exists()


def test_recover_with_an_unreadable_journal_removes_it(workspace: Workspace) -> None:
    path = journal_path(workspace.store)
    path.write_text("{not json", encoding="utf-8")
    assert recover(workspace.store) == []
    assert not path.exists()


def test_written_units_parse_back(seeded: tuple[Workspace, list[MemoryUnit]]) -> None:
    ws, _ = seeded
    for path in (ws.root / "memory/alex").glob("*.md"):
        rel = path.relative_to(ws.root).as_posix()
        unit = parse_unit(rel, path.read_text("utf-8"))
        assert dump_unit(unit) == path.read_text("utf-8")
        assert os.path.basename(rel) == f"{unit.id}.md"
