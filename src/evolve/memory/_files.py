"""Reading the units of a workspace: from the working tree, or from git at any revision."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from evolve._format import Unhandled
from evolve._format import _limits as limits
from evolve._format._units import (
    COUNTERS_NAME,
    Counters,
    overlay,
    parse_values,
    scan,
    scope_of_counters,
)
from evolve._format._units import parse_counters as parse_canonical_counters
from evolve.memory._counters import parse_counters
from evolve.memory._unit import MalformedUnit, MemoryUnit, parse_unit

if TYPE_CHECKING:  # reading the working tree needs no git; only as-of reads do
    import os

    from evolve.store import GitStore

MEMORY_PREFIX = "memory/"
T = TypeVar("T")


def read_unit(rel: str, raw: str) -> MemoryUnit:
    """`parse_unit(rel, raw)`, four times faster for a file in evolve's canonical form: its
    fields are read and checked by the canonical reader (`evolve._format._units`),
    which proves them valid, and the model is built from them without validating again."""
    try:
        values = parse_values(rel, raw)
    except Unhandled:
        return parse_unit(rel, raw)  # anything else, and every error, in the model's words
    return construct_unit(values)


def construct_unit(values: Mapping[str, Any]) -> MemoryUnit:
    """The unit of field values the canonical reader checked, built without checking them
    again (`MemoryUnit.model_construct`)."""
    return MemoryUnit.model_construct(**values)


def read_counters(rel: str, raw: str) -> Counters:
    """`parse_counters(rel, raw)`, without YAML for a sidecar in canonical form."""
    try:
        return parse_canonical_counters(raw)
    except Unhandled:
        return parse_counters(rel, raw)


def _is_unit_path(rel: str) -> bool:
    name = rel.rsplit("/", 1)[-1]
    return rel.endswith(".md") and not name.startswith(".")


class UnitReader:
    """Reads the units of a working tree, re-parsing only files whose stat changed.

    Training reads the whole of `memory/` before every episode (so that a hand edit or a
    revert takes effect at once); with a thousand units, parsing only what changed keeps
    that read to a directory walk.

    With `remember` (a cache file in `.git/`, `evolve._format._cache.UNITS_CACHE`), the first
    read also takes what an earlier process read of each file that has not changed since
    (`RememberedUnits`), so a new process does not read and parse a thousand files again.
    """

    def __init__(self, root: Path, *, remember: str | None = None) -> None:
        self.root = root
        self.remember = remember
        self._cache: dict[str, tuple[tuple[int, int, int], MemoryUnit]] = {}
        self._sidecars: dict[str, tuple[tuple[int, int, int], Counters]] = {}

    def load(self) -> list[MemoryUnit]:
        """The units, with the counters of their scope's sidecar overlaid."""
        seen: dict[str, tuple[tuple[int, int, int], MemoryUnit]] = {}
        sidecars: dict[str, tuple[tuple[int, int, int], Counters]] = {}
        disk = None if self.remember is None else RememberedUnits(self.remember)
        self.remember = None  # the first read only: later ones know what this process read
        for rel, entry, sidecar in scan(str(self.root / "memory")):
            try:  # a file another writer removes mid-walk is gone, as a later walk sees it
                if sidecar:
                    sidecars[rel] = _known(self._sidecars, rel, entry, read_counters)
                    continue
                if not entry.name.isascii():
                    _check_name(rel)
                seen[rel] = (
                    _known(self._cache, rel, entry, read_unit)
                    if disk is None
                    else disk.read(rel, entry)
                )
            except FileNotFoundError:
                continue
        if disk is not None:
            disk.save()
        self._cache = seen
        self._sidecars = sidecars
        units = [seen[rel][1] for rel in sorted(seen)]
        if not sidecars:
            return units
        return overlay(units, {scope_of_counters(rel): c for rel, (_, c) in sidecars.items()})


# A file changed this recently may change again within the file system's time resolution
# without its times moving (git's "racy" case): it is read, never remembered.
RACY_NS = 2_000_000_000


def _entry(value: object) -> bool:
    return (
        isinstance(value, tuple)
        and len(value) == 2
        and isinstance(value[0], tuple)
        and isinstance(value[1], dict)
    )


