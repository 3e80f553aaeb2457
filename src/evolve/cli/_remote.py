"""`evolve clone`, `evolve pull`, `evolve push`: a workspace with every `refs/evolve/*` ref
(docs/sharing.md)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import click

from evolve.cli._common import emit_json, json_option, open_workspace, workspace_option

if TYPE_CHECKING:
    from evolve.remote import Travelled


def _say(result: Travelled, verb: str) -> None:
    from evolve.cli._fast_pull import say

    for line in say(result, verb):
        click.echo(line)


@click.command("clone")
@click.argument("url")
@click.argument("directory", type=click.Path(file_okay=False, path_type=Path), required=False)
@json_option
def clone_cmd(url: str, directory: Path | None, as_json: bool) -> None:
    """Clone the workspace at URL into DIRECTORY with its records (refs/evolve/*).

    Unlike a plain `git clone`, the persona clocks, refusal records, generation and
    experiment records come along, and the remote is configured so that a plain `git fetch`
    and `git push` carry them too.
    """
    from evolve.remote import clone

    ws, result = clone(url, directory)
    if as_json:
        emit_json({"workspace": str(ws.root), **result.to_json()})
        return
    _say(result, "cloned")
    click.echo(f"workspace {ws.root}")


@click.command("pull")
@click.argument("remote", default="origin")
@json_option
@workspace_option
def pull_cmd(remote: str, as_json: bool, workspace: Path | None) -> None:
    """Fetch REMOTE's branch and records; merge the records (a union) and the branch.

    Records refs are never rewritten: a remote's refs/evolve/* and the local ones merge into
    a commit holding both (docs/sharing.md says the rule of each file).
    """
    from evolve.remote import pull

    # evolve.yaml is not read: a pull may be what brings a valid one
    result = pull(open_workspace(workspace, config=False), remote)
    if as_json:
        emit_json(result.to_json())
        return
    _say(result, "pulled")


@click.command("push")
@click.argument("remote", default="origin")
@json_option
@workspace_option
def push_cmd(remote: str, as_json: bool, workspace: Path | None) -> None:
    """Send the branch and every refs/evolve/* ref to REMOTE, never forced.

    A remote that moved is pulled first (records merged as a union, the branch merged), and
    a push that loses a race is retried after another pull. With scopes that
    share.scopes keeps on this machine, what is sent is a projection of the branch and of
    refs/evolve/train without them (refs/shared/*); their memory never leaves.
    """
    from evolve.remote import push

    result = push(open_workspace(workspace), remote)
    if as_json:
        emit_json(result.to_json())
        return
    _say(result, "pushed to")


@click.command("status")
@json_option
@workspace_option
def status_cmd(as_json: bool, workspace: Path | None) -> None:
    """Whether this workspace travels whole, each problem with the command that fixes it.

    For each remote: whether a plain `git fetch` and `git push` carry refs/evolve/* (a remote
    added with `git remote add` does once `evolve push REMOTE` ran); whether the records are
    here and merged (a plain `git clone` lacks them); whether HEAD is a plain `git merge`
    that evolve's merge rules have not settled (`evolve merge --fix`). Changes nothing.
    """
    from evolve.remote import status

    result = status(open_workspace(workspace))
    if as_json:
        emit_json(result.to_json())
        return
    for line in result.lines():
        click.echo(line)
