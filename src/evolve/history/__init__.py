"""Reading and undoing history: log, show, memory as of a revision, revert.

Names are imported on first use (PEP 562): `evolve log` needs `_log` only, not the applier
and the workspace machinery that `revert` imports.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from evolve._lazy import lazy_exports

if TYPE_CHECKING:
    from evolve.history._asof import WorkingMemory, memory_as_of, memory_in_worktree, resolve_as_of
    from evolve.history._changes import GIT_REVERT, REVERTS, is_revert
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
    from evolve.history._revert import RevertResult, revert, reverted_by
    from evolve.history._show import UnitHistory, commit_kind, show_unit
    from evolve.history._travelled import RecordsMissing, require_records
    from evolve.history._twins import twins

_MODULES = {
    "evolve.history._asof": (
        "WorkingMemory",
        "memory_as_of",
        "memory_in_worktree",
        "resolve_as_of",
    ),
    "evolve.history._log": (
        "REFUSAL_KIND",
        "TRACKED",
        "TRAIN_REF",
        "LogEntry",
        "clip",
        "complaint_line",
        "history",
        "refresh_commit_graph",
        "refusal_records",
        "side_ref_sha",
    ),
    "evolve.history._gitrevert": ("tombstone_git_reverts",),
    "evolve.history._changes": ("GIT_REVERT", "REVERTS", "is_revert"),
    "evolve.history._revert": ("reverted_by", "RevertResult", "revert"),
    "evolve.history._show": ("UnitHistory", "commit_kind", "show_unit"),
    "evolve.history._travelled": ("RecordsMissing", "require_records"),
    "evolve.history._twins": ("twins",),
}

__getattr__, __dir__ = lazy_exports(__name__, globals(), _MODULES)


__all__ = [
    "GIT_REVERT",
    "REVERTS",
    "REFUSAL_KIND",
    "TRACKED",
    "RecordsMissing",
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
    "require_records",
    "resolve_as_of",
    "is_revert",
    "revert",
    "reverted_by",
    "show_unit",
    "side_ref_sha",
    "tombstone_git_reverts",
    "twins",
]
