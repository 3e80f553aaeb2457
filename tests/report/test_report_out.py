"""`evolve report --out`: never into a protected path or .git/, never through a link out
(issue 28, item 2)."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import pytest

from conftest import one_sentence, run_cli
from evolve.workspace import Workspace

RunGit = Callable[..., str]

PROTECTED = [
    "evalset",
    "evalset/personas",
    "tests",
    "tests/new",
    "TESTS",  # case folded: the same folder on a case-insensitive file system
]


def _files(root: Path) -> dict[str, bytes]:
    return {
        p.relative_to(root).as_posix(): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file() and ".git" not in p.relative_to(root).parts
    }


@pytest.mark.parametrize("out", PROTECTED)
def test_report_refuses_a_protected_folder(
    ws: Workspace, capsys: pytest.CaptureFixture[str], out: str
) -> None:
    before = _files(ws.root)

    code, _, err = run_cli(capsys, "report", "--out", out)

    assert code == 1, err
    assert f"refusing --out {out}: " in one_sentence(err)
    assert "protected path" in err
    assert _files(ws.root) == before


@pytest.mark.parametrize("out", [".git", ".git/hooks", os.path.join(".git", "x")])
def test_report_refuses_git(ws: Workspace, capsys: pytest.CaptureFixture[str], out: str) -> None:
    code, _, err = run_cli(capsys, "report", "--out", out)

    assert code == 1, err
    assert "nothing under .git/ may be written" in one_sentence(err)
    assert not (ws.root / ".git" / "report.html").exists()
    assert not (ws.root / ".git" / "hooks" / "report.html").exists()


def test_report_refuses_a_folder_that_links_into_a_protected_one(
    ws: Workspace, capsys: pytest.CaptureFixture[str]
) -> None:
    (ws.root / "out").symlink_to("evalset", target_is_directory=True)

    code, _, err = run_cli(capsys, "report", "--out", "out")

    assert code == 1, err
    assert "evalset/report.html is a protected path" in one_sentence(err)
    assert not (ws.root / "evalset" / "report.html").exists()


def test_report_refuses_an_outside_link_that_leads_into_the_workspace(
    ws: Workspace, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    link = tmp_path / "elsewhere"
    link.symlink_to(ws.root / "tests", target_is_directory=True)

    code, _, err = run_cli(capsys, "report", "--out", str(link))

    assert code == 1, err
    assert "tests/report.html is a protected path" in one_sentence(err)
    assert not (ws.root / "tests" / "report.html").exists()


@pytest.mark.parametrize("rel", ["generations", "generations/report", "reports"])
def test_report_refuses_a_link_out_on_its_way(
    ws: Workspace, tmp_path: Path, run_git: RunGit, capsys: pytest.CaptureFixture[str], rel: str
) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    link = ws.root / rel
    if link.is_dir():
        import shutil

        shutil.rmtree(link)
    link.parent.mkdir(parents=True, exist_ok=True)
    link.symlink_to(outside, target_is_directory=True)
    run_git(ws.root, "add", "-f", "-A")
    run_git(ws.root, "commit", "-q", "-m", f"plant {rel}")
    args = ("report",) if rel.startswith("generations") else ("report", "--out", rel)

    code, _, err = run_cli(capsys, *args)

    assert code == 1, err
    assert f"refusing {rel}: it is a symbolic link to {outside}" in one_sentence(err)
    assert list(outside.iterdir()) == []


def test_report_writes_where_it_is_told_otherwise(
    ws: Workspace, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A folder of the user's own outside the workspace, and the default, still work."""
    code, out, err = run_cli(capsys, "report", "--out", str(tmp_path / "mine"))
    assert code == 0, err
    assert (tmp_path / "mine" / "report.html").is_file()

    code, out, err = run_cli(capsys, "report")
    assert code == 0, err
    assert (ws.root / "generations" / "report" / "report.html").is_file()
