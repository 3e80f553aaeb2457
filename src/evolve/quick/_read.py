"""Units of a working tree or of a commit, read on the fast path (as `evolve.memory` reads
them: `UnitReader.load` and `load_units_at`), and the configuration `evolve memory` needs."""

from __future__ import annotations

import os

from evolve._format._limits import check_size, read_listed
from evolve._format._units import (
    COUNTERS_NAME,
    Counters,
    Unit,
    overlay,
    parse,
    parse_counters,
    parse_values,
    scan,
    scope_of_counters,
)
from evolve.quick._git import CONFIG_NAME, Repo, Unhandled


def parse_or_full(path: str, raw: str) -> Unit:
    """The canonical reader's unit, or `evolve.memory.parse_unit`'s for a file it does not
    handle (which raises `MalformedUnit`, naming the path, for a malformed one)."""
    try:
        return parse(path, raw)
    except Unhandled:
        from evolve.memory import parse_unit

        return Unit.of(parse_unit(path, raw))


def parse_counters_or_full(path: str, raw: str) -> Counters:
    """The canonical reader's sidecar, or `evolve.memory.parse_counters`'s."""
    try:
        return parse_counters(raw)
    except Unhandled:
        from evolve.memory import parse_counters as full

        return full(path, raw)


def _read_text(path: str, rel: str) -> str:
    try:
        return read_listed(path, rel)  # universal newlines; its size checked first
    except UnicodeDecodeError:  # the full reader's sentence (`evolve.memory._files._read`)
        from evolve.memory._files import not_utf8
        from evolve.memory._unit import MalformedUnit

        raise MalformedUnit(not_utf8(rel)) from None


# A file changed this recently may change again within the file system's time resolution
# without its times moving (git's "racy" case): it is read, never remembered.
RACY_NS = 2_000_000_000

Stat = tuple[int, int, int, int]  # mtime_ns, ctime_ns, size, inode


def _entry(value: object) -> bool:
    return isinstance(value, tuple) and len(value) == 2 and isinstance(value[1], dict)


class UnitsCache:
    """Unit files the canonical parser does not read (hand-edited YAML, a layout it leaves to
    `parse_unit`), as the full parser read them, in `.git/evolve-units.cache`: keyed by path
    and the file's mtime, ctime (which no edit can set back), size and inode, so such a file
    costs the full parser (and its import) once, not on every `evolve memory`; and by the
    code that parsed them (`evolve._format._cache`)."""

    def __init__(self, git_dir: str | None, now_ns: int) -> None:
        from evolve._format._cache import UNITS_CACHE, DiskCache

        path = os.path.join(git_dir, UNITS_CACHE) if git_dir else None
        self.file = DiskCache(path, size=None, valid=_entry)
        self.now_ns = now_ns
        self.old = self.file.entries() if self.file.exists() else {}
        self.new: dict[object, object] = {}

    def read(self, rel: str, full: str) -> Unit:
        known = self.old.get(rel)
        if known is None:  # the common case: a canonical file, no stat needed
            raw = _read_text(full, rel)
            try:
                return Unit(parse_values(rel, raw))
            except Unhandled:
                return self._full(rel, full, raw)
        st = os.stat(full, follow_symlinks=False)
        key = (st.st_mtime_ns, st.st_ctime_ns, st.st_size, st.st_ino)
        assert isinstance(known, tuple)  # `_entry` checked it
        if known[0] == key:
            self.new[rel] = known
            return Unit(known[1])
        return self._full(rel, full, _read_text(full, rel))

    def _full(self, rel: str, full: str, raw: str) -> Unit:
        try:
            return Unit(parse_values(rel, raw))
        except Unhandled:
            pass
        from evolve.memory import parse_unit

        unit = Unit.of(parse_unit(rel, raw))  # MalformedUnit, naming the path, goes up
        st = os.stat(full, follow_symlinks=False)
        if max(st.st_mtime_ns, st.st_ctime_ns) < self.now_ns - RACY_NS:
            key = (st.st_mtime_ns, st.st_ctime_ns, st.st_size, st.st_ino)
            self.new[rel] = (key, dict(unit.__dict__))
        return unit

    def save(self) -> None:
        """Keep what this read found (atomically; never fails the command)."""
        if self.new == self.old or (not self.new and not self.file.exists()):
            return
        self.file.save(self.new)


