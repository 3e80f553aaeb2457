"""`evolve skills`: every skill with its scoreboard (injections, pass rates, lift, interval)."""

from __future__ import annotations

from pathlib import Path

import click

from evolve.cli._common import emit_json, json_option, open_workspace, workspace_option


def _fmt(x: float | None, pct: bool = False) -> str:
    if x is None:
        return "-"
    return f"{x:.0%}" if pct else f"{x:+.2f}"


@click.command("skills")
@workspace_option
@json_option
def skills_cmd(workspace: Path | None, as_json: bool) -> None:
    """List each skill: shelf or topic, status, trigger, injections, pass rates, lift.

    A pass is task success (the task done; the user's preference checks aside), as the
    scoreboard counts it. The pass rates are over training episodes where the skill's trigger matched: with it
    injected and nothing held out, and with it alone held out by the seeded one-skill
    hold-out (skills.holdout_share; 0.5 while its evidence is pending). "within tasks" compares
    the two arms inside each task (every eligible episode, memory/skills/_strata.yaml) and
    combines the tasks: Mantel-Haenszel lift with the stratified score interval at
    skills.retire_confidence; a skill whose interval lies below 0 is retired. The pooled
    figures (episodes of tasks that failed before, Newcombe's interval) are shown beside it.
    """
    from evolve.memory import load_units
    from evolve.skills._failed import NO_TASK_FAILED, load_failed
    from evolve.skills._scoreboard import board, trigger_shown
    from evolve.skills._select import settings_of
    from evolve.skills._strata import load_strata

    ws = open_workspace(workspace)
    confidence = settings_of(ws.config).retire_confidence
    rows = board(load_units(ws.root), confidence, load_strata(ws.root))
    failed = sorted(load_failed(ws.root))
    if as_json:
        emit_json({"skills": rows, "confidence": confidence, "failed_tasks": failed})
        return
    if not rows:
        click.echo("No skills yet (memory/skills/ is empty).")
        return
    for r in rows:
        iv = r["interval"]
        shown = f"[{iv[0]:+.2f}, {iv[1]:+.2f}]" if iv else "-"
        st = r["stratified"]
        siv = st["interval"]
        within = f"[{siv[0]:+.2f}, {siv[1]:+.2f}]" if siv else "-"
        click.echo(
            f"{r['id']}  {r['where']}  {r['status']}  within tasks: lift {_fmt(st['lift'])} "
            f"{within} ({st['tasks']} tasks, {st['injected']} injected, {st['held_out']} held "
            f"out)"
        )
        click.echo(
            f"    pooled: injected {r['injections']} ({_fmt(r['pass_rate_injected'], True)} "
            f"pass), held out {r['held_out']} ({_fmt(r['pass_rate_held_out'], True)} pass), "
            f"lift {_fmt(r['lift'])} {shown}"
        )
        click.echo(f"    when: {trigger_shown(r)}")
    shown_tasks = ", ".join(failed) if failed else "none"
    click.echo(f"Tasks failed in training so far ({len(failed)}): {shown_tasks}")
    if not failed:
        click.echo(NO_TASK_FAILED)
