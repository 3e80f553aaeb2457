"""`evolve appworld setup` and `evolve appworld splits`."""

from __future__ import annotations

from pathlib import Path

import click

from evolve._format._message import KIND
from evolve.cli._common import (
    emit_json,
    json_option,
    open_workspace,
    stderr,
    stdout,
    workspace_option,
)
from evolve.errors import EvolveError


@click.group("appworld")
def appworld_group() -> None:
    """Run evolve on AppWorld: prepare its venv, rebuild splits from installed tasks."""


@appworld_group.command("setup")
@click.option(
    "--root",
    type=click.Path(file_okay=False, path_type=Path),
    help="The AppWorld root (the folder holding data/); default: $APPWORLD_ROOT.",
)
@json_option
def setup_cmd(root: Path | None, as_json: bool) -> None:
    """Create the AppWorld venv (pinned), unpack its apps, and look for the data.

    The venv lives in $EVOLVE_APPWORLD_HOME (default ~/.cache/evolve/appworld), never in a
    workspace; running it again reuses what is there.
    """
    from evolve.envs.appworld._setup import setup

    report = setup(root, lambda line: stderr.print(line))
    if as_json:
        emit_json(
            {
                "venv": str(report.venv),
                "version": report.version,
                "root": str(report.root) if report.root else None,
                "tasks": report.tasks,
                "missing": report.missing,
            }
        )
        return
    if report.missing:
        stdout.print(report.missing)
    else:
        stdout.print(
            f"ready: AppWorld {report.version}, {report.tasks} task(s) under {report.root}"
        )


@appworld_group.command("splits")
@click.option(
    "--root",
    type=click.Path(file_okay=False, path_type=Path),
    help="The AppWorld root (the folder holding data/); default: $APPWORLD_ROOT.",
)
@click.option("--dry-run", is_flag=True, help="Print the split file; change nothing.")
@workspace_option
@json_option
def splits_cmd(root: Path | None, dry_run: bool, workspace: Path | None, as_json: bool) -> None:
    """Rebuild evalset/splits.yaml from the installed AppWorld tasks and commit it."""
    from evolve.envs.appworld._paths import data_root
    from evolve.envs.appworld._setup import build_splits, splits_yaml

    ws = open_workspace(workspace)
    if ws.config.environment != "appworld":
        raise EvolveError(
            f"this workspace runs on {ws.config.environment}; set `environment: appworld` first."
        )
    root = root or data_root()
    if root is None:
        raise EvolveError("no AppWorld data root; set APPWORLD_ROOT or pass --root DIR.")
    splits = build_splits(root.resolve())
    if not any(splits.values()):
        raise EvolveError(f"no AppWorld tasks are installed under {root}/data/tasks.")
    text = splits_yaml(splits, root.resolve())
    counts = {k: len(v) for k, v in splits.items()}
    if not dry_run:
        path = ws.evalset_dir / "splits.yaml"
        from evolve.txn import writer

        with writer(ws, "evolve appworld splits") as tx:
            rel = str(path.relative_to(ws.root))
            from evolve import _confine as confined

            confined.write_atomic(ws.root, rel, text)  # no link followed out, at open time
            if ws.store.dirty_paths([rel]):
                tx.commit(
                    [rel],
                    "evolve: rebuild the AppWorld splits from the installed tasks",
                    trailers={KIND: "splits"},
                )
    if as_json:
        emit_json({"splits": splits, "counts": counts, "written": not dry_run})
    elif dry_run:
        stdout.print(text, end="")
    else:
        stdout.print(
            f"wrote evalset/splits.yaml: {counts['train']} train, {counts['dev']} dev, "
            f"{counts['holdout']} holdout task(s)"
        )
