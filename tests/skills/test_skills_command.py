"""`evolve skills [--json]` and the report's skills table over hand-written skill files."""

from __future__ import annotations

import pytest

from conftest import GitRunner, cli_json, run_cli
from evolve.workspace import Workspace
from factories import VERIFY_AFTER

TOPIC = """---
id: venmo-lookup
recipe: hand
kind: skill
status: retired
scope: global
shelf: topic
topic: venmo
trigger: paying someone on venmo
reason: retired by the scoreboard
---
Look up the past payments before paying.
"""
COUNTERS = """venmo-lookup:
  held_out: 3
  held_out_pass: 3
  injected: 4
  injected_pass: 0
"""


def _plant(ws: Workspace, run_git: GitRunner) -> None:
    general = ws.root / "memory" / "skills" / "general"
    topic = ws.root / "memory" / "skills" / "topics" / "venmo"
    general.mkdir(parents=True)
    topic.mkdir(parents=True)
    (general / "verify-after.md").write_text(VERIFY_AFTER)
    (topic / "venmo-lookup.md").write_text(TOPIC)
    (topic / "_counters.yaml").write_text(COUNTERS)
    # the per-task record: two tasks with both arms, one task with the injected arm only
    (ws.root / "memory" / "skills" / "_strata.yaml").write_text(
        "venmo-lookup:\n  t1: [2, 0, 1, 1]\n  t2: [1, 0, 2, 2]\n  t3: [1, 0, 0, 0]\n"
    )
    (ws.root / "memory" / "skills" / "_failed_tasks.yaml").write_text("- t1\n- t2\n")
    run_git(ws.root, "add", "-A")
    run_git(ws.root, "commit", "-qm", "hand-written skills")


def test_skills_json_lists_every_skill_with_its_scoreboard(
    ws: Workspace, run_git: GitRunner, capsys: pytest.CaptureFixture[str]
) -> None:
    assert cli_json(capsys, "skills") == {"skills": [], "confidence": 0.9, "failed_tasks": []}
    _plant(ws, run_git)
    data = cli_json(capsys, "skills")
    rows = {r["id"]: r for r in data["skills"]}
    assert list(rows) == ["verify-after", "venmo-lookup"]  # general shelf first
    topic = rows["venmo-lookup"]
    assert (topic["shelf"], topic["topic"], topic["where"]) == ("topic", "venmo", "topics/venmo")
    assert topic["status"] == "retired" and topic["trigger"] == "paying someone on venmo"
    assert (topic["injections"], topic["held_out"]) == (4, 3)
    assert (topic["pass_rate_injected"], topic["pass_rate_held_out"], topic["lift"]) == (
        0.0,
        1.0,
        -1.0,
    )
    assert topic["interval"][1] < 0 and topic["confidence"] == 0.9
    within = topic["stratified"]  # what retirement decides on: tasks t1 and t2
    assert (within["tasks"], within["injected"], within["held_out"]) == (2, 3, 3)
    assert within["lift"] == -1.0 and within["interval"][1] < 0
    assert data["failed_tasks"] == ["t1", "t2"]
    general = rows["verify-after"]
    assert general["injections"] == 0 and general["lift"] is None and general["interval"] is None

    code, out, err = run_cli(capsys, "skills")
    assert code == 0 and "venmo-lookup  topics/venmo  retired  within tasks: lift -1.00" in out
    assert "(2 tasks, 3 injected, 3 held out)" in out and "pooled: injected 4 (0% pass)" in out
    assert "Tasks failed in training so far (2): t1, t2" in out
    assert "when: sending a text, payment or email, or saving a note" in out


def test_with_no_failed_task_the_zero_lifts_are_explained(
    ws: Workspace, run_git: GitRunner, capsys: pytest.CaptureFixture[str]
) -> None:
    from evolve.report._report import build_report

    _plant(ws, run_git)
    code, out, _ = run_cli(capsys, "skills")
    assert code == 0 and "No task has failed in training yet" not in out
    (ws.root / "memory" / "skills" / "_failed_tasks.yaml").unlink()
    code, out, _ = run_cli(capsys, "skills")
    assert code == 0 and "Tasks failed in training so far (0): none" in out
    assert "No task has failed in training yet: the scoreboard compares task success" in out
    assert "No task has failed in training yet" in build_report(Workspace(ws.root))


def test_the_report_has_a_skills_table(
    ws: Workspace, run_git: GitRunner, capsys: pytest.CaptureFixture[str]
) -> None:
    from evolve.report._report import build_report

    assert 'id="skills"' not in build_report(ws)
    _plant(ws, run_git)
    html = build_report(Workspace(ws.root))
    table = html[html.index('<h2 id="skills">') :]
    assert "<code>venmo-lookup</code>" in table and "topics/venmo" in table and "-1.00" in table
    assert "<th>lift within tasks</th>" in table and "Tasks failed in training so far (2;" in table


def test_evolve_run_scores_with_the_same_skills_section_and_holds_nothing_out(
    ws: Workspace, run_git: GitRunner, capsys: pytest.CaptureFixture[str]
) -> None:
    import json

    import yaml

    from evolve.envs.persona_world._procedures import write_procedures

    write_procedures(ws.root / "evalset")
    general = ws.root / "memory" / "skills" / "general"
    general.mkdir(parents=True)
    (general / "verify-after.md").write_text(VERIFY_AFTER)
    config = yaml.safe_load((ws.root / "evolve.yaml").read_text())
    config["skills"] = {"enabled": True, "holdout_share": 0.9}
    (ws.root / "evolve.yaml").write_text(yaml.safe_dump(config))
    run_git(ws.root, "add", "-A")
    run_git(ws.root, "commit", "-qm", "skills on, a verify skill")
    report = cli_json(capsys, "run", "--split", "dev")
    logs = sorted((ws.root / "generations" / "runs").glob("*/episodes.jsonl"))
    records = [json.loads(line) for log in logs for line in log.read_text().splitlines()]
    verify = [r for r in records if "-verify-" in r["task_id"]]
    assert verify and all(r["skills_injected"] == ["verify-after"] for r in verify)
    assert all(r["task_success"] for r in verify)  # the sim followed the injected skill
    assert not any(r["skills_held_out"] for r in records)  # evaluation holds nothing out
    assert report
