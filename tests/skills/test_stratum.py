"""The scoreboard counts only episodes whose task failed in an EARLIER training episode.

Issue 13, item 5: most training episodes are of tasks the agent passes with or without any
skill; counting them dilutes the comparison. The stratum (`evolve.skills._failed`) is fixed
before the episode runs, and its record (`memory/skills/_failed_tasks.yaml`) is committed with
the count, so a resumed stream (a new process) keeps counting the tasks that failed before it.
"""

from __future__ import annotations

import json
from collections import Counter
from typing import Any

import yaml
from test_scoreboard_retire import _plant

from conftest import GitRunner
from evolve.skills._failed import FAILED_PATH, dump_failed, parse_failed, take_back
from evolve.train import train
from evolve.train._train import stratum
from evolve.workspace import Workspace


def test_an_episode_of_a_task_that_never_failed_does_not_count() -> None:
    failed: dict[str, int] = {}
    seen: tuple[list[str], list[str]] = (["s"], [])
    # Every eligible episode goes to the per-task record; the flag says whether its task
    # failed before (only those move the pooled counters).
    assert stratum(failed, "t1", seen, True) == ([(["s"], [], True, "t1", False)], False)
    assert stratum(failed, "t1", seen, False) == ([(["s"], [], False, "t1", False)], True)
    assert failed == {"t1": 1}
    assert stratum(failed, "t1", seen, True) == ([(["s"], [], True, "t1", True)], False)
    assert stratum(failed, "t2", ([], []), False) == ([], True)  # no skill: nothing counted
    # Every failing episode is counted, not only the first (a revert takes back its own).
    assert stratum(failed, "t1", seen, False) == ([(["s"], [], False, "t1", True)], True)
    assert failed == {"t1": 2, "t2": 1}
    assert stratum(None, "t1", seen, False) == ([], False)  # skills off: no record


def test_the_record_round_trips_and_refuses_a_bad_file() -> None:
    assert parse_failed(dump_failed({"b": 2, "a:x": 1})) == {"a:x": 1, "b": 2}
    assert dump_failed({}) == "" and parse_failed("") == {}
    assert dump_failed({"b": 2, "a": 1}) == "a: 1\nb: 2\n"
    assert parse_failed("- b\n- a\n") == {"a": 1, "b": 1}  # an older evolve's list still reads
    assert parse_failed("{a: 0, b: 1}") == {"b": 1}
    for bad in ("{a: x}", "{a: -1}", "{a: true}", "{a: 1.5}", "- [x]\n", "- a\n- 3\n", "3"):
        try:
            parse_failed(bad)
        except Exception as exc:  # EvolveError, one sentence naming the file
            assert FAILED_PATH in str(exc)
        else:
            raise AssertionError(bad)


def test_a_revert_takes_back_only_its_own_failing_episodes() -> None:
    """Reverting the commit that first recorded a task keeps it while a later commit's
    episode failed it too (the record counts episodes, `evolve.skills._failed.take_back`)."""

    def b(counts: dict[str, int]) -> bytes | None:
        return dump_failed(counts).encode("utf-8") or None

    first, later = {"t": 1, "u": 1}, {"t": 2, "u": 1, "v": 1}
    assert parse_failed((take_back(None, b(first), b(later)) or b"").decode()) == {"t": 1, "v": 1}
    # A revert of that revert puts the episodes back; an old list file reads as one each.
    undone = take_back(None, b(first), b(later))
    assert take_back(b(later), undone, undone) == b(later)
    old = b"- t\n- u\n"
    assert parse_failed((take_back(None, old, b(later)) or b"").decode()) == {"t": 1, "v": 1}


def _records(ws: Workspace) -> list[dict[str, Any]]:
    (log,) = sorted(ws.runs_dir.glob("train-*.jsonl"))
    return [json.loads(line) for line in log.read_text().splitlines()]


def _expected(records: list[dict[str, Any]], failed: set[str]) -> tuple[int, int]:
    injected = held = 0
    for r in records:
        if r["task_id"] in failed:
            injected += "skip-lookup" in r["skills_injected"]
            held += "skip-lookup" in r["skills_held_out"]
        if not r["task_success"]:
            failed.add(r["task_id"])
    return injected, held


def test_the_failed_task_record_survives_a_resume(workspace: Workspace, run_git: GitRunner) -> None:
    _plant(workspace, run_git)
    config = yaml.safe_load((workspace.root / "evolve.yaml").read_text())
    config["skills"]["retire_confidence"] = 0.99999  # keep the skill counted: no retirement
    (workspace.root / "evolve.yaml").write_text(yaml.safe_dump(config))
    run_git(workspace.root, "commit", "-qam", "no retirement")
    train(Workspace(workspace.root), recipe="ace", episodes=8)
    first = _records(workspace)
    failed_first = Counter(r["task_id"] for r in first if not r["task_success"])
    assert failed_first
    committed = run_git(workspace.root, "show", f"HEAD:{FAILED_PATH}")
    assert parse_failed(committed) == dict(failed_first)  # every failing episode counted

    train(Workspace(workspace.root), recipe="ace", episodes=16)  # a new process resumes
    records = _records(workspace)
    assert [r["episode"] for r in records] == list(range(16))
    counters = yaml.safe_load((workspace.root / "memory/skills/general/_counters.yaml").read_text())
    got = (counters["skip-lookup"]["injected"], counters["skip-lookup"]["held_out"])
    assert got == _expected(records, set())
    # Had the resume lost the record, the second half would have counted less: the test bites.
    lost = _expected(first, set())
    later = _expected(records[8:], set())
    assert got != (lost[0] + later[0], lost[1] + later[1])
    assert run_git(workspace.root, "status", "--porcelain", "--", "memory").strip() == ""
