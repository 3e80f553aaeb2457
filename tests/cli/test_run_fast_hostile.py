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


def _stream(encoding: str, errors: str = "strict") -> tuple[io.TextIOWrapper, io.BytesIO]:
    raw = io.BytesIO()
    return io.TextIOWrapper(raw, encoding=encoding, errors=errors), raw


def test_a_text_report_to_an_ascii_stdout_is_left_to_click_with_nothing_written(
    ws: Workspace, monkeypatch: pytest.MonkeyPatch
) -> None:
    # PYTHONIOENCODING=ascii: rich draws its table in ASCII there; the fast path's Unicode
    # box failed on the write, after the run log was kept.
    out, raw = _stream("ascii")
    monkeypatch.setattr(sys, "stdout", out)
    before = _logs(ws.root)
    assert _fast.run(["run", "--split", "dev"]) is None
    assert _logs(ws.root) == before
    assert raw.getvalue() == b""


def test_a_warning_naming_a_non_ascii_path_on_an_ascii_stderr_is_left_to_click(
    ws: Workspace, monkeypatch: pytest.MonkeyPatch
) -> None:
    (ws.root / "prompts" / "caf\u00e9.txt").write_text("x\n", encoding="utf-8")
    err, raw = _stream("ascii", "backslashreplace")  # as Python's own stderr
    monkeypatch.setattr(sys, "stderr", err)
    before = _logs(ws.root)
    assert _fast.run(["run", "--split", "dev", "--json"]) is None
    assert _logs(ws.root) == before
    assert raw.getvalue() == b""


def test_utf8_streams_still_take_the_fast_path(
    ws: Workspace, monkeypatch: pytest.MonkeyPatch
) -> None:
    (ws.root / "prompts" / "caf\u00e9.txt").write_text("x\n", encoding="utf-8")
    out, out_raw = _stream("utf-8")
    err, err_raw = _stream("utf-8")
    monkeypatch.setattr(sys, "stdout", out)
    monkeypatch.setattr(sys, "stderr", err)
    assert _fast.run(["run", "--split", "dev"]) == 0
    out.flush()
    err.flush()
    assert "\u2503 rule " in out_raw.getvalue().decode("utf-8")
    assert "caf\u00e9.txt" in err_raw.getvalue().decode("utf-8")


class _GoneReader(io.StringIO):
    """A stdout whose reader went away (`evolve run ... | head`)."""

    def write(self, text: str) -> int:
        raise BrokenPipeError(32, "Broken pipe")


@pytest.mark.parametrize("argv", [["run", "--split", "dev", "--json"], ["run", "--split", "dev"]])
def test_a_reader_that_went_away_ends_the_command_as_click_does(
    ws: Workspace, monkeypatch: pytest.MonkeyPatch, argv: list[str]
) -> None:
    monkeypatch.setattr(sys, "stdout", _GoneReader())
    assert _fast.run(argv) == 1  # no BrokenPipeError traceback
