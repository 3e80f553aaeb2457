"""Both learners moved a counter by the same amount: git takes the identical bytes without
running the merge driver, so `evolve merge` (and `evolve pull`) merges such a sidecar
three-way itself and both episodes count (found by the sync soak)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
import yaml

from conftest import run_cli
from evolve.workspace import Workspace

RunGit = Callable[..., str]
UNIT = """---
id: ace-0123456789
schema: 1
recipe: ace
kind: bullet
status: active
scope: user:alex
created_episode: 0
updated_episode: 0
valid_from: '2026-12-02T02:37:02.000002+00:00'
---
Pay with the card I use most often.
"""


def _counts(ws: Workspace, harmful: int, message: str, run_git: RunGit) -> None:
    path = ws.root / "memory" / "alex" / "_counters.yaml"
    path.write_text(f"ace-0123456789:\n  harmful: {harmful}\n  helpful: 0\n", encoding="utf-8")
    run_git(ws.root, "commit", "--quiet", "-am", message)


def _moved_alike(ws: Workspace, run_git: RunGit) -> None:
    """One unit with harmful 1; branch `other` and the current branch each move it to 2 (one
    harmful episode each): the same bytes on both sides."""
    folder = ws.root / "memory" / "alex"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "ace-0123456789.md").write_text(UNIT, encoding="utf-8")
    (folder / "_counters.yaml").write_text(
        "ace-0123456789:\n  harmful: 1\n  helpful: 0\n", encoding="utf-8"
    )
    run_git(ws.root, "add", "memory")
    run_git(ws.root, "commit", "--quiet", "-m", "base")
    run_git(ws.root, "branch", "other")
    _counts(ws, 2, "ours: one harmful episode", run_git)
    run_git(ws.root, "checkout", "--quiet", "other")
    _counts(ws, 2, "theirs: one harmful episode", run_git)
    run_git(ws.root, "checkout", "--quiet", "-")


def test_a_counter_both_sides_moved_alike_counts_both_episodes(
    ws: Workspace, run_git: RunGit, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    _moved_alike(ws, run_git)
    code, out, err = run_cli(capsys, "merge", "other", "--json")
    assert code == 0, err
    merged = yaml.safe_load(run_git(ws.root, "show", "HEAD:memory/alex/_counters.yaml"))
    assert merged["ace-0123456789"]["harmful"] == 3  # 1 + (2 - 1) + (2 - 1)
    assert len(run_git(ws.root, "log", "-1", "--format=%P").split()) == 2


def test_after_a_plain_git_merge_merge_fix_counts_both_episodes(
    ws: Workspace, run_git: RunGit, capsys: pytest.CaptureFixture[str]
) -> None:
    _moved_alike(ws, run_git)
    run_git(ws.root, "merge", "--quiet", "--no-edit", "other")  # git alone: one count kept
    counted = yaml.safe_load(run_git(ws.root, "show", "HEAD:memory/alex/_counters.yaml"))
    assert counted["ace-0123456789"]["harmful"] == 2
    code, out, err = run_cli(capsys, "merge", "--fix", "--json")
    assert code == 0, err
    merged = yaml.safe_load(run_git(ws.root, "show", "HEAD:memory/alex/_counters.yaml"))
    assert merged["ace-0123456789"]["harmful"] == 3
    assert "Evolve-Kind: merge fix" in run_git(ws.root, "log", "-1", "--format=%B")
