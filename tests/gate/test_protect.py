"""`protected_state`: the protected paths as the commit, the disk and the index hold them."""

from __future__ import annotations

import os
from collections.abc import Callable

import pytest

from evolve.gate import index_flags, protected_state, protection_reason
from evolve.workspace import Workspace

RunGit = Callable[..., str]
PROTECTED = ("evalset/", "tests/", "evolve.yaml", ".gitignore")
SPLITS = "evalset/splits.yaml"


def _head(ws: Workspace) -> str:
    head = ws.store.head()
    assert head is not None
    return head


def test_a_clean_workspace_has_no_problem_and_a_stable_digest(workspace: Workspace) -> None:
    a = protected_state(workspace.store, _head(workspace), PROTECTED)
    b = protected_state(workspace.store, _head(workspace), PROTECTED)

    assert a.problems == ()
    assert a == b and a.disk == b.disk
    assert SPLITS in a.files and "evolve.yaml" in a.files and ".gitignore" in a.files
    assert not [p for p in a.files if p.startswith(("memory/", "prompts/"))]
    assert protection_reason(workspace.store, a, b, "during scoring") is None


@pytest.mark.parametrize(
    ("flags", "shown"),
    [
        (["--skip-worktree"], "skip-worktree"),
        (["--assume-unchanged"], "assume-unchanged"),
        (["--skip-worktree", "--assume-unchanged"], "skip-worktree and assume-unchanged"),
    ],
)
def test_index_flags_on_a_protected_file_are_problems(
    workspace: Workspace, run_git: RunGit, flags: list[str], shown: str
) -> None:
    for flag in flags:
        run_git(workspace.root, "update-index", flag, SPLITS)

    state = protected_state(workspace.store, _head(workspace), PROTECTED)

    assert index_flags(workspace.store) == {SPLITS: shown}
    assert state.problems == (f"protected file {SPLITS} is marked {shown} in the index",)


def test_a_hidden_edit_is_seen_by_its_bytes(workspace: Workspace, run_git: RunGit) -> None:
    head = _head(workspace)
    before = protected_state(workspace.store, head, PROTECTED)
    run_git(workspace.root, "update-index", "--skip-worktree", SPLITS)
    (workspace.root / SPLITS).write_text("train: []\n", encoding="utf-8")
    assert run_git(workspace.root, "status", "--porcelain") == ""

    state = protected_state(workspace.store, head, PROTECTED)

    assert state.problems == (
        f"protected file {SPLITS} is marked skip-worktree in the index",
        f"protected file {SPLITS} differs from commit {head[:10]}",
    )
    assert protection_reason(workspace.store, before, state, "during scoring") == (
        f"protected file {SPLITS} is marked skip-worktree in the index, found during scoring "
        "(and 1 more problem)"
    )


def test_untracked_and_missing_protected_files_are_problems(
    workspace: Workspace, run_git: RunGit
) -> None:
    root = workspace.root
    (root / "tests" / "health" / "test_sneak.py").write_text("", encoding="utf-8")
    run_git(root, "update-index", "--skip-worktree", "evalset/tasks.yaml")
    (root / "evalset" / "tasks.yaml").unlink()

    state = protected_state(workspace.store, _head(workspace), PROTECTED)

    assert "protected files have uncommitted changes (tests/health/test_sneak.py)" in state.problems
    assert "protected file evalset/tasks.yaml is missing from the working tree" in state.problems


def test_ignored_files_are_no_problem_but_a_new_one_is_a_change(workspace: Workspace) -> None:
    root = workspace.root
    os.makedirs(root / "tests" / "health" / "__pycache__")
    (root / "tests" / "health" / "__pycache__" / "x.pyc").write_bytes(b"1")
    before = protected_state(workspace.store, _head(workspace), PROTECTED)
    assert before.problems == ()

    (root / "tests" / "health" / "__pycache__" / "y.pyc").write_bytes(b"2")
    after = protected_state(workspace.store, _head(workspace), PROTECTED)

    assert after.problems == ()
    assert protection_reason(workspace.store, before, after, "during scoring") == (
        "protected files changed during scoring (tests/health/__pycache__/y.pyc)"
    )


def test_a_symlink_swapped_in_for_a_protected_file_is_a_problem(workspace: Workspace) -> None:
    target = workspace.root / SPLITS
    data = target.read_bytes()
    elsewhere = workspace.root.parent / "splits.yaml"
    elsewhere.write_bytes(data)  # the very same bytes, through a link
    target.unlink()
    target.symlink_to(elsewhere)

    state = protected_state(workspace.store, _head(workspace), PROTECTED)

    assert any(SPLITS in p for p in state.problems)
