"""Intervals from per-task results, and the gap closed between none and oracle."""

from __future__ import annotations

import random

import pytest

from evolve.compare import gap_closed, gap_interval, rate_interval
from evolve.stats import draws, spread


def bernoulli_tasks(
    p: float, tasks: int, seeds: int, rng: random.Random
) -> dict[str, tuple[float, float]]:
    """Per task: (successes, episodes) of `seeds` Bernoulli(p) episodes."""
    return {
        f"t{i:03d}": (float(sum(rng.random() < p for _ in range(seeds))), float(seeds))
        for i in range(tasks)
    }


@pytest.mark.slow
def test_the_interval_of_a_known_distribution_covers_it_at_about_its_confidence() -> None:
    """Bernoulli(0.3) episodes, 60 tasks x 3 seeds: the 95% interval covers 0.3 in about 95%
    of repeated experiments and is as wide as the normal approximation says."""
    rng = random.Random(7)
    p, n, k = 0.3, 60, 3
    covered, widths = 0, []
    trials = 120
    for trial in range(trials):
        counts = bernoulli_tasks(p, n, k, rng)
        iv = rate_interval(counts, draws(list(counts), 400, trial))
        assert iv.low is not None and iv.high is not None and iv.value is not None
        assert iv.low <= iv.value <= iv.high
        covered += iv.low <= p <= iv.high
        widths.append(iv.high - iv.low)
    assert 0.88 <= covered / trials <= 0.995
    expected = 2 * 1.96 * (p * (1 - p) / (n * k)) ** 0.5
    mean_width = sum(widths) / len(widths)
    assert 0.8 * expected <= mean_width <= 1.2 * expected


def test_the_interval_is_over_tasks_not_episodes() -> None:
    """Tasks that are all-or-nothing across seeds are one observation each: the interval is
    wider than if the episodes were independent."""
    rng = random.Random(3)
    counts = {f"t{i}": ((3.0, 3.0) if rng.random() < 0.5 else (0.0, 3.0)) for i in range(40)}
    iv = rate_interval(counts, draws(list(counts), 1000, 0))
    assert iv.low is not None and iv.high is not None
    independent = 2 * 1.96 * (0.25 / 120) ** 0.5
    assert iv.high - iv.low > 1.4 * independent


def test_gap_closed_is_undefined_not_a_division_error_when_none_equals_oracle() -> None:
    assert gap_closed(0.4, 0.2, 0.4) is None
    assert gap_closed(0.5, 0.25, 0.0) == 0.5
    same = {"a": (1.0, 2.0), "b": (1.0, 2.0)}
    iv = gap_interval(
        same, {"a": (0.0, 2.0), "b": (0.0, 2.0)}, dict(same), draws(["a", "b"], 200, 0)
    )
    assert iv.value is None and iv.low is None and iv.high is None
    assert "none and oracle score the same" in iv.reason
    assert iv.as_json()["undefined"] == iv.reason


def test_gap_closed_and_its_interval_from_paired_draws() -> None:
    tasks = [f"t{i}" for i in range(30)]
    none = {t: (4.0, 4.0) for t in tasks}  # everything violated
    oracle = {t: (0.0, 4.0) for t in tasks}  # nothing violated
    arm = {t: ((1.0, 4.0) if i % 2 else (3.0, 4.0)) for i, t in enumerate(tasks)}  # rate 0.5
    iv = gap_interval(none, arm, oracle, draws(tasks, 1000, 0))
    assert iv.value == 0.5
    assert iv.low is not None and iv.high is not None and iv.low < 0.5 < iv.high
    assert iv.low > 0.35 and iv.high < 0.65


def test_spread_across_orders() -> None:
    s = spread([0.5, 0.7, None, 0.6])
    assert s["min"] == 0.5 and s["max"] == 0.7 and s["orders"] == 3
    assert s["sd"] is not None and abs(s["sd"] - 0.1) < 1e-9
    assert spread([None])["min"] is None
