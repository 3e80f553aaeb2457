"""The caches in `.git/` (`evolve._format._cache`): keyed by content and by a code version
computed from the source of the modules that produced an entry."""

from __future__ import annotations

import os
import sys
import types
from pathlib import Path

import pytest

from evolve._format import _cache
from evolve._format._cache import DiskCache
from evolve.cli import _fast
from evolve.cli._group import run as run_click
from evolve.workspace import Workspace
from factories import count_full_parses


@pytest.fixture
def producer(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An evolve module loaded in this process, whose source file a test may edit."""
    source = tmp_path / "_producer.py"
    source.write_text("def answer() -> int:\n    return 1\n", encoding="utf-8")
    module = types.ModuleType("evolve._test_producer")
    module.__file__ = str(source)
    monkeypatch.setitem(sys.modules, "evolve._test_producer", module)
    return source


def _new_process(monkeypatch: pytest.MonkeyPatch) -> None:
    """Forget this process's fingerprints, as a new `evolve` process starts without them."""
    monkeypatch.setattr(_cache, "_FINGERPRINTS", {})


def test_an_entry_is_served_while_its_code_is_unchanged(
    tmp_path: Path, producer: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = str(tmp_path / "evolve-test.cache")
    DiskCache(path).put(b"key", ("value", 1))
    _new_process(monkeypatch)
    assert DiskCache(path).get(b"key") == ("value", 1)
    # A touch, or a checkout that rewrote the same bytes: the stat moved, the source did not.
    st = producer.stat()
    os.utime(producer, ns=(st.st_atime_ns, st.st_mtime_ns + 5_000_000_000))
    _new_process(monkeypatch)
    assert DiskCache(path).get(b"key") == ("value", 1)


def test_editing_a_producing_module_makes_its_entries_miss(
    tmp_path: Path, producer: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = str(tmp_path / "evolve-test.cache")
    DiskCache(path).put(b"key", ("value", 1))
    producer.write_text("def answer() -> int:\n    return 2\n", encoding="utf-8")
    _new_process(monkeypatch)
    assert DiskCache(path).get(b"key") is None
    # What the new code writes is served to the new code, and only the new entry is kept.
    DiskCache(path).put(b"key", ("value", 2))
    _new_process(monkeypatch)
    assert DiskCache(path).entries() == {b"key": ("value", 2)}


def test_a_module_gone_since_the_entry_was_written_makes_it_miss(
    tmp_path: Path, producer: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = str(tmp_path / "evolve-test.cache")
    DiskCache(path).put(b"key", "value")
    producer.unlink()
    _new_process(monkeypatch)
    assert DiskCache(path).get(b"key") is None


def test_the_modules_of_kept_entries_stay_in_the_code_version(
    tmp_path: Path, producer: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An entry written by a process that had loaded `producer`, kept by a later process that
    had not, still goes when `producer` changes."""
    path = str(tmp_path / "evolve-test.cache")
    DiskCache(path).put(b"first", 1)
    del sys.modules["evolve._test_producer"]
    _new_process(monkeypatch)
    DiskCache(path).put(b"second", 2)
    producer.write_text("changed = True\n", encoding="utf-8")
    _new_process(monkeypatch)
    assert DiskCache(path).entries() == {}


def test_at_most_size_entries_the_most_recent(tmp_path: Path) -> None:
    path = str(tmp_path / "evolve-test.cache")
    for i in range(5):
        DiskCache(path, size=3).put(i, i)
    DiskCache(path, size=3).put(2, 2)  # used again: the most recent
    assert list(DiskCache(path, size=3).entries()) == [3, 4, 2]


def test_a_damaged_or_foreign_file_is_a_miss(tmp_path: Path) -> None:
    path = tmp_path / "evolve-test.cache"
    for junk in (b"", b"\x00garbage", b"\xe9\x00\x00\x00"):
        path.write_bytes(junk)
        assert DiskCache(str(path)).get(b"key") is None
    DiskCache(str(path), valid=lambda v: isinstance(v, str)).put(b"key", 3)
    assert DiskCache(str(path), valid=lambda v: isinstance(v, str)).get(b"key") is None


HAND_EDITED = (
    "---\n# edited by hand\nid: odd-1\nrecipe: ace\nkind: bullet\nscope: user:alex\n---\n"
    "Pay on the 1st.\n"
)


def test_a_change_to_unit_validation_is_not_answered_from_the_units_cache(
    ws: Workspace, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The case issue 21 found: validation in `evolve/_text.py` changed, and `evolve memory`
    served a unit the full path refuses from a stale `evolve-units.cache`."""
    import evolve._text
    import evolve.memory._checks

    calls = count_full_parses(monkeypatch)
    path = ws.root / "memory" / "alex" / "odd-1.md"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(HAND_EDITED, encoding="utf-8")
    assert _fast.run(["memory"]) == 0
    assert "Pay on the 1st." in capsys.readouterr().out
    assert calls == ["memory/alex/odd-1.md"] and (ws.store.git_dir / _cache.UNITS_CACHE).exists()
    calls.clear()
    assert _fast.run(["memory"]) == 0  # unchanged code: the cache answers
    assert calls == []

    # Now `_text.py` refuses the letter "P" (the new validation, loaded), and its source is
    # no longer what the cached entry was read with (its code version, edited).
    def refuses_p(text: str) -> str | None:
        return "P" if "P" in text else None

    monkeypatch.setattr(evolve.memory._checks, "string_fault", refuses_p)
    text_py = evolve._text.__file__
    assert text_py is not None
    monkeypatch.setitem(_cache._FINGERPRINTS, text_py, (0, 0, b"edited _text.py"))
    capsys.readouterr()
    # Parsed again, not served: the unit is refused, so the fast path leaves the answer to
    # the full command, which says why.
    assert _fast.run(["memory"]) is None
    assert calls == ["memory/alex/odd-1.md"]
    assert run_click(["memory"]) == 1
    err = capsys.readouterr().err
    assert "memory/alex/odd-1.md" in err and "U+0050" in err
