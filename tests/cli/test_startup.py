"""Start-up: `--version` and `--help` import no command module and no heavy library.

Checked through `sys.modules` in a fresh interpreter, not by timing, so it is deterministic.
"""

from __future__ import annotations

import subprocess
import sys

import click
import pytest

from evolve.cli._group import COMMANDS

HEAVY = ("pydantic", "git", "rich", "yaml", "httpx", "evolve.workspace", "evolve.store")
LOADER_ONLY = {"evolve.cli._main", "evolve.cli._group"}


def _loaded(argv: list[str]) -> list[str]:
    code = (
        "import sys\n"
        "from evolve.cli._main import main\n"
        f"rc = main({argv!r})\n"
        "print('LOADED:' + ' '.join(sorted(sys.modules)))\n"
        "sys.exit(rc)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    return done.stdout.rsplit("LOADED:", 1)[1].split()


@pytest.mark.parametrize("argv", [["--help"], ["-h"]])
def test_help_imports_no_command_and_nothing_heavy(argv: list[str]) -> None:
    loaded = _loaded(argv)
    heavy = [m for m in loaded if m.startswith(HEAVY)]
    commands = [m for m in loaded if m.startswith("evolve.cli._") and m not in LOADER_ONLY]
    assert heavy == [] and commands == [], f"{argv} imported {heavy + commands}"


def test_version_imports_only_the_standard_library() -> None:
    loaded = _loaded(["--version"])
    assert "click" not in loaded
    ours = {m for m in loaded if m.startswith("evolve")}
    assert ours <= {"evolve", "evolve.cli", "evolve.cli._main"}, ours


def test_help_lists_every_command_from_the_table() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "evolve", "--help"], capture_output=True, text=True, check=True
    )
    for name, (_, short) in COMMANDS.items():
        assert f"{name} " in done.stdout and short in done.stdout


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_every_table_entry_is_a_command(name: str) -> None:
    from evolve.cli._group import cli

    command = cli.get_command(click.Context(cli), name)
    assert isinstance(command, click.Command)
