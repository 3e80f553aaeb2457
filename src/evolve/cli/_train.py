"""`evolve train`: learn from the training stream, one commit per changing episode."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from evolve.cli._common import (
    ModelChoice,
    emit_json,
    json_option,
    model_options,
    open_workspace,
    progress_bar,
    workspace_option,
)
from evolve.cli._plugins import Registered
from evolve.train import train


@click.command("train")
@click.option(
    "--recipe",
    type=Registered("recipes"),
    help="Update recipe (default: train.recipe; `evolve plugins` lists them).",
)
@click.option(
    "--episodes",
    type=click.IntRange(1, 100_000),
    help="Train up to this episode of the stream (default: train.episodes).",
)
@click.option(
    "--feedback",
    type=click.Choice(["instance", "corrective"]),
    help="Complaint tier (default: train.feedback).",
)
@click.option(
    "--review",
    is_flag=True,
    default=None,
    help="Write new and changed units as pending, for `evolve review`.",
)
@click.option("--seed", type=int, help="Stream seed (default: train.seed).")
@click.option("--persona", help="Whose preferences to learn (default: persona in evolve.yaml).")
@model_options
@json_option
@workspace_option
def train_cmd(
    models: ModelChoice,
    recipe: str | None,
    episodes: int | None,
    feedback: Any,
    review: bool | None,
    seed: int | None,
    persona: str | None,
    as_json: bool,
    workspace: Path | None,
) -> None:
    """Run the training stream: each rejected episode's complaint becomes memory.

    Every episode that changes memory is one commit with Evolve-* trailers; episodes that
    change nothing make no commit. A stopped run resumes where its stream's history ends.
    """
    ws = models.apply(open_workspace(workspace))
    with progress_bar("training") as progress:
        report = train(
            ws, recipe=recipe, episodes=episodes, feedback=feedback, seed=seed, review=review,
            persona=persona, progress=progress,
        )  # fmt: skip
    if as_json:
        emit_json(report.to_json())
        return
    # rich only for what is printed for a person (a writer imports what it runs)
    from rich.markup import escape

    from evolve.cli._common import stdout

    if report.start >= report.end:
        stdout.print(f"stream {report.stream} is already at episode {report.start}; nothing to do.")
        return
    accepted = sum(o.accepted for o in report.outcomes)
    stdout.print(
        f"[bold]{report.recipe}[/bold] persona={report.persona} episodes {report.start}..{report.end - 1}: "
        f"{accepted}/{len(report.outcomes)} accepted, {len(report.commits)} memory commits "
        f"in {report.duration_s:.2f}s"
    )
    for o in report.outcomes:
        if o.commit and o.batch is not None:  # a skills batch: its verdicts, as its subject
            ops = ", ".join(f"{k} {v}" for k, v in o.ops.items()) or "no changes"
            span = o.batch_episodes or [o.episode]
            shown = f"{span[0]}-{span[-1]}" if len(span) > 1 else str(span[0])
            stdout.print(f"  {o.commit[:10]} batch {o.batch} (episodes {shown}): {ops}")
        elif o.commit:
            ops = ", ".join(f"{k} {v}" for k, v in sorted(o.ops.items()))
            stdout.print(f"  {o.commit[:10]} episode {o.episode} {o.task_id}: {ops}")
        if o.failed is not None:
            stdout.print(f"  episode {o.episode} {o.task_id} failed: {escape(o.failed)}")
        for line in o.refused:
            stdout.print(f"  episode {o.episode}: {escape(line)}")
        if o.refusal_record:
            stdout.print(
                f"  episode {o.episode}: refusals recorded in {o.refusal_record[:10]} "
                "(refs/evolve/train; see `evolve log`)"
            )
    failed = sum(o.failed is not None for o in report.outcomes)
    if failed:
        stdout.print(
            f"{failed} of {len(report.outcomes)} episodes failed (a model request did not "
            "succeed on any try; models.timeout_s, models.retry): they learned nothing."
        )
    stdout.print("see `git log` or `evolve log` for the memory diffs.")
    if report.recipe not in ws.config.rendered_recipes():
        shown = ", ".join(ws.config.rendered_recipes())
        stdout.print(
            f"note: this workspace renders {shown} (evolve.yaml render.recipes, default "
            f"train.recipe); outside training the agent does not see what {report.recipe} learned."
        )
