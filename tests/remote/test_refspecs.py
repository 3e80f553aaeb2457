"""The refspecs `evolve clone` configures: a plain `git fetch` brings the remote's records
beside the local ones, a plain `git push` sends the branch and every records ref, and is
never forced (a learner that pushed meanwhile makes git refuse it, nothing overwritten)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from evolve.remote import clone, pull, push
from evolve.train import train
from evolve.workspace import Workspace

RunGit = Callable[..., str]


def _refs(root: Path, run_git: RunGit, prefix: str) -> dict[str, str]:
    out = run_git(root, "for-each-ref", "--format=%(refname) %(objectname)", prefix)
    return dict(line.split() for line in out.splitlines())


def test_plain_git_fetch_and_push_carry_the_records_and_never_force(
    ws: Workspace, tmp_path: Path, run_git: RunGit
) -> None:
    train(ws, recipe="ace", episodes=3)
    bare = tmp_path / "origin.git"
    run_git(tmp_path, "init", "--quiet", "--bare", "--initial-branch=main", str(bare))
    run_git(ws.root, "remote", "add", "origin", f"file://{bare}")
    push(ws)
    a, _ = clone(f"file://{bare}", tmp_path / "a")
    b, _ = clone(f"file://{bare}", tmp_path / "b")
    pushes = run_git(a.root, "config", "--get-all", "remote.origin.push").split()
    assert pushes == ["HEAD", "refs/evolve/*:refs/evolve/*"]  # no "+": never forced

    train(a, recipe="ace", episodes=6)
    run_git(a.root, "push", "--quiet")  # plain git: the branch and the records
    assert _refs(bare, run_git, "refs/evolve") == _refs(a.root, run_git, "refs/evolve")
    assert run_git(bare, "rev-parse", "main") == run_git(a.root, "rev-parse", "HEAD")

    train(b, recipe="ace", episodes=5, seed=1)
    before = _refs(bare, run_git, "refs")
    refused = pytest.raises(AssertionError, run_git, b.root, "push", "--quiet")
    assert "rejected" in str(refused.value) or "fetch first" in str(refused.value)
    assert _refs(bare, run_git, "refs") == before  # nothing of a's overwritten

    ours = _refs(b.root, run_git, "refs/evolve")
    run_git(b.root, "fetch", "--quiet")  # plain git: the records come beside, not over
    assert _refs(b.root, run_git, "refs/evolve") == ours
    beside = _refs(b.root, run_git, "refs/remotes/origin/evolve")
    assert beside["refs/remotes/origin/evolve/train"] == before["refs/evolve/train"]

    pull(b)  # the union, then a plain push goes through, still unforced
    run_git(b.root, "push", "--quiet")
    train_tip = run_git(bare, "rev-parse", "refs/evolve/train").strip()
    assert (
        run_git(bare, "merge-base", "--is-ancestor", before["refs/evolve/train"], train_tip) == ""
    )
    assert run_git(bare, "merge-base", "--is-ancestor", ours["refs/evolve/train"], train_tip) == ""
