"""Locks are only taken from the dead (issue 28, item 7).

A git lock evolve takes carries an owner record (pid, host, process start time); one whose
owner is provably gone is taken over by the next writer, and a lock of anyone else (a libgit2
or JGit tool, git run from another folder: no owner record) is waited for and reported in one
sentence, never deleted. The writer lock's label carries the start time too, so a reused pid
is not mistaken for a live writer.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

import evolve.store._refs as refs
from conftest import GitRunner
from evolve._held import owner, owner_gone, process_start
from evolve.errors import EvolveError
from evolve.store._refs import owner_path, read_owner, write_owner
from evolve.txn import LOCK_NAME, active_writer
from evolve.txn import lock as txn_lock
from evolve.workspace import Workspace

_HOLD_OPEN = textwrap.dedent(
    """
    import os, sys, time
    fd = os.open(sys.argv[1], os.O_CREAT | os.O_EXCL | os.O_WRONLY)
    print("locked", flush=True)
    time.sleep(600)
    """
)


def _holder(lock: Path) -> subprocess.Popen[str]:
    """A live process that is not git (a libgit2 or JGit tool) holding `lock` open."""
    proc = subprocess.Popen(
        [sys.executable, "-c", _HOLD_OPEN, str(lock)], stdout=subprocess.PIPE, text=True
    )
    assert proc.stdout is not None and proc.stdout.readline().strip() == "locked"
    return proc


def _edit(ws: Workspace) -> str:
    (ws.root / "memory" / "note.md").write_text("a note\n", encoding="utf-8")
    return "memory/note.md"


def test_a_live_foreign_index_lock_is_waited_for_reported_and_never_deleted(
    workspace: Workspace, run_git: GitRunner, monkeypatch: pytest.MonkeyPatch
) -> None:
    ws = workspace
    monkeypatch.setattr(refs, "STALE_LOCK_SECONDS", 0.3)
    lock = ws.store.git_dir / "index.lock"
    holder = _holder(lock)
    base = ws.store.head()
    try:
        with txn_lock(ws, "evolve train"):
            start = time.monotonic()
            with pytest.raises(EvolveError) as info:
                ws.store.commit([_edit(ws)], "blocked")
            assert time.monotonic() - start >= 0.3  # waited for it, bounded
            said = str(info.value)
            assert "index.lock exists" in said and "never removes a lock it did not take" in said
            assert said.count(". ") == 0 and said.endswith(".")
            assert ws.store.recover_stale_locks() == []
        assert lock.exists() and holder.poll() is None
        assert ws.store.head() == base
    finally:
        holder.kill()
        holder.wait()
    assert lock.exists()  # its owner died without removing it: still not evolve's to take


def test_a_dead_evolve_owners_lock_is_taken(workspace: Workspace, run_git: GitRunner) -> None:
    ws = workspace
    lock = ws.store.git_dir / "index.lock"
    script = textwrap.dedent(
        """
        import sys
        from pathlib import Path
        from evolve._held import owner
        from evolve.store._refs import write_owner
        lock = Path(sys.argv[2])
        write_owner(Path(sys.argv[1]), lock, owner())
        lock.write_bytes(b"")
        """
    )
    subprocess.run([sys.executable, "-c", script, str(ws.store.git_dir), str(lock)], check=True)
    record = read_owner(ws.store.git_dir, lock)
    assert record is not None and owner_gone(record)
    with txn_lock(ws, "evolve train"):
        assert ws.store.commit([_edit(ws)], "after the dead owner") is not None
    assert not lock.exists() and not owner_path(ws.store.git_dir, lock).exists()
    assert run_git(ws.root, "status", "--porcelain") == ""


def test_a_lock_whose_pid_was_reused_is_taken_and_a_live_owners_is_not(
    workspace: Workspace, monkeypatch: pytest.MonkeyPatch
) -> None:
    ws = workspace
    monkeypatch.setattr(refs, "STALE_LOCK_SECONDS", 0.2)
    lock = ws.store.git_dir / "refs" / "heads" / "main.lock"
    lock.write_text("", encoding="utf-8")
    me = owner()
    assert me["start"] == process_start(os.getpid()) and me["start"] is not None
    # The same pid (this process, alive) but a start time it does not have: a reused pid.
    write_owner(ws.store.git_dir, lock, {**me, "start": str(int(str(me["start"])) + 1)})
    with txn_lock(ws, "evolve train"):
        assert ws.store.recover_stale_lock(lock) is True
    assert not lock.exists()
    # The owner as it is (alive, same start): not taken.
    lock.write_text("", encoding="utf-8")
    write_owner(ws.store.git_dir, lock, me)
    with txn_lock(ws, "evolve train"):
        assert ws.store.recover_stale_lock(lock) is False
    assert lock.exists()


def test_an_owner_record_of_another_host_or_unreadable_is_not_proof(
    workspace: Workspace,
) -> None:
    me = owner()
    assert not owner_gone({**me, "host": "elsewhere.example"})
    assert not owner_gone({"pid": "12", "start": "1", "host": me["host"]})
    assert not owner_gone({})
    assert owner_gone({**me, "start": "0"})
    # a record planted for another lock does not name this one
    lock = workspace.store.git_dir / "index.lock"
    path = owner_path(workspace.store.git_dir, lock)
    path.parent.mkdir(exist_ok=True)
    path.write_text(json.dumps({**me, "start": "0", "lock": "/elsewhere"}), encoding="utf-8")
    assert read_owner(workspace.store.git_dir, lock) is None


def test_the_writer_lock_names_its_start_time_and_a_reused_pid_is_no_writer(
    workspace: Workspace,
) -> None:
    ws = workspace
    label_path = ws.store.git_dir / LOCK_NAME
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
    try:
        start = process_start(child.pid)
        assert start is not None
        label = {**owner(), "pid": child.pid, "start": start, "command": "evolve train"}
        label_path.write_text(json.dumps(label), encoding="utf-8")
        assert active_writer(ws) == f"`evolve train` (pid {child.pid})"
        label["start"] = str(int(start) + 1)  # the pid now belongs to another process
        label_path.write_text(json.dumps(label), encoding="utf-8")
        assert active_writer(ws) is None
    finally:
        child.kill()
        child.wait()
    with txn_lock(ws, "evolve train"):
        held = json.loads(label_path.read_text(encoding="utf-8"))
        assert held["pid"] == os.getpid() and held["start"] == process_start(os.getpid())
