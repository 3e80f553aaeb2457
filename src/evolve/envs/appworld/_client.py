"""The evolve side of the AppWorld worker: a subprocess of the AppWorld venv, JSON lines.

Why a worker and not `appworld serve environment`: a worker needs no port (nothing listens,
on any interface), it dies with evolve (its stdin closes, so even a killed evolve leaves no
orphan serving a world), a hung call is ended by killing one process that evolve started,
and one world per process is true by construction. The price is our own small protocol
(`_worker.py`), which imports only the standard library and AppWorld.
"""

from __future__ import annotations

import atexit
import contextlib
import json
import os
import select
import shutil
import subprocess
import threading
import time
from pathlib import Path
from typing import Any

from evolve.envs.appworld._paths import venv_python, worker_log_dir
from evolve.errors import EvolveError

WORKER = Path(__file__).with_name("_worker.py")
START_TIMEOUT_S = float(os.environ.get("EVOLVE_APPWORLD_START_TIMEOUT", "180"))
CALL_TIMEOUT_S = float(os.environ.get("EVOLVE_APPWORLD_CALL_TIMEOUT", "120"))


class AppWorldError(EvolveError):
    """AppWorld could not be started or stopped answering."""


# Every live worker, held strongly: at exit each is stopped even if its environment is gone.
_LIVE: set[WorkerClient] = set()
# Idle workers by data root, shared by every environment object of this process.
_IDLE: dict[str, list[WorkerClient]] = {}
_POOL_LOCK = threading.Lock()


def stop_all() -> None:
    """Stop every worker this process started."""
    with _POOL_LOCK:
        clients = list(_LIVE)
        _IDLE.clear()
    for client in clients:
        client.stop()


atexit.register(stop_all)


def take_idle(root: Path) -> WorkerClient | None:
    with _POOL_LOCK:
        idle = _IDLE.get(str(root), [])
        while idle:
            client = idle.pop()
            if client.proc is not None and client.proc.poll() is None:
                return client
    return None


def give_back(client: WorkerClient) -> None:
    with _POOL_LOCK:
        if client.proc is not None and client.proc.poll() is None:
            _IDLE.setdefault(str(client.root), []).append(client)


class WorkerClient:
    """One AppWorld worker process; requests are serialized by a lock."""

    def __init__(self, root: Path) -> None:
        python = venv_python()
        if not python.is_file():
            raise AppWorldError(
                f"the AppWorld environment is not prepared ({python} is missing); "
                "run `evolve appworld setup`."
            )
        self.root = root
        # The AppWorld experiment this worker's worlds write to (removed when it stops).
        self.experiment = f"evolve-{os.getpid()}-{id(self):x}"
        env = dict(os.environ)
        env["APPWORLD_ROOT"] = str(root)
        env.pop("PYTHONPATH", None)
        log_dir = worker_log_dir()
        log_dir.mkdir(parents=True, exist_ok=True)
        self.log_path = log_dir / f"worker-{os.getpid()}-{id(self):x}.log"
        self._log = self.log_path.open("ab")
        self._lock = threading.Lock()
        self._buffer = b""
        cwd = root if root.is_dir() else None
        self.proc: subprocess.Popen[bytes] | None = subprocess.Popen(
            [str(python), "-u", str(WORKER)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._log,
            env=env,
            cwd=cwd,
            start_new_session=True,
        )
        with _POOL_LOCK:
            _LIVE.add(self)

    @property
    def pid(self) -> int | None:
        return self.proc.pid if self.proc is not None else None

    def _last_log_line(self) -> str:
        try:
            lines = [ln for ln in self.log_path.read_text(errors="replace").splitlines() if ln]
        except OSError:
            return ""
        return lines[-1].strip()[:300] if lines else ""

    def request(self, op: str, timeout: float | None = None, **fields: Any) -> dict[str, Any]:
        """Send one request; raises AppWorldError on a crash, a timeout or an error answer."""
        with self._lock:
            proc = self.proc
            if proc is None or proc.poll() is not None:
                raise AppWorldError(
                    "the AppWorld worker is not running (it crashed or was stopped); "
                    f"see {self.log_path}."
                )
            limit = CALL_TIMEOUT_S if timeout is None else timeout
            assert proc.stdin is not None and proc.stdout is not None
            try:
                proc.stdin.write((json.dumps({"op": op, **fields}) + "\n").encode())
                proc.stdin.flush()
            except (BrokenPipeError, OSError):
                self._kill()
                raise AppWorldError(
                    f"the AppWorld worker died ({self._last_log_line() or 'no message'}); "
                    f"see {self.log_path}."
                ) from None
            line = self._read_line(proc, limit, op)
        answer = json.loads(line)
        if not answer.get("ok"):
            raise AppWorldError(f"AppWorld refused {op!r}: {answer.get('error', 'no detail')}.")
        return dict(answer)

    def _read_line(self, proc: subprocess.Popen[bytes], limit: float, op: str) -> bytes:
        assert proc.stdout is not None
        fd = proc.stdout.fileno()
        deadline = time.monotonic() + limit
        while b"\n" not in self._buffer:
            left = deadline - time.monotonic()
            if left <= 0:
                self._kill()
                raise AppWorldError(
                    f"AppWorld did not answer {op!r} within {limit:.0f} s; the worker was "
                    "stopped (raise EVOLVE_APPWORLD_CALL_TIMEOUT if the machine is slow)."
                )
            ready, _, _ = select.select([fd], [], [], min(left, 1.0))
            if not ready:
                continue
            chunk = os.read(fd, 65536)
            if not chunk:
                self._kill()
                raise AppWorldError(
                    f"the AppWorld worker exited during {op!r} "
                    f"({self._last_log_line() or 'no message'}); see {self.log_path}."
                )
            self._buffer += chunk
        line, _, self._buffer = self._buffer.partition(b"\n")
        return line

    def _kill(self) -> None:
        proc, self.proc = self.proc, None
        if proc is None:
            return
        if proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, 9)
        proc.wait(timeout=10)
        for stream in (proc.stdin, proc.stdout):
            if stream is not None:
                stream.close()

    def stop(self) -> None:
        """Close the worker: EOF on stdin lets it close its world; kill it if it lingers."""
        proc = self.proc
        if proc is not None:
            try:
                if proc.stdin is not None:
                    proc.stdin.close()
                proc.wait(timeout=5)
            except (OSError, subprocess.TimeoutExpired):
                pass
            self._kill()
        # AppWorld's logs of an unfinished episode hold access tokens: remove them.
        shutil.rmtree(self.root / "experiments" / "outputs" / self.experiment, ignore_errors=True)
        if not self._log.closed:
            self._log.close()
        with _POOL_LOCK:
            _LIVE.discard(self)
