"""`evolve log`, `show` and `memory`: the reading commands.

They are what a reviewer runs all day, so they import only what they use: no GitPython, no
rich, and `log` and `show` never build the configuration model (`memory` needs the persona
and the rendered recipes, so it reads `evolve.yaml` through the model, the one place that
knows its defaults). Output is plain text through click (styled on a terminal only).
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import click

from evolve._format._views import (
    DEFAULT_COUNT,
    log_empty,
    log_entry,
    memory_json,
    memory_notes,
    memory_text,
    secret_notes,
    show_text,
    unseen_note,
)
from evolve.cli._common import (
    emit_json,
    json_option,
    open_workspace,
    workspace_option,
    writer_busy,
)
from evolve.errors import EvolveError
from evolve.history._log import LogEntry, history
from evolve.history._show import show_unit


def _say(text: str = "", **style: Any) -> None:
    click.echo(click.style(text, **style) if style else text)


def _stream_json(entries: Iterable[LogEntry], *, lines: bool) -> None:
    """Write entries as they come: one compact `json.dumps` each (a JSON array, or JSON Lines)."""
    write = sys.stdout.write
    if lines:
        for e in entries:
            write(json.dumps(e.to_json(), ensure_ascii=False) + "\n")
        return
    write("[")
    sep = "\n"
    for e in entries:
        write(sep + json.dumps(e.to_json(), ensure_ascii=False))
        sep = ",\n"
    write("\n]\n")


def _check_log_path(path: str) -> None:
    """PATHS are workspace-relative (memory/alex, prompts/system.md); one sentence otherwise."""
    from evolve.workspace._paths import normalize_relpath

    try:
        normalize_relpath(path.rstrip("/") or path)
    except EvolveError as exc:
        raise EvolveError(
            f"{exc} Give paths inside the workspace, relative to its root, e.g. memory/alex."
        ) from None


@click.command("log")
@click.argument("paths", nargs=-1)
@click.option(
    "-n",
    "--max-count",
    type=click.IntRange(0),
    default=None,
    help=f"How many commits (0: all). Default: {DEFAULT_COUNT}; with --jsonl, all.",
)
@click.option(
    "--json",
    "as_json",
    is_flag=True,
    help="Print one JSON document on stdout: with -n, an array of entries; without -n, an object "
    f'{{"entries": [...], "limit": {DEFAULT_COUNT}, "truncated": true|false}}.',
)
@click.option(
    "--jsonl",
    "as_jsonl",
    is_flag=True,
    help="Print one JSON object per entry per line (JSON Lines), written as they are read.",
)
@workspace_option
def log_cmd(
    paths: tuple[str, ...],
    max_count: int | None,
    as_json: bool,
    as_jsonl: bool,
    workspace: Path | None,
) -> None:
    """Memory and prompt history, newest first (or of the given PATHS).

    Each entry: commit, time, subject, episode, task, the complaint's first line, the
    operations with unit ids and any refused proposals. Refusals of episodes that committed
    nothing are recorded on the side ref refs/evolve/train and listed too (kind "refusal"),
    above the commit their episode ran on. --json returns the trailers parsed; `-n 0 --json`
    or --jsonl stream every entry.

    A plain `git clone` does not copy refs/evolve/*; share them with
    `git push origin 'refs/evolve/*:refs/evolve/*'` and
    `git fetch origin 'refs/evolve/*:refs/evolve/*'`.
    """
    if as_json and as_jsonl:
        raise EvolveError("give --json or --jsonl, not both.")
    for path in paths:
        _check_log_path(path)
    ws = open_workspace(workspace, config=False)
    if as_jsonl:
        _stream_json(
            history(ws.store, paths, max_count=max_count or None, refusals=True), lines=True
        )
        return
    if as_json and max_count is None:
        # The default limit is named in the document, so a cut list is never silent.
        entries = history(ws.store, paths, max_count=DEFAULT_COUNT + 1, refusals=True)
        emit_json(
            {
                "entries": [e.to_json() for e in entries[:DEFAULT_COUNT]],
                "limit": DEFAULT_COUNT,
                "truncated": len(entries) > DEFAULT_COUNT,
            }
        )
        return
    count = DEFAULT_COUNT if max_count is None else max_count
    entries = history(ws.store, paths, max_count=count or None, refusals=True)
    if as_json:
        _stream_json(entries, lines=False)
        return
    if not entries:
        _say(log_empty(paths))
    for e in entries:
        for line in log_entry(e.to_json(), click.style):
            _say(line)


@click.command("show")
@click.argument("unit_id")
@json_option
@workspace_option
def show_cmd(unit_id: str, as_json: bool, workspace: Path | None) -> None:
    """A memory unit as it is now (or its tombstone) and every commit that touched it."""
    from evolve.errors import ConfigError
    from evolve.redact import Redactor, hide_in, hide_values, secret_values

    ws = open_workspace(workspace, config=False)
    h = show_unit(ws, unit_id)
    try:  # configured secrets are shown as <redacted>; a broken evolve.yaml hides the API keys
        secrets = Redactor.from_config(ws.config.redact).values
    except ConfigError:
        secrets = secret_values()
    if as_json:
        emit_json(hide_in(h.to_json(), secrets))
        return
    for line in show_text(h.unit_id, h.path, h.unit, h.problem, h.entries, click.style, h.counters):
        _say(hide_values(line, secrets))


@click.command("memory")
@click.option(
    "--as-of",
    "as_of",
    help="A commit, or a date (YYYY-MM-DD or ISO time). Default: the working tree, which is "
    "what `evolve run` and `evolve train` give the agent.",
)
@click.option("--scope", help="user:<persona> or global (default: the workspace's persona).")
@click.option("--persona", help="Shorthand for --scope user:<persona>.")
@json_option
@workspace_option
def memory_cmd(
    as_of: str | None,
    scope: str | None,
    persona: str | None,
    as_json: bool,
    workspace: Path | None,
) -> None:
    """Memory exactly as the agent receives it: now (the working tree, as `evolve run` and
    `evolve train` render it), or at any earlier commit or date with --as-of.

    When the working tree's memory differs from HEAD (uncommitted edits), a note on stderr
    says so, and --json reports `differs_from_head` and the uncommitted files.
    """
    from evolve.history._asof import memory_as_of, memory_in_worktree
    from evolve.memory import scope_for, valid_scope
    from evolve.quick._secrets import secret_files
    from evolve.redact import Redactor, hide_values

    ws = open_workspace(workspace)
    if scope is not None and persona is not None:
        raise EvolveError("give --scope or --persona, not both.")
    chosen = scope or scope_for(persona or ws.config.persona)
    if not valid_scope(chosen):
        raise EvolveError(f"scope {chosen!r} is not valid; use user:<persona> or global.")
    secrets = Redactor.from_config(ws.config.redact).values  # shown as the agent receives it
    if as_of is not None:
        commit, text = memory_as_of(ws.store, as_of, chosen)
        if not text.strip():
            _check_scope(ws, chosen)
        text = hide_values(text, secrets)
        if as_json:
            emit_json(memory_json(commit, chosen, text))
            return
        for line in memory_text(commit, chosen, text, click.style):
            _say(line)
        return
    now = memory_in_worktree(ws, chosen)
    if not now.text.strip():
        _check_scope(ws, chosen)
    text = hide_values(now.text, secrets)
    flagged = secret_files(str(ws.root), secrets)
    differs = now.differs_from_head and not writer_busy(ws)  # else open_workspace named it
    notes = memory_notes(ws.config.memory.inject, differs, now.uncommitted)
    hidden = unseen_note(now.unseen, ws.config.rendered_recipes())
    for note in notes + ([hidden] if hidden else []) + secret_notes(flagged):
        click.echo(note, err=True)
    if as_json:
        emit_json(
            memory_json(now.head, chosen, text, now.differs_from_head, now.uncommitted, flagged)
        )
        return
    for line in memory_text(now.head, chosen, text, click.style, now.differs_from_head):
        _say(line)


def _check_scope(ws: Any, scope: str) -> None:
    """Refuse a scope whose memory is empty because no one by that name exists here: not the
    workspace's persona, not one its environment knows, and no folder under memory/.

    Raises:
        EvolveError: for `user:skills` (skills have their own command) or an unknown persona.
    """
    from evolve._format._units import GLOBAL_SCOPE, SKILLS_FOLDER
    from evolve.errors import UnknownName
    from evolve.evaluate._run import open_env

    if scope == GLOBAL_SCOPE or scope == f"user:{ws.config.persona}":
        return
    name = scope.removeprefix("user:")
    if name == SKILLS_FOLDER:
        raise EvolveError(
            "memory/skills/ holds skills, not a persona's memory; `evolve skills` lists them."
        )
    known = {ws.config.persona}
    folder = ws.root / "memory"
    if folder.is_dir():
        known |= {p.name for p in folder.iterdir() if p.is_dir() and p.name != SKILLS_FOLDER}
    personas = getattr(open_env(ws), "personas", None)
    if callable(personas):
        known |= set(personas())
    if name not in known:
        raise UnknownName(
            f"unknown persona {name!r}; this workspace knows {', '.join(sorted(known))}."
        )
