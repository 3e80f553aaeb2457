"""Issue 22: the applier's checks of a `reaffirm` op (a unit proposed again counts as learned
now: only its `valid_from`, `updated_episode` and counters may move)."""

from __future__ import annotations

from evolve.applier import MemoryApplier, Op
from evolve.memory import MemoryUnit, load_units
from evolve.workspace import Workspace
from factories import ALEX, memory_unit

T0 = "2026-01-01T00:00:00.000000+00:00"
T1 = "2026-01-01T00:00:05.000000+00:00"


def _seed(ws: Workspace) -> MemoryUnit:
    unit = memory_unit("ace-a", "Keep all my Venmo payments private.", valid_from=T0)
    applier = MemoryApplier(ws, ALEX)
    result = applier.apply([Op(op="add", unit=unit)], load_units(ws.root))
    applier.done()
    assert [op.id for op in result.applied] == ["ace-a"]
    return next(u for u in load_units(ws.root) if u.id == "ace-a")


def _apply(ws: Workspace, op: Op) -> list[str]:
    applier = MemoryApplier(ws, ALEX)
    result = applier.apply([op], load_units(ws.root))
    applier.done()
    return [r.reason for r in result.refused]


def test_a_reaffirm_moves_valid_from_and_is_written(workspace: Workspace) -> None:
    unit = _seed(workspace)
    assert (
        _apply(workspace, Op(op="reaffirm", unit=unit.with_(valid_from=T1, updated_episode=9)))
        == []
    )
    (after,) = [u for u in load_units(workspace.root) if u.id == "ace-a"]
    assert after.valid_from == T1 and after.updated_episode == 9 and after.text == unit.text


def test_a_reaffirm_that_changes_more_or_goes_back_is_refused(workspace: Workspace) -> None:
    unit = _seed(workspace)
    changed = unit.with_(valid_from=T1, text="Keep all my Venmo payments public.")
    assert (
        "only when the unit counts as learned"
        in _apply(workspace, Op(op="reaffirm", unit=changed))[0]
    )
    revoked = unit.with_(valid_from=T1, status="revoked")
    assert "only an active unit" in _apply(workspace, Op(op="reaffirm", unit=revoked))[0]
    earlier = unit.with_(valid_from="2025-12-31T00:00:00.000000+00:00")
    assert "later" in _apply(workspace, Op(op="reaffirm", unit=earlier))[0]
    missing = unit.with_(id="ace-zz", valid_from=T1)
    assert "no unit with id ace-zz" in _apply(workspace, Op(op="reaffirm", unit=missing))[0]
    (after,) = [u for u in load_units(workspace.root) if u.id == "ace-a"]
    assert after == unit  # nothing written
