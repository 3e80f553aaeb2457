"""`evolve run`'s fast path under hostile conditions: streams that are not UTF-8."""

from __future__ import annotations

import io
import sys
from pathlib import Path

import pytest

from evolve.cli import _fast
from evolve.workspace import Workspace


def _logs(root: Path) -> set[Path]:
    runs = root / "generations" / "runs"
    return set(runs.iterdir()) if runs.is_dir() else set()


def _ascii(errors: str) -> io.TextIOWrapper:
    return io.TextIOWrapper(io.BytesIO(), encoding="ascii", errors=errors)


def test_a_text_report_to_an_ascii_stdout_is_left_to_click_with_nothing_written(
    ws: Workspace, monkeypatch: pytest.MonkeyPatch
) -> None:
    # PYTHONIOENCODING=ascii: rich draws its table in ASCII there; the fast path's Unicode
    # box failed on the write, after the run log was kept.
    out = _ascii("strict")
    monkeypatch.setattr(sys, "stdout", out)
    before = _logs(ws.root)
    assert _fast.run(["run", "--split", "dev"]) is None
    assert _logs(ws.root) == before
    assert out.buffer.getvalue() == b""  # type: ignore[attr-defined]


def test_a_warning_naming_a_non_ascii_path_on_an_ascii_stderr_is_left_to_click(
    ws: Workspace, monkeypatch: pytest.MonkeyPatch
) -> None:
    (ws.root / "prompts" / "caf\u00e9.txt").write_text("x\n", encoding="utf-8")
    err = _ascii("backslashreplace")  # as Python's own stderr
    monkeypatch.setattr(sys, "stderr", err)
    before = _logs(ws.root)
    assert _fast.run(["run", "--split", "dev", "--json"]) is None
    assert _logs(ws.root) == before
    assert err.buffer.getvalue() == b""  # type: ignore[attr-defined]


def test_utf8_streams_still_take_the_fast_path(
    ws: Workspace, monkeypatch: pytest.MonkeyPatch
) -> None:
    (ws.root / "prompts" / "caf\u00e9.txt").write_text("x\n", encoding="utf-8")
    out = io.TextIOWrapper(io.BytesIO(), encoding="utf-8")
    err = io.TextIOWrapper(io.BytesIO(), encoding="utf-8")
    monkeypatch.setattr(sys, "stdout", out)
    monkeypatch.setattr(sys, "stderr", err)
    assert _fast.run(["run", "--split", "dev"]) == 0
    assert "\u2503 rule " in out.buffer.getvalue().decode("utf-8")  # type: ignore[attr-defined]
    assert "caf\u00e9.txt" in err.buffer.getvalue().decode("utf-8")  # type: ignore[attr-defined]
