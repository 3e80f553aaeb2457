"""The counter sidecar: evidence counters kept apart from what a unit says.

ACE's helpful/harmful and topl's alpha/beta move with almost every episode. Kept in the unit
files, they made most episode commits rewrite unit files, so the history of a unit was mostly
counter noise and an old update could not be reverted once a later episode had moved a
counter. They live instead in one sidecar per scope folder::

    memory/<persona>/_counters.yaml      (global scope: memory/_counters.yaml)

a YAML mapping ``unit-id -> {field: number}``, written canonically (sorted keys). It is not a
unit (`.yaml`, not `.md`), so unit readers skip it; readers overlay it onto the units they
return, so recipes see one `MemoryUnit` with its counters. A unit file changes only when its
text or status changes. Old unit files that still carry counters in their front matter are
read as before (the sidecar wins where both have a value) and lose them on their next write.

A skill's four scoreboard counters are counts of episodes: an entry with more passes than
episodes, or counts no run could reach, is a hand edit and is refused as the per-task record
refuses it (`arms_fault`, shared with `evolve.skills._strata`), so every reader says one
sentence instead of a traceback or a pass rate above 100 %.

The sidecar is evidence, not content: a change to it is never a revert conflict, and a
revert does not restore it as a file; it takes back the counter deltas of the commit it
reverts (`evolve.history._countback`).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import PurePosixPath
from typing import Any

from evolve._format._units import (
    COUNTER_DEFAULTS,
    COUNTER_FIELDS,
    COUNTERS_NAME,
    Counters,
    counter_key,
    dump_counters,
    overlay,
    scope_of_counters,
)
from evolve._format._units import INT_COUNTERS as _INT_FIELDS
from evolve.memory._unit import GLOBAL_SCOPE, MalformedUnit, MemoryUnit

__all__ = [
    "COUNTERS_NAME",
    "COUNTER_DEFAULTS",
    "COUNTER_FIELDS",
    "MAX_COUNT",
    "Counters",
    "arms_fault",
    "counter_key",
    "counters_of",
    "counters_path",
    "dump_counters",
    "is_counters_path",
    "moved_counters",
    "overlay",
    "parse_counters",
    "scope_of_counters",
    "without_counters",
]
# A scoreboard count above this is a hand edit, not episodes: the scoreboard's floats could
# not hold it (shared with the per-task record, `evolve.skills._strata`).
MAX_COUNT = 10**15
_ARMS = ("injected", "injected_pass", "held_out", "held_out_pass")  # as `arms_fault` takes them


def counters_path(scope: str) -> PurePosixPath:
    """`memory/<user>/_counters.yaml`, or `memory/_counters.yaml` for the global scope (a
    skill shelf's key, its folder: `<folder>/_counters.yaml`)."""
    if scope.startswith("memory/"):
        return PurePosixPath(scope) / COUNTERS_NAME
    if scope == GLOBAL_SCOPE:
        return PurePosixPath("memory") / COUNTERS_NAME
    return PurePosixPath("memory") / scope.removeprefix("user:") / COUNTERS_NAME


def is_counters_path(path: str) -> bool:
    return PurePosixPath(path).name == COUNTERS_NAME


def counters_of(unit: MemoryUnit) -> dict[str, float | int]:
    """The counter fields `unit` carries (those that are set)."""
    out: dict[str, float | int] = {}
    for name in COUNTER_FIELDS:
        value = getattr(unit, name)
        if value is not None:
            out[name] = value
    return out


def moved_counters(unit: MemoryUnit) -> dict[str, float | int]:
    """What the sidecar records for `unit`: its counters once any moved off its default
    (e.g. helpful 0 and harmful 2), nothing while all are at their defaults."""
    counters = counters_of(unit)
    if all(v == COUNTER_DEFAULTS[k] for k, v in counters.items()):
        return {}
    return counters


def without_counters(unit: MemoryUnit) -> MemoryUnit:
    """`unit` as its file holds it: content and status, no counters."""
    if not counters_of(unit):
        return unit
    return unit.with_(**dict.fromkeys(COUNTER_FIELDS))


def _valid(name: str, value: Any) -> bool:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return False
    if name in _INT_FIELDS:
        return isinstance(value, int) and value >= 0
    return bool(value > 0)


def arms_fault(injected: int, injected_pass: int, held_out: int, held_out_pass: int) -> str | None:
    """Why a skill's two arms cannot be counts of episodes ("has more passes than
    episodes"), or None. One check for the pooled counters and the per-task record
    (`evolve.skills._strata`), so a hand edit is refused in the same words by every command
    that reads either, before the scoreboard's arithmetic meets it (a pass rate above 1 has
    no Wilson interval)."""
    if max(injected, held_out) > MAX_COUNT:
        return "has counts too large to be episodes"
    if injected_pass > injected or held_out_pass > held_out:
        return "has more passes than episodes"
    return None


def _arms(entry: Mapping[str, float | int]) -> tuple[int, int, int, int]:
    a, b, c, d = (int(entry.get(name, 0)) for name in _ARMS)
    return a, b, c, d


def parse_counters(path: str, raw: str) -> Counters:
    """Parse a sidecar.

    Raises:
        MalformedUnit: not a mapping of unit ids to mappings of known counter fields, or a
            skill's scoreboard counts that cannot be episodes (`arms_fault`).
    """
    import yaml  # the full reader only: the canonical one (`evolve._format._units`) is not

    from evolve._yaml import load as load_yaml

    try:
        data = load_yaml(raw, path, error=MalformedUnit)  # a key given twice: refused
    except yaml.YAMLError as exc:
        raise MalformedUnit(f"{path}: not valid YAML.") from exc
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise MalformedUnit(f"{path}: must map unit ids to their counters.")
    out: Counters = {}
    for ident, fields in data.items():
        if not isinstance(ident, str) or not isinstance(fields, dict):
            raise MalformedUnit(f"{path}: entry {ident!r} must map counter names to numbers.")
        entry: dict[str, float | int] = {}
        for name, value in fields.items():
            if name not in COUNTER_FIELDS:
                raise MalformedUnit(f"{path}: entry {ident!r}: unknown counter {name!r}.")
            if not _valid(str(name), value):
                raise MalformedUnit(f"{path}: entry {ident!r}: bad value for {name!r}.")
            entry[str(name)] = float(value) if name not in _INT_FIELDS else int(value)
        fault = arms_fault(*_arms(entry))
        if fault:
            raise MalformedUnit(f"{path}: entry {ident!r} {fault}.")
        out[ident] = entry
    return out
