"""Caps are invariants: every writer leaves every scope within its recipes' caps.

Training cannot break a cap: the applier refuses a batch that would (`_memory`), and a
recipe's evicts go with the units they make room for. Writers that bring units back rather
than apply a recipe's proposal, a revert (`evolve revert`) and a review approval, make room
the way the recipe itself does: they evict by the recipe's own rule
(`evolve.updaters.recipe_evict_rule`: reflexion's window, ace's helpful - harmful, topl's
posterior, trace's FIFO) in the same commit, which names each eviction and its rule. A recipe
with no rule (or a cap on characters that no eviction order meets) refuses the write, naming
the cap and what resolves it.

The cap counted is the one `evolve.yaml` and the recipe set (`recipe_caps`): `units` (active
units of the recipe in one scope) and `memory_chars` (characters of their text together).
Skill shelves have caps of their own (`_shelves`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from evolve._format._units import overlay, scope_of_counters
from evolve.errors import EvolveError
from evolve.memory import (
    MalformedUnit,
    MemoryUnit,
    counters_path,
    dump_counters,
    is_counters_path,
)
from evolve.memory._files import read_counters, read_unit
from evolve.ops import Op
from evolve.updaters._base import recipe_caps, recipe_evict_rule
from evolve.workspace import Workspace


@dataclass(frozen=True)
class Overflow:
    """One recipe's units in one scope over one cap."""

    scope: str
    recipe: str
    cap: str  # "units" or "memory_chars"
    limit: int
    size: int

    def line(self) -> str:
        what = "active units" if self.cap == "units" else "characters of active text"
        return (
            f"{self.scope} holds {self.size} {what} of {self.recipe} against its cap of "
            f"{self.limit} (caps.{self.recipe}.{self.cap})"
        )


def _size(cap: str, units: Iterable[MemoryUnit]) -> int:
    return sum(1 if cap == "units" else len(u.text.strip()) for u in units)


def _groups(units: Iterable[MemoryUnit]) -> dict[tuple[str, str], list[MemoryUnit]]:
    out: dict[tuple[str, str], list[MemoryUnit]] = {}
    for u in units:
        if u.status == "active" and u.shelf is None:
            out.setdefault((u.scope, u.recipe), []).append(u)
    return out


def overflows(ws: Workspace, units: Iterable[MemoryUnit]) -> list[Overflow]:
    """Every (scope, recipe) whose active units are over a cap of `evolve.yaml`; [] when
    every cap holds. (The check `benchmarks/bench_revert.py` runs after every revert.)"""
    out = []
    for (scope, recipe), mine in sorted(_groups(units).items()):
        caps = recipe_caps(ws.config, recipe)
        for cap, limit in (("units", caps.units), ("memory_chars", caps.memory_chars)):
            if limit is not None and (size := _size(cap, mine)) > limit:
                out.append(Overflow(scope, recipe, cap, limit, size))
    return out


def victims(
    ws: Workspace,
    units: Sequence[MemoryUnit],
    *,
    within: set[tuple[str, str]] | None = None,
    keep: frozenset[str] = frozenset(),
    doing: str = "this",
) -> list[tuple[MemoryUnit, str]]:
    """The units to evict, with why, so that `units` (a state a writer is about to leave)
    holds every cap: by each recipe's own rule, never one of `keep` (units the writer is
    there to make active). `within`: only these (scope, recipe) pairs (those a writer
    touched); None: all.

    Raises:
        EvolveError: a cap that eviction cannot meet (the recipe has no rule, or only
            units in `keep` are left), naming the cap and what resolves it.
    """
    out: list[tuple[MemoryUnit, str]] = []
    groups = _groups(units)
    for over in overflows(ws, units):
        pair = (over.scope, over.recipe)
        if within is not None and pair not in within:
            continue
        mine = [u for u in groups[pair] if u.id not in {v.id for v, _ in out}]
        rule = recipe_evict_rule(over.recipe)
        order = [u for u in rule[0](mine) if u.id not in keep] if rule is not None else []
        while _size(over.cap, mine) > over.limit and order:
            victim = order.pop(0)
            mine.remove(victim)
            assert rule is not None
            out.append((victim, f"{rule[1]} (caps.{over.recipe}.{over.cap} {over.limit})"))
        if _size(over.cap, mine) > over.limit:
            raise EvolveError(
                f"{doing} would leave {over.line()}, and {over.recipe} has no eviction rule "
                f"that meets it; raise caps.{over.recipe}.{over.cap} in evolve.yaml, or take "
                "a unit back first (`evolve revert` of the commit that taught it)."
            )
    return out


