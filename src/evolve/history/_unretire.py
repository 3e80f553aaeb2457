"""A revert that brings back a retired skill restarts its scoreboard record.

The scoreboard retires a skill (`evolve.train._scoreboard.settle`: its status becomes
`retired`, in a commit of its own) on the evidence in its record: the pooled counters in its
shelf's `_counters.yaml` and its entry in the per-task record `memory/skills/_strata.yaml`.
That evidence is not in the retirement commit, so reverting the retirement alone would leave
it as it was, and the very next count would retire the skill again: the user's revert would
not stick. A user who reverts a retirement overrules that evidence, so, as when a lesson is
rewritten (`count_ops_after`, `strata_after`), the skill's record restarts at 0 in the
revert's own commit: the scoreboard can retire it again only on new evidence.

A plain `git revert` of the retirement cannot carry the restart; the commit that answers it
(`evolve.history._gitrevert`, made by the next evolve writer before it counts anything)
restarts the record instead, with the same trailer.

The restart is part of the revert's file changes (written by the applier's `write_files`
and committed by the store in the one revert commit), and the commit names the skills in
`Evolve-Restarts`. It is evidence like any count: a revert of that revert takes the restart
back (the counters' deltas and the per-task counts come back), and the skill is retired again.
"""

from __future__ import annotations

from collections.abc import Mapping

# RESTARTS: the skills whose scoreboard record a revert restarted (space-separated ids).
from evolve._format._message import RESTARTS as RESTARTS  # re-exported
from evolve.history._content import is_unit_path, unit_of
from evolve.memory import (
    MemoryUnit,
    counter_key,
    counters_of,
    counters_path,
    dump_counters,
    parse_counters,
)
from evolve.store import KIND, CommitInfo, GitStore

STRATA = "memory/skills/_strata.yaml"  # evolve.skills._strata.STRATA_PATH
SKILL_COUNTERS = ("injected", "injected_pass", "held_out", "held_out_pass")


def unretired(store: GitStore, head: str, changes: Mapping[str, bytes | None]) -> list[MemoryUnit]:
    """The skills retired at `head` that `changes` make active again, by id."""
    out = []
    for path, data in sorted(changes.items()):
        if not is_unit_path(path) or not path.startswith("memory/skills/"):
            continue
        new, old = unit_of(path, data), unit_of(path, store.read(head, path))
        if new is None or old is None or new.kind != "skill":
            continue
        if old.status == "retired" and new.status == "active":
            out.append(new)
    return sorted(out, key=lambda u: u.id)


def _read(store: GitStore, head: str, changes: Mapping[str, bytes | None], path: str) -> str:
    data = changes[path] if path in changes else store.read(head, path)
    return data.decode("utf-8") if data else ""


def restart_files(
    store: GitStore, head: str, changes: Mapping[str, bytes | None], units: list[MemoryUnit]
) -> dict[str, bytes | None]:
    """The sidecar and per-task record writes that restart `units`' records, on top of what
    `changes` already write (the revert's other files); nothing for a record already empty."""
    from evolve.skills._strata import added, dump_strata, parse_strata

    out: dict[str, bytes | None] = {}
    by_sidecar: dict[str, list[MemoryUnit]] = {}
    for unit in units:
        by_sidecar.setdefault(str(counters_path(counter_key(unit))), []).append(unit)
    for rel, mine in sorted(by_sidecar.items()):
        raw = _read(store, head, changes, rel)
        counters = {k: dict(v) for k, v in (parse_counters(rel, raw) if raw else {}).items()}
        for unit in mine:
            entry = {**counters_of(unit), **counters.get(unit.id, {})}
            if any(entry.get(name) for name in SKILL_COUNTERS):
                # Zero, not dropped: an old-format unit file's own counters must not show through.
                counters[unit.id] = {
                    **counters.get(unit.id, {}),
                    **dict.fromkeys(SKILL_COUNTERS, 0),
                }
        text = dump_counters(counters)
        data = text.encode("utf-8") if text else None
        if data != (raw.encode("utf-8") if raw else None):
            out[rel] = data
    raw = _read(store, head, changes, STRATA)
    ids = {u.id for u in units}
    strata = parse_strata(raw)
    if ids & set(strata):
        text = dump_strata(added(strata, {}, restart=ids))
        out[STRATA] = text.encode("utf-8") if text else None
    return out


def git_unretired(store: GitStore, head: str, target: CommitInfo) -> list[MemoryUnit]:
    """The skills a retirement commit `target` retired that are active again at `head` (a
    plain `git revert` of it brought them back): their records restart in the commit that
    answers the `git revert` (`evolve.history._gitrevert`)."""
    if target.trailers.get(KIND) != "skill retire" or not target.parents:
        return []
    out = []
    for _, path in store.changed_paths(target.parents[0], target.sha, ["memory/skills"]):
        if not is_unit_path(path):
            continue
        old = unit_of(path, store.read(target.parents[0], path))
        new = unit_of(path, store.read(target.sha, path))
        now = unit_of(path, store.read(head, path))
        if old is None or new is None or now is None or now.kind != "skill":
            continue
        if old.status == "active" and new.status == "retired" and now.status == "active":
            out.append(now)
    return sorted(out, key=lambda u: u.id)
