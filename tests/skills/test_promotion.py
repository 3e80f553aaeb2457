"""Promotion to the general shelf: across topics in one batch, and through the staging area."""

from __future__ import annotations

from evolve.skills import dump_staging, parse_staging, plan_batch
from evolve.workspace import ShelfCaps
from factories import candidate, maker, skill

APPS = frozenset({"venmo", "phone", "gmail", "simple_note"})
GENERAL = "After the last write, read the changed item back before completing the task."


def _reply(*refs: str, general: bool = True, target: str | None = None) -> dict[str, object]:
    out: dict[str, object] = {
        "verdicts": [
            {"candidate": r, "verdict": "ADD", "shape": "verify-final-state"} for r in refs
        ]
    }
    if general:
        out["general"] = [{"shape": "verify-final-state", "lesson": GENERAL,
                           "trigger": "a task that changes stored state", "target": target}]  # fmt: skip
    return out


def test_a_shape_under_two_topics_in_one_batch_is_promoted() -> None:
    cands = [
        candidate("c1", "venmo", "After paying in venmo, read the payment back.", episode=1),
        candidate("c2", "phone", "After texting, read the sent text back.", episode=2,
                  task_id="text_update-1", instruction="Text Sam Lee to say hi."),
    ]  # fmt: skip
    plan = plan_batch([], cands, _reply("c1", "c2"), caps=ShelfCaps(), maker=maker(),
                      staging={}, topics=APPS)  # fmt: skip
    [(shape, ident)] = plan.promoted
    assert shape == "verify-final-state"
    general = next(op.unit for op in plan.ops if op.id == ident)
    assert general.shelf == "general" and general.topic is None and general.text == GENERAL
    assert general.evidence == ["episode 1 (pay_back-1)", "episode 2 (text_update-1)"]
    assert sorted(op.unit.shelf or "" for op in plan.ops) == ["general", "topic", "topic"]
    assert "verify-final-state" not in plan.staging
    assert ("promote", ident) in plan.trailer_ops()


def test_a_shape_under_one_topic_is_staged_then_promoted_from_the_staging_area() -> None:
    first = plan_batch(
        [], [candidate("c1", "venmo", "After paying, read the payment back.")],
        _reply("c1"), caps=ShelfCaps(), maker=maker(0), staging={}, topics=APPS,
    )  # fmt: skip
    assert first.promoted == []
    staged = parse_staging(dump_staging(first.staging))  # as written to _staging.yaml
    assert staged["verify-final-state"].topics == ["venmo"]
    assert staged["verify-final-state"].count == 1
    # the next (small) batch sees the shape under another topic: promoted across batches
    second = plan_batch(
        [], [candidate("c1", "gmail", "After e-mailing, read the sent mail back.", episode=5)],
        _reply("c1"), caps=ShelfCaps(), maker=maker(1), staging=staged, topics=APPS,
    )  # fmt: skip
    [(_, ident)] = second.promoted
    unit = next(op.unit for op in second.ops if op.id == ident)
    assert unit.shelf == "general"
    assert unit.evidence == ["episode 1 (pay_back-1)", "episode 5 (pay_back-1)"]
    assert "verify-final-state" not in second.staging


def test_the_staging_threshold_holds_back_a_promotion() -> None:
    staged = {"verify-final-state": parse_staging("verify-final-state: {topics: {venmo: 1}}")[
        "verify-final-state"]}  # fmt: skip
    plan = plan_batch(
        [], [candidate("c1", "gmail", "Read the sent mail back.")], _reply("c1"),
        caps=ShelfCaps(), maker=maker(), staging=staged, topics=APPS,
        promote_min_topics=2, staging_threshold=3,
    )  # fmt: skip
    assert plan.promoted == [] and plan.staging["verify-final-state"].count == 2


def test_a_general_lesson_naming_an_app_or_the_task_is_refused_and_stays_staged() -> None:
    cands = [candidate("c1", "venmo", "Read the payment back."),
             candidate("c2", "phone", "Read the text back.", task_id="text_update-1")]  # fmt: skip
    reply = _reply("c1", "c2", general=False)
    reply["general"] = [{"shape": "verify-final-state", "trigger": "a task that writes",
                         "lesson": "In venmo, read the payment to Jamie back."}]  # fmt: skip
    plan = plan_batch([], cands, reply, caps=ShelfCaps(), maker=maker(), staging={}, topics=APPS)
    assert plan.promoted == []
    assert any(r.op == "promote" and "context-free" in r.reason for r in plan.refused)
    assert plan.staging["verify-final-state"].topics == ["phone", "venmo"]


