"""A planted harmful skill is retired by the scoreboard within a bounded number of episodes.

The bound: a skill that fails every eligible episode it is injected into, while held-out
episodes pass, is retired at the first episode after which the within-task comparison
(evolve.stats.stratified, over the per-task record of every eligible episode)
puts its 90 % interval below 0 (one task with 2 episodes per arm suffices); the test replays
the rule from the episode records, asserts the retirement happens exactly there, within 30
episodes, and that the skill is never selected after.
"""

from __future__ import annotations

import json
from typing import Any

import yaml

from conftest import GitRunner
from evolve.applier import MemoryApplier
from evolve.envs.persona_world._procedures import PROCEDURE_TASKS, PROCEDURES_FILE
from evolve.memory import load_units
from evolve.ops import Op
from evolve.skills._scoreboard import MIN_EACH, SKILL_COUNTERS, Score, tally
from evolve.skills._strata import Outcome, load_strata, tally_tasks
from evolve.train import train
from evolve.workspace import Workspace

HARMFUL = """---
id: skip-lookup
recipe: hand
kind: skill
status: active
scope: global
shelf: general
trigger: sending a text or an email to a contact
---
Skip the contact lookup and send directly; the task already names the person.
"""
BOUND = 30


def _plant(ws: Workspace, run_git: GitRunner) -> None:
    evalset = ws.root / "evalset"
    # Every training task needs the contact lookup: the text and e-mail lookup tasks only.
    tasks = [
        t for t in PROCEDURE_TASKS
        if t["split"] != "train" or (
            t["params"]["procedure"] == "lookup" and t["family"] in ("text_update", "email_followup")
        )
    ]  # fmt: skip
    (evalset / PROCEDURES_FILE).write_text(yaml.safe_dump(tasks))
    splits = yaml.safe_load((evalset / "splits.yaml").read_text())
    splits["train"] = []
    (evalset / "splits.yaml").write_text(yaml.safe_dump(splits))
    config = yaml.safe_load((ws.root / "evolve.yaml").read_text())
    config["skills"] = {"enabled": True, "holdout_share": 0.2}
    (ws.root / "evolve.yaml").write_text(yaml.safe_dump(config))
    shelf = ws.root / "memory" / "skills" / "general"
    shelf.mkdir(parents=True)
    (shelf / "skip-lookup.md").write_text(HARMFUL)
    run_git(ws.root, "add", "-A")
    run_git(ws.root, "commit", "-qm", "plant a harmful hand-written skill")


def _record(ws: Workspace) -> list[dict[str, Any]]:
    logs = sorted(ws.runs_dir.glob("train-*.jsonl"))
    assert logs
    return [json.loads(line) for line in logs[0].read_text().splitlines()]


def _first_harmful(records: list[dict[str, Any]], ident: str) -> int | None:
    """The first episode after which the scoreboard's rule holds `ident` harmful, replayed
    from the episode records (the pooled counters count tasks that failed before; the
    per-task record every episode the skill was selected for)."""
    failed: set[str] = set()
    outcomes: list[Outcome] = []
    for r in records:
        seen = (r["skills_injected"], r["skills_held_out"])
        if seen[0] or seen[1]:
            outcomes.append((*seen, r["task_success"], r["task_id"], r["task_id"] in failed))
        if not r["task_success"]:
            failed.add(r["task_id"])
        pooled = tally(outcomes).get(ident, {})
        cells = tuple(c for _t, c in sorted(tally_tasks(outcomes).get(ident, {}).items()))
        a, b, c, d = (pooled.get(n, 0) for n in SKILL_COUNTERS)
        score = Score(a, b, c, d, strata=cells)
        if score.harmful:
            return int(r["episode"])
    return None


