"""Tombstones for a plain `git revert`.

`git revert C` restores C's files exactly as `evolve revert C` does, but it writes no
tombstones, so the next episode would learn what C taught all over again. Every evolve writer
(`train`, `revert`, `review`) therefore looks, before it writes anything, for commits whose
message says "This reverts commit <sha>" and that no evolve commit has answered yet; for each
one whose target taught something, it adds the tombstones `evolve revert` would have written,
through the applier, in a commit of its own that says so (trailer `Evolve-Git-Revert: <sha>`).

A `git revert` of a revert (evolve's or git's) lifts tombstones by itself and needs nothing.
Reverting the tombstone commit with `evolve revert` lifts them too, and the marker keeps them
from being added again.

The same commit sets the skills' records right where git's line-by-line revert left them
otherwise than `evolve revert` would: counts put back into a restarted record
(`_restarts.git_revert_records`), and the record of tasks failed in training, which must keep
every episode the target did not count (`_failed_record`; git conflicts there when a later
batch failed the same task, and a hand resolution, or deleting the file the target created,
would drop it).
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import UTC, datetime

from evolve.applier import CapFit, fit_files
from evolve.history._changes import (
    GIT_REVERT,
    REVERTS,
    content_changes,
    git_revert_target,
    is_revert,
    taught_by,
)
from evolve.history._content import unit_of
from evolve.history._restarts import git_revert_records, record_drops
from evolve.history._unretire import RESTARTS, git_unretired, restart_files
from evolve.memory import MemoryUnit, dump_unit, load_units
from evolve.memory._similarity import normalize
from evolve.store import KIND, OPS, PERSONA, CommitInfo, GitStore, digest, format_ops
from evolve.workspace import Workspace

FAILED = "memory/skills/_failed_tasks.yaml"  # evolve.skills._failed.FAILED_PATH


REVERTS_DIGEST = "1"  # the version of what `_fold_reverts` keeps


def _fold_reverts(
    state: dict[str, list[str]], commits: Iterable[tuple[CommitInfo, str]]
) -> dict[str, list[str]]:
    """Fold commits (newest first) into {"reverts": the commits whose message says "This
    reverts commit " (git's `--grep`), newest first; "answered": the `Evolve-Git-Revert`
    values of evolve's tombstone commits}, as the two greps of the whole history found them."""
    reverts: list[str] = []
    answered: set[str] = set()
    needle = f"{GIT_REVERT}:"
    for info, message in commits:
        if "This reverts commit " in message:
            reverts.append(info.sha)
        if needle in message and GIT_REVERT in info.trailers:
            answered.add(info.trailers.get(GIT_REVERT, ""))
    return {
        "reverts": reverts + state["reverts"],
        "answered": sorted(answered.union(state["answered"])),
    }


def _reverts_shape(value: object) -> bool:
    return (
        isinstance(value, dict)
        and set(value) == {"reverts", "answered"}
        and all(isinstance(v, list) and all(isinstance(x, str) for x in v) for v in value.values())
    )


def unanswered(ws: Workspace) -> list[tuple[CommitInfo, CommitInfo]]:
    """(git revert commit, its target) pairs with no evolve tombstone commit yet, oldest first.

    What history says of reverts is kept per commit (`evolve.store.digest`): a writer reads
    only the commits since the last one that looked, not the whole history."""
    store = ws.store
    if store.head() is None:
        return []
    empty: dict[str, list[str]] = {"reverts": [], "answered": []}
    found = digest(
        store, "reverts", REVERTS_DIGEST, _fold_reverts, lambda: dict(empty), _reverts_shape
    )
    shas = found["reverts"]
    if not shas:
        return []
    answered = set(found["answered"])
    pairs = []
    for sha in reversed(shas):
        if sha in answered:
            continue
        info = store.commit_info(sha)
        target_sha = git_revert_target(info)
        if target_sha is None or info.trailers.get(KIND):
            continue
        try:
            target = store.commit_info(target_sha)
        except Exception:  # noqa: BLE001 - a target outside this history: nothing to do
            continue
        if len(target.parents) != 1:
            continue
        pairs.append((info, target))  # a revert's revert: only its records may need an answer
    return pairs


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


def tombstone_git_reverts(ws: Workspace, *, take_lock: bool = True) -> list[str]:
    """Add the tombstones that plain `git revert` commits did not write; returns the commits.

    Call it under the workspace lock (`take_lock=False`) from a writer that holds it.
    """
    from evolve.txn import joined, writer

    if take_lock:
        with writer(ws, "evolve: tombstones for git revert"):
            return tombstone_git_reverts(ws, take_lock=False)
    tx = joined(ws)
    made = []
    for git_commit, target in unanswered(ws):
        of_revert = is_revert(target)  # a revert's revert lifts tombstones by itself
        stones = [] if of_revert else _stones_for(ws, target, load_units(ws.root))
        changes: dict[str, bytes | None] = {
            str(s.path()): dump_unit(s).encode("utf-8") for s in stones
        }
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
            continue
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
        sha = tx.commit(
            paths,
            f"{'tombstones' if stones else 'record restart' if restarted else 'cap evictions' if only_caps else 'records'} "
            "for git revert "
            f"{git_commit.short}: {target.subject}"[:200],
            body="\n".join(body),
            trailers=trailers,
        )
        if sha is not None:
            made.append(sha)
    return made
