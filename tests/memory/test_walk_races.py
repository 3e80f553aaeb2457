"""The working-tree reader's scandir walk (`evolve.memory._files.UnitReader`, issue 10) while
another process writes: a file or folder that vanishes mid-walk is gone, not a traceback."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from evolve.memory import UnitReader


class _Vanishing:
    """`os.scandir(folder)` whose listing is taken first; `victim` is removed before the walk
    reaches its entry (as an evict or a recovery by another process would)."""

    def __init__(self, real: Any, folder: Any, victim: Path) -> None:
        with real(folder) as it:
            self.entries = list(it)
        self.victim = victim

    def __enter__(self) -> _Vanishing:
        return self

    def __iter__(self) -> Iterator[os.DirEntry[str]]:
        for entry in self.entries:
            if Path(entry.path) == self.victim:
                if self.victim.is_dir():
                    shutil.rmtree(self.victim)
                else:
                    self.victim.unlink()
            yield entry

    def __exit__(self, *exc: object) -> None:
        return None


@pytest.mark.parametrize("victim", ["gone.md", "_counters.yaml", "sub"])
def test_a_file_or_folder_vanishing_mid_walk_is_skipped(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, victim: str
) -> None:
    memory = tmp_path / "memory"
    (memory / "sub").mkdir(parents=True)
    (memory / "house-rules.md").write_text("Never share passwords.\n")
    (memory / "gone.md").write_text("About to be evicted.\n")
    (memory / "_counters.yaml").write_text("")
    (memory / "sub" / "deep.md").write_text("In a folder being removed.\n")
    real = os.scandir
    target = memory / victim

    def scandir(folder: Any) -> Any:
        if (
            not isinstance(folder, int)
            and Path(folder) in (memory, memory / "sub")
            and target.exists()
        ):
            return _Vanishing(real, folder, target)
        return real(folder)

    reader = UnitReader(tmp_path)
    monkeypatch.setattr(os, "scandir", scandir)
    ids = {u.id for u in reader.load()}
    monkeypatch.undo()
    assert "house-rules" in ids and victim.removesuffix(".md") not in ids
    assert ids == {u.id for u in UnitReader(tmp_path).load()}


def test_a_file_name_that_is_not_utf8_is_one_error_naming_it(tmp_path: Path) -> None:
    from evolve.memory import MalformedUnit

    memory = tmp_path / "memory"
    memory.mkdir()
    (memory / "ok.md").write_text("A note.\n")
    (memory / "link.md").symlink_to(memory / "ok.md")  # a link is not a unit: skipped
    try:
        with open(os.fsencode(memory) + b"/caf\xe9.md", "wb") as f:
            f.write(b"Latin-1 name.\n")
    except OSError:
        pytest.skip("the file system refuses a name that is not UTF-8")
    with pytest.raises(MalformedUnit, match=r"memory/caf\\udce9\.md: the file name is not UTF-8"):
        UnitReader(tmp_path).load()
    os.unlink(os.fsencode(memory) + b"/caf\xe9.md")
    assert [u.id for u in UnitReader(tmp_path).load()] == ["ok"]
