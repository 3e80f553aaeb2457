"""Run one program contained: its own folder, an allowed environment, limits, no network.

:func:`run` starts `argv` in a fresh temporary folder (optionally holding a copy of a
workspace), with an environment built only from an allow-list, resource limits set in the
child before it starts, the strongest backend this machine allows (:mod:`._backends`), and a
watch that kills the whole process tree on the wall-clock limit, on output past its cap or on
more processes than allowed. The folder is removed afterwards; nothing the program wrote
survives unless the caller reads it in `inspect` first.
"""

from __future__ import annotations

import contextlib
import os
import resource
import selectors
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from evolve.sandbox._backends import Backend, choose, wrap
from evolve.sandbox._pids import PidsGroup

Limit = Literal["wall", "stdout", "stderr", "processes", "cpu", "file_size", "memory"]

# Always set inside; everything else only when allowed by name.
SAFE_PATH = "/usr/local/bin:/usr/bin:/bin"
_GiB = 1024**3
_MiB = 1024**2
# A program that dies of one of these signals hit the limit named.
_SIGNAL_LIMITS: dict[int, Limit] = {
    int(signal.SIGXCPU): "cpu",
    int(signal.SIGXFSZ): "file_size",
}
# What an allocation refused by the address-space limit prints, in the common runtimes.
_OOM_MARKS = (b"MemoryError", b"Cannot allocate memory", b"out of memory", b"bad_alloc")

WEAK_WARNING = (
    "warning: no bubblewrap or user namespaces here; the sandbox applies resource limits, "
    "the environment allow-list and its folder only (the program can reach the network and "
    "any file this user can; see docs/sandbox.md)."
)
_warned = threading.Event()


@dataclass(frozen=True)
class Limits:
    """What one sandboxed run may use (defaults in docs/sandbox.md)."""

    wall_s: float = 60.0
    cpu_s: int = 60
    memory_bytes: int = 4 * _GiB  # address space (RLIMIT_AS)
    open_files: int = 256
    processes: int = 64
    file_bytes: int = 64 * _MiB
    stdout_bytes: int = 8 * _MiB
    stderr_bytes: int = 1 * _MiB

    def __post_init__(self) -> None:
        for name in ("wall_s", "cpu_s", "memory_bytes", "open_files", "processes",
                     "file_bytes", "stdout_bytes", "stderr_bytes"):  # fmt: skip
            value = getattr(self, name)
            if not value > 0 or value != value or value == float("inf"):
                raise ValueError(f"sandbox limit {name} must be a finite positive number")


@dataclass(frozen=True)
class Outcome:
    """How one sandboxed run ended."""

    returncode: int | None
    """The exit status (negative: killed by that signal); None: killed by the sandbox."""
    stdout: bytes
    stderr: bytes
    limit: Limit | None
    """The limit the run hit, when one did (the run was stopped, or the program died of it)."""
    backend: Backend
    weak: bool = False
    """True for the `rlimits` fallback: no namespaces, no file-system or network isolation."""
    duration_s: float = 0.0
    warnings: tuple[str, ...] = field(default_factory=tuple)

    @property
    def ok(self) -> bool:
        return self.returncode == 0 and self.limit is None

    def reason(self) -> str:
        """One phrase saying why the run failed ('' when it did not)."""
        if self.limit == "wall":
            return "it ran past its wall-clock limit and was stopped"
        if self.limit in ("stdout", "stderr"):
            return f"its {self.limit} passed its size limit and it was stopped"
        if self.limit == "processes":
            return "it started more processes than allowed and was stopped"
        if self.limit == "cpu":
            return "it used up its CPU-time limit"
        if self.limit == "file_size":
            return "it wrote a file past the file-size limit"
        if self.limit == "memory":
            return "it ran out of its memory limit"
        if self.returncode is None or self.returncode == 0:
            return ""
        if self.returncode < 0:
            return f"it was killed by signal {-self.returncode}"
        return f"it exited with status {self.returncode}"


def environment(
    allow: Sequence[str], root: str, source: Mapping[str, str] | None = None
) -> dict[str, str]:
    """The program's environment: a safe PATH, HOME and TMPDIR in its folder, a UTF-8 locale,
    and from `source` (evolve's own environment) only the variables named in `allow`."""
    source = os.environ if source is None else source
    env = {
        "PATH": SAFE_PATH,
        "HOME": os.path.join(root, "home"),
        "TMPDIR": os.path.join(root, "tmp"),
        "LANG": "C.UTF-8",
        "LC_ALL": "C.UTF-8",
    }
    for name in allow:
        if name in source:
            env[name] = source[name]
    return env


