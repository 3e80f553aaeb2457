"""`UnitReader(root, remember=...)`: a new process reads from `.git/evolve-units.cache` what an
earlier one read of each unit file that has not changed since, so training does not read and
parse every unit file again (issue 21 item 7); an edited file, a file changed just now and a
change to the code that read them are read again."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

import evolve.memory._files as files
from evolve._format import _cache
from evolve._format._cache import UNITS_CACHE
from evolve.memory import MemoryUnit, UnitReader, dump_unit
from evolve.workspace import Workspace
from factories import memory_unit


def _write(ws: Workspace, unit: MemoryUnit) -> Path:
    path = ws.root / unit.path()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(dump_unit(unit), encoding="utf-8")
    return path


@pytest.fixture
def reads(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The unit files read from now on (files written just now count as old)."""
    monkeypatch.setattr(files, "RACY_NS", -(10**12))
    calls: list[str] = []
    real = files._read

    def counting(path: str, rel: str) -> str:
        calls.append(rel)
        return real(path, rel)

    monkeypatch.setattr(files, "_read", counting)
    return calls


def _reader(ws: Workspace) -> UnitReader:
    return UnitReader(ws.root, remember=str(ws.store.git_dir / UNITS_CACHE))


def _units(ws: Workspace, n: int) -> list[Path]:
    return [
        _write(ws, memory_unit(id=f"ace-{i:08d}", text=f"Fact number {i}.", created_episode=i))
        for i in range(n)
    ]


def test_a_new_reader_reads_no_unchanged_file_again(ws: Workspace, reads: list[str]) -> None:
    _units(ws, 5)
    first = _reader(ws).load()
    assert len(reads) == 5 and (ws.store.git_dir / UNITS_CACHE).exists()
    reads.clear()
    again = _reader(ws).load()
    assert reads == []
    assert again == first == UnitReader(ws.root).load()
    assert [u.model_dump() for u in again] == [u.model_dump() for u in first]


def test_an_edited_file_is_read_again(ws: Workspace, reads: list[str]) -> None:
    paths = _units(ws, 3)
    _reader(ws).load()
    reads.clear()
    st = paths[1].stat()
    edited = memory_unit(id="ace-00000001", text="Fact number 9.", created_episode=1)
    paths[1].write_text(dump_unit(edited), encoding="utf-8")
    os.utime(paths[1], ns=(st.st_atime_ns, st.st_mtime_ns))  # same size and mtime: ctime moved
    assert paths[1].stat().st_size == st.st_size
    units = _reader(ws).load()
    assert reads == ["memory/alex/ace-00000001.md"]
    assert [u.text for u in units] == ["Fact number 0.", "Fact number 9.", "Fact number 2."]


def test_a_file_changed_just_now_is_not_remembered(
    ws: Workspace, monkeypatch: pytest.MonkeyPatch
) -> None:
    _units(ws, 2)
    _reader(ws).load()
    assert not (ws.store.git_dir / UNITS_CACHE).exists()  # racy: could change unseen


def test_a_change_to_the_reading_code_is_not_answered_from_the_cache(
    ws: Workspace, reads: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    _units(ws, 2)
    _reader(ws).load()
    reads.clear()
    source = files.__file__
    assert source is not None
    monkeypatch.setitem(_cache._FINGERPRINTS, source, (0, 0, b"edited _files.py"))
    _reader(ws).load()
    assert sorted(reads) == ["memory/alex/ace-00000000.md", "memory/alex/ace-00000001.md"]


def test_a_removed_file_is_gone_and_a_malformed_one_refused(
    ws: Workspace, reads: list[str]
) -> None:
    from evolve.memory import MalformedUnit

    paths = _units(ws, 2)
    _reader(ws).load()
    paths[0].unlink()
    assert [u.id for u in _reader(ws).load()] == ["ace-00000001"]
    paths[1].write_text("---\nid: [\n---\nbroken\n", encoding="utf-8")
    with pytest.raises(MalformedUnit):
        _reader(ws).load()
