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

    The pass rates are over training episodes where the skill's trigger matched: with it
    injected and nothing held out, and with it alone held out by the seeded one-skill
    hold-out (skills.holdout_share; 0.5 while its evidence is pending). The interval is
    Newcombe's, at skills.retire_confidence; a skill whose interval lies below 0 is retired.
    """
    from evolve.memory import load_units
    from evolve.skills._scoreboard import board
    from evolve.skills._select import settings_of

    ws = open_workspace(workspace)
    confidence = settings_of(ws.config).retire_confidence
    rows = board(load_units(ws.root), confidence)
    if as_json:
        emit_json({"skills": rows, "confidence": confidence})
        return
    if not rows:
        click.echo("No skills yet (memory/skills/ is empty).")
        return
    for r in rows:
        iv = r["interval"]
        shown = f"[{iv[0]:+.2f}, {iv[1]:+.2f}]" if iv else "-"
        click.echo(
            f"{r['id']}  {r['where']}  {r['status']}  injected {r['injections']} "
            f"({_fmt(r['pass_rate_injected'], True)} pass), held out {r['held_out']} "
            f"({_fmt(r['pass_rate_held_out'], True)} pass), lift {_fmt(r['lift'])} {shown}"
        )
        click.echo(f"    when: {r['trigger']}")