def _preexec(limits: Limits, nproc: int, group: PidsGroup | None) -> Callable[[], None]:
    def apply() -> None:  # in the child, between fork and exec: only plain system calls
        resource.setrlimit(resource.RLIMIT_CPU, (limits.cpu_s, limits.cpu_s + 1))
        resource.setrlimit(resource.RLIMIT_AS, (limits.memory_bytes, limits.memory_bytes))
        resource.setrlimit(resource.RLIMIT_NOFILE, (limits.open_files, limits.open_files))
        resource.setrlimit(resource.RLIMIT_FSIZE, (limits.file_bytes, limits.file_bytes))
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
        with contextlib.suppress(ValueError, OSError):  # above the hard limit: keep it
            resource.setrlimit(resource.RLIMIT_NPROC, (nproc, nproc))
        if group is not None:
            with contextlib.suppress(OSError):  # the parent checks it entered
                group.enter()

    return apply


def spawn(
    command: Sequence[str], cwd: str, env: Mapping[str, str], limits: Limits
) -> tuple[subprocess.Popen[bytes], PidsGroup | None]:
    """Start `command` with the limits set before it runs, in its own session and, where this
    machine allows one, its own pids cgroup (:mod:`._pids`: the process limit then binds root
    too). Returns the process and its group (None: `RLIMIT_NPROC` and the watch only)."""
    # Past the tasks the watch allows (bubblewrap's own two, the program and its processes),
    # the kernel refuses the fork.
    group = PidsGroup.create(limits.processes + 2)
    # RLIMIT_NPROC counts every process of the user: allow what already runs, plus the limit.
    nproc = _processes_of(os.getuid()) + limits.processes
    try:
        proc = subprocess.Popen(
            list(command),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            cwd=cwd,
            env=dict(env),
            start_new_session=True,
            close_fds=True,
            preexec_fn=_preexec(limits, nproc, group),  # noqa: PLW1509 - system calls only
        )
    except BaseException:
        if group is not None:
            group.remove()
        raise
    if group is not None and not group.holds(proc.pid) and not _exited(proc):
        group.remove()  # it could not enter: the rlimit and the watch remain
        group = None
    return proc, group


def _processes_of(uid: int) -> int:
    count = 0
    for entry in os.listdir("/proc") if os.path.isdir("/proc") else ():
        if entry.isdigit():
            with contextlib.suppress(OSError):
                if os.stat(f"/proc/{entry}").st_uid == uid:
                    count += 1
    return count


