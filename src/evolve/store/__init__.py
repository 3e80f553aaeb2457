"""The git store: commits with trailers, history, reads at any revision."""

from evolve.store._git import CommitInfo, GitStore
from evolve.store._trailers import (
    EPISODE,
    GENERATION,
    KIND,
    OPS,
    PERSONA,
    RECIPE,
    TASK,
    format_message,
    format_ops,
    parse_ops,
    parse_trailers,
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
    "GitStore",
    "format_message",
    "format_ops",
    "parse_ops",
    "parse_trailers",
]
