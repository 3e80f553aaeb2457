"""Git trailers of evolve commits (DESIGN.md §8, contract).

A training episode's commit carries `Evolve-Episode`, `Evolve-Recipe`, `Evolve-Task`,
`Evolve-Ops` and, inside a generation, `Evolve-Generation`. Other `Evolve-*` trailers may be
added; readers ignore the ones they do not know.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping

EPISODE = "Evolve-Episode"
RECIPE = "Evolve-Recipe"
TASK = "Evolve-Task"
OPS = "Evolve-Ops"
GENERATION = "Evolve-Generation"
PERSONA = "Evolve-Persona"
KIND = "Evolve-Kind"

_KEY = re.compile(r"^[A-Za-z][A-Za-z0-9-]*$")

Trailers = Mapping[str, str] | Iterable[tuple[str, str]]


def _pairs(trailers: Trailers) -> list[tuple[str, str]]:
    if isinstance(trailers, Mapping):
        return [(str(k), str(v)) for k, v in trailers.items()]
    return [(str(k), str(v)) for k, v in trailers]


def format_message(subject: str, body: str = "", trailers: Trailers = ()) -> str:
    """Build a commit message: a one-line subject, an optional body, then the trailer block."""
    subject = " ".join(subject.split())
    if not subject:
        raise ValueError("a commit needs a subject line")
    parts = [subject]
    if body.strip():
        parts.append(body.strip("\n"))
    lines = []
    for key, value in _pairs(trailers):
        if not _KEY.match(key):
            raise ValueError(f"invalid trailer key {key!r}")
        flat = " ".join(value.split())
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


def parse_ops(value: str) -> list[tuple[str, str]]:
    """Parse an `Evolve-Ops` value such as ``add=u-1 modify=u-2`` into (op, unit id) pairs."""
    ops = []
    for token in value.split():
        op, sep, ident = token.partition("=")
        if sep:
            ops.append((op, ident))
    return ops


def format_ops(ops: Iterable[tuple[str, str]]) -> str:
    return " ".join(f"{op}={ident}" for op, ident in ops)
