"""The `evolve` command line: thin commands over the Python API.

Commands are imported when they are run, so `evolve log` does not pay for importing the
evolve loop: start-up is most of what a user waits for on short commands.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Sequence

import click

from evolve.errors import EvolveError

COMMANDS = {
    "init": "evolve.cli._init:init_cmd",
    "demo": "evolve.cli._init:demo_cmd",
    "run": "evolve.cli._run:run_cmd",
    "train": "evolve.cli._train:train_cmd",
    "evolve": "evolve.cli._evolve:evolve_cmd",
    "log": "evolve.cli._history:log_cmd",
    "show": "evolve.cli._history:show_cmd",
    "memory": "evolve.cli._history:memory_cmd",
    "revert": "evolve.cli._history:revert_cmd",
    "review": "evolve.cli._history:review_group",
    "report": "evolve.cli._history:report_cmd",
}


class LazyGroup(click.Group):
    def list_commands(self, ctx: click.Context) -> list[str]:
        return list(COMMANDS)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        target = COMMANDS.get(cmd_name)
        if target is None:
            return None
        module, _, attr = target.partition(":")
        command = getattr(importlib.import_module(module), attr)
        assert isinstance(command, click.Command)
        return command


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="evolve")
def cli() -> None:
    """evolve: agents that learn from their users safely.

    Memory and prompts are files in a git workspace; every training episode that changes
    memory is one commit; gated evolve passes keep a generation only if it earns its place.
    Start with `evolve demo`, or `evolve init DIR`.
    """


def main(argv: Sequence[str] | None = None) -> int:
    """Run the CLI; returns the exit status (tests call this directly)."""
    try:
        cli.main(
            args=list(argv) if argv is not None else None, prog_name="evolve", standalone_mode=False
        )
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


def entry() -> None:
    """Console-script entry point."""
    sys.exit(main())


if __name__ == "__main__":
    sys.exit(main())
