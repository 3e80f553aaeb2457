"""Which workspace writer locks this process holds, and who owns a lock file.

The store may remove a git `.lock` file a killed process left only while this process holds
the workspace's writer lock (`GitStore.recover_stale_lock`). The lock itself belongs to the
transaction layer (`evolve.txn`), above the store; this registry sits at the bottom so that
the store can ask without importing upward. `evolve.txn.WriterLock` fills it.

A lock evolve leaves behind is taken over only when its owner is provably gone: every lock
file or owner record evolve writes names the owner by pid, host and the process's start time
(`/proc/<pid>/stat`), so that a pid the system has since given to another process is told
apart from the owner (:func:`owner`, :func:`owner_gone`).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

LOCK_NAME = "evolve-writer.lock"  # the lock file under `.git/`

_HELD: set[Path] = set()  # resolved paths of the lock files this process holds


def hold(path: Path) -> None:
    _HELD.add(path.resolve())


def release(path: Path) -> None:
    _HELD.discard(path.resolve())


def writer_lock_held(git_dir: Path) -> bool:
    """Whether this process holds the writer lock of the repository at `git_dir`."""
    return (git_dir / LOCK_NAME).resolve() in _HELD


def process_start(pid: int) -> str | None:
    """When process `pid` started (field 22 of `/proc/<pid>/stat`, clock ticks since boot),
    or None when it cannot be read (no such process, or no /proc)."""
    try:
        with open(f"/proc/{pid}/stat", encoding="utf-8", errors="replace") as handle:
            data = handle.read()
    except OSError:
        return None
    fields = data.rpartition(")")[2].split()  # the name in parentheses may hold spaces
    return fields[19] if len(fields) > 19 else None


def host() -> str:
    """This machine's name, as `socket.gethostname()` says it: read from `os.uname()` where the
    system has it (the same name: gethostname is uname's node name), so that a writer that only
    records its owner does not import `socket`."""
    uname = getattr(os, "uname", None)
    if uname is not None:
        return str(uname().nodename)
    import socket  # pragma: no cover - a system without uname (Windows)

    return socket.gethostname()  # pragma: no cover


_OWNER: dict[int, dict[str, object]] = {}  # by pid: a forked child is an owner of its own


def owner() -> dict[str, object]:
    """This process, as a lock's owner record names it."""
    pid = os.getpid()
    mine = _OWNER.get(pid)
    if mine is None:
        mine = _OWNER[pid] = {"pid": pid, "start": process_start(pid), "host": host()}
    return dict(mine)


def owner_gone(record: Mapping[str, object]) -> bool:
    """Whether the process `record` names (see :func:`owner`) is provably not running: no
    process has its pid, or the process that has it started at another time (the pid was
    reused). A record of another host, or of a process that cannot be inspected, is not
    provably gone."""
    pid, start = record.get("pid"), record.get("start")
    if not isinstance(pid, int) or isinstance(pid, bool) or pid <= 0:
        return False
    if record.get("host") != host():
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except PermissionError:
        pass  # alive, another user's: its start time still tells
    now = process_start(pid)
    return isinstance(start, str) and now is not None and now != start
