"""Skills whose scoreboard record restarted after a commit, and records a revert drops.

A skill's record (its pooled counters in the shelf's `_counters.yaml`, its entry in
`memory/skills/_strata.yaml`) restarts when a commit drops it: its lesson was rewritten, it
was evicted, merged away, cut or replaced (`evolve.applier._records`), or a revert brought it
back from retirement (`Evolve-Restarts`). The counts of older commits went with the old
record, so a revert of such an older commit must take nothing back from the new record, in
the pooled counters as in the per-task record: :func:`restarted_since` names those skills.

A revert that tombstones or removes a skill ends its record the same way, in the revert's own
commit (:func:`record_drops`); a revert of that revert brings it back with the rest.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from evolve._format._message import RESTARTS
from evolve.history._changes import is_revert, uncancelled
from evolve.history._content import is_counters_file, is_unit_path, unit_of
from evolve.memory import MemoryUnit, counter_key, counters_path, dump_counters, parse_counters
from evolve.store import CommitInfo, GitStore

STRATA = "memory/skills/_strata.yaml"  # evolve.skills._strata.STRATA_PATH
SKILLS = "memory/skills"
SKILL_COUNTERS = ("injected", "injected_pass", "held_out", "held_out_pass")
_LIVE = ("active", "pending", "revoked", "retired")


def _skill_ids(path: str, data: bytes | None) -> set[str]:
    """The ids with a skill counter off 0 in the sidecar `data`."""
    if not data:
        return set()
    counters = parse_counters(path, data.decode("utf-8"))
    return {i for i, f in counters.items() if any(f.get(name) for name in SKILL_COUNTERS)}


def _dropped(path: str, before: bytes | None, after: bytes | None) -> set[str]:
    """The skills whose record in the file `path` (the per-task record or a skill sidecar)
    went from `before` to `after` dropped."""
    if path == STRATA:
        from evolve.skills._strata import dropped

        return dropped(before, after)
    return _skill_ids(path, before) - _skill_ids(path, after)


def _lesson_ended(path: str, before: bytes | None, after: bytes | None) -> set[str]:
    """The skill whose lesson a change of its unit file from `before` to `after` ended (its
    file removed, revoked, tombstoned, or its text rewritten), as `evolve.applier._records`
    ends its record."""
    old = unit_of(path, before)
    if old is None or old.kind != "skill" or old.status in ("revoked", "tombstoned"):
        return set()
    new = unit_of(path, after)
    if (
        new is None
        or new.status in ("revoked", "tombstoned")
        or " ".join(new.text.split()) != " ".join(old.text.split())
    ):
        return {old.id}
    return set()


class Restarts:
    """Per reverted commit, the skills whose record a later commit restarted (cached)."""

    def __init__(self, store: GitStore, undone: Iterable[str]) -> None:
        self.store = store
        self.undone = set(undone)
        self._since: dict[str, set[str]] = {}

    def since(self, info: CommitInfo, end: str = "HEAD") -> set[str]:
        """Skills whose record a commit after `info` on `end`'s history restarted, that this
        revert does not undo (nor a later revert cancel, file by file): a non-revert commit
        that dropped the record, or a revert that names the skill in `Evolve-Restarts`."""
        key = info.sha if end == "HEAD" else f"{info.sha}..{end}"
        if key in self._since:
            return self._since[key]
        store = self.store
        span = f"{info.sha}..{end}"
        names = store.git("log", "--format=", "--name-only", span, "--", SKILLS)
        paths = sorted(
            {p for p in names.split() if p == STRATA or is_counters_file(p) or is_unit_path(p)}
        )
        restarted: set[str] = set()
        for path in paths:
            shas = store.git("log", "--reverse", "--format=%H", span, "--", path)
            for sha in uncancelled(store, shas.split()):
                then = store.commit_info(sha)
                if sha in self.undone or len(then.parents) != 1:
                    continue
                before, after = store.read(then.parents[0], path), store.read(sha, path)
                if is_unit_path(path):
                    # The lesson itself ended (evicted, revoked, tombstoned, rewritten): its
                    # record restarted even if it was empty then (its counts reverted), so a
                    # drop in the records below cannot show it.
                    restarted |= _lesson_ended(path, before, after)
                    continue
                gone = _dropped(path, before, after)
                if is_revert(then):
                    gone &= set(then.trailers.get(RESTARTS, "").split())
                restarted |= gone
        self._since[key] = restarted
        return restarted


def record_drops(
    store: GitStore,
    head: str,
    changes: Mapping[str, bytes | None],
    stones: Iterable[MemoryUnit] = (),
) -> tuple[dict[str, bytes | None], list[str]]:
    """The sidecar and per-task record writes that drop the record of every skill that
    `changes` tombstone or remove, and of the skills `stones` tombstone (a plain `git revert`
    removed their files already), on top of what `changes` already write; and their ids."""
    from evolve.skills._strata import dump_strata, parse_strata

    ended: dict[str, str] = {}  # id -> its sidecar
    for stone in stones:
        if stone.kind == "skill":
            ended[stone.id] = str(counters_path(counter_key(stone)))
    for path, data in sorted(changes.items()):
        if not is_unit_path(path) or not path.startswith(f"{SKILLS}/"):
            continue
        old = unit_of(path, store.read(head, path))
        if old is None or old.kind != "skill" or old.status not in _LIVE:
            continue
        new = unit_of(path, data)
        if new is None or new.status == "tombstoned":
            ended[old.id] = str(counters_path(counter_key(old)))
    out: dict[str, bytes | None] = {}
    if not ended:
        return out, []

    def now(path: str) -> bytes | None:
        return changes[path] if path in changes else store.read(head, path)

    had: set[str] = set()
    for rel in sorted(set(ended.values())):
        raw = now(rel)
        counters = parse_counters(rel, raw.decode("utf-8")) if raw else {}
        kept = {i: f for i, f in counters.items() if i not in ended}
        if kept != counters:
            had |= set(counters) - set(kept)
            text = dump_counters(kept)
            out[rel] = text.encode("utf-8") if text else None
    raw = now(STRATA)
    strata = parse_strata(raw.decode("utf-8") if raw else "")
    if set(ended) & set(strata):
        had |= set(ended) & set(strata)
        text = dump_strata({s: t for s, t in strata.items() if s not in ended})
        out[STRATA] = text.encode("utf-8") if text else None
    return out, sorted(had)


def drop_skill_deltas(deltas: dict[tuple[str, str], dict[str, float]], ids: set[str]) -> None:
    """Take the skill counters of `ids` out of `deltas` in place (their record restarted
    since: the counts went with the old record)."""
    for key in list(deltas):
        if key[1] in ids:
            rest = {k: v for k, v in deltas[key].items() if k not in SKILL_COUNTERS}
            if rest:
                deltas[key] = rest
            else:
                del deltas[key]


def restored_records(
    store: GitStore, head: str, targets: Iterable[CommitInfo], changes: Mapping[str, bytes | None]
) -> dict[str, bytes | None]:
    """The sidecar and per-task record writes that give back, exactly, the record a reverted
    commit dropped, for each skill whose lesson the revert brings back (a rewritten one
    restored, an evicted, merged-away, cut or tombstoned one returned): the record as it was
    before that commit. Evidence gathered since belonged to the lesson the revert takes away
    (a rewritten one) or to none. `targets` newest first (the oldest commit's record wins)."""
    from evolve.skills._strata import dump_strata, parse_strata

    out: dict[str, bytes | None] = {}

    def planned(path: str) -> bytes | None:
        if path in out:
            return out[path]
        return changes[path] if path in changes else store.read(head, path)

    for target in targets:
        ids = _dropped_by(store, target) if target.parents else set()
        if not ids:
            continue
        parent = target.parents[0]
        for old in _brought_back(store, head, target, changes, ids):
            rel = str(counters_path(counter_key(old)))
            was = _counters_at(store, parent, rel)
            counters = _counters(rel, planned(rel))
            if old.id in was:
                counters[old.id] = dict(was[old.id])
            else:
                counters.pop(old.id, None)
            text = dump_counters(counters)
            out[rel] = text.encode("utf-8") if text else None
            before = parse_strata((store.read(parent, STRATA) or b"").decode("utf-8"))
            raw = planned(STRATA)
            strata = parse_strata(raw.decode("utf-8") if raw else "")
            if old.id in before:
                strata[old.id] = dict(before[old.id])
            else:
                strata.pop(old.id, None)
            text = dump_strata(strata)
            out[STRATA] = text.encode("utf-8") if text else None
    base = {p: changes[p] if p in changes else store.read(head, p) for p in out}
    return {p: d for p, d in out.items() if d != base[p]}


def _counters(rel: str, raw: bytes | None) -> dict[str, dict[str, float | int]]:
    return {
        k: dict(v) for k, v in (parse_counters(rel, raw.decode("utf-8")) if raw else {}).items()
    }


def _counters_at(store: GitStore, rev: str, rel: str) -> dict[str, dict[str, float | int]]:
    return _counters(rel, store.read(rev, rel))


def _brought_back(
    store: GitStore,
    head: str,
    target: CommitInfo,
    changes: Mapping[str, bytes | None],
    ids: set[str],
) -> list[MemoryUnit]:
    """The skills in `ids` (as they were before `target`) whose lesson the revert's
    `changes` bring back onto a shelf, where HEAD does not hold that same lesson."""
    parent = target.parents[0]
    out = []
    for _, path in store.changed_paths(parent, target.sha, [SKILLS]):
        if not is_unit_path(path) or path not in changes:
            continue
        old = unit_of(path, store.read(parent, path))
        if old is None or old.id not in ids:
            continue
        back, now = unit_of(path, changes[path]), unit_of(path, store.read(head, path))
        if back is None or back.status in ("tombstoned", "revoked"):
            continue  # the revert does not bring the lesson back
        if (
            now is not None
            and now.status not in ("tombstoned", "revoked")
            and (" ".join(now.text.split()) == " ".join(back.text.split()))
        ):
            continue  # the same lesson on the shelf now: its evidence since stands
        out.append(old)
    return out


def _dropped_by(store: GitStore, info: CommitInfo) -> set[str]:
    """The skills whose record commit `info` dropped (per-task entry or pooled counters)."""
    parent = info.parents[0]
    out: set[str] = set()
    for _, path in store.changed_paths(parent, info.sha, [SKILLS]):
        if path == STRATA or is_counters_file(path):
            out |= _dropped(path, store.read(parent, path), store.read(info.sha, path))
    return out


def git_revert_records(
    store: GitStore, head: str, git_commit: CommitInfo, target: CommitInfo
) -> tuple[dict[str, bytes | None], list[str]]:
    """For a plain `git revert` (`git_commit`) of `target`: the record writes that take back
    what git's line-by-line revert moved in the record of a skill whose record restarted
    between `target` and the git revert (evicted, rewritten, ...: the counts went with the old
    record, so the new record, or a skill off its shelf, must get none of them), as `evolve
    revert` would have left it; and those skills' ids."""
    from evolve.skills._strata import parse_strata
    from evolve.skills._strata import take_back as take_back_strata

    if len(git_commit.parents) != 1 or not target.parents:
        return {}, []
    parent = git_commit.parents[0]
    restarted = Restarts(store, ()).since(target, end=parent)
    if not restarted:
        return {}, []
    out: dict[str, bytes | None] = {}
    moved_ids: set[str] = set()
    for _, path in store.changed_paths(parent, git_commit.sha, [SKILLS]):
        before, after = store.read(parent, path), store.read(git_commit.sha, path)
        now = store.read(head, path)
        if path == STRATA:
            b, a = (parse_strata(d.decode("utf-8") if d else "") for d in (before, after))
            n = parse_strata(now.decode("utf-8") if now else "")
            moved = {i for i in restarted if b.get(i) != a.get(i)}
            if moved:
                kept = ({*b, *a, *n}) - moved
                new = take_back_strata(before, after, now, kept)
                if new != now:
                    out[path] = new
                    moved_ids |= moved
        elif is_counters_file(path):
            b2, a2, n2 = (_counters(path, d) for d in (before, after, now))
            moved = {
                i
                for i in restarted
                if any(b2.get(i, {}).get(f, 0) != a2.get(i, {}).get(f, 0) for f in SKILL_COUNTERS)
            }
            if not moved:
                continue
            for ident in moved:
                entry = dict(n2.get(ident, {}))
                for f in SKILL_COUNTERS:
                    delta = a2.get(ident, {}).get(f, 0) - b2.get(ident, {}).get(f, 0)
                    entry[f] = max(0, int(entry.get(f, 0)) - int(delta))
                entry["injected_pass"] = min(entry["injected_pass"], entry["injected"])
                entry["held_out_pass"] = min(entry["held_out_pass"], entry["held_out"])
                if any(entry.values()):
                    n2[ident] = entry
                else:
                    n2.pop(ident, None)
            text = dump_counters(n2)
            new = text.encode("utf-8") if text else None
            if new != now:
                out[path] = new
                moved_ids |= moved
    return out, sorted(moved_ids)
