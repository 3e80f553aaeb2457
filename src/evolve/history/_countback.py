"""Taking back the evidence a commit added: counter deltas for `evolve revert`.

Evidence counters (ACE helpful/harmful, topl alpha/beta) are additive: each episode adds to
them. What a commit added is, for each unit that existed both before and after it, the
difference of its counters across the commit (the scope's `_counters.yaml` sidecar laid over
what an old-format unit file still carries). A revert takes back exactly that from today's
counters, `new = today - (after - before)`, and leaves the evidence every other commit added
alone. helpful/harmful stop at 0; alpha/beta stop at 1.0, the prior an unset counter means
(and never rise above today's value when evidence is taken away).

Units the commit added have no delta (their counters go with the unit); a unit it removed
(evicted) that the revert brings back gets its counters back. Units that no longer exist (or
that an earlier revert tombstoned) are skipped and named in the revert's message. A unit file
the revert rewrites is written in today's format (no counters in the file): its counters,
less the deltas, are written to the sidecar, so none are lost.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from evolve.history._content import is_counters_file, is_unit_path, unit_of
from evolve.memory import (
    COUNTER_FIELDS,
    Counters,
    MemoryUnit,
    counter_key,
    counters_of,
    counters_path,
    dump_counters,
    parse_counters,
    unit_path,
)
from evolve.memory._counters import COUNTER_DEFAULTS, scope_of_counters
from evolve.store import CommitInfo, GitStore

TRACKED = ["memory"]
_INT_FIELDS = frozenset(
    {"helpful", "harmful", "injected", "injected_pass", "held_out", "held_out_pass"}
)
Key = tuple[str, str]  # (scope, unit id)
Deltas = dict[Key, dict[str, float]]


class _Reader:
    """Effective counters of units at revisions (sidecars parsed once per revision)."""

    def __init__(self, store: GitStore) -> None:
        self.store = store
        self._sidecars: dict[tuple[str, str], Counters] = {}

    def sidecar(self, rev: str, scope: str) -> Counters:
        key = (rev, scope)
        if key not in self._sidecars:
            rel = str(counters_path(scope))
            raw = self.store.read(rev, rel)
            self._sidecars[key] = parse_counters(rel, raw.decode("utf-8")) if raw else {}
        return self._sidecars[key]

    def unit(self, rev: str, scope: str, ident: str) -> MemoryUnit | None:
        path = str(unit_path(scope, ident))
        return unit_of(path, self.store.read(rev, path))

    def counters(self, rev: str, scope: str, ident: str) -> dict[str, float] | None:
        """The unit's counters at `rev` (None: no such unit there)."""
        unit = self.unit(rev, scope, ident)
        if unit is None:
            return None
        out = {k: float(v) for k, v in counters_of(unit).items()}
        out.update({k: float(v) for k, v in self.sidecar(rev, scope).get(ident, {}).items()})
        return out


def counter_deltas(store: GitStore, info: CommitInfo, reader: _Reader | None = None) -> Deltas:
    """What `info` added to the counters of units that existed before and after it."""
    reader = reader or _Reader(store)
    parent = info.parents[0]
    keys: set[Key] = set()
    for _, path in store.changed_paths(parent, info.sha, TRACKED):
        if is_counters_file(path):
            scope = scope_of_counters(path)
            ids = set(reader.sidecar(parent, scope)) | set(reader.sidecar(info.sha, scope))
            keys |= {(scope, ident) for ident in ids}
        elif is_unit_path(path):
            unit = unit_of(path, store.read(info.sha, path)) or unit_of(
                path, store.read(parent, path)
            )
            if unit is not None:
                keys.add((counter_key(unit), unit.id))
    out: Deltas = {}
    for scope, ident in sorted(keys):
        before = reader.counters(parent, scope, ident)
        after = reader.counters(info.sha, scope, ident)
        if before is None:
            continue  # added by the commit: its counters go with it
        if after is None:
            after = {}  # removed (evicted) by the commit: undoing that brings them back
        moved = {}
        for name in COUNTER_FIELDS:
            if name not in before and name not in after:
                continue
            default = float(COUNTER_DEFAULTS[name])
            delta = after.get(name, default) - before.get(name, default)
            if delta:
                moved[name] = delta
        if moved:
            out[(scope, ident)] = moved
    return out


