"""`evolve train`: learn from the training stream, one commit per changing episode."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from evolve.cli._common import (
    ModelChoice,
    json_option,
    model_options,
    open_workspace,
    workspace_option,
)
from evolve.cli._plugins import Registered
from evolve.cli._trainer import run_train


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
@click.option(
    "--unrendered",
    is_flag=True,
    help="Train --recipe even though the workspace does not render it (render.recipes): the "
    "agent will not see what it learns until evolve.yaml renders it.",
)
@click.option("--seed", type=int, help="Stream seed (default: train.seed).")
@click.option("--persona", help="Whose preferences to learn (default: persona in evolve.yaml).")
@click.option(
    "--sync",
    type=click.IntRange(1, 100_000),
    metavar="N",
    help="Pull before and push after every N episodes (a lost push race is pulled and "
    "retried; docs/sharing.md).",
)
@click.option(
    "--remote", default="origin", show_default=True, help="The remote --sync pulls and pushes."
)
@model_options
@json_option
@workspace_option
def train_cmd(
    models: ModelChoice,
    recipe: str | None,
    episodes: int | None,
    feedback: Any,
    review: bool | None,
    unrendered: bool,
    seed: int | None,
    persona: str | None,
    sync: int | None,
    remote: str,
    as_json: bool,
    workspace: Path | None,
) -> None:
    """Run the training stream: each rejected episode's complaint becomes memory.

    Every episode that changes memory is one commit with Evolve-* trailers; episodes that
    change nothing make no commit. A stopped run resumes where its stream's history ends.
    With --sync N, the stream is pulled from and pushed to --remote every N episodes.
    """
    if sync is not None:
        from evolve.cli._trainer import run_synced

        run_synced(
            models.apply(open_workspace(workspace)), every=sync, remote=remote, recipe=recipe,
            episodes=episodes, feedback=feedback, review=review, seed=seed, persona=persona,
            as_json=as_json,
        )  # fmt: skip
        return
    run_train(
        models.apply(open_workspace(workspace)), recipe=recipe, episodes=episodes,
        feedback=feedback, review=review, seed=seed, persona=persona, as_json=as_json,
        unrendered=unrendered,
    )  # fmt: skip
