"""Units after a merge: the rules that make two learners' memories one (docs/sharing.md).

Two steps. :func:`merge_units` merges each unit file three-way at the level of the unit (git
merges them line by line, which knows nothing of status or supersession):

- a file only one side changed takes that side; a file both sides changed alike, either;
- a tombstone on either side wins (a reverted or rejected unit stays refused);
- a unit one side dropped (a cap eviction) and the other kept changing is kept;
- superseded on both sides (revoked, each naming its own replacement): revoked, and the two
  replacements are settled by the second step;
- edited on one side (its text changed, still live) and superseded on the other: a
  :class:`Conflict`, said in one sentence with the commands that resolve it, unless
  `take` names the side to keep;
- a recipe's unit whose text both sides changed: the text touched last keeps the id, the
  other stays, revoked in its favour, under a new id; a hand note edited on both sides is a
  :class:`Conflict` (the person's words are the person's to settle);
- two different texts added under one id (ids made before ids covered the text) both stay, theirs under
  a new id;
- anything else both changed (a reaffirm on each side, an approval): the side that touched
  it last, by its episode then when it was learned.

:func:`rules` then takes the merged memory as a whole and returns the ops the applier writes:

- the same unit superseded on both sides keeps ONE active replacement, the one learned later
  (the newest statement wins, as in ACE; ties: the smaller id): the other is revoked with
  `revoked_by` naming the winner, nothing deleted; with `review: true` it goes to `evolve
  review` (pending) instead;
- a tombstone from either side refuses its text on the other: a live unit saying what a
  tombstone refuses is revoked, its reason naming the tombstone;
- no text is rendered twice: of live units of one scope that say the same (normalized) text,
  the one learned last stays and the others are revoked in its favour;
- caps hold: what is still over a cap is evicted by the recipe's own rule
  (`evolve.applier._caps.victims`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal

from evolve._format._render import learned_key
from evolve._format._units import content_id
from evolve.history._twins import twins
from evolve.memory import MemoryUnit
from evolve.memory._similarity import normalize
from evolve.ops import Op

Side = Literal["ours", "theirs"]
_LIVE = ("active", "pending")


@dataclass(frozen=True)
class Conflict:
    """A unit the rules cannot settle: edited on one side and superseded on the other
    (`replacement` names the replacement), or a hand note edited on both sides
    (`replacement` is empty)."""

    path: str
    unit_id: str
    edited: Side
    replacement: str

    def sentence(self, ref: str) -> str:
        if not self.replacement:
            return (
                f"{self.path} was edited by hand on this branch and on {ref}; keep this "
                f"branch's text with `evolve merge {ref} --take {self.unit_id}=ours`, or "
                f"theirs with `evolve merge {ref} --take {self.unit_id}=theirs`."
            )
        other: Side = "theirs" if self.edited == "ours" else "ours"
        where = "this branch" if self.edited == "ours" else ref
        there = ref if self.edited == "ours" else "this branch"
        return (
            f"{self.path} was edited on {where} and superseded by {self.replacement} on {there}; "
            f"keep the edit with `evolve merge {ref} --take {self.unit_id}={self.edited}`, or "
            f"the supersession with `evolve merge {ref} --take {self.unit_id}={other}`."
        )


@dataclass
class UnitMerge:
    """The unit files after the merge: path -> unit (None: no file), and what was decided."""

    units: dict[str, MemoryUnit | None] = field(default_factory=dict)
    changed: set[str] = field(default_factory=set)  # paths whose merge differs from ours
    conflicts: list[Conflict] = field(default_factory=list)
    # (unit superseded on both sides, our replacement, their replacement)
    double: list[tuple[str, str, str]] = field(default_factory=list)
    renamed: list[tuple[str, str]] = field(default_factory=list)  # (their old id, new id)
    edited: list[tuple[str, str]] = field(default_factory=list)  # (kept id, the other's new id)
    notes: list[str] = field(default_factory=list)


def _touched_key(unit: MemoryUnit) -> tuple[int, tuple[object, ...]]:
    return (unit.updated_episode or 0, learned_key(unit))


def _edited(base: MemoryUnit | None, side: MemoryUnit) -> bool:
    return (
        base is not None and side.status in _LIVE and normalize(side.text) != normalize(base.text)
    )


def _superseded(base: MemoryUnit | None, side: MemoryUnit) -> bool:
    return (
        base is not None
        and base.status in _LIVE
        and side.status == "revoked"
        and bool(side.revoked_by)
    )


def _same(a: MemoryUnit | None, b: MemoryUnit | None) -> bool:
    return a == b


def merge_units(
    base: Mapping[str, MemoryUnit],
    ours: Mapping[str, MemoryUnit],
    theirs: Mapping[str, MemoryUnit],
    *,
    take: Mapping[str, Side] | None = None,
) -> UnitMerge:
    """Merge the unit files of three trees (path -> unit, counters not overlaid)."""
    take = take or {}
    out = UnitMerge()
    taken_ids = {u.id for u in ours.values()} | {u.id for u in theirs.values()}
    for path in sorted({*base, *ours, *theirs}):
        b, o, t = base.get(path), ours.get(path), theirs.get(path)
        if _same(o, t) or _same(t, b):
            out.units[path] = o
            continue
        if _same(o, b):
            out.units[path] = t
            out.changed.add(path)
            continue
        ident = (o or t or b).id  # type: ignore[union-attr]
        chosen = take.get(ident)
        if chosen is not None:
            out.units[path] = o if chosen == "ours" else t
            if chosen == "theirs":
                out.changed.add(path)
            out.notes.append(f"{ident}: {chosen} kept, as --take said")
            continue
        winner = _both_changed(path, b, o, t, out, taken_ids)
        out.units[path] = winner
        if winner is not o:
            out.changed.add(path)
    return out


def _both_changed(
    path: str,
    b: MemoryUnit | None,
    o: MemoryUnit | None,
    t: MemoryUnit | None,
    out: UnitMerge,
    taken: set[str],
) -> MemoryUnit | None:
    """The unit at `path` that both sides changed differently (see the module docstring)."""
    if o is None or t is None:  # one side dropped it (a cap), the other changed it: keep
        kept = o if o is not None else t
        assert kept is not None
        out.notes.append(f"{kept.id}: dropped on one side, changed on the other: kept")
        return kept
    if o.status == "tombstoned" or t.status == "tombstoned":
        return o if o.status == "tombstoned" else t
    if b is None and normalize(o.text) != normalize(t.text):
        # One id, two texts: ids made before ids covered the text. Both stay; theirs under a new id.
        new = content_id(t.recipe, f"merge|{t.id}|{t.scope}", t.text)
        while new in taken:
            new = content_id(t.recipe, f"merge|{new}", t.text)
        taken.add(new)
        moved = t.with_(id=new)
        out.units[str(moved.path())] = moved
        out.changed.add(str(moved.path()))
        out.renamed.append((t.id, new))
        out.notes.append(f"{t.id}: two texts under one id; theirs kept as {new}")
        return o
    for edited, other, side in ((o, t, "ours"), (t, o, "theirs")):
        if _edited(b, edited) and _superseded(b, other):
            out.conflicts.append(Conflict(path, o.id, side, other.revoked_by or ""))  # type: ignore[arg-type]
            return o
    if (
        b is not None
        and o.status in _LIVE
        and t.status in _LIVE
        and len({normalize(b.text), normalize(o.text), normalize(t.text)}) == 3
    ):
        return _edited_on_both(path, o, t, out, taken)
    if _superseded(b, o) and _superseded(b, t):
        if o.revoked_by != t.revoked_by:
            out.double.append((o.id, o.revoked_by or "", t.revoked_by or ""))
        return o
    return o if _touched_key(o) >= _touched_key(t) else t


def _edited_on_both(
    path: str, o: MemoryUnit, t: MemoryUnit, out: UnitMerge, taken: set[str]
) -> MemoryUnit:
    """One unit whose text both sides changed: a hand note is the person's to settle; a
    recipe's unit keeps the text touched last at its id, and the other text stays, revoked
    in its favour, under a new id (nothing lost, one active)."""
    if o.recipe == "hand":
        out.conflicts.append(Conflict(path, o.id, "ours", ""))
        return o
    winner, loser = (o, t) if _touched_key(o) >= _touched_key(t) else (t, o)
    new = content_id(loser.recipe, f"merge|{loser.id}|edited", loser.text)
    while new in taken:
        new = content_id(loser.recipe, f"merge|{new}", loser.text)
    taken.add(new)
    kept = loser.with_(
        id=new, status="revoked", revoked_by=winner.id, reason="merge: edited on both sides"
    )
    out.units[str(kept.path())] = kept
    out.changed.add(str(kept.path()))
    out.edited.append((winner.id, new))
    out.notes.append(f"{winner.id}: edited on both sides; the other text kept revoked as {new}")
    return winner


# --- rules over the merged memory -----------------------------------------------------------


@dataclass
class Rules:
    """The ops that make the merged memory obey the rules, per scope, and their counts."""

    ops: dict[str, list[Op]] = field(default_factory=dict)
    counts: dict[str, int] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)

    def add(self, scope: str, op: Op, rule: str, note: str) -> None:
        self.ops.setdefault(scope, []).append(op)
        self.counts[rule] = self.counts.get(rule, 0) + 1
        self.notes.append(note)


def _revoked(unit: MemoryUnit, by: str | None, episode: int, reason: str | None) -> MemoryUnit:
    from datetime import UTC, datetime

    return unit.with_(
        status="revoked",
        revoked_by=by,
        revoked_at=episode,
        updated_episode=episode,
        valid_to=datetime.now(UTC).isoformat(timespec="microseconds"),
        reason=reason,
    )


def rules(
    units: list[MemoryUnit],
    double: list[tuple[str, str, str]],
    *,
    review: bool,
) -> Rules:
    """The ops (revoke, modify) that settle the merged `units` (counters overlaid); caps are
    the caller's, once these are applied (they need the workspace's config)."""
    out = Rules()
    state = {u.id: u for u in units}
    episode = max((u.updated_episode or 0 for u in units), default=0)

    def live(ident: str) -> MemoryUnit | None:
        u = state.get(ident)
        return u if u is not None and u.status in _LIVE else None

    # 1. one active replacement for a unit superseded on both sides
    for old, mine, other in double:
        a, b = live(mine), live(other)
        if a is None or b is None:
            continue
        winner, loser = (a, b) if learned_key(a) >= learned_key(b) else (b, a)
        if review:
            new = loser.with_(status="pending", supersedes=winner.id)
            out.add(
                loser.scope,
                Op(op="modify", unit=new, reason=f"merge: {old} superseded on both sides"),
                "review",
                f"{loser.id}: sent to review (superseded {old} as {winner.id} did on the other side)",
            )
        else:
            new = _revoked(loser, winner.id, episode, f"merge: {old} superseded on both sides")
            out.add(
                loser.scope,
                Op(op="revoke", unit=new, reason=f"superseded on both sides: {winner.id} wins"),
                "supersede",
                f"{loser.id}: revoked for {winner.id} ({old} superseded on both sides; the later wins)",
            )
        state[loser.id] = new
        settled = state.get(old)
        if settled is not None and settled.revoked_by != winner.id:
            fixed = settled.with_(revoked_by=winner.id)
            state[old] = fixed
            out.add(settled.scope, Op(op="modify", unit=fixed, reason="merge: its one replacement"),
                    "supersede", f"{old}: revoked by {winner.id}")  # fmt: skip
    # 2. tombstones refuse their text on both sides
    stones = [u for u in state.values() if u.status == "tombstoned"]
    for stone in stones:
        for u in twins(list(state.values()), stone):
            new = _revoked(u, None, episode, f"tombstoned on the other side: {stone.id}")
            state[u.id] = new
            out.add(u.scope, Op(op="revoke", unit=new, reason=f"tombstone {stone.id}"),
                    "tombstone", f"{u.id}: revoked, {stone.id} tombstones its text")  # fmt: skip
    # 3. no text twice: the one learned last stays
    seen: dict[tuple[str, str], list[MemoryUnit]] = {}
    for u in state.values():
        if u.status == "active" and u.kind != "document" and normalize(u.text):
            seen.setdefault((u.scope, normalize(u.text)), []).append(u)
    for (scope, _), same in sorted(seen.items()):
        if len(same) < 2:
            continue
        keep = max(same, key=learned_key)
        for u in same:
            if u is keep:
                continue
            new = _revoked(u, keep.id, episode, f"merge: the same text as {keep.id}")
            state[u.id] = new
            out.add(scope, Op(op="revoke", unit=new, reason=f"duplicate of {keep.id}"),
                    "duplicate", f"{u.id}: revoked, {keep.id} says the same")  # fmt: skip
    return out
