"""The applier for memory: the only code that writes `memory/`.

Every operation is checked before anything is written: the unit's scope must be the run's
scope, its path must be confined to `memory/` and not protected, adds must be new and other
ops must target an existing unit of that id, the unit must survive its canonical
serialization, text that a tombstone refuses never reaches the agent again, and the
recipe's caps from `evolve.yaml` (units per scope, characters per unit, characters of all its
units) hold whatever the proposer did. Refused operations are returned with their reason; the
rest are written atomically, under the journal.

Nothing is lost as a side effect: a revoke that names its replacement (`revoked_by`) and the
op that writes that replacement are applied together or not at all, so a modify whose new text
is refused (tombstone, scope, cap, malformed) leaves the old unit active, and the refusal of
both is logged. A revoke whose `revoked_by` names no unit active after the batch is refused.
An evict that makes room for a new unit (`Op.room_for`) goes with the op that writes that
unit in the same way: a refused add takes its evict with it, so memory never shrinks for a
unit it did not gain; an evict whose `room_for` names no unit the batch writes is refused.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from evolve import _confine as confined
from evolve._io import atomic_write
from evolve.applier import _copied, _counters, _reaffirm, _records, _secrets, _shelves
from evolve.applier._journal import NoJournal, WriteJournal
from evolve.errors import PathRefused
from evolve.memory import MalformedUnit, MemoryUnit, dump_unit, parse_unit, without_counters
from evolve.memory._similarity import normalize
from evolve.ops import TEXT_OPS, Op, Refusal
from evolve.updaters._base import recipe_caps
from evolve.workspace import RecipeCaps, Workspace


@dataclass
class ApplyResult:
    applied: list[Op] = field(default_factory=list)
    refused: list[Refusal] = field(default_factory=list)
    paths: list[str] = field(default_factory=list)


def tombstone_for(unit: MemoryUnit, tombstones: Sequence[MemoryUnit]) -> MemoryUnit | None:
    """The tombstone that refuses `unit`'s text (or its key and text), if any."""
    text = normalize(unit.text)
    if not text:
        return None
    # The same statement is refused whichever recipe proposes it.
    return next((stone for stone in tombstones if normalize(stone.text) == text), None)


# Ops that put text in front of the agent, or may: tombstones and the per-unit size cap apply.
_TEXT = TEXT_OPS | {"approve"}
_LIVE = ("active", "pending")
_DOCUMENT = "document"


