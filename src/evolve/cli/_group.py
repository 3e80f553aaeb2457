"""The click group: commands are imported when they are run.

So `evolve log` does not pay for importing the evolve loop, and `--help` lists the commands
from the table below without importing any of them: start-up is most of what a user waits
for on short commands.
"""

from __future__ import annotations

import importlib

import click

from evolve import __version__
from evolve.errors import EvolveError, write_failure

TYPE_CHECKING = False
if TYPE_CHECKING:
    from evolve.txn import WriteInterrupted

# name -> (module:attribute, one-line help). The help line is kept here so that `evolve
# --help` lists the commands without importing them; a test checks it matches each command.
COMMANDS: dict[str, tuple[str, str]] = {
    "init": ("evolve.cli._init:init_cmd", "Create a workspace in DIRECTORY (new or empty)."),
    "demo": ("evolve.cli._init:demo_cmd", "Create a workspace and run the main job on it."),
    "run": ("evolve.cli._run:run_cmd", "Score a split: success, violations per rule, tokens."),
    "train": ("evolve.cli._train:train_cmd", "Run the training stream, one commit per update."),
    "evolve": ("evolve.cli._evolve:evolve_cmd", "Run gated generations (try --dry-run first)."),
    "log": ("evolve.cli._reading:log_cmd", "Memory and prompt history, newest first."),
    "show": ("evolve.cli._reading:show_cmd", "A memory unit and every commit that touched it."),
    "memory": ("evolve.cli._reading:memory_cmd", "Memory exactly as the agent receives it."),
    "skills": ("evolve.cli._skills:skills_cmd", "Skills with their scoreboard: lift, interval."),
    "revert": ("evolve.cli._history:revert_cmd", "Undo a memory or prompt commit; tombstone it."),
    "review": ("evolve.cli._history:review_group", "Approve or reject units left pending."),
    "report": ("evolve.cli._history:report_cmd", "Write a self-contained HTML report."),
    "clone": ("evolve.cli._remote:clone_cmd", "Clone a workspace with its records."),
    "pull": ("evolve.cli._remote:pull_cmd", "Fetch and merge a remote's branch and records."),
    "push": ("evolve.cli._remote:push_cmd", "Send the branch and records, never forced."),
    "status": ("evolve.cli._remote:status_cmd", "Whether the workspace travels whole; fixes."),
    "compare": ("evolve.cli._compare:compare_cmd", "Run an experiment: arms on their own refs."),
    "harness": ("evolve.cli._harness:harness_group", "The agent's modules: show or switch one."),
    "research": (
        "evolve.cli._research:research_group",
        "Research cards: list, topics, pick, brief, add.",
    ),
    "search": ("evolve.cli._search:search_cmd", "Search the harness module by module; gated."),
    "merge": (
        "evolve.cli._merge:merge_cmd",
        "Merge a branch as one merge commit; --fix a git merge.",
    ),
    "merge-driver": (
        "evolve.cli._merge:merge_driver_cmd",
        "git's merge driver for the counter sidecars.",
    ),
    "plugins": ("evolve.cli._plugins:plugins_cmd", "Models, recipes, environments, executors."),
    "appworld": (
        "evolve.cli._appworld:appworld_group",
        "Run on AppWorld: prepare its venv, rebuild splits.",
    ),
}


class LazyGroup(click.Group):
    def list_commands(self, ctx: click.Context) -> list[str]:
        return list(COMMANDS)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        entry = COMMANDS.get(cmd_name)
        if entry is None:
            return None
        module, _, attr = entry[0].partition(":")
        command = getattr(importlib.import_module(module), attr)
        assert isinstance(command, click.Command)
        return command

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        # click's default imports every command to read its help; the table has it already.
        with formatter.section("Commands"):
            formatter.write_dl([(name, short) for name, (_, short) in COMMANDS.items()])


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(version=__version__, prog_name="evolve")
@click.option(
    "-C",
    "directory",
    metavar="DIR",
    help="Run as if evolve was started in DIR (before the command, as git -C; repeatable).",
)
def cli(directory: str | None) -> None:
    """evolve: agents that learn from their users safely.

    Memory and prompts are files in a git workspace; every training episode that changes
    memory is one commit; gated evolve passes keep a generation only if it earns its place.
    Start with `evolve demo`, or `evolve init DIR`.
    """


def run(args: list[str]) -> int:
    """Run the click group on `args`; returns the exit status."""
    try:
        cli.main(args=args, prog_name="evolve", standalone_mode=False)
    except click.exceptions.Exit as exc:
        return int(exc.exit_code)
    except click.Abort as exc:
        stopped = exc.__cause__
        if isinstance(stopped, _write_interrupted()):  # Ctrl-C in a writer: say what it undid
            return _stopped(stopped)
        click.echo("aborted.", err=True)
        return 130
    except click.ClickException as exc:
        exc.show()
        return exc.exit_code
    except EvolveError as exc:
        click.echo(f"error: {exc}", err=True)
        return 1
    except KeyboardInterrupt as exc:
        if isinstance(exc, _write_interrupted()):
            return _stopped(exc)
        click.echo("interrupted; nothing half-written was kept.", err=True)
        return 130
    except OSError as exc:
        said = write_failure(exc)
        if said is None:
            raise
        # A writer outside a transaction (init, report --out): its files are written whole
        # (atomic writes) or not at all, so only the sentence is left to say.
        click.echo(f"error: {said[0]}; {said[1]}, then rerun.", err=True)
        return 1
    except BaseException as exc:
        if not isinstance(exc, _write_interrupted()):
            raise
        return _stopped(exc)  # SIGTERM, SIGHUP in a writer
    return 0


def _stopped(exc: WriteInterrupted) -> int:
    """Say what a writer stopped by a signal did with its write; its exit status."""
    click.echo(f"interrupted: {exc.message}", err=True)
    return int(exc.exit_code)


def _write_interrupted() -> type[WriteInterrupted]:
    """`evolve.txn.WriteInterrupted`, imported only when something was interrupted (the
    module pulls in git and the generation records)."""
    from evolve.txn import WriteInterrupted

    return WriteInterrupted
