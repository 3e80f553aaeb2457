"""The command line."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from evolve.cli._main import main

if TYPE_CHECKING:
    from evolve.cli._group import cli


def __getattr__(name: str) -> Any:
    # The click group is loaded only when asked for, so `evolve --version` never imports click.
    if name == "cli":
        from evolve.cli._group import cli

        return cli
    raise AttributeError(name)


__all__ = ["cli", "main"]
