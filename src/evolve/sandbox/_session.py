"""A long-lived contained program that answers JSON-lines requests (a worker).

:func:`evolve.sandbox.run` runs a program once over a fixed standard input. A worker that
answers many calls (a model-written harness module, one process per run) needs a
conversation instead: :class:`Session` starts the program under the same containment (the
strongest backend, an allow-listed environment, resource limits set before it starts, its
own temporary folder as the one writable place) and exchanges one JSON object per line with
it. The session's wall-clock limit covers its whole life; each reply has its own time limit.
A program that breaks a limit, writes a line that is not one JSON object, or ends early is
stopped, and the call fails with :class:`SessionError` saying why in one sentence.
"""

from __future__ import annotations

import contextlib
import json
import os
import selectors
import shutil
import subprocess
import tempfile
import threading
import time
from collections.abc import Mapping, Sequence
from typing import Any, Literal

from evolve.sandbox._backends import Backend, choose, wrap
from evolve.sandbox._pids import PidsGroup
from evolve.sandbox._run import (
    WEAK_WARNING,
    Limit,
    Limits,
    _exited,
    _kill_all,
    _over,
    _reap,
    _warn_weak,
    environment,
    spawn,
)

_LINE_CAP = 4 * 1024 * 1024  # one reply line at most (bytes)


class SessionError(Exception):
    """The worker could not answer: it broke a limit, replied badly, or ended.

    `limit` names the limit it broke, when one did.
    """

    def __init__(self, reason: str, limit: Limit | None = None) -> None:
        super().__init__(reason)
        self.limit = limit


