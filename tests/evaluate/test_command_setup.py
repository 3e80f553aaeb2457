"""Where episodes are set up (run, the gate, compare), `agent: {command: ...}` names who plays."""

from __future__ import annotations

from collections.abc import Callable

from evolve.agent._command import CommandAgent
from evolve.evaluate import episode_setup, open_env
from evolve.evaluate._settings import load
from evolve.workspace import Workspace

RunGit = Callable[..., str]


def test_the_setup_carries_the_command_agent_only_when_one_is_named(
    workspace: Workspace, run_git: RunGit
) -> None:
    env = open_env(workspace)
    assert episode_setup(workspace, env, "alex").agent is None
    git_dir = str(workspace.root / ".git")
    assert load(str(workspace.root), git_dir)["agent_command"] is False
    config = workspace.root / "evolve.yaml"
    text = config.read_text(encoding="utf-8").replace(
        "\nagent:\n", '\nagent:\n  command: ["node", "agent.mjs"]\n  env: [TOKEN]\n', 1
    )
    config.write_text(text, encoding="utf-8")
    run_git(workspace.root, "commit", "-qam", "a command agent")
    ws = Workspace.find(workspace.root)
    agent = episode_setup(ws, open_env(ws), "alex").agent
    assert isinstance(agent, CommandAgent)
    assert agent.argv == ("node", "agent.mjs") and agent.env_allow == ("TOKEN",)
    assert agent.name == "command:node"
    # `evolve run`'s fast path sees it and leaves the run to the full command.
    assert load(str(ws.root), git_dir)["agent_command"] is True
