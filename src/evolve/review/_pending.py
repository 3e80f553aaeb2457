"""Human review: in review mode new and changed units are written as `pending`.

Pending units are never rendered. A pending unit that replaces another names it in
`supersedes`; the replaced unit stays active until the pending one is approved, so nothing a
person has not seen takes anything away from the agent either. The same holds for an evict
that makes room for a new unit (`Op.room_for`): the pending unit and its eviction are one
proposal; approving it evicts by the recipe's own rule, as memory stands at the approval, in
the approval's commit, and rejecting it evicts nothing.
"""

from __future__ import annotations

from collections.abc import Sequence

from evolve.memory import MemoryUnit
from evolve.memory._similarity import normalize
from evolve.memory._unit import FILE_EXCLUDED
from evolve.ops import Op

# Fields that say where a unit came from, not what the agent is shown: a change to these alone
# (a skills MERGE that keeps the lesson and adds its episode to `evidence`) needs no review.
PROVENANCE = frozenset({"updated_episode", "evidence", "source_task", "complaint"})


def provenance_only(new: MemoryUnit, current: MemoryUnit | None) -> bool:
    """Whether `new` differs from the unit it modifies, `current`, in provenance alone."""
    if current is None or current.status != "active" or new.status != "active":
        return False
    drop = set(PROVENANCE | FILE_EXCLUDED)
    return new.model_dump(exclude=drop) == current.model_dump(exclude=drop)


def as_pending(ops: Sequence[Op], units: Sequence[MemoryUnit]) -> list[Op]:
    """Turn a recipe's ops into their review-mode form.

    A change that alters only a unit's provenance (:func:`provenance_only`) is kept as it is:
    it changes nothing the agent sees, and made a proposal it would replace the unit with a
    new id on approval, restarting its scoreboard record for a lesson that did not change."""
    waiting = {normalize(u.text) for u in units if u.status == "pending"}
    by_id = {u.id: u for u in units}
    replaced: dict[str, str] = {}  # replacing id -> replaced id
    for op in ops:
        if op.op == "revoke" and op.unit.revoked_by:
            replaced.setdefault(op.unit.revoked_by, op.unit.id)
    out: list[Op] = []
    for op in ops:
        unit = op.unit
        if op.op in ("add", "reactivate"):
            if normalize(unit.text) in waiting:
                continue  # the same statement already awaits review
            waiting.add(normalize(unit.text))
            supersedes = unit.supersedes or replaced.get(unit.id)
            out.append(
                op.model_copy(update={"unit": unit.with_(status="pending", supersedes=supersedes)})
            )
        elif op.op == "modify" and provenance_only(unit, by_id.get(unit.id)):
            out.append(op)
        elif op.op in ("modify", "rewrite"):
            if normalize(unit.text) in waiting:
                continue
            waiting.add(normalize(unit.text))
            suffix = f"-p{unit.updated_episode if unit.updated_episode is not None else 0}"
            proposal = unit.with_(
                id=unit.id[: 64 - len(suffix)] + suffix, status="pending", supersedes=unit.id
            )
            out.append(Op(op="add", unit=proposal, reason=f"proposed change to {unit.id}"))
        elif op.op == "revoke":
            continue  # deferred: applied when the unit that replaces it is approved
        elif op.op == "evict" and op.room_for is not None:
            # One proposal with the unit it makes room for: the approval evicts by the
            # recipe's rule as memory then stands (`evolve.applier.make_room`).
            continue
        else:
            out.append(op)
    return out
