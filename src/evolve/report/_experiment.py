"""The experiments part of `evolve report`: one section per `evolve compare` experiment.

Read from `refs/evolve/records` (`experiments/<name>/results.json`), so it shows what was
recorded whatever the working tree holds. Each section: for the headline split and each
feedback tier, a bar chart of the gap closed per arm with its interval, the table of rates,
and a heat map of the violation rate per rule and arm. Inline SVG, no scripts.
"""

from __future__ import annotations

from html import escape
from typing import Any

from evolve.workspace import Workspace

BAR = "#1f77b4"


def _bar_chart(title: str, bars: list[tuple[str, float | None, float | None, float | None]]) -> str:
    """Horizontal bars of values in [0, 1] (shown as %), with interval whiskers; an undefined
    value is written out instead of drawn."""
    if not bars:
        return f'<p class="empty">{escape(title)}: no data.</p>'
    left, _right, top, row = 110, 60, 28, 22
    width, plot = 640, 640 - 110 - 60
    height = top + row * len(bars) + 24
    lo_v = min([0.0, *[v for _, v, lo, _h in bars for v in (v, lo) if v is not None]])
    hi_v = max([1.0, *[v for _, v, _l, hi in bars for v in (v, hi) if v is not None]])

    def sx(x: float) -> float:
        return left + (x - lo_v) / (hi_v - lo_v) * plot

    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" role="img" '
        f'aria-label="{escape(title)}">',
        f'<text x="{left}" y="16" font-size="13" font-weight="bold">{escape(title)}</text>',
    ]
    for tick in (lo_v, 0.0, 0.5, 1.0, hi_v):
        x = sx(tick)
        parts.append(
            f'<line x1="{x:.1f}" y1="{top - 4}" x2="{x:.1f}" y2="{height - 20}" stroke="#eee"/>'
        )
        parts.append(
            f'<text x="{x:.1f}" y="{height - 6}" font-size="10" text-anchor="middle">{tick * 100:.0f}%</text>'
        )
    for i, (label, value, low, high) in enumerate(bars):
        y = top + i * row
        parts.append(
            f'<text x="{left - 6}" y="{y + 14}" font-size="11" text-anchor="end">{escape(label)}</text>'
        )
        if value is None:
            parts.append(
                f'<text x="{sx(0.0) + 4:.1f}" y="{y + 14}" font-size="11" fill="#777">undefined</text>'
            )
            continue
        x0, x1 = sorted((sx(0.0), sx(value)))
        parts.append(
            f'<rect x="{x0:.1f}" y="{y + 3}" width="{max(x1 - x0, 1):.1f}" height="{row - 8}" fill="{BAR}">'
            f"<title>{escape(label)}: {value * 100:.1f}%</title></rect>"
        )
        if low is not None and high is not None:
            ym = y + row / 2 - 1
            parts.append(
                f'<line x1="{sx(low):.1f}" y1="{ym:.1f}" x2="{sx(high):.1f}" y2="{ym:.1f}" stroke="#222"/>'
            )
            for end in (low, high):
                parts.append(
                    f'<line x1="{sx(end):.1f}" y1="{ym - 4:.1f}" x2="{sx(end):.1f}" y2="{ym + 4:.1f}" stroke="#222"/>'
                )
        parts.append(
            f'<text x="{max(x1, sx(high) if high is not None else x1) + 4:.1f}" y="{y + 14}" '
            f'font-size="10">{value * 100:.0f}%</text>'
        )
    parts.append("</svg>")
    return "".join(parts)


def _heat_colour(rate: float) -> str:
    """White (0) to red (1)."""
    r = max(0.0, min(1.0, rate))
    g = int(255 - 170 * r)
    return f"rgb(255,{g},{g})"


def _heat_map(
    title: str, arms: list[str], rules: list[str], rates: dict[tuple[str, str], float]
) -> str:
    if not arms or not rules:
        return f'<p class="empty">{escape(title)}: no data.</p>'
    left, top, cell_w, cell_h = 170, 70, 62, 20
    width = left + cell_w * len(arms) + 10
    height = top + cell_h * len(rules) + 10
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" role="img" '
        f'aria-label="{escape(title)}">',
        f'<text x="4" y="16" font-size="13" font-weight="bold">{escape(title)}</text>',
    ]
    for j, arm in enumerate(arms):
        x = left + j * cell_w + cell_w / 2
        parts.append(
            f'<text x="{x:.1f}" y="{top - 8}" font-size="11" text-anchor="middle">{escape(arm)}</text>'
        )
    for i, rule in enumerate(rules):
        y = top + i * cell_h
        parts.append(
            f'<text x="{left - 6}" y="{y + 14}" font-size="11" text-anchor="end">{escape(rule)}</text>'
        )
        for j, arm in enumerate(arms):
            x = left + j * cell_w
            rate = rates.get((rule, arm))
            fill = "#f0f0f0" if rate is None else _heat_colour(rate)
            text = "-" if rate is None else f"{rate * 100:.0f}"
            parts.append(
                f'<rect x="{x}" y="{y}" width="{cell_w - 2}" height="{cell_h - 2}" fill="{fill}">'
                f"<title>{escape(rule)} · {escape(arm)}: {text}%</title></rect>"
                f'<text x="{x + cell_w / 2 - 1:.1f}" y="{y + 13}" font-size="10" '
                f'text-anchor="middle">{text}</text>'
            )
    parts.append("</svg>")
    return "".join(parts)


