"""The applier's part of the counter sidecar (`memory/<persona>/_counters.yaml`).

A `count` op moves only a unit's evidence counters (ACE helpful/harmful, topl alpha/beta): it
writes the scope's sidecar and never the unit file. Every other op that the applier writes
also records the counters its unit carries in the sidecar (so a new unit's counters, and
those of an old-format file, land there); an evict drops the unit's entry, and so does any op
that ends a skill's scoreboard record (`_records`: taken off its shelf, or its lesson
rewritten). The unit file is
written without counters (`dump_unit` leaves them out), so it changes only when the unit's
text or status does.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from collections.abc import Set as AbstractSet

from evolve import _confine as confined
from evolve._format import _limits as limits
from evolve.memory import (
    MemoryUnit,
    counter_key,
    counters_of,
    counters_path,
    dump_counters,
    moved_counters,
    parse_counters,
    without_counters,
)
from evolve.ops import Op
from evolve.workspace import Workspace


def check(op: Op, existing: Mapping[str, MemoryUnit]) -> str | None:
    """Why a `count` op is refused, or None (other ops are not this module's business)."""
    if op.op != "count":
        return None
    current = existing.get(op.id)
    if current is None:
        return None  # the applier reports the unknown id
    if without_counters(current) != without_counters(op.unit):
        return "a count op may change only the unit's counters, not its text or status"
    if not counters_of(op.unit):
        return "a count op must carry counters"
    return None


def plan(
    ws: Workspace, scope: str, applied: Sequence[Op], ended: AbstractSet[str] = frozenset()
) -> dict[str, bytes | None]:
    """The sidecar changes for `applied` ops: {path: new bytes or None to delete}, or {}.

    One sidecar per scope folder; a skill's counters go to its shelf folder's sidecar. The
    units in `ended` (skills whose scoreboard record ends: `_records.ended`) lose their entry.
    """
    keys = dict.fromkeys(counter_key(op.unit) for op in applied)
    out: dict[str, bytes | None] = {}
    for key in keys:
        mine = [op for op in applied if counter_key(op.unit) == key]
        out.update(_plan_one(ws, key, mine, ended))
    return out


def _plan_one(
    ws: Workspace, key: str, applied: Sequence[Op], ended: AbstractSet[str]
) -> dict[str, bytes | None]:
    rel = str(counters_path(key))
    full = ws.resolve(rel)
    before = limits.read_text(ws.root, rel) if full.is_file() else None  # its size checked
    counters = parse_counters(rel, before) if before is not None else {}
    for op in applied:
        if op.op == "evict":
            counters.pop(op.id, None)
            continue
        if not counters_of(op.unit):
            continue  # a unit that keeps no counters (or an op that did not read them)
        moved = moved_counters(op.unit)
        if moved:
            counters[op.id] = moved
        else:
            counters.pop(op.id, None)
    for op in applied:
        if op.id in ended:
            counters.pop(op.id, None)
    text = dump_counters(counters)
    if (before or "") == text:
        return {}
    return {rel: text.encode("utf-8") if text else None}


def write(ws: Workspace, changes: Mapping[str, bytes | None]) -> None:
    for rel, data in changes.items():
        full = ws.resolve(rel)
        if data is None:
            full.unlink(missing_ok=True)
        else:
            confined.write_atomic(ws.root, rel, data)  # no link followed out, at open time


def content_only(op: Op) -> bool:
    """Whether `op` writes a unit file (every op but `count`)."""
    return op.op != "count"
