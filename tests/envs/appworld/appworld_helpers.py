"""Shared by the AppWorld tests: whether the AppWorld venv is prepared."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from evolve.envs.appworld._paths import venv_python


def require_appworld() -> Path:
    """The AppWorld venv's python; skip without it, fail instead under CI or when required."""
    python = venv_python()
    ok = python.is_file() and (
        subprocess.run(
            [str(python), "-c", "import appworld.apps.phone.apis"], capture_output=True
        ).returncode
        == 0
    )
    if ok:
        return python
    why = f"the AppWorld venv is not prepared at {python} (run `evolve appworld setup`)"
    if os.environ.get("CI") == "true" or os.environ.get("EVOLVE_REQUIRE_APPWORLD") == "1":
        pytest.fail(why)
    pytest.skip(why)
