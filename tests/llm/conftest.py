"""Keep every model test's endpoint memory and request cache in its own temporary folder."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture(autouse=True)
def _private_cache(
    tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> Path:
    root = tmp_path_factory.mktemp("evolve-cache")
    monkeypatch.setenv("EVOLVE_CACHE_DIR", str(root))
    return root
