"""The applier's part of a `reaffirm`.

A recipe that is proposed a statement it already holds, active, re-affirms that unit instead of
dropping the proposal: the unit counts as learned now (a later `valid_from`, so it renders as
the newest and a later statement no longer overrides it) and nothing else about it changes.
This module says why such an op is refused; the op is written like any other (the unit file,
for its new `valid_from`) and stated in the episode's commit (`reaffirm N`).
"""

from __future__ import annotations

from collections.abc import Mapping

from evolve._format._render import learned_key
from evolve.memory import MemoryUnit, without_counters
from evolve.ops import Op

# What a reaffirm may move: when the unit counts as learned, the episode that last touched it,
# and (in the sidecar) its evidence counters.
_MOVES = {"valid_from": None, "updated_episode": None}


def check(op: Op, existing: Mapping[str, MemoryUnit]) -> str | None:
    """Why a `reaffirm` op is refused, or None (other ops are not this module's business)."""
    if op.op != "reaffirm":
        return None
    current = existing.get(op.id)
    if current is None:
        return None  # the applier reports the unknown id
    if current.status != "active" or op.unit.status != "active":
        return "only an active unit can be re-affirmed"
    if without_counters(current).with_(**_MOVES) != without_counters(op.unit).with_(**_MOVES):
        return "a reaffirm may move only when the unit counts as learned, not its text or fields"
    if learned_key(op.unit) <= learned_key(current):
        return "a reaffirm must make the unit count as learned later than it did"
    return None
