"""`evolve run`: score a split."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click
from rich.table import Table

from evolve._format._views import REPORT_HEADER, report_lines, report_rows, report_text
from evolve.cli._common import (
    ModelChoice,
    emit_json,
    json_option,
    model_options,
    open_workspace,
    progress_bar,
    stdout,
    workspace_option,
    writer_busy,
)
from evolve.cli._plugins import Registered
from evolve.envs import SPLITS
from evolve.evaluate import INJECT_MODES, SplitReport, run_split


def print_report(report: SplitReport, title: str | None = None) -> None:
    """The report as text: drawn by `evolve._format._views.report_text` on a plain stream (as
    `evolve run`'s fast path prints it), by rich on a terminal or when rich must lay it out."""
    plain = stdout.color_system is None and not stdout.is_terminal
    text = report_text(report, title, stdout.width) if plain else None
    if text is not None and (text.isascii() or stdout.encoding.lower().startswith("utf")):
        stdout.out(text, end="", highlight=False)
    else:
        head, scores = report_lines(report, title, lambda name: f"[bold]{name}[/bold]")
        stdout.print(head)
        stdout.print(scores)
        table = Table(show_header=True, header_style="bold")
        table.add_column(REPORT_HEADER[0])
        for column in REPORT_HEADER[1:]:
            table.add_column(column, justify="right")
        for row in report_rows(report):
            table.add_row(*row)
        stdout.print(table)
    if report.failed:
        stdout.print(report.failed_line(), highlight=False)
    if report.log_dir:
        stdout.print(f"episode logs: {report.log_dir}")


@click.command("run")
@click.option("--split", type=click.Choice(SPLITS), required=True, help="Which split to score.")
@model_options
@click.option("--runs", type=click.IntRange(1, 50), help="Runs per task (default: run.runs).")
@click.option(
    "--seed",
    type=int,
    metavar="S",
    help="Evaluation seed (default: run.seed). The episode of task T in run k uses a seed "
    "derived from (S, T, k): the same seed gives identical episodes, another seed can differ "
    "(the model's sampling; sim's lapses and computed-value failures). With --runs K, run k "
    "is the same episode whatever K, so --runs 1 is run 0 of --runs 3; run k is not the "
    "episode of --seed S+k.",
)
@click.option(
    "--concurrency",
    type=click.IntRange(1, 64),
    help="Episodes in parallel (default: run.concurrency).",
)
@click.option(
    "--executor",
    type=Registered("executors", also=("auto",)),
    default="auto",
    show_default=True,
    help="How episodes run in parallel; auto: serial at concurrency 1 and for sim (its "
    "episodes take about a millisecond), threads for HTTP models, a process pool for other "
    "local models; `evolve plugins` lists the executors.",
)
@click.option("--persona", help="Whose preferences to score (default: persona in evolve.yaml).")
@click.option(
    "--inject",
    type=click.Choice(INJECT_MODES),
    help="Memory injection mode (default: memory.inject).",
)
@json_option
@workspace_option
def run_cmd(
    split: str,
    models: ModelChoice,
    runs: int | None,
    seed: int | None,
    concurrency: int | None,
    executor: str,
    persona: str | None,
    inject: Any,
    as_json: bool,
    workspace: Path | None,
) -> None:
    """Score a split: success rate, violation rate per rule, tokens and time.

    Writes episode logs under generations/runs/ (ignored by git) and never changes
    memory/ or prompts/.
    """
    ws = models.apply(open_workspace(workspace))
    dirty = ws.store.dirty_paths(["memory", "prompts"])
    if dirty:
        shown = ", ".join(dirty[:5]) + (" ..." if len(dirty) > 5 else "")
        busy = writer_busy(ws)
        click.echo(
            f"warning: {busy} is writing this workspace now ({shown} mid-update); this run "
            "scores files that may match no commit: run it again when that command ends, and "
            "do not commit these files."
            if busy
            else f"warning: memory/ or prompts/ has uncommitted changes ({shown}); this run "
            "scores the working tree, not HEAD. Commit them to make the result reproducible.",
            err=True,
        )
    _say_unseen(ws, persona, inject)
    with progress_bar(f"{split}", enabled=True) as progress:
        report = run_split(
            ws,
            split,  # type: ignore[arg-type]
            runs=runs,
            concurrency=concurrency,
            executor=executor,
            persona=persona,
            inject=inject,
            progress=progress,
            seed=seed,
        )
    if as_json:
        emit_json({**report.to_json(), "uncommitted": dirty})
    else:
        print_report(report)


def _say_unseen(ws: Any, persona: str | None, inject: Any) -> None:
    """A note on stderr when memory holds active units the agent is not shown (their recipe
    is not rendered): a run that scores 0 after training another recipe says why."""
    if (inject or ws.config.memory.inject) != "recipe":
        return
    from evolve._format._render import unseen
    from evolve._format._views import unseen_note
    from evolve.memory import load_units, scope_for

    rendered = ws.config.rendered_recipes()
    counts = unseen(load_units(ws.root), scope_for(persona or ws.config.persona), rendered)
    note = unseen_note(counts, rendered)
    if note:
        click.echo(note, err=True)
