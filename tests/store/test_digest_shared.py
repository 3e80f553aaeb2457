"""Two digests of one command that stand on the same kept tip read the commits since it
once (`evolve.store._digest`): training's revert check and its streams' record each fold
them, from one `git log`."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

import pytest

from evolve.store import CommitInfo, GitStore, _digest, digest

RunGit = Callable[..., str]


def _picks(state: list[str], commits: Iterable[tuple[CommitInfo, str]]) -> list[str]:
    return [info.subject for info, message in commits if "pick" in message] + state


def _drops(state: list[str], commits: Iterable[tuple[CommitInfo, str]]) -> list[str]:
    return [info.subject for info, message in commits if "drop" in message] + state


def _shape(value: object) -> bool:
    return isinstance(value, list) and all(isinstance(v, str) for v in value)


def _both(store: GitStore) -> tuple[list[str], list[str]]:
    return (
        digest(store, "test-picks", "1", _picks, list, _shape),
        digest(store, "test-drops", "1", _drops, list, _shape),
    )


def _commit(root: Path, run_git: RunGit, subject: str) -> None:
    run_git(root, "commit", "-q", "--allow-empty", "-m", subject)


def test_two_digests_on_one_tip_walk_the_new_commits_once(
    tmp_path: Path, run_git: RunGit, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "repo"
    root.mkdir()
    run_git(root, "init", "-q", "-b", "main")
    for subject in ("c0 pick", "c1 drop", "c2"):
        _commit(root, run_git, subject)
    store = GitStore(root)
    assert _both(store) == (["c0 pick"], ["c1 drop"])  # each walks the whole history once
    tip = store.head()
    _commit(root, run_git, "c3 pick drop")
    _commit(root, run_git, "c4 drop")

    walks: list[tuple[str, ...]] = []
    real = _digest._records

    def records(store: GitStore, *rev: str) -> Iterator[Any]:
        walks.append(rev)
        yield from real(store, *rev)

    monkeypatch.setattr(_digest, "_records", records)
    assert _both(store) == (["c3 pick drop", "c0 pick"], ["c4 drop", "c3 pick drop", "c1 drop"])
    assert walks == [(f"{tip}..HEAD",)]
    # a later commit is a new HEAD: read again (once), never an answer kept for the old one
    _commit(root, run_git, "c5 pick")
    assert _both(store)[0] == ["c5 pick", "c3 pick drop", "c0 pick"]
    assert len(walks) == 2
