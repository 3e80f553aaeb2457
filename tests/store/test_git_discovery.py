"""The store finds its repository and runs git itself (no GitPython): plain repositories,
linked worktrees (a `.git` file and `commondir`), and git's own complaint on failure."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from evolve.errors import EvolveError
from evolve.store import GitFailed, GitStore

RunGit = Callable[..., str]


def _repo(root: Path, run_git: RunGit) -> GitStore:
    store = GitStore.init(root)
    (root / "memory").mkdir()
    (root / "memory" / "a.md").write_text("a\n", encoding="utf-8")
    assert store.commit(["memory/a.md"], "first") is not None
    return store


def test_a_plain_repository(tmp_path: Path, run_git: RunGit) -> None:
    store = _repo(tmp_path / "r", run_git)
    assert store.git_dir == tmp_path / "r" / ".git" == store.common_dir
    assert store.head() == run_git(store.root, "rev-parse", "HEAD").strip()
    assert store._repo is None  # GitPython is not touched unless `repo` is asked for


def test_a_linked_worktree_commits_on_its_own_branch(tmp_path: Path, run_git: RunGit) -> None:
    main = _repo(tmp_path / "r", run_git)
    run_git(main.root, "worktree", "add", "-q", "-b", "side", str(tmp_path / "wt"))
    store = GitStore(tmp_path / "wt")
    assert store.common_dir == main.git_dir
    assert store.git_dir == main.git_dir / "worktrees" / "wt"
    (store.root / "memory" / "b.md").write_text("b\n", encoding="utf-8")
    sha = store.commit(["memory/b.md"], "on the side")
    assert sha == run_git(store.root, "rev-parse", "side").strip()
    assert run_git(main.root, "rev-parse", "main").strip() != sha
    assert run_git(store.root, "status", "--porcelain") == ""
    assert [i.subject for i in store.walk()] == ["on the side", "first"]


def test_a_folder_without_a_repository_is_one_sentence(tmp_path: Path) -> None:
    with pytest.raises(EvolveError, match="is not a git repository"):
        GitStore(tmp_path)


def test_a_failing_git_command_carries_gits_stderr(tmp_path: Path, run_git: RunGit) -> None:
    store = _repo(tmp_path / "r", run_git)
    with pytest.raises(GitFailed) as caught:
        store.git("log", "-1", "no-such-branch")
    assert isinstance(caught.value, EvolveError)
    assert caught.value.returncode != 0 and "no-such-branch" in caught.value.stderr
    assert str(caught.value).startswith("git log failed: ambiguous argument 'no-such-branch'")
