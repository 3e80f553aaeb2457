"""`evolve pull` in its common forms runs without click (`evolve.cli._fast_pull`): the same
output, JSON and refusals as the click command, and click is never imported."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from evolve.cli._group import run as click_run
from evolve.remote import clone, push
from evolve.train import train
from evolve.workspace import Workspace

RunGit = Callable[..., str]
PROBE = """
import sys
from evolve.cli import main
code = main(sys.argv[1:])
print("click imported" if "click" in sys.modules else "no click", file=sys.stderr)
sys.exit(code)
"""


def _fast(root: Path, *args: str) -> tuple[int, str, str]:
    done = subprocess.run(
        [sys.executable, "-c", PROBE, "-C", str(root), "pull", *args],
        capture_output=True, text=True,
    )  # fmt: skip
    return done.returncode, done.stdout, done.stderr


def test_pull_without_click_says_what_the_click_command_says(
    ws: Workspace, tmp_path: Path, run_git: RunGit, capsys: pytest.CaptureFixture[str]
) -> None:
    train(ws, recipe="ace", episodes=2)
    bare = tmp_path / "origin.git"
    run_git(tmp_path, "init", "--quiet", "--bare", "--initial-branch=main", str(bare))
    run_git(ws.root, "remote", "add", "origin", f"file://{bare}")
    push(ws)
    one, _ = clone(f"file://{bare}", tmp_path / "one")
    two, _ = clone(f"file://{bare}", tmp_path / "two")
    train(ws, recipe="ace", episodes=5)
    push(ws)

    code, out, err = _fast(one.root)
    assert (code, err.strip()) == (0, "no click")
    assert "branch: fast-forward" in out and "refs/evolve/train:" in out
    capsys.readouterr()
    assert click_run(["pull", "--workspace", str(two.root)]) == 0
    assert capsys.readouterr().out == out  # the click command says the same
    assert run_git(one.root, "rev-parse", "HEAD") == run_git(two.root, "rev-parse", "HEAD")

    code, out, err = _fast(one.root, "--json")
    assert (code, err.strip()) == (0, "no click")
    assert json.loads(out)["merged_branch"] is None  # nothing new

    code, out, err = _fast(one.root, "nowhere")
    assert code == 1 and out == ""
    said, probe = err.strip().splitlines()
    assert probe == "no click"
    assert said.startswith("error: no remote named 'nowhere' (remotes: origin)")
    assert click_run(["pull", "nowhere", "-C", str(two.root)]) == 1
    assert capsys.readouterr().err.strip() == said

    code, out, err = _fast(one.root, "--help")  # anything else is click's
    assert code == 0 and "Usage: evolve pull" in out and "click imported" in err
