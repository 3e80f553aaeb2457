"""`evolve revert REV`: undo a memory or prompt commit as a new commit, and tombstone what it taught.

The revert is file-level and exact: each file the commit changed is restored to its content
before the commit, provided nothing changed it since; otherwise the revert stops, names the
later commit, and leaves the tree as it was. Every unit the commit added or whose text it
changed gets a tombstone (its text, key, the reason and the reverted commit), so an updater
that proposes it again is refused.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime

from evolve.applier import journal_end, write_files
from evolve.errors import EvolveError
from evolve.history._log import refresh_commit_graph
from evolve.memory import MemoryUnit, dump_unit, parse_unit, unit_path
from evolve.memory._similarity import normalize
from evolve.recovery import writer
from evolve.store import KIND, OPS, PERSONA, format_ops
from evolve.workspace import Workspace

REVERTS = "Evolve-Reverts"


@dataclass
class RevertResult:
    reverted: str
    commit: str
    restored: list[str] = field(default_factory=list)
    tombstones: list[MemoryUnit] = field(default_factory=list)


def _unit(path: str, data: bytes | None) -> MemoryUnit | None:
    if data is None or not path.startswith("memory/") or not path.endswith(".md"):
        return None
    return parse_unit(path, data.decode("utf-8"))


def revert(ws: Workspace, rev: str, *, reason: str | None = None) -> RevertResult:
    """Revert commit `rev` (see the module docstring).

    Raises:
        EvolveError: unknown revision, not a memory/prompt commit, a revert of a revert, a
            conflict with a later commit (named), or a dirty tree.
    """
    store = ws.store
    with writer(ws, "evolve revert"):  # takes the lock, then recovers crash leftovers
        dirty = store.dirty_paths(["memory", "prompts"])
        if dirty:
            raise EvolveError(
                f"memory/ or prompts/ has uncommitted changes ({', '.join(dirty[:5])}); commit or discard them first."
            )
        info = store.commit_info(rev)
        short = info.sha[:10]
        if info.trailers.get(KIND) == "revert":
            raise EvolveError(
                f"{short} is itself a revert; to bring its units back, edit memory/ by hand or retrain."
            )
        if len(info.parents) != 1 or info.trailers.get(KIND) == "init":
            raise EvolveError(
                f"{short} is not a memory or prompt commit; pick one from `evolve log`."
            )
        parent = info.parents[0]
        changed = store.changed_paths(parent, info.sha, ["memory", "prompts"])
        if not changed:
            raise EvolveError(
                f"{short} changed nothing in memory/ or prompts/; pick a commit from `evolve log`."
            )
        head = store.head()
        assert head is not None
        changes: dict[str, bytes | None] = {}
        tombstones: list[MemoryUnit] = []
        why = reason or f"reverted {short}"
        now = datetime.now(UTC).isoformat(timespec="seconds")
        for _, path in changed:
            before, after = store.read(parent, path), store.read(info.sha, path)
            if store.read(head, path) != after:
                later = store.first_touch_after(info.sha, path)
                name = (
                    f"{later[:10]} ({store.commit_info(later).subject})"
                    if later
                    else "a later commit"
                )
                raise EvolveError(
                    f"cannot revert {short} cleanly: {name} changed {path} since; revert that commit first."
                )
            changes[path] = before
            new, old = _unit(path, after), _unit(path, before)
            if new is None or new.status not in ("active", "pending"):
                continue
            if old is not None and normalize(old.text) == normalize(new.text):
                continue  # only counters or status changed: nothing taught to refuse
            stone = new.with_(
                status="tombstoned", reason=why, reverted_commit=info.sha, valid_to=now
            )
            if old is not None:
                stone = stone.with_(id=f"{new.id[:55]}-t{info.sha[:7]}")
            tombstones.append(stone)
            changes[str(unit_path(stone.scope, stone.id))] = dump_unit(stone).encode("utf-8")
        paths = write_files(ws, changes)
        ops = [
            (
                "restore" if changes[p] is not None else "remove",
                p.rsplit("/", 1)[-1].removesuffix(".md"),
            )
            for p in paths
        ]
        ops = [op for op in ops if op[1] not in {s.id for s in tombstones}]
        ops += [("tombstone", s.id) for s in tombstones]
        body = [f"Reason: {why}", "", f"Reverts: {info.subject}"]
        if tombstones:
            body += [
                "",
                "Tombstones (refused if proposed again):",
                *[f"- {s.id}: {s.text[:120]}" for s in tombstones],
            ]
        trailers = [(KIND, "revert"), (REVERTS, info.sha), (OPS, format_ops(ops))]
        if PERSONA in info.trailers:
            trailers.append((PERSONA, info.trailers[PERSONA]))
        commit = store.commit(
            paths, f"revert {short}: {info.subject}"[:200], body="\n".join(body), trailers=trailers
        )
        journal_end(store)
        refresh_commit_graph(store)
        if commit is None:
            raise EvolveError(
                f"reverting {short} changed nothing; it may have been undone by hand already."
            )
        stone_paths = {str(unit_path(s.scope, s.id)) for s in tombstones}
        restored = [p for p in paths if changes[p] is not None and p not in stone_paths]
        return RevertResult(info.sha, commit, restored, tombstones)
