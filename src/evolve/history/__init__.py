"""Reading and undoing history: log, show, memory as of a revision, revert."""

from evolve.history._asof import memory_as_of, resolve_as_of
from evolve.history._gitrevert import tombstone_git_reverts
from evolve.history._log import TRACKED, LogEntry, complaint_line, history, refresh_commit_graph
from evolve.history._revert import GIT_REVERT, REVERTS, RevertResult, is_revert, revert, reverted_by
from evolve.history._show import UnitHistory, show_unit

__all__ = [
    "GIT_REVERT",
    "REVERTS",
    "TRACKED",
    "LogEntry",
    "RevertResult",
    "UnitHistory",
    "complaint_line",
    "history",
    "memory_as_of",
    "refresh_commit_graph",
    "resolve_as_of",
    "is_revert",
    "revert",
    "reverted_by",
    "show_unit",
    "tombstone_git_reverts",
]
