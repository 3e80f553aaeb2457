"""The writer lock: one writer per workspace, and a second one fails at once naming the first."""

from __future__ import annotations

import contextlib
import errno
import json
import os
import socket
from datetime import UTC, datetime
from pathlib import Path
from types import TracebackType

from evolve.errors import LockHeld

LOCK_NAME = "evolve-writer.lock"


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


class WriterLock:
    """An exclusive lock file under `.git/`, holding who took it and when.

    A lock left by a process that no longer exists on this host is taken over, since a crash
    must not need a person to clean up.
    """

    def __init__(self, path: Path, command: str) -> None:
        self.path = path
        self.command = command
        self._held = False

    def holder(self) -> dict[str, object] | None:
        try:
            return dict(json.loads(self.path.read_text(encoding="utf-8")))
        except (FileNotFoundError, ValueError):
            return None

    def acquire(self) -> WriterLock:
        info = {
            "pid": os.getpid(),
            "host": socket.gethostname(),
            "command": self.command,
            "since": datetime.now(UTC).isoformat(timespec="seconds"),
        }
        for _ in range(2):
            try:
                fd = os.open(self.path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
            except FileExistsError:
                holder = self.holder()
                if holder is not None and self._stale(holder):
                    with contextlib.suppress(FileNotFoundError):
                        self.path.unlink()
                    continue
                raise LockHeld(self._held_message(holder)) from None
            except OSError as exc:  # pragma: no cover - unusual file systems
                if exc.errno == errno.EROFS:
                    raise LockHeld(
                        f"cannot lock {self.path}: the file system is read-only."
                    ) from exc
                raise
            with os.fdopen(fd, "w", encoding="utf-8") as handle:
                json.dump(info, handle)
            self._held = True
            return self
        holder = self.holder()
        raise LockHeld(self._held_message(holder))

    @staticmethod
    def _stale(holder: dict[str, object]) -> bool:
        pid = holder.get("pid")
        return (
            holder.get("host") == socket.gethostname()
            and isinstance(pid, int)
            and pid != os.getpid()
            and not _pid_alive(pid)
        )

    def _held_message(self, holder: dict[str, object] | None) -> str:
        if holder is None:
            return (
                f"the workspace is locked by another evolve process ({self.path}); wait for it "
                "to finish, or delete that file if no evolve process is running."
            )
        return (
            f"the workspace is locked by `{holder.get('command')}` (pid {holder.get('pid')} on "
            f"{holder.get('host')}, since {holder.get('since')}); wait for it to finish, or "
            f"delete {self.path} if that process is gone."
        )

    def release(self) -> None:
        if self._held:
            with contextlib.suppress(FileNotFoundError):
                self.path.unlink()
            self._held = False

    def __enter__(self) -> WriterLock:
        return self.acquire()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.release()
