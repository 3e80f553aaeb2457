"""`evolve demo`: it trains with corrective feedback, says so, and shows learning."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from conftest import run_cli
from evolve.workspace import Workspace


@pytest.mark.slow
def test_the_demo_trains_with_corrective_feedback_and_learns(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLUMNS", "200")
    target = tmp_path / "demo"
    code, out, err = run_cli(capsys, "demo", str(target), "--episodes", "4", "--generations", "1")
    assert code == 0, err
    assert "feedback corrective" in out
    assert "With instance feedback" in " ".join(out.split())
    ws = Workspace(target)
    assert ws.config.train.feedback == "corrective"
    assert not ws.store.dirty_paths(["evolve.yaml"])
    before, after = (float(v) for v in re.findall(r"violations (\d\.\d+)", out)[:2])
    assert after < before - 0.2  # corrective feedback teaches the format rules
