"""A git lock file left by a killed evolve process is recovered by the next writer.

Evolve records itself as the owner of every ref and index lock it takes (pid, host, start
time), so a lock whose owner is provably gone is a leftover, removed by the next writer; a
lock without such a record is someone else's and is never removed (issue 28; see also
`test_lock_owners.py`). Without the writer lock, nothing is removed and the refusal says what
to do.
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
from evolve._held import owner
from evolve.errors import EvolveError
from evolve.store._refs import write_owner
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


def _leftover(ws: Workspace, lock: Path) -> None:
    """Plant `lock` as a killed evolve process leaves it: the file, and an owner record naming
    a process that is gone (this test's pid, with another start time: the pid was reused)."""
    lock.write_text("", encoding="utf-8")
    dead = {**owner(), "start": "0"}
    write_owner(ws.store.git_dir, lock, dead)


def _waits(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    """Every `time.sleep` from now on (the lock recovery's polling), still slept: a lock
    removed "at once" is removed without one."""
    real_sleep = time.sleep
    waits: list[float] = []

    def sleep(seconds: float) -> None:
        # Only the store's own waits: another thread's sleep (a reader, a pool) is not the
        # lock recovery's polling.
        if str(sys._getframe(1).f_globals.get("__name__", "")).startswith("evolve.store"):
            waits.append(seconds)
        real_sleep(seconds)

    monkeypatch.setattr(time, "sleep", sleep)
    return waits


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

    # The next writer recovers it: its owner record names the killed process.
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
    _leftover(ws, lock)
    rel = _edit(ws, "x\n")
    waits = _waits(monkeypatch)
    with txn_lock(ws, "evolve train"):
        assert ws.store.commit([rel], "recovered") is not None
    assert waits == []  # its owner is provably gone: nothing to wait for
    assert not lock.exists()
    assert run_git(ws.root, "status", "--porcelain") == ""


def test_a_lock_without_an_owner_record_is_never_removed(
    workspace: Workspace, monkeypatch: pytest.MonkeyPatch
) -> None:
    ws = workspace
    lock = ws.store.git_dir / "index.lock"
    lock.write_text("", encoding="utf-8")  # a user's git, a libgit2 tool: not evolve's
    monkeypatch.setattr(git_module, "STALE_LOCK_SECONDS", 0.2)
    with txn_lock(ws, "evolve train"):
        start = time.monotonic()
        assert ws.store.recover_stale_lock(lock) is False
        assert time.monotonic() - start >= git_module.STALE_LOCK_SECONDS  # it waited
        assert lock.exists()
        rel = _edit(ws, "blocked\n")
        with pytest.raises(EvolveError, match="never removes a lock it did not take"):
            ws.store.commit([rel], "blocked by the user's git")
        assert ws.store.recover_stale_locks() == []
    assert lock.exists()


def test_a_foreign_lock_its_owner_releases_is_waited_for(
    workspace: Workspace, monkeypatch: pytest.MonkeyPatch
) -> None:
    ws = workspace
    lock = ws.store.git_dir / "refs" / "heads" / "main.lock"
    lock.write_text("", encoding="utf-8")
    # However slow the machine, the wait outlasts the owner: the test is about who removes it.
    monkeypatch.setattr(git_module, "STALE_LOCK_SECONDS", 600.0)
    real_sleep = time.sleep
    released: list[bool] = []

    def sleep(seconds: float) -> None:
        if not released:  # the recovery is waiting: its owner now removes the lock
            lock.unlink()  # FileNotFoundError if the recovery had removed it already
            released.append(True)
        real_sleep(seconds)

    monkeypatch.setattr(time, "sleep", sleep)
    with txn_lock(ws, "evolve train"):
        assert ws.store.recover_stale_lock(lock) is True  # gone by itself, not by us
    assert released == [True]  # it was still there for its owner to remove


def test_leftover_index_lock_is_recovered(workspace: Workspace, run_git: RunGit) -> None:
    ws = workspace
    lock = ws.store.git_dir / "index.lock"
    _leftover(ws, lock)
    rel = _edit(ws, "index\n")
    with txn_lock(ws, "evolve train"):
        sha = ws.store.commit([rel], "index lock recovered")
        assert sha is not None
        _edit(ws, "uncommitted\n")
        _leftover(ws, lock)
        ws.store.reset_hard(sha)
    assert not lock.exists()
    assert run_git(ws.root, "status", "--porcelain") == ""


def test_leftover_side_ref_lock_is_recovered(workspace: Workspace, run_git: RunGit) -> None:
    ws = workspace
    ref = "refs/evolve/records"
    first = ws.store.write_side_ref(ref, {"a.json": b"{}"}, "record 1")
    lock = ws.store.git_dir / "refs" / "evolve" / "records.lock"
    _leftover(ws, lock)
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
        _leftover(ws, lock)
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
