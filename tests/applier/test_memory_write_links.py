"""The memory applier writes a unit file through a confined open (issue 28, item 2): a folder
of memory/ swapped for a link to somewhere else after the path was checked is refused at open
time, not followed."""

from __future__ import annotations

from pathlib import Path

import pytest

from evolve import txn
from evolve.errors import PathRefused
from evolve.ops import Op
from evolve.txn._journal import ApplyJournal
from evolve.workspace import Workspace
from factories import memory_unit

ALEX = "user:alex"


def test_a_folder_swapped_for_a_link_after_the_check_is_refused_at_open_time(
    workspace: Workspace, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ws = workspace
    outside = tmp_path / "outside"
    outside.mkdir()
    real_begin = ApplyJournal.begin
    swapped: list[Path] = []

    def begin_then_swap(self: ApplyJournal, paths: list[str]) -> None:
        real_begin(self, paths)  # every path was checked; the write starts now ...
        folder = ws.root / "memory" / "alex"
        if folder.exists():
            for child in folder.iterdir():
                child.unlink()
            folder.rmdir()
        folder.symlink_to(outside, target_is_directory=True)  # ... and the folder is swapped
        swapped.append(folder)
        # between a path's check and its open there is always a moment: make it this one
        monkeypatch.setattr(Workspace, "resolve", lambda ws, path: ws.root / str(path))

    monkeypatch.setattr(ApplyJournal, "begin", begin_then_swap)
    unit = memory_unit("ace-a", "Sign every text.", scope=ALEX)
    with txn.writer(ws, "evolve train") as tx, pytest.raises(PathRefused, match="symbolic link"):
        tx.apply([Op(op="add", unit=unit)], [], scope=ALEX)
    assert swapped and list(outside.iterdir()) == []
