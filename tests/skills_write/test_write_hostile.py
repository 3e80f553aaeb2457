"""Hostile evolver replies that earlier checks let through (found by trying them)."""

from __future__ import annotations

from skillkit import APPS, candidate, maker, skill

from evolve.skills import plan_batch
from evolve.workspace import ShelfCaps

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
