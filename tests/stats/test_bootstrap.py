"""The paired bootstrap over tasks x runs that the gate reads its dev gain from."""

from __future__ import annotations

import pytest

from evolve.stats import PairedGain, paired_gain


def _scores(values: list[list[float]]) -> dict[str, list[float]]:
    return {f"task-{i:02d}": list(runs) for i, runs in enumerate(values)}


def test_identical_sides_give_zero_gain_and_a_zero_interval() -> None:
    base = _scores([[1.0, 0.0, 1.0], [0.0, 0.0, 0.0], [1.0, 1.0, 1.0], [0.0, 1.0, 0.0]] * 5)
    gain = paired_gain(base, {k: list(v) for k, v in base.items()})
    assert gain == PairedGain(mean=0.0, low=0.0, high=0.0, tasks=20, pairs=60)


def test_a_clear_improvement_on_most_tasks_has_a_positive_lower_bound() -> None:
    base = _scores([[0.0, 0.0, 0.0]] * 20)
    # 16 tasks always fixed, 2 fixed once in three runs, 2 unchanged.
    cand = _scores([[1.0, 1.0, 1.0]] * 16 + [[1.0, 0.0, 0.0]] * 2 + [[0.0, 0.0, 0.0]] * 2)
    gain = paired_gain(base, cand)
    assert gain.mean == pytest.approx((16 + 2 / 3) / 20)
    assert 0.0 < gain.low <= gain.mean <= gain.high <= 1.0
    assert (gain.tasks, gain.pairs) == (20, 60)


def test_a_regression_has_a_negative_upper_bound() -> None:
    base = _scores([[1.0, 1.0]] * 10)
    cand = _scores([[0.0, 0.0]] * 8 + [[1.0, 1.0]] * 2)
    gain = paired_gain(base, cand)
    assert gain.mean == pytest.approx(-0.8)
    assert gain.high < 0.0


def test_noise_around_zero_does_not_give_a_positive_lower_bound() -> None:
    # Half the tasks get better by one run in two, half get worse by the same.
    base = _scores([[0.0, 1.0]] * 5 + [[1.0, 0.0]] * 5)
    cand = _scores([[1.0, 1.0]] * 5 + [[0.0, 0.0]] * 5)
    gain = paired_gain(base, cand)
    assert gain.mean == 0.0
    assert gain.low < 0.0 < gain.high


def test_a_single_improved_task_out_of_many_is_not_enough() -> None:
    base = _scores([[0.0]] * 20)
    cand = _scores([[1.0]] + [[0.0]] * 19)
    gain = paired_gain(base, cand)
    assert gain.mean == pytest.approx(0.05)
    assert gain.low <= 0.0


def test_different_tasks_on_the_two_sides_raise() -> None:
    base = {"a": [1.0], "b": [0.0]}
    with pytest.raises(ValueError, match="different tasks"):
        paired_gain(base, {"a": [1.0], "c": [0.0]})
    with pytest.raises(ValueError, match="different tasks"):
        paired_gain(base, {"a": [1.0]})


def test_a_different_number_of_runs_raises() -> None:
    with pytest.raises(ValueError, match="runs"):
        paired_gain({"a": [1.0, 0.0], "b": [0.0]}, {"a": [1.0], "b": [0.0]})


def test_the_bootstrap_is_deterministic_for_a_seed() -> None:
    base = _scores([[0.0, 1.0, 0.0], [1.0, 0.0, 0.0], [0.0, 0.0, 0.0]] * 4)
    cand = _scores([[1.0, 1.0, 0.0], [0.0, 0.0, 1.0], [1.0, 0.0, 0.0]] * 4)
    first = paired_gain(base, cand, seed=7, samples=100)
    assert paired_gain(base, cand, seed=7, samples=100) == first
    # Another seed resamples differently: over a handful of seeds the interval moves.
    others = {paired_gain(base, cand, seed=s, samples=100) for s in range(8)}
    assert len({(g.low, g.high) for g in others}) > 1
    assert {g.mean for g in others} == {first.mean}


def test_the_task_order_does_not_matter() -> None:
    base = _scores([[0.0], [1.0], [0.0], [0.0], [1.0], [0.0]])
    cand = _scores([[1.0], [1.0], [1.0], [0.0], [0.0], [1.0]])
    shuffled_base = dict(reversed(list(base.items())))
    shuffled_cand = dict(sorted(cand.items(), key=lambda kv: kv[0][::-1]))
    assert paired_gain(base, cand, seed=3) == paired_gain(shuffled_base, shuffled_cand, seed=3)


def test_a_higher_confidence_gives_a_wider_interval() -> None:
    base = _scores([[0.0, 1.0], [1.0, 0.0], [0.0, 0.0], [0.0, 1.0]] * 4)
    cand = _scores([[1.0, 1.0], [1.0, 0.0], [1.0, 0.0], [0.0, 0.0]] * 4)
    narrow = paired_gain(base, cand, confidence=0.6)
    wide = paired_gain(base, cand, confidence=0.99)
    assert wide.low <= narrow.low and narrow.high <= wide.high
    assert (wide.high - wide.low) > (narrow.high - narrow.low)


def test_no_tasks_gives_zero() -> None:
    assert paired_gain({}, {}) == PairedGain(0.0, 0.0, 0.0, 0, 0)
