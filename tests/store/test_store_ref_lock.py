"""A git lock file left by a killed process is recovered by the next writer.

Evolve creates ref and index locks only while it holds the workspace's writer lock, so a
lock found while holding it, and untouched for a second, is a leftover; without the writer
lock, nothing is removed and the refusal says what to do.
"""

from __future__ import annotations

import logging
import os
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Callable
from pathlib import Path

import pytest

import evolve.store._refs as git_module
from evolve.errors import EvolveError
from evolve.txn import lock as txn_lock
from evolve.workspace import Workspace

RunGit = Callable[..., str]

_KILLED_MID_COMMIT = textwrap.dedent(
    """
    import os, sys, time
    from pathlib import Path
    from evolve.txn import lock as txn_lock
    from evolve.workspace import Workspace

    real_replace = os.replace

    def stall(src, dst):
        if str(src).endswith(".lock"):
            print("locked", flush=True)
            time.sleep(600)
        real_replace(src, dst)

    os.replace = stall
    ws = Workspace(Path(sys.argv[1]))
    with txn_lock(ws, "evolve train"):
        (ws.root / "memory" / "killed.md").write_text("never lands\\n", encoding="utf-8")
        ws.store.commit(["memory/killed.md"], "never lands")
    """
)


def _age(path: Path, seconds: float = 30.0) -> None:
    """Make `path` look as old as a leftover of an earlier run."""
    then = time.time() - seconds
    os.utime(path, (then, then))


