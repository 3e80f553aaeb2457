"""Start-up: `--version` and `--help` import no command module and no heavy library.

Checked through `sys.modules` in a fresh interpreter, not by timing, so it is deterministic.
"""

from __future__ import annotations

import subprocess
import sys

import click
import pytest

from evolve.cli._main import COMMANDS

HEAVY = ("pydantic", "git", "rich", "yaml", "httpx", "evolve.cli._", "evolve.workspace")


@pytest.mark.parametrize("argv", [["--version"], ["--help"], ["-h"]])
def test_cheap_flags_import_nothing_heavy(argv: list[str]) -> None:
    code = (
        "import sys\n"
        "from evolve.cli._main import main\n"
        f"rc = main({argv!r})\n"
        "heavy = sorted(m for m in sys.modules if m.startswith("
        f"{HEAVY!r}) and m != 'evolve.cli._main')\n"
        "print('HEAVY:' + ' '.join(heavy))\n"
        "sys.exit(rc)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    heavy = done.stdout.rsplit("HEAVY:", 1)[1].split()
    assert heavy == [], f"{argv} imported {heavy}"


def test_help_lists_every_command_from_the_table() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "evolve", "--help"], capture_output=True, text=True, check=True
    )
    for name, (_, short) in COMMANDS.items():
        assert f"{name} " in done.stdout and short in done.stdout


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_every_table_entry_is_a_command(name: str) -> None:
    from evolve.cli._main import cli

    command = cli.get_command(click.Context(cli), name)
    assert isinstance(command, click.Command)