class MemoryApplier:
    """Validates and writes memory operations for one scope."""

    def __init__(self, ws: Workspace, scope: str, journal: WriteJournal | None = None) -> None:
        self.ws = ws
        self.scope = scope
        self.journal = journal or NoJournal()  # `evolve.txn` passes the apply journal
        # The file text `check` serialized for a unit, written as is when the op is applied
        # (serializing is most of an op's check). Keyed by the unit object, kept for one apply.
        self._dumped: dict[int, tuple[MemoryUnit, str]] = {}
        self._caps: dict[str, RecipeCaps] = {}  # each recipe's, as `recipe_caps` says
        # Each applied op's unit as the batch had it just before the op (`_walk`): what the
        # op changes, even when an earlier op of the batch changed the same unit.
        self._prior: dict[int, MemoryUnit | None] = {}
        self.hide = _secrets.redactor(ws)  # a configured secret is refused (`_secrets`)

    def caps(self, recipe: str) -> RecipeCaps:
        caps = self._caps.get(recipe)
        if caps is None:
            caps = self._caps[recipe] = recipe_caps(self.ws.config, recipe)
        return caps

    def check(
        self, op: Op, existing: dict[str, MemoryUnit], tombstones: Sequence[MemoryUnit]
    ) -> str | None:
        """None if `op` may be written on its own, else the reason it is refused."""
        unit = op.unit
        if unit.scope != self.scope:
            return f"unit scope {unit.scope} is not this run's scope {self.scope}"
        path = str(unit.path())
        try:
            self.ws.check_writable(path, allowed=("memory/",))
        except PathRefused as exc:
            return str(exc)
        if op.op == "add":
            if unit.id in existing:
                return f"a unit with id {unit.id} already exists"
        elif unit.id not in existing:
            return f"no unit with id {unit.id} in scope {self.scope}"
        if (why := _counters.check(op, existing) or _reaffirm.check(op, existing)) is not None:
            return why
        if op.op in TEXT_OPS and unit.status in _LIVE:
            why = _copied.copied(unit.text)
            if why is not None:
                return why
        if op.op in _TEXT and unit.status in _LIVE:
            stone = tombstone_for(unit, tombstones)
            if stone is not None:
                return _stone_reason(stone)
            limit = self.caps(unit.recipe).chars
            if limit is not None and len(unit.text.strip()) > limit:
                return (
                    f"over the {unit.recipe} cap of {limit} characters per unit "
                    f"({len(unit.text.strip())}; caps in evolve.yaml)"
                )
        if op.op in _TEXT and (why := _secrets.text_reason(path, unit.text, self.hide)):
            return why
        if op.op != "evict":
            text = dump_unit(unit)
            try:
                again = parse_unit(path, text)
            except MalformedUnit as exc:
                return f"malformed unit: {exc}"
            self._dumped[id(unit)] = (unit, text)
            if again != without_counters(unit).with_(text=unit.text.strip()):
                return "the unit does not survive its canonical serialization"
        return None

    def _walk(
        self, ops: Sequence[Op], units: Sequence[MemoryUnit], forced: dict[int, str]
    ) -> tuple[dict[int, str], dict[str, MemoryUnit]]:
        """Check the ops in order over the units; (refusal reasons by index, final state)."""
        existing = {u.id: u for u in units if u.scope == self.scope}
        # A skill the scoreboard retired refuses its lesson like a tombstone.
        tombstones = [
            u
            for u in units
            if (u.status == "tombstoned" or (u.status == "retired" and u.kind == "skill"))
            and u.scope in (self.scope, "global")
        ]
        reasons: dict[int, str] = {}
        self._prior = {}
        for i, op in enumerate(ops):
            reason = forced.get(i) or self.check(op, existing, tombstones)
            if reason is not None:
                reasons[i] = reason
                continue
            self._prior[i] = existing.get(op.id)
            if op.op == "evict":
                existing.pop(op.id, None)
            else:
                existing[op.id] = op.unit
            if op.unit.status == "tombstoned":
                tombstones.append(op.unit)
        return reasons, existing

    def _more_refusals(
        self,
        ops: Sequence[Op],
        units: Sequence[MemoryUnit],
        reasons: dict[int, str],
        final: dict[str, MemoryUnit],
    ) -> dict[int, str]:
        """Refusals the batch as a whole calls for: broken replacements, then caps."""
        groups = _groups(ops)
        more: dict[int, str] = {}
        for members in groups:
            refused = [i for i in members if i in reasons]
            if not refused:
                continue
            first = ops[refused[0]]
            why = f"goes with {first.op} {first.id}, which was refused ({reasons[refused[0]]})"
            more.update({i: why for i in members if i not in reasons})
        if more:
            return more
        for i, op in enumerate(ops):
            by = op.unit.revoked_by
            if i in reasons or op.op != "revoke" or not by:
                continue
            target = final.get(by)
            if target is None or target.status not in _LIVE:
                more[i] = f"its replacement {by} is not in memory after this update"
        more.update(_homeless_evicts(ops, reasons, final))
        if more:
            return more
        before = {u.id: u for u in units if u.scope == self.scope}
        shelves = _shelves.over_caps(
            ops, before, final, reasons, groups, self.ws.config.skills.caps
        )
        return shelves or self._over_caps(ops, units, reasons, final, groups)

    def _over_caps(
        self,
        ops: Sequence[Op],
        units: Sequence[MemoryUnit],
        reasons: dict[int, str],
        final: dict[str, MemoryUnit],
        groups: list[list[int]],
    ) -> dict[int, str]:
        recipes = {op.unit.recipe for i, op in enumerate(ops) if i not in reasons}
        for recipe in sorted(recipes):
            caps = self.caps(recipe)
            for name, limit, size in (
                ("units", caps.units, _one),
                ("memory_chars", caps.memory_chars, _text_size),
            ):
                if limit is None:
                    continue
                total = sum(size(u) for u in final.values() if _counts(u, recipe))
                if total <= limit:
                    continue
                for members in reversed(groups):
                    live = [i for i in members if i not in reasons]
                    grows = sum(_delta(self._prior.get(i), ops[i], recipe, size) for i in live)
                    if live and grows > 0:
                        what = "active units" if name == "units" else "characters of active text"
                        why = f"over the {recipe} cap of {limit} {what} per scope (caps in evolve.yaml)"
                        return dict.fromkeys(live, why)
        return {}

    def _strip_tombstoned_lines(
        self, ops: Sequence[Op], units: Sequence[MemoryUnit]
    ) -> tuple[list[Op], list[Refusal]]:
        """A document (rewrite) is proposed whole; a reverted rewrite tombstones the lines it
        added. Those lines are taken out of a new document, each with a refusal, so the rest
        of the rewrite is still learned."""
        banned: dict[str, MemoryUnit] = {}
        for stone in units:
            if (
                stone.status == "tombstoned"
                and stone.kind == _DOCUMENT
                and stone.scope in (self.scope, "global")
            ):
                banned.update({normalize(line): stone for line in _lines(stone.text)})
        if not banned:
            return list(ops), []
        out, refused = [], []
        for op in ops:
            unit = op.unit
            if op.op not in _TEXT or unit.kind != _DOCUMENT or unit.status not in _LIVE:
                out.append(op)
                continue
            lines = _lines(unit.text)
            keep = [line for line in lines if normalize(line) not in banned]
            for line in lines:
                hit = banned.get(normalize(line))
                if hit is not None:
                    refused.append(Refusal(op="line", what=line[:80], reason=_stone_reason(hit)))
            if len(keep) < len(lines):
                op = op.model_copy(update={"unit": unit.with_(text="\n".join(keep))})
            out.append(op)
        return out, refused

    def apply(
        self,
        ops: Sequence[Op],
        units: Sequence[MemoryUnit],
        extra_files: Mapping[str, bytes | None] | None = None,
    ) -> ApplyResult:
        """Check every op against the current units, then write the accepted ones.

        `extra_files` are whole non-unit files under `memory/` that go with the ops (the skills
        staging area): confined and checked like the units (PathRefused otherwise), written
        under the same journal when any op is applied or any of them changes.

        The caller commits `result.paths` and then calls :meth:`done`.
        """
        extra = _extra_files(self.ws, extra_files or {})
        self._dumped = {}
        ops, stripped = self._strip_tombstoned_lines(ops, units)
        forced: dict[int, str] = {}
        while True:
            reasons, final = self._walk(ops, units, forced)
            more = self._more_refusals(ops, units, reasons, final)
            if not more:
                break
            forced.update(more)
        result = ApplyResult(refused=stripped)
        for i, op in enumerate(ops):
            if i in reasons:
                result.refused.append(
                    Refusal(
                        op=op.op,
                        what=self.hide.values_text(op.unit.text)[:80] or op.id,
                        reason=reasons[i],
                    )
                )
            else:
                result.applied.append(op)
        if not result.applied and not extra:
            return result
        # A skill taken off its shelf or rewritten: its scoreboard record ends (`_records`).
        before = {u.id: u for u in units if u.scope == self.scope}
        ended = _records.ended(result.applied, before)
        sidecar = _counters.plan(self.ws, self.scope, result.applied, ended)  # not in units
        sidecar.update(extra)
        _records.drop_strata(self.ws, sidecar, ended)
        files: dict[str, Op] = {
            str(op.unit.path()): op for op in result.applied if _counters.content_only(op)
        }
        result.paths = sorted({*files, *sidecar})
        if not result.paths:
            return result
        self.journal.begin(result.paths)
        for path, op in files.items():
            full = self.ws.resolve(path)
            if op.op == "evict":
                full.unlink(missing_ok=True)
            else:  # no link out, checked again right before the write (not only at plan time)
                confined.check(self.ws.root, path)
                atomic_write(full, self._file_text(op.unit))
        _counters.write(self.ws, sidecar)
        self._dumped = {}
        return result

    def _file_text(self, unit: MemoryUnit) -> str:
        known = self._dumped.get(id(unit))
        return known[1] if known is not None and known[0] is unit else dump_unit(unit)

    def done(self) -> None:
        self.journal.end()


