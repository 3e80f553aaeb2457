"""A rewritten lesson is a new treatment: its scoreboard record restarts at 0.

A full-shelf MERGE or a REVISE writes the candidate's lesson into an incumbent skill under the
incumbent's id. Counting the old lesson's record on the new text would let a wrong lesson
written over a good skill inherit the good record (its retirement delayed), or a good lesson
written over a wrong one inherit the bad record (a false retirement). `count_ops_after`
restarts the record of a skill whose text the batch's ops change and does not count the
batch's episodes (which ran with the old text) on it.
"""

from __future__ import annotations

from evolve.applier import MemoryApplier
from evolve.memory import dump_unit, load_units
from evolve.ops import Op
from evolve.skills._scoreboard import RESTART_REASON, count_ops_after, score_of
from evolve.workspace import Workspace
from factories import skill

GOOD = "After the last venmo write, read the payment back and confirm it before completing."
WRONG = "Skip the final check: once the venmo write call returns success, complete at once."
RECORD = {"injected": 20, "injected_pass": 19, "held_out": 6, "held_out_pass": 2}


def _seed(ws: Workspace) -> None:
    for ident, text in (("sk-good", GOOD), ("sk-other", "Look up the past payments first.")):
        unit = skill(ident, text, topic="venmo")
        path = ws.root / str(unit.path())
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(dump_unit(unit), encoding="utf-8")
    ws.store.commit(
        ["memory/skills/topics/venmo/sk-good.md", "memory/skills/topics/venmo/sk-other.md"],
        "hand: two skills",
    )
    units = load_units(ws.root)
    applier = MemoryApplier(ws, "global")
    ops = [Op(op="count", unit=u.with_(**RECORD)) for u in units if u.kind == "skill"]
    ws.store.commit(applier.apply(ops, units).paths, "counts")
    applier.done()


def test_a_rewritten_lesson_restarts_its_record(workspace: Workspace) -> None:
    _seed(workspace)
    units = load_units(workspace.root)
    good = next(u for u in units if u.id == "sk-good")
    assert score_of(good).injected == 20
    merge = Op(op="modify", unit=good.with_(text=WRONG), reason="MERGE on a full shelf")
    outcomes = [
        (["sk-good", "sk-other"], [], True, "t", True),
        ([], ["sk-good", "sk-other"], False, "t", True),
    ]
    counted = {op.id: op for op in count_ops_after([merge], units, outcomes)}
    # The rewritten skill: zero, none of this batch's episodes; the other: counted on top.
    assert all(getattr(counted["sk-good"].unit, n) == 0 for n in RECORD)
    assert counted["sk-good"].reason == RESTART_REASON
    assert counted["sk-good"].unit.text == WRONG
    other = counted["sk-other"].unit
    assert (other.injected, other.injected_pass, other.held_out, other.held_out_pass) == (
        21, 20, 7, 2,
    )  # fmt: skip

    # Applied with the rewrite (as a batch applies them), the sidecar holds the fresh record.
    applier = MemoryApplier(workspace, "global")
    result = applier.apply([merge, *counted.values()], units)
    workspace.store.commit(result.paths, "batch")
    applier.done()
    now = {u.id: u for u in load_units(workspace.root)}
    assert now["sk-good"].text == WRONG and score_of(now["sk-good"]).injected == 0
    assert score_of(now["sk-other"]).injected == 21


def test_an_unchanged_lesson_keeps_counting(workspace: Workspace) -> None:
    _seed(workspace)
    units = load_units(workspace.root)
    good = next(u for u in units if u.id == "sk-good")
    # A MERGE that keeps the incumbent's text (only evidence and trigger move).
    merge = Op(op="modify", unit=good.with_(trigger="paying on venmo", text=f" {GOOD} "))
    counted = {
        op.id: op for op in count_ops_after([merge], units, [(["sk-good"], [], False, "t", True)])
    }
    assert counted["sk-good"].unit.injected == 21 and counted["sk-good"].unit.injected_pass == 19
