"""The applier for whole files (prompt edits, reverts): the same containment, the same journal."""

from __future__ import annotations

from collections.abc import Mapping

from evolve import _confine as confined
from evolve.applier import _secrets
from evolve.applier._journal import NoJournal, WriteJournal
from evolve.errors import PathRefused
from evolve.workspace import Workspace

EVOLVABLE = ("memory/", "prompts/")


def check_files(
    ws: Workspace, changes: Mapping[str, bytes | None], allowed: tuple[str, ...] = EVOLVABLE
) -> None:
    """Refuse (raise PathRefused) if any path is protected, escapes, or is not evolvable, or
    if a file would hold a configured secret (`evolve.applier._secrets`)."""
    for path in changes:
        ws.check_writable(path, allowed=allowed)
    if (why := _secrets.files_reason(changes, _secrets.redactor(ws))) is not None:
        raise PathRefused(why)


def write_files(
    ws: Workspace,
    changes: Mapping[str, bytes | None],
    allowed: tuple[str, ...] = EVOLVABLE,
    journal: WriteJournal | None = None,
) -> list[str]:
    """Check every path first, then write them all under `journal`; None deletes a file.

    Returns the paths to commit; the caller (`evolve.txn`) commits them and ends the journal.
    """
    check_files(ws, changes, allowed)
    paths = sorted(changes)
    if not paths:
        return []
    (journal or NoJournal()).begin(paths)
    for path in paths:
        full = ws.resolve(path)
        data = changes[path]
        if data is None:
            full.unlink(missing_ok=True)
        else:
            confined.write_atomic(ws.root, path, data)  # no link followed out, at open time
    return paths
