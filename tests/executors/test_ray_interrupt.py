"""Ctrl-C at any point of a `--executor ray` run, Ray's start-up included, leaves no Ray
process and no `evolve-ray-*` folder behind (issue 22): before, an interrupt while Ray started
left `ray::DashboardAgent` and `ray::RuntimeEnvAgent` running for 55-100 s, and the folder.

Marked `ray` (and slow): skips without Ray, except where CI=true or EVOLVE_REQUIRE_RAY=1."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

import pytest
from test_ray import _marked, need_ray

from evolve.workspace import Workspace

pytestmark = [
    pytest.mark.ray,
    pytest.mark.slow,
    pytest.mark.skipif(not Path("/proc/self/environ").exists(), reason="needs /proc"),
]

# How long after Ray's folder appears the interrupt comes: at once (the head starting), while
# the raylet starts its agents, and later (the cluster up, the map running or about to).
POINTS_S = (0.0, 0.6, 1.5, 4.0)
# Ray's processes must be gone this soon after the command ends (before: 55-100 s).
GONE_WITHIN_S = 5.0


def _folders(tmp: Path) -> list[Path]:
    return sorted(tmp.glob("evolve-ray-*"))


@pytest.mark.parametrize("after_s", POINTS_S)
def test_an_interrupt_leaves_no_ray_process_or_folder(ws: Workspace, after_s: float) -> None:
    need_ray()
    mark = uuid.uuid4().hex
    tmp = Path(tempfile.mkdtemp(prefix="evi-", dir="/tmp"))
    env = {k: v for k, v in os.environ.items() if k != "RAY_ADDRESS"}
    env.update(EVOLVE_TEST_MARK=mark, TMPDIR=str(tmp))
    process = subprocess.Popen(
        [sys.executable, "-m", "evolve", "run", "--split", "dev", "--runs", "3",
         "--concurrency", "2", "--executor", "ray"],
        cwd=ws.root, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 120
        while not _folders(tmp) and process.poll() is None and time.monotonic() < deadline:
            time.sleep(0.01)
        assert _folders(tmp), "Ray's session folder never appeared"
        time.sleep(after_s)
        interrupted = process.poll() is None
        if interrupted:
            process.send_signal(signal.SIGINT)
        out, err = process.communicate(timeout=120)
        ended = time.monotonic()
        if interrupted:
            assert process.returncode != 0 or "episode logs" in out, err
        while _marked(mark) and time.monotonic() - ended < GONE_WITHIN_S:
            time.sleep(0.1)
        left = _marked(mark)
        names = []
        for pid in left:
            with contextlib.suppress(OSError):
                names.append(Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")[0].decode())
        assert left == [], f"still running {GONE_WITHIN_S:g} s after: {names}"
        assert _folders(tmp) == []
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
        for pid in _marked(mark):  # only what this test started, so the next test is clean
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
        shutil.rmtree(tmp, ignore_errors=True)
