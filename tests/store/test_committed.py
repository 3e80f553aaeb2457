"""The store reads what is committed (issue 28, item 1): no replace ref, graft, attribute or
textconv driver changes what a read, a diff or a history walk returns."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from evolve.store import GitStore

RunGit = Callable[..., str]


@pytest.fixture
def repo(tmp_path: Path, run_git: RunGit) -> GitStore:
    root = tmp_path / "repo"
    store = GitStore.init(root)
    (root / "evalset").mkdir()
    (root / "evalset" / "splits.yaml").write_text("dev: [a, b, c, d]\n", encoding="utf-8")
    (root / "memory").mkdir()
    (root / "memory" / "note.md").write_text("one\n", encoding="utf-8")
    run_git(root, "add", "-A")
    run_git(root, "commit", "-q", "-m", "first")
    (root / "memory" / "note.md").write_text("two\n", encoding="utf-8")
    run_git(root, "commit", "-q", "-am", "second")
    return store


def _blob(root: Path, run_git: RunGit, data: bytes) -> str:
    (root.parent / "blob.tmp").write_bytes(data)
    return run_git(root, "hash-object", "-w", str(root.parent / "blob.tmp")).strip()


def _replace_splits(repo: GitStore, run_git: RunGit) -> None:
    fake = _blob(repo.root, run_git, b"dev: [a]\n")
    run_git(
        repo.root,
        "replace",
        run_git(repo.root, "rev-parse", "HEAD:evalset/splits.yaml").strip(),
        fake,
    )


def test_a_read_at_a_revision_returns_the_committed_blob_despite_a_replace_ref(
    repo: GitStore, run_git: RunGit
) -> None:
    _replace_splits(repo, run_git)
    repo.close()  # a fresh object reader, started after the replace ref exists
    store = GitStore(repo.root)

    assert store.read("HEAD", "evalset/splits.yaml") == b"dev: [a, b, c, d]\n"


def test_a_commit_on_a_replaced_head_builds_on_the_committed_tree(
    repo: GitStore, run_git: RunGit
) -> None:
    """The fast commit path reads HEAD's tree: a replace ref on HEAD must not smuggle another
    tree into the next commit."""
    root = repo.root
    head = run_git(root, "rev-parse", "HEAD").strip()
    run_git(root, "checkout", "-q", "--detach")
    (root / "evalset" / "splits.yaml").write_text("dev: [a]\n", encoding="utf-8")
    run_git(root, "commit", "-q", "-am", "side")
    side = run_git(root, "rev-parse", "HEAD").strip()
    run_git(root, "checkout", "-q", "main")
    run_git(root, "replace", head, side)
    store = GitStore(root)
    (root / "memory" / "note.md").write_text("three\n", encoding="utf-8")

    sha = store.commit(["memory/note.md"], "third")

    assert sha is not None
    splits = run_git(root, "--no-replace-objects", "show", f"{sha}:evalset/splits.yaml")
    assert splits == "dev: [a, b, c, d]\n"


def test_diffs_and_patches_show_the_committed_bytes_not_a_textconv(
    repo: GitStore, run_git: RunGit
) -> None:
    root = repo.root
    run_git(root, "config", "diff.evil.textconv", "sed s/two/HIDDEN/")
    (root / ".git" / "info").mkdir(exist_ok=True)
    (root / ".git" / "info" / "attributes").write_text("memory/* diff=evil\n", encoding="utf-8")
    assert "HIDDEN" in run_git(root, "log", "-p", "-1")  # git itself shows the textconv

    patches = repo.log_patches(["memory"], max_count=1)
    diff = repo.committed_diff("HEAD~1", "HEAD", ["memory"])

    assert "+two" in patches[0][1] and "HIDDEN" not in patches[0][1]
    assert "+two" in diff and "HIDDEN" not in diff


def test_history_walks_the_stored_parents_despite_grafts(repo: GitStore, run_git: RunGit) -> None:
    root = repo.root
    first, second = run_git(root, "rev-list", "--reverse", "HEAD").split()
    (root / ".git" / "info").mkdir(exist_ok=True)
    (root / ".git" / "info" / "grafts").write_text(f"{second}\n", encoding="utf-8")
    assert run_git(root, "rev-list", "HEAD").split() == [second]  # git sees no parent

    assert repo.commits_between(first, second) == [second]
    assert repo.is_ancestor(first, second)


def test_history_walks_the_stored_parents_despite_a_replace_graft(
    repo: GitStore, run_git: RunGit
) -> None:
    root = repo.root
    first, second = run_git(root, "rev-list", "--reverse", "HEAD").split()
    run_git(root, "replace", "--graft", second)

    assert repo.is_ancestor(first, second)
    assert (
        repo.committed_tree(second)
        == run_git(root, "--no-replace-objects", "rev-parse", f"{second}^{{tree}}").strip()
    )


def test_replace_refs_are_listed_loose_and_packed(repo: GitStore, run_git: RunGit) -> None:
    _replace_splits(repo, run_git)
    assert [r.startswith("refs/replace/") for r in repo.replace_refs()] == [True]
    run_git(repo.root, "pack-refs", "--all")
    assert len(repo.replace_refs()) == 1
