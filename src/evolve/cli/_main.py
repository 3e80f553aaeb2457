"""The `evolve` command line: thin commands over the Python API.

This module imports nothing but the standard library: `evolve --version` answers without
loading click; the reading commands (`log`, `show`, `memory`) and `run --json` are answered by
`_fast` without click in their common forms; everything else is handed to the click group in
`_group`.
"""

from __future__ import annotations

import contextlib
import os
import sys

from evolve import __version__

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Sequence


def main(argv: Sequence[str] | None = None) -> int:
    """Run the CLI; returns the exit status (tests call this directly).

    `-C DIR` before the command (repeatable, each relative to the one before, as git's) runs
    it as if evolve was started in DIR; the caller's folder is restored afterwards.
    """
    args = list(sys.argv[1:] if argv is None else argv)
    start = os.getcwd()
    try:
        while args and (args[0] == "-C" or (args[0].startswith("-C") and len(args[0]) > 2)):
            folder = args[0][2:] if len(args[0]) > 2 else (args[1] if len(args) > 1 else None)
            args = args[1:] if len(args[0]) > 2 else args[2:]
            if not folder:
                print("error: -C needs a folder: evolve -C DIR COMMAND ...", file=sys.stderr)
                return 2
            try:
                os.chdir(folder)
            except OSError as exc:
                print(f"error: -C {folder}: {exc.strerror or exc}.", file=sys.stderr)
                return 2
        return _main(args)
    finally:
        with contextlib.suppress(OSError):
            os.chdir(start)


def _main(args: list[str]) -> int:
    if args == ["--version"]:
        print(f"evolve, version {__version__}")
        return 0
    if args[:1] == ["merge-driver"]:  # git's call during a merge: no click, no workspace
        from evolve.merge._drivers import main as merge_driver

        return merge_driver(args[1:])
    if args and args[0] in ("log", "show", "memory", "run", "train"):
        from evolve.cli._fast import run as run_fast

        done = run_fast(args)
        if done is not None:
            return done
    if args[:1] == ["pull"]:  # most syncs: nothing new or a fast-forward, no click
        from evolve.cli._fast_pull import run as run_pull

        done = run_pull(args)
        if done is not None:
            return done
    from evolve.cli._group import run

    return run(args)


def entry() -> None:
    """Console-script entry point."""
    sys.exit(main())


if __name__ == "__main__":
    sys.exit(main())
