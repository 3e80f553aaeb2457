"""`evolve evolve --dry-run`: the proposal and the verdict are shown; the workspace, `.git/`
included, is left exactly as it was."""

from __future__ import annotations

import hashlib
import json
import os
import re
import stat
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

import evolve.generations._loop as loop
from evolve.cli import main
from evolve.errors import EvolveError
from evolve.evaluate import open_env
from evolve.generations import RECORDS_REF, evolve, load_records
from evolve.generations._loop import _Models
from evolve.llm import MockLLM
from evolve.sim import SimLLM
from evolve.workspace import CONFIG_NAME, Workspace

RunGit = Callable[..., str]

# Inside .git, a dry run may touch these timestamps (never their bytes): the writer lock is
# created in .git/ itself, and `git status` (the dirty-tree check) rewrites the index with the
# same content.
MTIME_ONLY = {".git", ".git/index"}
# The writer lock's flock file stays after release (it names no one then); it is no change.
LOCK_FILE = ".git/evolve-writer.lock"
REASONS = re.compile(
    r"accepted: dev gain |score did not improve|workspace tests failed|the generation changed "
    r"nothing|prompt size |tokens per episode |protected files changed"
)


def _configure(ws: Workspace, run_git: RunGit, **gate: Any) -> Workspace:
    path = ws.root / CONFIG_NAME
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    data["gate"].update(gate)
    path.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    run_git(ws.root, "commit", "-q", "-am", "test: configure the gate")
    return Workspace(ws.root)


def _files(root: Path) -> dict[str, tuple[str, int]]:
    """Every path under `root`, `.git/` included: its content hash (or link target) and mode."""
    out: dict[str, tuple[str, int]] = {}
    for folder, dirs, files in os.walk(root):
        for name in dirs + files:
            path = Path(folder) / name
            if path.relative_to(root).as_posix() == LOCK_FILE:
                assert path.read_bytes() == b"", "a released writer lock names no one"
                continue
            info = path.lstat()
            if stat.S_ISLNK(info.st_mode):
                what = "link:" + os.readlink(path)
            elif stat.S_ISDIR(info.st_mode):
                what = "dir"
            else:
                what = hashlib.sha256(path.read_bytes()).hexdigest()
            out[path.relative_to(root).as_posix()] = (what, info.st_mode)
    return out


def _mtimes(root: Path) -> dict[str, int]:
    out = {".git": (root / ".git").lstat().st_mtime_ns}
    for folder, dirs, files in os.walk(root):
        for name in dirs + files:
            path = Path(folder) / name
            if path.relative_to(root).as_posix() != LOCK_FILE:
                out[path.relative_to(root).as_posix()] = path.lstat().st_mtime_ns
    return out


def _git_state(root: Path, run_git: RunGit) -> dict[str, str]:
    return {
        "HEAD": run_git(root, "rev-parse", "HEAD"),
        "symbolic": run_git(root, "symbolic-ref", "HEAD"),
        "refs": run_git(root, "for-each-ref"),
        "index": run_git(root, "ls-files", "-s"),
        "status": run_git(root, "status", "--porcelain", "--untracked-files=all", "--ignored"),
        "objects": run_git(root, "count-objects", "-v"),
    }


def _changed(before: dict[str, Any], after: dict[str, Any]) -> list[str]:
    return sorted(k for k in before.keys() | after.keys() if before.get(k) != after.get(k))


@pytest.fixture
def private_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Route the dry run's temporary clone to a folder the test can inspect afterwards."""
    folder = tmp_path / "tmp"
    folder.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(folder))
    return folder


