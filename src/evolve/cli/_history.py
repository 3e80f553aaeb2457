"""`evolve log`, `show`, `memory`, `revert`, `review` and `report`."""

from __future__ import annotations

from pathlib import Path

import click
from rich.markup import escape

from evolve.cli._common import emit_json, json_option, open_workspace, stdout, workspace_option
from evolve.errors import EvolveError
from evolve.history import (
    clip,
    commit_kind,
    history,
    memory_as_of,
    memory_in_worktree,
    revert,
    show_unit,
)
from evolve.memory import SCOPE_PATTERN, scope_for
from evolve.report import write_report
from evolve.review import approve, list_pending, reject

LOG_TEXT = 200  # characters of a complaint or refusal line in `evolve log` (cut between words)


@click.command("log")
@click.argument("paths", nargs=-1)
@click.option(
    "-n",
    "--max-count",
    type=click.IntRange(0),
    default=50,
    show_default=True,
    help="How many commits (0: all).",
)
@json_option
@workspace_option
def log_cmd(paths: tuple[str, ...], max_count: int, as_json: bool, workspace: Path | None) -> None:
    """Memory and prompt history, newest first (or of the given PATHS).

    Each entry: commit, time, subject, episode, task, the complaint's first line, the
    operations with unit ids and any refused proposals. Refusals of episodes that committed
    nothing are recorded on the side ref refs/evolve/train and listed too (kind "refusal"),
    above the commit their episode ran on. --json returns the trailers parsed.

    A plain `git clone` does not copy refs/evolve/*; share them with
    `git push origin 'refs/evolve/*:refs/evolve/*'` and
    `git fetch origin 'refs/evolve/*:refs/evolve/*'`.
    """
    ws = open_workspace(workspace)
    entries = history(ws.store, paths, max_count=max_count or None, refusals=True)
    if as_json:
        emit_json([e.to_json() for e in entries])
        return
    if not entries:
        stdout.print("no memory or prompt commits yet; run `evolve train`.")
    for e in entries:
        label = " [red](refusal record)[/red]" if e.kind == "refusal" else ""
        stdout.print(f"[yellow]{e.commit[:10]}[/yellow] {e.time}  {escape(e.subject)}{label}")
        meta = []
        if e.episode is not None:
            meta.append(f"episode {e.episode}")
        if e.task:
            meta.append(f"task {e.task}")
        if meta:
            stdout.print("    " + ", ".join(meta))
        if e.complaint:
            stdout.print(f"    complaint: {escape(clip(e.complaint, LOG_TEXT))}")
        if e.ops:
            stdout.print("    ops: " + " ".join(f"{op}={ident}" for op, ident in e.ops))
        for line in e.refused:
            stdout.print(f"    {escape(clip(line, LOG_TEXT))}")


@click.command("show")
@click.argument("unit_id")
@json_option
@workspace_option
def show_cmd(unit_id: str, as_json: bool, workspace: Path | None) -> None:
    """A memory unit as it is now (or its tombstone) and every commit that touched it."""
    ws = open_workspace(workspace)
    h = show_unit(ws, unit_id)
    if as_json:
        emit_json(h.to_json())
        return
    u = h.unit
    if u is None:
        stdout.print(f"[bold]{h.unit_id}[/bold] ({h.path}) no longer exists (evicted or removed).")
    else:
        stdout.print(
            f"[bold]{u.id}[/bold] {u.recipe}/{u.kind} \\[{u.status}] scope {u.scope}  ({h.path})"
        )
        stdout.print(f"  {escape(u.text)}")
        held = f"held from {u.valid_from or '?'}" + (
            f" to {u.valid_to}" if u.valid_to else " (still holds)"
        )
        stdout.print(
            f"  {held}; created at episode {u.created_episode}, updated at episode {u.updated_episode}"
        )
        if u.status == "tombstoned":
            stdout.print(
                f"  tombstone: {escape(u.reason or '')} (reverted commit {(u.reverted_commit or '-')[:10]})"
            )
        if u.revoked_by:
            stdout.print(f"  revoked by {u.revoked_by} at episode {u.revoked_at}")
    for info, patch in h.commits:
        stdout.print(
            f"\n[yellow]{info.sha[:10]}[/yellow] {info.time} ({commit_kind(info)}) {escape(info.subject)}"
        )
        stdout.print(escape(patch), highlight=False)


