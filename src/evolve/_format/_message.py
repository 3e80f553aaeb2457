"""Commit messages: every `Evolve-*` trailer name, writing a message,
reading one back with `str` methods only (subject, body, trailers), and what `evolve log`
shows of them (the complaint's first line, the refusals, the kind of change).

A training episode's commit carries `Evolve-Episode`, `Evolve-Recipe`, `Evolve-Task`,
`Evolve-Ops` and, inside a generation, `Evolve-Generation`. Other `Evolve-*` trailers may be
added (here, and nowhere else); readers ignore the ones they do not know.

The store writes with :func:`format_message`; the store, `evolve.history` and the reading
commands' fast path read with :func:`split_message`. No `re` at import: the fast path of the
reading commands shares this module without loading the store.
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping
    from typing import Protocol

    class CommitLike(Protocol):
        @property
        def parents(self) -> tuple[str, ...]: ...
        @property
        def body(self) -> str: ...
        @property
        def trailers(self) -> Mapping[str, str]: ...


PREFIX = "Evolve-"  # every trailer evolve writes starts so
EPISODE = "Evolve-Episode"  # the episode number (a skills batch: its last episode)
RECIPE = "Evolve-Recipe"
TASK = "Evolve-Task"
OPS = "Evolve-Ops"  # `op=id` pairs (`format_ops`, `parse_ops`)
GENERATION = "Evolve-Generation"
PERSONA = "Evolve-Persona"
KIND = "Evolve-Kind"  # what a commit is: init, splits, train, revert, skills batch, ...
STREAM = "Evolve-Stream"  # the training stream an episode belongs to
CLOCK = "Evolve-Clock"  # the persona's clock at an episode
SKILLS_SEEN = "Evolve-Skills-Seen"  # skills an episode's outcome was counted for
EPISODES = "Evolve-Episodes"  # the episodes of a skills batch
BATCH = "Evolve-Batch"  # a skills batch's number
RESTARTS = "Evolve-Restarts"  # skills a revert brought back from retirement
REVERTS = "Evolve-Reverts"  # the commit a revert takes back
GIT_REVERT = "Evolve-Git-Revert"  # a plain `git revert` answered through the applier
UNITS = "Evolve-Units"  # the units a per-unit revert took back (the rest of the commit stands)
BASE = "Evolve-Base"  # the commit a generation or review started from
MERGED = "Evolve-Merged"  # the commit a merge brought in (`evolve merge`)
MERGE_RULES = "Evolve-Merge-Rules"  # what the merge's reconcile did: `rule=N` pairs


_KEYS: dict[str, bool] = {}  # key -> whether it is a trailer key (keys repeat: a memo)


def _is_key(key: str) -> bool:
    """`[A-Za-z][A-Za-z0-9-]*`."""
    return bool(key) and key.isascii() and key[0].isalpha() and key.replace("-", "a").isalnum()


def trailer_line(line: str) -> tuple[str, str] | None:
    """(key, value) of a `Key: value` line (spaces or tabs allowed before the colon)."""
    key, sep, value = line.partition(":")
    if not sep:
        return None
    key = key.rstrip(" \t")
    if not _is_key(key):
        return None
    return key, value.strip()


def trailer_block(paragraph: str) -> dict[str, str] | None:
    """The trailers of a message's last paragraph, or None when it is not a trailer block.

    Like git: a paragraph is a trailer block when all its lines are `Key: value` lines (or
    indented continuations), or when at least a quarter are and one is an `Evolve-*` or
    `Signed-off-by` trailer (so a line a hook appends does not hide the trailers).
    """
    pairs: list[list[str]] = []
    other = 0
    known = False
    keys = _KEYS
    for line in paragraph.split("\n"):
        key, sep, value = line.partition(":")
        if sep:
            key = key.rstrip(" \t")
            ok = keys.get(key)
            if ok is None:
                ok = _is_key(key)
                if len(keys) < 4096:
                    keys[key] = ok
            if ok:
                pairs.append([key, value.strip()])
                known = known or key.startswith((PREFIX, "Signed-off-by"))
                continue
        if not line.strip():
            continue
        if line[:1] in (" ", "\t") and pairs:
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
    trailers = trailer_block(last)
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
    """An `Evolve-Ops` value from (op, unit id) pairs (what :func:`parse_ops` reads back)."""
    return " ".join(f"{op}={ident}" for op, ident in ops)


# Unicode's Bidi_Control characters (embeddings and overrides U+202A-U+202E, isolates
# U+2066-U+2069, the marks U+200E, U+200F, U+061C), the byte-order mark and the zero-width
# characters that are not joiners. They change how text looks, not what it is: model replies
# holding one are refused (`evolve._text`), and commit messages and what the reading commands
# print show them escaped. Defined here, with no import, so the reading commands' fast path
# can escape without loading `evolve._text`.
HIDDEN = frozenset(
    "\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069"
    "\ufeff\u200b\u2060\u180e"
)


def _unsafe(ch: str) -> bool:
    """Control characters other than tab and newline (C0, DEL and C1), Unicode line and
    paragraph separators, lone surrogates, and the hidden characters of :data:`HIDDEN`
    (bidi controls, the BOM, zero-width spaces): a commit message is text a person reads in a
    terminal and tools split into lines, so they are written as escapes."""
    code = ord(ch)
    return (
        code < 0x20
        and ch not in "\t\n"
        or 0x7F <= code <= 0x9F
        or code in (0x2028, 0x2029)
        or 0xD800 <= code <= 0xDFFF
        or ch in HIDDEN
    )


def clean_text(text: str) -> str:
    """`text` with control characters (other than tab and newline), lone surrogates and hidden
    characters written as visible escapes such as ``\\x1f`` and ``\\u202e``, so no commit
    message carries them; the reading commands print what a workspace holds through it too."""
    if text.isascii() and text.replace("\n", "").replace("\t", "").isprintable():
        return text
    return "".join(
        (f"\\x{ord(ch):02x}" if ord(ch) < 0x100 else f"\\u{ord(ch):04x}") if _unsafe(ch) else ch
        for ch in text
    )


def _pairs(trailers: Mapping[str, str] | Iterable[tuple[str, str]]) -> list[tuple[str, str]]:
    if hasattr(trailers, "items"):
        return [(str(k), str(v)) for k, v in trailers.items()]
    return [(str(k), str(v)) for k, v in trailers]


def format_message(
    subject: str, body: str = "", trailers: Mapping[str, str] | Iterable[tuple[str, str]] = ()
) -> str:
    """Build a commit message: a one-line subject, an optional body, then the trailer block."""
    subject = " ".join(clean_text(subject).split())
    if not subject:
        raise ValueError("a commit needs a subject line")
    parts = [subject]
    if body.strip():
        parts.append(clean_text(body.strip("\n")))
    lines = []
    for key, value in _pairs(trailers):
        if not _is_key(key):
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
        if sep and _is_key(key.strip()):
            out[key.strip()] = value.strip()
    return out


def clip(text: str, limit: int) -> str:
    """`text` on one line, cut at a word boundary to at most `limit` characters (with "…").

    Never cuts inside a word: a first word longer than `limit` is kept whole.
    """
    flat = " ".join(text.split())
    if len(flat) <= limit:
        return flat
    cut = flat.rfind(" ", 0, limit - 1)  # the kept part plus " …" stays within the limit
    if cut <= 0:
        first = flat.split(" ", 1)[0]
        return first if first == flat else first + " …"
    return flat[:cut].rstrip(" ,;:") + " …"


def complaint_line(body: str) -> str | None:
    """The first line of the complaint recorded in a training commit's body."""
    if "Complaint:" not in body:
        return None
    lines = body.splitlines()
    for i, line in enumerate(lines):
        if line.strip() == "Complaint:":
            return next((ln.strip() for ln in lines[i + 1 :] if ln.strip()), None)
    return None


