"""The gap an arm closes between none and oracle, with its paired bootstrap interval.

The bootstrap itself (tasks resampled with all of their episodes, the same draws for every
arm, pooled rates) is `evolve.stats`'s; what is particular to an experiment is the gap.

The gap closed by an arm on a rate where lower is better (violations):
`(none - arm) / (none - oracle)`. When none and oracle are equal the gap is undefined
(`None`, with the reason), never a division error; draws in which they tie are left out of
the interval, and the interval is undefined when more than half of the draws tie.
"""

from __future__ import annotations

from evolve.stats import Counts, Interval, percentiles, ratio


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
    low, high = percentiles(stats, confidence)
    return Interval(value, low, high, n)
