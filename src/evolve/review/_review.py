"""`evolve review`: list pending units, approve or reject them, each decision one commit."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime

from evolve.applier import Op, make_room
from evolve.errors import EvolveError
from evolve.history import complaint_line
from evolve.memory import MemoryUnit, UnitReader
from evolve.store import KIND, OPS, PERSONA, format_ops
from evolve.txn import writer
from evolve.workspace import Workspace


@dataclass(frozen=True)
class PendingItem:
    unit: MemoryUnit
    complaint: str | None
    commit: str | None
    # What approving it would evict now to keep the recipe's cap (id, the rule): the unit
    # and the room it needs are one proposal.
    evicts: tuple[tuple[str, str], ...] = ()


def list_pending(ws: Workspace) -> list[PendingItem]:
    """Pending units with the complaint that produced each (from the commit that wrote it),
    and what approving each would evict as memory stands now."""
    out = []
    units = UnitReader(ws.root).load()
    for unit in units:
        if unit.status != "pending":
            continue
        commits = list(ws.store.log([str(unit.path())], max_count=1))
        commit = commits[0] if commits else None
        complaint = complaint_line(commit.body) if commit else None
        sha = commit.sha if commit else None
        out.append(PendingItem(unit, complaint or unit.complaint, sha, _evicts(ws, units, unit)))
    return out


def _evicts(
    ws: Workspace, units: list[MemoryUnit], unit: MemoryUnit
) -> tuple[tuple[str, str], ...]:
    ops = [Op(op="approve", unit=unit.with_(status="active"))]
    old = current_holder(units, unit.supersedes)
    if old is not None:
        ops.append(Op(op="revoke", unit=old.with_(status="revoked", revoked_by=unit.id)))
    try:
        room = make_room(ws, unit.scope, units, ops, unit.id)
    except EvolveError:
        return ()  # approving it is refused, and says why
    return tuple((op.id, op.reason) for op in room)


def current_holder(units: list[MemoryUnit], replaced: str | None) -> MemoryUnit | None:
    """The unit active now in place of `replaced`: itself, or whatever replaced it since
    (following `revoked_by`), so an approval supersedes what the agent sees today."""
    by_id = {u.id: u for u in units}
    seen: set[str] = set()
    ident = replaced
    while ident is not None and ident not in seen:
        seen.add(ident)
        unit = by_id.get(ident)
        if unit is None:
            return None
        if unit.status == "active":
            return unit
        ident = unit.revoked_by if unit.status == "revoked" else None
    return None


def pending_chain(units: list[MemoryUnit], replaced: str | None) -> list[MemoryUnit]:
    """The pending units a proposal replacing `replaced` changes: `replaced` itself if it is
    pending, then what it would replace if that is pending too, and so on (nearest first)."""
    by_id = {u.id: u for u in units}
    out: list[MemoryUnit] = []
    ident = replaced
    while ident is not None and ident in by_id and by_id[ident].status == "pending":
        if any(u.id == ident for u in out):
            break
        out.append(by_id[ident])
        ident = by_id[ident].supersedes
    return out


def _decide(ws: Workspace, unit_id: str, approve: bool, reason: str | None = None) -> str:
    from evolve.history import tombstone_git_reverts

    with writer(ws, "evolve review") as tx:  # takes the lock, then recovers crash leftovers
        tombstone_git_reverts(ws, take_lock=False)
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
        notes: list[str] = []
        if approve:
            # A proposed change to a unit that itself still awaits review (a chain of them, even):
            # approving the change decides them all. The pending ones, never active, are closed
            # by it, and the unit active now in place of the chain's root is revoked (else both
            # would hold, and a full skill shelf would refuse the approval).
            chain = pending_chain(units, unit.supersedes)
            root = chain[-1].supersedes if chain else unit.supersedes
            old = current_holder(units, root)
            approved = unit.with_(status="active")
            for closed in chain:
                notes.append(
                    f"{closed.id} was still pending; this approval replaces it, so it is "
                    "revoked without having been active."
                )
                ops.append(
                    Op(
                        op="revoke",
                        unit=closed.with_(status="revoked", revoked_by=unit.id, valid_to=now),
                    )
                )
            if old is not None and chain:
                notes.append(f"{old.id}, the unit active now in place of {root}, is revoked.")
            elif old is not None and old.id != unit.supersedes:
                notes.append(
                    f"{unit.supersedes} was already replaced by {old.id}; this approval "
                    f"replaces {old.id}, the unit active now."
                )
                approved = approved.with_(supersedes=old.id)
            ops.insert(0, Op(op="approve", unit=approved))
            if old is not None:
                ops.append(
                    Op(
                        op="revoke",
                        unit=old.with_(status="revoked", revoked_by=unit.id, valid_to=now),
                    )
                )
        else:
            why = reason or "rejected in review"
            stone = unit.with_(status="tombstoned", reason=why, valid_to=now)
            ops.append(Op(op="tombstone", unit=stone))
            notes.append(f"Reason: {why}")
            ops += _retire_twins(units, stone, now, notes)
        if approve:
            room = _room(ws, unit, units, ops, unit_id)
            ops += room
            notes += [f"{op.id} is evicted to make room: {op.reason}." for op in room]
        result = tx.apply(ops, units, scope=unit.scope)
        if result.refused:
            tx.end()
            why = result.refused[0].reason
            if "skill shelf" in why and "is full" in why:
                why += "; reject a pending skill there, retire or delete one, or raise the cap"
            elif "cap of" in why and "per scope" in why:
                why += (
                    "; reject a pending unit, take one back with `evolve revert`, or raise the cap"
                )
            raise EvolveError(f"could not {'approve' if approve else 'reject'} {unit_id}: {why}.")
        verb = "approve" if approve else "reject"
        trailers = [(KIND, "review"), (OPS, format_ops((op.op, op.id) for op in result.applied))]
        if unit.scope.startswith("user:"):
            trailers.append((PERSONA, unit.scope.removeprefix("user:")))
        body = "\n\n".join([unit.text, *notes])
        sha = tx.commit(result.paths, f"review: {verb} {unit_id}", body=body, trailers=trailers)
        assert sha is not None
        return sha


def _retire_twins(
    units: list[MemoryUnit], stone: MemoryUnit, now: str, notes: list[str]
) -> list[Op]:
    """The rejection refuses the text, not only the unit: another unit of its scope that says
    it (a twin two learners both learned) is revoked in the same commit, as the next merge
    would revoke it (`evolve.history.twins`)."""
    from evolve.history import twins

    out = []
    for twin in twins((u for u in units if u.scope == stone.scope), stone):
        notes.append(f"{twin.id} says the same text; it is revoked ({stone.id} is tombstoned).")
        revoked = twin.with_(
            status="revoked", revoked_by=None, valid_to=now, reason=f"tombstone {stone.id}"
        )
        out.append(Op(op="revoke", unit=revoked, reason=f"tombstone {stone.id}"))
    return out


def _room(
    ws: Workspace, unit: MemoryUnit, units: list[MemoryUnit], ops: list[Op], unit_id: str
) -> list[Op]:
    """The evictions an approval brings: the pending unit and the room it needs are one
    proposal, made by the recipe's own rule as memory stands now."""
    try:
        return make_room(ws, unit.scope, units, ops, unit.id)
    except EvolveError as exc:
        raise EvolveError(f"could not approve {unit_id}: {exc}") from None


def approve(ws: Workspace, unit_id: str) -> str:
    """Make a pending unit active and revoke the unit it replaces as it stands now (if that
    unit was replaced since the proposal, its replacement is the one revoked), evicting what
    the recipe's cap needs by the recipe's own rule (`PendingItem.evicts`); returns the
    commit."""
    return _decide(ws, unit_id, approve=True)


def reject(ws: Workspace, unit_id: str, reason: str | None = None) -> str:
    """Tombstone a pending unit so that it is refused if proposed again; `reason` is kept in
    the tombstone and the commit. Returns the commit."""
    return _decide(ws, unit_id, approve=False, reason=reason)
