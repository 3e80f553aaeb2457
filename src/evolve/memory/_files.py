"""Reading the units of a workspace: from the working tree, or from git at any revision."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from evolve.memory._unit import MemoryUnit, parse_unit
from evolve.store import GitStore

MEMORY_PREFIX = "memory/"


def _is_unit_path(rel: str) -> bool:
    name = rel.rsplit("/", 1)[-1]
    return rel.endswith(".md") and not name.startswith(".")


def load_units(root: Path) -> list[MemoryUnit]:
    """Every unit under `root/memory/` in the working tree, sorted by path."""
    folder = root / "memory"
    if not folder.is_dir():
        return []
    units = []
    for path in sorted(folder.rglob("*.md")):
        rel = path.relative_to(root).as_posix()
        if _is_unit_path(rel):
            units.append(parse_unit(rel, path.read_text(encoding="utf-8")))
    return units


def load_units_at(store: GitStore, rev: str) -> list[MemoryUnit]:
    """Every unit under `memory/` as it was at commit `rev` (read from git, not rebuilt)."""
    units = []
    for rel in store.list_files(rev, "memory"):
        if _is_unit_path(rel):
            raw = store.read(rev, rel)
            if raw is not None:
                units.append(parse_unit(rel, raw.decode("utf-8")))
    return units


def in_scope(units: Iterable[MemoryUnit], scope: str) -> list[MemoryUnit]:
    """Units visible to `scope`: its own and global ones."""
    return [u for u in units if u.scope in (scope, "global")]