def load_worktree(root: str, git_dir: str | None = None) -> list[Unit]:
    """The units under `root/memory/`, sorted by path, counters overlaid (files that need the
    full parser remembered in `git_dir`, when given)."""
    import time

    cache = UnitsCache(git_dir, time.time_ns())
    units: dict[str, Unit] = {}
    sidecars: dict[str, Counters] = {}
    for rel, entry, sidecar in scan(os.path.join(root, "memory")):
        if not sidecar:
            units[rel] = cache.read(rel, entry.path)
        elif rel.count("/") <= 2:  # a skill shelf's sidecar: only skills, which need the model
            sidecars[rel] = parse_counters_or_full(rel, _read_text(entry.path, rel))
    cache.save()
    ordered = [units[rel] for rel in sorted(units)]
    if not sidecars:
        return ordered
    return overlay(ordered, {scope_of_counters(rel): c for rel, c in sidecars.items()})


def tree_files(repo: Repo, rev: str, prefix: str) -> dict[str, bytes]:
    """`GitStore.read_tree_files`: every file under `prefix` at `rev`."""
    from evolve._format._git import batch_contents, batch_request, tree_blobs

    listing = repo.git("ls-tree", "-r", "-z", "--full-tree", rev, "--", prefix.rstrip("/"))
    entries = tree_blobs(listing.decode("utf-8", "surrogateescape"))
    if not entries:
        return {}
    raw = repo.git("cat-file", "--batch", input=batch_request(entries))
    try:
        return batch_contents(raw, entries)
    except LookupError as exc:
        raise Unhandled("object missing") from exc


def load_at(repo: Repo, rev: str) -> list[Unit]:
    """The units under `memory/` at commit `rev` (as `evolve.memory.load_units_at`)."""
    files = tree_files(repo, rev, "memory")
    for rel, data in files.items():
        check_size(rel, len(data))  # before it is parsed
    units = [
        parse_or_full(rel, files[rel].decode("utf-8"))
        for rel in sorted(files)
        if rel.endswith(".md") and not rel.rsplit("/", 1)[-1].startswith(".")
    ]
    sidecars = {
        scope_of_counters(rel): parse_counters_or_full(rel, files[rel].decode("utf-8"))
        for rel in files
        if rel.rsplit("/", 1)[-1] == COUNTERS_NAME and rel.count("/") <= 2
    }
    return overlay(units, sidecars) if sidecars else units


# --- the configuration `evolve memory` reads ---------------------------------------------------

# persona, memory.inject, rendered recipes, redact.values, redact.env
Summary = tuple[str, str, tuple[str, ...], tuple[str, ...], tuple[str, ...]]


def _summary(value: object) -> bool:
    return (
        isinstance(value, tuple)
        and len(value) == 5
        and isinstance(value[0], str)
        and isinstance(value[1], str)
        and all(
            isinstance(part, tuple) and all(isinstance(r, str) for r in part) for part in value[2:]
        )
    )


def config_summary(repo: Repo, raw: bytes) -> Summary:
    """(persona, memory.inject, rendered recipes, redact.values, redact.env) of the
    `evolve.yaml` whose bytes are `raw`.

    Validated by the configuration model once per distinct file content, and remembered in
    `.git/evolve-config.cache` keyed by those exact bytes (and by the code that read them),
    so an unchanged `evolve.yaml` is not parsed (nor pydantic imported) again.

    Raises:
        Unhandled: the file is not valid (the full command says why).
    """
    from evolve._format._cache import CONFIG_CACHE, DiskCache

    cache = DiskCache(os.path.join(repo.git_dir, CONFIG_CACHE))
    known = cache.get(("summary", raw))
    if known is not None and _summary(known):
        return known  # type: ignore[return-value]
    if b"\r" in raw:
        raise Unhandled("carriage returns in evolve.yaml")
    from evolve.errors import EvolveError
    from evolve.workspace._config import parse_config

    try:
        cfg = parse_config(raw.decode("utf-8"), source=os.path.join(repo.root, CONFIG_NAME))
    except (EvolveError, UnicodeDecodeError) as exc:
        raise Unhandled("invalid evolve.yaml") from exc
    summary = (
        cfg.persona,
        cfg.memory.inject,
        tuple(cfg.rendered_recipes()),
        tuple(cfg.redact.values),  # as evolve.yaml lists them (it holds them too)
        tuple(cfg.redact.env),  # names only: the values are read from the environment
    )
    cache.put(("summary", raw), summary)
    return summary
