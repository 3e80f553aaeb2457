"""The `evolve` command line: thin commands over the Python API."""

from __future__ import annotations

import sys
from collections.abc import Sequence

import click

from evolve.cli._init import demo_cmd, init_cmd
from evolve.cli._run import run_cmd
from evolve.cli._evolve import evolve_cmd
from evolve.cli._history import (
    log_cmd,
    memory_cmd,
    report_cmd,
    revert_cmd,
    review_group,
    show_cmd,
)
from evolve.cli._train import train_cmd
from evolve.errors import EvolveError


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="evolve")
def cli() -> None:
    """evolve: agents that learn from their users safely.

    Memory and prompts are files in a git workspace; every training episode that changes
    memory is one commit; gated evolve passes keep a generation only if it earns its place.
    """


for command in (
    init_cmd,
    demo_cmd,
    run_cmd,
    train_cmd,
    evolve_cmd,
    log_cmd,
    show_cmd,
    memory_cmd,
    revert_cmd,
    review_group,
    report_cmd,
):
    cli.add_command(command)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the CLI; returns the exit status (tests call this directly)."""
    try:
        cli.main(args=list(argv) if argv is not None else None, prog_name="evolve", standalone_mode=False)
    except click.exceptions.Exit as exc:
        return int(exc.exit_code)
    except click.Abort:
        click.echo("aborted.", err=True)
        return 130
    except click.ClickException as exc:
        exc.show()
        return exc.exit_code
    except EvolveError as exc:
        click.echo(f"error: {exc}", err=True)
        return 1
    except KeyboardInterrupt:
        click.echo("interrupted; nothing half-written was kept.", err=True)
        return 130
    return 0


if __name__ == "__main__":
    sys.exit(main())


def entry() -> None:
    """Console-script entry point."""
    sys.exit(main())
