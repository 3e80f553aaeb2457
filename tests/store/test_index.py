"""The store's commit updates git's index from Python exactly as `git update-index` would,
and leaves to git every index it does not fully understand."""

from __future__ import annotations

import os
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from evolve.errors import EvolveError
from evolve.store import GitStore, _index

RunGit = Callable[..., str]


def _write(root: Path, rel: str, text: str) -> None:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    # Older than the index, so git never "smudges" it as racily clean and the entries git
    # writes can be compared field by field with ours.
    past = time.time_ns() - 10_000_000_000
    os.utime(path, ns=(past, past))


def _repo(tmp_path: Path, run_git: RunGit, *init: str) -> GitStore:
    root = tmp_path / "repo"
    root.mkdir()
    run_git(root, "init", "-q", "-b", "main", *init)
    _write(root, "README.md", "hello\n")
    _write(root, "memory/a.md", "alpha\n")
    _write(root, "memory/alex/b.md", "beta\n")
    run_git(root, "add", "-A")
    run_git(root, "commit", "-q", "-m", "initial")
    return GitStore(root)


def _index_processes(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, ...]]:
    """Record the `git update-index` processes the store starts."""
    seen: list[tuple[str, ...]] = []
    real = GitStore.git

    def git(self: GitStore, *args: str, **kwargs: Any) -> str:
        if args and args[0] == "update-index":
            seen.append(args)
        return real(self, *args, **kwargs)

    monkeypatch.setattr(GitStore, "git", git)
    return seen


def _clean(root: Path, run_git: RunGit) -> None:
    assert run_git(root, "status", "--porcelain", "--untracked-files=all") == ""
    run_git(root, "diff", "--cached", "--quiet", "HEAD")
    run_git(root, "diff", "--quiet")
    # The index's cache-tree (if any) must not hold a stale tree for a changed folder.
    assert run_git(root, "write-tree").strip() == run_git(root, "rev-parse", "HEAD^{tree}").strip()


def _change(root: Path) -> list[str]:
    _write(root, "memory/a.md", "alpha, changed\n")
    _write(root, "memory/alex/c.md", "gamma\n")
    (root / "memory" / "alex" / "b.md").unlink()
    return ["memory/a.md", "memory/alex/b.md", "memory/alex/c.md"]


