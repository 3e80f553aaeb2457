"""A skills arm in an experiment: its batch evolver is paid for like the other models."""

from __future__ import annotations

import json

import pytest
from compare_helpers import write_small

from conftest import cli_json
from evolve.workspace import Workspace

pytestmark = pytest.mark.slow

SKILLS = """\
name: small
personas: [alex]
feedback: [instance]
orders: [0]
eval_seeds: [0]
episodes: 8
splits: [dev]
bootstrap_samples: 100
arms:
  skills: {}
"""


def test_a_skills_arm_counts_its_evolver_tokens_in_training(
    ws: Workspace, capsys: pytest.CaptureFixture[str]
) -> None:
    write_small(ws.root, SKILLS)
    cli_json(capsys, "compare", "experiments/small.yaml", "--jobs", "1")
    cells = ws.root / "generations" / "experiments" / "small" / "cells"
    cell = json.loads((cells / "train--skills--alex--instance--0.json").read_text("utf-8"))
    train = cell["results"][0]["train"]
    assert train["commits"] >= 1  # the evolver ran: batches were committed
    assert train["evolver_tokens"] > 0
    assert train["tokens"] == (
        train["agent_tokens"] + train["updater_tokens"] + train["evolver_tokens"]
    )
