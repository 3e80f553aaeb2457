"""Example (b) of issue 24 end to end: the agent is a separate program (`examples/command_agent/`,
in JavaScript when Node.js is here, and its standalone Python twin), named in `evolve.yaml`;
`evolve train` and `evolve run` play every episode through it on persona_world."""

from __future__ import annotations

import json
import shutil
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from conftest import run_cli
from evolve.workspace import Workspace

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "command_agent"
RunGit = Callable[..., str]


def _use(ws: Workspace, run_git: RunGit, program: str, command: list[str]) -> None:
    shutil.copy(EXAMPLE / program, ws.root / program)
    config = ws.root / "evolve.yaml"
    text = config.read_text(encoding="utf-8")
    assert "\nagent:\n" in text
    text = text.replace("\nagent:\n", f"\nagent:\n  command: {json.dumps(command)}\n", 1)
    config.write_text(text, encoding="utf-8")
    run_git(ws.root, "add", "-A")
    run_git(ws.root, "commit", "-q", "-m", "agent: a command-mode agent")


def _train_and_run(ws: Workspace, capsys: pytest.CaptureFixture[str], name: str) -> None:
    code, out, err = run_cli(capsys, "train", "--episodes", "2", "--json")
    assert code == 0, err
    trained = json.loads(out)
    assert len(trained["outcomes"]) == 2
    assert all(o.get("failed") is None for o in trained["outcomes"]), trained["outcomes"]

    code, out, err = run_cli(capsys, "run", "--split", "dev", "--json")
    assert code == 0, err
    report = json.loads(out)
    assert report["model"] == name and report["episodes"] == 20
    assert report["failed_episodes"] == 0
    # Its calls were replayed in the world: the note tasks (5 of 20) it can do succeed.
    assert report["task_success_rate"] == pytest.approx(0.25)
    episodes = [
        json.loads(line)
        for line in (ws.root / report["log_dir"] / "episodes.jsonl")
        .read_text(encoding="utf-8")
        .splitlines()
    ]
    assert {e["model"] for e in episodes} == {name}
    note = next(e for e in episodes if e["task_id"].startswith("note_"))
    assert [t["call"]["tool"] for t in note["turns"]] == [
        "simple_note__create_note", "supervisor__complete_task",
    ]  # fmt: skip


def test_train_and_run_with_a_python_program_as_the_agent(
    ws: Workspace, run_git: RunGit, capsys: pytest.CaptureFixture[str]
) -> None:
    _use(ws, run_git, "agent.py", [sys.executable, "agent.py"])
    _train_and_run(ws, capsys, f"command:{Path(sys.executable).name}")


@pytest.mark.skipif(shutil.which("node") is None, reason="Node.js is not installed here")
def test_train_and_run_with_a_javascript_program_as_the_agent(
    ws: Workspace, run_git: RunGit, capsys: pytest.CaptureFixture[str]
) -> None:
    _use(ws, run_git, "agent.mjs", ["node", "agent.mjs"])
    _train_and_run(ws, capsys, "command:node")
