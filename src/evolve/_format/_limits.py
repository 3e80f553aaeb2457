"""How large a workspace file may be when evolve reads it, and how much memory is rendered.

A workspace can come from someone else, and any file in it can be edited by hand, so a file's
size is checked before it is parsed or rendered: a 40 MB counter sidecar would cost gigabytes
to parse, a 50 MB hand note would go whole into every prompt. Every reader of these files goes
through :func:`read_fd` (a file by path: :func:`read_bytes`, :func:`read_text`,
:func:`read_listed`; a blob at a revision: :func:`check_size` on the size git reports), which
refuses a file over its kind's limit in one sentence naming the file and the limit:

=================  ===========================================================  ==========
kind               files                                                        limit
=================  ===========================================================  ==========
unit               `memory/**.md`: units, skills and hand notes                  256 KiB
sidecar            other files under `memory/`: `_counters.yaml`, the skills'        2 MiB
                   staging area, strata and records
prompt             `prompts/**`                                                  256 KiB
config             `evolve.yaml`, `experiments/*.yaml`, `evolve-parameters.yaml`   1 MiB
record             `generations/**` (generation records, run logs)                64 MiB
=================  ===========================================================  ==========

The limits stand far above anything evolve writes (a unit is capped at hundreds of
characters, memory at `memory.max_memory_chars` <= 100,000) and far below what exhausts a
machine. `EVOLVE_READ_LIMIT_<KIND>` (bytes, e.g. `EVOLVE_READ_LIMIT_SIDECAR=8388608`) changes
one for a run.

Rendering (`_render.render_memory`) is bounded too, whatever a hand edit holds: no unit puts
more than :data:`RENDER_UNIT_CHARS` characters into `<memory>`, and the whole is cut at
:data:`RENDER_CHARS` (the largest `memory.max_memory_chars` allows), each cut marked.

Standard library only, nothing at import beyond `os`: the reading commands' fast path reads
through here.
"""

from __future__ import annotations

import os

from evolve import _confine as confined
from evolve.errors import EvolveError

TYPE_CHECKING = False
if TYPE_CHECKING:
    from pathlib import Path, PurePosixPath

KIB = 1024
MIB = 1024 * KIB
LIMITS: dict[str, int] = {
    "unit": 256 * KIB,
    "sidecar": 2 * MIB,
    "prompt": 256 * KIB,
    "config": 1 * MIB,
    "record": 64 * MIB,
}
_WHAT = {
    "unit": "a memory unit or hand note",
    "sidecar": "a file beside the units in memory/",
    "prompt": "a prompt file",
    "config": "a configuration file",
    "record": "a record",
}
RENDER_CHARS = 100_000
RENDER_UNIT_CHARS = 20_000
CUT = "[... cut: over the memory budget]"


class FileTooLarge(EvolveError):
    """A workspace file over its kind's size limit; the message names it and the limit."""


def kind_of(rel: str) -> str:
    """The kind of the workspace file `rel` (see the module table)."""
    rel = str(rel).lstrip("./")
    top = rel.split("/", 1)[0]
    if top == "memory":
        return "unit" if rel.endswith(".md") else "sidecar"
    if top == "prompts":
        return "prompt"
    if top == "generations":
        return "record"
    return "config"


def limit_of(kind: str) -> int:
    """The limit in bytes for files of `kind` (`EVOLVE_READ_LIMIT_<KIND>` overrides it)."""
    given = os.environ.get(f"EVOLVE_READ_LIMIT_{kind.upper()}", "")
    if given.isdigit() and int(given) > 0:
        return int(given)
    return LIMITS[kind]


def _size(n: int) -> str:
    if n >= MIB and n % MIB == 0:
        return f"{n // MIB} MiB"
    if n >= KIB and n % KIB == 0:
        return f"{n // KIB} KiB"
    return f"{n:,} bytes"


def check_size(rel: str, size: int) -> None:
    """Refuse the workspace file `rel` of `size` bytes when it is over its kind's limit.

    Raises:
        FileTooLarge: one sentence naming the file, its size and the limit.
    """
    kind = kind_of(rel)
    limit = limit_of(kind)
    if size > limit:
        raise FileTooLarge(
            f"{rel} is {size:,} bytes, over the {_size(limit)} limit for {_WHAT[kind]}; "
            f"shorten it or move it out of the workspace (or raise "
            f"EVOLVE_READ_LIMIT_{kind.upper()})."
        )


def read_fd(fd: int, rel: str) -> bytes:
    """The bytes of the open file `fd` (the workspace file `rel`), its size checked before a
    byte is read, and no more than the limit read even if it grows meanwhile. Closes `fd`."""
    with os.fdopen(fd, "rb") as f:
        check_size(rel, os.fstat(f.fileno()).st_size)
        limit = limit_of(kind_of(rel))
        data = f.read(limit + 1)
    check_size(rel, len(data))
    return data


def _text(data: bytes) -> str:
    """UTF-8 with universal newlines, as `Path.read_text` reads."""
    return data.decode("utf-8").replace("\r\n", "\n").replace("\r", "\n")


def read_bytes(root: Path | str, rel: str | PurePosixPath) -> bytes:
    """`evolve._confine.read_bytes`, bounded."""
    return read_fd(confined.open_fd(root, rel, os.O_RDONLY), str(rel))


def read_text(root: Path | str, rel: str | PurePosixPath) -> str:
    """`evolve._confine.read_text`, bounded (UTF-8, universal newlines)."""
    return _text(read_bytes(root, rel))


def read_listed(path: str, rel: str) -> str:
    """`evolve._confine.read_listed`, bounded: a file a folder walk listed (a file swapped
    for a link since is refused, never followed)."""
    return _text(read_fd(confined.open_listed(path, rel), rel))


def render_cut(text: str, limit: int) -> str:
    """`text` cut at `limit` characters (a marker line says so); `text` itself if shorter."""
    if len(text) <= limit:
        return text
    return text[: max(0, limit - len(CUT) - 1)].rstrip() + "\n" + CUT


def read_path(path: str, rel: str) -> bytes:
    """The bytes of the file at `path` (the workspace file `rel`, e.g. `evolve.yaml`, opened
    as its readers always have), its size checked first."""
    return read_fd(os.open(path, os.O_RDONLY | os.O_CLOEXEC), rel)
