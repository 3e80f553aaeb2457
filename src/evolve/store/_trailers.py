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
_TRAILER_LINE = re.compile(r"^([A-Za-z][A-Za-z0-9-]*)[ \t]*:[ \t]*(.*)$")
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


def _trailer_block(paragraph: str) -> dict[str, str] | None:
    """The trailers of a message's last paragraph, or None when it is not a trailer block.

    Like git: a paragraph is a trailer block when all its lines are `Key: value` lines (or
    indented continuations), or when at least a quarter are and one is an `Evolve-*` or
    `Signed-off-by` trailer (so a line a hook appends does not hide the trailers).
    """
    pairs: list[list[str]] = []
    other = 0
    known = False
    for line in paragraph.split("\n"):
        if not line.strip():
            continue
        match = _TRAILER_LINE.match(line)
        if match:
            pairs.append([match.group(1), match.group(2).strip()])
            known = known or match.group(1).startswith(("Evolve-", "Signed-off-by"))
        elif line[:1] in (" ", "\t") and pairs:
            pairs[-1][1] = f"{pairs[-1][1]} {line.strip()}".strip()
        else:
            other += 1
    if not pairs or (other and not (known and len(pairs) * 3 >= other)):
        return None
    return {key: value for key, value in pairs}


def split_message(message: str) -> tuple[str, str, dict[str, str]]:
    """Split a raw commit message into (subject, body without trailers, trailers).

    The subject is the first paragraph joined into one line (git's `%s`); the trailers are
    read from the message itself, never from anything around it.
    """
    text = message.replace("\r\n", "\n").strip("\n")
    head, _, rest = text.partition("\n\n")
    subject = " ".join(line.strip() for line in head.split("\n"))
    body = rest.strip("\n")
    if not body:
        return subject, "", {}
    front, sep, last = body.rpartition("\n\n")
    trailers = _trailer_block(last)
    if trailers is None:
        return subject, body.strip(), {}
    return subject, front.strip() if sep else "", trailers


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
