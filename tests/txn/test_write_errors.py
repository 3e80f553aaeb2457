"""A full disk, a read-only folder or a refused permission in any writer: one sentence, and the
write in flight rolled back (nothing half-written, no journal left for the next command).

The errors come from the fault seam (`EVOLVE_FAULT=io:<ERRNO>:<text>`, `evolve._io.io_fault`):
every file evolve opens for writing whose path holds `<text>` fails with that `OSError`, as a
full file system or a read-only folder would (the tests run as root, for whom a read-only mode
changes nothing, and mounting a small file system needs privileges a test does not have).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from conftest import GitRunner, cli_json, one_sentence, run_cli, workspace_state
from evolve.workspace import Workspace

pytestmark = pytest.mark.slow

_SMALL = """\
name: small
personas: [alex]
feedback: [instance]
orders: [0]
eval_seeds: [0]
episodes: 4
splits: [dev]
bootstrap_samples: 100
arms:
  none: {}
"""


def _journals(ws: Workspace) -> list[str]:
    return sorted(p.name for p in ws.store.git_dir.glob("evolve-*.json"))


def _fault(monkeypatch: pytest.MonkeyPatch, errno_name: str, text: str) -> None:
    monkeypatch.setenv("EVOLVE_FAULT", f"io:{errno_name}:{text}")


def _no_traceback(code: int, err: str) -> str:
    assert code == 1, err
    assert "Traceback" not in err and "OSError" not in err and "Errno" not in err, err
    # a generation's progress lines come first; the error is the one last line
    errors = [line for line in err.splitlines() if line.startswith("error: ")]
    assert len(errors) == 1 and err.rstrip().endswith(errors[0]), err
    return one_sentence(errors[0])


# (the command, the text of the paths that fail): each is run on a workspace that trained
# two episodes first (so revert and review have something to act on).
_WRITERS: list[tuple[str, tuple[str, ...], str]] = [
    ("train: a unit file", ("train", "--episodes", "6"), "/memory/"),
    ("train: the store's objects", ("train", "--episodes", "6"), "/objects/"),
    ("train: the counters", ("train", "--episodes", "6"), "_counters.yaml"),
    ("train --review", ("train", "--episodes", "6", "--review"), "/memory/"),
    (
        "train --recipe skills",
        ("train", "--recipe", "skills", "--unrendered", "--episodes", "8"),
        "/memory/",
    ),
    (
        "skills: the store",
        ("train", "--recipe", "skills", "--unrendered", "--episodes", "8"),
        "/objects/",
    ),
    ("evolve: a record", ("evolve", "--generations", "1"), "/generations/"),
    ("evolve: the store", ("evolve", "--generations", "1"), "/objects/"),
    ("compare", ("compare", "experiments/small.yaml", "--jobs", "1"), "/generations/"),
]


@pytest.mark.parametrize("errno_name", ["ENOSPC", "EROFS", "EACCES"])
@pytest.mark.parametrize(("label", "args", "text"), _WRITERS, ids=[w[0] for w in _WRITERS])
def test_a_writer_that_cannot_write_says_so_and_leaves_nothing_half_written(
    ws: Workspace,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    run_git: GitRunner,
    label: str,
    args: tuple[str, ...],
    text: str,
    errno_name: str,
) -> None:
    cli_json(capsys, "train", "--episodes", "2")
    if args[0] == "compare":
        (ws.root / "experiments").mkdir(exist_ok=True)
        (ws.root / "experiments" / "small.yaml").write_text(_SMALL, encoding="utf-8")
        run_git(ws.root, "add", "experiments")
        run_git(ws.root, "commit", "-q", "-m", "experiment")
    before = workspace_state(ws.root, run_git)
    _fault(monkeypatch, errno_name, text)
    code, _out, err = run_cli(capsys, *args)
    line = _no_traceback(code, err)
    said = {"ENOSPC": "disk is full", "EROFS": "read-only", "EACCES": "permission was denied"}
    assert said[errno_name] in line
    monkeypatch.delenv("EVOLVE_FAULT")
    if args[0] == "evolve":
        # Reset to its base, but the record of the generation could not be written either:
        # its journal stays for the next command, which writes it.
        assert "reset to its base" in line and "the next evolve command writes it" in line
        assert _journals(ws) == ["evolve-generation.json"]
        code, _out, err = run_cli(capsys, "train", "--episodes", "3")
        assert code == 0 and "generation 1 was interrupted" in err, err
    assert _journals(ws) == []
    # Every episode before the failure is committed whole, and the failed one is undone: no
    # file differs from HEAD, and HEAD only moved forward.
    assert run_git(ws.root, "status", "--porcelain", "--untracked-files=all") == "", label
    assert run_git(ws.root, "merge-base", "--is-ancestor", before[0].strip(), "HEAD") == ""
    if text == "/memory/" and args[0] == "train":  # the very first write failed
        assert workspace_state(ws.root, run_git)[:3] == before[:3]
    # and the next command finds nothing to roll back
    code, _out, err = run_cli(capsys, "train", "--episodes", "3")
    assert code == 0, err
    assert "rolled back" not in err and "had been committed" not in err


def _revert_target(ws: Workspace, capsys: pytest.CaptureFixture[str]) -> str:
    cli_json(capsys, "train", "--episodes", "6")
    learned = [e for e in cli_json(capsys, "log")["entries"] if e["kind"] == "learned"]
    return str(learned[-1]["commit"])


@pytest.mark.parametrize("errno_name", ["ENOSPC", "EROFS", "EACCES"])
def test_revert_and_review_that_cannot_write_roll_back(
    ws: Workspace,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    run_git: GitRunner,
    errno_name: str,
) -> None:
    sha = _revert_target(ws, capsys)
    report = cli_json(capsys, "train", "--episodes", "12", "--review")
    assert report
    pending = cli_json(capsys, "review", "list")
    before = workspace_state(ws.root, run_git)
    _fault(monkeypatch, errno_name, "/memory/")
    line = _no_traceback(*run_cli(capsys, "revert", sha)[::2])
    assert "nothing is half-written" in line or "no write was in progress" in line
    if pending:
        _no_traceback(*run_cli(capsys, "review", "approve", pending[0]["id"])[::2])
    monkeypatch.delenv("EVOLVE_FAULT")
    assert _journals(ws) == []
    assert workspace_state(ws.root, run_git) == before


@pytest.mark.parametrize("errno_name", ["ENOSPC", "EROFS"])
def test_init_demo_and_report_that_cannot_write_say_one_sentence(
    tmp_path: Path,
    ws: Workspace,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    errno_name: str,
) -> None:
    cases: list[tuple[tuple[str, ...], str, Callable[[], object]]] = [
        (("init", str(tmp_path / "new")), "/new/", lambda: None),
        (("demo", str(tmp_path / "demo"), "--episodes", "2", "--generations", "1"), "/demo/",
         lambda: None),
        (("report", "--out", str(tmp_path / "out")), "/out/", lambda: None),
        (("report",), "report", lambda: None),
    ]  # fmt: skip
    for args, text, _ in cases:
        _fault(monkeypatch, errno_name, text)
        _no_traceback(*run_cli(capsys, *args)[::2])
    monkeypatch.delenv("EVOLVE_FAULT")
    assert not (tmp_path / "out" / "report.html").exists()


def test_the_seam_is_inert_without_the_variable_and_names_the_file(
    ws: Workspace, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("EVOLVE_FAULT", "io:ENOSPC:/nowhere-at-all/")
    cli_json(capsys, "train", "--episodes", "2")
    _fault(monkeypatch, "ENOSPC", "/memory/")
    code, _out, err = run_cli(capsys, "train", "--episodes", "6")
    line = _no_traceback(code, err)
    assert "/memory/" in line and "free some space" in line
    assert json.dumps(line)  # printable, one line
