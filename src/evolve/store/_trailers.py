"""Git trailers of evolve commits: the names and the message format
are :mod:`evolve._format._message` (one definition, shared with the reading commands); the
store re-exports what its callers use."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from evolve._format._message import (
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
    "Trailers",
    "clean_text",
    "format_message",
    "format_ops",
    "parse_ops",
    "parse_trailers",
    "split_message",
]

Trailers = Mapping[str, str] | Iterable[tuple[str, str]]