@pytest.mark.slow
def test_cli_dry_run_prints_the_diff_and_verdict_and_changes_nothing(
    workspace: Workspace,
    run_git: RunGit,
    private_tmp: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    # The default models (sim) and the real workspace tests; two training episodes keep it short.
    ws = _configure(workspace, run_git, train_episodes=2, runs=1)
    monkeypatch.chdir(ws.root)
    monkeypatch.delenv("EVOLVE_WORKSPACE", raising=False)
    # No cache file yet: a dry run that wrote one (evolve.yaml's parsed text) would show.
    for cache in (ws.root / ".git").glob("evolve-*.cache"):
        cache.unlink()
    files, mtimes, state = _files(ws.root), _mtimes(ws.root), _git_state(ws.root, run_git)

    assert main(["evolve", "--generations", "1", "--dry-run"]) == 0
    out, _ = capsys.readouterr()

    # What it prints: the table (dev and holdout), the verdict with its reason, the diff.
    assert "dry run: the workspace was not changed" in out
    verdict = re.search(r"\b1\s*\W\s*[\d.]+ -> [\d.]+\s*\W\s*[\d.]+ -> [\d.]+\s*\W\s*(\w+)", out)
    assert verdict and verdict.group(1) in ("accepted", "rejected"), out
    reason = re.search(r"^generation 1: (.+)$", out, re.MULTILINE)
    assert reason and REASONS.match(reason.group(1)), out
    assert "proposed diff of generation 1" in out
    touched = re.findall(r"^diff --git a/(\S+) b/", out, re.MULTILINE)
    assert touched, out
    assert all(p.startswith(("memory/", "prompts/")) for p in touched), touched
    assert "+<!-- evolve:guidance:start -->" in out or any(p.startswith("memory/") for p in touched)
    assert "records: generations/" not in out

    # Byte for byte, .git/ included.
    assert _changed(files, _files(ws.root)) == []
    assert _changed(state, _git_state(ws.root, run_git)) == []
    assert run_git(ws.root, "for-each-ref", RECORDS_REF) == ""
    assert not list((ws.root / "generations").glob("gen-*"))
    assert load_records(ws) == []
    # Only two timestamps in .git/ may move; nothing in the working tree is touched at all.
    assert set(_changed(mtimes, _mtimes(ws.root))) <= MTIME_ONLY
    # The temporary clone is gone.
    assert list(private_tmp.iterdir()) == []


@pytest.mark.slow
def test_a_dry_run_returns_its_record_and_writes_none(
    workspace: Workspace, run_git: RunGit, private_tmp: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ws = _configure(workspace, run_git, train_episodes=0, runs=1)
    monkeypatch.setattr(loop, "run_workspace_tests", lambda *args: (True, "stubbed"))
    env = open_env(ws)
    reflector = MockLLM(lambda m, s: json.dumps({"guidance": ["Be thorough in every task."]}))
    models = _Models(agent=SimLLM(env), updater=SimLLM(env), reflector=reflector)
    files, state = _files(ws.root), _git_state(ws.root, run_git)

    result = evolve(ws, generations=1, dry_run=True, models=models)

    [record] = result.records
    assert result.dry_run and record.dry_run
    assert record.verdict == "rejected" and "did not improve" in record.reason
    assert "+- Be thorough in every task." in result.diffs[1]
    assert "prompts/system.md" in result.diffs[1]
    assert _changed(files, _files(ws.root)) == []
    assert _changed(state, _git_state(ws.root, run_git)) == []
    assert load_records(ws) == []
    assert list(private_tmp.iterdir()) == []
    # A real run afterwards is generation 1: the dry run numbered nothing.
    [real] = evolve(ws, generations=1, models=models).records
    assert real.number == 1 and not real.dry_run


def test_a_dry_run_on_a_dirty_tree_is_refused(workspace: Workspace, run_git: RunGit) -> None:
    (workspace.root / "prompts" / "draft.md").write_text("mine\n", encoding="utf-8")
    with pytest.raises(EvolveError, match="prompts/draft.md"):
        evolve(workspace, generations=1, dry_run=True)
    assert run_git(workspace.root, "status", "--porcelain") == "?? prompts/draft.md\n"
