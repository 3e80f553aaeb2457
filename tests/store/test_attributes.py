"""Commits apply git's filters: a file under gitattributes is stored as `git add` stores it.

Without this, a repository that cleans its Markdown on the way in (git-crypt, Git LFS, `ident`,
`working-tree-encoding`, an eol rule) would get the raw working-tree bytes committed by evolve,
and git would report the freshly committed file as changed.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from evolve.store import GitStore

RunGit = Callable[..., str]


def _repo(tmp_path: Path, run_git: RunGit, attributes: str | None) -> GitStore:
    root = tmp_path / "repo"
    root.mkdir()
    store = GitStore.init(root)
    # A clean filter that upper-cases what goes into the repository (as git-crypt encrypts).
    run_git(root, "config", "filter.upper.clean", "tr a-z A-Z")
    run_git(root, "config", "filter.upper.smudge", "cat")
    if attributes is not None:
        (root / ".gitattributes").write_text(attributes, encoding="utf-8")
        assert store.commit([".gitattributes"], "attributes") is not None
    return store


@pytest.mark.parametrize("commit_path", ["fast", "git"])
def test_a_filtered_file_is_committed_as_git_add_would(
    tmp_path: Path, run_git: RunGit, commit_path: str
) -> None:
    store = _repo(tmp_path, run_git, "memory/** filter=upper\n")
    store.commit_path = "fast" if commit_path == "fast" else "git"
    root = store.root
    (root / "memory").mkdir()
    (root / "memory" / "a.md").write_text("a secret note\n", encoding="utf-8")

    assert store.commit(["memory/a.md"], "learned") is not None

    assert run_git(root, "show", "HEAD:memory/a.md") == "A SECRET NOTE\n"
    assert run_git(root, "status", "--porcelain") == ""
    assert run_git(root, "diff", "HEAD", "--stat") == ""
    run_git(root, "fsck", "--no-progress")


def test_a_filter_in_info_attributes_applies_too(tmp_path: Path, run_git: RunGit) -> None:
    store = _repo(tmp_path, run_git, None)
    root = store.root
    (store.common_dir / "info").mkdir(exist_ok=True)
    (store.common_dir / "info" / "attributes").write_text("*.md filter=upper\n", encoding="utf-8")
    (root / "memory").mkdir()
    (root / "memory" / "a.md").write_text("note\n", encoding="utf-8")

    assert store.commit(["memory/a.md"], "learned") is not None

    assert run_git(root, "show", "HEAD:memory/a.md") == "NOTE\n"
    assert run_git(root, "status", "--porcelain") == ""


def test_without_attributes_the_bytes_are_stored_as_they_are(
    tmp_path: Path, run_git: RunGit
) -> None:
    store = _repo(tmp_path, run_git, None)
    root = store.root
    (root / "memory").mkdir()
    (root / "memory" / "a.md").write_text("note\n", encoding="utf-8")

    assert store.commit(["memory/a.md"], "learned") is not None

    assert run_git(root, "show", "HEAD:memory/a.md") == "note\n"
