"""`evolve merge` (merge a branch as one merge commit, or settle a plain `git merge`) and
`evolve merge-driver` (git's merge driver for the counter sidecars; its common call is
answered by `evolve.cli._main` without click)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING

import click

from evolve.cli._common import emit_json, json_option, open_workspace, stdout, workspace_option

if TYPE_CHECKING:
    from evolve.workspace import Workspace


def _takes(values: tuple[str, ...]) -> dict[str, str]:
    out: dict[str, str] = {}
    for value in values:
        ident, sep, side = value.partition("=")
        if not sep or side not in ("ours", "theirs") or not ident:
            raise click.BadParameter(
                f"{value!r}: give UNIT=ours or UNIT=theirs.", param_hint="--take"
            )
        out[ident] = side
    return out


@click.command("merge")
@click.argument("ref", required=False)
@click.option(
    "--fix",
    is_flag=True,
    help="Settle a plain `git merge`: finish one git stopped on unit files, or apply the merge "
    "rules (one replacement, tombstones, no text twice, caps) to the merge it committed.",
)
@click.option(
    "--take",
    "take",
    multiple=True,
    metavar="UNIT=SIDE",
    help="For a unit edited on one side and superseded on the other, or a hand note edited on "
    "both: keep SIDE's version (ours or theirs). Repeatable.",
)
@click.option(
    "--install-drivers",
    "install_drivers",
    is_flag=True,
    help="Register evolve's merge drivers in this repository's config (git never carries "
    "it: a plain `git clone` lacks them) and nothing else; `evolve status` says when needed.",
)
@json_option
@workspace_option
def merge_cmd(
    ref: str | None,
    fix: bool,
    take: tuple[str, ...],
    install_drivers: bool,
    as_json: bool,
    workspace: Path | None,
) -> None:
    """Merge REF (a branch, a fetched ref, a commit) into this branch as ONE merge commit.

    Counter sidecars merge three-way (their counts add up); units from both sides stay; a
    unit superseded on both sides keeps one replacement (the later learned; with `review:
    true` the other goes to `evolve review`); a tombstone on either side refuses its text on
    the other; no text is rendered twice; caps hold. See docs/sharing.md.
    """
    from evolve.merge import merge_branch, reconcile

    if install_drivers:
        if ref or fix or take:
            raise click.UsageError("--install-drivers takes no REF, --fix or --take.")
        _install_drivers(open_workspace(workspace), as_json)
        return
    if fix == bool(ref):
        raise click.UsageError("give REF to merge, or --fix (without REF) to settle a git merge.")
    ws = open_workspace(workspace)
    sides = _takes(take)
    result = reconcile(ws, take=sides) if fix else merge_branch(ws, str(ref), take=sides)  # type: ignore[arg-type]
    if as_json:
        emit_json(result.to_json())
        return
    if result.commit is None:
        stdout.print(f"Nothing to merge: {result.status}.")
        for note in result.notes:
            stdout.print(f"  {note}", markup=False)
        return
    what = {"fast-forward": "fast-forwarded to", "reconciled": "merge rules applied after"}
    stdout.print(
        f"{what.get(result.status, 'merged')} {result.ref} as {result.commit[:10]}"
        + (
            f" ({', '.join(f'{k} {v}' for k, v in sorted(result.rules.items()))})"
            if result.rules
            else ""
        )
    )
    for note in result.notes:
        stdout.print(f"  {note}", markup=False)


def _install_drivers(ws: Workspace, as_json: bool) -> None:
    from evolve.merge import install_merge_drivers

    keys = install_merge_drivers(ws.root)
    drivers = sorted({key.split(".")[1] for key in keys})
    if as_json:
        emit_json({"root": str(ws.root), "drivers": drivers, "config": keys})
        return
    stdout.print(
        f"registered {len(drivers)} merge drivers in {ws.root} ({', '.join(drivers)}): "
        "a plain git merge now adds up the counter sidecars' counts.",
        markup=False,
    )


@click.command(
    "merge-driver", context_settings={"ignore_unknown_options": True, "help_option_names": []}
)
@click.argument("args", nargs=-1, type=click.UNPROCESSED)
def merge_driver_cmd(args: tuple[str, ...]) -> None:
    """git's merge driver for evolve's counter sidecars: KIND BASE OURS THEIRS [PATH]."""
    from evolve.merge._drivers import main

    code = main(list(args))
    if code:
        sys.exit(code)
