"""What the applier needs of a journal: to be told the paths before it writes them.

The journal itself (its file, its recovery) belongs to the transaction (`evolve.txn`), which
passes one in; the applier calls `begin` with every path right before the first write, and the
transaction ends it once the store has committed. Without one (a test, a scratch copy) the
writes are not journaled.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol


class WriteJournal(Protocol):
    def begin(self, paths: Sequence[str]) -> None: ...

    def end(self) -> None: ...


class NoJournal:
    """Writes outside a transaction: nothing is journaled."""

    def begin(self, paths: Sequence[str]) -> None:
        pass

    def end(self) -> None:
        pass
