"""A skill taken off its shelf, or rewritten, takes its scoreboard record with it (issue 13).

Its pooled counters (the shelf's `_counters.yaml`) and its per-task entry
(`memory/skills/_strata.yaml`) are dropped in the same commit as the op, through the applier;
an id used again later starts with no evidence; reverting that commit brings the record back
exactly.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

from conftest import GitRunner
from evolve.applier import MemoryApplier
from evolve.history import revert
from evolve.history._gitrevert import tombstone_git_reverts
from evolve.llm import JsonSchema, Message, MockLLM
from evolve.memory import MemoryUnit, dump_counters, load_units, parse_counters
from evolve.ops import Op
from evolve.skills._strata import STRATA_PATH, Outcome, Strata, dump_strata, load_strata
from evolve.train import SkillsBatches
from evolve.train._scoreboard import settle
from evolve.txn import writer
from evolve.workspace import Workspace
from factories import shelf_skill

Sidecar = dict[str, dict[str, float | int]]
VENMO = "memory/skills/topics/venmo/_counters.yaml"
GENERAL = "memory/skills/general/_counters.yaml"


def _skill(ident: str, text: str, topic: str | None = None) -> MemoryUnit:
    return shelf_skill(ident, text, topic, evidence=["episode 0 (pay_back-1)"])


A = _skill("skill-aa", "After paying, read the payment back before you finish.", "venmo")
B = _skill("skill-bb", "Look the contact up before you send the money.", "venmo")
G = _skill("skill-gg", "Check the final state of what you changed before you finish.")
STRATA: Strata = {
    A.id: {"pay_back-1": (2, 1, 1, 1), "pay_back-2": (1, 1, 0, 0)},
    B.id: {"pay_back-1": (1, 0, 2, 2)},
    G.id: {"text_update-1": (3, 3, 1, 0)},
}
COUNTERS = {
    VENMO: {
        A.id: {"injected": 3, "injected_pass": 2, "held_out": 1, "held_out_pass": 1},
        B.id: {"injected": 1, "injected_pass": 0, "held_out": 2, "held_out_pass": 2},
    },
    GENERAL: {G.id: {"injected": 3, "injected_pass": 3, "held_out": 1, "held_out_pass": 0}},
}


def _plant(ws: Workspace, run_git: GitRunner) -> None:
    from evolve.memory import dump_unit

    for unit in (A, B, G):
        path = ws.root / str(unit.path())
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(dump_unit(unit), encoding="utf-8")
    for rel, counters in COUNTERS.items():
        (ws.root / rel).write_text(dump_counters(counters), encoding="utf-8")
    (ws.root / STRATA_PATH).write_text(dump_strata(STRATA), encoding="utf-8")
    run_git(ws.root, "add", "-A")
    run_git(ws.root, "commit", "-qm", "three skills with their records")


def _sidecar(ws: Workspace, rel: str) -> Sidecar:
    """The sidecar's counters that are off their default of 0 (what they mean)."""
    path = ws.root / rel
    raw = parse_counters(rel, path.read_text(encoding="utf-8")) if path.is_file() else {}
    return {i: {k: v for k, v in f.items() if v} for i, f in raw.items() if any(f.values())}


def _records(ws: Workspace) -> tuple[Strata, Sidecar, Sidecar]:
    return load_strata(ws.root), _sidecar(ws, VENMO), _sidecar(ws, GENERAL)


def _changed(run_git: GitRunner, root: Path, sha: str) -> set[str]:
    out = run_git(root, "show", "--name-only", "--format=", sha)
    return set(out.split())


def _apply(ws: Workspace, ops: Sequence[Op], subject: str) -> str:
    with writer(ws, "test"):
        applier = MemoryApplier(ws, "global")
        result = applier.apply(ops, load_units(ws.root))
        assert not result.refused, result.refused
        sha = ws.store.commit(result.paths, subject)
        applier.done()
    assert sha is not None
    return sha


def test_an_evicted_skill_takes_its_record_and_a_reused_id_starts_with_none(
    workspace: Workspace, run_git: GitRunner
) -> None:
    ws = workspace
    _plant(ws, run_git)
    before = _records(ws)
    sha = _apply(ws, [Op(op="evict", unit=A, reason="a full shelf")], "evict a")
    assert A.id not in load_strata(ws.root) and A.id not in _sidecar(ws, VENMO)
    # B and G keep theirs, exactly.
    assert load_strata(ws.root) == {k: v for k, v in STRATA.items() if k != A.id}
    assert _sidecar(ws, VENMO) == {B.id: {"injected": 1, "held_out": 2, "held_out_pass": 2}}
    # In the eviction's own commit.
    assert {STRATA_PATH, VENMO, str(A.path())} <= _changed(run_git, ws.root, sha)
    # Reverting the eviction brings the record back exactly.
    revert(ws, sha)
    assert _records(ws) == before
    # Evicted again, and the id used again by a new lesson: no evidence carries over.
    _apply(ws, [Op(op="evict", unit=A)], "evict a again")
    new = A.with_(text="Confirm the amount on the receipt before you finish.")
    _apply(ws, [Op(op="add", unit=new)], "a new skill under the old id")
    unit = {u.id: u for u in load_units(ws.root)}[A.id]
    assert not unit.injected and not unit.held_out
    assert A.id not in load_strata(ws.root) and A.id not in _sidecar(ws, VENMO)


def _sleeper(actions: list[dict[str, object]]) -> MockLLM:
    def answer(messages: Sequence[Message], schema: JsonSchema | None) -> str:
        assert schema is not None and schema.name == "skill_consolidate"
        return json.dumps({"actions": actions})

    return MockLLM(answer)


