"""`evolve init` and `evolve demo`."""

from __future__ import annotations

from pathlib import Path

import click

from evolve.cli._common import progress_bar, stdout
from evolve.cli._run import print_report
from evolve.evaluate import run_split
from evolve.workspace import init_workspace


@click.command("init")
@click.argument("directory", type=click.Path(file_okay=False, path_type=Path), default=".")
@click.option("--persona", help="The user whose preferences this workspace learns (default: alex).")
def init_cmd(directory: Path, persona: str | None) -> None:
    """Create a workspace in DIRECTORY (new or empty) and make its first commit."""
    ws = init_workspace(directory, persona=persona)
    stdout.print(f"created workspace {ws.root} (persona {ws.config.persona})")
    stdout.print(f"next: cd {ws.root} && evolve run --split dev")


@click.command("demo")
@click.argument("directory", type=click.Path(file_okay=False, path_type=Path), default="evolve-demo")
def demo_cmd(directory: Path) -> None:
    """Create a workspace in DIRECTORY and run the main job on the embedded default.

    The embedded default is the persona_world environment with the offline sim model
    (docs/sim.md): its scores show the harness at work, not how good a real model is.
    """
    ws = init_workspace(directory)
    stdout.print(f"created workspace {ws.root} (persona {ws.config.persona}, model sim)")
    with progress_bar("dev, no memory") as progress:
        before = run_split(ws, "dev", inject="none", progress=progress)
    print_report(before, "dev split with no memory")
    with progress_bar("dev, oracle memory") as progress:
        oracle = run_split(ws, "dev", inject="oracle", progress=progress)
    print_report(oracle, "dev split with the persona's own statements as memory (oracle)")
