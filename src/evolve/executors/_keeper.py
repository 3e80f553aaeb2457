"""The keeper of a local Ray cluster's folder: what removes it when evolve's process cannot.

evolve's own teardown (`_ray._tear_down`) stops the local cluster's processes and removes its
session folder. Some exits skip that teardown or come after it: the process killed
(SIGKILL, the out-of-memory killer), or ended by Ray's core itself (a driver interrupted
inside `ray.shutdown` can end with SIGSEGV), or a component of Ray's that writes its log
once more as the process exits, making the folder again. So the first local cluster of a
process also starts a keeper: a small process of its own session (Ctrl-C in the terminal
does not reach it) that waits for evolve's process to end, then stops every process still
holding a folder it was given and removes the folder.

The keeper runs this file as `python -I -S _keeper.py`: the standard library only, nothing of
evolve imported. It reads the folders to keep on its standard input, one a line; the end of
its input is the end of evolve's process (only that process holds the pipe's other end, and
the kernel closes it however the process ends). Only folders named `evolve-ray-*` are kept.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from contextlib import suppress
from typing import IO

STOP_WAIT_S = 3.0
REMOVE_WAIT_S = 10.0
# A folder removed with nothing holding it is looked at once more this much later: a process
# that was still starting, or a log written once more, would have made it again.
SETTLE_S = 0.2
# After its input ends, how long the keeper waits for evolve's process to be gone (its
# last threads exiting) before it removes the folders anyway.
PARENT_WAIT_S = 10.0
PREFIX = "evolve-ray-"


# --- processes that hold a folder --------------------------------------------------------------


def proc_stat(pid: int) -> tuple[int, int] | None:
    """(parent pid, start time) of process `pid`, or None when it is gone."""
    try:
        raw = open(f"/proc/{pid}/stat", "rb").read()  # noqa: SIM115  (one read)
    except OSError:
        return None
    fields = raw[raw.rfind(b")") + 2 :].split()
    return int(fields[1]), int(fields[19])


def _zombie(pid: int) -> bool:
    try:
        raw = open(f"/proc/{pid}/stat", "rb").read()  # noqa: SIM115
    except OSError:
        return True
    return raw[raw.rfind(b")") + 2 :].split()[:1] == [b"Z"]


def stop(processes: list[tuple[int, int]], wait_s: float = STOP_WAIT_S) -> None:
    """SIGTERM to each process still the same one, then SIGKILL to those that stay."""

    def alive() -> list[tuple[int, int]]:
        out = []
        for pid, start in processes:
            stat = proc_stat(pid)
            if stat is not None and stat[1] == start:
                with suppress(ChildProcessError):
                    os.waitpid(pid, os.WNOHANG)  # our own child: reaped, not left a zombie
                stat = proc_stat(pid)
                if stat is not None and stat[1] == start and not _zombie(pid):
                    out.append((pid, start))
        return out

    for sig in (signal.SIGTERM, signal.SIGKILL):
        left = alive()
        for pid, _ in left:
            with suppress(OSError):
                os.kill(pid, sig)
        deadline = time.monotonic() + wait_s
        while left and time.monotonic() < deadline:
            time.sleep(0.05)
            left = alive()
        if not left:
            return


def holding(temp: str, spare: frozenset[int] = frozenset()) -> list[tuple[int, int]]:
    """Every process (but this one and `spare`) that holds `temp`, a folder unique to one
    session: on its command line, as its working folder, or through an open file in it."""
    inside = temp.rstrip("/") + "/"
    found = []
    mine = os.getpid()
    for entry in os.listdir("/proc") if os.path.isdir("/proc") else []:
        if not entry.isdigit() or int(entry) == mine or int(entry) in spare:
            continue
        try:
            line = open(f"/proc/{entry}/cmdline", "rb").read()  # noqa: SIM115
        except OSError:
            continue
        held = temp.encode() in line or _opens(entry, inside)
        stat = proc_stat(int(entry))
        if held and stat is not None:
            found.append((int(entry), stat[1]))
    return found


def _opens(pid: str, inside: str) -> bool:
    """Whether process `pid` works in, or has a file open in, the folder `inside`."""
    try:
        if (os.readlink(f"/proc/{pid}/cwd") + "/").startswith(inside):
            return True
        for fd in os.listdir(f"/proc/{pid}/fd"):
            with suppress(OSError):
                if os.readlink(f"/proc/{pid}/fd/{fd}").startswith(inside):
                    return True
    except OSError:
        return False
    return False


def remove(temp: str, *, spare: frozenset[int] = frozenset(), wait_s: float = STOP_WAIT_S) -> None:
    """Remove the session folder and keep it removed: every process still holding it (naming
    it on its command line, working in it, or with a file open in it: a worker the raylet
    started that was reparented when the raylet died, still writing its log) is stopped, and
    the folder removed again, until no process holds it and it is gone."""
    deadline = time.monotonic() + REMOVE_WAIT_S
    settled = False  # gone and unheld once; it must still be so SETTLE_S later
    while True:
        holders = holding(temp, spare)
        if holders:
            stop(holders, wait_s)
        shutil.rmtree(temp, ignore_errors=True)
        if not holders and not os.path.exists(temp):
            if settled:
                return
            settled = True
            time.sleep(SETTLE_S)
            continue
        settled = False
        if time.monotonic() > deadline:
            return
        time.sleep(0.1)


# --- the keeper process and its parent's side --------------------------------------------------

_KEEPER: subprocess.Popen[bytes] | None = None


def keep(temp: str) -> None:
    """Have this process's keeper remove `temp` (and stop what holds it) once this process
    has ended, however it ends; the first call starts the keeper. Best effort: where no
    keeper can start, evolve's own teardown is all there is, as before."""
    global _KEEPER
    if not os.path.basename(temp.rstrip("/")).startswith(PREFIX):
        raise ValueError(f"not a folder of evolve's Ray sessions: {temp}")
    keeper = _KEEPER
    if keeper is None or keeper.poll() is not None:
        try:
            keeper = subprocess.Popen(
                [sys.executable, "-I", "-S", os.path.abspath(__file__)],
                stdin=subprocess.PIPE,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                cwd="/",
                start_new_session=True,  # Ctrl-C in the terminal reaches evolve, not it
            )
        except OSError:
            return
        _KEEPER = keeper
    stdin: IO[bytes] | None = keeper.stdin
    if stdin is None:
        return
    with suppress(OSError, ValueError):
        stdin.write(os.fsencode(temp) + b"\n")
        stdin.flush()


def _wait_for(parent: int) -> None:
    """Until process `parent` is gone (this one reparented), or PARENT_WAIT_S have passed."""
    deadline = time.monotonic() + PARENT_WAIT_S
    while os.getppid() == parent and time.monotonic() < deadline:
        time.sleep(0.05)


def main() -> None:
    """The keeper: read folders until the input ends, wait for the parent to be gone, then
    remove each folder and stop what still holds it."""
    for sig in (signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, signal.SIG_IGN)
    parent = os.getppid()
    folders: list[str] = []
    for line in sys.stdin.buffer:
        path = os.fsdecode(line.rstrip(b"\n"))
        if os.path.isabs(path) and os.path.basename(path.rstrip("/")).startswith(PREFIX):
            folders.append(path)
    _wait_for(parent)
    # A parent still there (its input closed while it exits) is never stopped by its keeper.
    spare = frozenset({parent}) if os.getppid() == parent else frozenset()
    for folder in folders:
        remove(folder, spare=spare, wait_s=1.0)


if __name__ == "__main__":
    main()
