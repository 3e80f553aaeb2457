"""A plain `git merge` or `git pull` (no evolve command in the merge) where both learners moved
a counter alike: git keeps one side's bytes without running the driver, so one episode's
count is lost. Every writer refuses to build on such a merge, naming `evolve merge --fix`;
after the fix the count is right and training goes on. A merge with nothing to settle is not
refused, and one the rules find nothing to change in is recorded as settled."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
import yaml

from conftest import one_sentence, run_cli
from evolve import txn
from evolve.errors import EvolveError
from evolve.remote import clone
from evolve.workspace import Workspace

RunGit = Callable[..., str]
UID = "ace-0123456789"
UNIT = """---
id: {uid}
schema: 1
recipe: ace
kind: bullet
status: active
scope: user:alex
created_episode: 0
updated_episode: 0
valid_from: '2026-12-02T02:37:02.000002+00:00'
---
{text}
"""
COUNTERS = "memory/alex/_counters.yaml"


def _plant(root: Path, uid: str, text: str) -> None:
    folder = root / "memory" / "alex"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"{uid}.md").write_text(UNIT.format(uid=uid, text=text), encoding="utf-8")


def _harmful(root: Path, harmful: int, run_git: RunGit, message: str) -> None:
    (root / COUNTERS).write_text(f"{UID}:\n  harmful: {harmful}\n  helpful: 0\n", encoding="utf-8")
    run_git(root, "commit", "--quiet", "-am", message)


def _counted(root: Path, run_git: RunGit, rev: str = "HEAD") -> int:
    value = yaml.safe_load(run_git(root, "show", f"{rev}:{COUNTERS}"))[UID]["harmful"]
    assert isinstance(value, int)
    return value


def _two_learners(ws: Workspace, tmp_path: Path, run_git: RunGit) -> Path:
    """This workspace and a clone of it through a bare remote, one unit with one harmful
    count on both; returns the clone's root."""
    _plant(ws.root, UID, "Pay with the card I use most often.")
    (ws.root / COUNTERS).write_text(f"{UID}:\n  harmful: 1\n  helpful: 0\n", encoding="utf-8")
    run_git(ws.root, "add", "memory")
    run_git(ws.root, "commit", "--quiet", "-m", "base: one unit, one harmful episode")
    bare = tmp_path / "origin.git"
    run_git(tmp_path, "init", "--quiet", "--bare", "--initial-branch=main", str(bare))
    run_git(ws.root, "remote", "add", "origin", str(bare))
    run_git(ws.root, "push", "--quiet", "-u", "origin", "main")
    other, _ = clone(str(bare), tmp_path / "other")
    return other.root


@pytest.mark.parametrize("how", ["git merge", "git pull"])
def test_a_count_both_sides_moved_alike_refuses_training_until_merge_fix(
    ws: Workspace,
    tmp_path: Path,
    run_git: RunGit,
    capsys: pytest.CaptureFixture[str],
    how: str,
) -> None:
    other = _two_learners(ws, tmp_path, run_git)
    _harmful(other, 2, run_git, "theirs: one harmful episode")
    run_git(other, "push", "--quiet", "origin", "HEAD:main")
    _harmful(ws.root, 2, run_git, "ours: one harmful episode")
    if how == "git merge":
        run_git(ws.root, "fetch", "--quiet", "origin")
        run_git(ws.root, "merge", "--quiet", "--no-edit", "origin/main")
    else:
        run_git(ws.root, "pull", "--quiet", "--no-rebase", "--no-edit", "origin", "main")
    merge = run_git(ws.root, "rev-parse", "HEAD").strip()
    assert len(run_git(ws.root, "log", "-1", "--format=%P").split()) == 2
    assert _counted(ws.root, run_git) == 2  # git alone kept one side's count

    code, out, err = run_cli(capsys, "train", "--recipe", "ace", "--episodes", "2")
    assert code == 1 and out == ""
    line = one_sentence(err)
    assert "`evolve merge --fix`" in line and COUNTERS in line and merge[:10] in line
    assert run_git(ws.root, "rev-parse", "HEAD").strip() == merge  # nothing written
    assert run_git(ws.root, "status", "--porcelain") == ""

    code, out, err = run_cli(capsys, "merge", "--fix", "--json")
    assert code == 0, err
    assert json.loads(out)["status"] == "reconciled"
    assert _counted(ws.root, run_git) == 3  # 1 + (2 - 1) + (2 - 1): both episodes count
    fixed = run_git(ws.root, "rev-parse", "HEAD").strip()

    code, out, err = run_cli(capsys, "train", "--recipe", "ace", "--episodes", "2", "--json")
    assert code == 0, err
    assert json.loads(out)["outcomes"], "training did not run"
    assert run_git(ws.root, "merge-base", "--is-ancestor", fixed, "HEAD") == ""


