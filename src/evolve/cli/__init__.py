"""The command line."""

from __future__ import annotations

from evolve.cli._main import main

TYPE_CHECKING = False  # no `typing` import: `evolve --version` pays for every module it loads
if TYPE_CHECKING:
    from evolve.cli._group import cli


def __getattr__(name: str) -> object:
    if name == "cli":
        from evolve.cli._group import cli

        return cli
    raise AttributeError(name)


__all__ = ["cli", "main"]
