"""Picking cards: round-robin across topics spreads over mechanisms; relevance ranks by the
brief alone (the ablation's baseline)."""

from __future__ import annotations

import pytest

from evolve.research import Brief, Card, pick, starter_pool, topics


def card(cid: str, summary: str, mechanism: str) -> Card:
    return Card(
        cid, f"On {mechanism}", ("A",), 2024, f"arXiv:{cid}", summary, "workflow", mechanism
    )


# One crowded mechanism (five cards about verifying) and two others with two cards each.
VERIFY = [
    card(
        f"v{i}",
        f"Verify each action and check the draft before acting, variant {i}.",
        "verify check",
    )
    for i in range(5)
]
PLAN = [
    card(f"p{i}", f"Write a plan of steps, then follow the plan step by step ({i}).", "plan steps")
    for i in range(2)
]
DEBATE = [
    card(
        f"d{i}",
        f"Several solvers debate proposals and a critic aggregates them ({i}).",
        "debate critic",
    )
    for i in range(2)
]
POOL = VERIFY + PLAN + DEBATE
BRIEF = Brief(["workflow"], "verify and check each action before acting")


def _topic_of(found: list[Card]) -> list[str]:
    return [c.id[0] for c in found]


def test_the_pool_has_the_three_topics() -> None:
    groups = sorted(sorted(c.id for c in t.cards) for t in topics(POOL, "workflow"))
    assert groups == [["d0", "d1"], ["p0", "p1"], [f"v{i}" for i in range(5)]]


def test_round_robin_spreads_where_relevance_piles_onto_one_topic() -> None:
    spread = pick(POOL, "workflow", 3, strategy="topics", brief=BRIEF)
    piled = pick(POOL, "workflow", 3, strategy="relevance", brief=BRIEF)
    assert sorted(_topic_of(spread)) == ["d", "p", "v"]
    assert spread[0].id.startswith("v")  # the topic closest to the brief first
    assert _topic_of(piled) == ["v", "v", "v"]


def test_round_robin_takes_a_second_card_only_after_every_topic_gave_one() -> None:
    found = pick(POOL, "workflow", 9, strategy="topics")
    kinds = _topic_of(found)
    assert sorted(kinds[:3]) == ["d", "p", "v"] and sorted(kinds[3:6]) == ["d", "p", "v"]
    assert kinds[6:] == ["v", "v", "v"]
    assert sorted(c.id for c in found) == sorted(c.id for c in POOL)


def test_exclude_leaves_out_cards_tried_and_keeps_the_topics() -> None:
    first = pick(POOL, "workflow", 3, strategy="topics", brief=BRIEF)
    second = pick(
        POOL, "workflow", 3, strategy="topics", brief=BRIEF, exclude=[c.id for c in first]
    )
    assert not {c.id for c in first} & {c.id for c in second}
    assert sorted(_topic_of(second)) == ["d", "p", "v"]
    every = [c.id for c in POOL]
    assert pick(POOL, "workflow", 3, strategy="relevance", exclude=every) == []


def test_pick_is_deterministic_and_bounded() -> None:
    pool = starter_pool()
    for strategy in ("topics", "relevance"):
        a = pick(pool, "memory", 3, strategy=strategy, brief=BRIEF, seed=1)
        b = pick(list(reversed(pool)), "memory", 3, strategy=strategy, brief=BRIEF, seed=1)
        assert a == b and len(a) == 3 and all(c.module == "memory" for c in a)
    assert pick(pool, "memory", 0, strategy="topics") == []
    assert len(pick(pool, "memory", 100, strategy="topics")) == sum(
        c.module == "memory" for c in pool
    )


def test_bad_arguments_are_refused() -> None:
    with pytest.raises(ValueError, match="strategy"):
        pick(POOL, "workflow", 1, strategy="random")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="zero or more"):
        pick(POOL, "workflow", -1, strategy="topics")
    with pytest.raises(ValueError, match="not a module"):
        pick(POOL, "planner", 1, strategy="topics")