class Session:
    """One contained program, spoken to in JSON lines (use as a context manager).

    Args:
        argv: the program (on the sandbox's PATH, or absolute) and its arguments.
        files: relative path -> bytes, written into the program's working folder first (the
            only files of the caller it sees; the folder is removed on close).
        env_allow: evolve's environment variables passed through by name (nothing else is).
        limits: resource limits; `wall_s` bounds the whole session.
        read_only: host paths the program may read (bubblewrap binds only these).
        backend: `auto` (the strongest that works here) or one by name.
        python_env: False: bubblewrap makes only the base interpreter visible (its standard
            library), not evolve's environment (evolve and its packages).

    Raises:
        RuntimeError: the named backend does not work here.
        OSError: the program could not be started.
    """

    def __init__(
        self,
        argv: Sequence[str],
        *,
        files: Mapping[str, bytes] = {},  # noqa: B006 - read only
        env_allow: Sequence[str] = (),
        limits: Limits | None = None,
        read_only: Sequence[str] = (),
        backend: Backend | Literal["auto"] = "auto",
        python_env: bool = True,
    ) -> None:
        self.python_env = python_env
        if not argv:
            raise ValueError("the sandbox needs a program to run")
        self.limits = limits or Limits()
        self.backend: Backend = choose(backend)
        self.warnings: tuple[str, ...] = ()
        if self.backend == "rlimits":
            _warn_weak()
            self.warnings = (WEAK_WARNING,)
        self.limit: Limit | None = None
        self._lock = threading.Lock()
        self._closed = threading.Event()
        self._stderr = bytearray()
        self._pending = bytearray()
        self._group: PidsGroup | None = None
        self.root = tempfile.mkdtemp(prefix="evolve-sandbox-")
        try:
            self.proc = self._start(argv, files, env_allow, read_only)
        except BaseException:
            shutil.rmtree(self.root, ignore_errors=True)
            raise
        self.started = time.monotonic()
        self._watcher = threading.Thread(target=self._watch, daemon=True)
        self._watcher.start()
        self._drainer = threading.Thread(target=self._drain, daemon=True)
        self._drainer.start()

    def _start(
        self,
        argv: Sequence[str],
        files: Mapping[str, bytes],
        env_allow: Sequence[str],
        read_only: Sequence[str],
    ) -> subprocess.Popen[bytes]:
        os.chmod(self.root, 0o700)
        for sub in ("home", "tmp", "work"):
            os.mkdir(os.path.join(self.root, sub))
        cwd = os.path.join(self.root, "work")
        for rel, data in files.items():
            full = os.path.normpath(os.path.join(cwd, rel))
            if not full.startswith(cwd + os.sep):
                raise ValueError(f"a sandbox file must lie in its folder: {rel!r}")
            os.makedirs(os.path.dirname(full), exist_ok=True)
            with open(full, "xb") as fh:
                fh.write(data)
        command = wrap(
            self.backend,
            argv,
            root=self.root,
            cwd=cwd,
            read_only=read_only,
            python_env=self.python_env,
        )
        proc, self._group = spawn(command, cwd, environment(env_allow, self.root), self.limits)
        return proc

    # --- watching -------------------------------------------------------------------------

    def _watch(self) -> None:
        """Stop the program on the session's wall-clock or process limit."""
        while not self._closed.wait(0.1):
            if _exited(self.proc):
                return
            limit = _over(self.proc, self.limits, self.started, self._group)
            if limit is not None:
                self.limit = limit
                self._stop()
                return

    def _drain(self) -> None:
        """Keep the last part of standard error (what a failed import prints)."""
        assert self.proc.stderr is not None
        fd = self.proc.stderr.fileno()
        with contextlib.suppress(OSError, ValueError):
            while chunk := os.read(fd, 65536):
                self._stderr += chunk
                if len(self._stderr) > self.limits.stderr_bytes:
                    del self._stderr[: len(self._stderr) - self.limits.stderr_bytes]

    def stderr_tail(self, n: int = 600) -> str:
        return bytes(self._stderr[-n:]).decode("utf-8", "replace")

    def _stop(self) -> None:
        with self._lock:
            if self.proc.returncode is None:
                _kill_all(self.proc, self._group)
                _reap(self.proc)

    # --- talking --------------------------------------------------------------------------

    def send(self, message: Mapping[str, Any]) -> None:
        """Write one JSON line to the program.

        Raises:
            SessionError: the program has ended.
        """
        line = json.dumps(message, ensure_ascii=True, separators=(",", ":")) + "\n"
        assert self.proc.stdin is not None
        try:
            self.proc.stdin.write(line.encode("ascii"))
            self.proc.stdin.flush()
        except (OSError, ValueError):
            raise self._ended() from None

    def receive(self, timeout_s: float) -> dict[str, Any]:
        """The program's next line, as one JSON object.

        Raises:
            SessionError: no line in `timeout_s` (the program is stopped), a line that is not
                one JSON object or is past its cap, or the program ended.
        """
        assert self.proc.stdout is not None
        fd = self.proc.stdout.fileno()
        deadline = time.monotonic() + timeout_s
        with selectors.DefaultSelector() as sel:
            sel.register(fd, selectors.EVENT_READ)
            while b"\n" not in self._pending:
                left = deadline - time.monotonic()
                if left <= 0:
                    self.limit = "wall"
                    self._stop()
                    raise SessionError(
                        f"it did not answer within {timeout_s:g} s and was stopped", "wall"
                    )
                if not sel.select(timeout=min(left, 0.5)):
                    continue
                try:
                    chunk = os.read(fd, 65536)
                except OSError:
                    chunk = b""
                if not chunk:
                    raise self._ended()
                self._pending += chunk
                if len(self._pending) > _LINE_CAP and b"\n" not in self._pending:
                    self.limit = "stdout"
                    self._stop()
                    raise SessionError("its reply passed the size limit and it was stopped")
        line, _, rest = bytes(self._pending).partition(b"\n")
        self._pending = bytearray(rest)
        try:
            value = json.loads(line.decode("utf-8"))
        except (UnicodeDecodeError, ValueError):
            self._stop()
            raise SessionError("it wrote a line that is not JSON and was stopped") from None
        if not isinstance(value, dict):
            self._stop()
            raise SessionError("it wrote a line that is not a JSON object and was stopped")
        return value

    def _ended(self) -> SessionError:
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.proc.wait(timeout=5)
        self._stop()
        limit = self.limit
        code = self.proc.returncode
        if limit == "wall":
            why = "it ran past its wall-clock limit and was stopped"
        elif limit == "processes":
            why = "it started more processes than allowed and was stopped"
        elif b"MemoryError" in self._stderr[-4096:]:
            why, limit = "it ran out of its memory limit", "memory"
        else:
            why = f"it ended (status {code})"
        return SessionError(why, limit)

    @property
    def alive(self) -> bool:
        return not _exited(self.proc) and not self._closed.is_set()

    def close(self) -> None:
        """Stop the program (and all it started) and remove its folder."""
        if self._closed.is_set():
            return
        self._closed.set()
        if self.proc.stdin is not None:
            with contextlib.suppress(OSError, ValueError):
                self.proc.stdin.close()
        self._stop()
        for stream in (self.proc.stdout, self.proc.stderr):
            if stream is not None:
                with contextlib.suppress(OSError, ValueError):
                    stream.close()
        if self._group is not None:
            self._group.remove()
        shutil.rmtree(self.root, ignore_errors=True)

    def __enter__(self) -> Session:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
