"""`evolve show UNIT_ID`: a unit as it is now (or its tombstone) and every commit that touched it."""

from __future__ import annotations

import contextlib
import os
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Any

from evolve._format import _limits as limits
from evolve._format._message import commit_kind as commit_kind  # re-exported
from evolve._format._views import (
    SIDECAR_PATCH,
    counter_entries,
    show_entries,
    show_json,
    sidecar_path,
    unit_counters,
)
from evolve.errors import EvolveError
from evolve.store import CommitInfo

if TYPE_CHECKING:  # `evolve log` imports this module for commit_kind, without pydantic
    from evolve.memory import MemoryUnit
    from evolve.workspace import Workspace


@dataclass
class UnitHistory:
    unit_id: str
    path: str
    unit: MemoryUnit | None
    commits: list[tuple[CommitInfo, str]] = field(default_factory=list)
    # Why the file as it is now cannot be read as a unit (a hand edit gone wrong), if it can't:
    # its history is still shown, so the commit that broke it can be found and reverted.
    problem: str | None = None
    # Every commit that touched the file or the unit's sidecar entry (`_views.show_entries`).
    entries: list[tuple[Any, list[str], str, Any]] = field(default_factory=list)
    # Its sidecar entry in the working tree (`_views.counter_entries`).
    sidecar: dict[str, Any] | None = None

    @property
    def counters(self) -> dict[str, Any]:
        """Its evidence counters now (an old-format file's, with the sidecar's laid over)."""
        return unit_counters(self.dumped(), self.sidecar)

    def dumped(self) -> dict[str, Any] | None:
        return self.unit.model_dump(by_alias=True, exclude_none=True) if self.unit else None

    def to_json(self) -> dict[str, Any]:
        return show_json(
            self.unit_id, self.path, self.dumped(), self.problem, self.entries, self.counters
        )


def find_path(ws: Workspace, unit_id: str) -> str | None:
    name = f"{unit_id}.md"
    # Units live in memory/ (global scope) or one folder down (a persona's): a few stats.
    folders = [ws.memory_dir]
    if ws.memory_dir.is_dir():
        folders += [Path(e.path) for e in os.scandir(ws.memory_dir) if e.is_dir()]
    for folder in folders:
        if (folder / name).is_file():
            return (folder / name).relative_to(ws.root).as_posix()
    for candidate in ws.memory_dir.rglob(name):
        return candidate.relative_to(ws.root).as_posix()
    # Evicted or never in the working tree: ask git where such a file ever lived.
    out = ws.store.git(
        "log",
        "--format=",
        "--name-only",
        "--diff-filter=A",
        "HEAD",
        "--",
        f":(glob)memory/**/{unit_id}.md",
        f"memory/{unit_id}.md",
    )
    names = [line for line in out.splitlines() if line.strip()]
    return names[0] if names else None


def show_unit(ws: Workspace, unit_id: str) -> UnitHistory:
    """The unit and its history.

    Raises:
        EvolveError: when no unit with that id exists now or in the history.
    """
    if "/" in unit_id or not unit_id or unit_id.startswith("."):
        raise EvolveError(
            f"{unit_id!r} is not a unit id; ids look like ace-1a2b3c4d5e (see `evolve log`)."
        )
    path = find_path(ws, unit_id)
    if path is None:
        raise EvolveError(
            f"no unit with id {unit_id!r} in memory/ or its history; see `evolve log` for ids."
        )
    # git follows the one file (its changed-path Bloom filters skip the other commits) while
    # this process imports the unit model and parses the file.
    collect = ws.store.start_log_patches([path])
    sidecar = sidecar_path(path)
    collect_all = ws.store.start_log_patches([path, sidecar], options=SIDECAR_PATCH)
    problem: str | None = None
    entry: dict[str, Any] | None = None
    try:
        from evolve.memory import MalformedUnit, parse_unit

        full = ws.root / PurePosixPath(path)
        try:
            text = limits.read_text(ws.root, path) if full.is_file() else None  # no link out
            unit = parse_unit(path, text) if text is not None else None
        except MalformedUnit as exc:
            unit, problem = None, str(exc)
        if (ws.root / PurePosixPath(sidecar)).is_file():
            with contextlib.suppress(UnicodeDecodeError):  # not text: no counters to show
                entry = counter_entries(limits.read_text(ws.root, sidecar)).get(unit_id)
    except BaseException:
        with contextlib.suppress(EvolveError):
            collect()  # reap git before the error goes up
        with contextlib.suppress(EvolveError):
            collect_all()
        raise
    commits = collect()
    entries = show_entries(unit_id, commits, collect_all())
    return UnitHistory(unit_id, path, unit, commits, problem, entries, entry)
