"""`evolve._confine`: the one helper every workspace reader and writer opens files through.

The check is made at open time: a folder or file swapped for a link after the path was
resolved (the plan) and before it is opened is refused, never followed."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from evolve import _confine as confined
from evolve.errors import PathRefused


@pytest.fixture
def root(tmp_path: Path) -> Path:
    (tmp_path / "ws" / "generations" / "runs").mkdir(parents=True)
    return (tmp_path / "ws").resolve()


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    folder = tmp_path / "outside"
    folder.mkdir()
    (folder / "passwd").write_text("root:x:0:0\n", encoding="utf-8")
    return folder


def _swap_after_plan(monkeypatch: pytest.MonkeyPatch, path: Path, target: Path) -> None:
    """Let the path be resolved, then swap `path` for a link to `target` (a race)."""
    plan = confined.real_rel

    def racing(root: Path | str, rel: str) -> str:
        found = plan(root, rel)
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path)
        elif path.exists():
            path.unlink()
        path.symlink_to(target, target_is_directory=target.is_dir())
        return found

    monkeypatch.setattr(confined, "real_rel", racing)


@pytest.mark.parametrize("write", ["append", "atomic"])
def test_a_folder_swapped_for_a_link_at_open_time_is_refused(
    root: Path, outside: Path, monkeypatch: pytest.MonkeyPatch, write: str
) -> None:
    _swap_after_plan(monkeypatch, root / "generations" / "runs", outside)

    with pytest.raises(PathRefused, match="became a symbolic link while it was being opened"):
        if write == "append":
            confined.append_text(root, "generations/runs/log.jsonl", "record\n")
        else:
            confined.write_atomic(root, "generations/runs/log.jsonl", "record\n")

    assert sorted(p.name for p in outside.iterdir()) == ["passwd"]


def test_a_file_swapped_for_a_link_at_open_time_is_refused(
    root: Path, outside: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    log = root / "generations" / "runs" / "log.jsonl"
    log.write_text("", encoding="utf-8")
    _swap_after_plan(monkeypatch, log, outside / "passwd")

    with pytest.raises(PathRefused, match="became a symbolic link"):
        confined.append_text(root, "generations/runs/log.jsonl", "record\n")
    with pytest.raises(PathRefused, match="refusing generations/runs/log.jsonl: it is a symbolic"):
        confined.read_text(root, "generations/runs/log.jsonl")  # now seen at plan time

    assert (outside / "passwd").read_text(encoding="utf-8") == "root:x:0:0\n"


def test_a_listed_file_swapped_for_a_link_is_refused(root: Path, outside: Path) -> None:
    """What the memory scan lists as a file is opened with O_NOFOLLOW."""
    path = root / "note.md"
    os.symlink(outside / "passwd", path)

    with pytest.raises(PathRefused, match="refusing memory/note.md: a folder or file"):
        confined.read_listed(str(path), "memory/note.md")


def test_links_inside_are_followed_and_links_out_named(root: Path, outside: Path) -> None:
    (root / "real.md").write_text("inside\n", encoding="utf-8")
    os.symlink("real.md", root / "alias.md")
    os.symlink(outside, root / "generations" / "out")

    assert confined.read_text(root, "alias.md") == "inside\n"
    assert confined.real_rel(root, "alias.md") == "real.md"
    with pytest.raises(PathRefused, match=f"refusing generations/out: .* to {outside}"):
        confined.read_text(root, "generations/out/passwd")
    with pytest.raises(PathRefused, match="refusing generations/out: "):
        confined.make_folders(root, "generations/out/new")
    assert sorted(p.name for p in outside.iterdir()) == ["passwd"]