def _waits(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    """Every `time.sleep` from now on (the lock recovery's polling), still slept: a lock
    removed "at once" is removed without one."""
    real_sleep = time.sleep
    waits: list[float] = []

    def sleep(seconds: float) -> None:
        waits.append(seconds)
        real_sleep(seconds)

    monkeypatch.setattr(time, "sleep", sleep)
    return waits


def _user_git(ws: Workspace) -> subprocess.Popen[bytes]:
    """A git command the user runs by hand in the workspace (not a child of this process), in
    its own process group, seen by the store before this returns; `_stop` ends it."""
    proc = subprocess.Popen(
        ["sh", "-c", "sleep 600 | git cat-file --batch"], cwd=ws.root, start_new_session=True
    )
    _until(lambda: git_module._git_running_in(ws.root.resolve(), ws.store.git_dir.resolve()))
    return proc


def _stop(ws: Workspace, proc: subprocess.Popen[bytes]) -> None:
    """Stop the user's git and its feeder, and wait until the store no longer sees it."""
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    root, git_dir = ws.root.resolve(), ws.store.git_dir.resolve()
    _until(lambda: git_module._git_running_in(root, git_dir) is False)


def _until(condition: Callable[[], object], timeout: float = 60.0) -> None:
    """Poll `condition` until it holds; fail after `timeout` seconds (generous: under load)."""
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "timed out waiting"
        time.sleep(0.02)


def _edit(ws: Workspace, text: str) -> str:
    rel = "memory/note.md"
    (ws.root / rel).write_text(text, encoding="utf-8")
    return rel


def test_branch_lock_of_a_process_killed_mid_commit_is_recovered(
    workspace: Workspace, run_git: RunGit, caplog: pytest.LogCaptureFixture
) -> None:
    ws = workspace
    base = ws.store.head()
    proc = subprocess.Popen(
        [sys.executable, "-c", _KILLED_MID_COMMIT, str(ws.root)], stdout=subprocess.PIPE, text=True
    )
    assert proc.stdout is not None
    assert proc.stdout.readline().strip() == "locked"
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    lock = ws.store.git_dir / "refs" / "heads" / "main.lock"
    assert lock.exists()
    assert ws.store.head() == base

    # Without the writer lock: refused, one sentence naming the file, nothing removed.
    rel = _edit(ws, "after the kill\n")
    with pytest.raises(EvolveError, match="main.lock exists") as info:
        ws.store.commit([rel], "no writer lock")
    assert str(info.value).count(". ") == 0 and str(info.value).endswith(".")
    assert lock.exists() and ws.store.head() == base

    # The next writer recovers it (a fresh leftover waits out the one-second grace first).
    caplog.set_level(logging.WARNING, logger="evolve.store._git")
    with txn_lock(ws, "evolve train"):
        sha = ws.store.commit([rel], "after the kill")
    assert sha is not None and not lock.exists()
    assert run_git(ws.root, "rev-parse", "HEAD^").strip() == base
    assert any("main.lock" in r.getMessage() for r in caplog.records)
    assert "killed.md" not in run_git(ws.root, "ls-tree", "-r", "--name-only", "HEAD")
    run_git(ws.root, "fsck", "--no-progress", "--no-dangling")


def test_old_leftover_branch_lock_is_removed_at_once(
    workspace: Workspace, run_git: RunGit, monkeypatch: pytest.MonkeyPatch
) -> None:
    ws = workspace
    lock = ws.store.git_dir / "refs" / "heads" / "main.lock"
    lock.write_text("", encoding="utf-8")
    _age(lock)
    rel = _edit(ws, "x\n")
    waits = _waits(monkeypatch)
    with txn_lock(ws, "evolve train"):
        assert ws.store.commit([rel], "recovered") is not None
    assert waits == []  # no git at work in the repository: nothing to wait for
    assert not lock.exists()
    assert run_git(ws.root, "status", "--porcelain") == ""


@pytest.mark.slow
def test_a_lock_of_a_live_git_in_the_repository_is_not_removed(
    workspace: Workspace, monkeypatch: pytest.MonkeyPatch
) -> None:
    ws = workspace
    lock = ws.store.git_dir / "index.lock"
    lock.write_text("", encoding="utf-8")
    _age(lock)
    user_git = _user_git(ws)
    try:
        with txn_lock(ws, "evolve train"):
            start = time.monotonic()
            assert ws.store.recover_stale_lock(lock) is False
            # It waited for that git, then gave up while the git still ran.
            assert time.monotonic() - start >= git_module.STALE_LOCK_SECONDS
            assert user_git.poll() is None
            assert lock.exists()
            rel = _edit(ws, "blocked\n")
            with pytest.raises(EvolveError):
                ws.store.commit([rel], "blocked by the user's git")
    finally:
        _stop(ws, user_git)
    waits = _waits(monkeypatch)
    with txn_lock(ws, "evolve train"):  # that git is gone: the leftover goes at once
        assert ws.store.recover_stale_lock(lock) is True
    assert waits == []
    assert not lock.exists()


def test_a_lock_a_live_git_releases_is_waited_for(
    workspace: Workspace, monkeypatch: pytest.MonkeyPatch
) -> None:
    ws = workspace
    lock = ws.store.git_dir / "refs" / "heads" / "main.lock"
    lock.write_text("", encoding="utf-8")
    # However slow the machine, the wait outlasts the owner: the test is about who removes it.
    monkeypatch.setattr(git_module, "STALE_LOCK_SECONDS", 600.0)
    running_in = git_module._git_running_in
    released: list[bool] = []

    def seen_then_released(root: Path, git_dir: Path) -> bool | None:
        # The recovery saw the user's git at work; then its owner removes the lock.
        busy = running_in(root, git_dir)
        if busy and not released:
            lock.unlink()  # FileNotFoundError if the recovery had removed it already
            released.append(True)
        return busy

    user_git = _user_git(ws)
    monkeypatch.setattr(git_module, "_git_running_in", seen_then_released)
    try:
        with txn_lock(ws, "evolve train"):
            assert ws.store.recover_stale_lock(lock) is True  # gone by itself, not by us
    finally:
        monkeypatch.setattr(git_module, "_git_running_in", running_in)
        _stop(ws, user_git)
    assert released == [True]  # it was still there for its owner to remove


def test_leftover_index_lock_is_recovered(workspace: Workspace, run_git: RunGit) -> None:
    ws = workspace
    lock = ws.store.git_dir / "index.lock"
    lock.write_text("", encoding="utf-8")
    _age(lock)
    rel = _edit(ws, "index\n")
    with txn_lock(ws, "evolve train"):
        sha = ws.store.commit([rel], "index lock recovered")
        assert sha is not None
        _edit(ws, "uncommitted\n")
        lock.write_text("", encoding="utf-8")
        _age(lock)
        ws.store.reset_hard(sha)
    assert not lock.exists()
    assert run_git(ws.root, "status", "--porcelain") == ""


def test_leftover_side_ref_lock_is_recovered(workspace: Workspace, run_git: RunGit) -> None:
    ws = workspace
    ref = "refs/evolve/records"
    first = ws.store.write_side_ref(ref, {"a.json": b"{}"}, "record 1")
    lock = ws.store.git_dir / "refs" / "evolve" / "records.lock"
    lock.write_text("", encoding="utf-8")
    _age(lock)
    with pytest.raises(EvolveError, match="records.lock"):
        ws.store.write_side_ref(ref, {"b.json": b"{}"}, "record 2")  # no writer lock: git refuses
    with txn_lock(ws, "evolve evolve"):
        second = ws.store.write_side_ref(ref, {"b.json": b"{}"}, "record 2")
    assert not lock.exists()
    assert run_git(ws.root, "rev-parse", f"{ref}^").strip() == first
    assert sorted(ws.store.read_side_ref(ref)) == ["a.json", "b.json"]
    assert run_git(ws.root, "rev-parse", ref).strip() == second


def test_the_next_writer_recovers_every_leftover_lock_at_once(
    workspace: Workspace, run_git: RunGit
) -> None:
    ws = workspace
    ws.store.write_side_ref("refs/evolve/records", {"a.json": b"{}"}, "record")
    git_dir = ws.store.git_dir
    leftovers = [
        git_dir / "index.lock",
        git_dir / "HEAD.lock",
        git_dir / "refs" / "heads" / "main.lock",
        git_dir / "refs" / "evolve" / "records.lock",
    ]
    for lock in leftovers:
        lock.write_text("", encoding="utf-8")
        _age(lock)
    temp_index = git_dir / "evolve-index-99999"  # of a git-commit-path commit cut short
    temp_index.write_bytes(b"DIRC")
    assert ws.store.recover_stale_locks() == []  # not under the writer lock: nothing removed
    assert all(lock.exists() for lock in leftovers)
    with txn_lock(ws, "evolve evolve"):
        removed = ws.store.recover_stale_locks()
    assert sorted(removed) == sorted([*leftovers, temp_index])
    assert not any(lock.exists() for lock in [*leftovers, temp_index])
    run_git(ws.root, "update-ref", "refs/heads/main", "HEAD")  # git itself can write again
    assert run_git(ws.root, "status", "--porcelain") == ""


def test_reftable_repository_is_refused_with_one_sentence(workspace: Workspace) -> None:
    (workspace.store.git_dir / "reftable").mkdir()
    with pytest.raises(EvolveError, match="reftable format") as info:
        Workspace(workspace.root).store.head()
    assert str(info.value).count(". ") == 0
