"""The apply journal: a half-applied write never survives a crash.

Before the applier writes, the transaction records HEAD and the paths it will touch in
`.git/evolve-journal.json`; after the store commits, the journal is removed. If a process dies
in between, the next writer restores those paths to HEAD: if the commit happened that is a
no-op, and if it did not, the half-written files are undone. A writer stopped by Ctrl-C or
SIGTERM does the same itself before it exits (`evolve.txn.stop_cleanly`), and a reading
command does it when no live writer holds the lock, so only a SIGKILL leaves the journal for
long.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

from evolve._format._message import PREFIX
from evolve._io import atomic_write, temp_prefix
from evolve.errors import EvolveError
from evolve.store import GitStore
from evolve.workspace._paths import APPLY_JOURNAL

JOURNAL = APPLY_JOURNAL


def journal_path(store: GitStore) -> Path:
    return store.git_dir / JOURNAL


class ApplyJournal:
    """The apply journal of one repository (what the applier calls before it writes).

    Before the first file of a write it checks that HEAD is a branch (a write that could not
    be committed is refused before anything is written, not undone after) and remembers HEAD,
    so that the commit can tell a person's commit made meanwhile (`check_branch`). A commit
    made between two writes is not a race: the next episode reads memory after it.
    """

    def __init__(self, store: GitStore) -> None:
        self.store = store
        self.expected: str | None = None  # HEAD when the write in flight began

    def begin(self, paths: Sequence[str]) -> None:
        self.expected = check_branch(self.store, None)
        begin(self.store, paths)

    def end(self) -> None:
        end(self.store)
        self.expected = None


def check_branch(store: GitStore, expected: str | None) -> str | None:
    """HEAD, after checking that it is a branch and that every commit on it since `expected`
    (HEAD when a write began; None: no check) is evolve's own: a person's `git commit` made
    while a write is in flight would be overwritten by a write planned on what came before.

    Raises:
        EvolveError: HEAD is detached, or someone else committed (one sentence, naming it).
    """
    if store.head_branch() is None:
        raise EvolveError(
            "HEAD is detached, so there is no branch to commit to; nothing was written: check "
            "out a branch (`git switch <branch>`) and rerun."
        )
    head = store.head()
    if expected is None or head == expected:
        return head
    for info in store.log(rev=f"{expected}..{head}"):
        if not any(key.startswith(PREFIX) for key in info.trailers):
            raise EvolveError(
                f"someone committed on the branch while evolve was running ({info.short} "
                f"{info.subject[:60]!r}), so its planned write no longer fits; nothing of it "
                "was written: rerun the command."
            )
    return head


def begin(store: GitStore, paths: Sequence[str]) -> None:
    # Atomic against a killed process (the case this guards); like git's own loose objects,
    # not fsynced against power loss, which would cost milliseconds on every episode.
    atomic_write(
        journal_path(store), json.dumps({"head": store.head(), "paths": sorted(set(paths))})
    )


def end(store: GitStore) -> None:
    journal_path(store).unlink(missing_ok=True)


def committed_since(store: GitStore, before: str | None) -> bool:
    """Whether the journaled write was committed: HEAD moved from `before` (HEAD when the write
    began) to a commit of evolve's own on top of it (a person's commit meanwhile is not one)."""
    head = store.head()
    if before is None or head is None or head == before:
        return False
    try:
        info = store.commit_info(head)
    except EvolveError:
        return False
    return before in info.parents and any(k.startswith(PREFIX) for k in info.trailers)


def journal_head(store: GitStore) -> str | None:
    """HEAD when the journaled write began (None: no journal, or unreadable)."""
    try:
        head = json.loads(journal_path(store).read_text(encoding="utf-8")).get("head")
    except (OSError, ValueError, AttributeError):
        return None
    return head if isinstance(head, str) else None


def recover(store: GitStore) -> list[str]:
    """Undo what a crashed writer left half-applied; returns the paths restored."""
    path = journal_path(store)
    if not path.exists():
        return []
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        paths = [str(p) for p in data.get("paths", [])]
    except (ValueError, AttributeError):
        paths = []
    head = store.head()
    if head is not None and paths:
        tracked = set(store.list_files(head, "memory")) | set(store.list_files(head, "prompts"))
        restore = [p for p in paths if p in tracked]
        if restore:
            store.checkout_paths(head, restore)
        for p in paths:
            if p not in tracked:
                (store.root / p).unlink(missing_ok=True)
    for p in paths:  # the temporary file of a write killed before its rename
        full = store.root / p
        if full.parent.is_dir():
            for leftover in full.parent.glob(f"{temp_prefix(full.name)}*.tmp"):
                leftover.unlink(missing_ok=True)
    path.unlink(missing_ok=True)
    return paths
