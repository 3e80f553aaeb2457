"""`evolve init` and `evolve demo`."""

from __future__ import annotations

from pathlib import Path

import click

from evolve._format._message import KIND
from evolve._io import atomic_write
from evolve.cli._common import progress_bar, stderr, stdout
from evolve.cli._evolve import print_result
from evolve.cli._run import print_report
from evolve.evaluate import run_split
from evolve.generations import evolve
from evolve.train import train
from evolve.workspace import CONFIG_NAME, Workspace, init_workspace

DEMO_FEEDBACK = "corrective"


def _demo_feedback(ws: Workspace) -> Workspace:
    """Set the demo workspace's `train.feedback` to corrective, committed on its own.

    Under the instance tier the complaint names a failure but not the preferred value, so the
    learner can state only what the complaint shows (docs/sim.md, "What each tier can
    teach"): for the default persona that is the payment visibility, the habitual card and
    the running total, not the text and e-mail formats. The demo shows learning that works."""
    path = ws.root / CONFIG_NAME
    text = path.read_text(encoding="utf-8")
    new = "\n".join(
        f"  feedback: {DEMO_FEEDBACK}     # the demo's choice; the default is instance"
        if line.strip().startswith("feedback:")
        else line
        for line in text.splitlines()
    )
    from evolve.txn import writer

    with writer(ws, "evolve demo") as tx:
        atomic_write(path, new + "\n")
        tx.commit(
            [CONFIG_NAME],
            "demo: train with corrective feedback",
            body="The corrective tier's complaint states the preference; the instance tier's "
            "only names the failure (docs/sim.md, what each tier can teach).",
            trailers={KIND: "init"},
        )
    return Workspace(ws.root)


@click.command("init")
@click.argument("directory", type=click.Path(file_okay=False, path_type=Path), default=".")
@click.option("--persona", help="The user whose preferences this workspace learns (default: alex).")
@click.option(
    "--env",
    "--environment",
    type=click.Choice(["persona_world", "appworld", "files"]),
    default=None,
    help="The environment (default: persona_world; appworld needs `evolve appworld setup`; "
    "files: your own tasks, checkers and tools in evalset/, see docs/environments.md).",
)
@click.option(
    "--skills",
    is_flag=True,
    help="Set it up for skill compilation: train.recipe skills and, for persona_world, the "
    "procedure-shaped tasks (evalset/procedures.yaml: verify after writing, look up before "
    "writing) that skills are for.",
)
def init_cmd(directory: Path, persona: str | None, env: str | None, skills: bool) -> None:
    """Create a workspace in DIRECTORY (new or empty) and make its first commit."""
    ws = init_workspace(directory, persona=persona, env=env, skills=skills)
    if env == "appworld":
        from evolve.envs.appworld._scaffold import missing_data_note

        note = missing_data_note(ws.evalset_dir)
        if note:
            stderr.print(note)
    stdout.print(f"created workspace {ws.root} (persona {ws.config.persona})")
    stdout.print(f"next: cd {ws.root} && evolve run --split dev")
    if skills:
        stdout.print("then: evolve train (recipe skills), evolve skills, evolve run --split dev")


@click.command("demo")
@click.argument(
    "directory", type=click.Path(file_okay=False, path_type=Path), default="evolve-demo"
)
@click.option(
    "--episodes",
    type=click.IntRange(1, 1000),
    default=4,
    show_default=True,
    help="Training episodes before the gated generations.",
)
@click.option(
    "--generations",
    type=click.IntRange(1, 5),
    default=2,
    show_default=True,
    help="Gated generations to run.",
)
def demo_cmd(directory: Path, episodes: int, generations: int) -> None:
    """Create a workspace in DIRECTORY and run the main job on the embedded default:
    score dev, train on the stream (one commit per changing episode), score dev again, then
    run gated generations (each trains a batch and lets the reflector edit the prompt; the
    gate keeps it only if dev improves by a paired bootstrap).

    The demo trains with corrective feedback (set in its evolve.yaml, in a commit of its
    own): instance feedback names a failure without the preferred value, so it teaches only
    what a complaint shows (docs/sim.md).

    The embedded default is the persona_world environment with the offline sim model
    (docs/sim.md): its scores show the harness at work, not how good any real model is.
    """
    ws = _demo_feedback(init_workspace(directory))
    stdout.print(
        f"created workspace {ws.root} (persona {ws.config.persona}, model sim, recipe "
        f"{ws.config.train.recipe}, feedback {ws.config.train.feedback})"
    )
    stdout.print(
        "feedback: corrective (each complaint states the preferred value). With instance "
        "feedback (the default of `evolve init`) a complaint only names the failure, and the "
        "sim learns only the values a complaint shows: for alex the payment visibility, "
        "card and running total, not the text, note and e-mail formats (docs/sim.md)."
    )
    with progress_bar("dev before training") as progress:
        before = run_split(ws, "dev", progress=progress)
    print_report(before, "dev split before training (empty memory)")
    with progress_bar("training") as progress:
        report = train(ws, episodes=episodes, progress=progress)
    stdout.print(
        f"\ntrained {len(report.outcomes)} episodes: {sum(o.accepted for o in report.outcomes)} accepted, "
        f"{len(report.commits)} memory commits (see `git log --oneline`)"
    )
    with progress_bar("dev after training") as progress:
        after = run_split(ws, "dev", progress=progress)
    print_report(after, "dev split after training")
    stdout.print(
        f"\n{generations} gated generation(s) (train a batch, reflect, gate on dev; holdout reported):"
    )
    result = evolve(ws, generations=generations, progress=lambda m: stderr.print(m, style="dim"))
    print_result(result)
    stdout.print(
        f"\nnext: cd {ws.root} && evolve log && evolve memory && evolve evolve --generations 1 --dry-run"
    )
