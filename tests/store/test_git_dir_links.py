"""Files evolve keeps under `.git/` (its caches, digests, the reflogs it appends) are never
written through a link (issue 28, item 2): a clone's `.git/` can be set up by someone else, and
a temporary name evolve writes to is predictable (`<cache>.<pid>.tmp`).
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from conftest import GitRunner, run_cli
from evolve._format._cache import DiskCache
from evolve.txn import lock as txn_lock
from evolve.workspace import Workspace

SECRET = "the outside file, as it was\n"


def _outside(tmp_path: Path) -> Path:
    target = tmp_path / "outside.txt"
    target.write_text(SECRET, encoding="utf-8")
    return target


def test_a_disk_cache_never_writes_through_a_link_at_its_temporary_name(
    tmp_path: Path,
) -> None:
    target = _outside(tmp_path)
    path = tmp_path / "evolve-run.cache"
    (tmp_path / f"{path.name}.{os.getpid()}.tmp").symlink_to(target)
    DiskCache(str(path)).put("k", "v")
    assert target.read_text(encoding="utf-8") == SECRET
    assert not path.is_symlink() and DiskCache(str(path)).get("k") == "v"


def test_a_disk_cache_that_is_a_link_is_not_read(tmp_path: Path) -> None:
    real = tmp_path / "elsewhere.cache"
    DiskCache(str(real)).put("k", "from elsewhere")
    link = tmp_path / "evolve-run.cache"
    link.symlink_to(real)
    assert DiskCache(str(link)).get("k") is None


def test_the_log_cache_and_digests_never_write_through_a_link(
    ws: Workspace, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    target = _outside(tmp_path)
    git_dir = ws.store.git_dir
    for name in ("evolve-log.cache", "evolve-streams.digest", "evolve-reverts.digest"):
        (git_dir / f"{name}.{os.getpid()}.tmp").symlink_to(target)
    code, _out, err = run_cli(capsys, "train", "--episodes", "2")
    assert code == 0, err
    for command in (("log",), ("memory",), ("log", "--json")):
        code, _out, err = run_cli(capsys, *command)
        assert code == 0, err
    assert target.read_text(encoding="utf-8") == SECRET


def test_the_reflog_is_never_appended_through_a_link(
    workspace: Workspace, run_git: GitRunner, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    ws = workspace
    target = _outside(tmp_path)
    reflog = ws.store.git_dir / "logs" / "HEAD"
    reflog.unlink(missing_ok=True)
    reflog.parent.mkdir(parents=True, exist_ok=True)
    reflog.symlink_to(target)
    (ws.root / "memory" / "note.md").write_text("a note\n", encoding="utf-8")
    with txn_lock(ws, "evolve train"):
        sha = ws.store.commit(["memory/note.md"], "a note")
    assert sha is not None and run_git(ws.root, "rev-parse", "HEAD").strip() == sha
    assert target.read_text(encoding="utf-8") == SECRET
    assert any("reflog not written" in r.getMessage() for r in caplog.records)
    # a folder of the reflog swapped for a link: the same
    reflog.unlink()
    logs = ws.store.git_dir / "logs"
    heads = logs / "refs" / "heads"
    for child in heads.iterdir():
        child.unlink()
    heads.rmdir()
    outside_dir = tmp_path / "outside-dir"
    outside_dir.mkdir()
    heads.symlink_to(outside_dir)
    (ws.root / "memory" / "note.md").write_text("a second note\n", encoding="utf-8")
    with txn_lock(ws, "evolve train"):
        assert ws.store.commit(["memory/note.md"], "a second note") is not None
    assert list(outside_dir.iterdir()) == []
