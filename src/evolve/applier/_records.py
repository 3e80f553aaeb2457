"""The applier's part of a skill's scoreboard record: it ends with the skill.

A skill's record is its pooled counters (its shelf's `_counters.yaml`) and its entry in the
per-task record `memory/skills/_strata.yaml`. Both are evidence about one lesson. When an
applied op takes the skill off its shelf (evicted by a full shelf, revoked as merged away or
cut by the sleep pass, replaced through review, tombstoned) or rewrites its lesson (a MERGE or
REVISE that changes its text), that evidence no longer describes anything on the shelf: the
record is dropped in the same commit, so a skill that later takes the id, or the rewritten
lesson, starts with no evidence. A retired skill keeps its record (it is the evidence of the
retirement; `evolve.history._unretire` restarts it when a revert brings the skill back).

Whatever proposed the ops (a skills batch, the sleep pass, review), the drop is written here,
with the ops, under the same journal. A revert of that commit takes the drop back with the
rest (`evolve.history._countback` for the counters, `evolve.skills._strata.take_back` for the
per-task counts).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from evolve.memory import MemoryUnit
from evolve.ops import Op
from evolve.workspace import Workspace

# Statuses that take a skill off its shelf for good (retired keeps its evidence).
_GONE = ("revoked", "tombstoned")
STRATA = "memory/skills/_strata.yaml"  # evolve.skills._strata.STRATA_PATH


def _skill(unit: MemoryUnit | None) -> bool:
    return unit is not None and unit.kind == "skill"


def _lesson(unit: MemoryUnit) -> str:
    return " ".join(unit.text.split())


def ended(applied: Sequence[Op], before: Mapping[str, MemoryUnit]) -> set[str]:
    """The skills whose record `applied` ends: evicted, revoked or tombstoned (not retired),
    or with a rewritten lesson."""
    out: set[str] = set()
    now = dict(before)
    for op in applied:
        if op.op == "count":
            continue
        old = now.get(op.id)
        if not (_skill(op.unit) or _skill(old)):
            continue
        if op.op == "evict":
            out.add(op.id)
            now.pop(op.id, None)
            continue
        leaves = op.unit.status in _GONE and (old is None or old.status not in _GONE)
        rewritten = old is not None and _lesson(old) != _lesson(op.unit)
        if leaves or rewritten:
            out.add(op.id)
        now[op.id] = op.unit
    return out


def drop_strata(ws: Workspace, files: dict[str, bytes | None], ids: set[str]) -> None:
    """Take `ids` out of the per-task record `files` will write (or of the one on disk), in
    place; `files` then writes the record only if it differs from the one on disk."""
    if not ids:
        return
    full = ws.resolve(STRATA)
    disk = full.read_bytes() if full.is_file() else None
    data = files.get(STRATA, disk)
    from evolve.skills._strata import dump_strata, parse_strata

    strata = parse_strata(data.decode("utf-8") if data else "")
    if not ids & set(strata):
        return
    text = dump_strata({s: tasks for s, tasks in strata.items() if s not in ids})
    new = text.encode("utf-8") if text else None
    if new == disk:
        files.pop(STRATA, None)
    else:
        files[STRATA] = new