def refused_lines(body: str) -> list[str]:
    """The `Refused:` section of an episode commit's (or refusal record's) body."""
    out: list[str] = []
    if "Refused:" not in body:
        return out
    inside = False
    for line in body.splitlines():
        if line.strip() == "Refused:":
            inside = True
            continue
        if inside:
            if not line.strip():
                break
            out.append(line.strip().removeprefix("- "))
    return out


_KIND_LABELS = {
    "train": "learned",
    "learned": "learned",
    "hand": "hand edit",
    "revert": "revert",
    "cascade revert": "revert",
    "cascade-revert": "revert",
    "review": "review",
    "generation": "generation",
    "reflector": "reflector",
    "init": "scaffold",
    "merge": "merge",
}


def commit_kind(info: CommitLike) -> str:
    """What kind of change a commit is, for a reviewer: learned, hand edit, revert, review,
    generation, reflector (from `Evolve-Kind` where present).

    A commit without evolve trailers is a person's own edit ("hand edit"), unless it is a plain
    `git revert` ("This reverts commit ..."), which is a revert.
    """
    kind = info.trailers.get(KIND)
    if kind:
        label = _KIND_LABELS.get(kind.strip().lower(), kind.strip().lower())
    elif EPISODE in info.trailers:
        label = "learned"
    elif any(key.startswith(PREFIX) for key in info.trailers):
        label = "generation" if GENERATION in info.trailers else "evolve"
    elif "This reverts commit" in info.body:
        label = "revert"
    elif not info.parents:
        label = "scaffold"
    else:
        label = "hand edit"
    if label == "learned" and GENERATION in info.trailers:
        label = f"learned, generation {info.trailers[GENERATION]}"
    return label
