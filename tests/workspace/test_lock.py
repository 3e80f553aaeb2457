"""The writer lock: one writer at a time, a refusal naming the holder, released by the kernel."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from evolve.errors import EvolveError, LockHeld
from evolve.txn import WriterLock, writer_lock_held
from evolve.txn import lock as txn_lock
from evolve.workspace import Workspace

# A process that takes the lock, says so on stdout, then holds it until killed (or for argv[3]
# seconds, then releases it and prints "released").
_HOLDER = textwrap.dedent(
    """
    import sys, time
    from pathlib import Path
    from evolve.errors import LockHeld
    from evolve.txn import WriterLock
    lock = WriterLock(Path(sys.argv[1]), sys.argv[2])
    try:
        lock.acquire()
    except LockHeld:
        print("refused", flush=True)
        sys.exit(0)
    print("won", flush=True)
    time.sleep(float(sys.argv[3]))
    lock.release()
    print("released", flush=True)
    """
)


def _holder(path: Path, command: str, hold: float = 600.0) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-c", _HOLDER, str(path), command, str(hold)],
        stdout=subprocess.PIPE,
        text=True,
    )


def _wait_won(proc: subprocess.Popen[str]) -> None:
    assert proc.stdout is not None
    assert proc.stdout.readline().strip() == "won"


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
    assert path.exists()  # never unlinked: unlinking a flock file would let two writers in
    assert WriterLock(path, "probe").holder() is None  # a released lock names no one
    second = WriterLock(path, "b").acquire()
    assert json.loads(path.read_text(encoding="utf-8"))["command"] == "b"
    second.release()


def test_release_twice_is_harmless(tmp_path: Path) -> None:
    lock = WriterLock(tmp_path / "w.lock", "a").acquire()
    lock.release()
    lock.release()
    WriterLock(tmp_path / "w.lock", "b").acquire().release()


def test_release_of_a_lock_never_taken_leaves_the_holders_lock(tmp_path: Path) -> None:
    path = tmp_path / "w.lock"
    holder = WriterLock(path, "holder").acquire()
    loser = WriterLock(path, "loser")
    with pytest.raises(LockHeld):
        loser.acquire()
    loser.release()
    assert json.loads(path.read_text(encoding="utf-8"))["command"] == "holder"
    with pytest.raises(LockHeld):
        WriterLock(path, "third").acquire()
    holder.release()


def test_context_manager_releases_on_exit_and_on_error(tmp_path: Path) -> None:
    path = tmp_path / "w.lock"
    with WriterLock(path, "a") as lock:
        assert lock.holder() is not None
        assert writer_lock_held(tmp_path.parent / tmp_path.name) is False  # named LOCK_NAME only
    WriterLock(path, "b").acquire().release()
    with pytest.raises(RuntimeError), WriterLock(path, "a"):
        raise RuntimeError("boom")
    WriterLock(path, "b").acquire().release()


def test_writer_lock_held_tells_code_under_the_lock(workspace: Workspace) -> None:
    git_dir = workspace.store.git_dir
    assert not writer_lock_held(git_dir)
    with txn_lock(workspace, "evolve train"):
        assert writer_lock_held(git_dir)
    assert not writer_lock_held(git_dir)


def test_a_lock_file_naming_a_dead_process_is_no_lock(tmp_path: Path) -> None:
    # What an older evolve (or a crash) leaves behind: a file naming someone, with no flock.
    path = tmp_path / "w.lock"
    path.write_text(json.dumps({"pid": 1, "command": "evolve crashed"}), encoding="utf-8")
    with WriterLock(path, "evolve train") as lock:
        holder = lock.holder()
        assert holder is not None and holder["pid"] == os.getpid()
        assert holder["command"] == "evolve train"


def test_unreadable_lock_content_is_overwritten_by_the_next_holder(tmp_path: Path) -> None:
    path = tmp_path / "w.lock"
    path.write_text("not json, and longer than the holder's info " * 10, encoding="utf-8")
    with WriterLock(path, "evolve train"):
        assert json.loads(path.read_text(encoding="utf-8"))["command"] == "evolve train"


def test_another_process_holding_it_is_refused_by_name(tmp_path: Path) -> None:
    path = tmp_path / "w.lock"
    proc = _holder(path, "evolve train --episodes 50")
    try:
        _wait_won(proc)
        with pytest.raises(LockHeld) as info:
            WriterLock(path, "evolve evolve").acquire()
        message = str(info.value)
        assert "`evolve train --episodes 50`" in message
        assert f"pid {proc.pid} " in message
    finally:
        proc.kill()
        proc.wait()


def test_sigkilled_holder_frees_the_lock_at_once(tmp_path: Path) -> None:
    path = tmp_path / "w.lock"
    proc = _holder(path, "evolve train")
    _wait_won(proc)
    with pytest.raises(LockHeld):
        WriterLock(path, "evolve evolve").acquire()
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    assert f'"pid": {proc.pid}' in path.read_text(encoding="utf-8")  # the file still names it
    with WriterLock(path, "evolve evolve") as lock:  # no waiting, no pid guessing
        holder = lock.holder()
        assert holder is not None and holder["pid"] == os.getpid()


_CONTENDER = textwrap.dedent(
    """
    import sys, time
    from pathlib import Path
    from evolve.errors import LockHeld
    from evolve.txn import WriterLock
    lock = WriterLock(Path(sys.argv[1]), sys.argv[2])
    go, release = Path(sys.argv[3]), Path(sys.argv[4])
    print("ready", flush=True)
    while not go.exists():
        time.sleep(0.0005)
    try:
        lock.acquire()
    except LockHeld:
        print("refused", flush=True)
        sys.exit(0)
    print("won", flush=True)
    while not release.exists():
        time.sleep(0.005)
    lock.release()
    print("released", flush=True)
    """
)


@pytest.mark.slow
def test_concurrent_takeovers_of_a_dead_holders_lock_have_one_winner(tmp_path: Path) -> None:
    path = tmp_path / "w.lock"
    dead = _holder(path, "evolve crashed")
    _wait_won(dead)
    os.kill(dead.pid, signal.SIGKILL)
    dead.wait()
    go, release = tmp_path / "go", tmp_path / "release"
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", _CONTENDER, str(path), f"contender {n}", str(go), str(release)],
            stdout=subprocess.PIPE,
            text=True,
        )
        for n in range(6)
    ]
    for proc in procs:
        assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
    go.touch()  # all of them try within the same few milliseconds
    first = [proc.stdout.readline().strip() for proc in procs if proc.stdout is not None]
    assert sorted(first) == ["refused"] * 5 + ["won"], first
    release.touch()  # the winner lets go only after every other one has tried
    for proc in procs:
        proc.communicate(timeout=60)
        assert proc.returncode == 0


def test_workspace_lock_lives_under_git_dir(workspace: Workspace) -> None:
    with txn_lock(workspace, "evolve train") as lock:
        assert lock.path.parent == workspace.store.git_dir
        assert lock.path.exists()
        with pytest.raises(LockHeld, match="evolve train"):
            txn_lock(workspace, "evolve evolve").acquire()
        # the lock file is inside .git/, so it never makes the tree dirty
        assert workspace.store.dirty_paths() == []
    txn_lock(workspace, "evolve evolve").acquire().release()
