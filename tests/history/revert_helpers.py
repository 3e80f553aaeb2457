"""Helpers shared by the revert tests: an episode-like commit made through the applier."""

from __future__ import annotations

from collections.abc import Sequence

from evolve.applier import MemoryApplier, Op
from evolve.memory import MemoryUnit, load_units
from evolve.store import EPISODE, KIND, OPS, PERSONA, RECIPE, TASK, format_ops
from evolve.workspace import Workspace

ALEX = "user:alex"


def episode_commit(ws: Workspace, k: int, ops: Sequence[Op]) -> str:
    """One training-like episode commit: the ops through the applier, the episode's trailers."""
    applier = MemoryApplier(ws, ALEX)
    result = applier.apply(ops, load_units(ws.root))
    assert not result.refused, result.refused
    sha = ws.store.commit(
        result.paths,
        f"ace: episode {k} (pay_back-1)",
        body="Complaint:\n  payments were shared with the wrong audience",
        trailers=[
            (EPISODE, str(k)),
            (RECIPE, "ace"),
            (TASK, "pay_back-1"),
            (OPS, format_ops((op.op, op.id) for op in result.applied)),
            (PERSONA, "alex"),
            (KIND, "train"),
        ],
    )
    applier.done()
    assert sha is not None
    return sha


def units_by_id(ws: Workspace) -> dict[str, MemoryUnit]:
    return {u.id: u for u in load_units(ws.root)}
