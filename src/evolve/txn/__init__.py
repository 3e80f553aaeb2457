"""Transactions: the writer lock, the journals and recovery, for every writer.

    from evolve import txn

    with txn.writer(ws, "evolve train") as tx:
        applied = tx.apply(ops, units, scope=scope)
        tx.commit(applied.paths, subject, body=body, trailers=trailers)

Layer: above the store, the workspace, the applier and the gate (what it drives); below every
writer (train, generations, review, history's revert, compare, the CLI), which it never
imports. Names are imported on first use, so that `evolve.cli` can name `WriteInterrupted`
without loading git.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from evolve._lazy import lazy_exports

if TYPE_CHECKING:
    from evolve.txn._generation import GenerationJournal, GenerationTransaction, last_used_number
    from evolve.txn._lock import LOCK_NAME, WriterLock, writer_lock_held
    from evolve.txn._recovery import (
        Recovery,
        WriteInterrupted,
        WriteKeyboardInterrupt,
        active_writer,
        recover_workspace,
        stop_cleanly,
        undo_write,
    )
    from evolve.txn._writer import Transaction, joined, lock, recover_if_interrupted, writer

_MODULES = {
    "evolve.txn._generation": ("GenerationJournal", "GenerationTransaction", "last_used_number"),
    "evolve.txn._lock": ("LOCK_NAME", "WriterLock", "writer_lock_held"),
    "evolve.txn._recovery": (
        "Recovery",
        "WriteInterrupted",
        "WriteKeyboardInterrupt",
        "active_writer",
        "recover_workspace",
        "stop_cleanly",
        "undo_write",
    ),
    "evolve.txn._writer": ("Transaction", "joined", "lock", "recover_if_interrupted", "writer"),
}

__getattr__, __dir__ = lazy_exports(__name__, globals(), _MODULES)

__all__ = [
    "LOCK_NAME",
    "GenerationJournal",
    "GenerationTransaction",
    "Recovery",
    "Transaction",
    "WriteInterrupted",
    "WriteKeyboardInterrupt",
    "WriterLock",
    "active_writer",
    "joined",
    "last_used_number",
    "lock",
    "recover_if_interrupted",
    "recover_workspace",
    "stop_cleanly",
    "undo_write",
    "writer",
    "writer_lock_held",
]
