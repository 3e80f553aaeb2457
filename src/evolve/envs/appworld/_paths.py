"""Where the AppWorld venv lives: outside every workspace and the repository."""

from __future__ import annotations

import os
from pathlib import Path

APPWORLD_VERSION = "0.1.3.post1"


def home() -> Path:
    """`$EVOLVE_APPWORLD_HOME`, by default `~/.cache/evolve/appworld`."""
    raw = os.environ.get("EVOLVE_APPWORLD_HOME")
    return Path(raw).expanduser() if raw else Path.home() / ".cache" / "evolve" / "appworld"


def venv_dir() -> Path:
    return home() / "venv"


def venv_python() -> Path:
    return venv_dir() / "bin" / "python"


def worker_log_dir() -> Path:
    return home() / "logs"


def root_file() -> Path:
    """Where `evolve appworld setup --root DIR` remembers the data root."""
    return home() / "root"


def data_root() -> Path | None:
    """The AppWorld root (the folder holding `data/`): `$APPWORLD_ROOT`, else the one setup
    remembered; None when neither is set."""
    raw = os.environ.get("APPWORLD_ROOT")
    if raw:
        return Path(raw).expanduser()
    try:
        text = root_file().read_text(encoding="utf-8").strip()
    except OSError:
        return None
    return Path(text) if text else None
