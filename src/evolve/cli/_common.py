"""Shared plumbing of the CLI: workspace option, JSON output, errors, progress."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from evolve.workspace import Workspace

if TYPE_CHECKING:
    from rich.console import Console

    stdout: Console
    stderr: Console


def __getattr__(name: str) -> Console:
    """`stdout` and `stderr`, rich consoles made on first use (the reading commands print
    through click and never import rich)."""
    if name not in ("stdout", "stderr"):
        raise AttributeError(f"module 'evolve.cli._common' has no attribute {name!r}")
    return _console(name)


def _console(name: str) -> Console:
    from rich.console import Console

    if name in globals():
        return globals()[name]  # type: ignore[no-any-return]
    console = (
        Console(highlight=False, soft_wrap=True)
        if name == "stdout"
        else Console(stderr=True, highlight=False)
    )
    globals()[name] = console
    return console


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


def open_workspace(path: Path | None, *, config: bool = True) -> Workspace:
    """The workspace at `path` (default: found from the current folder).

    With `config` (the default) `evolve.yaml` is read and validated now, so a command refuses
    a broken one before doing anything; reading commands that need no configuration (`log`,
    `show`) pass False and never build the config model.
    """
    return Workspace.find(path, read_config=config)


def emit_json(data: Any) -> None:
    sys.stdout.write(json.dumps(data, indent=2, sort_keys=True, default=str) + "\n")


@contextmanager
def progress_bar(label: str, enabled: bool = True) -> Iterator[Callable[[int, int], None]]:
    """A progress bar on stderr; yields a `progress(done, total)` callback."""
    if not enabled:
        yield lambda done, total: None
        return
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
    )

    with Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=_console("stderr"),
        transient=True,
    ) as bar:
        task = bar.add_task(label, total=None)

        def update(done: int, total: int) -> None:
            bar.update(task, completed=done, total=total)

        yield update
