"""A local Ray session's folder goes even when evolve's process does not get to remove it:
killed, or crashed inside Ray's shutdown (a driver interrupted there can end with SIGSEGV,
issue 21's CI runs). The keeper the first local session starts removes the folder, and stops
what still holds it, once the process has ended. No Ray needed: a straggler stands in for a
worker of Ray's that keeps writing into the folder."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from evolve.executors._keeper import keep

# The evolve process: registers its folder, starts a straggler writing into it, says so, and
# then ends the way the crash did (SIGSEGV) or the way a killed process does (SIGKILL).
DRIVER = """
import os, signal, subprocess, sys, tempfile
from evolve.executors._keeper import keep
temp = tempfile.mkdtemp(prefix="evolve-ray-", dir=sys.argv[1])
keep(temp)
straggler = subprocess.Popen(
    [sys.executable, "-c", sys.argv[3]], env={**os.environ, "HELD": temp},
    stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
)
while not os.path.exists(os.path.join(temp, "logs", "more.log")):
    pass
print(temp, straggler.pid, flush=True)
os.kill(os.getpid(), getattr(signal, sys.argv[2]))
"""

STRAGGLER = """
import os, time
folder = os.environ["HELD"]
log = open(os.path.join(folder, "worker.log"), "a")  # held open, as a worker's log
while True:
    os.makedirs(os.path.join(folder, "logs"), exist_ok=True)
    with open(os.path.join(folder, "logs", "more.log"), "a") as f:
        f.write("x")
    time.sleep(0.02)
"""


def _gone(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_bytes().rsplit(b")", 1)[1].split()[0]
    except OSError:
        return True
    return state == b"Z"


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs /proc")
@pytest.mark.parametrize("how", ["SIGSEGV", "SIGKILL"])
def test_the_folder_and_its_holders_go_after_the_process_crashes(how: str) -> None:
    scratch = tempfile.mkdtemp(prefix="evk-", dir="/tmp")
    done = subprocess.run(
        [sys.executable, "-c", DRIVER, scratch, how, STRAGGLER],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert done.returncode == -getattr(signal, how), done.stderr
    temp, pid = done.stdout.split()
    straggler = int(pid)
    try:
        deadline = time.monotonic() + 15
        while (os.path.exists(temp) or not _gone(straggler)) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert _gone(straggler), "the straggler still runs"
        time.sleep(0.3)  # and the folder stays gone (nothing writes it again)
        assert not os.path.exists(temp)
    finally:
        if not _gone(straggler):
            os.kill(straggler, signal.SIGKILL)
        os.rmdir(scratch)


def test_a_live_process_keeps_its_folder_and_is_never_stopped_by_its_keeper() -> None:
    temp = tempfile.mkdtemp(prefix="evolve-ray-", dir="/tmp")
    script = (
        "import sys, time\n"
        "from evolve.executors._keeper import keep\n"
        "keep(sys.argv[1]); held = open(sys.argv[1] + '/log', 'w')\n"
        "sys.stdin.close()\n"  # not the keeper's pipe: that one is the process's alone
        "time.sleep(1.0); print('alive', flush=True)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script, temp], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0 and done.stdout == "alive\n", done.stderr
    deadline = time.monotonic() + 15
    while os.path.exists(temp) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not os.path.exists(temp)  # gone once the process ended normally too


def test_only_evolve_ray_folders_are_kept() -> None:
    with pytest.raises(ValueError, match="not a folder of evolve's Ray sessions"):
        keep("/home")