def test_the_index_is_written_from_python_as_git_would_write_it(
    tmp_path: Path, run_git: RunGit, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = _repo(tmp_path, run_git)
    processes = _index_processes(monkeypatch)
    paths = _change(store.root)
    assert store.commit(paths, "change") is not None
    assert processes == []  # no git process for the index
    _clean(store.root, run_git)
    ours = run_git(store.root, "ls-files", "--stage", "--debug")
    # git's own update of the same paths, from the same files, writes the same entries.
    run_git(store.root, "update-index", "--add", "--remove", "--", *paths)
    assert run_git(store.root, "ls-files", "--stage", "--debug") == ours


def test_a_cache_tree_is_invalidated_along_the_changed_paths(
    tmp_path: Path, run_git: RunGit, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = _repo(tmp_path, run_git)
    run_git(store.root, "read-tree", "HEAD")  # an index with a full cache-tree (TREE)
    processes = _index_processes(monkeypatch)
    assert store.commit(_change(store.root), "change") is not None
    assert processes == []
    _clean(store.root, run_git)  # write-tree would return the stale tree without invalidation
    _write(store.root, "memory/alex/c.md", "gamma, again\n")
    assert store.commit(["memory/alex/c.md"], "again") is not None
    _clean(store.root, run_git)
    # git keeps committing on top of the index evolve wrote.
    _write(store.root, "README.md", "hello, git\n")
    run_git(store.root, "commit", "-q", "-am", "by git")
    _clean(store.root, run_git)
    run_git(store.root, "fsck", "--strict", "--no-progress", "--no-dangling")


def test_conflict_entries_of_other_paths_are_kept(
    tmp_path: Path, run_git: RunGit, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = _repo(tmp_path, run_git)
    blob = run_git(store.root, "rev-parse", "HEAD:README.md").strip()
    staged = "".join(f"100644 {blob} {stage}\tother.md\n" for stage in (1, 2, 3))
    subprocess.run(
        ["git", "update-index", "--index-info"], cwd=store.root, input=staged.encode(), check=True
    )
    _write(store.root, "memory/a.md", "alpha, changed\n")
    processes = _index_processes(monkeypatch)
    assert store.commit(["memory/a.md"], "change") is not None
    assert processes == []
    stages = run_git(store.root, "ls-files", "--stage", "--", "other.md").splitlines()
    assert [line.split()[2] for line in stages] == ["1", "2", "3"]
    assert run_git(store.root, "diff", "--cached", "--name-only", "HEAD", "--", "memory") == ""


@pytest.mark.parametrize(
    "setup",
    [
        ("update-index", "--index-version", "4"),
        ("update-index", "--split-index"),
        ("config", "core.sharedRepository", "group"),
        ("config", "core.fileMode", "false"),
    ],
    ids=["index-v4", "split-index", "shared-repository", "no-file-mode"],
)
def test_an_index_python_does_not_rewrite_is_left_to_git(
    tmp_path: Path, run_git: RunGit, monkeypatch: pytest.MonkeyPatch, setup: tuple[str, ...]
) -> None:
    store = _repo(tmp_path, run_git)
    run_git(store.root, *setup)
    processes = _index_processes(monkeypatch)
    assert store.commit(_change(store.root), "change") is not None
    assert len(processes) == 1
    _clean(store.root, run_git)


def test_untracked_cache_and_fsmonitor_data_are_dropped_not_kept_stale(
    tmp_path: Path, run_git: RunGit, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = _repo(tmp_path, run_git)
    run_git(store.root, "config", "core.untrackedCache", "true")
    run_git(store.root, "update-index", "--untracked-cache")
    run_git(store.root, "status", "--porcelain")  # fills the UNTR extension
    processes = _index_processes(monkeypatch)
    paths = _change(store.root)
    _write(store.root, "memory/alex/untracked.md", "not committed\n")
    assert store.commit(paths, "change") is not None
    assert processes == []
    status = run_git(store.root, "status", "--porcelain", "--untracked-files=all")
    assert status == "?? memory/alex/untracked.md\n"


def test_sha256_repositories(
    tmp_path: Path, run_git: RunGit, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = _repo(tmp_path, run_git, "--object-format=sha256")
    run_git(store.root, "read-tree", "HEAD")
    processes = _index_processes(monkeypatch)
    assert store.commit(_change(store.root), "change") is not None
    assert processes == []
    _clean(store.root, run_git)
    run_git(store.root, "fsck", "--strict", "--no-progress", "--no-dangling")


def test_a_change_made_after_the_file_was_read_shows_as_modified(
    tmp_path: Path, run_git: RunGit, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The index records the file as it was read: an edit between reading the file for the
    commit and writing the index is not hidden behind fresh stat data."""
    store = _repo(tmp_path, run_git)
    _write(store.root, "memory/a.md", "alpha, changed\n")
    real = GitStore._write_tree

    def edit_meanwhile(self: GitStore, *args: Any) -> str | None:
        (store.root / "memory" / "a.md").write_text("an edit meanwhile\n", encoding="utf-8")
        return real(self, *args)

    monkeypatch.setattr(GitStore, "_write_tree", edit_meanwhile)
    sha = store.commit(["memory/a.md"], "change")
    assert sha is not None and store.read(sha, "memory/a.md") == b"alpha, changed\n"
    assert run_git(store.root, "status", "--porcelain") == " M memory/a.md\n"


def test_a_held_index_lock_falls_back_to_git_and_its_message(
    tmp_path: Path, run_git: RunGit, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = _repo(tmp_path, run_git)
    _write(store.root, "memory/a.md", "alpha, changed\n")
    monkeypatch.setattr(GitStore, "_check_index_free", lambda self: None)
    monkeypatch.setattr(_index, "LOCK_WAIT_S", 0.05)
    lock = store.git_dir / "index.lock"
    lock.write_bytes(b"")
    with pytest.raises(EvolveError, match="could not update the index"):
        store.commit(["memory/a.md"], "change")
    lock.unlink()


def test_a_linked_worktree_gets_its_own_index_updated(
    tmp_path: Path, run_git: RunGit, monkeypatch: pytest.MonkeyPatch
) -> None:
    main = _repo(tmp_path, run_git)
    linked = tmp_path / "linked"
    run_git(main.root, "worktree", "add", "-q", "-b", "side", str(linked))
    store = GitStore(linked)
    processes = _index_processes(monkeypatch)
    assert store.commit(_change(linked), "change") is not None
    assert processes == []
    _clean(linked, run_git)
    _clean(main.root, run_git)  # the main worktree's index is untouched and still agrees


def _extension_names(index: bytes, rawlen: int) -> list[bytes]:
    """The signatures of the extensions of a version 2 index (entries read as git lays them)."""
    count = int.from_bytes(index[8:12], "big")
    pos = 12
    for _ in range(count):
        flags = int.from_bytes(index[pos + 40 + rawlen : pos + 42 + rawlen], "big")
        end = index.index(b"\0", pos + 42 + rawlen)
        assert flags & 0x4000 == 0
        pos += (end - pos + 8) & ~7
    names = []
    while pos < len(index) - rawlen:
        names.append(index[pos : pos + 4])
        pos += 8 + int.from_bytes(index[pos + 4 : pos + 8], "big")
    return names


def test_an_unknown_optional_extension_is_dropped_as_git_drops_it(
    tmp_path: Path, run_git: RunGit, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A newer git's optional extension may describe the entries (offsets, per-entry bits):
    # kept after the entries changed, it would describe other ones. git itself never writes
    # back an extension it does not know, and neither may we.
    import hashlib

    store = _repo(tmp_path, run_git)
    index = store.git_dir / "index"
    data = index.read_bytes()[:-20]
    body = b"\0\0\0\x02per-entry data"
    data += b"ZNEW" + len(body).to_bytes(4, "big") + body
    index.write_bytes(data + hashlib.sha1(data).digest())
    assert b"ZNEW" in _extension_names(index.read_bytes(), 20)
    run_git(store.root, "status", "--porcelain")  # git reads it (optional: ignored)
    processes = _index_processes(monkeypatch)
    assert store.commit(_change(store.root), "change") is not None
    assert processes == []
    assert b"ZNEW" not in _extension_names(index.read_bytes(), 20)
    _clean(store.root, run_git)


def test_a_git_command_racing_the_commit_is_waited_for_not_left_behind(
    tmp_path: Path, run_git: RunGit, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The user's `git add` takes index.lock between the store's check and its index write:
    # the commit is made either way, so giving up at once would leave the index behind HEAD
    # (`git status` showing the commit's changes reverted in the index).
    import threading

    store = _repo(tmp_path, run_git)
    paths = _change(store.root)
    lock = store.git_dir / "index.lock"
    real = GitStore._check_index_free

    def git_add_starts(self: GitStore) -> None:
        real(self)
        lock.write_bytes(b"")
        threading.Timer(0.3, lock.unlink).start()

    monkeypatch.setattr(GitStore, "_check_index_free", git_add_starts)
    processes = _index_processes(monkeypatch)
    assert store.commit(paths, "change") is not None
    assert processes == []
    assert not lock.exists()
    _clean(store.root, run_git)
