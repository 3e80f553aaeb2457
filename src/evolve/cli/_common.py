"""Shared plumbing of the CLI: workspace option, JSON output, errors, progress."""

from __future__ import annotations

import functools
import json
import os
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from evolve.workspace import Workspace
from evolve.workspace._paths import APPLY_JOURNAL, GENERATION_JOURNAL

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


# click is imported where an option is declared or a recovery is said: `evolve train`'s fast
# path (`evolve.cli._fast`) runs the command's body through this module without it.


def workspace_option(func: Callable[..., Any]) -> Callable[..., Any]:
    import click

    return click.option(
        "--workspace",
        "-C",
        "workspace",
        type=click.Path(file_okay=False, path_type=Path),
        envvar="EVOLVE_WORKSPACE",
        help="The workspace folder (default: found by walking up from the current folder).",
    )(func)


def json_option(func: Callable[..., Any]) -> Callable[..., Any]:
    import click

    return click.option(
        "--json", "as_json", is_flag=True, help="Print one JSON document on stdout."
    )(func)


@dataclass(frozen=True)
class ModelChoice:
    """The model roles and cache mode a command was given (flag, else environment)."""

    agent: str | None = None
    updater: str | None = None
    reflector: str | None = None
    cache: str | None = None

    def apply(self, ws: Workspace) -> Workspace:
        """`ws` with these choices over its `evolve.yaml` (flag > environment > file)."""
        from evolve.llm import with_models

        ws.config = with_models(
            ws.config,
            agent=self.agent,
            updater=self.updater,
            reflector=self.reflector,
            cache=self.cache,
        )
        return ws


_ROLE_OPTIONS = (
    ("--model", "model", "EVOLVE_MODEL", "agent"),
    ("--updater-model", "updater_model", "EVOLVE_UPDATER_MODEL", "updater"),
    ("--reflector-model", "reflector_model", "EVOLVE_REFLECTOR_MODEL", "reflector"),
)


def model_options(func: Callable[..., Any]) -> Callable[..., Any]:
    """Adds --model, --updater-model, --reflector-model and --cache; the command receives
    them as one `models: ModelChoice` argument."""

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        choice = ModelChoice(
            agent=kwargs.pop("model"),
            updater=kwargs.pop("updater_model"),
            reflector=kwargs.pop("reflector_model"),
            cache=kwargs.pop("cache"),
        )
        return func(*args, models=choice, **kwargs)

    import click

    decorated: Callable[..., Any] = wrapper
    decorated = click.option(
        "--cache",
        type=click.Choice(["off", "read", "write", "replay"]),
        envvar="EVOLVE_CACHE",
        help="Request cache outside git: read hits, write (record) misses, or replay only "
        "recorded replies (default: models.cache, $EVOLVE_CACHE).",
    )(decorated)
    for flag, dest, env, role in reversed(_ROLE_OPTIONS):
        decorated = click.option(
            flag,
            dest,
            envvar=env,
            metavar="MODEL",
            help=f"The {role}'s model: sim, openai/<model>, anthropic/<model> "
            f"(default: ${env}, else models.{role} in evolve.yaml).",
        )(decorated)
    return decorated


def open_workspace(path: Path | None, *, config: bool = True) -> Workspace:
    """The workspace at `path` (default: found from the current folder).

    With `config` (the default) `evolve.yaml` is read and validated now, so a command refuses
    a broken one before doing anything; reading commands that need no configuration (`log`,
    `show`) pass False and never build the config model.

    An interrupted generation (its journal left in `.git/`) is rolled back before any command
    reads or writes; the check is one `stat`, so reading commands import the recovery
    machinery only when there is something to recover.
    """
    ws = Workspace.find(path, read_config=config)
    git_dir = ws.store.git_dir
    if (git_dir / GENERATION_JOURNAL).exists() or (git_dir / APPLY_JOURNAL).exists():
        import click

        from evolve.txn import recover_if_interrupted

        ctx = click.get_current_context(silent=True)
        command = ctx.command_path if ctx else "evolve"
        recovery = recover_if_interrupted(ws, command)
        message = recovery.message() if recovery else None
        if message:
            click.echo(f"recovered: {message}", err=True)
        elif recovery is None and _subcommand(command) not in _SAYS_WRITER:
            busy = writer_busy(ws)
            if busy:
                click.echo(
                    f"note: {busy} is writing this workspace now; this command reads memory/ "
                    "mid-update, so what it shows may match no commit until that one ends.",
                    err=True,
                )
    return ws


# Commands that say a running writer in their own words (writers refuse, naming it; `run`
# warns in its note about uncommitted files).
_SAYS_WRITER = frozenset({"train", "evolve", "revert", "review", "compare", "run"})


def _subcommand(command_path: str) -> str:
    """`train` of `evolve train` (empty when the path names no subcommand)."""
    words = command_path.split()
    return words[1] if len(words) > 1 else ""


def writer_busy(ws: Workspace) -> str | None:
    """The evolve command writing this workspace now, named, when one is mid-write (its apply
    journal is there); None otherwise."""
    if not (ws.store.git_dir / APPLY_JOURNAL).exists():
        return None
    from evolve.txn import active_writer

    return active_writer(ws)


def emit_json(data: Any) -> None:
    sys.stdout.write(json.dumps(data, indent=2, sort_keys=True, default=str) + "\n")


def _terminal(stream: Any) -> bool:
    """Whether rich draws live output on `stream` (a terminal, or forced by its variables)."""
    if any(os.environ.get(k) for k in ("FORCE_COLOR", "TTY_COMPATIBLE", "TTY_INTERACTIVE")):
        return True
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):
        return False


@contextmanager
def progress_bar(label: str, enabled: bool = True) -> Iterator[Callable[[int, int], None]]:
    """A progress bar on stderr; yields a `progress(done, total)` callback.

    Where stderr is no terminal (and no variable makes rich treat it as one) the bar draws
    nothing at all (rich's would leave an empty line there, before any error that follows),
    so rich is not even imported."""
    if not enabled or not _terminal(sys.stderr):
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
