"""Memory as it was: read from git at any commit or date, never reconstructed."""

from __future__ import annotations

import re
from datetime import UTC, date, datetime

import git

from evolve.errors import EvolveError
from evolve.memory import load_units_at
from evolve.store import GitStore

_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}([T ][0-9:.]+([+-]\d{2}:?\d{2}|Z)?)?$")


def resolve_as_of(store: GitStore, rev: str) -> str:
    """A commit for `rev`: a revision, or a date/time (the last commit at or before it).

    Raises:
        EvolveError: for an unknown revision, or a date before the workspace's first commit.
    """
    if _DATE.match(rev.strip()):
        when = _parse_when(rev.strip())
        try:
            out = store.repo.git.rev_list("-1", f"--before={when.isoformat()}", "HEAD").strip()
        except git.GitCommandError:
            out = ""
        if not out:
            raise EvolveError(
                f"the workspace has no commit at or before {rev}; it did not exist yet."
            )
        return str(out)
    return store.rev_parse(rev)


def _parse_when(text: str) -> datetime:
    try:
        if len(text) == 10:
            d = date.fromisoformat(text)
            return datetime(d.year, d.month, d.day, 23, 59, 59, tzinfo=UTC)
        when = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise EvolveError(f"{text!r} is not a date (YYYY-MM-DD) or ISO time.") from None
    return when if when.tzinfo is not None else when.replace(tzinfo=UTC)


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
