"""Helpers shared by the revert tests: an episode-like commit made through the applier."""

from __future__ import annotations

from collections.abc import Sequence

from evolve.applier import Op
from evolve.memory import MemoryUnit, load_units
from evolve.workspace import Workspace
from factories import commit_episode

ALEX = "user:alex"


def episode_commit(ws: Workspace, k: int, ops: Sequence[Op]) -> str:
    """One training-like episode commit: the ops through the applier, the episode's trailers."""
    return commit_episode(
        ws, k, ops, "ace", complaint="payments were shared with the wrong audience"
    )


def units_by_id(ws: Workspace) -> dict[str, MemoryUnit]:
    return {u.id: u for u in load_units(ws.root)}
