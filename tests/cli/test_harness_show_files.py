"""`evolve harness show` on a workspace whose active variant is a model-written file no person
approved yet: it shows the file and its review state (it used to fail on "awaits review", so
the one command that says what the harness is could not say it)."""

from __future__ import annotations

import hashlib
import json

import pytest

from conftest import run_cli
from evolve.workspace import Workspace

NEWEST = "def retrieve(memory, task):\n    return '\\n'.join(memory.splitlines()[::-1])\n"


def _file(ws: Workspace, approve: bool) -> None:
    path = ws.root / "harness" / "memory" / "newest.py"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(NEWEST)
    (ws.root / "prompts" / "harness.yaml").write_text("memory: newest\n")
    if approve:
        digest = hashlib.sha256(NEWEST.encode()).hexdigest()
        (ws.root / "harness" / "approved.yaml").write_text(f"memory/newest: {digest}\n")


def test_an_unapproved_active_file_is_shown_as_awaiting_review(
    ws: Workspace, capsys: pytest.CaptureFixture[str]
) -> None:
    _file(ws, approve=False)
    code, out, err = run_cli(capsys, "harness", "show")
    assert code == 0, err
    assert "memory: newest (awaits review" in out
    assert (
        "newest: workspace file, awaits review (evolve review approve-variant memory newest)" in out
    )
    code, out, err = run_cli(capsys, "harness", "show", "--json")
    assert code == 0, err
    shown = json.loads(out)
    assert shown["memory"]["active"] == "newest"
    assert shown["memory"]["files"] == {"newest": {"approved": False}}
    assert shown["tools"]["files"] == {}


def test_an_approved_file_is_shown_as_approved(
    ws: Workspace, capsys: pytest.CaptureFixture[str]
) -> None:
    _file(ws, approve=True)
    code, out, err = run_cli(capsys, "harness", "show", "--json")
    assert code == 0, err
    assert json.loads(out)["memory"]["files"] == {"newest": {"approved": True}}
    code, out, err = run_cli(capsys, "harness", "show")
    assert "memory: newest\n" in out and "newest: workspace file, approved" in out
