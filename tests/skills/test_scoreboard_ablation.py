"""The scoreboard's experiment: one skill held out per episode, compared with clean episodes,
and a larger hold-out share for a skill whose evidence is pending.

- `ablated`: one uniform draw per episode holds out at most one of the episode's candidates,
  each with its own share (scaled down so the shares together cover at most MAX_ABLATION);
- `tally`: an episode with a skill held out counts for that skill's held-out arm only; the
  injected arm counts the episodes where nothing was held out (the library as evaluated),
  so a held-out episode differs from an injected one by exactly that skill;
- `holdout_shares`: PENDING_SHARE while a skill has fewer than PENDING_HELD_OUT held-out
  episodes or a negative lift, the configured share otherwise.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from evolve.skills._scoreboard import (
    PENDING_HELD_OUT,
    PENDING_SHARE,
    holdout_shares,
    tally,
)
from evolve.skills._select import MAX_ABLATION, Skill, SkillPicker, ablated

PAY = "Pay Sam Lee back $12.50 on Venmo for lunch."


def test_at_most_one_skill_is_held_out_and_each_at_its_share() -> None:
    shares = [("a", 0.2), ("b", 0.1), ("c", 0.2)]
    draws = Counter(ablated(seed, shares) for seed in range(20_000))
    assert set(draws) == {"a", "b", "c", None}
    for ident, share in shares:
        assert abs(draws[ident] / 20_000 - share) < 0.012
    assert draws == Counter(ablated(seed, shares) for seed in range(20_000))  # seeded


def test_shares_beyond_the_cap_are_scaled_down() -> None:
    shares = [("a", 0.5), ("b", 0.5), ("c", 0.2)]  # 1.2 in all
    draws = Counter(ablated(seed, shares) for seed in range(20_000))
    assert abs(draws[None] / 20_000 - (1 - MAX_ABLATION)) < 0.012
    assert abs(draws["a"] / 20_000 - 0.5 * MAX_ABLATION / 1.2) < 0.012
    assert ablated(1, []) is None and ablated(1, [("a", 0.0)]) is None


@given(st.integers(0, 2**31), st.floats(0.0, 1.0), st.integers(0, 5))
def test_the_picker_holds_out_at_most_one_and_never_backfills(
    seed: int, share: float, b: int
) -> None:
    skills = [Skill(f"s{i}", "sending a payment on venmo", f"Lesson {i}.") for i in range(5)]
    picked = SkillPicker(skills, max_injected=b, holdout_share=share).pick(PAY, seed)
    assert len(picked.held_out) <= 1
    assert len(picked.injected) + len(picked.held_out) == b
    assert set(picked.injected) | set(picked.held_out) == {f"s{i}" for i in range(b)}


def test_a_picker_uses_each_skills_own_share() -> None:
    skills = [Skill("hot", "paying on venmo", "x"), Skill("cold", "paying on venmo", "y")]
    picker = SkillPicker(skills, max_injected=2, holdout_share=0.1, shares={"hot": 0.5})
    out = Counter(
        held for seed in range(4000) for held in picker.pick(PAY, seed).held_out
    )  # fmt: skip
    assert 0.46 < out["hot"] / 4000 < 0.54 and 0.07 < out["cold"] / 4000 < 0.13


def test_the_injected_arm_counts_only_episodes_with_nothing_held_out() -> None:
    counted = tally(
        [
            (["w", "v"], [], False, "t", True),  # clean: both injected, failed
            (["v"], ["w"], True, "t", True),  # w held out: w's held-out arm only
            (["w"], ["v"], False, "t", True),  # v held out: v's held-out arm only
            (["w"], [], True, "t", False),  # its task never failed before: not pooled
        ]
    )
    assert counted["w"] == {"injected": 1, "injected_pass": 0, "held_out": 1, "held_out_pass": 1}
    assert counted["v"] == {"injected": 1, "injected_pass": 0, "held_out": 1, "held_out_pass": 0}


class _Unit:
    kind = "skill"

    def __init__(self, ident: str, counts: tuple[int, int, int, int]) -> None:
        self.id = ident
        self.injected, self.injected_pass, self.held_out, self.held_out_pass = counts


@pytest.mark.parametrize(
    ("counts", "pending"),
    [
        ((0, 0, 0, 0), True),  # no evidence yet
        ((20, 20, PENDING_HELD_OUT - 1, 0), True),  # too few held out
        ((20, 15, PENDING_HELD_OUT, PENDING_HELD_OUT), True),  # negative lift
        ((20, 20, PENDING_HELD_OUT, 1), False),  # positive: back to the base share
        ((20, 10, 10, 5), False),  # no difference
    ],
)
def test_a_pending_skill_is_held_out_at_the_pending_share(
    counts: tuple[int, int, int, int], pending: bool
) -> None:
    shares = holdout_shares([_Unit("s", counts)], 0.2, 0.9)
    assert shares["s"] == (PENDING_SHARE if pending else 0.2)
    assert holdout_shares([_Unit("s", counts)], 0.0, 0.9) == {}  # hold-out off: stays off
    assert holdout_shares([_Unit("s", counts)], 0.7, 0.9)["s"] == 0.7  # never below the base


def test_training_pickers_carry_the_adaptive_shares_evaluation_none(tmp_path: Any) -> None:
    from evolve.skills._select import make_picker
    from evolve.workspace import init_workspace

    ws = init_workspace(tmp_path / "ws")
    unit = _Unit("s", (0, 0, 0, 0))
    unit.text, unit.status, unit.trigger = "x", "active", "paying"  # type: ignore[attr-defined]
    unit.shelf, unit.topic = "general", None  # type: ignore[attr-defined]
    train = make_picker(ws.config, [unit], training=True, recipe="skills")
    evaluation = make_picker(ws.config, [unit], training=False, recipe="skills")
    assert train is not None and train.share("s") == PENDING_SHARE
    assert evaluation is not None and evaluation.share("s") == 0.0
