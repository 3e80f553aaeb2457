"""A `.git/` from someone else is hostile input (issue 28): its caches are sealed with this
user's key, so a planted cache file (crafted `marshal` bytes, or an entry for a digest anyone
can compute) is never loaded, and a planted log cache is never served."""

from __future__ import annotations

import marshal
import os
import sys
from pathlib import Path

import pytest

from evolve._format import _cache
from evolve._format._cache import DiskCache, seal, unseal


@pytest.fixture
def own_key(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("EVOLVE_CACHE_DIR", str(tmp_path / "keys"))
    monkeypatch.setattr(_cache, "_KEY", [])
    return tmp_path / "keys" / "cache-key"


def test_the_key_is_made_once_for_this_user_only(own_key: Path) -> None:
    sealed = seal(b"payload")
    assert sealed is not None and unseal(sealed) == b"payload"
    assert own_key.stat().st_mode & 0o777 == 0o600 and own_key.stat().st_size == 32
    assert unseal(sealed[:-1] + b"X") is None  # a changed byte
    assert unseal(b"payload") is None  # not sealed at all


def test_a_planted_cache_file_is_never_unmarshalled(
    own_key: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "evolve-evalset.cache"
    mine = DiskCache(str(path))
    mine.put("key", "the real value")
    assert DiskCache(str(path)).get("key") == "the real value"
    # Someone else's file, written with the same code version but without this user's key:
    stamp = _cache.code_version()
    forged = marshal.dumps(((_cache.FORMAT, sys.version_info[:2]), stamp, {"key": "forged"}))
    path.write_bytes(forged)
    loads: list[bytes] = []
    real = marshal.loads

    def spy(data: bytes) -> object:
        loads.append(data)
        return real(data)

    monkeypatch.setattr(marshal, "loads", spy)
    assert DiskCache(str(path)).get("key") is None and loads == []
    # ... nor sealed by another user's key.
    monkeypatch.setattr(_cache, "_KEY", [os.urandom(32)])
    other = seal(forged)
    monkeypatch.setattr(_cache, "_KEY", [])
    assert other is not None
    path.write_bytes(other)
    assert DiskCache(str(path)).get("key") is None and loads == []


def test_no_key_means_no_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_cache, "_KEY", [None])
    path = tmp_path / "c.cache"
    DiskCache(str(path)).put("k", "v")
    assert not path.exists()
