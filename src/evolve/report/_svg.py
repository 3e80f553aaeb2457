"""Tiny inline-SVG line charts: the report must be one self-contained file."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from html import escape

PALETTE = ("#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#17becf", "#8c564b", "#e377c2",
           "#7f7f7f", "#bcbd22", "#393b79", "#637939")  # fmt: skip


def line_chart(
    title: str,
    series: Sequence[tuple[str, Sequence[tuple[float, float]]]],
    *,
    y_label: str = "",
    x_label: str = "",
    y_max: float | None = None,
    integer_x: bool = False,
    integer_y: bool = False,
    width: int = 640,
    height: int = 260,
) -> str:
    """An SVG line chart of (x, y) series, with axes, ticks and a legend.

    `integer_x`/`integer_y`: the axis counts things (episodes, commits, units), so its ticks
    fall on whole numbers only and are labelled as such."""
    points = [p for _, pts in series for p in pts]
    if not points:
        return f'<p class="empty">{escape(title)}: no data yet.</p>'
    left, right, top, bottom = 48, 150, 28, 36
    xs = [p[0] for p in points]
    x0, x1 = min(xs), max(xs)
    if x1 == x0:
        x1 = x0 + 1
    y1 = y_max if y_max is not None else max(max(p[1] for p in points), 1e-9)
    if integer_y:
        y1 = float(max(1, math.ceil(y1)))
    plot_w, plot_h = width - left - right, height - top - bottom

    def sx(x: float) -> float:
        return left + (x - x0) / (x1 - x0) * plot_w

    def sy(y: float) -> float:
        return top + plot_h - (y / y1) * plot_h

    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" role="img" '
        f'aria-label="{escape(title)}">',
        f'<text x="{left}" y="16" font-size="13" font-weight="bold">{escape(title)}</text>',
        f'<line x1="{left}" y1="{top + plot_h}" x2="{left + plot_w}" y2="{top + plot_h}" stroke="#444"/>',
        f'<line x1="{left}" y1="{top}" x2="{left}" y2="{top + plot_h}" stroke="#444"/>',
    ]
    y_ticks = integer_ticks(0, y1) if integer_y else [y1 * i / 4 for i in range(5)]
    for y in y_ticks:
        label = f"{int(y)}" if integer_y else f"{y:.2f}"
        parts.append(
            f'<text class="ytick" x="{left - 6}" y="{sy(y) + 4:.1f}" font-size="10" text-anchor="end">{label}</text>'
        )
        parts.append(
            f'<line x1="{left}" y1="{sy(y):.1f}" x2="{left + plot_w}" y2="{sy(y):.1f}" stroke="#eee"/>'
        )
    x_ticks = integer_ticks(x0, x1) if integer_x else sorted({x0, x1, (x0 + x1) / 2})
    for x in x_ticks:
        parts.append(
            f'<text class="xtick" x="{sx(x):.1f}" y="{top + plot_h + 14}" font-size="10" text-anchor="middle">{x:g}</text>'
        )
    if x_label:
        parts.append(
            f'<text x="{left + plot_w / 2}" y="{height - 4}" font-size="11" text-anchor="middle">{escape(x_label)}</text>'
        )
    if y_label:
        parts.append(
            f'<text x="12" y="{top + plot_h / 2}" font-size="11" text-anchor="middle" '
            f'transform="rotate(-90 12 {top + plot_h / 2})">{escape(y_label)}</text>'
        )
    for n, (name, pts) in enumerate(series):
        color = PALETTE[n % len(PALETTE)]
        if pts:
            path = " ".join(f"{sx(x):.1f},{sy(y):.1f}" for x, y in pts)
            parts.append(
                f'<polyline fill="none" stroke="{color}" stroke-width="2" points="{path}"/>'
            )
            for x, y in pts:
                parts.append(f'<circle cx="{sx(x):.1f}" cy="{sy(y):.1f}" r="2.5" fill="{color}"/>')
        ly = top + 12 + n * 15
        parts.append(
            f'<rect x="{width - right + 10}" y="{ly - 8}" width="10" height="10" fill="{color}"/>'
        )
        parts.append(
            f'<text x="{width - right + 24}" y="{ly + 1}" font-size="11">{escape(name)}</text>'
        )
    parts.append("</svg>")
    return "\n".join(parts)


def integer_ticks(low: float, high: float, most: int = 8) -> list[float]:
    """Whole numbers from `low` to `high` (inclusive, rounded inwards), at most `most` of
    them, evenly stepped: the ticks of an axis that counts things."""
    first, last = math.ceil(low), math.floor(high)
    if last < first:
        return [float(first)]
    step = max(1, math.ceil((last - first) / max(1, most - 1)))
    return [float(v) for v in range(first, last + 1, step)]


@dataclass(frozen=True)
class GenerationPoint:
    """One generation on the chart: the base's score and the candidate's, the verdict, and
    the gate's interval on the gain (added to the base's score), when it has one."""

    number: int
    base: float | None
    candidate: float | None
    verdict: str
    interval: tuple[float, float] | None = None


def generation_chart(
    title: str, points: Sequence[GenerationPoint], *, width: int = 640, height: int = 260
) -> str:
    """Base and candidate side by side for each generation, the verdict marked (a filled
    green disc: accepted; a red cross: rejected), the gain's interval drawn as a bar on the
    candidate. The x axis has one whole-number tick per generation; scores run from 0 to 1."""
    shown = [p for p in points if p.base is not None or p.candidate is not None]
    if not shown:
        return f'<p class="empty">{escape(title)}: no data yet.</p>'
    left, right, top, bottom = 48, 150, 28, 36
    plot_w, plot_h = width - left - right, height - top - bottom
    numbers = [p.number for p in shown]
    x0, x1 = min(numbers) - 0.5, max(numbers) + 0.5

    def sx(x: float) -> float:
        return left + (x - x0) / (x1 - x0) * plot_w

    def sy(y: float) -> float:
        return top + plot_h - max(0.0, min(1.0, y)) * plot_h

    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" role="img" '
        f'aria-label="{escape(title)}" class="generations">',
        f'<text x="{left}" y="16" font-size="13" font-weight="bold">{escape(title)}</text>',
        f'<line x1="{left}" y1="{top + plot_h}" x2="{left + plot_w}" y2="{top + plot_h}" stroke="#444"/>',
        f'<line x1="{left}" y1="{top}" x2="{left}" y2="{top + plot_h}" stroke="#444"/>',
    ]
    for i in range(5):
        y = i / 4
        parts.append(
            f'<text class="ytick" x="{left - 6}" y="{sy(y) + 4:.1f}" font-size="10" text-anchor="end">{y:.2f}</text>'
        )
        parts.append(
            f'<line x1="{left}" y1="{sy(y):.1f}" x2="{left + plot_w}" y2="{sy(y):.1f}" stroke="#eee"/>'
        )
    for n in integer_ticks(x0, x1, most=12):
        parts.append(
            f'<text class="xtick" x="{sx(n):.1f}" y="{top + plot_h + 14}" font-size="10" text-anchor="middle">{n:g}</text>'
        )
    parts.append(
        f'<text x="{left + plot_w / 2}" y="{height - 4}" font-size="11" text-anchor="middle">generation</text>'
    )
    offset = min(0.2, 0.25)
    for p in shown:
        bx, cx = sx(p.number - offset), sx(p.number + offset)
        if p.base is not None and p.candidate is not None:
            parts.append(
                f'<line x1="{bx:.1f}" y1="{sy(p.base):.1f}" x2="{cx:.1f}" y2="{sy(p.candidate):.1f}" stroke="#999" stroke-dasharray="3,2"/>'
            )
        if p.base is not None:
            parts.append(
                f'<rect class="base" data-generation="{p.number}" x="{bx - 3.5:.1f}" y="{sy(p.base) - 3.5:.1f}" width="7" height="7" fill="#777"><title>generation {p.number} base {p.base:.3f}</title></rect>'
            )
        if p.candidate is None:
            continue
        if p.interval is not None and p.base is not None:
            lo, hi = p.base + p.interval[0], p.base + p.interval[1]
            parts.append(
                f'<line class="interval" data-generation="{p.number}" x1="{cx:.1f}" y1="{sy(lo):.1f}" x2="{cx:.1f}" y2="{sy(hi):.1f}" stroke="#444" stroke-width="1.5"/>'
            )
        cy = sy(p.candidate)
        label = f"generation {p.number} candidate {p.candidate:.3f}: {p.verdict}"
        if p.verdict == "accepted":
            parts.append(
                f'<circle class="candidate accepted" data-generation="{p.number}" cx="{cx:.1f}" cy="{cy:.1f}" r="4.5" fill="#2ca02c"><title>{escape(label)}</title></circle>'
            )
        else:
            parts.append(
                f'<path class="candidate rejected" data-generation="{p.number}" d="M{cx - 4:.1f},{cy - 4:.1f} L{cx + 4:.1f},{cy + 4:.1f} M{cx - 4:.1f},{cy + 4:.1f} L{cx + 4:.1f},{cy - 4:.1f}" stroke="#d62728" stroke-width="2.5"><title>{escape(label)}</title></path>'
            )
    legend = [("#777", "base (the champion)"), ("#2ca02c", "candidate, accepted"),
              ("#d62728", "candidate, rejected"), ("#444", "gain interval")]  # fmt: skip
    for n, (color, name) in enumerate(legend):
        ly = top + 12 + n * 15
        parts.append(
            f'<rect x="{width - right + 10}" y="{ly - 8}" width="10" height="10" fill="{color}"/>'
        )
        parts.append(
            f'<text x="{width - right + 24}" y="{ly + 1}" font-size="11">{escape(name)}</text>'
        )
    parts.append("</svg>")
    return "\n".join(parts)
