"""A Ray session's folder is removed and stays removed: a process that holds it without naming
it on its command line (a worker the raylet started, reparented when the raylet died, still
writing its log) is found through its open files and stopped. No Ray needed."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from evolve.executors._keeper import holding as _holding
from evolve.executors._keeper import remove as _remove

STRAGGLER = """
import os, sys, time
folder = os.environ["HELD"]
log = open(os.path.join(folder, "worker.log"), "a")  # held open, as a worker's log
while True:
    os.makedirs(os.path.join(folder, "logs"), exist_ok=True)  # and written anew
    with open(os.path.join(folder, "logs", "more.log"), "a") as f:
        f.write("x")
    log.write("x"); log.flush()
    time.sleep(0.02)
"""


def test_a_process_writing_into_the_folder_is_stopped_and_the_folder_stays_gone() -> None:
    temp = tempfile.mkdtemp(prefix="evolve-ray-")
    process = subprocess.Popen([sys.executable, "-c", STRAGGLER], env={**os.environ, "HELD": temp})
    try:
        deadline = time.monotonic() + 30
        while not (Path(temp) / "logs" / "more.log").exists() and time.monotonic() < deadline:
            time.sleep(0.02)
        assert [pid for pid, _ in _holding(temp)] == [process.pid]  # found by its open file
        _remove(temp)
        process.wait(timeout=30)  # stopped (and reaped by _remove: no status to read)
        assert not os.path.exists(f"/proc/{process.pid}/fd")
        time.sleep(0.5)
        assert not os.path.exists(temp)
    finally:
        process.kill()
        process.wait()


def test_a_folder_no_process_holds_is_simply_removed() -> None:
    temp = tempfile.mkdtemp(prefix="evolve-ray-")
    (Path(temp) / "session").mkdir()
    assert _holding(temp) == []
    _remove(temp)
    assert not os.path.exists(temp)
