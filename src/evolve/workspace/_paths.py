"""Path confinement: every path a proposal names is checked here before anything is written.

The checks are syntactic first (no absolute paths, no `..`, nothing under `.git/`, no names
that only differ from a protected one by case or Unicode form, no control or invisible
formatting character: a bidi override or a zero-width space would make a name look other
than it is) and then physical (the path,
with symlinks resolved, stays inside the workspace).
"""

from __future__ import annotations

import unicodedata
from pathlib import Path, PurePosixPath

from evolve.errors import PathRefused

CONFIG_NAME = "evolve.yaml"  # the file whose folder is a workspace's root
# The generation journal in `.git/` (txn/_generation.py): reading commands check for it
# with one stat before importing any recovery code.
GENERATION_JOURNAL = "evolve-generation.json"
# The apply journal (txn/_journal.py): present while a write is in flight, or left by a
# writer that was killed; reading commands check for it the same way.
APPLY_JOURNAL = "evolve-journal.json"


def _fold(name: str) -> str:
    """Fold case and Unicode compatibility forms, so `TESTS`, `ｔｅｓｔｓ` and `tests` compare equal."""
    return unicodedata.normalize("NFKC", name).casefold()


def normalize_relpath(path: str | PurePosixPath) -> PurePosixPath:
    """Check the syntax of a workspace-relative path and return it in POSIX form.

    Raises:
        PathRefused: for absolute paths, `..`, `.git`, empty names, and names holding a
            control character or an invisible formatting character (Unicode category Cf: bidi
            controls and isolates, the BOM, zero-width characters).
    """
    raw = str(path)
    if not raw or raw.strip() != raw:
        raise PathRefused(f"refusing path {raw!r}: empty or padded with whitespace.")
    if (
        "\\" in raw
        or "\x00" in raw
        or any(unicodedata.category(ch) in ("Cc", "Cs", "Zl", "Zp") for ch in raw)
    ):
        raise PathRefused(
            f"refusing path {raw!r}: backslashes and control characters are not allowed."
        )
    if not raw.isascii() and any(unicodedata.category(ch) == "Cf" for ch in raw):
        raise PathRefused(
            f"refusing path {raw!r}: bidi controls, zero-width characters and other invisible "
            "formatting characters are not allowed in a file name."
        )
    pure = PurePosixPath(raw)
    if pure.is_absolute() or raw.startswith("~") or (len(raw) > 1 and raw[1] == ":"):
        raise PathRefused(f"refusing path {raw!r}: paths must be relative to the workspace root.")
    parts = pure.parts
    for part in parts:
        folded = _fold(part)
        if folded in ("..", "."):
            raise PathRefused(f"refusing path {raw!r}: '..' and '.' components are not allowed.")
        if folded.rstrip(". ") == ".git" or folded.startswith(".git/"):
            raise PathRefused(f"refusing path {raw!r}: nothing under .git/ may be written.")
    if not parts:
        raise PathRefused(f"refusing path {raw!r}: it names the workspace root itself.")
    if "." in raw.split("/"):
        raise PathRefused(f"refusing path {raw!r}: '..' and '.' components are not allowed.")
    return PurePosixPath(*parts)


def resolve(root: Path, path: str | PurePosixPath) -> Path:
    """Resolve a workspace-relative path to an absolute one inside `root`.

    Symlinks are followed: a link (anywhere along the path) that points outside the workspace
    is refused, as is any path under `.git/`.
    """
    rel = normalize_relpath(path)
    real_root = root.resolve()
    candidate = (real_root / rel).resolve()
    try:
        inside = candidate.relative_to(real_root)
    except ValueError:
        raise PathRefused(
            f"refusing path {str(path)!r}: it resolves outside the workspace (through a symlink)."
        ) from None
    if inside.parts and _fold(inside.parts[0]) == ".git":
        raise PathRefused(f"refusing path {str(path)!r}: it resolves into .git/.")
    return candidate


def is_under(path: PurePosixPath, prefix: str) -> bool:
    """Whether `path` equals or lies under `prefix` ("dir/" or "file"), folding case and Unicode."""
    folded = [_fold(p) for p in path.parts]
    want = [_fold(p) for p in PurePosixPath(prefix.rstrip("/")).parts]
    return folded[: len(want)] == want
