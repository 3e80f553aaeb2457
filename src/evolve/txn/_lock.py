"""The writer lock: one writer per workspace, and a second one fails at once naming the first.

The lock is `fcntl.flock` on a file under `.git/` that is never deleted. The kernel releases
a flock when its holder exits however it exits (SIGKILL included), so there is no stale lock
to take over and no takeover race: of two processes that try at once, exactly one gets it.
The file's content says who holds it (pid, host, the process's start time, command, since),
so that a refusal can name the holder and a reader can tell a dead holder from a live one
whose pid was reused; it is only a label, the flock is the lock.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import json
import os
from datetime import UTC, datetime
from pathlib import Path
from types import TracebackType

from evolve import _held as held_locks
from evolve._held import LOCK_NAME as LOCK_NAME
from evolve._held import writer_lock_held as writer_lock_held
from evolve.errors import LockHeld


class WriterLock:
    """An exclusive `flock` on a file under `.git/`, whose content names who took it and when."""

    def __init__(self, path: Path, command: str) -> None:
        self.path = path
        self.command = command
        self._fd = -1

    @property
    def _held(self) -> bool:
        return self._fd >= 0

    def holder(self) -> dict[str, object] | None:
        """Who the lock file says holds the lock (None when it names no one).

        Only the holder writes the file, and a release empties it; after a crash it still
        names the dead holder until the next writer takes the lock.
        """
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except (FileNotFoundError, ValueError, UnicodeDecodeError):
            return None
        return dict(data) if isinstance(data, dict) else None

    def acquire(self) -> WriterLock:
        if self._held:
            return self
        try:
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
        except OSError as exc:
            raise LockHeld(f"cannot open the lock file {self.path}: {exc.strerror}.") from exc
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as exc:
            os.close(fd)
            if exc.errno in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
                raise LockHeld(self._held_message(self.holder())) from None
            raise LockHeld(  # pragma: no cover - file systems without flock
                f"cannot lock {self.path}: {exc.strerror}."
            ) from exc
        info = {
            **held_locks.owner(),  # pid, host and start time: a reused pid is told apart
            "command": self.command,
            "since": datetime.now(UTC).isoformat(timespec="seconds"),
        }
        raw = json.dumps(info).encode("utf-8")
        # Overwrite in place, then cut: a reader never sees an empty file while we hold it.
        os.pwrite(fd, raw, 0)
        os.ftruncate(fd, len(raw))
        self._fd = fd
        held_locks.hold(self.path)
        return self

    def _held_message(self, holder: dict[str, object] | None) -> str:
        if holder is None:
            return (
                f"the workspace is locked by another evolve process ({self.path}); wait for it "
                "to finish."
            )
        return (
            f"the workspace is locked by `{holder.get('command')}` (pid {holder.get('pid')} on "
            f"{holder.get('host')}, since {holder.get('since')}); wait for it to finish "
            f"(its lock on {self.path} ends when that process exits)."
        )

    def release(self) -> None:
        if not self._held:
            return
        fd, self._fd = self._fd, -1
        held_locks.release(self.path)
        try:
            with contextlib.suppress(OSError):
                os.ftruncate(fd, 0)  # no longer names us; the file itself stays
            fcntl.flock(fd, fcntl.LOCK_UN)
        finally:
            os.close(fd)

    def __enter__(self) -> WriterLock:
        return self.acquire()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.release()
