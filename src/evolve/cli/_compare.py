"""`evolve compare EXPERIMENT.yaml`: run an experiment, each arm on its own ref."""

from __future__ import annotations

from pathlib import Path

import click

from evolve.cli._common import (
    ModelChoice,
    emit_json,
    json_option,
    model_options,
    open_workspace,
    workspace_option,
)


def _find(path: Path, root: Path) -> Path:
    if path.exists() or path.is_absolute():
        return path
    inside = root / path
    return inside if inside.exists() else path


@click.command("compare")
@click.argument("experiment", type=click.Path(dir_okay=False, path_type=Path))
@click.option(
    "--plan",
    "plan_only",
    is_flag=True,
    help="Print the jobs (and which are already done) and exit without running anything.",
)
@click.option(
    "--fresh",
    is_flag=True,
    help="Discard this experiment's earlier results and arm refs and start over.",
)
@click.option(
    "--jobs",
    "workers",
    type=click.IntRange(1, 64),
    help="Jobs in parallel, each in its own process (default: 2, or 1 on a one-core machine); "
    "with --executor ray, at most this many on the cluster (default: its CPUs).",
)
@click.option(
    "--executor",
    type=click.Choice(["process", "ray"]),
    default="process",
    show_default=True,
    help="Where jobs run: processes of this machine, or a Ray cluster (RAY_ADDRESS, else a "
    "local one; needs the `ray` extra): each job's arm refs and result come back through git, "
    "and a stopped run resumes with either executor.",
)
@model_options
@json_option
@workspace_option
def compare_cmd(
    experiment: Path,
    plan_only: bool,
    fresh: bool,
    workers: int | None,
    executor: str,
    models: ModelChoice,
    as_json: bool,
    workspace: Path | None,
) -> None:
    """Run the arms of EXPERIMENT (e.g. experiments/q3.yaml) and compare them.

    Arms: `none` (no memory, the floor), `oracle` (the persona's own preferences, the
    ceiling), `fixed` (a neutral block as long as a recipe arm's memory: the token-matched
    control) and one arm per recipe with its parameters. Each recipe arm is trained for
    every persona x feedback tier x stream order (training seed) on its own ref,

        refs/evolve/arms/<experiment>/<arm>/<persona>/<tier>/<order>

    starting from the workspace's HEAD, in a clone under .git/evolve-compare/; the
    workspace's branch, index and working tree are never touched. Every arm is then scored
    on the evaluation splits, each task once per evaluation seed.

    Results: per arm, success (task done and no preference violated), task done
    and violation rates (overall and per rule) with 95% bootstrap intervals over
    tasks, the gap closed between none and oracle on the failure rate ((undone
    tasks + violations) / (episodes + applicable preference checks): an agent
    that does nothing fails every check) with its interval (undefined when none
    and oracle score the same), its spread across stream orders, tokens and
    cost; written to
    generations/experiments/<name>/results.{json,md} and committed to
    refs/evolve/records. `evolve report` shows them.

    A stopped run (Ctrl-C, crash, kill) resumes when the same command runs
    again: finished jobs are kept, an interrupted one starts again from the base
    commit. Read the arms with git and evolve:

    \b
        git diff refs/evolve/arms/q3/ace/alex/instance/0 \\
                 refs/evolve/arms/q3/tepa/alex/instance/0 -- memory/
        evolve memory --as-of refs/evolve/arms/q3/ace/alex/instance/0

    To log or revert on an arm, check it out in a worktree (README, "Comparing
    recipes").
    """
    from evolve.compare import prepare, run

    ws = models.apply(open_workspace(workspace))
    overrides = {
        "agent": models.agent,
        "updater": models.updater,
        "reflector": models.reflector,
        "cache": models.cache,
    }
    prepared = prepare(ws, _find(experiment, ws.root), overrides=overrides)
    exp = prepared.experiment
    if plan_only:
        jobs = [
            {
                "job": j.key,
                "label": j.label(),
                "ref": j.ref(exp.name),
                "done": j.key in prepared.done,
            }
            for j in prepared.jobs
        ]
        if as_json:
            emit_json(
                {
                    "experiment": exp.name,
                    "base": prepared.base,
                    "models": prepared.models,
                    "jobs": jobs,
                    "pending": len(prepared.pending),
                    "needs_fresh": prepared.needs_fresh,
                }
            )
            return
        click.echo(
            f"experiment {exp.name}: {len(jobs)} jobs ({len(prepared.pending)} to run) on "
            f"{prepared.base[:10]}, models {', '.join(f'{k}={v}' for k, v in prepared.models.items())}"
        )
        if prepared.needs_fresh:
            click.echo(
                f"note: {prepared.folder.relative_to(ws.root)} holds results of another plan "
                "(a changed file, base commit or model); the run needs --fresh to discard them",
                err=True,
            )
        for job in jobs:
            mark = "done" if job["done"] else "todo"
            click.echo(f"  {mark}  {job['label']}" + (f"  -> {job['ref']}" if job["ref"] else ""))
        return

    def say(line: str) -> None:
        click.echo(line, err=True)

    # Every arm runs in a clone of HEAD: its configuration, evaluation set, memory and prompts
    # are the committed ones.
    dirty = ws.store.dirty_paths(["memory", "prompts", "evolve.yaml", "evalset"])
    if dirty:
        shown = ", ".join(dirty[:5]) + (" ..." if len(dirty) > 5 else "")
        say(
            f"note: uncommitted changes ({shown}) are not part of the experiment; every arm "
            f"starts from HEAD {prepared.base[:10]}, without them."
        )

    doc = run(ws, prepared, workers=workers, fresh=fresh, say=say, executor=executor)
    if as_json:
        emit_json(doc)
        return
    from evolve.compare import results_markdown

    click.echo(results_markdown(doc))
    click.echo(f"wrote {prepared.folder.relative_to(ws.root)}/results.md and results.json")
