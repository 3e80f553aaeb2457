"""What a change to a memory file *says*, as opposed to the evidence counters it moved.

Counters that move with outcomes (ACE `helpful`/`harmful`, topl `alpha`/`beta`, and the
`updated_episode` stamp that moves with them) are evidence, not content: a later change to
them never makes an older update impossible to revert. A revert takes back the evidence the
reverted commit added and never touches evidence added by other commits (`_countback`).
They live in `_counters.yaml` sidecars (one per scope folder); older histories, and units a
person wrote by hand, may still carry them in the unit file, so both are handled here.
"""

from __future__ import annotations

from evolve.memory import MalformedUnit, MemoryUnit, parse_unit

# A skill's `evidence` (the episodes it came from) grows as later batches confirm it: like the
# counters, more evidence does not change what the skill says.
COUNTER_FIELDS: tuple[str, ...] = (
    "helpful", "harmful", "alpha", "beta", "updated_episode", "evidence",
    "injected", "injected_pass", "held_out", "held_out_pass",  # the skills scoreboard
)  # fmt: skip
COUNTERS_FILE = "_counters.yaml"


def is_counters_file(path: str) -> bool:
    """A per-scope counter sidecar: evidence, never a revert conflict, never restored."""
    return path.startswith("memory/") and path.rsplit("/", 1)[-1] == COUNTERS_FILE


def is_unit_path(path: str) -> bool:
    return path.startswith("memory/") and path.endswith(".md")


def unit_of(path: str, data: bytes | None) -> MemoryUnit | None:
    """The unit a file holds, or None (absent, not a unit file, or unreadable)."""
    if data is None or not is_unit_path(path):
        return None
    try:
        return parse_unit(path, data.decode("utf-8"))
    except (MalformedUnit, UnicodeDecodeError):
        return None


def without_counters(unit: MemoryUnit) -> MemoryUnit:
    return unit.with_(**dict.fromkeys(COUNTER_FIELDS))


def same_content(path: str, a: bytes | None, b: bytes | None) -> bool:
    """Whether two versions of a file say the same thing (counters aside)."""
    if a == b:
        return True
    if a is None or b is None or not is_unit_path(path):
        return False
    ua, ub = unit_of(path, a), unit_of(path, b)
    if ua is None or ub is None:
        return False
    return without_counters(ua) == without_counters(ub)


# Bookkeeping that moves with a status change and back: when it became active or stopped.
TIMING_FIELDS: tuple[str, ...] = ("valid_from", "valid_to", "revoked_at", "revoked_by")


def same_meaning(path: str, a: bytes | None, b: bytes | None) -> bool:
    """Whether two versions of a unit file say the same with the same status (counters and
    timing aside): a unit revoked and reactivated since means what it meant."""
    if same_content(path, a, b):
        return True
    ua, ub = unit_of(path, a), unit_of(path, b)
    if ua is None or ub is None:
        return False
    blank = dict.fromkeys(COUNTER_FIELDS + TIMING_FIELDS)
    return ua.with_(**blank) == ub.with_(**blank)


def counters_moved(path: str, a: bytes | None, b: bytes | None) -> list[str]:
    """The counter fields that differ between two versions of a unit file."""
    ua, ub = unit_of(path, a), unit_of(path, b)
    if ua is None or ub is None:
        return []
    return [f for f in COUNTER_FIELDS if getattr(ua, f) != getattr(ub, f)]


def carry_counters(
    restored: MemoryUnit, reverted: MemoryUnit | None, now: MemoryUnit | None
) -> MemoryUnit:
    """`restored` plus the counter moves made since the reverted version: evidence gathered
    after an update is kept when the update is undone."""
    if reverted is None or now is None:
        return restored
    moved = {f: getattr(now, f) for f in COUNTER_FIELDS if getattr(now, f) != getattr(reverted, f)}
    return restored.with_(**moved) if moved else restored


def take_back_provenance(
    before: MemoryUnit | None, after: MemoryUnit | None, now: MemoryUnit | None
) -> MemoryUnit | None:
    """`now` less the provenance a commit added to a unit whose text it left alone (a skills
    batch's MERGE: episodes appended to `evidence`, `updated_episode` moved), or None when
    there is nothing to take back. Entries other commits added stay; entries the commit
    pushed out of a capped list come back; the stamp goes back only if no later commit moved
    it. Like the counters, a revert takes back exactly what the reverted commit added."""
    if before is None or after is None or now is None:
        return None
    old, new, today = before.evidence or [], after.evidence or [], now.evidence or []
    added = [e for e in new if e not in old]
    dropped = [e for e in old if e not in new and e not in today]
    evidence = [*dropped, *(e for e in today if e not in added)]
    if len(evidence) > max(len(today), len(old)):  # a capped list stays within its cap
        evidence = evidence[-max(len(today), len(old)) :]
    stamp = now.updated_episode
    if after.updated_episode != before.updated_episode and stamp == after.updated_episode:
        stamp = before.updated_episode
    kept = now.with_(
        evidence=evidence if (evidence or now.evidence is not None) else None,
        updated_episode=stamp,
    )
    return None if kept == now else kept
