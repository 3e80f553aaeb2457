"""The scoreboard's stated error rates (its module doc), by simulation of its own rule.

A skill among three candidates (the other two at the base share), its pass rate `p` when
held out and `p + delta` when injected; each episode draws the hold-out with `ablated` and
the skill's shares from `holdout_shares`, counts with `tally`, and checks `Score.harmful`
after every episode (as `settle` does after every count). Seeded: the figures are exact for
this seed, the bounds leave room for the simulation's own noise.
"""

from __future__ import annotations

import random

from evolve.skills._scoreboard import SKILL_COUNTERS, Score, holdout_shares, tally
from evolve.skills._select import ablated


class _Unit:
    kind = "skill"

    def __init__(self, counts: dict[str, int]) -> None:
        self.id = "s"
        for name in SKILL_COUNTERS:
            setattr(self, name, counts[name])


def _retired_share(delta: float, p: float, episodes: int, trials: int = 600) -> float:
    rng = random.Random(13)
    retired = 0
    for trial in range(trials):
        counts = dict.fromkeys(SKILL_COUNTERS, 0)
        for k in range(episodes):
            share = holdout_shares([_Unit(counts)], 0.2, 0.9)["s"]
            out = ablated(trial * 10_000 + k, [("s", share), ("o1", 0.2), ("o2", 0.2)])
            held = [out] if out else []
            injected = [i for i in ("s", "o1", "o2") if i != out]
            passed = rng.random() < (p if out == "s" else p + delta)
            for name, n in tally([(injected, held, passed)]).get("s", {}).items():
                counts[name] += n
            if Score(*(counts[n] for n in SKILL_COUNTERS)).harmful:
                retired += 1
                break
    return retired / trials


def test_a_skill_with_no_effect_is_rarely_retired() -> None:
    assert _retired_share(0.0, 0.9, 60) < 0.15  # stated: about 10 %
    assert _retired_share(0.0, 0.97, 60) < 0.05


def test_a_harmful_skill_is_mostly_retired_within_60_eligible_episodes() -> None:
    assert _retired_share(-0.22, 0.95, 60) > 0.65  # stated: about 74 %
    assert _retired_share(-0.5, 0.95, 60) > 0.95


def _retired_share_tasks(delta: float, stratified: bool, episodes: int = 120) -> float:
    """Nine tasks, two of them where the skill matters (pass rate 0.7 held out, 0.7 + delta
    injected), seven it changes nothing on (0.98 either way); each episode a random task.
    `stratified`: count only episodes whose task failed before (`stratum`), else all."""
    from evolve.train._train import stratum

    rng = random.Random(29)
    retired, trials = 0, 400
    for trial in range(trials):
        counts = dict.fromkeys(SKILL_COUNTERS, 0)
        failed: set[str] = set()
        for k in range(episodes):
            task = rng.randrange(9)
            share = holdout_shares([_Unit(counts)], 0.2, 0.9)["s"]
            out = ablated(trial * 10_000 + k, [("s", share), ("o1", 0.2), ("o2", 0.2)])
            held = [out] if out else []
            injected = [i for i in ("s", "o1", "o2") if i != out]
            p = 0.98 if task >= 2 else (0.7 if out == "s" else 0.7 + delta)
            passed = rng.random() < p
            seen = (injected, held)
            kept, _ = stratum(failed, f"t{task}", seen, passed)
            outcomes = kept if stratified else [(injected, held, passed)]
            for name, n in tally(outcomes).get("s", {}).items():
                counts[name] += n
            if Score(*(counts[n] for n in SKILL_COUNTERS)).harmful:
                retired += 1
                break
    return retired / trials


def test_the_failed_before_stratum_retires_more_harm_without_more_false_retirements() -> None:
    # A skill that hurts only on the tasks that fail: counting every episode dilutes the harm.
    harmful_all = _retired_share_tasks(-0.3, stratified=False)
    harmful_stratum = _retired_share_tasks(-0.3, stratified=True)
    null_all = _retired_share_tasks(0.0, stratified=False)
    null_stratum = _retired_share_tasks(0.0, stratified=True)
    assert harmful_stratum > harmful_all + 0.05  # stated: about 48 % against 38 %
    assert null_stratum <= null_all + 0.02  # stated: about 14 % either way
    assert null_stratum < 0.17