def test_a_planted_harmful_skill_is_retired_within_the_bound(
    workspace: Workspace, run_git: GitRunner
) -> None:
    _plant(workspace, run_git)
    ws = Workspace(workspace.root)
    train(ws, recipe="ace", episodes=BOUND)
    units = {u.id: u for u in load_units(ws.root)}
    skill = units["skip-lookup"]
    assert skill.status == "retired"
    assert skill.reason and "lift -1.000" in skill.reason and "within tasks" in skill.reason

    # Retired at the first episode after which the rule (the per-task record, replayed from
    # the episode records) holds it harmful; then never injected.
    records = _record(ws)
    first = _first_harmful(records, "skip-lookup")
    for r in records:
        assert r["task_success"] is (not r["skills_injected"])  # the planted harm
        if first is not None and r["episode"] > first:
            assert not r["skills_injected"] and not r["skills_held_out"]
    assert first is not None and first < BOUND

    log = run_git(ws.root, "log", "--format=%H%x00%B%x01", "HEAD")
    retire = [m for m in log.split("\x01") if "Evolve-Kind: skill retire" in m]
    assert len(retire) == 1
    body = retire[0]
    assert f"Evolve-Episode: {first}" in body and "Evolve-Ops: retire=skip-lookup" in body
    for needle in ("injections: ", "pass rate injected: 0/", "pass rate held out: ",
                   "lift within tasks (Mantel-Haenszel): -1.000", "interval within tasks (90%, "
                   "stratified score, Miettinen-Nurminen): [-1.000, "):  # fmt: skip
        assert needle in body
    sha = retire[0].split("\x00")[0].strip()
    changed = run_git(ws.root, "show", "--name-only", "--format=", sha).split()
    assert changed == ["memory/skills/general/skip-lookup.md"]
    cells = load_strata(ws.root)["skip-lookup"].values()  # the per-task record, committed
    assert sum(c[0] for c in cells) >= MIN_EACH and sum(c[1] for c in cells) == 0
    assert sum(c[3] for c in cells) == sum(c[2] for c in cells) >= MIN_EACH
    assert run_git(ws.root, "status", "--porcelain", "--", "memory").strip() == ""

    # The retired lesson, proposed again (under any id), is refused like a tombstone.
    again = skill.with_(id="skip-lookup-again", status="active", reason=None, recipe="skills")
    applier = MemoryApplier(ws, again.scope)
    result = applier.apply([Op(op="add", unit=again)], load_units(ws.root))
    applier.done()
    assert not result.applied and "a retired skill says this" in result.refused[0].reason

    # Reverting the retirement brings the skill back (its text and status as before).
    run_git(ws.root, "revert", "--no-edit", sha)
    assert {u.id: u for u in load_units(ws.root)}["skip-lookup"].status == "active"


def test_a_harmless_skill_is_not_retired(workspace: Workspace, run_git: GitRunner) -> None:
    _plant(workspace, run_git)
    path = workspace.root / "memory" / "skills" / "general" / "skip-lookup.md"
    path.write_text(HARMFUL.replace("Skip the contact lookup and send directly; the task "
                                    "already names the person.", "Be polite."))  # fmt: skip
    run_git(workspace.root, "commit", "-qam", "a harmless skill")
    ws = Workspace(workspace.root)
    train(ws, recipe="ace", episodes=20)
    assert {u.id: u for u in load_units(ws.root)}["skip-lookup"].status == "active"
    records = _record(ws)
    assert any(r["skills_held_out"] for r in records) and any(r["skills_injected"] for r in records)


def test_with_the_skills_recipe_counts_ride_in_the_batch_commits(
    workspace: Workspace, run_git: GitRunner
) -> None:
    _plant(workspace, run_git)
    ws = Workspace(workspace.root)
    train(ws, recipe="skills", episodes=BOUND)
    assert {u.id: u for u in load_units(ws.root)}["skip-lookup"].status == "retired"
    kinds = run_git(ws.root, "log", "--format=%(trailers:key=Evolve-Kind,valueonly)").split("\n")
    kinds = [k.strip() for k in kinds if k.strip()]
    assert "skill count" not in kinds and "skill retire" in kinds
    batches = run_git(ws.root, "log", "--format=%H", "--grep=Evolve-Kind: skills batch").split()
    touched = {
        path
        for sha in batches
        for path in run_git(ws.root, "show", "--name-only", "--format=", sha).split()
    }
    assert "memory/skills/general/_counters.yaml" in touched
    # The retirement comes right after a batch commit and carries its last episode.
    retire = run_git(ws.root, "log", "-1", "--format=%B", "--grep=retire=skip-lookup")
    episode = int(retire.split("Evolve-Episode: ")[1].split()[0])
    assert (episode + 1) % ws.config.skills.batch_size == 0
