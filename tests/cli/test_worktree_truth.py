"""One truth for what the agent sees: `run` warns on uncommitted memory/ or prompts/, and
`train` refuses a dirty prompts/ as it refuses a dirty memory/ (issue 8 item 7)."""

from __future__ import annotations

import json
from collections.abc import Callable

import pytest

from conftest import run_cli as _cli
from conftest import workspace_state
from evolve.errors import EvolveError
from evolve.train import train
from evolve.workspace import Workspace

RunGit = Callable[..., str]


def _edit_prompt(ws: Workspace) -> str:
    path = ws.root / "prompts" / "system.md"
    path.write_text(path.read_text("utf-8") + "\nAlways be brief.\n", encoding="utf-8")
    return "prompts/system.md"


@pytest.mark.parametrize("folder", ["memory", "prompts"])
def test_run_warns_on_uncommitted_memory_or_prompts(
    ws: Workspace, capsys: pytest.CaptureFixture[str], folder: str
) -> None:
    if folder == "prompts":
        rel = _edit_prompt(ws)
    else:
        rel = "memory/alex/draft.md"
        (ws.root / rel).parent.mkdir(parents=True, exist_ok=True)
        (ws.root / rel).write_text("Payments are private.\n", encoding="utf-8")
    code, out, err = _cli(capsys, "run", "--split", "dev", "--runs", "1", "--json")
    assert code == 0, err
    assert "warning:" in err and rel in err and "uncommitted" in err
    assert json.loads(out)["uncommitted"] == [rel]


def test_run_on_a_clean_tree_warns_about_nothing(
    ws: Workspace, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = _cli(capsys, "run", "--split", "dev", "--runs", "1", "--json")
    assert code == 0 and "warning" not in err
    assert json.loads(out)["uncommitted"] == []


def test_train_refuses_dirty_prompts_like_dirty_memory(
    ws: Workspace, run_git: RunGit, capsys: pytest.CaptureFixture[str]
) -> None:
    rel = _edit_prompt(ws)
    before = workspace_state(ws.root, run_git)
    with pytest.raises(EvolveError) as info:
        train(ws, recipe="ace", episodes=3)
    assert str(info.value).startswith("prompts/ has uncommitted changes") and rel in str(info.value)
    code, out, err = _cli(capsys, "train", "--recipe", "ace", "--episodes", "3")
    assert code == 1 and out == ""
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert len(lines) == 1 and "prompts/system.md" in lines[0] and "commit or discard" in lines[0]
    assert workspace_state(ws.root, run_git) == before