def _pct(iv: dict[str, Any] | None) -> str:
    if not iv or iv.get("value") is None:
        return "undefined" if iv else "-"
    low, high = iv.get("low"), iv.get("high")
    band = f" [{low * 100:.0f}, {high * 100:.0f}]" if low is not None and high is not None else ""
    return f"{iv['value'] * 100:.0f}{band}"


def experiment_section(doc: dict[str, Any]) -> list[str]:
    """The HTML of one experiment's results."""
    name = str(doc.get("experiment", "?"))
    plan = doc.get("plan", {})
    split = (plan.get("splits") or ["dev"])[0]
    html = [
        f'<h2 id="experiment-{escape(name)}">Experiment {escape(name)}</h2>',
        f"<p>{escape(str(doc.get('description') or ''))}</p>",
        f"<p>base <code>{escape(str(doc.get('base', ''))[:10])}</code>; personas "
        f"{escape(', '.join(plan.get('personas', [])))}; {plan.get('episodes')} training "
        f"episodes; stream orders {escape(', '.join(map(str, plan.get('orders', []))))}; "
        f"evaluation seeds {escape(', '.join(map(str, plan.get('eval_seeds', []))))}; "
        f"split {escape(split)}. Gap closed = {escape(str(doc.get('gap_closed', '')))}"
        f"{'; failure rate = ' + escape(str(doc['failure_rate'])) if doc.get('failure_rate') else ''}; "
        "whiskers: bootstrap interval over tasks. Arms' memory: "
        f"<code>git diff refs/evolve/arms/{escape(name)}/&lt;arm&gt;/&lt;persona&gt;/&lt;tier&gt;/"
        "&lt;order&gt; ... -- memory/</code>.</p>",
    ]
    for tier in plan.get("feedback", []):
        rows = [r for r in doc.get("rows", []) if r["split"] == split and r["tier"] == tier]
        if not rows:
            continue
        bars = []
        for r in rows:
            g = r.get("gap_closed")
            if g is not None:
                bars.append((r["arm"], g.get("value"), g.get("low"), g.get("high")))
        html.append(f"<h3>{escape(split)}, {escape(tier)} feedback</h3>")
        html.append(_bar_chart(f"gap closed per arm ({tier} feedback)", bars))
        html.append(
            "<table><tr><th>arm</th><th>gap closed %</th><th>success %</th><th>task done %</th>"
            "<th>violations %</th><th>gap closed over orders</th><th>tokens/episode</th>"
            "<th>cost $</th></tr>"
        )
        for r in rows:
            s = r.get("spread", {}).get("gap_closed") or {}
            spread = (
                f"{s['min'] * 100:.0f}–{s['max'] * 100:.0f}" if s.get("min") is not None else "-"
            )
            html.append(
                f"<tr><td>{escape(r['arm'])}</td><td>{_pct(r.get('gap_closed'))}</td>"
                f"<td>{_pct(r.get('success'))}</td><td>{_pct(r.get('task_done'))}</td>"
                f"<td>{_pct(r.get('violation_rate'))}</td>"
                f"<td>{spread}</td><td>{r.get('tokens_per_episode') or 0:.0f}</td>"
                f"<td>{r.get('cost', 0.0):.4f}</td></tr>"
            )
        html.append("</table>")
        rules = sorted({rule for r in rows for rule in r.get("rules", {})})
        rates = {
            (rule, r["arm"]): iv["value"]
            for r in rows
            for rule, iv in r.get("rules", {}).items()
            if iv.get("value") is not None
        }
        html.append(
            _heat_map(f"violation rate per rule (%, {tier} feedback)", [r["arm"] for r in rows],
                      rules, rates)
        )  # fmt: skip
    return html


def experiment_sections(ws: Workspace) -> list[str]:
    """One section per recorded experiment (nothing when there is none)."""
    from evolve.compare import load_results

    return [line for doc in load_results(ws) for line in experiment_section(doc)]
