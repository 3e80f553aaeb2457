"""A training run killed at any point leaves memory/ at HEAD, or the next run restores it."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from evolve._io import atomic_write
from evolve.episode import run_episode
from evolve.memory import dump_unit, parse_unit
from evolve.store import GitStore
from evolve.train import last_episode, train
from evolve.txn import WriterLock
from evolve.txn._journal import ApplyJournal, journal_path
from evolve.workspace import Workspace, init_workspace

RunGit = Callable[..., str]
STREAM = "alex/ace/0/instance"
LOCK = "evolve-writer.lock"


class Killed(BaseException):
    """Stands in for SIGKILL: nothing after the raise point runs (not even `except Exception`)."""


def _commit_count(root: Path) -> int:
    out = subprocess.run(
        ["git", "rev-list", "--count", "HEAD"], cwd=root, capture_output=True, text=True, check=True
    )
    return int(out.stdout)


def _memory_matches_head(ws: Workspace) -> list[str]:
    """Differences between memory/ on disk and memory/ at HEAD (empty when they agree)."""
    store = ws.store
    head = store.head()
    assert head is not None
    problems = []
    tracked = set(store.list_files(head, "memory"))
    on_disk = {
        p.relative_to(ws.root).as_posix() for p in (ws.root / "memory").rglob("*") if p.is_file()
    }
    for rel in sorted(on_disk - tracked):
        problems.append(f"untracked {rel}")
    for rel in sorted(tracked - on_disk):
        problems.append(f"missing {rel}")
    for rel in sorted(tracked & on_disk):
        if (ws.root / rel).read_bytes() != store.read(head, rel):
            problems.append(f"changed {rel}")
    return problems


def _assert_sound(ws: Workspace, run_git: RunGit) -> None:
    assert run_git(ws.root, "status", "--porcelain", "--untracked-files=all") == ""
    assert _memory_matches_head(ws) == []
    assert not journal_path(ws.store).exists()
    WriterLock(ws.store.git_dir / LOCK, "probe").acquire().release()  # the lock is free
    for path in (ws.root / "memory").rglob("*.md"):
        rel = path.relative_to(ws.root).as_posix()
        assert dump_unit(parse_unit(rel, path.read_text("utf-8"))) == path.read_text("utf-8")


def _episodes(root: Path, run_git: RunGit) -> list[int]:
    out = run_git(root, "log", "--reverse", "--format=%(trailers:key=Evolve-Episode,valueonly)")
    return [int(line) for line in out.split() if line.strip()]


def _ops_history(root: Path, run_git: RunGit) -> list[str]:
    out = run_git(
        root,
        "log",
        "--reverse",
        "--format=%(trailers:key=Evolve-Episode,valueonly)|%(trailers:key=Evolve-Ops,valueonly)",
    )
    return [line for line in out.splitlines() if line.strip("|").strip()]


@pytest.fixture
def first_episode_state(monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    """Once `state["ws"]` is set: how memory/ compares with HEAD when the next episode starts."""
    state: dict[str, Any] = {}

    def spy(*args: Any, **kwargs: Any) -> Any:
        if "ws" in state and "problems" not in state:
            ws = state["ws"]
            state["problems"] = _memory_matches_head(ws)
            state["head"] = ws.store.head()
            state["journal"] = journal_path(ws.store).exists()
            state["episode"] = kwargs.get("episode")
        return run_episode(*args, **kwargs)

    monkeypatch.setattr("evolve.train._train.run_episode", spy)
    return state


# --- a real SIGKILL -------------------------------------------------------------------------


def test_sigkill_mid_training_is_recovered_by_the_next_run(
    workspace: Workspace, run_git: RunGit, tmp_path: Path
) -> None:
    root = workspace.root
    base = _commit_count(root)
    env = {k: v for k, v in os.environ.items() if k != "EVOLVE_WORKSPACE"}
    log = tmp_path / "train.stderr"
    with log.open("wb") as stderr:
        proc = subprocess.Popen(
            [sys.executable, "-m", "evolve", "train", "--recipe", "ace", "--episodes", "5000"],
            cwd=root,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=stderr,
        )
        try:
            deadline = time.monotonic() + 60
            while _commit_count(root) < base + 2:
                assert proc.poll() is None, log.read_text("utf-8", "replace")
                assert time.monotonic() < deadline, "no two memory commits within 60 s"
                time.sleep(0.005)
            proc.send_signal(signal.SIGKILL)
        finally:
            if proc.poll() is None:
                proc.kill()
            proc.wait(timeout=30)
    assert proc.returncode == -signal.SIGKILL

    ws = Workspace(root)
    # Either memory/ agrees with HEAD, or the journal names every path that does not.
    dirty = ws.store.dirty_paths(["memory"])
    if dirty:
        import json

        journal = json.loads(journal_path(ws.store).read_text("utf-8"))
        assert set(dirty) <= set(journal["paths"]), (dirty, journal)
    committed = _episodes(root, run_git)
    assert len(committed) >= 2
    last = last_episode(ws, STREAM)
    assert last == committed[-1]

    report = train(ws, recipe="ace", episodes=last + 8)
    assert report.start == last + 1
    assert [o.episode for o in report.outcomes] == list(range(last + 1, last + 8))
    _assert_sound(ws, run_git)
    episodes = _episodes(root, run_git)
    assert episodes == sorted(set(episodes))  # no episode committed twice


# --- deterministic kills, in process --------------------------------------------------------


def test_kill_between_write_and_commit_is_undone_before_training_continues(
    workspace: Workspace,
    run_git: RunGit,
    monkeypatch: pytest.MonkeyPatch,
    first_episode_state: dict[str, Any],
    tmp_path: Path,
) -> None:
    real_commit = GitStore.commit
    calls = {"n": 0}

    def commit_then_die_on_third(self: GitStore, paths: Any, subject: str, **kw: Any) -> Any:
        calls["n"] += 1
        if calls["n"] == 3:
            raise Killed("killed after the applier wrote, before the commit")
        return real_commit(self, paths, subject, **kw)

    monkeypatch.setattr(GitStore, "commit", commit_then_die_on_third)
    with pytest.raises(Killed):
        train(workspace, recipe="ace", episodes=20)
    # The crash left written-but-uncommitted files and the journal behind.
    assert journal_path(workspace.store).exists()
    assert _memory_matches_head(workspace) != []
    committed = _episodes(workspace.root, run_git)
    assert len(committed) == 2
    monkeypatch.setattr(GitStore, "commit", real_commit)

    ws = Workspace(workspace.root)
    first_episode_state["ws"] = ws
    report = train(ws, recipe="ace", episodes=20)
    # Before the first episode ran, memory/ was back at HEAD and the journal gone.
    assert first_episode_state["problems"] == []
    assert first_episode_state["journal"] is False
    assert first_episode_state["episode"] == committed[-1] + 1 == report.start
    _assert_sound(ws, run_git)
    # The crashed episode was run again and committed: the history is that of an unbroken run.
    straight = init_workspace(tmp_path / "straight")
    train(straight, recipe="ace", episodes=20)
    assert _ops_history(ws.root, run_git) == _ops_history(straight.root, run_git)


def test_kill_halfway_through_writing_files_is_undone(
    workspace: Workspace,
    run_git: RunGit,
    monkeypatch: pytest.MonkeyPatch,
    first_episode_state: dict[str, Any],
) -> None:
    writes = {"n": 0}

    def die_on_second_file(path: Path, data: str | bytes, **kw: Any) -> None:
        writes["n"] += 1
        if writes["n"] == 2:
            raise Killed("killed between two unit files")
        atomic_write(path, data, **kw)

    monkeypatch.setattr("evolve.applier._memory.atomic_write", die_on_second_file)
    with pytest.raises(Killed):
        train(workspace, recipe="ace", episodes=10)
    assert len(list((workspace.root / "memory/alex").glob("*.md"))) == 1  # one of several
    assert _episodes(workspace.root, run_git) == []
    monkeypatch.setattr("evolve.applier._memory.atomic_write", atomic_write)

    ws = Workspace(workspace.root)
    first_episode_state["ws"] = ws
    report = train(ws, recipe="ace", episodes=10)
    assert first_episode_state["problems"] == []
    assert report.start == 0 and report.commits
    _assert_sound(ws, run_git)


def test_kill_after_the_commit_before_the_journal_is_removed(
    workspace: Workspace,
    run_git: RunGit,
    monkeypatch: pytest.MonkeyPatch,
    first_episode_state: dict[str, Any],
) -> None:
    real_end = ApplyJournal.end

    def die(self: ApplyJournal) -> None:
        raise Killed("killed after the commit")

    monkeypatch.setattr(ApplyJournal, "end", die)  # the transaction ends it after the commit
    with pytest.raises(Killed):
        train(workspace, recipe="ace", episodes=10)
    (episode,) = _episodes(workspace.root, run_git)
    crashed_head = workspace.store.head()
    assert journal_path(workspace.store).exists()
    assert _memory_matches_head(workspace) == []  # the commit holds everything written
    monkeypatch.setattr(ApplyJournal, "end", real_end)

    ws = Workspace(workspace.root)
    first_episode_state["ws"] = ws
    report = train(ws, recipe="ace", episodes=episode + 4)
    assert report.start == episode + 1  # the committed episode is not run again
    # Recovery kept what was committed: at the first episode memory/ was exactly that commit.
    assert first_episode_state["head"] == crashed_head
    assert first_episode_state["problems"] == []
    assert first_episode_state["journal"] is False
    _assert_sound(ws, run_git)


def test_a_write_killed_before_its_rename_leaves_nothing_that_blocks_training(
    workspace: Workspace,
) -> None:
    """A SIGKILL inside `atomic_write` leaves `.<name>.<random>.tmp` beside the unit: it is
    ignored by git (memory/ is not dirty) and removed by the next writer's recovery."""
    from evolve.txn._journal import begin, recover

    unit = workspace.root / "memory" / "alex" / "ace-0123456789.md"
    unit.parent.mkdir(parents=True, exist_ok=True)
    leftover = unit.parent / ".ace-0123456789.md.k1p0dp6.tmp"
    leftover.write_text("half a unit", encoding="utf-8")
    begin(workspace.store, ["memory/alex/ace-0123456789.md"])
    assert workspace.store.dirty_paths(["memory"]) == []
    recover(workspace.store)
    assert not leftover.exists()
