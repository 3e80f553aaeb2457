"""`evolve revert` of a commit that counted on the per-task record (`memory/skills/_strata.yaml`,
issue 13), in and out of order, and across a restarted (rewritten) lesson."""

from __future__ import annotations

from pathlib import Path

from conftest import GitRunner
from evolve.history import revert
from evolve.skills._strata import STRATA_PATH, Strata, dump_strata, load_strata
from evolve.workspace import Workspace


def _commit(root: Path, run_git: GitRunner, strata: Strata, msg: str) -> str:
    path = root / STRATA_PATH
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(dump_strata(strata))
    run_git(root, "add", "-A")
    run_git(root, "commit", "-qm", msg)
    return run_git(root, "rev-parse", "HEAD").strip()


def test_reverting_an_old_count_leaves_a_restarted_lessons_record(
    workspace: Workspace, run_git: GitRunner
) -> None:
    root = workspace.root
    old = _commit(root, run_git, {"a": {"t1": (2, 0, 2, 2)}, "b": {"t1": (1, 1, 0, 0)}}, "count")
    # A batch rewrites a's lesson: its record restarts (the entry is dropped) ...
    _commit(root, run_git, {"b": {"t1": (2, 2, 0, 0)}}, "batch: a rewritten")
    # ... and the new lesson gathers its own evidence.
    _commit(root, run_git, {"a": {"t1": (1, 1, 1, 0)}, "b": {"t1": (2, 2, 0, 0)}}, "count")
    revert(Workspace(root), old)
    # The old lesson's counts were dropped at the restart: nothing of them is left to take
    # back from the new lesson's record; b's are taken back.
    assert load_strata(root) == {"a": {"t1": (1, 1, 1, 0)}, "b": {"t1": (1, 1, 0, 0)}}


def test_reverts_in_any_order_take_back_exactly_their_counts(
    workspace: Workspace, run_git: GitRunner
) -> None:
    root = workspace.root
    first = _commit(root, run_git, {"a": {"t1": (2, 0, 0, 0)}}, "count 1")
    second = _commit(root, run_git, {"a": {"t1": (5, 1, 1, 1)}}, "count 2")
    _commit(root, run_git, {"a": {"t1": (6, 1, 2, 2)}}, "count 3")
    revert(Workspace(root), first)
    assert load_strata(root) == {"a": {"t1": (4, 1, 2, 2)}}
    revert(Workspace(root), second)
    assert load_strata(root) == {"a": {"t1": (1, 0, 1, 1)}}


def test_a_reverted_restart_gives_the_old_counts_back_to_take_back(
    workspace: Workspace, run_git: GitRunner
) -> None:
    root = workspace.root
    old = _commit(root, run_git, {"a": {"t1": (2, 0, 2, 2)}}, "count")
    restart = _commit(root, run_git, {"b": {"t1": (1, 1, 0, 0)}}, "batch: a rewritten")
    _commit(root, run_git, {"a": {"t1": (1, 1, 1, 0)}, "b": {"t1": (1, 1, 0, 0)}}, "count")
    revert(Workspace(root), restart)  # the old lesson and its counts come back
    assert load_strata(root) == {"a": {"t1": (3, 1, 3, 2)}}
    revert(Workspace(root), old)  # then they are taken back
    assert load_strata(root) == {"a": {"t1": (1, 1, 1, 0)}}
