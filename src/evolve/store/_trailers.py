"""Git trailers of evolve commits (DESIGN.md §8, contract).

A training episode's commit carries `Evolve-Episode`, `Evolve-Recipe`, `Evolve-Task`,
`Evolve-Ops` and, inside a generation, `Evolve-Generation`. Other `Evolve-*` trailers may be
added; readers ignore the ones they do not know.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping

# The trailer names, the message splitting and `Evolve-Ops` parsing live with the reading
# commands' fast path (no `re`, no store import); this module re-exports them.
from evolve.quick._message import (
    EPISODE,
    GENERATION,
    KIND,
    OPS,
    PERSONA,
    RECIPE,
    TASK,
    parse_ops,
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

_KEY = re.compile(r"^[A-Za-z][A-Za-z0-9-]*$")
# Control characters other than tab and newline (C0, DEL and C1), Unicode line and paragraph
# separators, and lone surrogates: a commit message is text a person reads in a terminal and
# tools split into lines, so they are written as escapes.
_UNSAFE = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029\ud800-\udfff]")


def clean_text(text: str) -> str:
    """`text` with control characters (other than tab and newline) and lone surrogates
    written as visible escapes such as ``\\x1f``, so no commit message carries them."""
    return _UNSAFE.sub(
        lambda m: (
            f"\\x{ord(m.group()):02x}" if ord(m.group()) < 0x100 else f"\\u{ord(m.group()):04x}"
        ),
        text,
    )


Trailers = Mapping[str, str] | Iterable[tuple[str, str]]


def _pairs(trailers: Trailers) -> list[tuple[str, str]]:
    if isinstance(trailers, Mapping):
        return [(str(k), str(v)) for k, v in trailers.items()]
    return [(str(k), str(v)) for k, v in trailers]


def format_message(subject: str, body: str = "", trailers: Trailers = ()) -> str:
    """Build a commit message: a one-line subject, an optional body, then the trailer block."""
    subject = " ".join(clean_text(subject).split())
    if not subject:
        raise ValueError("a commit needs a subject line")
    parts = [subject]
    if body.strip():
        parts.append(clean_text(body.strip("\n")))
    lines = []
    for key, value in _pairs(trailers):
        if not _KEY.match(key):
            raise ValueError(f"invalid trailer key {key!r}")
        flat = " ".join(clean_text(value).split())
        if flat:
            lines.append(f"{key}: {flat}")
    if lines:
        parts.append("\n".join(lines))
    return "\n\n".join(parts) + "\n"


def parse_trailers(block: str) -> dict[str, str]:
    """Parse `Key: value` lines (as `git log --format=%(trailers:only,unfold)` prints them)."""
    out: dict[str, str] = {}
    for line in block.splitlines():
        key, sep, value = line.partition(":")
        if sep and _KEY.match(key.strip()):
            out[key.strip()] = value.strip()
    return out


def format_ops(ops: Iterable[tuple[str, str]]) -> str:
    return " ".join(f"{op}={ident}" for op, ident in ops)
