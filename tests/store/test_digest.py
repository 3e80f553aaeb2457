"""`evolve.store.digest`: what a writer needs from history, kept per commit, must always be
what a fold of the whole history gives (after new commits, resets, amends, rebases, merges,
a lost tip, replace refs), and read only the commits since the last look when it can."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

import pytest

from evolve.store import CommitInfo, GitStore, _digest, digest

RunGit = Callable[..., str]


def _fold(state: list[str], commits: Iterable[tuple[CommitInfo, str]]) -> list[str]:
    """Every commit whose message mentions "pick", newest first."""
    return [info.subject for info, message in commits if "pick" in message] + state


def _shape(value: object) -> bool:
    return isinstance(value, list) and all(isinstance(v, str) for v in value)


def _look(store: GitStore) -> list[str]:
    return digest(store, "test", "1", _fold, list, _shape)


def _truth(root: Path, run_git: RunGit) -> list[str]:
    out = run_git(root, "log", "--fixed-strings", "--grep=pick", "--format=%s")
    return out.splitlines()


@pytest.fixture
def repo(tmp_path: Path, run_git: RunGit) -> GitStore:
    root = tmp_path / "repo"
    root.mkdir()
    run_git(root, "init", "-q", "-b", "main")
    for n in range(4):
        _commit(root, run_git, f"c{n}" + (" pick" if n % 2 else ""))
    return GitStore(root)


def _commit(root: Path, run_git: RunGit, subject: str) -> None:
    run_git(root, "commit", "-q", "--allow-empty", "-m", subject)


@pytest.fixture
def walks(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, ...]]:
    seen: list[tuple[str, ...]] = []
    real = _digest._records

    def records(store: GitStore, *rev: str) -> Iterator[Any]:
        seen.append(rev)
        yield from real(store, *rev)

    monkeypatch.setattr(_digest, "_records", records)
    return seen


def test_new_commits_are_read_alone_and_a_kept_head_reads_nothing(
    repo: GitStore, run_git: RunGit, walks: list[tuple[str, ...]]
) -> None:
    root = repo.root
    assert _look(repo) == _truth(root, run_git) == ["c3 pick", "c1 pick"]
    assert walks == [("HEAD",)]
    walks.clear()
    assert _look(repo) == _truth(root, run_git)
    assert walks == []
    tip = repo.head()
    _commit(root, run_git, "c4 pick")
    _commit(root, run_git, "hand commit")
    assert _look(repo) == _truth(root, run_git) == ["c4 pick", "c3 pick", "c1 pick"]
    assert walks == [(f"{tip}..HEAD",)]


def test_reset_amend_rebase_and_merge_give_what_a_whole_walk_gives(
    repo: GitStore, run_git: RunGit, walks: list[tuple[str, ...]]
) -> None:
    root = repo.root
    _look(repo)
    _commit(root, run_git, "c4 pick")
    assert _look(repo) == _truth(root, run_git)
    # Reset to an older commit: what c4 said is gone.
    run_git(root, "reset", "-q", "--hard", "HEAD~2")
    walks.clear()
    assert _look(repo) == _truth(root, run_git) == ["c1 pick"]
    assert walks[-1] == ("HEAD",)  # no kept tip is an ancestor: the whole history
    # Back to a tip that was kept: nothing read.
    run_git(root, "reset", "-q", "--hard", "main@{1}")
    walks.clear()
    assert _look(repo) == _truth(root, run_git) == ["c4 pick", "c3 pick", "c1 pick"]
    assert walks == []
    # An amend replaces the tip: not an ancestor any more.
    run_git(root, "commit", "-q", "--amend", "--allow-empty", "-m", "c4 amended")
    assert _look(repo) == _truth(root, run_git) == ["c3 pick", "c1 pick"]
    # A rebase of the last commits under a new one.
    run_git(root, "checkout", "-q", "-b", "side", "HEAD~2")
    _commit(root, run_git, "side pick")
    run_git(root, "checkout", "-q", "main")
    _look(repo)
    run_git(root, "rebase", "-q", "side")
    assert _look(repo) == _truth(root, run_git)
    # A merge brings in history of its own: the whole walk decides.
    run_git(root, "checkout", "-q", "-b", "other", "HEAD~3")
    _commit(root, run_git, "other pick")
    run_git(root, "checkout", "-q", "main")
    _look(repo)
    run_git(root, "merge", "-q", "--no-edit", "--no-ff", "other")
    walks.clear()
    assert _look(repo) == _truth(root, run_git)
    assert walks[-1] == ("HEAD",)


def test_a_lost_tip_or_a_damaged_file_walks_everything(
    repo: GitStore, run_git: RunGit, walks: list[tuple[str, ...]]
) -> None:
    root = repo.root
    path = repo.git_dir / "evolve-test.digest"
    _look(repo)
    path.write_text('{"version": "1", "tips": [["' + "0" * 40 + '", ["forged"]]]}\n')
    _commit(root, run_git, "c4")
    assert _look(repo) == _truth(root, run_git)  # the forged tip is not in this repository
    path.write_text("not json", encoding="utf-8")
    assert _look(repo) == _truth(root, run_git)
    # A value of another shape at HEAD is not served.
    version = _digest._code_version("1", _fold)
    head = repo.head()
    path.write_text(f'{{"version": "{version}", "tips": [["{head}", {{"x": 1}}]]}}\n')
    assert _look(repo) == _truth(root, run_git)
    # Another version of the fold does not read this one's file, nor does another fold.
    assert digest(repo, "test", "2", lambda s, c: ["v2"], list, _shape) == ["v2"]

    def other(state: list[str], commits: Iterable[tuple[CommitInfo, str]]) -> list[str]:
        return ["changed code"]

    assert digest(repo, "test", "1", other, list, _shape) == ["changed code"]
    assert _look(repo) == _truth(root, run_git)


def test_under_replace_refs_nothing_is_kept(
    repo: GitStore, run_git: RunGit, walks: list[tuple[str, ...]]
) -> None:
    root = repo.root
    run_git(root, "replace", "HEAD~1", "HEAD~2")
    assert _look(repo) == _truth(root, run_git)
    assert not (repo.git_dir / "evolve-test.digest").exists()


def test_no_commits_folds_nothing(tmp_path: Path, run_git: RunGit) -> None:
    run_git(tmp_path, "init", "-q")
    assert _look(GitStore(tmp_path)) == []
