"""Temporary copies of a workspace (gate tests, scoring, dry runs) that never outlive their owner.

Each copy is a folder `evolve-<kind>-<pid>-<random>` in the system temp folder holding a
marker file with its owner (pid, host, process start time). It is removed when its `with`
block ends, by an exception or a signal turned into one included; a copy whose owner was
killed outright (SIGKILL) is removed by the next :func:`sweep`, which the evolve loop and the
workspace recovery run at start.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

from evolve._signals import signals_deferred

MARKER = ".evolve-owner"
PREFIX = "evolve-"
KINDS = ("gate", "score", "dry-run")
# Copies made by versions without the marker are removed only when this old (seconds).
UNMARKED_AGE = 24 * 3600


def host() -> str:
    """This machine's name, as `socket.gethostname()` says it, without importing `socket`
    (`os.uname()`'s node name, the same name): `evolve._held.host`, kept here because the gate
    imports nothing of evolve's beyond the store and the statistics."""
    uname = getattr(os, "uname", None)
    if uname is not None:
        return str(uname().nodename)
    import socket  # pragma: no cover - a system without uname (Windows)

    return socket.gethostname()  # pragma: no cover


def _start_time(pid: int) -> str | None:
    """The kernel's start time of `pid` (Linux), which tells a reused pid from its first owner."""
    try:
        raw = Path(f"/proc/{pid}/stat").read_text(encoding="ascii", errors="replace")
    except OSError:
        return None
    fields = raw.rpartition(")")[2].split()
    return fields[19] if len(fields) > 19 else None


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def temp_root() -> Path:
    return Path(tempfile.gettempdir())


@contextlib.contextmanager
def temp_copy(kind: str) -> Iterator[Path]:
    """A new empty folder for a copy of kind `kind`, removed when the block ends."""
    assert kind in KINDS, kind
    pid = os.getpid()
    # Made and marked, and removed, with signals deferred: a Ctrl-C or a generation's time
    # limit arriving in either step takes effect after it (here, inside the `try`), not
    # halfway: a folder made but not yet named, or half removed, would outlive the command
    # with a live owner, which no sweep takes.
    path: Path | None = None
    try:
        with signals_deferred():
            path = Path(tempfile.mkdtemp(prefix=f"{PREFIX}{kind}-{pid}-", dir=temp_root()))
            owner = {"pid": pid, "host": host(), "start": _start_time(pid)}
            (path / MARKER).write_text(json.dumps(owner), encoding="utf-8")
        yield path
    finally:
        if path is not None:
            with signals_deferred():
                shutil.rmtree(path, ignore_errors=True)


def _stale(path: Path) -> bool:
    try:
        owner = json.loads((path / MARKER).read_text(encoding="utf-8"))
    except FileNotFoundError:
        try:
            return time.time() - path.stat().st_mtime > UNMARKED_AGE
        except OSError:
            return False
    except (OSError, ValueError):
        return False
    if not isinstance(owner, dict) or owner.get("host") != host():
        return False
    pid = owner.get("pid")
    if not isinstance(pid, int) or pid == os.getpid():
        return False
    if not _alive(pid):
        return True
    start = owner.get("start")
    return start is not None and _start_time(pid) not in (None, start)  # the pid was reused


def sweep(root: Path | None = None) -> list[Path]:
    """Remove the copies whose owner is gone; returns the folders removed."""
    removed = []
    folder = root or temp_root()
    try:
        entries = [p for kind in KINDS for p in folder.glob(f"{PREFIX}{kind}-*") if p.is_dir()]
    except OSError:
        return []
    for path in entries:
        if _stale(path):
            shutil.rmtree(path, ignore_errors=True)
            removed.append(path)
    return removed
