"""`evolve train --sync N`: pull before, push after every N episodes; a learner that loses a
push race pulls, merges and pushes again, and none of its episodes is lost."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import evolve.remote._travel as travel
from conftest import run_cli as _cli
from evolve.remote import clone, push
from evolve.train import train
from evolve.workspace import Workspace

RunGit = Callable[..., str]


def test_sync_pushes_every_n_episodes_and_a_lost_race_loses_nothing(
    ws: Workspace,
    tmp_path: Path,
    run_git: RunGit,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    train(ws, recipe="ace", episodes=2)
    bare = tmp_path / "origin.git"
    run_git(tmp_path, "init", "--quiet", "--bare", "--initial-branch=main", str(bare))
    run_git(ws.root, "remote", "add", "origin", f"file://{bare}")
    push(ws)
    a, _ = clone(str(bare), tmp_path / "a")
    b, _ = clone(str(bare), tmp_path / "b")

    # The race: right after a's push fetched (and found nothing new), b pushes blair's
    # episodes, so a's push is rejected as a non-fast-forward, once.
    real_fetch = travel.fetch
    raced: list[str] = []

    def fetch_then_race(store: Any, remote: str, branch: str) -> str | None:
        tip = real_fetch(store, remote, branch)
        if (
            store.root == a.root
            and not raced
            and store.ref_sha("refs/evolve/train")
            != (store.ref_sha("refs/remotes/origin/evolve/train"))
        ):
            raced.append("b")
            train(b, recipe="ace", episodes=4, persona="blair")
            push(b)
        return tip

    monkeypatch.setattr(travel, "fetch", fetch_then_race)
    code, out, err = _cli(
        capsys, "train", "-C", str(a.root), "--recipe", "ace", "--episodes", "8",
        "--sync", "3", "--json",
    )  # fmt: skip
    assert code == 0, err
    done = json.loads(out)
    assert raced == ["b"]
    assert [(c["start"], c["end"]) for c in done["chunks"]] == [(2, 5), (5, 8)]
    assert len(done["pushes"]) == 2
    assert done["pushes"][0]["pulls"] >= 1  # lost the race: pulled, merged, pushed again
    # every episode a committed is on the remote's branch, and b's too
    remote_log = run_git(bare, "log", "--format=%H", "main").split()
    assert done["commits"] and set(done["commits"]) <= set(remote_log)
    assert run_git(bare, "log", "--format=%H", "main", "--", "memory/blair")
    # both learners' records are on the remote's records ref
    stamps = run_git(bare, "ls-tree", "--name-only", "refs/evolve/train", "timeline/").split()
    assert stamps == ["timeline/alex.json", "timeline/blair.json"]
    assert run_git(a.root, "rev-parse", "HEAD") == run_git(bare, "rev-parse", "main")
