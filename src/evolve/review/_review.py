"""`evolve review`: list pending units, approve or reject them, each decision one commit."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime

from evolve.applier import MemoryApplier, Op
from evolve.errors import EvolveError
from evolve.history import complaint_line
from evolve.memory import MemoryUnit, UnitReader
from evolve.recovery import writer
from evolve.store import KIND, OPS, PERSONA, format_ops
from evolve.workspace import Workspace


@dataclass(frozen=True)
class PendingItem:
    unit: MemoryUnit
    complaint: str | None
    commit: str | None


def list_pending(ws: Workspace) -> list[PendingItem]:
    """Pending units with the complaint that produced each (from the commit that wrote it)."""
    out = []
    for unit in UnitReader(ws.root).load():
        if unit.status != "pending":
            continue
        commits = list(ws.store.log([str(unit.path())], max_count=1))
        commit = commits[0] if commits else None
        complaint = complaint_line(commit.body) if commit else None
        out.append(PendingItem(unit, complaint or unit.complaint, commit.sha if commit else None))
    return out


def _decide(ws: Workspace, unit_id: str, approve: bool) -> str:
    store = ws.store
    with writer(ws, "evolve review"):  # takes the lock, then recovers crash leftovers
        units = UnitReader(ws.root).load()
        unit = next((u for u in units if u.id == unit_id), None)
        if unit is None:
            raise EvolveError(f"no unit with id {unit_id!r}; see `evolve review list`.")
        if unit.status != "pending":
            raise EvolveError(
                f"unit {unit_id} is not pending (it is {unit.status}); only pending units are reviewed."
            )
        now = datetime.now(UTC).isoformat(timespec="seconds")
        ops: list[Op] = []
        if approve:
            ops.append(Op(op="approve", unit=unit.with_(status="active")))
            old = next((u for u in units if u.id == unit.supersedes and u.status == "active"), None)
            if old is not None:
                ops.append(
                    Op(
                        op="revoke",
                        unit=old.with_(status="revoked", revoked_by=unit.id, valid_to=now),
                    )
                )
        else:
            ops.append(
                Op(
                    op="tombstone",
                    unit=unit.with_(status="tombstoned", reason="rejected in review", valid_to=now),
                )
            )
        applier = MemoryApplier(ws, unit.scope)
        result = applier.apply(ops, units)
        if result.refused:
            applier.done()
            raise EvolveError(
                f"could not {'approve' if approve else 'reject'} {unit_id}: {result.refused[0].reason}."
            )
        verb = "approve" if approve else "reject"
        trailers = [(KIND, "review"), (OPS, format_ops((op.op, op.id) for op in result.applied))]
        if unit.scope.startswith("user:"):
            trailers.append((PERSONA, unit.scope.removeprefix("user:")))
        sha = store.commit(
            result.paths, f"review: {verb} {unit_id}", body=unit.text, trailers=trailers
        )
        applier.done()
        assert sha is not None
        return sha


def approve(ws: Workspace, unit_id: str) -> str:
    """Make a pending unit active (and revoke the unit it supersedes); returns the commit."""
    return _decide(ws, unit_id, approve=True)


def reject(ws: Workspace, unit_id: str) -> str:
    """Tombstone a pending unit so that it is refused if proposed again; returns the commit."""
    return _decide(ws, unit_id, approve=False)
