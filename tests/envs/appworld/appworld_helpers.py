"""Shared by the AppWorld tests: whether the AppWorld venv is prepared, the CLI in a process of
its own with scripted models, the live workers."""

from __future__ import annotations

import functools
import os
import subprocess
import sys
from pathlib import Path

import pytest

from evolve.envs.appworld._client import WORKER
from evolve.envs.appworld._paths import venv_python

HERE = Path(__file__).resolve().parent


@functools.cache
def _importable(python: Path) -> bool:
    """Whether AppWorld imports in the venv of `python` (asked once per test process: the
    import takes seconds and the venv does not change during a run)."""
    return python.is_file() and (
        subprocess.run(
            [str(python), "-c", "import appworld.apps.phone.apis"], capture_output=True
        ).returncode
        == 0
    )


def require_appworld() -> Path:
    """The AppWorld venv's python; skip without it, fail instead under CI or when required."""
    python = venv_python()
    if _importable(python):
        return python
    why = f"the AppWorld venv is not prepared at {python} (run `evolve appworld setup`)"
    if os.environ.get("CI") == "true" or os.environ.get("EVOLVE_REQUIRE_APPWORLD") == "1":
        pytest.fail(why)
    pytest.skip(why)


def run_cli(cwd: Path, env: dict[str, str], script: str, *args: str) -> tuple[int, str, str, int]:
    """`evolve ARGS` through `cli_runner.py SCRIPT` in `cwd`: (rc, stdout, stderr, pid)."""
    proc = subprocess.Popen(
        [sys.executable, str(HERE / "cli_runner.py"), script, *args],
        cwd=cwd,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    out, err = proc.communicate(timeout=900)
    return proc.returncode, out, err, proc.pid


def live_workers(root: Path) -> list[int]:
    """Worker processes serving `root` (read from /proc)."""
    pids = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmd = (entry / "cmdline").read_bytes().split(b"\0")
            environ = (entry / "environ").read_bytes().split(b"\0")
        except OSError:
            continue
        if str(WORKER).encode() in cmd and f"APPWORLD_ROOT={root}".encode() in environ:
            pids.append(int(entry.name))
    return pids
