"""The answer to one plain `git revert` (`evolve.history._gitrevert`): the tombstones it did
not write, the skills' records set as `evolve revert` sets them, the caps kept; one commit.

Loaded only where a `git revert` waits for its answer: the writers' check that none does
(`_gitrevert.unanswered`) needs none of this.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import TYPE_CHECKING

from evolve.applier import CapFit, fit_files
from evolve.history._changes import (
    GIT_REVERT,
    REVERTS,
    content_changes,
    is_revert,
    taught_by,
)
from evolve.history._content import unit_of
from evolve.history._restarts import git_revert_records, record_drops
from evolve.history._unretire import RESTARTS, git_unretired, restart_files
from evolve.memory import MemoryUnit, dump_unit, load_units
from evolve.memory._similarity import normalize
from evolve.store import KIND, OPS, PERSONA, CommitInfo, GitStore, format_ops
from evolve.workspace import Workspace

if TYPE_CHECKING:
    from evolve.txn import Transaction

FAILED = "memory/skills/_failed_tasks.yaml"  # evolve.skills._failed.FAILED_PATH


def _stones_for(ws: Workspace, target: CommitInfo, units: list[MemoryUnit]) -> list[MemoryUnit]:
    stamp = datetime.now(UTC).isoformat(timespec="seconds")
    stoned = {(u.scope, normalize(u.text)) for u in units if u.status == "tombstoned"}
    active = {(u.scope, normalize(u.text)) for u in units if u.status in ("active", "pending")}
    present = {str(u.path()) for u in units}
    stones = []
    for change in content_changes(ws.store, target):
        taught = taught_by(change)
        if taught is None or unit_of(change.path, change.after) is None:
            continue
        key = (taught.scope, normalize(taught.text))
        if key in stoned or key in active:
            continue  # already refused, or the git revert left it in place
        stone = taught.with_(
            status="tombstoned",
            reason=f"reverted {target.short} with git revert",
            reverted_commit=target.sha,
            valid_to=stamp,
        )
        if str(stone.path()) in present:
            stone = stone.with_(id=f"{taught.id[:52]}-t{target.sha[:7]}")
        if str(stone.path()) in present:
            continue
        stoned.add(key)
        present.add(str(stone.path()))
        stones.append(stone)
    return stones


def _failed_record(
    store: GitStore, head: str, git_commit: CommitInfo, target: CommitInfo
) -> dict[str, bytes | None]:
    """The write that sets the record of tasks failed in training to what `evolve revert`
    of `target` would have left, where the plain `git revert` (`git_commit`) left it
    otherwise (a conflict resolved by hand, or the file deleted: `_failed.git_revert_fix`);
    nothing when git's line-by-line revert got it right."""
    from evolve.skills._failed import git_revert_fix, parse_failed

    if len(git_commit.parents) != 1 or not target.parents:
        return {}
    parent, before = git_commit.parents[0], target.parents[0]
    touched = store.changed_paths(before, target.sha, [FAILED]) or store.changed_paths(
        parent, git_commit.sha, [FAILED]
    )
    if not touched:
        return {}
    now = store.read(head, FAILED)
    new = git_revert_fix(
        store.read(before, FAILED),
        store.read(target.sha, FAILED),
        store.read(parent, FAILED),
        store.read(git_commit.sha, FAILED),
        now,
    )

    def counts(data: bytes | None) -> dict[str, int]:
        return parse_failed(data.decode("utf-8") if data else None)

    return {} if counts(new) == counts(now) else {FAILED: new}