def test_a_full_general_shelf_refuses_the_add_but_takes_a_merge() -> None:
    full = [skill(f"g{i}", f"General lesson number {'abcde'[i]}.") for i in range(5)]
    cands = [candidate("c1", "venmo", "Read the payment back."),
             candidate("c2", "phone", "Read the text back.", task_id="text_update-1")]  # fmt: skip
    plan = plan_batch(full, cands, _reply("c1", "c2"), caps=ShelfCaps(), maker=maker(),
                      staging={}, topics=APPS)  # fmt: skip
    assert plan.promoted == []
    assert any("general shelf is full (5/5)" in r.reason for r in plan.refused)
    merged = plan_batch(full, cands, _reply("c1", "c2", target="g3"), caps=ShelfCaps(),
                        maker=maker(), staging={}, topics=APPS)  # fmt: skip
    assert merged.promoted == [("verify-final-state", "g3")]
    assert next(op for op in merged.ops if op.id == "g3").unit.text == GENERAL


def test_a_revert_takes_back_one_batchs_sightings_and_keeps_the_later_ones() -> None:
    from evolve.skills._staging import take_back

    before = b"a: {topics: {venmo: 1}, evidence: [e1]}\nb: {topics: {phone: 1}, evidence: [e2]}\n"
    # the reverted batch saw `a` under venmo again and promoted `b` (took it out)
    after = b"a: {topics: {venmo: 2}, evidence: [e1, e5]}\n"
    # a later batch saw `a` under gmail and a new shape `c`
    now = b"a: {topics: {gmail: 1, venmo: 2}, evidence: [e1, e5, e9]}\nc: {topics: {phone: 1}, evidence: [e9]}\n"
    back = parse_staging((take_back(before, after, now) or b"").decode())
    assert back["a"].by_topic == {"gmail": 1, "venmo": 1} and back["a"].evidence == ["e1", "e9"]
    assert back["b"].by_topic == {"phone": 1}  # the promotion is undone: its sightings return
    assert back["c"].by_topic == {"phone": 1}
    assert (
        take_back(
            None,
            b"a: {topics: {venmo: 1}, evidence: [e1]}\n",
            b"a: {topics: {venmo: 1}, evidence: [e1]}\n",
        )
        is None
    )


def test_a_general_lesson_may_say_note_but_not_name_the_note_app() -> None:
    cands = [candidate("c1", "simple_note", "Read the note back."),
             candidate("c2", "gmail", "Read the mail back.", task_id="email_thanks-1")]  # fmt: skip
    for lesson, ok in [
        ("After saving a note or sending a mail, read it back.", True),
        ("After a simple_note write, read it back.", False),
        ("After a Simple Note write, read it back.", False),
    ]:
        reply = _reply("c1", "c2", general=False)
        reply["general"] = [{"shape": "verify-final-state", "lesson": lesson, "trigger": "a write"}]
        plan = plan_batch(
            [], cands, reply, caps=ShelfCaps(), maker=maker(), staging={}, topics=APPS
        )
        assert bool(plan.promoted) is ok, (lesson, plan.refused)


def test_a_lesson_from_a_trajectory_that_called_no_app_is_not_a_second_topic() -> None:
    from evolve.skills._reflect import NO_APP_TOPIC

    cands = [
        candidate("c1", "venmo", "After paying in venmo, read the payment back.", episode=1),
        candidate("c2", NO_APP_TOPIC, "After the write, read the item back.", episode=2),
    ]
    plan = plan_batch([], cands, _reply("c1", "c2"), caps=ShelfCaps(), maker=maker(),
                      staging={}, topics=APPS)  # fmt: skip
    assert plan.promoted == []  # one app only: staged, not promoted
    assert plan.staging["verify-final-state"].topics == [NO_APP_TOPIC, "venmo"]
    later = plan_batch(
        [], [candidate("c1", "gmail", "After e-mailing, read the sent mail back.", episode=5)],
        _reply("c1"), caps=ShelfCaps(), maker=maker(1), staging=plan.staging, topics=APPS,
    )  # fmt: skip
    [(shape, _)] = later.promoted  # a second app: now it recurs across apps
    assert shape == "verify-final-state"
