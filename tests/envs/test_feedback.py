"""Judging and the two feedback tiers: instance lines never leak the target value."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from evolve.envs import Feedback, Judgement, Task
from evolve.envs.persona_world import (
    MAIN_TOOL,
    RULES_BY_NAME,
    Computed,
    History,
    PersonaWorld,
    PersonaWorldEnv,
    Ref,
    contact_of,
    reference_args,
)

REPO = Path(__file__).resolve().parents[2]
ENV = PersonaWorldEnv(REPO / "evalset")
KINDS = ("sms", "payment", "note", "email")
TASKS = [t for split in ("train", "dev", "holdout") for t in ENV.tasks(split)]


def _login(world: PersonaWorld, persona: str) -> str:
    p = ENV.persona(persona)
    call = world.call("venmo__login", {"username": p.email, "password": p.venmo_password})
    assert call.ok
    return str(call.result["access_token"])


def _do(task: Task, persona: str, history: History, **over: Any) -> PersonaWorld:
    """Do the task with the world's defaults (no preference applied), then complete it."""
    world = ENV.new_world(task, persona, history)
    args = reference_args(task)
    if task.kind == "payment":
        args["access_token"] = _login(world, persona)
    args.update(over)
    assert world.call(MAIN_TOOL[task.kind], args).ok
    world.call("supervisor__complete_task", {})
    return world


def _judge_default(task: Task, persona: str, episode: int | None = None) -> Judgement:
    history = ENV.initial_history(persona)
    return ENV.judge(task, persona, _do(task, persona, history), history, episode)


def _target_strings(task: Task, persona: str, rule_name: str) -> list[str]:
    """The strings that would give the target value away for one rule."""
    pref = next(p for p in ENV.persona(persona).preferences if p.rule == rule_name)
    rule = RULES_BY_NAME[rule_name]
    value = pref.value_at(None)
    ctx = ENV.context(task, persona, ENV.initial_history(persona))
    out = [rule.resolve(ctx, value)]
    if isinstance(value, str):
        out.append(value)
    if isinstance(value, Ref):
        out.append(
            {"first_name": "first name", "initials": "initials", "full_name": "full"}[value.field]
        )
    if isinstance(value, Computed) and rule_name == "habitual_card":
        card = next(c for c in ctx.cards if str(c.payment_card_id) == rule.resolve(ctx, value))
        out += [card.name, card.last4]
    return [s for s in out if s]


def _contains_word(text: str, needle: str) -> bool:
    return re.search(rf"(?<!\w){re.escape(needle)}(?!\w)", text, re.I) is not None


CASES = [
    (persona, kind)
    for persona in ENV.personas()
    for kind in KINDS
    if any(RULES_BY_NAME[r].kind == kind for r in ENV.persona_rules(persona))
]


@pytest.mark.parametrize(("persona", "kind"), CASES, ids=[f"{p}-{k}" for p, k in CASES])
def test_default_call_violates_every_applicable_rule(persona: str, kind: str) -> None:
    task = next(t for t in TASKS if t.kind == kind)
    judgement = _judge_default(task, persona)
    expected = [r for r in ENV.persona_rules(persona) if RULES_BY_NAME[r].kind == kind]
    assert judgement.task_success and judgement.failure is None
    assert list(judgement.applicable) == expected
    assert [v.rule for v in judgement.violations] == expected
    assert not judgement.accepted


@pytest.mark.parametrize(("persona", "kind"), CASES, ids=[f"{p}-{k}" for p, k in CASES])
def test_instance_tier_never_contains_the_target_value(persona: str, kind: str) -> None:
    for task in (t for t in TASKS if t.kind == kind):
        judgement = _judge_default(task, persona)
        feedback = ENV.feedback(task, judgement, "instance")
        assert feedback.text
        for line, rule_name in feedback.provenance:
            for secret in _target_strings(task, persona, rule_name):
                assert not _contains_word(line, secret), (rule_name, secret, line)
                assert not _contains_word(feedback.text, secret), (rule_name, secret)


def test_instance_tier_hides_known_literal_preferences() -> None:
    """The examples of the brief, spelled out: none of these reaches an instance complaint."""
    secrets = {
        "blair": ["B", "[Personal]", "friends", "Dear", "date", "Blair"],
        "dana": ["[Home]", "DW", "checkbox", "friends"],
        "casey": ["Hey", "Cheers", "numbered", "private", "caps", "Hi"],
        "emery": ["Hello", "Thanks", "Dear", "friends", "Emery"],
        "alex": ["Hi", "Best", "bullets", "private", "Alex"],
    }
    for persona, words in secrets.items():
        texts = []
        for task in TASKS:
            judgement = _judge_default(task, persona)
            texts.append(ENV.feedback(task, judgement, "instance").text)
        joined = "\n".join(texts)
        assert joined.strip()
        for word in words:
            assert not re.search(rf"(?<![\w\[]){re.escape(word)}(?![\w\]])", joined), (
                persona,
                word,
            )


@pytest.mark.parametrize("actual", ["public", "friends"])
def test_visibility_complaint_shows_only_the_actual_visibility(actual: str) -> None:
    task = next(t for t in TASKS if t.kind == "payment")
    history = ENV.initial_history("alex")  # alex wants private (after episode 12: friends)
    world = _do(task, "alex", history, visibility=actual)
    judgement = ENV.judge(task, "alex", world, history, 0)
    [line] = [v.instance for v in judgement.violations if v.rule == "payment_visibility"]
    assert actual in line and "private" not in line and "more" in line


