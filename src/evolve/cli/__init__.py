"""The command line."""

from evolve.cli._main import cli, main

__all__ = ["cli", "main"]
