"""What the harness benchmarks share (bench_harness.py, bench_search.py): the options of the
trained workspace they start from, one split's values per task for a paired gain, and how an
interval is printed."""

from __future__ import annotations

import argparse

from evolve.evaluate._report import SplitReport


def training_options(parser: argparse.ArgumentParser) -> None:
    """The options of the workspace both benchmarks train first (persona, recipe, episodes,
    feedback) and score (runs, seed)."""
    parser.add_argument("--persona", default="alex")
    parser.add_argument("--recipe", default="ace")
    parser.add_argument("--episodes", type=int, default=40)
    parser.add_argument("--feedback", default="corrective")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--seed", type=int, default=0)


def per_task(report: SplitReport, value: str) -> dict[str, list[float]]:
    """Each task's values, runs in order: `success` (the episode accepted: 1, else 0), `done`
    (the task done), or else the share of the episode's applicable rules it violated."""
    out: dict[str, list[float]] = {}
    for e in sorted(report.episodes, key=lambda e: (e.task_id, e.run)):
        if value == "success":
            v = 1.0 if e.accepted else 0.0
        elif value == "done":
            v = 1.0 if e.task_success else 0.0
        else:
            v = len(e.violations) / len(e.applicable_rules) if e.applicable_rules else 0.0
        out.setdefault(e.task_id, []).append(v)
    return out


def interval(g: list[float]) -> str:
    """A gain as printed: mean [low, high]."""
    return f"{g[0]:+.3f} [{g[1]:+.3f}, {g[2]:+.3f}]"
