"""Intervals of an experiment's scores: a percentile bootstrap over tasks.

The unit resampled is the task (with all of its episodes: every evaluation seed, and where
results are pooled every stream order and persona), so the dependence between a task's
episodes is kept. Rates are pooled ratios (violations over applicable checks; accepted
episodes over episodes), recomputed from the resampled tasks' counts. Arms are resampled
together (the same task draw for every arm), so the gap closed between none and oracle is
computed on paired draws.

The gap closed by an arm on a rate where lower is better (violations):
`(none - arm) / (none - oracle)`. When none and oracle are equal the gap is undefined
(`None`, with the reason), never a division error; draws in which they tie are left out of
the interval, and the interval is undefined when more than half of the draws tie.
"""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

# task -> (numerator, denominator): e.g. (violations, applicable checks) of a task's episodes.
Counts = Mapping[str, tuple[float, float]]


@dataclass(frozen=True)
class Interval:
    value: float | None
    low: float | None
    high: float | None
    n: int  # tasks
    reason: str = ""  # why value is None

    def as_json(self) -> dict[str, object]:
        out: dict[str, object] = {
            "value": _r(self.value),
            "low": _r(self.low),
            "high": _r(self.high),
            "tasks": self.n,
        }
        if self.reason:
            out["undefined"] = self.reason
        return out


def _r(x: float | None) -> float | None:
    return None if x is None else round(x, 4)


def ratio(counts: Counts, tasks: Sequence[str] | None = None) -> float | None:
    keys = counts.keys() if tasks is None else tasks
    num = sum(counts[t][0] for t in keys if t in counts)
    den = sum(counts[t][1] for t in keys if t in counts)
    return num / den if den else None


def draws(tasks: Sequence[str], samples: int, seed: int) -> list[list[str]]:
    """`samples` resamples (with replacement) of `tasks`, the same for every arm."""
    rng = random.Random(f"compare-bootstrap|{seed}")
    ordered = sorted(tasks)
    n = len(ordered)
    return [[ordered[rng.randrange(n)] for _ in range(n)] for _ in range(samples)] if n else []


def _percentiles(values: list[float], confidence: float) -> tuple[float, float]:
    values = sorted(values)
    tail = (1.0 - confidence) / 2.0
    last = len(values) - 1
    return values[int(round(tail * last))], values[int(round((1.0 - tail) * last))]


def rate_interval(counts: Counts, resamples: list[list[str]], confidence: float = 0.95) -> Interval:
    """The pooled rate of `counts` and its bootstrap interval."""
    value = ratio(counts)
    if value is None:
        return Interval(None, None, None, len(counts), "no applicable episodes")
    stats = [r for r in (ratio(counts, draw) for draw in resamples) if r is not None]
    if not stats:
        return Interval(value, value, value, len(counts))
    low, high = _percentiles(stats, confidence)
    return Interval(value, low, high, len(counts))


def gap_closed(none: float | None, arm: float | None, oracle: float | None) -> float | None:
    """`(none - arm) / (none - oracle)`; None when undefined (none equals oracle)."""
    if none is None or arm is None or oracle is None:
        return None
    span = none - oracle
    if abs(span) < 1e-12:
        return None
    return (none - arm) / span


def gap_interval(
    none: Counts,
    arm: Counts,
    oracle: Counts,
    resamples: list[list[str]],
    confidence: float = 0.95,
) -> Interval:
    """The gap closed by `arm` between `none` and `oracle`, with its paired interval."""
    n = len(arm)
    value = gap_closed(ratio(none), ratio(arm), ratio(oracle))
    if value is None:
        a, b = ratio(none), ratio(oracle)
        why = (
            "no applicable episodes"
            if a is None or b is None or ratio(arm) is None
            else f"none and oracle score the same ({a:.3f}): there is no gap to close"
        )
        return Interval(None, None, None, n, why)
    stats = []
    for draw in resamples:
        g = gap_closed(ratio(none, draw), ratio(arm, draw), ratio(oracle, draw))
        if g is not None:
            stats.append(g)
    if len(stats) * 2 < len(resamples):
        return Interval(value, None, None, n, "none and oracle tie in most resamples")
    if not stats:
        return Interval(value, value, value, n)
    low, high = _percentiles(stats, confidence)
    return Interval(value, low, high, n)


def spread(values: Sequence[float | None]) -> dict[str, float | None]:
    """Min, max and standard deviation of per-order values (None values left out)."""
    kept = [v for v in values if v is not None]
    if not kept:
        return {"min": None, "max": None, "sd": None, "orders": 0}
    mean = sum(kept) / len(kept)
    sd = (sum((v - mean) ** 2 for v in kept) / (len(kept) - 1)) ** 0.5 if len(kept) > 1 else 0.0
    return {"min": _r(min(kept)), "max": _r(max(kept)), "sd": _r(sd), "orders": len(kept)}