def _stat(pid: int | str) -> tuple[str, int, int, int] | None:
    """(state, parent, process group, start time) of a process, or None when it is gone."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            stat = fh.read()
    except OSError:
        return None
    fields = stat[stat.rfind(b")") + 2 :].split()
    if len(fields) < 20:
        return None
    return fields[0].decode(), int(fields[1]), int(fields[2]), int(fields[19])


def _tree(root_pid: int) -> dict[int, int]:
    """The processes below `root_pid` (itself included) and those in its process group, each
    with its start time (so a pid used again by someone else is told apart)."""
    parents: dict[int, int] = {}
    starts: dict[int, int] = {}
    group: set[int] = set()
    try:
        entries = os.listdir("/proc")
    except OSError:
        entries = []
    for entry in entries:
        if not entry.isdigit():
            continue
        got = _stat(entry)
        if got is None:
            continue
        pid = int(entry)
        parents[pid], starts[pid] = got[1], got[3]
        if got[2] == root_pid:
            group.add(pid)
    found = {root_pid} | group
    changed = True
    while changed:
        changed = False
        for pid, ppid in parents.items():
            if ppid in found and pid not in found:
                found.add(pid)
                changed = True
    return {pid: starts.get(pid, -1) for pid in found}


def _exited(proc: subprocess.Popen[bytes]) -> bool:
    """Whether the program has ended, without reaping it: until it is reaped its pid (and so
    its process group's id) cannot name another process, so killing by them stays safe."""
    try:
        return os.waitid(os.P_PID, proc.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is not None
    except ChildProcessError:
        return True


def _alive(pid: int, start: int) -> bool:
    """The process `pid` that started at `start` still runs (a zombie has ended)."""
    got = _stat(pid)
    return got is not None and got[3] == start and got[0] not in ("Z", "X")


def _kill_all(proc: subprocess.Popen[bytes], group: PidsGroup | None = None) -> None:
    """Kill the program, everything below it and its process group (before it is reaped),
    and wait until each of them has ended (a pid namespace's processes die after its init);
    with a pids cgroup, every task in it first."""
    if group is not None:
        group.kill()
    if _exited(proc):  # its children were handed to init already: its group is what is left
        with contextlib.suppress(OSError):
            os.killpg(proc.pid, signal.SIGKILL)
        return
    seen: dict[int, int] = {}
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        if not _exited(proc):
            seen.update(_tree(proc.pid))
        with contextlib.suppress(OSError):
            os.killpg(proc.pid, signal.SIGKILL)
        left = [pid for pid, start in seen.items() if pid != proc.pid and _alive(pid, start)]
        for pid in left:
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
        if _exited(proc) and not left:
            break
        with contextlib.suppress(OSError):
            os.kill(proc.pid, signal.SIGKILL)
        time.sleep(0.01)


def _feed(proc: subprocess.Popen[bytes], data: bytes) -> None:
    assert proc.stdin is not None
    with contextlib.suppress(OSError):  # the program may exit without reading
        proc.stdin.write(data)
    with contextlib.suppress(OSError):
        proc.stdin.close()


def _warn_weak() -> None:
    if not _warned.is_set():
        _warned.set()
        sys.stderr.write(WEAK_WARNING + "\n")


def run(
    argv: Sequence[str],
    *,
    stdin: bytes = b"",
    workdir: str | os.PathLike[str] | None = None,
    env_allow: Sequence[str] = (),
    limits: Limits | None = None,
    read_only: Sequence[str] = (),
    backend: Backend | Literal["auto"] = "auto",
    inspect: Callable[[Path], None] | None = None,
) -> Outcome:
    """Run `argv` contained, feed it `stdin`, and return how it ended.

    Args:
        argv: the program and its arguments (resolved on the sandbox's PATH, or absolute).
        stdin: the bytes written to its standard input (then closed).
        workdir: a folder copied (links kept as links, `.git` left out) into the sandbox's
            folder as the program's working folder; the original is never written.
        env_allow: names of evolve's environment variables passed through (nothing else is).
        limits: resource limits (:class:`Limits` defaults when None).
        read_only: further host paths the program may read (bubblewrap only binds what is
            named; other backends see the whole file system anyway).
        backend: `auto` (the strongest that works) or one by name.
        inspect: called with the sandbox's folder after the program ended, before removal.

    Raises:
        RuntimeError: the named backend does not work here.
        OSError: the program could not be started (not found, not executable).
    """
    limits = limits or Limits()
    chosen = choose(backend)
    warnings: tuple[str, ...] = ()
    if chosen == "rlimits":
        _warn_weak()
        warnings = (WEAK_WARNING,)
    root = tempfile.mkdtemp(prefix="evolve-sandbox-")
    try:
        os.chmod(root, 0o700)
        for sub in ("home", "tmp"):
            os.mkdir(os.path.join(root, sub))
        cwd = os.path.join(root, "work")
        if workdir is not None:
            shutil.copytree(workdir, cwd, symlinks=True, ignore=shutil.ignore_patterns(".git"))
        else:
            os.mkdir(cwd)
        outcome = _start(argv, stdin, cwd, root, env_allow, limits, read_only, chosen, warnings)
        if inspect is not None:
            inspect(Path(root))
        return outcome
    finally:
        shutil.rmtree(root, ignore_errors=True)


def _start(
    argv: Sequence[str],
    stdin: bytes,
    cwd: str,
    root: str,
    env_allow: Sequence[str],
    limits: Limits,
    read_only: Sequence[str],
    backend: Backend,
    warnings: tuple[str, ...],
) -> Outcome:
    if not argv:
        raise ValueError("the sandbox needs a program to run")
    env = environment(env_allow, root)
    command = wrap(backend, argv, root=root, cwd=cwd, read_only=read_only)
    if backend == "rlimits" and os.sep not in command[0]:
        found = shutil.which(command[0], path=SAFE_PATH)
        if found is None:
            raise FileNotFoundError(f"{command[0]!r} is not on the sandbox's PATH ({SAFE_PATH})")
        command[0] = found
    started = time.monotonic()
    proc, group = spawn(command, cwd, env, limits)
    feeder = threading.Thread(target=_feed, args=(proc, stdin), daemon=True)
    feeder.start()
    try:
        limit, out, err, cpu = _watch(proc, limits, started, group)
    finally:
        if group is not None:
            group.remove()
    feeder.join(timeout=5)
    returncode = None if limit in ("wall", "stdout", "stderr", "processes") else proc.returncode
    if limit is None and returncode is not None:
        limit = _died_of(returncode, backend, err)
    if limit is None and returncode != 0 and cpu >= limits.cpu_s:
        limit = "cpu"  # a wrapper (unshare) may not pass the SIGXCPU death on as such
    return Outcome(
        returncode=returncode,
        stdout=out,
        stderr=err,
        limit=limit,
        backend=backend,
        weak=backend == "rlimits",
        duration_s=round(time.monotonic() - started, 6),
        warnings=warnings,
    )


def _died_of(returncode: int, backend: Backend, err: bytes) -> Limit | None:
    signum = -returncode if returncode < 0 else None
    if signum is None and backend != "rlimits" and returncode > 128:
        signum = returncode - 128  # bwrap and unshare report a signal as 128 + its number
    if signum is not None and signum in _SIGNAL_LIMITS:
        return _SIGNAL_LIMITS[signum]
    if returncode != 0 and any(mark in err[-4096:] for mark in _OOM_MARKS):
        return "memory"
    if returncode != 0 and b"File too large" in err[-4096:]:  # SIGXFSZ ignored, as Python does
        return "file_size"
    return None


def _over(
    proc: subprocess.Popen[bytes], limits: Limits, started: float, group: PidsGroup | None
) -> Limit | None:
    if time.monotonic() - started > limits.wall_s:
        return "wall"
    if group is not None and group.hit():  # the kernel refused a fork past the limit
        return "processes"
    if len(_tree(proc.pid)) > limits.processes + 2:  # + bwrap's own two
        return "processes"
    return None


def _watch(
    proc: subprocess.Popen[bytes], limits: Limits, started: float, group: PidsGroup | None
) -> tuple[Limit | None, bytes, bytes, float]:
    """Read both streams to their caps, and stop the tree on a limit; returns what it read."""
    assert proc.stdout is not None and proc.stderr is not None
    out_fd, err_fd = proc.stdout.fileno(), proc.stderr.fileno()
    caps: dict[int, tuple[Limit, int]] = {
        out_fd: ("stdout", limits.stdout_bytes),
        err_fd: ("stderr", limits.stderr_bytes),
    }
    bufs = {out_fd: bytearray(), err_fd: bytearray()}
    sel = selectors.DefaultSelector()
    for fd in caps:
        os.set_blocking(fd, False)
        sel.register(fd, selectors.EVENT_READ)
    limit: Limit | None = None
    next_check = started + 0.05
    cpu = [0.0]
    try:
        while sel.get_map() and limit is None:
            if time.monotonic() >= next_check:
                next_check = time.monotonic() + 0.05
                limit = _over(proc, limits, started, group)
                if limit is not None:
                    break
            for key, _ in sel.select(timeout=0.05):
                try:
                    chunk = os.read(key.fd, 65536)
                except BlockingIOError:
                    continue
                if not chunk:
                    sel.unregister(key.fd)
                    continue
                name, cap = caps[key.fd]
                buf = bufs[key.fd]
                buf += chunk
                if len(buf) > cap:
                    del buf[cap:]
                    limit = name
                    break
        while limit is None and not _exited(proc):
            limit = _over(proc, limits, started, group)
            time.sleep(0.02)
    finally:
        sel.close()
        _kill_all(proc, group)  # on a limit, or what the program left behind in its group or below
        cpu[0] = _reap(proc)
        proc.stdout.close()
        proc.stderr.close()
        if proc.stdin is not None:
            with contextlib.suppress(OSError):
                proc.stdin.close()
    return limit, bytes(bufs[out_fd]), bytes(bufs[err_fd]), cpu[0]


def _reap(proc: subprocess.Popen[bytes]) -> float:
    """Reap the program; returns the CPU seconds it and the descendants it waited for used."""
    try:
        _, status, usage = os.wait4(proc.pid, 0)
    except ChildProcessError:  # reaped already
        proc.wait()
        return 0.0
    proc.returncode = os.waitstatus_to_exitcode(status)
    return float(usage.ru_utime + usage.ru_stime)
