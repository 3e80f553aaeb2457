"""`evolve train`'s body, without click: the click command (`evolve.cli._train`) and its fast
path (`evolve.cli._fast`, a plain `evolve train` read without click) both run it."""

from __future__ import annotations

from typing import TYPE_CHECKING

from evolve.cli._common import emit_json, progress_bar
from evolve.train import train

if TYPE_CHECKING:
    from evolve.envs import Tier
    from evolve.workspace import Workspace


def check_rendered(ws: Workspace, recipe: str) -> None:
    """Refuse to train `recipe` in a workspace whose agent does not see its units."""
    config = ws.config
    rendered = config.rendered_recipes()
    if recipe in rendered or (recipe == "skills" and config.skills.enabled):
        return
    from evolve.errors import EvolveError

    shown = ", ".join(rendered)
    raise EvolveError(
        f"this workspace renders {shown} (evolve.yaml render.recipes, default train.recipe), so "
        f"the agent would never see what {recipe} learns; set `render: {{recipes: [{shown}, "
        f"{recipe}]}}` in evolve.yaml first, or pass --unrendered to train it anyway."
    )


def run_train(
    ws: Workspace,
    *,
    recipe: str | None,
    episodes: int | None,
    feedback: Tier | None,
    review: bool | None,
    seed: int | None,
    persona: str | None,
    as_json: bool,
    unrendered: bool = False,
) -> None:
    """Train `ws` (opened, with the command line's models applied) and print the report.

    Raises:
        EvolveError: `recipe` is one the workspace does not render and `unrendered` is not
            set, or the workspace lacks the records a plain `git clone` leaves behind
            (nothing is written in either case).
    """
    from evolve.history import require_records

    # A plain `git clone` lacks refs/evolve/*: the clock would restart (docs/sharing.md).
    # Checked where a person trains; an experiment's job clones train without them by design.
    require_records(ws.store, persona or ws.config.persona)
    if recipe is not None and not unrendered:
        check_rendered(ws, recipe)
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
    from evolve.llm._meter import usage_line

    if report.start >= report.end:
        stdout.print(f"stream {report.stream} is already at episode {report.start}; nothing to do.")
        return
    accepted = sum(o.accepted for o in report.outcomes)
    stdout.print(
        f"[bold]{report.recipe}[/bold] persona={report.persona} episodes {report.start}..{report.end - 1}: "
        f"{accepted}/{len(report.outcomes)} accepted, {len(report.commits)} memory commits "
        f"in {report.duration_s:.2f}s"
    )
    stdout.print(usage_line(report.usage), highlight=False)
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


def run_synced(
    ws: Workspace,
    *,
    every: int,
    remote: str,
    recipe: str | None,
    episodes: int | None,
    feedback: Tier | None,
    review: bool | None,
    seed: int | None,
    persona: str | None,
    as_json: bool,
) -> None:
    """`evolve train --sync N`: the stream in chunks of N episodes, each pulled before and
    pushed after (`evolve.remote.train_synced`)."""
    from evolve.remote import train_synced

    with progress_bar("training", enabled=not as_json) as progress:
        done = train_synced(
            ws, every, remote, recipe=recipe, episodes=episodes, feedback=feedback, seed=seed,
            review=review, persona=persona, progress=progress,
        )  # fmt: skip
    if as_json:
        emit_json(done.to_json())
        return
    from evolve.cli._common import stdout

    for report, pushed in zip(done.reports, done.pushes, strict=False):
        stdout.print(
            f"episodes {report.start}..{report.end - 1}: {len(report.commits)} memory commits; "
            f"pushed to {pushed.remote}"
            + (f" after {pushed.pulls} pull(s)" if pushed.pulls else ""),
            highlight=False,
            markup=False,
        )
    if not done.reports:
        stdout.print("the stream is already at its last episode; nothing to do.")
