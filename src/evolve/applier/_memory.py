"""The applier for memory: the only code that writes `memory/`.

Every operation is checked before anything is written: the unit's scope must be the run's
scope, its path must be confined to `memory/` and not protected, adds must be new and other
ops must target an existing unit of that id, the unit must survive its canonical
serialization, and text that a tombstone refuses never reaches the agent again. Refused
operations are returned with their reason; the rest are written atomically, under the
journal.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from evolve._io import atomic_write
from evolve._text import is_placeholder
from evolve.applier import _journal
from evolve.errors import PathRefused
from evolve.memory import MalformedUnit, MemoryUnit, dump_unit, parse_unit
from evolve.memory._similarity import normalize
from evolve.ops import TEXT_OPS, Op, Refusal
from evolve.workspace import Workspace


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


class MemoryApplier:
    """Validates and writes memory operations for one scope."""

    def __init__(self, ws: Workspace, scope: str) -> None:
        self.ws = ws
        self.scope = scope

    def check(
        self, op: Op, existing: dict[str, MemoryUnit], tombstones: Sequence[MemoryUnit]
    ) -> str | None:
        """None if `op` may be written, else the reason it is refused."""
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
        if op.op in TEXT_OPS and unit.status in ("active", "pending") and is_placeholder(unit.text):
            return "the text is a placeholder (empty, or no words), not a statement"
        if op.op in TEXT_OPS and unit.status in ("active", "pending"):
            stone = tombstone_for(unit, tombstones)
            if stone is not None:
                why = f" ({stone.reason})" if stone.reason else ""
                where = f" by {stone.reverted_commit[:10]}" if stone.reverted_commit else ""
                return f"tombstoned{where}{why}: {stone.id}"
        if op.op != "evict":
            try:
                again = parse_unit(path, dump_unit(unit))
            except MalformedUnit as exc:
                return f"malformed unit: {exc}"
            if again != unit.with_(text=unit.text.strip()):
                return "the unit does not survive its canonical serialization"
        return None

    def apply(self, ops: Sequence[Op], units: Sequence[MemoryUnit]) -> ApplyResult:
        """Check every op against the current units, then write the accepted ones.

        The caller commits `result.paths` and then calls :meth:`done`.
        """
        existing = {u.id: u for u in units if u.scope == self.scope}
        tombstones = [
            u for u in units if u.status == "tombstoned" and u.scope in (self.scope, "global")
        ]
        result = ApplyResult()
        for op in ops:
            reason = self.check(op, existing, tombstones)
            if reason is not None:
                result.refused.append(
                    Refusal(op=op.op, what=op.unit.text[:80] or op.id, reason=reason)
                )
                continue
            result.applied.append(op)
            if op.op == "evict":
                existing.pop(op.id, None)
            else:
                existing[op.id] = op.unit
            if op.unit.status == "tombstoned":
                tombstones.append(op.unit)
        if not result.applied:
            return result
        result.paths = sorted({str(op.unit.path()) for op in result.applied})
        _journal.begin(self.ws.store, result.paths)
        final: dict[str, Op] = {str(op.unit.path()): op for op in result.applied}
        for path, op in final.items():
            full = self.ws.resolve(path)
            if op.op == "evict":
                full.unlink(missing_ok=True)
            else:
                atomic_write(full, dump_unit(op.unit))
        return result

    def done(self) -> None:
        _journal.end(self.ws.store)
