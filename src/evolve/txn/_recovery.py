"""Recovery, in one place: crash leftovers are finished before anything else.

Every command that takes the workspace writer lock goes through `evolve.txn.writer`, which
takes the lock and then calls :func:`recover_workspace`:

1. the generation journal (`.git/evolve-generation.json`): a generation whose process died is
   reset to its base (uncommitted files saved with `git stash` first), its untracked files
   removed, and its record `rejected (error: ...)` written to `refs/evolve/records` and
   `generations/`;
2. the apply journal (`.git/evolve-journal.json`): a half-applied episode is undone;
3. temporary copies (`evolve-gate-*`, `evolve-score-*`, `evolve-dry-run-*`) whose owner is gone
   are removed.

Holding the lock is what makes this safe: the process that wrote a journal has released the
lock or died. Reading commands call `evolve.txn.recover_if_interrupted`, which does the same only
when a journal is left and no live writer holds the lock (a running writer is left alone, and
:func:`active_writer` names it, so that a reader can say it reads files mid-update).

A writer stopped by Ctrl-C, SIGTERM or SIGHUP does not leave this to the next command: under
`evolve.txn.writer` the signal unwinds to :func:`stop_cleanly`, which, still holding the lock and
with further signals held off, undoes the in-flight write (or finds it committed) and raises
:class:`WriteInterrupted`, whose message says which; the command line prints it and exits
128 + the signal's number (130, 143, 129). Only SIGKILL (or a power cut) leaves a journal
behind.
"""

from __future__ import annotations

import os
import signal
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

from evolve._held import owner_gone
from evolve._signals import Terminated, signals_held, signals_raise
from evolve.errors import EvolveError
from evolve.store import GitStore
from evolve.txn._journal import committed_since
from evolve.txn._journal import journal_head as _journal_head
from evolve.txn._journal import journal_path as apply_journal_path
from evolve.txn._journal import recover as recover_apply
from evolve.txn._lock import LOCK_NAME, WriterLock
from evolve.workspace import Workspace
from evolve.workspace._paths import GENERATION_JOURNAL

TYPE_CHECKING = False
if TYPE_CHECKING:
    from evolve.txn._records import GenerationRecord


@dataclass
class Recovery:
    """What a recovery did (all empty when there was nothing to do)."""

    restored: list[str] = field(default_factory=list)  # paths of a half-applied episode
    generation: GenerationRecord | None = None  # the record of an interrupted generation
    committed: bool = False  # the half-applied episode had been committed (restoring: no-op)

    def message(self) -> str | None:
        g = self.generation
        if g is not None:
            return (
                f"generation {g.number} was interrupted ({g.phase}); the workspace was reset to "
                f"its base {g.base[:10]} and the generation recorded as rejected."
            )
        if self.restored and self.committed:
            return (
                f"an interrupted evolve write ({_files(self.restored)}) had been committed; "
                "its journal was removed."
            )
        if self.restored:
            return (
                f"an interrupted evolve write was rolled back: {_files(self.restored)} restored "
                "to HEAD (nothing of it had been committed, so nothing is lost)."
            )
        return None


class WriteInterrupted(BaseException):
    """A writer stopped by a signal, after its in-flight write was undone or found committed.

    `message` says which (one sentence); `exit_code` is 128 + the signal's number. Ctrl-C
    raises :class:`WriteKeyboardInterrupt`, which is also a KeyboardInterrupt.
    """

    def __init__(self, message: str, signame: str) -> None:
        super().__init__(message)
        self.message = message
        self.signame = signame

    @property
    def exit_code(self) -> int:
        return 128 + int(signal.Signals[self.signame])


class WriteKeyboardInterrupt(WriteInterrupted, KeyboardInterrupt):
    """Ctrl-C stopped a writer (see :class:`WriteInterrupted`)."""


def _files(paths: list[str]) -> str:
    shown = ", ".join(paths[:4]) + (" ..." if len(paths) > 4 else "")
    return f"{len(paths)} file{'s' if len(paths) != 1 else ''} ({shown})"


def undo_write(ws: Workspace) -> str:
    """Undo the write in flight, if any (the caller holds the lock); returns a sentence that
    says what became of it."""
    path = apply_journal_path(ws.store)
    if not path.exists():
        return "no write was in progress; every finished update is committed."
    before = _journal_head(ws.store)
    # A fresh store: the interrupted one may have been cut off in the middle of a git reply.
    store = GitStore(ws.store.root)
    try:
        restored = recover_apply(store)
        head = store.head() or ""
        committed = committed_since(store, before)
    except Exception as exc:  # noqa: BLE001 - said in the sentence; the next writer retries
        return (
            f"the write in progress could not be rolled back ({type(exc).__name__}); the next "
            "evolve command rolls it back: do not commit memory/ or prompts/ before that."
        )
    finally:
        store.close()
    if committed:
        return f"the write in progress had been committed ({head[:10]}); nothing is half-written."
    return (
        f"the half-done write of {_files(restored)} was rolled back to HEAD {head[:10]}; "
        "nothing is half-written."
    )


def _says_its_outcome(exc: BaseException) -> bool:
    """Whether `exc` already says what became of the write (a generation's rollback does)."""
    return isinstance(exc, WriteInterrupted) or (
        isinstance(exc, KeyboardInterrupt) and type(exc) is not KeyboardInterrupt
    )


@contextmanager
def stop_cleanly(ws: Workspace) -> Iterator[None]:
    """Ctrl-C, SIGTERM or SIGHUP inside this block undo the in-flight write before they end
    the process: call it holding the writer lock (see the module docstring).

    Raises:
        WriteInterrupted: after the undo (WriteKeyboardInterrupt for Ctrl-C).
    """
    with signals_raise():
        try:
            yield
        except (KeyboardInterrupt, Terminated) as exc:
            if _says_its_outcome(exc):
                raise
            name = exc.name if isinstance(exc, Terminated) else "SIGINT"
            with signals_held():
                said = undo_write(ws)
            how = "Ctrl-C (SIGINT)" if name == "SIGINT" else name
            cls = WriteKeyboardInterrupt if name == "SIGINT" else WriteInterrupted
            raise cls(f"stopped by {how}; {said}", name) from None


def recover_workspace(ws: Workspace, command: str) -> Recovery:
    """Finish what a dead writer left (see the module docstring); call it holding the lock."""
    record = None
    if (ws.store.git_dir / GENERATION_JOURNAL).exists():
        # the generation code (and the gate it uses) loads only when there is one to finish
        from evolve.txn._generation import recover_generation

        record = recover_generation(ws, command)
    before = _journal_head(ws.store)
    restored = recover_apply(ws.store)
    committed = bool(restored) and committed_since(ws.store, before)
    from evolve.gate._tempdirs import sweep  # not the gate's checks: only its copies

    sweep()
    return Recovery(restored, record, committed)


def active_writer(ws: Workspace) -> str | None:
    """The live evolve writer of this workspace, named (`evolve train` (pid 12)), or None.

    Read from the lock file's label, not by taking the lock (a reader that took it, even for
    an instant, could make a writer starting then refuse): the label names the holder until it
    releases the lock; one that names a process no longer running (killed) is no writer.
    """
    try:
        holder = WriterLock(ws.store.git_dir / LOCK_NAME, "probe").holder()
    except EvolveError:
        return None
    if not holder:
        return None
    pid = holder.get("pid")
    if not isinstance(pid, int) or pid == os.getpid() or owner_gone(holder):
        return None  # killed (its pid gone, or reused by another process since)
    return f"`{holder.get('command')}` (pid {pid})"
