"""Reading and undoing history: log, show, memory as of a revision, revert.

Names are imported on first use (PEP 562): `evolve log` needs `_log` only, not the applier
and the workspace machinery that `revert` imports.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from evolve.history._asof import WorkingMemory, memory_as_of, memory_in_worktree, resolve_as_of
    from evolve.history._gitrevert import tombstone_git_reverts
    from evolve.history._log import (
        REFUSAL_KIND,
        TRACKED,
        TRAIN_REF,
        LogEntry,
        clip,
        complaint_line,
        history,
        refresh_commit_graph,
        refusal_records,
        side_ref_sha,
    )
    from evolve.history._revert import (
        GIT_REVERT,
        REVERTS,
        RevertResult,
        is_revert,
        revert,
        reverted_by,
    )
    from evolve.history._show import UnitHistory, commit_kind, show_unit

_WHERE = {
    "WorkingMemory": "evolve.history._asof",
    "memory_as_of": "evolve.history._asof",
    "memory_in_worktree": "evolve.history._asof",
    "resolve_as_of": "evolve.history._asof",
    "REFUSAL_KIND": "evolve.history._log",
    "TRACKED": "evolve.history._log",
    "TRAIN_REF": "evolve.history._log",
    "LogEntry": "evolve.history._log",
    "clip": "evolve.history._log",
    "complaint_line": "evolve.history._log",
    "history": "evolve.history._log",
    "refresh_commit_graph": "evolve.history._log",
    "refusal_records": "evolve.history._log",
    "side_ref_sha": "evolve.history._log",
    "tombstone_git_reverts": "evolve.history._gitrevert",
    "GIT_REVERT": "evolve.history._revert",
    "is_revert": "evolve.history._revert",
    "reverted_by": "evolve.history._revert",
    "REVERTS": "evolve.history._revert",
    "RevertResult": "evolve.history._revert",
    "revert": "evolve.history._revert",
    "UnitHistory": "evolve.history._show",
    "commit_kind": "evolve.history._show",
    "show_unit": "evolve.history._show",
}


def __getattr__(name: str) -> Any:
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module 'evolve.history' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


__all__ = [
    "GIT_REVERT",
    "REVERTS",
    "REFUSAL_KIND",
    "TRACKED",
    "TRAIN_REF",
    "LogEntry",
    "RevertResult",
    "UnitHistory",
    "WorkingMemory",
    "clip",
    "commit_kind",
    "complaint_line",
    "history",
    "memory_as_of",
    "memory_in_worktree",
    "refresh_commit_graph",
    "refusal_records",
    "resolve_as_of",
    "is_revert",
    "revert",
    "reverted_by",
    "show_unit",
    "side_ref_sha",
    "tombstone_git_reverts",
]