def _pulled(ws: Workspace, tmp_path: Path, run_git: RunGit, theirs: int) -> Path:
    """A teammate's clone moves the counter to `theirs` and pushes; this clone moves it to 2
    (one harmful episode) and takes theirs with a plain `git pull` (git merges, evolve does
    not). Returns the teammate's clone."""
    other = _two_learners(ws, tmp_path, run_git)
    _harmful(other, theirs, run_git, f"theirs: counter at {theirs}")
    run_git(other, "push", "--quiet", "origin", "HEAD:main")
    _harmful(ws.root, 2, run_git, "ours: one harmful episode")
    run_git(ws.root, "pull", "--quiet", "--no-rebase", "--no-edit", "origin", "main")
    return other


def test_every_writer_refuses_an_unsettled_merge_not_only_train(
    ws: Workspace, tmp_path: Path, run_git: RunGit
) -> None:
    _pulled(ws, tmp_path, run_git, theirs=2)
    for command in ("evolve review", "evolve revert", "evolve merge"):
        with (
            pytest.raises(EvolveError, match="evolve merge --fix") as caught,
            txn.writer(ws, command),
        ):
            pass
        assert f"then run `{command}` again" in str(caught.value)
    # `evolve merge --fix` itself (a writer that does not check git's state) is not refused.
    with txn.writer(ws, "evolve merge --fix", check_git=False):
        pass


def test_a_merge_whose_counters_differ_is_merged_by_the_driver_and_not_refused(
    ws: Workspace, tmp_path: Path, run_git: RunGit, capsys: pytest.CaptureFixture[str]
) -> None:
    _pulled(ws, tmp_path, run_git, theirs=3)
    assert _counted(ws.root, run_git) == 4  # the driver ran: 1 + 1 + 2
    code, out, err = run_cli(capsys, "train", "--recipe", "ace", "--episodes", "1", "--json")
    assert code == 0, err


def test_units_on_both_sides_are_refused_until_the_fix_records_the_merge_as_settled(
    ws: Workspace, tmp_path: Path, run_git: RunGit, capsys: pytest.CaptureFixture[str]
) -> None:
    other = _two_learners(ws, tmp_path, run_git)
    _plant(other, "ace-1111111111", "Text my sister before every payment.")
    run_git(other, "add", "memory")
    run_git(other, "commit", "--quiet", "-m", "theirs: a unit")
    run_git(other, "push", "--quiet", "origin", "HEAD:main")
    _plant(ws.root, "ace-2222222222", "Keep notes short.")
    run_git(ws.root, "add", "memory")
    run_git(ws.root, "commit", "--quiet", "-m", "ours: another unit")
    run_git(ws.root, "pull", "--quiet", "--no-rebase", "--no-edit", "origin", "main")
    merge = run_git(ws.root, "rev-parse", "HEAD").strip()

    code, out, err = run_cli(capsys, "train", "--recipe", "ace", "--episodes", "1")
    assert code == 1
    assert "both sides changed memory units" in one_sentence(err)
    code, out, err = run_cli(capsys, "status", "--json")
    assert code == 0, err
    assert "`evolve merge --fix`" in json.loads(out)["merge"]
    code, out, err = run_cli(capsys, "merge", "--fix")
    assert code == 0, err
    assert "nothing to settle" in out
    code, out, err = run_cli(capsys, "status", "--json")
    assert json.loads(out)["merge"] is None
    assert run_git(ws.root, "rev-parse", "HEAD").strip() == merge  # the rules changed nothing
    code, out, err = run_cli(capsys, "train", "--recipe", "ace", "--episodes", "1", "--json")
    assert code == 0, err


