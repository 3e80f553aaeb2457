"""An arm of an experiment may name its own agent (`agent: module:factory`); an arm that names
none is played by the workspace's. The arm's agent plays its training and its scoring; an
unknown one is refused in one sentence before anything runs; an experiment whose arms name no
agent keeps the digest it had before arms could (its results stay valid)."""

from __future__ import annotations

import io
import json
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path
from typing import Any

import pytest
import yaml
from compare_helpers import write_small

from conftest import GIT_ENV
from evolve.cli import main
from evolve.compare import parse_experiment
from evolve.envs import make_env
from evolve.workspace import CONFIG_NAME, init_workspace

# An agent that ends every task at once, calling nothing, and notes each episode it played.
IDLE = textwrap.dedent(
    """
    import os

    from evolve.agent import Trace


    class Idle:
        name = "idle-agent"

        def run(self, request, world):
            with open(os.environ["ARM_PLAYED"], "a", encoding="utf-8") as out:
                out.write(request.task_id + "\\n")
            return Trace()


    def make(context):
        return Idle()
    """
)

GOOD = """
name: t
personas: [alex]
feedback: [instance, corrective]
orders: [0, 1]
arms:
  none: {}
  oracle: {}
  fixed: {type: fixed, match: ace}
  ace: {}
  tepa-small: {recipe: tepa, caps: {chars: 80}}
"""


def _parse(text: str) -> Any:
    return parse_experiment(text, source="x.yaml", personas=["alex"], recipes=["ace", "tepa"])


def test_an_arm_names_its_agent_and_plain_experiments_keep_their_digest() -> None:
    exp = _parse(GOOD)
    assert all(arm.agent is None for arm in exp.arms.values())
    assert exp.digest() == "f856134951c986aa"  # as computed before arms could name an agent
    mine = _parse(GOOD.replace("  ace: {}", "  ace: {agent: 'pkg.bot:make'}"))
    assert mine.arms["ace"].agent == "pkg.bot:make" and mine.arms["none"].agent is None
    assert mine.digest() != exp.digest()
    # the results show the plan as before, an arm's agent only where it names one
    assert all("agent" not in arm for arm in exp.document()["arms"].values())
    assert mine.document()["arms"]["ace"]["agent"] == "pkg.bot:make"
    assert "agent" not in mine.document()["arms"]["none"]


def _compare(root: Path, text: str) -> tuple[int, str, str]:
    write_small(root, text)
    for args in (["add", "-A"], ["commit", "-qm", "experiment: small"]):
        subprocess.run(["git", *args], cwd=root, check=True, capture_output=True)
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        code = main(["compare", "experiments/small.yaml", "--jobs", "1", "--json"])
    return code, out.getvalue(), err.getvalue()


@pytest.fixture
def root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A workspace keeping an idle agent in its protected folder `bots/` (agent.path), its
    own agent still evolve's (the sim)."""
    for key, value in GIT_ENV.items():
        monkeypatch.setenv(key, value)
    monkeypatch.delenv("EVOLVE_WORKSPACE", raising=False)
    monkeypatch.setattr(sys, "path", list(sys.path))
    monkeypatch.setenv("ARM_PLAYED", str(tmp_path / "played.txt"))
    ws = tmp_path / "ws"
    init_workspace(ws)
    (ws / "bots").mkdir()
    (ws / "bots" / "arm_idle.py").write_text(IDLE, "utf-8")
    config = yaml.safe_load((ws / CONFIG_NAME).read_text("utf-8"))
    config["agent"]["path"] = ["bots"]
    config["protected"].append("bots/")
    (ws / CONFIG_NAME).write_text(yaml.safe_dump(config, sort_keys=False), "utf-8")
    monkeypatch.chdir(ws)
    yield ws
    sys.modules.pop("arm_idle", None)


EXPERIMENT = """\
name: small
personas: [blair]
feedback: [instance]
orders: [0]
eval_seeds: [0]
episodes: 2
splits: [dev]
bootstrap_samples: 200
arms:
  none: {}
  oracle: {}
  idle: {type: none, agent: "arm_idle:make"}
  ace: {}
  ace-idle: {recipe: ace, agent: "arm_idle:make"}
"""


def test_each_arm_is_played_by_its_own_agent_else_the_workspaces(root: Path) -> None:
    code, out, err = _compare(root, EXPERIMENT)
    assert code == 0, err
    rows = {r["arm"]: r for r in json.loads(out)["rows"]}
    # The idle agent does no task; evolve's own (the sim) does some, with or without memory.
    assert rows["idle"]["task_done"]["value"] == 0.0 < rows["none"]["task_done"]["value"]
    assert rows["ace-idle"]["task_done"]["value"] == 0.0 < rows["ace"]["task_done"]["value"]
    played = (root.parent / "played.txt").read_text("utf-8").splitlines()
    dev = len(make_env("persona_world", root / "evalset").tasks("dev"))
    # idle scored dev once; ace-idle trained 2 episodes, then scored dev once
    assert len(played) == 2 * dev + 2


def test_an_unknown_arm_agent_is_refused_before_anything_runs(root: Path) -> None:
    text = EXPERIMENT.replace('agent: "arm_idle:make"}', 'agent: "arm_idle:nosuch"}', 1)
    code, _, err = _compare(root, text)
    assert code != 0
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1 and "arm 'idle'" in lines[0] and "nosuch" in lines[0], err
    assert not (root.parent / "played.txt").exists()
    assert not (root / "generations" / "experiments" / "small" / "cells").exists()
