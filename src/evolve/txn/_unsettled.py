"""A merge git made without evolve (a plain `git merge` or `git pull`), not yet settled by
evolve's merge rules: writers refuse to build on it.

git runs a counter sidecar's merge driver only where the two sides differ. Two learners that
moved a counter alike (each saw one harmful episode of the same unit) leave identical bytes,
which git takes as the merge: one episode's count is gone, and a commit on top would keep it
gone (`evolve merge --fix` settles HEAD only). Likewise the unit rules (twins, a tombstone
from the other side, caps) run only in `evolve merge` and `evolve merge --fix`.

So every writer (`txn.writer`, unless it is `evolve merge --fix` itself) asks here first.
The cost when HEAD is not a merge is one read of HEAD's commit through the store's
long-lived `git cat-file --batch` (no process of its own); only a merge evolve did not make
is looked into (its merge base, and which files each side changed under `memory/`: three or
four git processes). Such a merge is refused when the rules may have something to settle:

- a counter sidecar both sides changed to the same bytes (a count lost), or
- unit files changed on both sides (the unit rules).

Deciding whether the rules would change anything means running them (three memories loaded
and merged), which a writer's start must not pay for on every command and which this layer
cannot import; `evolve merge --fix` runs them once, and either commits what they change (HEAD
moves on) or records the merge as settled here (`<git common dir>/evolve/settled-merges`), so
the next writer goes on. A merge evolve made (`Evolve-Kind: merge`) is settled by making.
"""

from __future__ import annotations

from collections.abc import Sequence

from evolve._format._message import KIND, split_message
from evolve._io import atomic_write
from evolve.errors import EvolveError
from evolve.store import GitFailed, GitStore
from evolve.workspace import Workspace

SETTLED = ("evolve", "settled-merges")  # under the git common dir; one commit id a line
_KEEP = 200  # the most recent settled merges remembered
_MAX_BASES = 4  # a criss-cross history's merge bases looked at (more: refused to be safe)


def _settled(store: GitStore) -> list[str]:
    try:
        with open(store.common_dir.joinpath(*SETTLED), encoding="utf-8") as f:
            return [line.strip() for line in f if line.strip()]
    except (FileNotFoundError, NotADirectoryError, UnicodeDecodeError):
        return []


def mark_settled(ws: Workspace, commit: str) -> None:
    """Record that evolve's merge rules found nothing to change in the merge `commit`."""
    store = ws.store
    kept = [sha for sha in _settled(store) if sha != commit][-(_KEEP - 1) :]
    path = store.common_dir.joinpath(*SETTLED)
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write(path, "".join(f"{sha}\n" for sha in [*kept, commit]))


def _shallow_cut(store: GitStore, commit: str) -> bool:
    """Whether a shallow clone cut the history at `commit` (its parents are not here)."""
    try:
        with open(store.common_dir / "shallow", encoding="ascii") as f:
            return any(line.strip() == commit for line in f)
    except (FileNotFoundError, NotADirectoryError, UnicodeDecodeError):
        return False


def _is_unit_file(path: str) -> bool:
    name = path.rsplit("/", 1)[-1]
    return path.startswith("memory/") and path.endswith(".md") and not name.startswith(".")


def _is_sidecar(path: str) -> bool:
    from evolve.workspace._drivers import PATTERNS

    for pattern in PATTERNS.values():
        if pattern.startswith("memory/**/"):
            if path.startswith("memory/") and path.endswith("/" + pattern.rsplit("/", 1)[1]):
                return True
        elif path == pattern:
            return True
    return False


def _bases(store: GitStore, parents: Sequence[str]) -> list[str]:
    args = ["merge-base", "--all", *(["--octopus"] if len(parents) > 2 else []), *parents]
    try:
        found = store.git(*args).split()
    except GitFailed:  # no common history: every file either side has is its change
        found = []
    return found or [store.empty_tree]


def _changed(store: GitStore, bases: Sequence[str], side: str) -> set[str]:
    """The paths under `memory/` that `side` changed since any of `bases`."""
    out: set[str] = set()
    for base in bases:
        out.update(store.committed_changes(base, side, ["memory"]))
    return out


def _why(store: GitStore, parents: Sequence[str]) -> str | None:
    """What evolve's merge rules may have to settle in a merge of `parents`, or None."""
    bases = _bases(store, parents)
    if len(bases) > _MAX_BASES:
        return "its sides share many merge bases"
    changed = [_changed(store, bases, side) for side in parents]
    if len(parents) > 2:
        sides = sum(1 for paths in changed if paths)
        return f"{sides} of its sides changed memory/" if sides > 1 else None
    ours, theirs = changed
    both = sorted(p for p in ours & theirs if _is_sidecar(p))
    if both:
        differ = set(store.committed_changes(parents[0], parents[1], both))
        alike = [p for p in both if p not in differ]
        if alike:
            return f"both sides changed {alike[0]} alike, and git kept one side's count"
    if any(map(_is_unit_file, ours)) and any(map(_is_unit_file, theirs)):
        return "both sides changed memory units"
    return None


def unsettled_merge(ws: Workspace) -> tuple[str, str, int] | None:
    """(HEAD, what the merge rules may settle there, its number of parents) when HEAD is a
    merge evolve did not make and has not settled; else None."""
    store = ws.store
    head = store.head()
    if head is None:
        return None
    parents, message = store.commit_parents(head)
    if len(parents) < 2:
        return None
    if split_message(message.decode("utf-8", "replace"))[2].get(KIND) == "merge":
        return None
    if _shallow_cut(store, head):
        return None  # a shallow clone's tip: git gives it no parents, and has none to merge
    if head in _settled(store):
        return None
    why = _why(store, parents)
    return None if why is None else (head, why, len(parents))


def unsettled_sentence(ws: Workspace, command: str) -> str | None:
    """The sentence a writer running `command` refuses with, when HEAD is a plain git merge
    evolve's merge rules have not settled; else None."""
    found = unsettled_merge(ws)
    if found is None:
        return None
    head, why, parents = found
    if parents > 2:
        return (
            f"HEAD ({head[:10]}) merges {parents} commits at once and {why}, which evolve's "
            "merge rules do not settle; undo it (`git reset --keep HEAD~1`), merge one ref at "
            f"a time with `evolve merge REF`, then run `{command}` again."
        )
    return (
        f"HEAD ({head[:10]}) is a merge git made without evolve's merge rules ({why}); run "
        f"`evolve merge --fix` to settle it, then run `{command}` again."
    )


def refuse_unsettled_merge(ws: Workspace, command: str) -> None:
    """Raise when HEAD is a plain git merge that evolve's merge rules have not settled.

    Raises:
        EvolveError: one sentence naming the merge and `evolve merge --fix` (or, for a
            merge of more than two commits, which evolve does not settle, how to undo it).
    """
    sentence = unsettled_sentence(ws, command)
    if sentence is not None:
        raise EvolveError(sentence)
