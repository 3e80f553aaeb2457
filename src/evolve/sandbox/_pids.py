"""A process limit the kernel holds for root too: one pids cgroup per sandboxed run.

`RLIMIT_NPROC` (set in every sandboxed child, :mod:`._run`) binds an ordinary user but not
root: the kernel exempts uid 0, and anyone with `CAP_SYS_RESOURCE` or `CAP_SYS_ADMIN`. Run as
root (a container, a CI machine), a program that forks without end would take every process
id of the machine before the watch, which counts the tree every 50 ms, could stop it, and
every other program there would fail to start. Where this machine lets evolve make a cgroup
with the `pids` controller (cgroup v1's `pids` hierarchy, or a cgroup v2 tree that delegates
`pids`), each run gets its own group with `pids.max` set: the kernel refuses the fork past it,
for root as for anyone, and `pids.events` says it did, so the run is stopped as having
started more processes than allowed. Where it cannot (no permission, no controller), the
group is simply not made and the run keeps `RLIMIT_NPROC` and the watch (docs/sandbox.md).

The group counts tasks, threads included, as `RLIMIT_NPROC` does.
"""

from __future__ import annotations

import contextlib
import os
import signal
import time
import uuid

_PREFIX = "evolve-sandbox-"


def _mounts() -> tuple[str | None, str | None]:
    """(the cgroup v1 `pids` hierarchy's mount point, the cgroup v2 mount point), either None."""
    v1 = v2 = None
    try:
        with open("/proc/self/mountinfo", encoding="utf-8", errors="replace") as fh:
            lines = fh.read().splitlines()
    except OSError:
        return None, None
    for line in lines:
        head, sep, tail = line.partition(" - ")
        fields, rest = head.split(), tail.split()
        if not sep or len(fields) < 5 or len(rest) < 3:
            continue
        point = fields[4].replace("\\040", " ")
        if rest[0] == "cgroup" and "pids" in rest[2].split(",") and v1 is None:
            v1 = point
        elif rest[0] == "cgroup2" and v2 is None:
            v2 = point
    return v1, v2


def _own_groups() -> dict[str, str]:
    """This process's cgroup paths: `pids` (v1) and `` (v2) -> the path below the mount."""
    out: dict[str, str] = {}
    try:
        with open("/proc/self/cgroup", encoding="utf-8", errors="replace") as fh:
            lines = fh.read().splitlines()
    except OSError:
        return out
    for line in lines:
        parts = line.split(":", 2)
        if len(parts) != 3:
            continue
        for controller in parts[1].split(",") if parts[1] else [""]:
            out[controller] = parts[2]
    return out


def _parent() -> str | None:
    """The folder a run's group is made in: this process's own pids group, where it exists."""
    v1, v2 = _mounts()
    own = _own_groups()
    if v1 is not None and "pids" in own:
        folder = os.path.join(v1, own["pids"].lstrip("/"))
        if os.path.isdir(folder):
            return folder
    if v2 is not None and "" in own:
        folder = os.path.join(v2, own[""].lstrip("/"))
        try:
            with open(os.path.join(folder, "cgroup.subtree_control"), encoding="ascii") as fh:
                delegated = "pids" in fh.read().split()
        except OSError:
            delegated = False
        if delegated:
            return folder
    return None


def _sweep(parent: str) -> None:
    """Remove the empty groups of evolve processes that ended without removing theirs (killed,
    or a worker never closed): a group's name holds the id of the process that made it."""
    try:
        names = os.listdir(parent)
    except OSError:
        return
    for name in names:
        if not name.startswith(_PREFIX):
            continue
        owner = name[len(_PREFIX) :].split("-", 1)[0]
        if not owner.isdigit() or os.path.exists(f"/proc/{owner}"):
            continue
        with contextlib.suppress(OSError):  # not empty, or removed meanwhile: left as it is
            os.rmdir(os.path.join(parent, name))


class PidsGroup:
    """One run's pids cgroup; :meth:`create` returns None where none can be made."""

    def __init__(self, path: str) -> None:
        self.path = path
        self._procs = os.path.join(path, "cgroup.procs")

    @classmethod
    def create(cls, tasks: int) -> PidsGroup | None:
        """A new group holding at most `tasks` tasks, or None where this machine allows none."""
        parent = _parent()
        if parent is None:
            return None
        _sweep(parent)
        path = os.path.join(parent, f"{_PREFIX}{os.getpid()}-{uuid.uuid4().hex[:12]}")
        try:
            os.mkdir(path, 0o755)
        except OSError:
            return None
        group = cls(path)
        try:
            with open(os.path.join(path, "pids.max"), "w", encoding="ascii") as fh:
                fh.write(str(int(tasks)))
        except OSError:
            group.remove()
            return None
        return group

    def enter(self) -> None:
        """Move the calling process into the group: called in the child, between fork and
        exec (plain system calls only), so everything it starts is counted from the first."""
        fd = os.open(self._procs, os.O_WRONLY)
        try:
            os.write(fd, b"0")
        finally:
            os.close(fd)

    def holds(self, pid: int) -> bool:
        """Whether `pid` is in the group (the child entered it)."""
        return pid in self.members()

    def members(self) -> list[int]:
        try:
            with open(self._procs, encoding="ascii") as fh:
                return [int(x) for x in fh.read().split()]
        except (OSError, ValueError):
            return []

    def hit(self) -> bool:
        """Whether the kernel refused a fork in this group (the limit was reached)."""
        try:
            with open(os.path.join(self.path, "pids.events"), encoding="ascii") as fh:
                for line in fh:
                    name, _, count = line.partition(" ")
                    if name == "max":
                        return int(count) > 0
        except (OSError, ValueError):
            return False
        return False

    def kill(self, timeout_s: float = 10.0) -> None:
        """SIGKILL every task of the group until it is empty (or `timeout_s` passed)."""
        deadline = time.monotonic() + timeout_s
        kill_file = os.path.join(self.path, "cgroup.kill")  # cgroup v2: one write kills all
        with contextlib.suppress(OSError), open(kill_file, "w", encoding="ascii") as fh:
            fh.write("1")
        while time.monotonic() < deadline:
            members = self.members()
            if not members:
                return
            for pid in members:
                with contextlib.suppress(OSError):
                    os.kill(pid, signal.SIGKILL)
            time.sleep(0.005)

    def remove(self) -> None:
        """Remove the group (once its tasks have ended and been reaped; retried briefly)."""
        for _ in range(200):
            try:
                os.rmdir(self.path)
                return
            except FileNotFoundError:
                return
            except OSError:
                time.sleep(0.005)


def process_limit() -> str:
    """What holds a sandboxed run's process limit on this machine: `cgroup` (a pids cgroup,
    for root too), `rlimit` (`RLIMIT_NPROC`: an ordinary user) or `watch` (root without a pids
    cgroup: only the watch, which counts the tree every 50 ms, stops a program that forks)."""
    group = PidsGroup.create(1)
    if group is not None:
        group.remove()
        return "cgroup"
    return "rlimit" if os.getuid() != 0 else "watch"