@pytest.mark.parametrize(("persona", "kind"), CASES, ids=[f"{p}-{k}" for p, k in CASES])
def test_corrective_tier_contains_each_statement(persona: str, kind: str) -> None:
    task = next(t for t in TASKS if t.kind == kind)
    judgement = _judge_default(task, persona)
    feedback = ENV.feedback(task, judgement, "corrective")
    lines = feedback.text.splitlines()
    for v in judgement.violations:
        pref = next(p for p in ENV.persona(persona).preferences if p.rule == v.rule)
        statement = RULES_BY_NAME[v.rule].statement(pref.value_at(None))
        assert v.corrective == statement
        assert statement in lines
    assert len(lines) == len(judgement.violations)


@pytest.mark.parametrize("tier", ["instance", "corrective"])
def test_provenance_maps_each_line_to_its_rule_and_stays_out_of_the_text(tier: Any) -> None:
    for persona in ENV.personas():
        for task in TASKS[::5]:
            judgement = _judge_default(task, persona)
            feedback: Feedback = ENV.feedback(task, judgement, tier)
            assert [line for line, _ in feedback.provenance] == feedback.text.splitlines()
            assert [rule for _, rule in feedback.provenance] == [
                v.rule for v in judgement.violations
            ]
            for rule in ENV.rule_names():
                assert rule not in feedback.text


def test_functional_failure_comes_first_with_task_provenance() -> None:
    task = next(t for t in TASKS if t.kind == "sms")
    history = ENV.initial_history("alex")
    world = ENV.new_world(task, "alex", history)
    args = reference_args(task)
    assert world.call(MAIN_TOOL["sms"], args).ok  # sent, but never marked complete
    judgement = ENV.judge(task, "alex", world, history, None)
    assert not judgement.task_success
    assert judgement.failure == "The task was never marked complete."
    feedback = ENV.feedback(task, judgement, "instance")
    assert feedback.provenance[0] == (judgement.failure, "task")
    assert [r for _, r in feedback.provenance[1:]] == ["sms_signoff", "sms_greeting"]


def test_nothing_done_means_failure_and_no_applicable_rule() -> None:
    task = next(t for t in TASKS if t.kind == "email")
    history = ENV.initial_history("blair")
    world = ENV.new_world(task, "blair", history)
    world.call("supervisor__complete_task", {})
    judgement = ENV.judge(task, "blair", world, history, None)
    assert judgement.failure == "The task wasn't done: nothing was sent or saved."
    assert judgement.applicable == () and judgement.violations == ()
    feedback = ENV.feedback(task, judgement, "corrective")
    assert feedback.text == judgement.failure
    assert feedback.provenance == ((judgement.failure, "task"),)


@pytest.mark.parametrize(
    ("kind", "over", "failure"),
    [
        ("sms", {"phone_number": "+1-555-0101"}, "The text went to the wrong person."),
        ("sms", {"message": "Something else."}, "The text didn't say what I asked."),
        ("payment", {"amount": 1.0}, "The payment was for the wrong amount."),
        (
            "payment",
            {"receiver_email": "omar.haddad@example.com"},
            "The payment went to the wrong person.",
        ),
        ("note", {"title": "Other"}, "The note has the wrong title."),
        ("note", {"content": "nothing"}, "The note is missing some items."),
        ("email", {"to": "omar.haddad@example.com"}, "The email went to the wrong person."),
        ("email", {"subject": "Other"}, "The email didn't say what I asked."),
    ],
)
def test_functional_failures(kind: str, over: dict[str, Any], failure: str) -> None:
    task = next(
        t
        for t in TASKS
        if t.kind == kind and t.params.get("contact") not in ("sam", "omar")  # not the target
    )
    history = ENV.initial_history("alex")
    judgement = ENV.judge(task, "alex", _do(task, "alex", history, **over), history, None)
    assert judgement.failure == failure and not judgement.task_success


def test_doing_the_task_twice_is_a_failure() -> None:
    task = next(t for t in TASKS if t.kind == "note")
    history = ENV.initial_history("alex")
    world = ENV.new_world(task, "alex", history)
    world.call(MAIN_TOOL["note"], reference_args(task))
    world.call(MAIN_TOOL["note"], reference_args(task))
    world.call("supervisor__complete_task", {})
    judgement = ENV.judge(task, "alex", world, history, None)
    assert judgement.failure == "The task was done more than once."


def test_accepted_episode_gives_empty_feedback() -> None:
    task = next(t for t in TASKS if t.kind == "sms")
    history = ENV.initial_history("alex")
    contact = contact_of(task)
    assert contact is not None
    msg = f"Hi {contact.first_name}, {task.params['message']}\n- Alex"
    judgement = ENV.judge(task, "alex", _do(task, "alex", history, message=msg), history, None)
    assert judgement.accepted
    for tier in ("instance", "corrective"):
        feedback = ENV.feedback(task, judgement, tier)
        assert feedback.text == "" and feedback.provenance == ()


def test_judge_uses_the_value_at_the_training_episode() -> None:
    """alex's visibility drifts from private to friends at episode 12."""
    task = next(t for t in TASKS if t.kind == "payment")
    history = ENV.initial_history("alex")
    world = _do(task, "alex", history, visibility="friends")
    broke = {
        episode: "payment_visibility"
        in {v.rule for v in ENV.judge(task, "alex", world, history, episode).violations}
        for episode in (0, 11, 12, 30, None)
    }
    assert broke == {0: True, 11: True, 12: False, 30: False, None: False}
    before = ENV.judge(task, "alex", world, history, 11)
    [v] = [v for v in before.violations if v.rule == "payment_visibility"]
    assert v.corrective == "Keep all my Venmo payments private."
