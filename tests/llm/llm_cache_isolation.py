"""An autouse fixture, imported by the model tests: each test gets its own cache folder.

Endpoint memory (`endpoints.json`) and the request cache live under `$EVOLVE_CACHE_DIR`;
without this, tests would read and write the user's `~/.cache/evolve`.
"""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture(autouse=True)
def private_cache(
    tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> Path:
    root = tmp_path_factory.mktemp("evolve-cache")
    monkeypatch.setenv("EVOLVE_CACHE_DIR", str(root))
    return root
