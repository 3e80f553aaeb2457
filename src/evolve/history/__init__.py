"""Reading and undoing history: log, show, memory as of a revision, revert."""

from evolve.history._asof import memory_as_of, resolve_as_of
from evolve.history._log import (
    TRACKED,
    LogEntry,
    clip,
    complaint_line,
    history,
    refresh_commit_graph,
)
from evolve.history._revert import REVERTS, RevertResult, revert
from evolve.history._show import UnitHistory, commit_kind, show_unit

__all__ = [
    "REVERTS",
    "TRACKED",
    "LogEntry",
    "RevertResult",
    "UnitHistory",
    "clip",
    "commit_kind",
    "complaint_line",
    "history",
    "memory_as_of",
    "refresh_commit_graph",
    "resolve_as_of",
    "revert",
    "show_unit",
]
