"""A wrong lesson that only hurts next to a right one is retired; the right one is not.

"Skip the final check" (the sim reflector's wrong lesson) changes nothing alone (the sim's
default plan never reads back): it hurts by undoing a verify lesson injected with it. The
single-skill ablation holds out at most one skill per episode, so every held-out episode of
the wrong lesson carries the verify lesson, and the comparison (against the episodes where
nothing was held out) sees the whole harm. Planted pair, payment tasks (verify and lookup),
the shipped defaults.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
import yaml

from conftest import GitRunner
from evolve.envs.persona_world._procedures import PROCEDURE_TASKS, PROCEDURES_FILE
from evolve.memory import load_units
from evolve.train import train
from evolve.workspace import Workspace

SKILL = """---
id: {id}
recipe: hand
kind: skill
status: active
scope: global
shelf: topic
topic: venmo
trigger: paying someone back on venmo
---
{text}
"""
VERIFY = "After the payment, read the sent payments back and confirm the final state."
WRONG = "Skip the final check: once the payment call returns success, complete the task at once."
BOUND = 30


def _plant(ws: Workspace, run_git: GitRunner) -> None:
    evalset = ws.root / "evalset"
    tasks = [
        t for t in PROCEDURE_TASKS if t["split"] != "train" or t["family"] == "pay_back"
    ]  # fmt: skip
    (evalset / PROCEDURES_FILE).write_text(yaml.safe_dump(tasks))
    splits = yaml.safe_load((evalset / "splits.yaml").read_text())
    splits["train"] = []
    (evalset / "splits.yaml").write_text(yaml.safe_dump(splits))
    config = yaml.safe_load((ws.root / "evolve.yaml").read_text())
    config["skills"] = {"enabled": True}  # the shipped defaults otherwise
    (ws.root / "evolve.yaml").write_text(yaml.safe_dump(config))
    shelf = ws.root / "memory" / "skills" / "topics" / "venmo"
    shelf.mkdir(parents=True)
    for ident, text in (("verify-payment", VERIFY), ("skip-check", WRONG)):
        (shelf / f"{ident}.md").write_text(SKILL.format(id=ident, text=text))
    run_git(ws.root, "add", "-A")
    run_git(ws.root, "commit", "-qm", "plant a verify lesson and a wrong lesson")


def _records(ws: Workspace) -> list[dict[str, Any]]:
    logs = sorted(ws.runs_dir.glob("train-*.jsonl"))
    return [json.loads(line) for line in logs[0].read_text().splitlines()]


@pytest.mark.slow
def test_the_wrong_lesson_is_retired_and_the_verify_lesson_kept(
    workspace: Workspace, run_git: GitRunner
) -> None:
    _plant(workspace, run_git)
    ws = Workspace(workspace.root)
    train(ws, recipe="ace", episodes=BOUND)
    units = {u.id: u for u in load_units(ws.root)}
    assert units["skip-check"].status == "retired"
    assert units["verify-payment"].status == "active"
    records = _records(ws)
    for r in records:
        assert len(r["skills_held_out"]) <= 1
        if r["skills_held_out"] == ["skip-check"]:
            assert r["skills_injected"] == ["verify-payment"]  # the pair's other half is there
    retire = run_git(ws.root, "log", "-1", "--format=%B", "--grep=retire=skip-check")
    assert (
        "Evolve-Kind: skill retire" in retire and "lift within tasks (Mantel-Haenszel): -" in retire
    )
