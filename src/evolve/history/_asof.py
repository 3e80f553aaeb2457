"""Memory as it was: read from git at any commit or date, never reconstructed."""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from dataclasses import dataclass, field

from evolve._format._dates import is_date
from evolve._format._dates import parse_when as _parse_when
from evolve._format._git import status_paths_ignored
from evolve.errors import EvolveError
from evolve.memory import load_units, load_units_at
from evolve.store import GitFailed, GitStore
from evolve.workspace import Workspace


def resolve_as_of(store: GitStore, rev: str) -> str:
    """A commit for `rev`: a revision, or a date/time (the last commit at or before it).

    Raises:
        EvolveError: for an unknown revision, or a date before the workspace's first commit.
    """
    if is_date(rev):
        when = _parse_when(rev.strip())
        try:
            out = store.git("rev-list", "-1", f"--before={when.isoformat()}", "HEAD").strip()
        except GitFailed:
            out = ""
        if not out:
            raise EvolveError(
                f"the workspace has no commit at or before {rev}; it did not exist yet."
            )
        return str(out)
    return store.rev_parse(rev)


def memory_as_of(
    store: GitStore, rev: str, scope: str, recipes: tuple[str, ...] = ()
) -> tuple[str, str]:
    """(commit, the rendered memory for `scope` at that commit): hand notes and the units of
    `recipes` (default: the recipes that commit's evolve.yaml renders)."""
    from evolve.updaters import render_for
    from evolve.workspace import CONFIG_NAME, EvolveConfig, parse_config

    commit = resolve_as_of(store, rev)
    if not recipes:
        raw = store.read(commit, CONFIG_NAME)
        cfg = parse_config(raw.decode("utf-8")) if raw is not None else EvolveConfig()
        recipes = cfg.rendered_recipes()
    return commit, render_for(load_units_at(store, commit), scope, recipes)


@dataclass(frozen=True)
class WorkingMemory:
    """What `evolve run` and `evolve train` give the agent now (the working tree's `memory/`),
    and how that compares with HEAD."""

    scope: str
    text: str
    head: str | None
    head_text: str
    uncommitted: list[str] = field(default_factory=list)
    # Active units of recipes the agent is not shown, per recipe (`_format._render.unseen`).
    unseen: dict[str, int] = field(default_factory=dict)

    @property
    def differs_from_head(self) -> bool:
        return self.text != self.head_text


def _status_with_ignored(collect: Callable[[], str]) -> tuple[list[str], bool]:
    """(paths with uncommitted changes, whether any ignored file is there) from the output of
    `git status -z --ignored` that `collect` waits for."""
    return status_paths_ignored(collect())


def memory_in_worktree(ws: Workspace, scope: str) -> WorkingMemory:
    """The rendered memory of the working tree (exactly the agent's), beside HEAD's.

    When git reports nothing under memory/ as changed, untracked or ignored, the working
    tree's files are HEAD's, so HEAD's memory is the same text and is not read twice. git's
    status runs while this process reads and renders the units.
    """
    from evolve.updaters import render_for

    status = ws.store.start(
        "status", "--porcelain=v1", "-z", "--untracked-files=all", "--ignored=matching",
        "--no-renames", "--", "memory",
    )  # fmt: skip
    try:
        recipes = ws.config.rendered_recipes()
        units = load_units(ws.root)
        text = render_for(units, scope, recipes)
        head = ws.store.head()
    except BaseException:
        with contextlib.suppress(EvolveError):
            status()  # reap git before the error goes up
        raise
    dirty, ignored = _status_with_ignored(status)
    if head is None:
        head_text = ""
    elif dirty or ignored:
        head_text = render_for(load_units_at(ws.store, head), scope, recipes)
    else:
        head_text = text
    from evolve._format._render import unseen

    return WorkingMemory(scope, text, head, head_text, dirty, unseen(units, scope, recipes))
