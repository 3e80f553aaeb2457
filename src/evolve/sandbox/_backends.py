"""Which containment this machine allows, and the command line that applies it.

Three backends, strongest first (docs/sandbox.md):

- ``bwrap``: bubblewrap with every namespace unshared (user, pid, network, ipc, uts, cgroup),
  the system folders bound read-only, a fresh ``/tmp``, ``/proc`` and ``/dev``, and the
  sandbox's own folder the one writable place. Nothing else of the host is visible.
- ``unshare``: util-linux's ``unshare`` with a user, network and pid namespace: no network
  and no signals to the host's processes, but the host's files are visible and writable as far
  as the user's own permissions go.
- ``rlimits``: no namespaces at all. Only the resource limits, the environment allow-list and
  the working folder apply; the program can reach the network and every file the user can.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import threading
from collections.abc import Sequence
from typing import Literal

Backend = Literal["bwrap", "unshare", "rlimits"]
BACKENDS: tuple[Backend, ...] = ("bwrap", "unshare", "rlimits")

# Read-only in the bubblewrap sandbox: what a program needs to start (interpreters, shared
# libraries, the loader's cache, certificates, the user database). Missing ones are skipped.
SYSTEM_DIRS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")
SYSTEM_ETC = (
    "/etc/alternatives",
    "/etc/ld.so.cache",
    "/etc/ld.so.conf",
    "/etc/ld.so.conf.d",
    "/etc/localtime",
    "/etc/nsswitch.conf",
    "/etc/passwd",
    "/etc/group",
    "/etc/ssl",
    "/etc/ca-certificates",
)

_PROBE_LOCK = threading.Lock()
_PROBED: dict[str, bool] = {}


def _probe(name: str, argv: Sequence[str]) -> bool:
    """Whether `argv` runs and exits 0 here (asked once per process)."""
    with _PROBE_LOCK:
        if name not in _PROBED:
            try:
                done = subprocess.run(
                    list(argv),
                    stdin=subprocess.DEVNULL,
                    stdout=subprocess.DEVNULL,
                    stderr=subprocess.DEVNULL,
                    timeout=30,
                    check=False,
                )
                _PROBED[name] = done.returncode == 0
            except (OSError, subprocess.SubprocessError):
                _PROBED[name] = False
        return _PROBED[name]


def bwrap_works() -> bool:
    """bubblewrap is installed and may create its namespaces here."""
    exe = shutil.which("bwrap")
    if exe is None:
        return False
    return _probe(
        "bwrap",
        [exe, "--unshare-all", "--die-with-parent", *_system_binds(), "--proc", "/proc",
         "--dev", "/dev", "true"],
    )  # fmt: skip


def unshare_works() -> bool:
    """util-linux's unshare may create a user, network and pid namespace here."""
    exe = shutil.which("unshare")
    if exe is None:
        return False
    return _probe("unshare", [exe, *_UNSHARE_FLAGS, "true"])


_UNSHARE_FLAGS = ("--user", "--map-root-user", "--net", "--pid", "--fork", "--kill-child")


def choose(wanted: Backend | Literal["auto"] = "auto") -> Backend:
    """The strongest backend that works here (`auto`), or `wanted` if it works.

    Raises:
        RuntimeError: `wanted` was named and does not work on this machine.
    """
    if wanted == "auto":
        if bwrap_works():
            return "bwrap"
        if unshare_works():
            return "unshare"
        return "rlimits"
    works = {"bwrap": bwrap_works, "unshare": unshare_works}.get(wanted)
    if works is not None and not works():
        raise RuntimeError(f"the sandbox backend {wanted!r} does not work on this machine")
    return wanted


def _system_binds() -> list[str]:
    out: list[str] = []
    for path in (*SYSTEM_DIRS, *SYSTEM_ETC):
        out += ["--ro-bind-try", path, path]
    return out


def _python_dirs(env: bool = True) -> list[str]:
    """The running interpreter's folders: a program run with evolve's own Python starts.
    Without `env`, only the base interpreter's (its standard library, no virtual
    environment's packages: evolve itself is not visible)."""
    seen: list[str] = []
    both = (sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix)
    for path in both if env else (sys.base_prefix, sys.base_exec_prefix):
        real = os.path.realpath(path)
        for p in (path, real):
            if p not in seen:
                seen.append(p)
    return seen


def _under(path: str, folder: str) -> bool:
    return path == folder or path.startswith(folder.rstrip("/") + "/")


def wrap(
    backend: Backend,
    argv: Sequence[str],
    *,
    root: str,
    cwd: str,
    read_only: Sequence[str] = (),
    python_env: bool = True,
) -> list[str]:
    """The command line that runs `argv` in `backend`, with `root` the one writable folder
    (`python_env` False: bubblewrap binds the base interpreter only, not evolve's environment)."""
    if backend == "rlimits":
        return list(argv)
    if backend == "unshare":
        exe = shutil.which("unshare") or "unshare"
        return [exe, *_UNSHARE_FLAGS, "--", *argv]
    exe = shutil.which("bwrap") or "bwrap"
    # A fresh /tmp first: what is bound below may lie under the host's /tmp (the sandbox's
    # folder usually does), and a later mount there would hide it.
    out = [exe, "--unshare-all", "--die-with-parent", "--new-session", "--tmpfs", "/tmp"]
    out += _system_binds()
    bound: list[str] = [*SYSTEM_DIRS]
    for path in (*_python_dirs(python_env), *read_only):
        path = os.path.abspath(path)
        # Under a folder bound already it is visible, and no mount point can be made there.
        if os.path.exists(path) and not any(_under(path, b) for b in bound):
            out += ["--ro-bind", path, path]
            bound.append(path)
    out += ["--proc", "/proc", "--dev", "/dev"]
    # Last, the sandbox's own root (where bwrap made the mount points) is made read-only.
    out += ["--bind", root, root, "--remount-ro", "/", "--chdir", cwd, "--", *argv]
    return out
