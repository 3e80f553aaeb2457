"""The capability brief: training failures ranked into a module order, with reasons; hostile
records skipped, never trusted."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from evolve.errors import PathRefused
from evolve.research import GAPS, MODULES, brief_of, capability_brief
from evolve.workspace import Workspace


def record(
    *,
    violations: dict[str, str] | None = None,
    failed_calls: int = 0,
    bad_replies: int = 0,
    completed: bool = True,
    accepted: bool | None = None,
    family: str = "fam",
    split: str = "train",
) -> dict[str, Any]:
    turns: list[dict[str, Any]] = [{"call": {"tool": "t", "args": {}, "ok": True}}]
    turns += [{"call": {"tool": "t", "args": {}, "ok": False, "error": "x"}}] * failed_calls
    turns += [{"call": None, "bad_reply": "unparseable"}] * bad_replies
    ok = not violations and completed if accepted is None else accepted
    return {
        "split": split,
        "family": family,
        "violations": violations or {},
        "turns": turns,
        "accepted": ok,
        "final_state": {"completed": completed},
        "hit_turn_limit": False,
        "failure": None if completed else "not done",
        "model_error": None,
    }


def test_no_records_keep_the_harness_order() -> None:
    brief = brief_of([])
    assert brief.module_order == list(MODULES) and brief.text == "" and brief.episodes == 0


def test_recurring_violations_point_at_memory_then_context() -> None:
    records = [record(violations={"habitual_card": "x"}, family=f"f{i}") for i in range(3)]
    records.append(record(violations={"once_only": "x"}, family="g"))
    brief = brief_of(records)
    assert brief.module_order[:2] == ["memory", "context"]
    assert brief.scores["memory"] == pytest.approx(3 / 4)  # once_only does not recur
    assert "habitual_card (3)" in brief.reasons["memory"][0]
    # Broken again after its first time: two lapses, at half weight, for the workflow.
    assert brief.module_order[2] == "workflow"
    assert brief.scores["workflow"] == pytest.approx(0.5 * 2 / 4)
    assert brief.reasons["workflow"][0].startswith("2 violations of a rule already broken")
    assert brief.text.startswith(GAPS["memory"])


def test_failed_calls_point_at_tools() -> None:
    brief = brief_of([record(failed_calls=2, bad_replies=1, family=f"f{i}") for i in range(3)])
    assert brief.module_order[0] == "tools"
    assert "6 failed tool calls, 3 unusable replies" in brief.reasons["tools"][0]


def test_unfinished_tasks_point_at_workflow_and_repeated_families_at_skills() -> None:
    unfinished = [record(completed=False, family=f"f{i}") for i in range(4)]
    assert brief_of(unfinished).module_order[0] == "workflow"
    repeated = [record(accepted=False, family="pay") for _ in range(3)]
    brief = brief_of(repeated)
    assert brief.module_order[0] == "skills" and "pay (3)" in brief.reasons["skills"][0]


def _runs(root: Path) -> Path:
    folder = root / "generations" / "runs"
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def test_the_workspace_brief_reads_training_records_only(workspace: Workspace) -> None:
    runs = _runs(workspace.root)
    lines = [json.dumps(record(failed_calls=3, family=f"f{i}")) for i in range(4)]
    lines += ["not json", "[1, 2]", json.dumps({"split": "train"}), "{" * 100_000]
    (runs / "train-alex-ace-0.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    dev = [json.dumps(record(violations={"r": "x"}, split="dev", family="d"))] * 9
    (runs / "train-dev-mixed.jsonl").write_text("\n".join(dev) + "\n", encoding="utf-8")
    (runs / "run-20260101.jsonl").write_text("\n".join(dev) + "\n", encoding="utf-8")
    brief = capability_brief(workspace)
    assert brief.episodes == 4 and brief.skipped == 4
    assert brief.module_order[0] == "tools" and brief.scores["memory"] == 0


def test_a_records_folder_linked_out_is_refused(workspace: Workspace, tmp_path: Path) -> None:
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    (outside / "train-x.jsonl").write_text(json.dumps(record()) + "\n", encoding="utf-8")
    (workspace.root / "generations").mkdir(exist_ok=True)
    os.symlink(outside, workspace.root / "generations" / "runs")
    with pytest.raises(PathRefused):
        capability_brief(workspace)


def test_a_trained_workspace_has_a_brief(workspace: Workspace) -> None:
    from evolve.cli import main

    assert main(["-C", str(workspace.root), "train", "--episodes", "6"]) == 0
    brief = capability_brief(Workspace(workspace.root))
    assert brief.episodes == 6 and sorted(brief.module_order) == sorted(MODULES)
    assert brief.to_json()["module_order"] == brief.module_order
