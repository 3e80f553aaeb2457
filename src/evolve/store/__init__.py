"""The git store: commits with trailers, history, reads at any revision."""

from evolve.store._digest import digest
from evolve.store._git import CommitInfo, GitFailed, GitStore
from evolve.store._trailers import (
    EPISODE,
    GENERATION,
    KIND,
    OPS,
    PERSONA,
    RECIPE,
    TASK,
    clean_text,
    format_message,
    format_ops,
    parse_ops,
    parse_trailers,
    split_message,
)

__all__ = [
    "EPISODE",
    "GENERATION",
    "KIND",
    "OPS",
    "PERSONA",
    "RECIPE",
    "TASK",
    "CommitInfo",
    "GitFailed",
    "GitStore",
    "clean_text",
    "digest",
    "format_message",
    "format_ops",
    "parse_ops",
    "parse_trailers",
    "split_message",
]
