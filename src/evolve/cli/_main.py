"""The `evolve` command line: thin commands over the Python API.

This module imports nothing but the standard library: `evolve --version` answers without
loading click, and everything else is handed to the click group in `_group`.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

from evolve import __version__


def main(argv: Sequence[str] | None = None) -> int:
    """Run the CLI; returns the exit status (tests call this directly)."""
    args = list(sys.argv[1:] if argv is None else argv)
    if args == ["--version"]:
        print(f"evolve, version {__version__}")
        return 0
    from evolve.cli._group import run

    return run(args)


def entry() -> None:
    """Console-script entry point."""
    sys.exit(main())


if __name__ == "__main__":
    sys.exit(main())
