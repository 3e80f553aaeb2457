"""`evolve search`: one cycle of the module-level harness search (docs/search.md)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click
from rich.markup import escape

from evolve.cli._common import (
    ModelChoice,
    emit_json,
    json_option,
    model_options,
    open_workspace,
    stderr,
    stdout,
    workspace_option,
)


def _gain(g: list[float] | None) -> str:
    return "-" if g is None else f"{g[0]:+.3f} [{g[1]:+.3f}, {g[2]:+.3f}]"


def print_search(data: dict[str, Any]) -> None:
    """The cycle's table: each candidate's gain with its interval, the combinations with
    their predicted and measured gain, the champion's path."""
    if data.get("dry_run"):
        stdout.print("dry run: the workspace was not changed")
    rows = [t for t in data.get("tried", []) if t.get("gain") is not None]
    refused = [t for t in data.get("tried", []) if t.get("gain") is None]
    width = max([len(str(t.get("name", ""))) for t in rows] + [9])
    stdout.print(
        f"{'gen':>3}  {'candidate':<{width}}  {'predicted':>9}  {'dev gain [95%]':<26}  verdict",
        highlight=False,
    )
    for t in rows:
        predicted = t.get("predicted")
        shown = "-" if predicted is None else f"{predicted:+.3f}"
        stdout.print(
            f"{t.get('generation', ''):>3}  {escape(str(t.get('name', ''))):<{width}}  "
            f"{shown:>9}  {_gain(t.get('gain')):<26}  {escape(str(t.get('verdict', '')))}",
            highlight=False,
            soft_wrap=True,
        )
    for t in refused:
        stdout.print(f"not scored: {escape(str(t.get('verdict', '')))}", highlight=False)
    for move in data.get("path", []):
        stdout.print(
            f"champion after generation {move['generation']}: {escape(move['candidate'])}, "
            f"dev {_gain(move['gain'])}, holdout (reported) {_gain(move.get('holdout_gain'))}"
            + (f", commit {move['commit'][:10]}" if move.get("commit") else "")
        )
    if not data.get("path"):
        stdout.print("the champion is unchanged")
    after = data.get("champion_after", {})
    stdout.print("harness: " + ", ".join(f"{m}: {v}" for m, v in after.items()))
    stdout.print(
        f"cycle {data['cycle']}: {data['generations']} generation(s), {data['episodes']} of "
        f"{data['budget']} episodes, {data['wall_s']:.1f} s; stopped: {escape(data['stopped'])}"
    )


@click.command("search")
@click.option(
    "--budget",
    type=click.IntRange(1),
    default=2000,
    show_default=True,
    metavar="EPISODES",
    help="Episodes the cycle may play in all (each dev scoring plays dev tasks x runs).",
)
@click.option(
    "--patience",
    type=click.IntRange(1, 100),
    default=1,
    show_default=True,
    metavar="K",
    help="Stop after K consecutive generations without a confirmed gain.",
)
@click.option("--cycle", help="The cycle's name (default: the next free c1, c2, ...).")
@click.option(
    "--select",
    "strategy",
    type=click.Choice(["topics", "relevance"]),
    default="topics",
    show_default=True,
    help="Pick cards round-robin across each module's topics, or ranked by relevance to the "
    "capability brief.",
)
@click.option(
    "--mutate",
    "mode",
    type=click.Choice(["modules", "whole"]),
    default="modules",
    show_default=True,
    help="Single-module candidates then crossover, or whole-harness candidates (every module "
    "changed at once; the ablation).",
)
@click.option(
    "--per-module",
    type=click.IntRange(1, 20),
    default=4,
    show_default=True,
    help="Cards tried per module and generation.",
)
@click.option("--runs", type=click.IntRange(1, 20), help="Runs per dev task (default: run.runs).")
@click.option("--seed", type=int, help="The evaluation seed (default: run.seed).")
@click.option(
    "--dry-run",
    is_flag=True,
    help="Run the cycle in a temporary clone: print what it found; change nothing.",
)
@model_options
@json_option
@workspace_option
def search_cmd(
    budget: int,
    patience: int,
    cycle: str | None,
    strategy: str,
    mode: str,
    per_module: int,
    runs: int | None,
    seed: int | None,
    dry_run: bool,
    as_json: bool,
    workspace: Path | None,
    models: ModelChoice,
) -> None:
    """Search the harness module by module: research cards become single-module candidates
    (each a commit on refs/evolve/candidates/CYCLE/NAME, checked by a health probe), scored
    on dev against the champion, paired over tasks x runs; combinations of the winners are
    ranked by their additive predicted gain and scored; the best replaces the champion only
    when its paired-bootstrap lower bound beats gate.min_gain (one commit of
    prompts/harness.yaml that `evolve revert` takes back). Holdout is reported, never
    deciding. Progress goes to stderr."""
    from evolve.search import run_search

    ws = models.apply(open_workspace(workspace))
    result = run_search(
        ws,
        budget=budget,
        patience=patience,
        cycle=cycle,
        strategy=strategy,  # type: ignore[arg-type]
        mode=mode,  # type: ignore[arg-type]
        runs=runs,
        seed=seed,
        per_module=per_module,
        dry_run=dry_run,
        progress=None if as_json else (lambda m: stderr.print(escape(m), style="dim")),
    )
    data = result.as_json()
    if as_json:
        emit_json(data)
        return
    print_search(data)