def make_room(
    ws: Workspace, scope: str, units: Sequence[MemoryUnit], ops: Sequence[Op], room_for: str
) -> list[Op]:
    """Evict ops that keep `scope` within its caps once `ops` are applied over `units`, by
    each recipe's own rule; each makes room for `room_for` (the unit the ops make active,
    so the applier applies them together) and never evicts a unit the ops write.
    ("approving it would leave ...": what a refusal says.)

    Raises:
        EvolveError: a cap eviction cannot meet (see :func:`victims`).
    """
    final = {u.id: u for u in units if u.scope == scope}
    for op in ops:
        if op.op == "evict":
            final.pop(op.id, None)
        else:
            final[op.id] = op.unit
    touched = {(scope, op.unit.recipe) for op in ops}
    keep = frozenset(op.id for op in ops)
    return [
        Op(op="evict", unit=victim, reason=why, room_for=room_for)
        for victim, why in victims(
            ws, list(final.values()), within=touched, keep=keep, doing="approving it"
        )
    ]


@dataclass
class CapFit:
    """What a revert changes so that caps hold after it: lay :attr:`files` over its changes;
    the commit names :attr:`evicted` (unit id, the rule that evicted it)."""

    files: dict[str, bytes | None] = field(default_factory=dict)
    dropped: list[str] = field(default_factory=list)  # paths no longer to write at all
    evicted: list[tuple[str, str]] = field(default_factory=list)

    def apply(self, changes: dict[str, bytes | None]) -> None:
        for path in self.dropped:
            changes.pop(path, None)
        changes.update(self.files)

    @property
    def paths(self) -> set[str]:
        return {*self.files, *self.dropped}

    def ops(self) -> list[tuple[str, str]]:
        return [("evict", ident) for ident, _ in self.evicted]

    def lines(self) -> list[str]:
        if not self.evicted:
            return []
        out = ["", "Evicted to keep memory within its caps (the recipe's own rule):"]
        return out + [f"- {ident}: {why}" for ident, why in self.evicted]


def fit_files(
    ws: Workspace, head: str, changes: Mapping[str, bytes | None], doing: str = "this"
) -> CapFit:
    """Keep every cap after a write of whole files over commit `head` (`changes`: path ->
    new bytes, None to delete; what a revert writes): the units it would leave over a cap
    in a (scope, recipe) it touched are evicted by the recipe's own rule, counters and all.

    Raises:
        EvolveError: a cap eviction cannot meet (see :func:`victims`).
    """
    base = ws.store.read_tree_files(head, "memory")
    files = dict(base)
    for path, data in changes.items():
        if not path.startswith("memory/"):
            continue
        if data is None:
            files.pop(path, None)
        else:
            files[path] = data
    after = _units_of(files)
    touched = {
        (u.scope, u.recipe)
        for u in [*_units_of({p: base[p] for p in changes if p in base}), *after]
        if str(u.path()) in changes
    }
    fit = CapFit()
    chosen = victims(ws, after, within=touched, doing=doing)
    sidecars: dict[str, dict[str, dict[str, float | int]]] = {}
    for victim, why in chosen:
        path = str(victim.path())
        if path in base:
            fit.files[path] = None
        else:
            fit.dropped.append(path)  # brought back by this write: not brought back after all
        fit.evicted.append((victim.id, why))
        side = str(counters_path(victim.scope))
        if side not in sidecars:
            raw = files.get(side)
            sidecars[side] = dict(read_counters(side, raw.decode("utf-8"))) if raw else {}
        sidecars[side].pop(victim.id, None)
    for side, counters in sidecars.items():
        text = dump_counters(counters)
        data = text.encode("utf-8") if text else None
        if data == files.get(side):
            continue
        if data is None and side not in base:
            fit.dropped.append(side)  # a sidecar this write creates, now with nothing in it
        else:
            fit.files[side] = data
    return fit


def _units_of(files: Mapping[str, bytes]) -> list[MemoryUnit]:
    """The units (with their counters) of a `memory/` tree given as files."""
    units = []
    for path, data in sorted(files.items()):
        name = path.rsplit("/", 1)[-1]
        if not path.endswith(".md") or name.startswith("."):
            continue
        try:
            units.append(read_unit(path, data.decode("utf-8")))
        except (MalformedUnit, UnicodeDecodeError):
            continue  # not this check's to report: the reader names it
    sidecars = {
        scope_of_counters(p): read_counters(p, d.decode("utf-8"))
        for p, d in files.items()
        if is_counters_path(p)
    }
    return overlay(units, sidecars) if sidecars else units
