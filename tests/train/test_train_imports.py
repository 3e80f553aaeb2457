"""A writer imports what it runs: one `evolve train` imports the recipe it trains, the
environment it plays and the agent it uses, not their siblings (`sys.modules`, not time)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from evolve.workspace import Workspace

# What a plain training run of `ace` in the persona world, with evolve's own agent, never
# needs: the other recipes, the other environments, the command agent and its sandbox.
NEVER = (
    "evolve.updaters._reflexion", "evolve.updaters._rewrite", "evolve.updaters._tepa",
    "evolve.updaters._topl", "evolve.updaters._trace", "evolve.updaters._skills",
    "evolve.envs.files", "evolve.envs.appworld", "evolve.agent._command", "evolve.sandbox",
)  # fmt: skip


def _train_loaded(root: Path, *args: str) -> tuple[dict[str, object], list[str]]:
    """The report of `evolve train --json ARGS` run in a fresh process, and the modules it
    had loaded when it ended."""
    code = (
        "import sys\n"
        "from evolve.cli._main import main\n"
        f"rc = main(['train', '--json', *{list(args)!r}])\n"
        "print('LOADED:' + ' '.join(sorted(sys.modules)))\n"
        "sys.exit(rc)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=root, capture_output=True, text=True, env=os.environ
    )
    assert done.returncode == 0, done.stderr
    out, loaded = done.stdout.rsplit("LOADED:", 1)
    return json.loads(out), loaded.split()


def test_training_imports_only_its_recipe_environment_and_agent(workspace: Workspace) -> None:
    report, loaded = _train_loaded(workspace.root, "--episodes", "2", "--seed", "3")
    assert report["recipe"] == "ace" and len(report["outcomes"]) == 2  # type: ignore[arg-type]
    assert "evolve.updaters._ace" in loaded and "evolve.envs.persona_world" in loaded
    needless = [m for m in loaded if m.startswith(NEVER)]
    assert needless == [], needless


def test_an_agent_command_still_loads_the_command_agent(workspace: Workspace) -> None:
    """The sandbox is imported where `agent.command` names a program (and only there)."""
    from evolve.agent._command import CommandAgent
    from evolve.evaluate._setup import command_agent_of

    cfg = workspace.config.agent
    assert command_agent_of(cfg, workspace.root) is None
    named = cfg.model_copy(update={"command": ("python3", "agent.py")})
    agent = command_agent_of(named, workspace.root)
    assert isinstance(agent, CommandAgent) and agent.argv == ("python3", "agent.py")
