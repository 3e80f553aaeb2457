"""Where evolve keeps what it learns about endpoints and the request cache: outside git."""

from __future__ import annotations

import os
from pathlib import Path


def cache_root() -> Path:
    """`$EVOLVE_CACHE_DIR`, else `$XDG_CACHE_HOME/evolve`, else `~/.cache/evolve`.

    Outside every workspace on purpose: nothing here is ever committed, a `git clean` or the
    temporary clone of `evolve evolve --dry-run` does not lose it, and its content-addressed
    entries are safe to share between workspaces.
    """
    explicit = os.environ.get("EVOLVE_CACHE_DIR")
    if explicit:
        return Path(explicit).expanduser()
    xdg = os.environ.get("XDG_CACHE_HOME")
    base = Path(xdg).expanduser() if xdg else Path.home() / ".cache"
    return base / "evolve"
