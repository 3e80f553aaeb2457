"""The scoreboard's statistics, counters and board rows (no git needed)."""

from __future__ import annotations

from typing import Any

from evolve.skills._scoreboard import (
    MIN_EACH,
    SKILL_COUNTERS,
    Score,
    board,
    counted,
    tally,
)


def _one(a: int, b: int, c: int, d: int) -> Score:
    """The record of a skill seen on one task only (pooled = within)."""
    return Score(a, b, c, d, strata=((a, b, c, d),))


def test_harmful_needs_min_each_and_an_interval_below_zero() -> None:
    assert not _one(1, 0, 1, 1).harmful  # too few episodes
    assert _one(MIN_EACH, 0, MIN_EACH, MIN_EACH).harmful  # the bound of the retire test
    assert not _one(10, 8, 10, 9).harmful  # a small drop, not confident
    assert not _one(10, 10, 10, 0).harmful  # helpful
    assert _one(30, 10, 30, 25).harmful
    assert not Score(30, 10, 30, 25).harmful  # retirement decides within tasks: none here
    row = Score(4, 1, 2, 2).as_dict()
    assert row["lift"] == -0.75 and row["injections"] == 4 and len(row["interval"]) == 2


def test_tally_counts_each_arm_and_each_skill_once_per_episode() -> None:
    # An episode with a skill held out counts for that skill only (test_scoreboard_ablation).
    inc = tally(
        [
            (["a", "a", "b"], [], True, "t", True),
            (["a"], [], False, "t", True),
            ([], ["a"], True, "t", True),
            (["b"], ["c"], True, "t", True),
        ]
    )
    assert inc["a"] == {"injected": 2, "injected_pass": 1, "held_out": 1, "held_out_pass": 1}
    assert inc["b"] == {"injected": 1, "injected_pass": 1, "held_out": 0, "held_out_pass": 0}
    assert inc["c"]["held_out"] == 1 and inc["c"]["held_out_pass"] == 1

    class U:
        injected = 3
        injected_pass = None

    assert counted(U(), inc["a"]) == {
        "injected": 5, "injected_pass": 1, "held_out": 1, "held_out_pass": 1
    }  # fmt: skip
    assert set(inc["a"]) == set(SKILL_COUNTERS)


def test_board_lists_only_skills_with_their_shelf() -> None:
    class U:
        def __init__(self, **kw: Any) -> None:
            self.__dict__.update(kw)

    rows = board(
        [
            U(id="t1", kind="skill", shelf="topic", topic="venmo", status="active", recipe="skills",
              trigger="paying", text="Look up first.", injected=4, injected_pass=4, held_out=1,
              held_out_pass=0),
            U(id="g1", kind="skill", shelf="general", topic=None, status="retired", recipe="hand",
              trigger="any write", text="Skip checks."),
            U(id="m", kind="bullet", status="active", recipe="ace", text="x"),
        ]
    )  # fmt: skip
    assert [r["id"] for r in rows] == ["g1", "t1"]
    assert rows[1]["where"] == "topics/venmo" and rows[1]["lift"] == 1.0
    assert rows[0]["status"] == "retired" and rows[0]["interval"] is None
    assert set(rows[0]) >= {"id", "shelf", "topic", "status", "trigger", "injections",
                            "pass_rate_injected", "pass_rate_held_out", "lift", "interval"}  # fmt: skip
