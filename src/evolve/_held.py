"""Which workspace writer locks this process holds.

The store may remove a git `.lock` file a killed process left only while this process holds
the workspace's writer lock (`GitStore.recover_stale_lock`). The lock itself belongs to the
transaction layer (`evolve.txn`), above the store; this registry sits at the bottom so that
the store can ask without importing upward. `evolve.txn.WriterLock` fills it.
"""

from __future__ import annotations

from pathlib import Path

LOCK_NAME = "evolve-writer.lock"  # the lock file under `.git/`

_HELD: set[Path] = set()  # resolved paths of the lock files this process holds


def hold(path: Path) -> None:
    _HELD.add(path.resolve())


def release(path: Path) -> None:
    _HELD.discard(path.resolve())


def writer_lock_held(git_dir: Path) -> bool:
    """Whether this process holds the writer lock of the repository at `git_dir`."""
    return (git_dir / LOCK_NAME).resolve() in _HELD
