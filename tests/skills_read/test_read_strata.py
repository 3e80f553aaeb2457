"""The scoreboard compares the arms within each task (issue 13): the per-task record and the
stratified estimator that decides retirement (`evolve.skills._strata`, `_scoreboard`)."""

from __future__ import annotations

import math
import random

import pytest

from evolve.errors import EvolveError
from evolve.skills._scoreboard import Score, _restricted, newcombe, stratified
from evolve.skills._strata import (
    STRATA_PATH,
    added,
    dump_strata,
    parse_strata,
    take_back,
    tally_tasks,
)


def _brute(x1: int, n1: int, x0: int, n0: int, delta: float) -> float:
    """The restricted maximum-likelihood p1 under p1 - p0 = delta, by grid search."""
    lo, hi = max(0.0, delta), min(1.0, 1.0 + delta)
    best, arg = -math.inf, lo
    for i in range(1, 4000):
        p1 = lo + (hi - lo) * i / 4000
        p0 = p1 - delta
        ll = 0.0
        for p, x, n in ((p1, x1, n1), (p0, x0, n0)):
            ll += x * math.log(max(p, 1e-300)) + (n - x) * math.log(max(1 - p, 1e-300))
        if ll > best:
            best, arg = ll, p1
    return arg


def test_the_restricted_rates_are_the_maximum_likelihood_ones() -> None:
    rng = random.Random(3)
    for _ in range(60):
        n1, n0 = rng.randint(1, 8), rng.randint(1, 8)
        x1, x0 = rng.randint(0, n1), rng.randint(0, n0)
        delta = rng.uniform(-0.9, 0.9)
        r1, r0 = _restricted(x1, n1, x0, n0, delta)
        assert abs(r1 - _brute(x1, n1, x0, n0, delta)) < 2e-3
        assert abs((r1 - r0) - delta) < 1e-9


def test_tasks_whose_arms_agree_add_no_noise() -> None:
    # One task where the skill hurts, then tasks where both arms always pass or always fail:
    # the test of no effect is the same, the pooled comparison is swamped.
    harm = (3, 0, 3, 3)  # injected 3 (0 passed), held out 3 (3 passed)
    alone = stratified([harm], 0.9)
    agree = [(6, 6, 1, 1), (5, 0, 1, 0), (7, 7, 2, 2), (4, 0, 1, 0)]
    mixed = stratified([harm, *agree], 0.9)
    assert alone.z() == pytest.approx(mixed.z())
    assert mixed.below_zero and mixed.interval is not None and mixed.interval[1] < 0
    inj = sum(c[0] for c in [harm, *agree])
    inj_pass = sum(c[1] for c in [harm, *agree])
    held = sum(c[2] for c in [harm, *agree])
    held_pass = sum(c[3] for c in [harm, *agree])
    pooled = newcombe(inj_pass, inj, held_pass, held, 0.9)
    assert pooled is not None and pooled[1] > 0  # the pooled interval does not see it
    assert Score(inj, inj_pass, held, held_pass, strata=(harm, *agree)).harmful


def test_the_interval_and_the_test_at_zero_agree() -> None:
    rng = random.Random(5)
    crit = 1.6448536269514722  # two-sided 90 %
    for _ in range(200):
        cells = []
        for _task in range(rng.randint(1, 4)):
            n1, n0 = rng.randint(1, 6), rng.randint(1, 6)
            cells.append((n1, rng.randint(0, n1), n0, rng.randint(0, n0)))
        st = stratified(cells, 0.9)
        assert st.interval is not None and st.lift is not None
        lo, hi = st.interval
        assert -1 <= lo <= st.lift <= hi <= 1
        assert (hi < 0) == (st.z() < -crit) or abs(st.z() + crit) < 1e-6


def test_a_task_with_one_arm_only_does_not_count() -> None:
    st = stratified([(4, 0, 0, 0), (0, 0, 3, 3)], 0.9)
    assert st.tasks == 0 and st.lift is None and st.interval is None and not st.below_zero
    assert not Score(4, 0, 3, 3, strata=((4, 0, 0, 0), (0, 0, 3, 3))).harmful


def test_the_record_round_trips_and_refuses_a_bad_file() -> None:
    strata = {"sk-b": {"t2": (2, 1, 1, 0)}, "sk-a": {"t1": (1, 1, 0, 0), "t0": (0, 0, 0, 0)}}
    text = dump_strata(strata)
    assert parse_strata(text) == {"sk-a": {"t1": (1, 1, 0, 0)}, "sk-b": {"t2": (2, 1, 1, 0)}}
    assert dump_strata({}) == "" and parse_strata("") == {}
    for bad in ("[1, 2]", "a: [1]", "a: {t: [1, 2, 3]}", "a: {t: [1, 2, 0, 0]}", "a: {t: x}"):
        with pytest.raises(EvolveError, match=STRATA_PATH):
            parse_strata(bad)


def test_tally_counts_each_episode_once_in_its_task() -> None:
    inc = tally_tasks(
        [
            (["a", "b"], [], True, "t1", True),
            (["b"], ["a"], False, "t1", True),
            (["a"], [], False, "t2", False),  # counted in the record too (its task's arms)
        ]
    )
    assert inc["a"] == {"t1": (1, 1, 1, 0), "t2": (1, 0, 0, 0)}
    assert inc["b"] == {"t1": (1, 1, 0, 0)}
    assert added({"a": {"t1": (1, 1, 0, 0)}}, inc, restart=["b"]) == {
        "a": {"t1": (2, 2, 1, 0), "t2": (1, 0, 0, 0)}
    }


def test_a_revert_takes_back_what_one_commit_added() -> None:
    def raw(s: dict[str, dict[str, tuple[int, int, int, int]]]) -> bytes:
        return dump_strata(s).encode()

    before = raw({"a": {"t1": (1, 1, 0, 0)}})
    after = raw({"a": {"t1": (2, 1, 1, 1)}, "b": {"t2": (1, 0, 0, 0)}})
    now = raw({"a": {"t1": (4, 2, 2, 1)}, "b": {"t2": (1, 0, 0, 0)}})
    assert parse_strata(take_back(before, after, now).decode()) == {"a": {"t1": (3, 2, 1, 0)}}
    # A restart (the commit emptied the entry) is taken back too: the old counts return.
    restarted = take_back(before, None, raw({"a": {"t1": (1, 0, 0, 0)}}))
    assert parse_strata((restarted or b"").decode()) == {"a": {"t1": (2, 1, 0, 0)}}
