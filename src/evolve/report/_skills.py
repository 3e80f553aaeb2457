"""The report's skills table: each skill's shelf, status, injections, pass rates and lift."""

from __future__ import annotations

from html import escape

from evolve.workspace import Workspace


def _pct(x: float | None) -> str:
    return "" if x is None else f"{x:.0%}"


LESSON_CHARS = 240  # of a skill's text in the table (the whole is in `evolve show ID`)


def _lesson(text: str) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= LESSON_CHARS else flat[: LESSON_CHARS - 1].rstrip() + "…"


def skills_table(ws: Workspace) -> list[str]:
    """HTML lines: a heading and the scoreboard table; nothing when the workspace has no skills
    (a report of a workspace that does not use skills stays as it was)."""
    from evolve.memory import load_units
    from evolve.skills._failed import NO_TASK_FAILED, load_failed
    from evolve.skills._scoreboard import board, trigger_shown
    from evolve.skills._select import settings_of
    from evolve.skills._strata import load_strata

    confidence = settings_of(ws.config).retire_confidence
    units = load_units(ws.root)
    lessons = {u.id: u.text for u in units}
    rows = board(units, confidence, load_strata(ws.root))
    if not rows:
        return []
    html = ['<h2 id="skills">Skills and their scoreboard</h2>']
    html.append(
        f"<p>Within tasks: the skill injected against held out inside each training task, "
        f"combined over the tasks with both arms (Mantel-Haenszel lift, stratified score "
        f"{confidence:.0%} interval); a skill whose interval lies below 0 is retired. Pooled: "
        f"pass rates of episodes of tasks that failed before, Newcombe's interval.</p>"
    )
    html.append(
        "<table><tr><th>skill</th><th>lesson</th><th>shelf</th><th>status</th><th>trigger</th>"
        "<th>tasks (both arms)</th><th>lift within tasks</th><th>interval within tasks</th>"
        "<th>injected</th><th>pass (injected)</th><th>held out</th><th>pass (held out)</th>"
        "<th>pooled lift</th><th>pooled interval</th></tr>"
    )
    for r in rows:
        iv = r["interval"]
        shown = f"[{iv[0]:+.2f}, {iv[1]:+.2f}]" if iv else ""
        lift = "" if r["lift"] is None else f"{r['lift']:+.2f}"
        st = r["stratified"]
        siv = st["interval"]
        within = f"[{siv[0]:+.2f}, {siv[1]:+.2f}]" if siv else ""
        slift = "" if st["lift"] is None else f"{st['lift']:+.2f}"
        html.append(
            f"<tr><td><code>{escape(r['id'])}</code></td>"
            f"<td>{escape(_lesson(lessons.get(str(r['id']), '')))}</td><td>{escape(r['where'])}</td>"
            f"<td>{escape(str(r['status']))}</td><td>{escape(trigger_shown(r))}</td>"
            f"<td>{st['tasks']}</td><td>{slift}</td><td>{within}</td>"
            f"<td>{r['injections']}</td><td>{_pct(r['pass_rate_injected'])}</td>"
            f"<td>{r['held_out']}</td><td>{_pct(r['pass_rate_held_out'])}</td>"
            f"<td>{lift}</td><td>{shown}</td></tr>"
        )
    html.append("</table>")
    failed = sorted(load_failed(ws.root))
    html.append(
        f"<p>Tasks failed in training so far ({len(failed)}; the pooled figures count only "
        f"these): {escape(', '.join(failed)) if failed else 'none'}.</p>"
    )
    if not failed:
        html.append(f"<p>{escape(NO_TASK_FAILED)}</p>")
    return html
