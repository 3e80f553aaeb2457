"""`evolve revert`, `review` and `report` (`log`, `show` and `memory` live in `_reading`)."""

from __future__ import annotations

from pathlib import Path

import click
from rich.markup import escape

from evolve._format._views import LOG_TEXT
from evolve.cli._common import emit_json, json_option, open_workspace, stdout, workspace_option
from evolve.cli._reading import log_cmd, memory_cmd, show_cmd
from evolve.history import RevertResult, revert
from evolve.report import write_report
from evolve.review import approve, list_pending, reject

__all__ = [
    "LOG_TEXT",
    "log_cmd",
    "memory_cmd",
    "report_cmd",
    "review_group",
    "revert_cmd",
    "show_cmd",
]


@click.command("revert")
@click.argument("rev")
@click.option("--reason", help="Why it is reverted (kept in the tombstones and the commit).")
@click.option(
    "--cascade",
    is_flag=True,
    help="Also revert the later commits that changed the text or status of the same units "
    "(for the rewrite document: the later changes to the lines REV touched), newest first, "
    "in one commit.",
)
@click.option(
    "--unit",
    "unit",
    metavar="ID",
    help="Take back only this unit's change in REV (and the units it replaced or that "
    "replaced it there); the rest of REV stands. REV may also be a unit id: its newest change.",
)
@click.option(
    "--dry-run",
    is_flag=True,
    help="Say exactly what the revert would do (commits, files, tombstones, counters) and "
    "write nothing.",
)
@json_option
@workspace_option
def revert_cmd(
    rev: str,
    reason: str | None,
    cascade: bool,
    unit: str | None,
    dry_run: bool,
    as_json: bool,
    workspace: Path | None,
) -> None:
    """Undo a memory or prompt commit as a new commit, and tombstone what it added or changed.

    REV is a commit, or a unit id (`evolve revert ace-1a2b3c4d5e`): then only that unit's
    newest change is taken back, as with `REV --unit ID`. Updaters that propose a tombstoned
    text again are refused, and the refusal is logged in the episode's commit. Later counter
    moves (helpful/harmful, alpha/beta) never block a revert; the counter moves of the
    reverted commit itself are taken back (a commit that only moved counters reverts that
    way). Reverting a revert brings its units back and lifts its tombstones. A plain `git
    revert` is recognised: the next evolve command adds the tombstones it did not write, and
    `evolve revert` of either commit lifts them.
    """
    ws = open_workspace(workspace)
    result = revert(ws, rev, reason=reason, cascade=cascade, unit=unit, dry_run=dry_run)
    if as_json:
        emit_json(
            {
                "reverted": result.reverted,
                "commit": result.commit or None,
                "dry_run": result.dry_run,
                "commits": result.commits,
                "units": result.units,
                "answers": result.answers,
                "unanswered_git_reverts": result.unanswered,
                "restored": result.restored,
                "removed": result.removed,
                "tombstones": [{"id": t.id, "text": t.text} for t in result.tombstones],
                "lifted": result.lifted,
                "counters": [
                    {"id": i, "field": f, "from": a, "to": b} for i, f, a, b in result.counters
                ],
                "counters_skipped": result.counters_skipped,
                "restarted": result.restarted,
            }
        )
        return
    for line in revert_lines(result):
        stdout.print(escape(line))


def revert_lines(result: RevertResult) -> list[str]:
    """What `evolve revert` prints (`--dry-run`: what it would do, in the same words)."""
    would = result.dry_run
    what = result.reverted[:10]
    if result.units:
        what = f"{' '.join(result.units)} from {what}"
    lines = [
        f"would revert {what} (dry run: nothing written)"
        if would
        else f"reverted {what} in {result.commit[:10]}"
    ]
    for sha in result.unanswered:
        lines.append(
            f"  first, a commit of its own would add the tombstones plain `git revert` "
            f"{sha[:10]} did not write"
        )
    also = "would also revert" if would else "also reverted"
    for other in result.commits:
        if other in result.answers:
            lines.append(f"  {also} {other[:10]} (evolve's answer to that git revert)")
        elif other != result.reverted:
            lines.append(f"  {also} {other[:10]} (it changed the same units later)")
    if would:
        lines += [f"  would restore {p}" for p in result.restored]
        lines += [f"  would remove {p}" for p in result.removed]
    verb = "would " if would else ""
    for t in result.tombstones:
        lines.append(f"  {verb}{'tombstone' if would else 'tombstoned'} {t.id}: {t.text}")
    for ident in result.lifted:
        lines.append(f"  {verb}{'lift' if would else 'lifted'} tombstone {ident}")
    for ident, name, was, now in result.counters:
        lines.append(
            f"  {verb}{'move' if would else 'moved'} {ident} {name} back: {was:g} -> {now:g}"
        )
    for ident in result.counters_skipped:
        lines.append(
            f"  {verb}{'leave' if would else 'left'} the counters of {ident} (it no longer exists)"
        )
    for ident in result.restarted:
        lines.append(
            f"  {verb}{'restart' if would else 'restarted'} the scoreboard record of {ident} "
            "(retired, brought back)"
        )
    return lines


