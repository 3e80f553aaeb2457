"""An agent kept in the workspace: `agent: {name: "mod:factory", path: [folder]}` finds the
module in a protected folder of the workspace, and every command that plays episodes (run,
train, the gate and its dry run) plays it; a folder the evolving side could edit, or one that
leads out of the workspace, is refused in one sentence before anything runs."""

from __future__ import annotations

import json
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from conftest import GitRunner, one_sentence, run_cli
from evolve.errors import ConfigError
from evolve.workspace import CONFIG_NAME, Workspace, parse_config

# The module a user commits beside their workspace's evalset: it plays evolve's own loop over
# the role's model and writes one line per episode it played into a file the test names.
AGENT = textwrap.dedent(
    """
    import os

    from evolve.agent import ModelAgent


    class Mine:
        name = "agent-in-the-workspace"

        def __init__(self, context):
            self.inner = ModelAgent(context.llm)

        def run(self, request, world):
            with open(os.environ["BYO_PLAYED"], "a", encoding="utf-8") as out:
                out.write(request.task_id + "\\n")
            return self.inner.run(request, world)


    def make(context):
        return Mine(context)
    """
)


@pytest.fixture
def played(
    ws: Workspace, run_git: GitRunner, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> Iterator[Path]:
    """The workspace names `<module>:make` kept in its folder `bots/`; the file each played
    episode is written to."""
    monkeypatch.setattr(sys, "path", list(sys.path))  # the folder added is taken off after
    module = f"byo_ws_{tmp_path.name.replace('-', '_')}"
    (ws.root / "bots").mkdir()
    (ws.root / "bots" / f"{module}.py").write_text(AGENT, "utf-8")
    _configure(ws, run_git, {"name": f"{module}:make", "path": ["bots"]}, protect="bots/")
    out = tmp_path / "played.txt"
    monkeypatch.setenv("BYO_PLAYED", str(out))
    yield out
    sys.modules.pop(module, None)


def _configure(
    ws: Workspace, run_git: GitRunner, agent: dict[str, object], protect: str | None = None
) -> None:
    path = ws.root / CONFIG_NAME
    data = yaml.safe_load(path.read_text("utf-8"))
    data["agent"] = {**agent, "max_turns": 12}
    data["gate"].update(train_episodes=2, runs=1)
    if protect:
        data["protected"].append(protect)
    path.write_text(yaml.safe_dump(data, sort_keys=False), "utf-8")
    run_git(ws.root, "add", "-A")
    run_git(ws.root, "commit", "-q", "-m", "test: an agent of the workspace")


def _lines(path: Path) -> list[str]:
    return path.read_text("utf-8").splitlines() if path.exists() else []


def test_the_config_takes_workspace_folders_only() -> None:
    assert parse_config("agent: {name: 'a:b', path: [bots, lib/x]}\n").agent.path == (
        "bots",
        "lib/x",
    )
    assert parse_config("version: 1\n").agent.path == ()
    for bad in ("/abs", "../out", "a/../../b", ""):
        with pytest.raises(ConfigError, match=r"agent.path"):
            parse_config(f"agent: {{path: [{bad!r}]}}\n")


def test_run_train_and_the_gate_play_the_agent_kept_in_the_workspace(
    ws: Workspace, run_git: GitRunner, played: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = run_cli(capsys, "run", "--split", "dev", "--json")
    assert code == 0, err
    report = json.loads(out)
    assert report["model"] == "agent-in-the-workspace"
    assert len(_lines(played)) == report["episodes"] > 0

    before = len(_lines(played))
    code, out, err = run_cli(capsys, "train", "--episodes", "2", "--json")
    assert code == 0, err
    assert len(_lines(played)) == before + 2

    before = len(_lines(played))
    head = run_git(ws.root, "rev-parse", "HEAD")
    code, out, err = run_cli(capsys, "evolve", "--generations", "1", "--dry-run", "--json")
    assert code == 0, err
    assert run_git(ws.root, "rev-parse", "HEAD") == head
    gated = len(_lines(played)) - before
    assert gated > 2  # training episodes, then the base and the candidate scored on dev

    before = len(_lines(played))
    code, out, err = run_cli(capsys, "evolve", "--generations", "1", "--json")
    assert code == 0, err
    assert json.loads(out)["generations"][0]["verdict"]
    assert len(_lines(played)) - before == gated


def test_a_folder_the_evolving_side_could_edit_is_refused(
    ws: Workspace,
    run_git: GitRunner,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setattr(sys, "path", list(sys.path))
    (ws.root / "prompts" / "bot.py").write_text(AGENT, "utf-8")
    _configure(ws, run_git, {"name": "bot:make", "path": ["prompts"]})
    code, _, err = run_cli(capsys, "run", "--split", "dev")
    assert code != 0
    assert "agent.path 'prompts' is not protected" in one_sentence(err)
    assert str(ws.root / "prompts") not in sys.path


def test_a_folder_that_leads_out_of_the_workspace_is_refused(
    ws: Workspace,
    run_git: GitRunner,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setattr(sys, "path", list(sys.path))
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    (outside / "bot.py").write_text(AGENT, "utf-8")
    (ws.root / "bots").symlink_to(outside, target_is_directory=True)
    _configure(ws, run_git, {"name": "bot:make", "path": ["bots"]}, protect="bots/")
    code, _, err = run_cli(capsys, "run", "--split", "dev")
    assert code != 0
    assert "agent.path 'bots' leads out of the workspace" in one_sentence(err)
    assert str(outside) not in sys.path


def test_a_missing_folder_is_refused(
    ws: Workspace,
    run_git: GitRunner,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setattr(sys, "path", list(sys.path))
    _configure(ws, run_git, {"name": "bot:make", "path": ["bots"]}, protect="bots/")
    code, _, err = run_cli(capsys, "train", "--episodes", "1")
    assert code != 0
    assert "agent.path 'bots' is not a folder of the workspace" in one_sentence(err)
