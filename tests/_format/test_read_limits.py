"""Sizes are bounded where files are read (issue 28, item 6): every unit, hand note, sidecar,
prompt file, configuration and record is checked against its kind's limit before it is parsed
or rendered (one sentence naming the file and the limit, a non-zero exit), and what is
rendered into a prompt stays within the memory budget whatever a hand edit holds."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from conftest import run_cli
from evolve._format import _limits as limits
from evolve._format._render import render_memory, render_plain
from evolve.workspace import Workspace
from factories import memory_unit

RunGit = Callable[..., str]


def _commit(ws: Workspace, run_git: RunGit) -> None:
    run_git(ws.root, "add", "-A")
    run_git(ws.root, "commit", "-qm", "person: a big file")


def _refused(err: str, rel: str, limit: str) -> None:
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1, err
    assert rel in lines[0] and f"over the {limit} limit" in lines[0], lines[0]


@pytest.mark.parametrize("argv", [["memory"], ["memory", "--json"], ["train", "--episodes", "1"]])
def test_an_oversized_hand_note_is_refused_by_name(
    ws: Workspace, run_git: RunGit, capsys: pytest.CaptureFixture[str], argv: list[str]
) -> None:
    note = ws.root / "memory/alex/hand-note.md"
    note.parent.mkdir(parents=True, exist_ok=True)
    note.write_text("Always pay from the visa card.\n" * 10_000, "utf-8")  # 310 KB
    _commit(ws, run_git)
    code, out, err = run_cli(capsys, *argv)
    assert code != 0 and "visa" not in out
    _refused(err, "memory/alex/hand-note.md", "256 KiB")


def test_an_oversized_unit_is_refused_by_name_at_any_revision(
    ws: Workspace, run_git: RunGit, capsys: pytest.CaptureFixture[str]
) -> None:
    from evolve.memory import dump_unit

    unit = memory_unit("ace-0000000001", "Ask first. " * 30_000, created_episode=0)
    (ws.root / "memory/alex").mkdir(parents=True, exist_ok=True)
    (ws.root / "memory/alex/ace-0000000001.md").write_text(dump_unit(unit), "utf-8")
    _commit(ws, run_git)
    for argv in (["memory", "--as-of", "HEAD"], ["show", "ace-0000000001"]):
        code, _, err = run_cli(capsys, *argv)
        assert code != 0, argv
        _refused(err, "memory/alex/ace-0000000001.md", "256 KiB")


@pytest.mark.parametrize("argv", [["memory"], ["evolve", "--dry-run"]])
def test_an_oversized_counters_sidecar_is_refused_at_once(
    ws: Workspace, run_git: RunGit, capsys: pytest.CaptureFixture[str], argv: list[str]
) -> None:
    sidecar = ws.root / "memory/alex/_counters.yaml"
    sidecar.parent.mkdir(parents=True, exist_ok=True)
    sidecar.write_text(
        "".join(f"ace-{i:010d}: {{helpful: 1, harmful: 0}}\n" for i in range(80_000)), "utf-8"
    )  # 3.3 MB
    _commit(ws, run_git)
    started = time.perf_counter()
    code, _, err = run_cli(capsys, *argv)
    assert code != 0
    assert time.perf_counter() - started < 30
    _refused(err, "memory/alex/_counters.yaml", "2 MiB")


def test_an_oversized_prompt_file_is_refused_by_name(
    ws: Workspace, run_git: RunGit, capsys: pytest.CaptureFixture[str]
) -> None:
    (ws.root / "prompts/notes.md").write_text("Be brief.\n" * 30_000, "utf-8")  # 300 KB
    _commit(ws, run_git)
    code, _, err = run_cli(capsys, "run", "--split", "dev")
    assert code != 0
    _refused(err, "prompts/notes.md", "256 KiB")


def test_an_oversized_evolve_yaml_is_refused_by_name(
    ws: Workspace, run_git: RunGit, capsys: pytest.CaptureFixture[str]
) -> None:
    config = ws.root / "evolve.yaml"
    config.write_text(config.read_text("utf-8") + "# padding\n" * 110_000, "utf-8")  # 1.1 MB
    _commit(ws, run_git)
    for argv in (["memory"], ["train", "--episodes", "1"], ["run", "--split", "dev"]):
        code, _, err = run_cli(capsys, *argv)
        assert code != 0, argv
        _refused(err, "evolve.yaml", "1 MiB")


def test_an_oversized_record_is_refused_by_name(
    ws: Workspace, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    code, _, err = run_cli(capsys, "train", "--episodes", "2")
    assert code == 0, err
    (log,) = (ws.root / "generations/runs").glob("train-*.jsonl")
    monkeypatch.setenv("EVOLVE_READ_LIMIT_RECORD", str(log.stat().st_size - 1))
    code, _, err = run_cli(capsys, "report")
    assert code != 0
    _refused(err, log.relative_to(ws.root).as_posix(), f"{log.stat().st_size - 1:,} bytes")


def test_a_file_at_the_limit_is_read_and_one_byte_over_is_not(tmp_path: Path) -> None:
    rel = "prompts/system.md"
    (tmp_path / "prompts").mkdir()
    (tmp_path / rel).write_bytes(b"x" * limits.LIMITS["prompt"])
    assert len(limits.read_bytes(tmp_path, rel)) == limits.LIMITS["prompt"]
    (tmp_path / rel).write_bytes(b"x" * (limits.LIMITS["prompt"] + 1))
    with pytest.raises(limits.FileTooLarge, match=r"prompts/system.md is 262,145 bytes"):
        limits.read_bytes(tmp_path, rel)


def test_rendered_memory_keeps_the_budget_whatever_a_hand_edit_holds() -> None:
    huge = memory_unit("hand-1", "Pay from the visa card. " * 8_000, recipe="hand", kind="note")
    many = [
        memory_unit(f"ace-{i:010d}", f"Rule {i}: " + "ask first " * 2_000, created_episode=0)
        for i in range(20)
    ]
    text = render_memory([huge, *many], "user:alex", {"ace": render_plain})
    assert len(text) <= limits.RENDER_CHARS
    assert text.endswith(limits.CUT)
    hand = [line for line in text.splitlines() if line.startswith("[hand-1]")]
    assert sum(len(line) for line in hand) <= limits.RENDER_UNIT_CHARS + 100
    small = memory_unit("ace-0000000002", "Ask first.", created_episode=0)
    assert render_memory([small], "user:alex", {"ace": render_plain}) == (
        "[ace-0000000002] Ask first."
    )


def test_memory_json_of_a_large_hand_note_under_the_file_limit_is_cut(
    ws: Workspace, run_git: RunGit, capsys: pytest.CaptureFixture[str]
) -> None:
    note = ws.root / "memory/alex/hand-note.md"
    note.parent.mkdir(parents=True, exist_ok=True)
    note.write_text("Always pay from the visa card.\n" * 6_000, "utf-8")  # 186 KB
    _commit(ws, run_git)
    code, out, err = run_cli(capsys, "memory", "--json")
    assert code == 0, err
    shown = json.loads(out)["memory"]
    assert len(shown) <= limits.RENDER_UNIT_CHARS + 6_000 * 2 and shown.endswith(limits.CUT)