@click.group("review")
def review_group() -> None:
    """Review learned units: `evolve train --review` leaves new units pending."""


@review_group.command("list")
@json_option
@workspace_option
def review_list(as_json: bool, workspace: Path | None) -> None:
    """Pending units, with the complaint that produced each."""
    ws = open_workspace(workspace)
    items = list_pending(ws)
    if as_json:
        emit_json(
            [
                {
                    "id": i.unit.id,
                    "scope": i.unit.scope,
                    "text": i.unit.text,
                    "supersedes": i.unit.supersedes,
                    "complaint": i.complaint,
                    "commit": i.commit,
                    "evicts": [{"id": e, "rule": why} for e, why in i.evicts],
                }
                for i in items
            ]  # fmt: skip
        )
        return
    if not items:
        stdout.print("nothing is pending review.")
    for i in items:
        stdout.print(f"[bold]{i.unit.id}[/bold] ({i.unit.scope}) {escape(i.unit.text)}")
        if i.unit.supersedes:
            stdout.print(f"    would replace {i.unit.supersedes}")
        if i.complaint:
            stdout.print(f"    from the complaint: {escape(i.complaint)}")
        for evicted, why in i.evicts:
            stdout.print(f"    approving it evicts {evicted} ({escape(why)})")


@review_group.command("approve")
@click.argument("unit_id")
@workspace_option
def review_approve(unit_id: str, workspace: Path | None) -> None:
    """Make a pending unit active (one commit)."""
    sha = approve(open_workspace(workspace), unit_id)
    stdout.print(f"approved {unit_id} in {sha[:10]}")


@review_group.command("reject")
@click.argument("unit_id")
@click.option("--reason", help="Why it is rejected (kept in the tombstone and the commit).")
@workspace_option
def review_reject(unit_id: str, reason: str | None, workspace: Path | None) -> None:
    """Tombstone a pending unit so it is refused if proposed again (one commit)."""
    sha = reject(open_workspace(workspace), unit_id, reason=reason)
    stdout.print(f"rejected {unit_id} in {sha[:10]}")


@review_group.command("variants")
@json_option
@workspace_option
def review_variants(as_json: bool, workspace: Path | None) -> None:
    """Model-written harness variant files that wait for a person's approval before they
    first run (docs/harness.md)."""
    from evolve.harness._config import variant_path
    from evolve.review._variants import pending_variants

    waiting = pending_variants(open_workspace(workspace))
    if as_json:
        emit_json([{"module": m, "name": n, "path": variant_path(m, n)} for m, n in waiting])
        return
    if not waiting:
        stdout.print("no variant file is waiting for review.")
    for module, name in waiting:
        stdout.print(f"[bold]{module}/{name}[/bold] {variant_path(module, name)}")


@review_group.command("approve-variant")
@click.argument("module")
@click.argument("name")
@workspace_option
def review_approve_variant(module: str, name: str, workspace: Path | None) -> None:
    """Approve the variant file harness/MODULE/NAME.py as it stands (one commit); it still
    runs only in the sandbox, and a later change to it waits again."""
    from evolve.review._variants import approve_variant

    sha = approve_variant(open_workspace(workspace), module, name)
    if sha is None:
        stdout.print(f"{module}/{name} is already approved as it stands.")
    else:
        stdout.print(f"approved {module}/{name} in {sha[:10]}")


@click.command("report")
@click.option(
    "--out",
    "out_dir",
    type=click.Path(file_okay=False, path_type=Path),
    help="Folder for report.html (default: generations/report/).",
)
@json_option
@workspace_option
def report_cmd(out_dir: Path | None, as_json: bool, workspace: Path | None) -> None:
    """Write a self-contained HTML report: violations per rule over training, dev and holdout
    per generation, memory size over time, recent memory commits with their diffs, and the
    harness search's cycles. --json: the report's path and the search panel's data."""
    ws = open_workspace(workspace)
    path = write_report(ws, out_dir)
    if as_json:
        from evolve.report import search_panel

        emit_json({"report": str(path), "search": search_panel(ws)})
        return
    stdout.print(f"wrote {path}")
