"""`evolve evolve`: gated generations."""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import IO, Any

import click
from rich.markup import escape
from rich.table import Table

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
from evolve.cli._plugins import Registered
from evolve.generations import EvolveResult, GenerationRecord, evolve


def _score(r: GenerationRecord, which: str) -> str:
    base, cand = getattr(r, f"{which}_base"), getattr(r, which)
    if base is None or cand is None:
        return "-"
    return f"{base.score:.3f} -> {cand.score:.3f}"


def print_result(result: EvolveResult) -> None:
    title = "dry run: the workspace was not changed" if result.dry_run else None
    table = Table(show_header=True, header_style="bold", title=title)
    for col in ("gen", "dev", "holdout (reported)", "verdict"):
        table.add_column(col, no_wrap=True)
    for r in result.records:
        verdict = (
            "[green]accepted[/green]"
            if r.verdict == "accepted"
            else "[red]rejected (error)[/red]"
            if r.error
            else "[red]rejected[/red]"
        )
        table.add_row(str(r.number), _score(r, "dev"), _score(r, "holdout"), verdict)
    stdout.print(table)
    from evolve.llm import RoleUsage, usage_line

    for r in result.records:
        stdout.print(f"generation {r.number}: {escape(r.reason)}")
        if r.usage:
            usage = {
                role: RoleUsage(u.requests, u.input_tokens, u.output_tokens, u.cached, u.cost)
                for role, u in r.usage.items()
            }
            stdout.print(f"generation {r.number} {usage_line(usage)}", highlight=False)
        if r.refused:
            stdout.print(f"generation {r.number} refused proposals:")
            for line in r.refused:
                stdout.print(f"  {escape(line)}")
    if result.dry_run:
        for number, diff in sorted(result.diffs.items()):
            stdout.print(f"\n[bold]proposed diff of generation {number}[/bold]")
            stdout.print(escape(diff) if diff else "(no change)", highlight=False)
    else:
        stdout.print("records: generations/gen-NNNN.json (also under refs/evolve/records)")


class _Interrupted(click.ClickException):
    """Ctrl-C: exit status 130, and one line saying what became of the generation."""

    exit_code = 130

    def show(self, file: IO[Any] | None = None) -> None:
        click.echo(f"interrupted: {self.message}", err=True)


@click.command("evolve")
@click.option(
    "--generations",
    type=click.IntRange(1, 50),
    help="How many generations (default: gate.generations, at most gate.max_generations).",
)
@click.option(
    "--dry-run",
    is_flag=True,
    help="Run in a temporary clone; print the diff and the verdict; change nothing.",
)
@model_options
@click.option(
    "--timeout",
    type=click.FloatRange(min=0, min_open=True),
    help="Seconds each generation may take; one past it is reset to its base and recorded "
    "as rejected (error).",
)
@click.option(
    "--concurrency",
    type=click.IntRange(1, 64),
    help="Scoring episodes in parallel (default: run.concurrency).",
)
@click.option(
    "--executor",
    type=Registered("executors", also=("auto",)),
    default="auto",
    show_default=True,
    help="How scoring episodes run in parallel, as for `evolve run`.",
)
@click.option(
    "--trust-git-config",
    is_flag=True,
    help="Start even though the workspace's .git/ holds replace refs, grafts, attributes, "
    "filters or hooks that could make git show other files than those committed (refused "
    "otherwise); the gate judges exactly the committed files either way.",
)
@json_option
@workspace_option
def evolve_cmd(
    generations: int | None,
    dry_run: bool,
    timeout: float | None,
    concurrency: int | None,
    executor: str,
    trust_git_config: bool,
    as_json: bool,
    workspace: Path | None,
    models: ModelChoice,
) -> None:
    """Run gated generations: train a batch, let the reflector propose prompt edits, and keep
    the generation only if the workspace tests pass and the dev score improves by a paired
    bootstrap; otherwise reset to its base. Holdout is scored and reported, never used to
    accept. A generation that fails, is interrupted (Ctrl-C, SIGTERM) or runs past --timeout
    is reset to its base and recorded as `rejected (error: ...)`; one whose process was killed
    is reset by the next evolve command."""
    from evolve._format._cache import frozen

    # A dry run changes nothing, not even a cache file in .git, from its first read on.
    with frozen() if dry_run else contextlib.nullcontext():
        ws = models.apply(open_workspace(workspace))
        from evolve.history import require_records

        require_records(ws.store, ws.config.persona, "evolving")  # a generation trains
        try:
            result = evolve(
                ws,
                generations=generations,
                dry_run=dry_run,
                timeout=timeout,
                executor=executor,
                concurrency=concurrency,
                trust_git_config=trust_git_config,
                progress=None if as_json else (lambda m: stderr.print(m, style="dim")),
            )
        except KeyboardInterrupt as exc:
            raise _Interrupted(str(exc) or "nothing half-written was kept.") from None
    if as_json:
        emit_json(
            {
                "dry_run": result.dry_run,
                "generations": [r.model_dump(mode="json") for r in result.records],
                "diffs": {str(k): v for k, v in result.diffs.items()},
            }
        )
        return
    print_result(result)
