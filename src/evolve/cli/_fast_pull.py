"""`evolve pull` in its common forms without click: `evolve pull [REMOTE] [--json]
[-C DIR | --workspace DIR]`.

A pull is often the whole of a sync (nothing new, or a fast-forward), and click's import is a
large part of such a run's CPU; this answers those forms with the standard library, the store
and `evolve.remote`, with the output and exit statuses of the click command (`_remote`).
Anything else (`--help`, an unknown option, a workspace with a journal to recover) is handed
to click, before anything is done.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from evolve.remote import Travelled


def say(result: Travelled, verb: str) -> list[str]:
    """The lines `evolve pull` / `evolve push` print for `result`."""
    rec = result.records
    lines = [f"{verb} {result.remote} ({result.branch})"]
    if result.merged_branch:
        lines.append(f"  branch: {result.merged_branch}")
    if rec.updated:
        merged = set(rec.merged)
        lines += [
            f"  {ref}: {'merged (union)' if ref in merged else 'updated'}" for ref in rec.updated
        ]
    lines += [f"  kept beside its namesake: {name}" for name in rec.kept_aside]
    lines += [f"  not merged (not a ref evolve writes): {ref}" for ref in rec.ignored]
    if result.pulls:
        lines.append(f"  pulled first ({result.pulls}x): the remote had moved")
    if result.pushed:
        lines.append(f"  pushed {len(result.pushed)} refs (branch and refs/evolve/*)")
    return lines


def _parse(args: Sequence[str]) -> tuple[str, bool, str | None] | None:
    remote: str | None = None
    as_json, folder = False, None
    rest = list(args)
    while rest:
        arg = rest.pop(0)
        if arg == "--json" and not as_json:
            as_json = True
        elif arg in ("-C", "--workspace") and rest and folder is None:
            folder = rest.pop(0)
        elif arg.startswith("--workspace=") and folder is None:
            folder = arg.split("=", 1)[1]
        elif arg.startswith("-C") and len(arg) > 2 and folder is None:
            folder = arg[2:]
        elif not arg.startswith("-") and remote is None:
            remote = arg
        else:
            return None
    if folder is not None and (not folder or "\x00" in folder or not os.path.isdir(folder)):
        return None  # click says what is wrong with it
    return remote or "origin", as_json, folder


def run(args: Sequence[str]) -> int | None:
    """Run `evolve pull ARGS` (`args[0]` is "pull"); None hands it to click untouched."""
    parsed = _parse(args[1:])
    if parsed is None or sys.stdout is None or sys.stderr is None:
        return None
    remote, as_json, folder = parsed
    from pathlib import Path

    from evolve.errors import EvolveError
    from evolve.workspace import Workspace
    from evolve.workspace._paths import APPLY_JOURNAL, GENERATION_JOURNAL

    try:
        ws = Workspace.find(Path(folder) if folder is not None else None, read_config=False)
    except EvolveError:
        return None  # click says it, as always
    git_dir = ws.store.git_dir
    if (git_dir / GENERATION_JOURNAL).exists() or (git_dir / APPLY_JOURNAL).exists():
        return None  # a dead writer's journal: click's path recovers it first
    from evolve.remote import pull

    try:
        result = pull(ws, remote)
    except EvolveError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    except BaseException as exc:  # as the click group says them (`_group.run`)
        return _stopped(exc)
    if as_json:
        sys.stdout.write(json.dumps(result.to_json(), indent=2, sort_keys=True, default=str) + "\n")
    else:
        sys.stdout.write("".join(line + "\n" for line in say(result, "pulled")))
    return 0


def _stopped(exc: BaseException) -> int:
    from evolve.txn import WriteInterrupted

    if isinstance(exc, WriteInterrupted):
        print(f"interrupted: {exc.message}", file=sys.stderr)
        return int(exc.exit_code)
    if isinstance(exc, KeyboardInterrupt):
        print("interrupted; nothing half-written was kept.", file=sys.stderr)
        return 130
    if isinstance(exc, OSError):
        from evolve.errors import write_failure

        said = write_failure(exc)
        if said is not None:
            print(f"error: {said[0]}; {said[1]}, then rerun.", file=sys.stderr)
            return 1
    raise exc