@click.command("memory")
@click.option(
    "--as-of",
    "as_of",
    help="A commit, or a date (YYYY-MM-DD or ISO time). Default: the working tree, which is "
    "what `evolve run` and `evolve train` give the agent.",
)
@click.option("--scope", help="user:<persona> or global (default: the workspace's persona).")
@click.option("--persona", help="Shorthand for --scope user:<persona>.")
@json_option
@workspace_option
def memory_cmd(
    as_of: str | None,
    scope: str | None,
    persona: str | None,
    as_json: bool,
    workspace: Path | None,
) -> None:
    """Memory exactly as the agent receives it: now (the working tree, as `evolve run` and
    `evolve train` render it), or at any earlier commit or date with --as-of.

    When the working tree's memory differs from HEAD (uncommitted edits), a note on stderr
    says so, and --json reports `differs_from_head` and the uncommitted files.
    """
    ws = open_workspace(workspace)
    if scope is not None and persona is not None:
        raise EvolveError("give --scope or --persona, not both.")
    chosen = scope or scope_for(persona or ws.config.persona)
    if not SCOPE_PATTERN.match(chosen):
        raise EvolveError(f"scope {chosen!r} is not valid; use user:<persona> or global.")
    if as_of is not None:
        commit, text = memory_as_of(ws.store, as_of, chosen)
        if as_json:
            emit_json({"commit": commit, "scope": chosen, "memory": text, "source": "commit"})
            return
        stdout.print(f"# memory for {chosen} at {commit[:10]}", style="dim")
        stdout.print(escape(text) if text else "(empty)", highlight=False)
        return
    now = memory_in_worktree(ws, chosen)
    inject = ws.config.memory.inject
    if inject != "recipe":
        click.echo(
            f"note: memory.inject is {inject!r} in evolve.yaml, so `evolve run` gives the agent "
            "that instead of this memory; `evolve train` always gives it this memory.",
            err=True,
        )
    if now.differs_from_head:
        shown = ", ".join(now.uncommitted[:5]) + (" ..." if len(now.uncommitted) > 5 else "")
        click.echo(
            f"note: this is the working tree's memory, which differs from HEAD"
            f"{f' (uncommitted: {shown})' if shown else ''}; "
            "`evolve run` and `evolve train` use it; commit it, or see HEAD with --as-of HEAD.",
            err=True,
        )
    if as_json:
        emit_json(
            {
                "commit": now.head,
                "scope": chosen,
                "memory": now.text,
                "source": "working tree",
                "differs_from_head": now.differs_from_head,
                "uncommitted": now.uncommitted,
            }
        )
        return
    at = f" at {now.head[:10]}" if now.head else ""
    changed = ", with uncommitted changes" if now.differs_from_head else ""
    stdout.print(f"# memory for {chosen}{at} (working tree{changed})", style="dim")
    stdout.print(escape(now.text) if now.text else "(empty)", highlight=False)


@click.command("revert")
@click.argument("rev")
@click.option("--reason", help="Why it is reverted (kept in the tombstones and the commit).")
@click.option(
    "--cascade",
    is_flag=True,
    help="Also revert the later commits that changed the text or status of the same units "
    "(newest first), in one commit.",
)
@json_option
@workspace_option
def revert_cmd(
    rev: str, reason: str | None, cascade: bool, as_json: bool, workspace: Path | None
) -> None:
    """Undo a memory or prompt commit as a new commit, and tombstone what it added or changed.

    Updaters that propose a tombstoned text again are refused, and the refusal is logged in
    the episode's commit. Later counter moves (helpful/harmful, alpha/beta) never block a
    revert; the counter moves of the reverted commit itself are taken back (a commit that
    only moved counters reverts that way). Reverting a revert brings its units back and lifts its tombstones. A plain
    `git revert` is recognised: the next evolve command adds the tombstones it did not write.
    """
    ws = open_workspace(workspace)
    result = revert(ws, rev, reason=reason, cascade=cascade)
    if as_json:
        emit_json(
            {
                "reverted": result.reverted,
                "commit": result.commit,
                "commits": result.commits,
                "restored": result.restored,
                "tombstones": [{"id": t.id, "text": t.text} for t in result.tombstones],
                "lifted": result.lifted,
                "counters": [
                    {"id": i, "field": f, "from": a, "to": b} for i, f, a, b in result.counters
                ],
                "counters_skipped": result.counters_skipped,
            }
        )
        return
    stdout.print(f"reverted {result.reverted[:10]} in {result.commit[:10]}")
    for other in result.commits[:-1]:
        stdout.print(f"  also reverted {other[:10]} (it changed the same units later)")
    for t in result.tombstones:
        stdout.print(f"  tombstoned {t.id}: {escape(t.text)}")
    for ident in result.lifted:
        stdout.print(f"  lifted tombstone {ident}")
    for ident, name, was, now in result.counters:
        stdout.print(f"  moved {ident} {name} back: {was:g} -> {now:g}")
    for ident in result.counters_skipped:
        stdout.print(f"  left the counters of {ident} (it no longer exists)")


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


@click.command("report")
@click.option(
    "--out",
    "out_dir",
    type=click.Path(file_okay=False, path_type=Path),
    help="Folder for report.html (default: generations/report/).",
)
@workspace_option
def report_cmd(out_dir: Path | None, workspace: Path | None) -> None:
    """Write a self-contained HTML report: violations per rule over training, dev and holdout
    per generation, memory size over time, and recent memory commits with their diffs."""
    path = write_report(open_workspace(workspace), out_dir)
    stdout.print(f"wrote {path}")
