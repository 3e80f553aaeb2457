"""Tiny inline-SVG line charts: the report must be one self-contained file."""

from __future__ import annotations

from collections.abc import Sequence
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
    width: int = 640,
    height: int = 260,
) -> str:
    """An SVG line chart of (x, y) series, with axes, ticks and a legend."""
    points = [p for _, pts in series for p in pts]
    if not points:
        return f'<p class="empty">{escape(title)}: no data yet.</p>'
    left, right, top, bottom = 48, 150, 28, 36
    xs = [p[0] for p in points]
    x0, x1 = min(xs), max(xs)
    if x1 == x0:
        x1 = x0 + 1
    y1 = y_max if y_max is not None else max(max(p[1] for p in points), 1e-9)
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
    for i in range(5):
        y = y1 * i / 4
        parts.append(
            f'<text x="{left - 6}" y="{sy(y) + 4:.1f}" font-size="10" text-anchor="end">{y:.2f}</text>'
        )
        parts.append(
            f'<line x1="{left}" y1="{sy(y):.1f}" x2="{left + plot_w}" y2="{sy(y):.1f}" stroke="#eee"/>'
        )
    for x in sorted({x0, x1, (x0 + x1) / 2}):
        parts.append(
            f'<text x="{sx(x):.1f}" y="{top + plot_h + 14}" font-size="10" text-anchor="middle">{x:g}</text>'
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
