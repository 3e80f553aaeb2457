"""The one way to write a workspace: lock, recover, journal, apply, commit.

    with txn.writer(ws, "evolve train") as tx:   # the lock, then recovery; Ctrl-C undoes
        applied = tx.apply(ops, units, scope=scope)   # journaled, then written
        tx.commit(applied.paths, subject, body=body, trailers=trailers)  # then unjournaled

Code that runs under a lock its caller took (a generation's training, an experiment's arm,
the scoreboard's counts inside an episode) joins that transaction with :func:`joined`; a
generation opens its own journaled unit with :meth:`Transaction.generation`.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager

from evolve.applier import ApplyResult, MemoryApplier, write_files
from evolve.applier._files import EVOLVABLE
from evolve.errors import EvolveError, LockHeld, WriteFailed, write_failure
from evolve.memory import MemoryUnit
from evolve.ops import Op
from evolve.store import GitStore
from evolve.txn._gitstate import refuse_git_in_progress
from evolve.txn._journal import ApplyJournal, check_branch, journal_path, recover
from evolve.txn._lock import LOCK_NAME, WriterLock, writer_lock_held
from evolve.txn._recovery import Recovery, recover_workspace, stop_cleanly, undo_write
from evolve.txn._unsettled import refuse_unsettled_merge
from evolve.workspace import Workspace

TYPE_CHECKING = False
if TYPE_CHECKING:
    from evolve.txn._generation import GenerationTransaction

Trailers = Mapping[str, str] | Sequence[tuple[str, str]]


class Transaction:
    """Writes to one workspace under its writer lock (see the module docstring).

    Every write is journaled before it touches a file and unjournaled once the store has
    committed it, so a crash in between is undone by the next writer (`Recovery`), and a
    signal by this one (`stop_cleanly`).
    """

    def __init__(self, ws: Workspace, recovery: Recovery | None = None) -> None:
        self.ws = ws
        self.recovery = recovery or Recovery()  # what taking the lock recovered
        self.journal = ApplyJournal(ws.store)

    @property
    def store(self) -> GitStore:
        return self.ws.store

    def applier(self, scope: str) -> MemoryApplier:
        """The memory applier of `scope`, writing under this transaction's journal."""
        return MemoryApplier(self.ws, scope, self.journal)

    def apply(
        self,
        ops: Sequence[Op],
        units: Sequence[MemoryUnit],
        *,
        scope: str,
        extra_files: Mapping[str, bytes | None] | None = None,
    ) -> ApplyResult:
        """Check `ops` against `units` and write the accepted ones (see `MemoryApplier.apply`);
        commit `result.paths` with :meth:`commit`."""
        return self.applier(scope).apply(ops, units, extra_files=extra_files)

    def write(
        self, files: Mapping[str, bytes | None], allowed: tuple[str, ...] = EVOLVABLE
    ) -> list[str]:
        """Write whole files (None deletes one) after checking every path; returns the paths
        to commit."""
        return write_files(self.ws, files, allowed, self.journal)

    def commit(
        self, paths: Sequence[str], subject: str, *, body: str = "", trailers: Trailers = ()
    ) -> str | None:
        """Commit `paths` (None: nothing changed) and end the journal of their write.

        If the store refuses the commit (a hook, or the branch moved under someone else's
        commit), the write is undone at once and the refusal raised; a signal's undo is
        `stop_cleanly`'s, a crash's the next writer's.
        """
        try:
            check_branch(self.store, self.journal.expected)  # a person's commit since the write
            sha = self.store.commit(paths, subject, body=body, trailers=trailers)
        except EvolveError as exc:
            # Refused (a hook, the branch moved under a person's commit): undo the write now,
            # holding the lock, rather than leave it for the next command to find.
            restored = recover(self.store)
            undone = f"; its write of {len(restored)} file(s) was rolled back" if restored else ""
            raise EvolveError(f"{str(exc).rstrip('.')}{undone}.") from exc
        self.journal.end()
        return sha

    def end(self) -> None:
        """End the journal of a write that is not committed (it wrote nothing, or the caller
        keeps it in the working tree on purpose)."""
        self.journal.end()

    def recover_write(self) -> list[str]:
        """Undo a half-applied write left in the journal; returns the paths restored."""
        return recover(self.store)

    def generation(
        self, number: int, protected_hash: str, *, dry_run: bool = False
    ) -> GenerationTransaction:
        """Journal the base of generation `number` (HEAD now) before it changes anything."""
        from evolve.txn._generation import GenerationTransaction, begin

        return GenerationTransaction(
            self.ws, begin(self.ws, number, protected_hash, dry_run=dry_run)
        )


def lock(ws: Workspace, command: str) -> WriterLock:
    """The workspace's writer lock alone (`with txn.lock(ws, "evolve train"):`), without
    recovery or signal handling; writers use :func:`writer`."""
    return WriterLock(ws.store.git_dir / LOCK_NAME, command)


@contextmanager
def writer(ws: Workspace, command: str, *, check_git: bool = True) -> Iterator[Transaction]:
    """Take the writer lock for `command`, recover what a dead writer left, and yield the
    transaction (`tx.recovery` says what was recovered). Ctrl-C, SIGTERM or SIGHUP inside
    undo the write in flight and raise `WriteInterrupted` (see `evolve.txn._recovery`).

    A git revert, merge, rebase or cherry-pick in progress is refused first, naming it, and
    so is a HEAD that is a plain git merge evolve's merge rules have not settled (`_unsettled`;
    `check_git=False`: recovery for a reading command, which writes nothing of its own, and
    `evolve merge --fix`, which settles it).
    A write the file system refuses (disk full, read-only, permission denied) is undone
    the same way, and said in one sentence.

    Raises:
        LockHeld: another live writer holds the lock.
        EvolveError: git is in the middle of an operation (`_gitstate`), or HEAD is an
            unsettled plain merge (`_unsettled`).
        WriteFailed: the file system refused a write; the write in flight was rolled back.
    """
    if check_git:
        refuse_git_in_progress(ws, command)
        refuse_unsettled_merge(ws, command)
    with lock(ws, command), stop_cleanly(ws):
        try:
            yield Transaction(ws, recover_workspace(ws, command))
        except OSError as exc:
            said = write_failure(exc)
            if said is None:
                raise
            # Still holding the lock: the write in flight is undone now, not by the next command.
            undone = undo_write(ws)
            what, fix = said
            raise WriteFailed(f"`{command}` stopped: {what} ({fix}, then rerun); {undone}") from exc


def joined(ws: Workspace) -> Transaction:
    """The transaction of a writer that already holds this workspace's lock in this process
    (its caller took it with :func:`writer`).

    Raises:
        EvolveError: this process does not hold the lock (a bug: writes need it).
    """
    if not writer_lock_held(ws.store.git_dir):
        raise EvolveError(
            "internal error: a write outside the workspace's writer lock; run it under "
            "`evolve.txn.writer`."
        )
    return Transaction(ws)


def recover_if_interrupted(ws: Workspace, command: str) -> Recovery | None:
    """For reading commands: recover an interrupted generation or write if one is journaled
    and no live writer holds the lock (a running one is left alone)."""
    from evolve.txn._generation import journal_path as generation_journal

    try:
        if not generation_journal(ws.store).exists() and not journal_path(ws.store).exists():
            return None
    except EvolveError:  # not a git repository: the command itself will say so
        return None
    try:
        with writer(ws, command, check_git=False) as tx:
            return tx.recovery
    except LockHeld:
        return None