def test_a_merge_only_one_side_changed_memory_in_is_not_refused(
    ws: Workspace, tmp_path: Path, run_git: RunGit, capsys: pytest.CaptureFixture[str]
) -> None:
    other = _two_learners(ws, tmp_path, run_git)
    (other / "NOTES.txt").write_text("a teammate's note\n", encoding="utf-8")
    run_git(other, "add", "NOTES.txt")
    run_git(other, "commit", "--quiet", "-m", "theirs: no memory")
    run_git(other, "push", "--quiet", "origin", "HEAD:main")
    _harmful(ws.root, 2, run_git, "ours: one harmful episode")
    run_git(ws.root, "pull", "--quiet", "--no-rebase", "--no-edit", "origin", "main")
    assert len(run_git(ws.root, "log", "-1", "--format=%P").split()) == 2
    code, out, err = run_cli(capsys, "train", "--recipe", "ace", "--episodes", "1", "--json")
    assert code == 0, err


def test_an_octopus_merge_of_two_learners_is_refused_with_how_to_undo_it(
    ws: Workspace, run_git: RunGit, capsys: pytest.CaptureFixture[str]
) -> None:
    _plant(ws.root, UID, "Pay with the card I use most often.")
    (ws.root / COUNTERS).write_text(f"{UID}:\n  harmful: 1\n  helpful: 0\n", encoding="utf-8")
    run_git(ws.root, "add", "memory")
    run_git(ws.root, "commit", "--quiet", "-m", "base")
    for branch, uid in (("one", "ace-1111111111"), ("two", "ace-2222222222")):
        run_git(ws.root, "checkout", "--quiet", "-b", branch, "main")
        _plant(ws.root, uid, f"A lesson of branch {branch}.")
        run_git(ws.root, "add", "memory")
        run_git(ws.root, "commit", "--quiet", "-m", branch)
    run_git(ws.root, "checkout", "--quiet", "main")
    (ws.root / "NOTES.txt").write_text("main's note\n", encoding="utf-8")
    run_git(ws.root, "add", "NOTES.txt")
    run_git(ws.root, "commit", "--quiet", "-m", "main")
    run_git(ws.root, "merge", "--quiet", "--no-edit", "one", "two")
    assert len(run_git(ws.root, "log", "-1", "--format=%P").split()) == 3
    code, out, err = run_cli(capsys, "train", "--recipe", "ace", "--episodes", "1")
    assert code == 1
    line = one_sentence(err)
    assert "merges 3 commits at once" in line and "`git reset --keep HEAD~1`" in line


def test_evolve_pull_and_push_refuse_to_carry_an_unsettled_merge_on(
    ws: Workspace, tmp_path: Path, run_git: RunGit, capsys: pytest.CaptureFixture[str]
) -> None:
    other = _pulled(ws, tmp_path, run_git, theirs=2)
    merge = run_git(ws.root, "rev-parse", "HEAD").strip()
    (other / "NOTES.txt").write_text("more from them\n", encoding="utf-8")
    run_git(other, "add", "NOTES.txt")
    run_git(other, "commit", "--quiet", "-m", "theirs: a note")
    run_git(other, "push", "--quiet", "origin", "HEAD:main")
    remote_tip = run_git(other, "rev-parse", "HEAD").strip()

    for command in ("pull", "push"):
        code, out, err = run_cli(capsys, command, "origin")
        assert code == 1, (command, out)
        line = one_sentence(err)
        assert "`evolve merge --fix`" in line and f"then run `evolve {command}` again" in line
        assert run_git(ws.root, "rev-parse", "HEAD").strip() == merge  # nothing merged on it
    bare = tmp_path / "origin.git"
    assert run_git(bare, "rev-parse", "main").strip() == remote_tip  # nothing sent

    code, out, err = run_cli(capsys, "merge", "--fix")
    assert code == 0, err
    code, out, err = run_cli(capsys, "push", "origin")
    assert code == 0, err
    assert _counted(bare, run_git, "main") == 3


def test_a_shallow_clone_whose_tip_is_a_plain_merge_is_not_refused(
    ws: Workspace, tmp_path: Path, run_git: RunGit
) -> None:
    _pulled(ws, tmp_path, run_git, theirs=2)
    shallow = tmp_path / "shallow"
    run_git(tmp_path, "clone", "--quiet", "--depth", "1", f"file://{ws.root}", str(shallow))
    # git gives the cut tip no parents (the merge's sides are not there to settle): writers
    # go on, as git itself sees no merge, instead of failing on the missing sides.
    with txn.writer(Workspace(shallow), "evolve review"):
        pass
