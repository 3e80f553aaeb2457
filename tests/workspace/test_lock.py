"""The writer lock: one writer at a time, a clear message, stale locks taken over."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from evolve.errors import EvolveError, LockHeld
from evolve.workspace import Workspace, WriterLock


def _write_lock(
    path: Path, *, pid: int, host: str | None = None, command: str = "evolve x"
) -> None:
    info = {
        "pid": pid,
        "host": host if host is not None else socket.gethostname(),
        "command": command,
        "since": "2024-01-01T00:00:00+00:00",
    }
    path.write_text(json.dumps(info), encoding="utf-8")


def _dead_pid() -> int:
    """The pid of a child process that has exited and been reaped."""
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


def test_acquire_writes_holder_info(tmp_path: Path) -> None:
    path = tmp_path / "w.lock"
    lock = WriterLock(path, "evolve train").acquire()
    holder = json.loads(path.read_text(encoding="utf-8"))
    assert holder["pid"] == os.getpid()
    assert holder["command"] == "evolve train"
    assert holder["host"] == socket.gethostname()
    assert holder["since"]
    assert lock.holder() == holder
    lock.release()


def test_second_acquire_fails_at_once_naming_the_holder(tmp_path: Path) -> None:
    path = tmp_path / "w.lock"
    first = WriterLock(path, "evolve train --episodes 5").acquire()
    second = WriterLock(path, "evolve evolve")
    with pytest.raises(LockHeld) as info:
        second.acquire()
    message = str(info.value)
    assert "`evolve train --episodes 5`" in message
    assert f"pid {os.getpid()}" in message
    assert str(path) in message
    assert isinstance(info.value, EvolveError)
    # the failed attempt must not have disturbed the holder's lock
    assert json.loads(path.read_text(encoding="utf-8"))["command"] == "evolve train --episodes 5"
    first.release()


def test_release_frees_the_lock_for_the_next_writer(tmp_path: Path) -> None:
    path = tmp_path / "w.lock"
    first = WriterLock(path, "a").acquire()
    first.release()
    assert not path.exists()
    second = WriterLock(path, "b").acquire()
    assert json.loads(path.read_text(encoding="utf-8"))["command"] == "b"
    second.release()


def test_release_twice_is_harmless(tmp_path: Path) -> None:
    lock = WriterLock(tmp_path / "w.lock", "a").acquire()
    lock.release()
    lock.release()
    assert not (tmp_path / "w.lock").exists()


def test_release_of_a_lock_never_taken_leaves_the_holders_file(tmp_path: Path) -> None:
    path = tmp_path / "w.lock"
    holder = WriterLock(path, "holder").acquire()
    loser = WriterLock(path, "loser")
    with pytest.raises(LockHeld):
        loser.acquire()
    loser.release()
    assert path.exists()
    assert json.loads(path.read_text(encoding="utf-8"))["command"] == "holder"
    holder.release()


def test_context_manager_releases_on_exit_and_on_error(tmp_path: Path) -> None:
    path = tmp_path / "w.lock"
    with WriterLock(path, "a") as lock:
        assert path.exists()
        assert lock.holder() is not None
    assert not path.exists()
    with pytest.raises(RuntimeError), WriterLock(path, "a"):
        assert path.exists()
        raise RuntimeError("boom")
    assert not path.exists()


def test_stale_lock_of_a_dead_pid_on_this_host_is_taken_over(tmp_path: Path) -> None:
    path = tmp_path / "w.lock"
    _write_lock(path, pid=_dead_pid(), command="evolve crashed")
    with WriterLock(path, "evolve train") as lock:
        holder = lock.holder()
        assert holder is not None
        assert holder["pid"] == os.getpid()
        assert holder["command"] == "evolve train"
    assert not path.exists()


@pytest.mark.parametrize("pid", [1, os.getppid()])
def test_lock_of_a_live_foreign_pid_is_respected(tmp_path: Path, pid: int) -> None:
    path = tmp_path / "w.lock"
    _write_lock(path, pid=pid, command="evolve evolve")
    with pytest.raises(LockHeld, match=rf"`evolve evolve` \(pid {pid} "):
        WriterLock(path, "evolve train").acquire()
    assert json.loads(path.read_text(encoding="utf-8"))["pid"] == pid


def test_lock_of_a_dead_pid_on_another_host_is_respected(tmp_path: Path) -> None:
    path = tmp_path / "w.lock"
    _write_lock(path, pid=_dead_pid(), host=socket.gethostname() + "-elsewhere")
    with pytest.raises(LockHeld, match="elsewhere"):
        WriterLock(path, "evolve train").acquire()
    assert path.exists()


def test_unreadable_lock_file_is_respected(tmp_path: Path) -> None:
    path = tmp_path / "w.lock"
    path.write_text("not json", encoding="utf-8")
    with pytest.raises(LockHeld) as info:
        WriterLock(path, "evolve train").acquire()
    assert str(path) in str(info.value)
    assert path.read_text(encoding="utf-8") == "not json"


def test_workspace_lock_lives_under_git_dir(workspace: Workspace) -> None:
    with workspace.lock("evolve train") as lock:
        assert lock.path.parent == workspace.store.git_dir
        assert lock.path.exists()
        with pytest.raises(LockHeld, match="evolve train"):
            workspace.lock("evolve evolve").acquire()
        # the lock file is inside .git/, so it never makes the tree dirty
        assert workspace.store.dirty_paths() == []
    assert not lock.path.exists()
