"""Paired bootstrap over tasks x runs (seed 001 §3.3): is the candidate better than the base?

Each task is scored `runs` times on both sides with the same seeds, so the runs pair up.
Resampling tasks (with their runs) keeps the dependence between a task's runs; the interval
of the mean paired gain is read from the bootstrap percentiles.
"""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass


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
