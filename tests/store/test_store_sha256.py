"""The store works on SHA-256 repositories: objects hashed with the repository's algorithm,
and everything evolve writes passes `git fsck`."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable, Sequence
from pathlib import Path

import pytest

from conftest import run_cli
from evolve.history import revert
from evolve.llm import JsonSchema, Message, MockLLM
from evolve.store import GitStore
from evolve.train import train
from evolve.workspace import Workspace, init_workspace

RunGit = Callable[..., str]


def _fsck(root: Path, run_git: RunGit) -> None:
    run_git(root, "fsck", "--strict", "--no-progress", "--no-dangling")


@pytest.fixture
def repo(tmp_path: Path, run_git: RunGit) -> GitStore:
    root = tmp_path / "r"
    run_git(tmp_path, "init", "-q", "--object-format=sha256", "-b", "main", str(root))
    return GitStore(root)


def _write(root: Path, rel: str, text: str) -> None:
    (root / rel).parent.mkdir(parents=True, exist_ok=True)
    (root / rel).write_text(text, encoding="utf-8")


def test_commits_reads_and_history_on_sha256(
    repo: GitStore, run_git: RunGit, tmp_path: Path
) -> None:
    root = repo.root
    assert repo.object_format == "sha256"
    _write(root, "README.md", "hello\n")
    _write(root, "memory/alex/a.md", "alpha\n")
    first = repo.commit(["README.md", "memory/alex/a.md"], "first", trailers={"Evolve-Kind": "x"})
    assert first is not None and len(first) == 64
    _write(root, "memory/alex/a.md", "alpha 2\n")
    _write(root, "memory/b.md", "beta\n")
    (root / "README.md").unlink()
    second = repo.commit(["memory/alex/a.md", "memory/b.md", "README.md"], "second")
    assert second is not None
    assert run_git(root, "rev-parse", "HEAD").strip() == second
    assert run_git(root, "rev-parse", "HEAD^").strip() == first
    # the tree is the one git itself writes for this working tree
    twin = tmp_path / "twin"
    shutil.copytree(root, twin, ignore=shutil.ignore_patterns(".git"))
    run_git(tmp_path, "init", "-q", "--object-format=sha256", str(twin))
    run_git(twin, "add", "-A")
    assert run_git(twin, "write-tree").strip() == run_git(root, "rev-parse", "HEAD^{tree}").strip()
    assert run_git(root, "status", "--porcelain") == ""
    _fsck(root, run_git)

    assert [c.sha for c in repo.log()] == [second, first]
    assert next(repo.log(rev=first)).trailers == {"Evolve-Kind": "x"}
    assert repo.read(first, "memory/alex/a.md") == b"alpha\n"
    assert repo.read("HEAD", "memory/alex/a.md") == b"alpha 2\n"
    assert repo.read(second, "README.md") is None
    assert repo.list_files("HEAD", "memory") == ["memory/alex/a.md", "memory/b.md"]
    assert repo.changed_paths(None, first) == [("A", "README.md"), ("A", "memory/alex/a.md")]
    assert ("D", "README.md") in repo.changed_paths(first, second)
    assert [c.sha for c, _ in repo.log_patches(["memory/alex/a.md"])] == [second, first]
    assert repo.commit_info("HEAD~1").sha == first

    side = repo.write_side_ref("refs/evolve/records", {"g/1.json": b"{}"}, "record")
    side2 = repo.write_side_ref("refs/evolve/records", {"g/2.json": b"[]"}, "record 2")
    assert run_git(root, "rev-parse", "refs/evolve/records^").strip() == side
    assert run_git(root, "rev-parse", "refs/evolve/records").strip() == side2
    assert repo.read_side_ref("refs/evolve/records") == {"g/1.json": b"{}", "g/2.json": b"[]"}
    repo.reset_hard(first)
    assert repo.head() == first
    _fsck(root, run_git)


class _Updater:
    def __call__(self, messages: Sequence[Message], schema: JsonSchema | None) -> str:
        return json.dumps(
            {
                "operations": [{"op": "add", "text": "Keep all my Venmo payments private."}],
                "bullet_tags": [],
            }
        )


def test_a_workspace_on_sha256_trains_logs_and_reverts(
    tmp_path: Path,
    run_git: RunGit,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setenv("GIT_DEFAULT_HASH", "sha256")  # what `git init` then creates
    ws: Workspace = init_workspace(tmp_path / "ws")
    assert run_git(ws.root, "rev-parse", "--show-object-format").strip() == "sha256"
    report = train(ws, recipe="ace", episodes=2, updater_llm=MockLLM(_Updater()))
    assert report.commits
    _fsck(ws.root, run_git)
    monkeypatch.chdir(ws.root)
    code, out, err = run_cli(capsys, "log", "--json")
    assert code == 0, err
    assert report.commits[0] in out
    result = revert(ws, report.commits[0], reason="sha256 check")
    assert len(result.commit) == 64
    assert run_git(ws.root, "status", "--porcelain") == ""
    _fsck(ws.root, run_git)
