"""`evolve compare` on an environment without personas or an oracle (the files environment):
the experiment names the workspace's one user; an oracle arm is refused before anything runs."""

from __future__ import annotations

from pathlib import Path

import pytest

from evolve.compare import prepare
from evolve.compare._spec import ExperimentError
from evolve.workspace import Workspace, init_workspace

EXPERIMENT = """\
name: desk
personas: [{persona}]
feedback: [corrective]
orders: [0]
eval_seeds: [0]
episodes: 2
splits: [dev]
models: {{agent: mock, updater: mock}}
arms:
  none: {{type: none}}
  ace: {{recipe: ace}}
{extra}"""


def _workspace(tmp_path: Path) -> Workspace:
    return init_workspace(tmp_path / "ws", env="files")


def test_the_one_user_is_the_experiments_persona(tmp_path: Path) -> None:
    ws = _workspace(tmp_path)
    path = tmp_path / "desk.yaml"
    path.write_text(EXPERIMENT.format(persona="user", extra=""), "utf-8")
    prepared = prepare(ws, path)
    assert prepared.experiment.personas == ("user",) and prepared.jobs
    path.write_text(EXPERIMENT.format(persona="alex", extra=""), "utf-8")
    with pytest.raises(ExperimentError, match="unknown persona 'alex'; choose from user"):
        prepare(ws, path)


def test_an_oracle_arm_is_refused_where_the_environment_states_no_preferences(
    tmp_path: Path,
) -> None:
    ws = _workspace(tmp_path)
    path = tmp_path / "desk.yaml"
    path.write_text(EXPERIMENT.format(persona="user", extra="  oracle: {type: oracle}\n"), "utf-8")
    with pytest.raises(ExperimentError, match="arm 'oracle' is an oracle arm, but the environment"):
        prepare(ws, path)