class RememberedUnits:
    """The unit files an earlier process read, in the cache file at `path`: path ->
    (mtime, ctime (which no edit can set back), size and inode of the file, the unit's field
    values), valid for the code that read them (`evolve._format._cache.DiskCache`). The same
    file and entries as `evolve.quick._read.UnitsCache`, which remembers the files only the
    full parser reads; this reader remembers the canonical ones as well."""

    def __init__(self, path: str) -> None:
        import time

        from evolve._format._cache import DiskCache

        self.file = DiskCache(path, size=None, valid=_entry)
        self.now_ns = time.time_ns()
        self.old = self.file.entries() if self.file.exists() else {}
        self.new: dict[object, object] = {}

    def read(self, rel: str, entry: os.DirEntry[str]) -> tuple[tuple[int, int, int], MemoryUnit]:
        """(stat key, unit) of the file, as :func:`_known` gives it."""
        st = entry.stat(follow_symlinks=False)
        stat = (st.st_mtime_ns, st.st_size, st.st_ino)
        key = (st.st_mtime_ns, st.st_ctime_ns, st.st_size, st.st_ino)
        known = self.old.get(rel)
        if isinstance(known, tuple) and known[0] == key:  # `_entry` checked its shape
            self.new[rel] = known
            return stat, construct_unit(known[1])
        raw = _read(entry.path, rel)
        try:
            values = parse_values(rel, raw)
        except Unhandled:
            return stat, parse_unit(rel, raw)  # anything else, and every error, in its words
        # A hand note is never copied into .git/: a person may keep in it what `redact:` hides
        # everywhere else (evolve's own units cannot hold one: the applier refuses them).
        if values.get("recipe") != "hand" and max(st.st_mtime_ns, st.st_ctime_ns) < (
            self.now_ns - RACY_NS
        ):
            self.new[rel] = (key, values)
        return stat, construct_unit(values)

    def save(self) -> None:
        """Keep what this read found (atomically; never fails the command)."""
        if self.new != self.old:
            self.file.save(self.new)


def _known(
    old: Mapping[str, tuple[tuple[int, int, int], T]],
    rel: str,
    entry: os.DirEntry[str],
    read: Callable[[str, str], T],
) -> tuple[tuple[int, int, int], T]:
    """(stat key, what `read` made of the file): remembered in `old` while its mtime, size
    and inode are unchanged, else read again."""
    st = entry.stat(follow_symlinks=False)
    key = (st.st_mtime_ns, st.st_size, st.st_ino)
    known = old.get(rel)
    if known is not None and known[0] == key:
        return known
    return key, read(rel, _read(entry.path, rel))


def _check_name(rel: str) -> None:
    """A file name that is not UTF-8 (bytes the file system kept as lone surrogates) cannot be
    a unit's path: one error naming it, not a UnicodeEncodeError later."""
    try:
        rel.encode("utf-8")
    except UnicodeEncodeError:
        shown = rel.encode("utf-8", "backslashreplace").decode("ascii", "backslashreplace")
        raise MalformedUnit(f"{shown}: the file name is not UTF-8; rename the file.") from None


def _read(path: str, rel: str) -> str:
    """The text of the file at `path` (UTF-8, universal newlines, as `Path.read_text`).

    Raises:
        MalformedUnit: the file is not UTF-8 (one sentence naming `rel`, as the fast reader
            `evolve.quick._read` says it).
    """
    try:
        return limits.read_listed(path, rel)  # no link followed; its size checked first
    except UnicodeDecodeError:
        raise MalformedUnit(not_utf8(rel)) from None


def not_utf8(rel: str) -> str:
    """The sentence for a unit or sidecar file that is not UTF-8 text."""
    return f"{rel}: the file is not UTF-8 text; save it as UTF-8 and retry."


def load_units(root: Path) -> list[MemoryUnit]:
    """Every unit under `root/memory/` in the working tree, sorted by path."""
    return UnitReader(root).load()


def load_units_at(store: GitStore, rev: str) -> list[MemoryUnit]:
    """Every unit under `memory/` as it was at commit `rev` (read from git, not rebuilt)."""
    files = store.read_tree_files(rev, "memory")
    for rel, data in files.items():
        limits.check_size(rel, len(data))  # before it is parsed
    units = [
        read_unit(rel, files[rel].decode("utf-8")) for rel in sorted(files) if _is_unit_path(rel)
    ]
    sidecars = {
        scope_of_counters(rel): read_counters(rel, files[rel].decode("utf-8"))
        for rel in files
        if rel.rsplit("/", 1)[-1] == COUNTERS_NAME
    }
    return overlay(units, sidecars) if sidecars else units


def in_scope(units: Iterable[MemoryUnit], scope: str) -> list[MemoryUnit]:
    """Units visible to `scope`: its own and global ones."""
    return [u for u in units if u.scope in (scope, "global")]
