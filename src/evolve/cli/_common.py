"""Shared plumbing of the CLI: workspace option, JSON output, errors, progress."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import click
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from evolve.workspace import Workspace

stdout = Console(highlight=False, soft_wrap=True)
stderr = Console(stderr=True, highlight=False)


def workspace_option(func: Callable[..., Any]) -> Callable[..., Any]:
    return click.option(
        "--workspace",
        "-C",
        "workspace",
        type=click.Path(file_okay=False, path_type=Path),
        envvar="EVOLVE_WORKSPACE",
        help="The workspace folder (default: found by walking up from the current folder).",
    )(func)


def json_option(func: Callable[..., Any]) -> Callable[..., Any]:
    return click.option(
        "--json", "as_json", is_flag=True, help="Print one JSON document on stdout."
    )(func)


def open_workspace(path: Path | None) -> Workspace:
    ws = Workspace.find(path) if path is not None else Workspace.find()
    # An interrupted generation is rolled back before any command reads or writes.
    from evolve.recovery import recover_if_interrupted

    ctx = click.get_current_context(silent=True)
    recovery = recover_if_interrupted(ws, ctx.command_path if ctx else "evolve")
    message = recovery.message() if recovery else None
    if message:
        stderr.print(f"recovered: {message}", highlight=False)
    return ws


def emit_json(data: Any) -> None:
    sys.stdout.write(json.dumps(data, indent=2, sort_keys=True, default=str) + "\n")


@contextmanager
def progress_bar(label: str, enabled: bool = True) -> Iterator[Callable[[int, int], None]]:
    """A progress bar on stderr; yields a `progress(done, total)` callback."""
    if not enabled:
        yield lambda done, total: None
        return
    with Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=stderr,
        transient=True,
    ) as bar:
        task = bar.add_task(label, total=None)

        def update(done: int, total: int) -> None:
            bar.update(task, completed=done, total=total)

        yield update
