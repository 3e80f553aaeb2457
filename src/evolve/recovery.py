"""One recovery entry point for every writer: crash leftovers are finished before anything else.

Every command that takes the workspace writer lock goes through :func:`writer`, which takes the
lock and then calls :func:`recover_workspace`:

1. the generation journal (`.git/evolve-generation.json`): a generation whose process died is
   reset to its base (uncommitted files saved with `git stash` first), its untracked files
   removed, and its record `rejected (error: ...)` written to `refs/evolve/records` and
   `generations/`;
2. the apply journal (`.git/evolve-journal.json`): a half-applied episode is undone;
3. temporary copies (`evolve-gate-*`, `evolve-score-*`, `evolve-dry-run-*`) whose owner is gone
   are removed.

Holding the lock is what makes this safe: the process that wrote a journal has released the
lock or died. Reading commands call :func:`recover_if_interrupted`, which does the same only
when a generation journal is left and no live writer holds the lock.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

from evolve.applier import recover as recover_apply
from evolve.errors import EvolveError, LockHeld
from evolve.gate import sweep
from evolve.generations._journal import journal_path, recover_generation
from evolve.generations._records import GenerationRecord
from evolve.workspace import Workspace


@dataclass
class Recovery:
    """What a recovery did (all empty when there was nothing to do)."""

    restored: list[str] = field(default_factory=list)  # paths of a half-applied episode
    generation: GenerationRecord | None = None  # the record of an interrupted generation

    def message(self) -> str | None:
        g = self.generation
        if g is None:
            return None
        return (
            f"generation {g.number} was interrupted ({g.phase}); the workspace was reset to its "
            f"base {g.base[:10]} and the generation recorded as rejected."
        )


def recover_workspace(ws: Workspace, command: str) -> Recovery:
    """Finish what a dead writer left (see the module docstring); call it holding the lock."""
    record = recover_generation(ws, command)
    restored = recover_apply(ws.store)
    sweep()
    return Recovery(restored, record)


@contextmanager
def writer(ws: Workspace, command: str) -> Iterator[Recovery]:
    """Take the writer lock for `command` and recover first; yields what was recovered.

    Raises:
        LockHeld: another live writer holds the lock.
    """
    with ws.lock(command):
        yield recover_workspace(ws, command)


def recover_if_interrupted(ws: Workspace, command: str) -> Recovery | None:
    """For reading commands: recover an interrupted generation if one is journaled and no live
    writer holds the lock (a running generation is left alone)."""
    try:
        if not journal_path(ws.store).exists():
            return None
    except EvolveError:  # not a git repository: the command itself will say so
        return None
    try:
        with writer(ws, command) as recovery:
            return recovery
    except LockHeld:
        return None
