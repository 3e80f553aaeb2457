"""The report's harness-search panel: per cycle, each single-module candidate's standalone
gain with its interval (grouped by module), the combinations tried with their predicted and
measured gain, and the champion's path (`evolve search`, refs/evolve/search)."""

from __future__ import annotations

from html import escape
from typing import Any

from evolve.workspace import Workspace


def _gain(g: Any) -> str:
    try:
        return f"{float(g[0]):+.3f} [{float(g[1]):+.3f}, {float(g[2]):+.3f}]"
    except (TypeError, ValueError, IndexError, KeyError):
        return ""


def _num(x: Any) -> str:
    return f"{x:+.3f}" if isinstance(x, int | float) and not isinstance(x, bool) else ""


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _dict(value: Any) -> dict[str, str]:
    return {str(k): str(v) for k, v in value.items()} if isinstance(value, dict) else {}


def search_panel(ws: Workspace) -> list[dict[str, Any]]:
    """The panel's data (what `evolve report --json` prints): one entry per cycle, oldest
    first, read from the recorded cycles (hostile input: anything malformed is left out)."""
    from evolve.search import load_searches

    out = []
    for record in load_searches(ws):
        tried = [t for t in _list(record.get("tried")) if isinstance(t, dict)]
        singles: dict[str, list[dict[str, Any]]] = {}
        for t in tried:
            if t.get("kind") == "single":
                mods = t.get("modules")
                module = str(mods[0]) if isinstance(mods, list) and mods else "?"
                singles.setdefault(module, []).append(
                    {k: t.get(k) for k in ("name", "cards", "gain", "verdict", "ref")}
                )
        out.append(
            {
                "cycle": str(record.get("cycle", "")),
                "singles": singles,
                "combinations": [
                    {k: t.get(k) for k in ("name", "predicted", "gain", "verdict", "ref")}
                    for t in tried
                    if t.get("kind") in ("combination", "whole")
                ],
                "path": [p for p in _list(record.get("path")) if isinstance(p, dict)],
                "champion_before": _dict(record.get("champion_before")),
                "champion_after": _dict(record.get("champion_after")),
                "episodes": record.get("episodes"),
                "budget": record.get("budget"),
                "stopped": str(record.get("stopped", "")),
            }
        )
    return out


def search_sections(ws: Workspace) -> list[str]:
    """HTML lines: the panel; nothing when no search cycle was recorded (a report of a
    workspace never searched stays as it was)."""
    cycles = search_panel(ws)
    if not cycles:
        return []
    html = [
        '<h2 id="search">Harness search</h2>',
        "<p>Each cycle: single-module candidates scored on dev against the champion (paired "
        "over tasks x runs, 95% bootstrap interval), the combinations of the winners with their "
        "predicted (the sum of their parts) and measured gain, and the champion's moves (a "
        "move needs the interval's lower bound above gate.min_gain; holdout reported only).</p>",
    ]
    for c in cycles:
        html.append(
            f"<h3>cycle {escape(c['cycle'])}: {escape(str(c['episodes']))} of "
            f"{escape(str(c['budget']))} episodes; stopped: {escape(c['stopped'])}</h3>"
        )
        rows = []
        for module, items in sorted(c["singles"].items()):
            for t in items:
                rows.append(
                    f"<tr><td>{escape(module)}</td><td>{escape(str(t.get('name')))}</td>"
                    f"<td>{escape(', '.join(map(str, t.get('cards') or [])))}</td>"
                    f"<td>{_gain(t.get('gain'))}</td><td>{escape(str(t.get('verdict')))}</td></tr>"
                )
        if rows:
            html.append(
                "<table><tr><th>module</th><th>candidate</th><th>card</th>"
                "<th>dev gain [95%]</th><th>verdict</th></tr>" + "".join(rows) + "</table>"
            )
        if c["combinations"]:
            html.append(
                "<p>Combinations:</p><table><tr><th>candidate</th><th>predicted</th>"
                "<th>measured dev gain [95%]</th><th>verdict</th></tr>"
                + "".join(
                    f"<tr><td>{escape(str(t.get('name')))}</td><td>{_num(t.get('predicted'))}</td>"
                    f"<td>{_gain(t.get('gain'))}</td><td>{escape(str(t.get('verdict')))}</td></tr>"
                    for t in c["combinations"]
                )
                + "</table>"
            )
        path = [
            f"<li>generation {escape(str(p.get('generation')))}: "
            f"<b>{escape(str(p.get('candidate')))}</b>, dev {_gain(p.get('gain'))}, holdout "
            f"(reported) {_gain(p.get('holdout_gain')) or 'not scored'}"
            + (f", commit <code>{escape(str(p['commit'])[:10])}</code>" if p.get("commit") else "")
            + "</li>"
            for p in c["path"]
        ]
        before = ", ".join(
            f"{escape(str(k))}: {escape(str(v))}" for k, v in dict(c["champion_before"]).items()
        )
        html.append(
            f"<p>Champion's path from {before}:</p><ul>"
            + ("".join(path) or "<li>unchanged</li>")
            + "</ul>"
        )
    return html