def answer(
    ws: Workspace, tx: Transaction, git_commit: CommitInfo, target: CommitInfo
) -> str | None:
    """Answer `git_commit`, the plain `git revert` of `target`, in one commit through `tx` (the
    writer's transaction); returns the commit, or None when nothing needed writing."""
    of_revert = is_revert(target)  # a revert's revert lifts tombstones by itself
    stones = [] if of_revert else _stones_for(ws, target, load_units(ws.root))
    changes: dict[str, bytes | None] = {str(s.path()): dump_unit(s).encode("utf-8") for s in stones}
    head = ws.store.head()
    # Counts git put back, line by line, into the record of a skill whose record
    # restarted since the target: taken back (`_restarts.git_revert_records`).
    kept: list[str] = []
    if head is not None:
        records, kept = git_revert_records(ws.store, head, git_commit, target)
        changes.update(records)
    # The tasks failed in training: the episodes the target counted come off, no others.
    failed = _failed_record(ws.store, head, git_commit, target) if head is not None else {}
    changes.update(failed)
    # A retirement brought back: its scoreboard record restarts (`_unretire`).
    back = git_unretired(ws.store, head, target) if head is not None and not of_revert else []
    if head is not None and back:
        changes.update(restart_files(ws.store, head, changes, back))
    ended: list[str] = []
    if head is not None and stones:  # a skill git revert removed: its record ends
        drops, ended = record_drops(ws.store, head, changes, stones)
        changes.update(drops)
    # Caps hold after the answer, as after `evolve revert`: the units the git
    # revert brought back over a cap in a scope it touched are evicted by the recipe's own
    # rule in this commit (`applier.fit_files`, the check `evolve revert` runs). The git
    # revert's own files are already at HEAD: they count as written, unchanged.
    capped = CapFit()
    if head is not None:
        brought = {
            path: ws.store.read(head, path)
            for _status, path in ws.store.changed_paths(
                git_commit.parents[0], git_commit.sha, ["memory"]
            )
        } if len(git_commit.parents) == 1 else {}  # fmt: skip
        capped = fit_files(
            ws, head, {**brought, **changes}, f"answering git revert {git_commit.short}"
        )
        capped.apply(changes)
    if not changes:
        return None
    only_caps = not set(changes) - capped.paths  # the git revert left a cap, nothing else
    restarted = [u.id for u in back]
    paths = tx.write(changes)
    body = [
        f"`git revert` ({git_commit.short}) restored the files of {target.short} but wrote "
        "no tombstones; these keep the next episodes from learning it again."
        if stones
        else f"`git revert` ({git_commit.short}) brought back what {target.short} retired."
        if restarted
        else f"`git revert` ({git_commit.short}) of {target.short} moved the counts of "
        "skills whose scoreboard record restarted since; they are taken back."
        if kept
        else f"`git revert` ({git_commit.short}) of {target.short} left the record of "
        "tasks failed in training other than `evolve revert` leaves it."
        if not only_caps
        else f"`git revert` ({git_commit.short}) of {target.short} brought memory back "
        "over a cap; evicted as `evolve revert` evicts.",
    ]
    if failed:
        body += [
            "",
            f"Tasks failed in training ({FAILED}): the failing episodes {target.short} "
            "counted are taken off, every other commit's kept (a task stays while an "
            "episode that was not reverted failed it).",
        ]
    if kept:
        body += [
            "",
            f"Scoreboard record kept as it was (it restarted after {target.short}; the "
            "counts went with the old record):",
            *[f"- {ident}" for ident in kept],
        ]
    if stones:
        body += ["", "Tombstones (refused if proposed again):"]
        body += [f"- {s.id}: {s.text[:120]}" for s in stones]
    if restarted:
        body += [
            "",
            "Scoreboard record restarted (the retirement is overruled: its evidence, the "
            "counters and the per-task counts, is set aside, so only new evidence can "
            "retire the skill again):",
            *[f"- {ident}" for ident in restarted],
        ]
    if ended:
        body += ["", "Scoreboard record dropped (the skill is tombstoned):"]
        body += [f"- {ident}" for ident in ended]
    body += capped.lines()
    ops = [("tombstone", s.id) for s in stones] + [("restart", i) for i in restarted]
    ops += [("keep", i) for i in kept]
    ops += capped.ops()
    trailers = [(KIND, "revert"), (REVERTS, target.sha), (GIT_REVERT, git_commit.sha)]
    if ops:
        trailers.append((OPS, format_ops(ops)))
    if restarted:
        trailers.append((RESTARTS, " ".join(restarted)))
    if PERSONA in target.trailers:
        trailers.append((PERSONA, target.trailers[PERSONA]))
    return tx.commit(
        paths,
        f"{'tombstones' if stones else 'record restart' if restarted else 'cap evictions' if only_caps else 'records'} "
        "for git revert "
        f"{git_commit.short}: {target.subject}"[:200],
        body="\n".join(body),
        trailers=trailers,
    )