def test_the_sleep_pass_drops_the_records_of_what_it_merges_away_cuts_or_rewrites(
    workspace: Workspace, run_git: GitRunner
) -> None:
    ws = workspace
    _plant(ws, run_git)
    before = _records(ws)
    merged = "After paying, look the payment up and read it back before you finish."
    llm = _sleeper(
        [
            {"action": "merge", "ids": [A.id, B.id], "lesson": merged, "why": "one procedure"},
            {"action": "cut", "id": G.id, "why": "vague"},
        ]
    )
    batches = SkillsBatches(ws, "alex/skills/0/instance", "alex", llm, ("venmo", "gmail"))
    with writer(ws, "test"):
        sha = batches._consolidate(0, 3)
    assert sha is not None
    units = {u.id: u for u in load_units(ws.root)}
    assert units[A.id].text == merged and units[B.id].status == "revoked"
    assert units[G.id].status == "revoked"
    # A's lesson was rewritten (its record restarts, as a batch's MERGE does); B merged away
    # and G cut: every record is gone, in the sleep pass's own commit.
    assert _records(ws) == ({}, {}, {})
    assert {STRATA_PATH, VENMO, GENERAL} <= _changed(run_git, ws.root, sha)
    assert not units[A.id].injected and not units[A.id].held_out
    # The merged lesson gathers evidence of its own ...
    _count(ws, [([A.id], [], True, "pay_back-1", True), ([], [A.id], False, "pay_back-3", True)])
    assert load_strata(ws.root) == {A.id: {"pay_back-1": (1, 1, 0, 0), "pay_back-3": (0, 0, 1, 0)}}
    # ... and reverting the sleep pass brings every record back exactly as it was: the merged
    # lesson's evidence goes with the merged lesson.
    revert(ws, sha)
    assert _records(ws) == before


def test_a_retired_skill_keeps_its_record(workspace: Workspace, run_git: GitRunner) -> None:
    ws = workspace
    _plant(ws, run_git)
    before = _records(ws)
    retired = G.with_(status="retired", reason="scoreboard: confidently harmful")
    _apply(ws, [Op(op="revoke", unit=retired, reason="scoreboard")], "retire g")
    assert _records(ws) == before  # the evidence of the retirement stays


def test_a_review_approval_that_replaces_a_skill_ends_its_record(
    workspace: Workspace, run_git: GitRunner
) -> None:
    ws = workspace
    _plant(ws, run_git)
    new = _skill("skill-cc", "Read the payment back, then look it up again.", "venmo")
    old = B.with_(status="revoked", revoked_by=new.id, valid_to="2026-02-01T00:00:00+00:00")
    _apply(ws, [Op(op="add", unit=new), Op(op="revoke", unit=old)], "b replaced by c")
    assert B.id not in load_strata(ws.root) and B.id not in _sidecar(ws, VENMO)
    assert A.id in load_strata(ws.root) and A.id in _sidecar(ws, VENMO)


def _count(ws: Workspace, outcomes: Sequence[Outcome]) -> str:
    with writer(ws, "evolve train"):
        result = settle(ws, outcomes, episodes="5", recipe="skills", confidence=0.95)
    assert result.count_commit is not None and not result.retired
    return result.count_commit


NEW = _skill("skill-nn", "Open the note again after saving it and compare the title.", "gmail")
COUNTED: list[Outcome] = [
    ([NEW.id], [], True, "email_followup-1", True),
    ([], [NEW.id], True, "email_followup-2", True),
]


def _learn_and_count(ws: Workspace, run_git: GitRunner) -> tuple[str, Strata, Sidecar]:
    _plant(ws, run_git)
    added = _apply(ws, [Op(op="add", unit=NEW, reason="skills batch")], "batch: add nn")
    _count(ws, COUNTED)
    strata = load_strata(ws.root)
    assert NEW.id in strata
    return added, strata, _sidecar(ws, "memory/skills/topics/gmail/_counters.yaml")


def test_a_revert_that_tombstones_a_skill_drops_its_record_and_its_revert_restores_it(
    workspace: Workspace, run_git: GitRunner
) -> None:
    ws = workspace
    added, strata, counters = _learn_and_count(ws, run_git)
    assert counters[NEW.id]
    result = revert(ws, added)
    unit = {u.id: u for u in load_units(ws.root)}[NEW.id]
    assert unit.status == "tombstoned"
    # The later count's evidence went with the lesson, in the revert's own commit.
    assert NEW.id not in load_strata(ws.root)
    assert NEW.id not in _sidecar(ws, "memory/skills/topics/gmail/_counters.yaml")
    assert {k: v for k, v in load_strata(ws.root).items()} == {
        k: v for k, v in strata.items() if k != NEW.id
    }
    assert "Scoreboard record dropped" in ws.store.commit_info(result.commit).body
    # Reverting the revert brings the lesson and its record back exactly.
    revert(ws, result.commit)
    assert load_strata(ws.root) == strata
    assert _sidecar(ws, "memory/skills/topics/gmail/_counters.yaml") == counters


def test_the_answer_to_a_plain_git_revert_drops_the_removed_skills_record(
    workspace: Workspace, run_git: GitRunner
) -> None:
    ws = workspace
    added, strata, _ = _learn_and_count(ws, run_git)
    run_git(ws.root, "revert", "--no-edit", added)
    with writer(ws, "evolve train"):
        made = tombstone_git_reverts(ws, take_lock=False)
    assert len(made) == 1
    assert NEW.id not in load_strata(ws.root)
    assert NEW.id not in _sidecar(ws, "memory/skills/topics/gmail/_counters.yaml")
    assert {STRATA_PATH} <= _changed(run_git, ws.root, made[0])
