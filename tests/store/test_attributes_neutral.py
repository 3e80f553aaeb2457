"""gitattributes that never change what git stores (evolve's own `merge=` rules for its
sidecars, `diff`, ...) leave the commit's blobs to the store: no `git hash-object` per file.
Any rule that may filter (or one the store cannot read for sure) still hands the file to git,
which stores it as `git add` would."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import pytest

from evolve.store import GitStore

RunGit = Callable[..., str]

EVOLVES = (
    "# evolve: counter sidecars merge three-way\n"
    "memory/**/_counters.yaml merge=evolve-counters\n"
    "*.md -diff linguist-generated !whitespace\n"
)


def _repo(tmp_path: Path, run_git: RunGit, attributes: str) -> GitStore:
    root = tmp_path / "repo"
    root.mkdir()
    store = GitStore.init(root)
    run_git(root, "config", "filter.upper.clean", "tr a-z A-Z")
    run_git(root, "config", "filter.upper.smudge", "cat")
    (root / ".gitattributes").write_text(attributes, encoding="utf-8")
    assert store.commit([".gitattributes"], "attributes") is not None
    (root / "memory").mkdir()
    return store


def _hashed_by_git(store: GitStore, monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, ...]]:
    calls: list[tuple[str, ...]] = []
    real = store._git_bytes

    def git_bytes(*args: str, **kwargs: object) -> bytes:
        if args[:1] == ("hash-object",):
            calls.append(args)
        return real(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(store, "_git_bytes", git_bytes)
    return calls


def test_merge_and_diff_rules_leave_the_blob_to_the_store(
    tmp_path: Path, run_git: RunGit, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = _repo(tmp_path, run_git, EVOLVES)
    hashed = _hashed_by_git(store, monkeypatch)
    (store.root / "memory" / "a.md").write_text("a note\r\n", encoding="utf-8")

    assert store.commit(["memory/a.md"], "learned") is not None

    assert hashed == []
    stored = run_git(store.root, "rev-parse", "HEAD:memory/a.md")
    assert stored == run_git(store.root, "hash-object", "memory/a.md")  # as `git add` stores it
    assert run_git(store.root, "status", "--porcelain") == ""
    run_git(store.root, "fsck", "--no-progress")


@pytest.mark.parametrize(
    "rule",
    [
        "*.md filter=upper\n",
        "memory/** text eol=crlf\n",
        "*.md binary\n",  # a macro
        "[attr]mine filter=upper\n*.md mine\n",
        '"memory/a.md" merge=ours\n',  # a quoted pattern: not read here
    ],
)
def test_any_other_rule_hands_the_file_to_git(
    tmp_path: Path, run_git: RunGit, monkeypatch: pytest.MonkeyPatch, rule: str
) -> None:
    store = _repo(tmp_path, run_git, EVOLVES + rule)
    hashed = _hashed_by_git(store, monkeypatch)
    (store.root / "memory" / "a.md").write_text("a note\n", encoding="utf-8")

    assert store.commit(["memory/a.md"], "learned") is not None

    assert len(hashed) == 1
    assert run_git(store.root, "status", "--porcelain") == ""


def test_a_linked_attributes_file_hands_the_file_to_git(
    tmp_path: Path, run_git: RunGit, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = _repo(tmp_path, run_git, EVOLVES)
    outside = tmp_path / "elsewhere"
    outside.write_text("*.md merge=ours\n", encoding="utf-8")
    os.symlink(outside, store.root / "memory" / ".gitattributes")
    hashed = _hashed_by_git(store, monkeypatch)
    (store.root / "memory" / "a.md").write_text("a note\n", encoding="utf-8")

    assert store.commit(["memory/a.md"], "learned") is not None

    assert len(hashed) == 1