def _extra_files(ws: Workspace, files: Mapping[str, bytes | None]) -> dict[str, bytes | None]:
    """The `files` that change what is on disk, after checking every path (no unit files)."""
    out: dict[str, bytes | None] = {}
    for path, data in files.items():
        ws.check_writable(path, allowed=("memory/",))
        if path.endswith(".md"):
            raise PathRefused(f"{path}: unit files are written by ops, not as whole files")
        full = ws.resolve(path)
        now = full.read_bytes() if full.is_file() else None
        if now != data:
            out[path] = data
    return out


def _stone_reason(stone: MemoryUnit) -> str:
    why = f" ({stone.reason})" if stone.reason else ""
    if stone.status == "retired":
        return f"a retired skill says this{why}: {stone.id}"
    where = f" by {stone.reverted_commit[:10]}" if stone.reverted_commit else ""
    return f"tombstoned{where}{why}: {stone.id}"


def _lines(text: str) -> list[str]:
    return [line.strip() for line in text.splitlines() if line.strip()]


def _partner(op: Op) -> str | None:
    """The unit whose write `op` goes with: a revoke's replacement, an evict's new unit."""
    if op.op == "revoke":
        return op.unit.revoked_by or None
    if op.op == "evict":
        return op.room_for
    return None


def _groups(ops: Sequence[Op]) -> list[list[int]]:
    """Ops that stand or fall together: a revoke and the op that writes its replacement, an
    evict and the add it makes room for."""
    parent = list(range(len(ops)))

    def find(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    writers: dict[str, list[int]] = {}
    for i, op in enumerate(ops):
        if op.op != "revoke" and op.op != "evict":
            writers.setdefault(op.id, []).append(i)
    for i, op in enumerate(ops):
        partner = _partner(op)
        if partner is not None:
            for j in writers.get(partner, []):
                parent[find(i)] = find(j)
    out: dict[int, list[int]] = {}
    for i in range(len(ops)):
        out.setdefault(find(i), []).append(i)
    return sorted(out.values(), key=lambda members: members[0])


def _homeless_evicts(
    ops: Sequence[Op], reasons: dict[int, str], final: dict[str, MemoryUnit]
) -> dict[int, str]:
    """Evicts that name a unit to make room for that this update does not write: memory
    would shrink for nothing."""
    written = {op.id for i, op in enumerate(ops) if i not in reasons and op.op not in _TAKERS}
    out: dict[int, str] = {}
    for i, op in enumerate(ops):
        room = op.room_for if op.op == "evict" else None
        if i in reasons or room is None:
            continue
        target = final.get(room)
        if room not in written or target is None or target.status not in _LIVE:
            out[i] = f"the unit it makes room for, {room}, is not written by this update"
    return out


_TAKERS = frozenset({"revoke", "evict", "tombstone"})


def _one(unit: MemoryUnit) -> int:
    return 1


def _text_size(unit: MemoryUnit) -> int:
    return len(unit.text.strip())


def _counts(unit: MemoryUnit, recipe: str) -> bool:
    return unit.recipe == recipe and unit.status == "active"


def _delta(
    before: MemoryUnit | None, op: Op, recipe: str, size: Callable[[MemoryUnit], int]
) -> int:
    """How much `op` grows the recipe's active units (by `size`) against the state before."""
    was = size(before) if before is not None and _counts(before, recipe) else 0
    now = size(op.unit) if op.op != "evict" and _counts(op.unit, recipe) else 0
    return now - was
