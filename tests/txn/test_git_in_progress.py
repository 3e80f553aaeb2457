"""Writers refuse while git is in the middle of an operation (issue 23 item 8), naming it."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from conftest import one_sentence as _one_sentence
from conftest import run_cli as _cli
from conftest import workspace_state as _state
from evolve.train import train
from evolve.workspace import Workspace

RunGit = Callable[..., str]


def _conflict(ws: Workspace, run_git: RunGit, how: str) -> None:
    """Leave `how` (merge, cherry-pick, revert, rebase) stopped on a conflict in prompts/."""
    system = ws.root / "prompts" / "system.md"
    run_git(ws.root, "checkout", "-q", "-b", "side")
    system.write_text(system.read_text(encoding="utf-8") + "side\n", encoding="utf-8")
    run_git(ws.root, "commit", "-q", "-am", "side")
    run_git(ws.root, "checkout", "-q", "-")
    system.write_text(system.read_text(encoding="utf-8") + "main\n", encoding="utf-8")
    run_git(ws.root, "commit", "-q", "-am", "main")
    args: tuple[str, ...] = {
        "merge": ("merge", "side"),
        "cherry-pick": ("cherry-pick", "side"),
        "rebase": ("rebase", "side"),
        "revert": ("revert", "--no-edit", "HEAD~1"),
    }[how]
    if how == "revert":  # HEAD~1 added "main"; HEAD adds "more" right after: a conflict
        system.write_text(system.read_text(encoding="utf-8") + "more\n", encoding="utf-8")
        run_git(ws.root, "commit", "-q", "-am", "more")
    with pytest.raises(AssertionError):
        run_git(ws.root, *args)


@pytest.mark.parametrize(
    ("how", "named"),
    [
        ("merge", "a merge"),
        ("cherry-pick", "a cherry-pick"),
        ("revert", "a revert"),
        ("rebase", "a rebase"),
    ],
)
def test_writers_refuse_during_a_git_operation_naming_it(
    ws: Workspace, run_git: RunGit, capsys: pytest.CaptureFixture[str], how: str, named: str
) -> None:
    train(ws, recipe="ace", episodes=4, persona="alex", feedback="instance")
    _conflict(ws, run_git, how)
    before = _state(ws.root, run_git)
    for args in (("train", "--episodes", "8"), ("revert", "HEAD~3")):
        code, out, err = _cli(capsys, *args)
        assert code != 0, args
        sentence = _one_sentence(err)
        assert f"git is in the middle of {named}" in sentence, sentence
        assert "--abort" in sentence
        assert _state(ws.root, run_git) == before
    # Reading commands still work.
    code, out, err = _cli(capsys, "log", "-n", "1")
    assert code == 0, err
