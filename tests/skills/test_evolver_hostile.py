"""Hostile evolver replies and reverts that earlier checks let through (found by trying)."""

from __future__ import annotations

import pytest

from evolve.errors import EvolveError
from evolve.history import revert
from evolve.memory import MemoryUnit, dump_unit, load_units
from evolve.skills import plan_batch
from evolve.workspace import ShelfCaps, Workspace
from factories import APPS, candidate, maker, skill

WORDS = ("one", "two", "three", "four")

GENERAL = "Read the item back after the last write before completing the task."


def test_a_merge_or_revise_into_a_general_skill_may_not_name_an_app() -> None:
    """The general shelf is context-free: promotion and the sleep pass refuse an app's name
    there, and so must a batch verdict whose target is a general skill."""
    units = [skill("g1", GENERAL)]
    cand = candidate("c1", "venmo", "Set the payment's visibility before sending it.")
    for verdict, field, text in [
        ("REVISE", "lesson", "In venmo, set the visibility explicitly before every payment."),
        ("MERGE", "trigger", "a venmo payment"),
        ("MERGE", "lesson", "Read back the simple note you wrote before completing the task."),
    ]:
        entry = {"candidate": "c1", "verdict": verdict, "target": "g1", field: text}
        if field == "trigger":
            entry["lesson"] = GENERAL
        plan = plan_batch(
            units, [cand], {"verdicts": [entry]}, caps=ShelfCaps(), maker=maker(),
            staging={}, topics=frozenset(APPS),
        )  # fmt: skip
        assert plan.ops == [], (verdict, text)
        assert plan.verdicts[0].verdict == "REFUSED" and "general" in plan.verdicts[0].why
    # On the topic's own shelf the app may be named; a context-free text is fine on general.
    topic = [skill("v1", "Set the visibility explicitly.", topic="venmo"), *units]
    ok = {"verdicts": [{"candidate": "c1", "verdict": "REVISE", "target": "v1",
                        "lesson": "In venmo, set the visibility explicitly before paying."}]}  # fmt: skip
    plan = plan_batch(topic, [cand], ok, caps=ShelfCaps(), maker=maker(), staging={},
                      topics=frozenset(APPS))  # fmt: skip
    assert [(op.op, op.id) for op in plan.ops] == [("modify", "v1")]
    fine = {"verdicts": [{"candidate": "c1", "verdict": "REVISE", "target": "g1",
                          "lesson": "Check the audience of a write before sending it."}]}  # fmt: skip
    plan = plan_batch(units, [cand], fine, caps=ShelfCaps(), maker=maker(), staging={},
                      topics=frozenset(APPS))  # fmt: skip
    assert [(op.op, op.id) for op in plan.ops] == [("modify", "g1")]


def test_a_revert_that_would_put_a_shelf_over_its_cap_is_refused(workspace: Workspace) -> None:
    """Undoing the revert of a skill's addition lifts its tombstone; if the shelf was filled
    since, the skill would make it overflow: refused in one sentence, nothing written."""
    store = workspace.store

    def commit(*units: MemoryUnit) -> str:
        for unit in units:
            path = workspace.root / str(unit.path())
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(dump_unit(unit), encoding="utf-8")
        sha = store.commit([str(u.path()) for u in units], f"add {units[0].id}")
        assert sha is not None
        return sha

    commit(*(skill(f"v{i}", f"Lesson number {WORDS[i]} about payments.", topic="venmo")
             for i in range(4)))  # fmt: skip
    added = commit(skill("v4", "Lesson number five about payments.", topic="venmo"))
    undo = revert(workspace, added).commit
    commit(skill("v5", "Lesson number six about payments.", topic="venmo"))  # 5/5 again
    head = store.head()
    with pytest.raises(EvolveError, match=r"over its cap .*topics/venmo \(6 skills, cap 5\)"):
        revert(workspace, undo)
    assert store.head() == head and not store.dirty_paths(["memory"])
    live = [u for u in load_units(workspace.root) if u.shelf and u.status == "active"]
    assert len(live) == 5


def test_the_filter_sees_a_name_in_its_possessive_or_hyphenated_form() -> None:
    from evolve.skills import screen, specifics

    task = specifics(
        "pay_back-1", "Pay Jamie Lee back $12.50 for lunch, then reply to Priya's note.", "",
        APPS,
    )  # fmt: skip
    for text in (
        "Check Jamie's usual card before paying.",
        "Check Jamie’s usual card before paying.",
        "Use a Jamie-style note for every payment.",
        "Reply to Priya before closing the task.",  # the instruction said "Priya's"
        "Reply to Priya's contacts first.",
    ):
        assert screen(text, task) is not None, text
    for text in ("Check the payee's usual card before paying.", "Send a follow-up text."):
        assert screen(text, task) is None, text
