"""The headline of an experiment cannot be won by doing nothing (issue 22, item 6).

An agent that completes no task violates no preference (no rule applies to an undone task),
so a headline on the violation rate alone ranks it perfect. The gap closed is measured on
the failure rate instead: failed checks over checks, where each episode is checked for its
task and for each preference that applied to it.
"""

from __future__ import annotations

import io
import json
import subprocess
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path
from typing import Any

import pytest
from compare_helpers import write_small

from conftest import GIT_ENV
from evolve.cli import main
from evolve.compare import build_results
from evolve.compare._spec import parse_experiment
from evolve.workspace import init_workspace

IDLE = """\
name: small
personas: [blair]
feedback: [instance]
orders: [0]
eval_seeds: [0, 1]
episodes: 2
splits: [dev]
bootstrap_samples: 200
arms:
  none: {}
  oracle: {}
  idle: {type: none, models: {agent: "idle_agent:factory"}}
"""


def _compare(root: Path, text: str) -> dict[str, Any]:
    write_small(root, text)
    for args in (["add", "experiments/small.yaml"], ["commit", "-qm", "experiment: small"]):
        subprocess.run(["git", *args], cwd=root, check=True, capture_output=True)
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        code = main(["compare", "experiments/small.yaml", "--jobs", "1", "--json"])
    assert code == 0, err.getvalue()
    doc: dict[str, Any] = json.loads(out.getvalue())
    return doc


def test_an_arm_whose_agent_does_nothing_ranks_below_none(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for key, value in GIT_ENV.items():
        monkeypatch.setenv(key, value)
    monkeypatch.delenv("EVOLVE_WORKSPACE", raising=False)
    root = tmp_path / "ws"
    init_workspace(root)
    monkeypatch.chdir(root)
    doc = _compare(root, IDLE)
    rows = {r["arm"]: r for r in doc["rows"]}
    idle, none = rows["idle"], rows["none"]
    # What a violation-only headline would have said: the idle agent violates nothing (no
    # rule applies to an undone task: its rate is 0 or undefined), fewer than none.
    assert not idle["violation_rate"]["value"] and none["violation_rate"]["value"] > 0.0
    assert idle["task_done"]["value"] == 0.0 and idle["success"]["value"] == 0.0
    assert idle["failure_rate"]["value"] == 1.0 > none["failure_rate"]["value"]
    # The headline ranks it below the floor: it closes a negative part of the gap.
    assert none["gap_closed"]["value"] == 0.0 and rows["oracle"]["gap_closed"]["value"] == 1.0
    assert idle["gap_closed"]["value"] < 0.0
    ranked = sorted(rows, key=lambda arm: rows[arm]["gap_closed"]["value"], reverse=True)
    assert ranked[-1] == "idle"
    assert doc["metric"] == "failure_rate" and "failure rate" in doc["gap_closed"]


def _episode(task: str, accepted: bool, done: bool, violations: list[str]) -> dict[str, Any]:
    return {"task": task, "family": "f", "seed": 0, "accepted": accepted,
            "task_success": done, "violations": violations,
            "applicable": violations or (["r"] if done else []), "tokens": 1, "cost": 0.0}  # fmt: skip


def test_the_gap_is_on_the_failure_rate_and_rates_are_shown_beside_task_done() -> None:
    exp = parse_experiment(IDLE, source="x.yaml", personas=["blair"], recipes=["ace"], splits=None)
    tasks = [f"t{i}" for i in range(4)]
    none = [_episode(t, False, True, ["r"]) for t in tasks[:2]]
    none += [_episode(t, True, True, []) for t in tasks[2:]]
    oracle = [_episode(t, True, True, []) for t in tasks]
    idle = [_episode(t, False, False, []) for t in tasks]
    cells = [{"persona": "blair", "results": [
        {"arm": arm, "type": "none", "persona": "blair", "memory_chars": 0,
         "splits": {"dev": eps}}
        for arm, eps in (("none", none), ("oracle", oracle), ("idle", idle))
    ]}]  # fmt: skip
    doc = build_results(exp, cells, base="0" * 40, duration_s=None)
    rows = {r["arm"]: r for r in doc["rows"]}
    # none: 2 of its 8 checks failed (two violations; every task done)
    assert rows["none"]["failure_rate"]["value"] == 0.25
    assert rows["idle"]["failure_rate"]["value"] == 1.0  # 4 undone tasks of 4 checks
    # (0.25 - 1.0) / (0.25 - 0.0)
    assert rows["idle"]["gap_closed"]["value"] == -3.0
    from evolve.compare import results_markdown

    md = results_markdown(doc)
    assert "| arm | gap closed % | spread | success % | task done % | violations % |" in md
    assert "| idle | -300 " in md
