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

Looking costs the writers next to nothing (`unanswered`, from a digest of history); the answer
itself (`_gitanswer`) is loaded only where a `git revert` waits for one.
"""

from __future__ import annotations

from collections.abc import Iterable

from evolve._format._message import GIT_REVERT
from evolve.store import KIND, CommitInfo, digest
from evolve.workspace import Workspace

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
    from evolve.history._changes import git_revert_target  # only where there are reverts

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


def tombstone_git_reverts(ws: Workspace, *, take_lock: bool = True) -> list[str]:
    """Add the tombstones that plain `git revert` commits did not write; returns the commits.

    Call it under the workspace lock (`take_lock=False`) from a writer that holds it.
    """
    from evolve.txn import joined, writer

    if take_lock:
        with writer(ws, "evolve: tombstones for git revert"):
            return tombstone_git_reverts(ws, take_lock=False)
    tx = joined(ws)
    pairs = unanswered(ws)
    if not pairs:
        return []
    from evolve.history._gitanswer import answer  # only where a git revert waits for one

    made = []
    for git_commit, target in pairs:
        sha = answer(ws, tx, git_commit, target)
        if sha is not None:
            made.append(sha)
    return made
