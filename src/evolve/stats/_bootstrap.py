"""Percentile bootstraps over tasks: the unit resampled is the task, with all of its runs or
episodes, so the dependence between a task's runs is kept.

- `paired_gain` (the gate): each task is scored `runs` times on both sides with
  the same seeds, so the runs pair up; the interval of the mean paired gain is read from the
  bootstrap percentiles.
- `draws`, `rate_interval` (experiments, `evolve.compare`): rates are pooled ratios
  (violations over applicable checks; accepted episodes over episodes) recomputed from the
  resampled tasks' counts. Every arm is given the same draws, so a statistic of several arms
  (the gap closed, `evolve.compare._stats`) is computed on paired draws.
"""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

# task -> (numerator, denominator): e.g. (violations, applicable checks) of a task's episodes.
Counts = Mapping[str, tuple[float, float]]


@dataclass(frozen=True)
class PairedGain:
    mean: float
    low: float
    high: float
    tasks: int
    pairs: int


def paired_gain(
    base: Mapping[str, Sequence[float]],
    candidate: Mapping[str, Sequence[float]],
    *,
    samples: int = 2000,
    confidence: float = 0.95,
    seed: int = 0,
) -> PairedGain:
    """Mean paired gain (candidate - base) and its percentile-bootstrap interval.

    Raises:
        ValueError: when the two sides do not pair (different tasks or runs).
    """
    if set(base) != set(candidate):
        raise ValueError("base and candidate were scored on different tasks")
    tasks = sorted(base)
    diffs: list[list[float]] = []
    for task in tasks:
        b, c = list(base[task]), list(candidate[task])
        if len(b) != len(c):
            raise ValueError(f"task {task} has {len(b)} base runs and {len(c)} candidate runs")
        diffs.append([ci - bi for bi, ci in zip(b, c, strict=True)])
    per_task = [sum(d) / len(d) for d in diffs if d]
    if not per_task:
        return PairedGain(0.0, 0.0, 0.0, 0, 0)
    mean = round(sum(per_task) / len(per_task), 9)
    rng = random.Random(f"bootstrap|{seed}")
    n = len(per_task)
    # Rounded so that float noise (a sum of thirds landing at 1e-17) never reads as a gain.
    means = sorted(
        round(sum(per_task[rng.randrange(n)] for _ in range(n)) / n, 9) for _ in range(samples)
    )
    tail = (1.0 - confidence) / 2.0
    low = means[int(tail * (samples - 1))]
    high = means[int((1.0 - tail) * (samples - 1))]
    return PairedGain(mean, low, high, n, sum(len(d) for d in diffs))


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
    """The pooled ratio of `counts` over `tasks` (all of them by default; a task drawn twice
    counts twice); None without a denominator."""
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


def percentiles(values: list[float], confidence: float) -> tuple[float, float]:
    """The two-sided percentile interval at `confidence` (nearest rank, rounded)."""
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
    low, high = percentiles(stats, confidence)
    return Interval(value, low, high, len(counts))


def spread(values: Sequence[float | None]) -> dict[str, float | None]:
    """Min, max and standard deviation of per-order values (None values left out)."""
    kept = [v for v in values if v is not None]
    if not kept:
        return {"min": None, "max": None, "sd": None, "orders": 0}
    mean = sum(kept) / len(kept)
    sd = (sum((v - mean) ** 2 for v in kept) / (len(kept) - 1)) ** 0.5 if len(kept) > 1 else 0.0
    return {"min": _r(min(kept)), "max": _r(max(kept)), "sd": _r(sd), "orders": len(kept)}