def add_deltas(total: Deltas, more: Deltas) -> None:
    for key, fields in more.items():
        into = total.setdefault(key, {})
        for name, delta in fields.items():
            into[name] = into.get(name, 0.0) + delta


@dataclass
class CountBack:
    """The sidecar files to write, and what they say moved back."""

    files: dict[str, bytes | None] = field(default_factory=dict)
    # (unit id, field, today, after the revert)
    moved: list[tuple[str, str, float | int, float | int]] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)  # units that no longer exist

    @property
    def ids(self) -> list[str]:
        return sorted({ident for ident, *_ in self.moved})


def _back(name: str, today: float, delta: float) -> float | int:
    new = today - delta
    if name in _INT_FIELDS:
        return max(0, round(new))
    floor = min(float(COUNTER_DEFAULTS[name]), today)
    return max(new, floor)


def take_back(
    store: GitStore, head: str, deltas: Deltas, files: dict[str, bytes | None]
) -> CountBack:
    """Today's counters less `deltas`, as sidecar writes. `files` are the unit files the rest
    of the revert writes: a unit it removes or tombstones keeps no counters to move back."""
    reader = _Reader(store)
    out = CountBack()
    sidecars: dict[str, Counters] = {}
    todo = dict(deltas)
    for path, data in files.items():
        # A unit file the revert rewrites is written without counters (old-format files kept
        # them there): its counters go to the sidecar, less what the reverted commits added.
        unit = unit_of(path, data)
        if unit is not None:
            todo.setdefault((counter_key(unit), unit.id), {})
    for (scope, ident), fields in sorted(todo.items()):
        path = str(unit_path(scope, ident))
        final = unit_of(path, files[path]) if path in files else reader.unit(head, scope, ident)
        today = reader.counters(head, scope, ident)
        if final is None or final.status == "tombstoned":
            if fields and (today is None or path not in files):
                out.missing.append(ident)  # gone, or tombstoned by an earlier commit
            continue  # (else the revert takes the unit itself away)
        if today is None:
            today = {}  # a unit the revert brings back: its counters come back too
        entry: dict[str, float | int] = {
            k: (int(v) if k in _INT_FIELDS else v) for k, v in today.items()
        }
        for name, delta in fields.items():
            now = today.get(name, float(COUNTER_DEFAULTS[name]))
            new = _back(name, now, delta)
            if new != now:
                out.moved.append((ident, name, _num(name, now), new))
            entry[name] = new
        if not fields and not entry:
            continue
        sidecar = sidecars.setdefault(scope, dict(reader.sidecar(head, scope)))
        at_default = all(v == COUNTER_DEFAULTS[k] for k, v in entry.items())
        if at_default and not counters_of(final):
            sidecar.pop(ident, None)
        else:
            sidecar[ident] = entry
    for scope, counters in sidecars.items():
        rel = str(counters_path(scope))
        text = dump_counters(counters)
        data = text.encode("utf-8") if text else None
        if data != store.read(head, rel):
            out.files[rel] = data
    return out


def _num(name: str, value: float) -> float | int:
    return int(value) if name in _INT_FIELDS else value


def describe(moved: list[tuple[str, str, float | int, float | int]]) -> list[str]:
    by_unit: dict[str, list[str]] = {}
    for ident, name, old, new in moved:
        by_unit.setdefault(ident, []).append(f"{name} {old:g} -> {new:g}")
    return [f"- {ident}: {', '.join(parts)}" for ident, parts in sorted(by_unit.items())]
