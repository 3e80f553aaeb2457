"""Commit messages read with `str` methods only: subject, body, trailers, and what `evolve log`
shows of them (the complaint's first line, the refusals, the kind of change).

`evolve.store` (trailers), `evolve.history._log` and `evolve.history._show` use these
functions; they live here, with no `re` import, so that the fast path of the reading commands
shares them without loading the store.
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Protocol

    class CommitLike(Protocol):
        @property
        def parents(self) -> tuple[str, ...]: ...
        @property
        def body(self) -> str: ...
        @property
        def trailers(self) -> Mapping[str, str]: ...


EPISODE = "Evolve-Episode"
RECIPE = "Evolve-Recipe"
TASK = "Evolve-Task"
OPS = "Evolve-Ops"
GENERATION = "Evolve-Generation"
PERSONA = "Evolve-Persona"
KIND = "Evolve-Kind"


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
                known = known or key.startswith(("Evolve-", "Signed-off-by"))
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
    elif any(key.startswith("Evolve-") for key in info.trailers):
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
