"""The scoreboard's stated error rates (its module doc), by simulation of its own rule.

A skill among three candidates (the other two at the base share); each episode draws a task,
the skill's share (`holdout_shares`, with the per-task record and the episode's task), the
hold-out (`ablated`), and whether it passed (the task's rate with the skill held out or
injected); it is counted as training counts it (`stratum`, `tally`, `tally_tasks`) and
`Score.harmful` is checked after every episode (as `settle` does after every count).
`pooled` replays the rule it replaced: Newcombe's interval on the pooled counters (tasks
that failed before only), the shares from the pooled record. Seeded: the figures are exact
for this seed, the bounds leave room for the simulation's own noise.
"""

from __future__ import annotations

import random
from collections.abc import Sequence

import pytest

from evolve.skills._scoreboard import (
    MIN_EACH,
    SKILL_COUNTERS,
    Score,
    holdout_shares,
    tally,
)
from evolve.skills._select import ablated
from evolve.skills._strata import Strata, added, tally_tasks
from evolve.stats import newcombe
from evolve.train._train import stratum

# Slow end to end: `-m "not slow"` leaves it out of a quick local run (CI runs it).
pytestmark = pytest.mark.slow


class _Unit:
    kind = "skill"

    def __init__(self, counts: dict[str, int]) -> None:
        self.id = "s"
        for name in SKILL_COUNTERS:
            setattr(self, name, counts[name])


def _pooled_harmful(c: dict[str, int]) -> bool:
    if c["injected"] < MIN_EACH or c["held_out"] < MIN_EACH:
        return False
    iv = newcombe(c["injected_pass"], c["injected"], c["held_out_pass"], c["held_out"], 0.9)
    return iv is not None and iv[1] < 0


def retired_share(
    held: Sequence[float],
    injected: Sequence[float],
    episodes: int,
    *,
    pooled: bool = False,
    trials: int = 300,
    seed: int = 29,
) -> float:
    """The share of `trials` streams of `episodes` eligible episodes (a random task each; task
    i passes at held[i] with the skill held out, injected[i] with it) that retire it."""
    rng = random.Random(seed)
    retired = 0
    for trial in range(trials):
        counts = dict.fromkeys(SKILL_COUNTERS, 0)
        strata: Strata = {}
        failed: dict[str, int] = {}
        for k in range(episodes):
            t = rng.randrange(len(held))
            task = f"t{t}"
            unit = [_Unit(counts)]
            if pooled:
                share = holdout_shares(unit, 0.2, 0.9)["s"]
            else:
                share = holdout_shares(unit, 0.2, 0.9, strata, task)["s"]
            out = ablated(trial * 10_000 + k, [("s", share), ("o1", 0.2), ("o2", 0.2)])
            out_ids = [out] if out else []
            in_ids = [i for i in ("s", "o1", "o2") if i != out]
            passed = rng.random() < (held[t] if out == "s" else injected[t])
            kept, _ = stratum(failed, task, (in_ids, out_ids), passed)
            for name, n in tally(kept).get("s", {}).items():
                counts[name] += n
            strata = added(strata, {s: c for s, c in tally_tasks(kept).items() if s == "s"})
            if pooled:
                harmful = _pooled_harmful(counts)
            else:
                cells = tuple(c for _t, c in sorted(strata.get("s", {}).items()))
                a, b, c, d = (counts[n] for n in SKILL_COUNTERS)
                harmful = Score(a, b, c, d, strata=cells).harmful
            if harmful:
                retired += 1
                break
    return retired / trials


# Nine tasks of one app, as in the sim: two where the skill matters (the verify tasks, which
# pass when it is held out), seven it changes nothing on, each nearly always passing or
# nearly always failing (tasks differ: the pooled arms' task mixes differ by chance).
STEADY = [0.95, 0.95, 0.02, 0.98, 0.05, 0.98, 0.02, 0.98, 0.9]
# The same with noisy tasks (pass rates from 0.05 to 0.95, noise within each task too).
NOISY = [0.05, 0.95, 0.3, 0.5, 0.7, 0.1, 0.6, 0.98, 0.4]


def _hurt(rates: list[float], to: float) -> list[float]:
    return [to, to, *rates[2:]]


def test_a_skill_with_no_effect_is_rarely_retired() -> None:
    assert retired_share([0.9], [0.9], 60) < 0.13  # stated: about 9 % (pooled 9 %)
    assert retired_share(STEADY, STEADY, 120) < 0.16  # stated: about 11 % (pooled 22 %)
    # Noisy tasks: no better than pooled (stated: about 22 %, pooled 24 %), and bounded.
    assert retired_share(NOISY, NOISY, 120) < 0.27


def test_a_harmful_skill_is_mostly_retired() -> None:
    assert retired_share([0.95], [0.73], 60) > 0.7  # stated: about 79 % (pooled 75 %)
    assert retired_share([0.95], [0.45], 60) > 0.95


def test_harm_on_two_of_nine_tasks_is_retired_where_the_pooled_rule_misses_it() -> None:
    # Harm that lives on 2 of 9 tasks: compared within each task, the seven steady tasks add
    # no noise; pooled, the two arms' different task mixes swamp it.
    hurt = _hurt(STEADY, 0.35)
    within = retired_share(STEADY, hurt, 120)
    pooled = retired_share(STEADY, hurt, 120, pooled=True)
    assert within > 0.72 and within > pooled + 0.1  # stated: about 80 % against 65 %
    null_within = retired_share(STEADY, STEADY, 120)
    null_pooled = retired_share(STEADY, STEADY, 120, pooled=True)
    assert null_within < null_pooled - 0.05  # and fewer false retirements: 11 % against 22 %
