"""The sim's learner role: statements from complaint text only."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from evolve.envs import Task
from evolve.envs.persona_world import (
    MAIN_TOOL,
    RULES,
    RULES_BY_NAME,
    Computed,
    Directive,
    PersonaWorldEnv,
    Ref,
    Rule,
    Value,
    recognize,
    reference_args,
)
from evolve.llm import JsonSchema, Message
from evolve.sim import SimLLM, complaint_of, proposals_from_complaint, read_directives, slot_of

REPO = Path(__file__).resolve().parents[2]
ENV = PersonaWorldEnv(REPO / "evalset")
TASKS = [t for split in ("train", "dev", "holdout") for t in ENV.tasks(split)]
KINDS = ("sms", "payment", "note", "email")
STATEMENTS = JsonSchema("statements", {"type": "object"})

# What a learner guesses from each rule's instance complaint (docs/sim.md, table).
INSTANCE_GUESS: dict[str, Value] = {
    "sms_signoff": Ref("first_name"),
    "sms_greeting": "Hi",
    "habitual_card": Computed("habitual_card"),
    "running_total": Computed("running_total"),
    "private_note_format": "bullets",
    "note_title_format": "date",
    "note_checksum": Computed("checksum"),
    "email_signoff": "Best",
    "email_subject_prefix": "[Personal]",
    "email_cc_self": "self",
    "email_greeting": "Hi",
}


def _task(kind: str) -> Task:
    return next(t for t in TASKS if t.kind == kind)


def _default_feedback(persona: str, task: Task, tier: Any, **over: Any) -> tuple[str, list[str]]:
    """Complaint text for a call made with the world's defaults, and the violated rules."""
    history = ENV.initial_history(persona)
    world = ENV.new_world(task, persona, history)
    args = reference_args(task)
    if task.kind == "payment":
        p = ENV.persona(persona)
        login = world.call("venmo__login", {"username": p.email, "password": p.venmo_password})
        args["access_token"] = login.result["access_token"]
    args.update(over)
    assert world.call(MAIN_TOOL[task.kind], args).ok
    world.call("supervisor__complete_task", {})
    judgement = ENV.judge(task, persona, world, history, None)
    feedback = ENV.feedback(task, judgement, tier)
    return feedback.text, [v.rule for v in judgement.violations]


def _directive(statement: str) -> Directive:
    found = recognize(statement)
    assert len(found) == 1, (statement, found)
    return found[0]


def _ask(complaint: str, seed: int = 0) -> list[str]:
    llm = SimLLM(ENV, seed=seed)
    messages = [
        Message("system", "You write memory for an assistant."),
        Message("user", f"An episode went wrong.\n<complaint>\n{complaint}\n</complaint>"),
    ]
    completion = llm.complete(messages, json_schema=STATEMENTS, seed=seed)
    payload = json.loads(completion.text)
    assert set(payload) == {"statements"}
    return list(payload["statements"])


# --- corrective tier ------------------------------------------------------------------------

CASES = [
    (persona, kind)
    for persona in ENV.personas()
    for kind in KINDS
    if any(RULES_BY_NAME[r].kind == kind for r in ENV.persona_rules(persona))
]


@pytest.mark.parametrize(("persona", "kind"), CASES, ids=[f"{p}-{k}" for p, k in CASES])
def test_corrective_lines_come_back_as_statements_with_the_right_value(
    persona: str, kind: str
) -> None:
    text, violated = _default_feedback(persona, _task(kind), "corrective")
    proposals = proposals_from_complaint(text)
    assert [p.slot for p in proposals] == [RULES_BY_NAME[r].slot for r in violated]
    values = {p.rule: p.value_at(None) for p in ENV.persona(persona).preferences}
    for proposal, rule in zip(proposals, violated, strict=True):
        assert _directive(proposal.statement) == Directive(
            RULES_BY_NAME[rule].slot, values[rule], False
        )
    assert _ask(text) == [p.statement for p in proposals]


def test_corrective_memory_fixes_the_next_episode() -> None:
    """The statements, used as memory, make every format rule pass."""
    for persona in ENV.personas():
        for kind in KINDS:
            text, violated = _default_feedback(persona, _task(kind), "corrective")
            directives = read_directives("\n".join(_ask(text)))
            for rule in violated:
                pref = next(p for p in ENV.persona(persona).preferences if p.rule == rule)
                assert directives[RULES_BY_NAME[rule].slot].value == pref.value_at(None)


# --- instance tier --------------------------------------------------------------------------


def _instance_line(rule: Rule, **extra: str) -> str:
    ctx = ENV.context(_task(rule.kind), "alex", ENV.initial_history("alex"))
    return rule.instance(ctx, **extra)


@pytest.mark.parametrize("rule_name", list(INSTANCE_GUESS))
def test_rule_guess_from_an_instance_line(rule_name: str) -> None:
    rule = RULES_BY_NAME[rule_name]
    line = _instance_line(rule)
    match = rule.instance_regex().fullmatch(line)
    assert match is not None
    assert _directive(rule.guess(match)) == Directive(rule.slot, INSTANCE_GUESS[rule_name], False)


@pytest.mark.parametrize("rule_name", list(INSTANCE_GUESS))
def test_instance_line_gives_the_documented_guess(rule_name: str) -> None:
    rule = RULES_BY_NAME[rule_name]
    [proposal] = proposals_from_complaint(_instance_line(rule))
    assert proposal.slot == rule.slot
    assert _directive(proposal.statement) == Directive(rule.slot, INSTANCE_GUESS[rule_name], False)


VISIBILITY_STEPS = [
    ("public", "more", "friends"),
    ("friends", "more", "private"),
    ("private", "fewer", "friends"),
    ("friends", "fewer", "public"),
]


@pytest.mark.parametrize(("actual", "direction", "guess"), VISIBILITY_STEPS)
def test_visibility_guess_steps_by_actual_and_direction(
    actual: str, direction: str, guess: str
) -> None:
    rule = RULES_BY_NAME["payment_visibility"]
    line = _instance_line(rule, actual=actual, direction=direction)
    match = rule.instance_regex().fullmatch(line)
    assert match is not None
    assert _directive(rule.guess(match)) == Directive(rule.slot, guess, False)


@pytest.mark.parametrize(("actual", "direction", "guess"), VISIBILITY_STEPS)
def test_visibility_instance_line_gives_the_stepped_guess(
    actual: str, direction: str, guess: str
) -> None:
    rule = RULES_BY_NAME["payment_visibility"]
    [proposal] = proposals_from_complaint(_instance_line(rule, actual=actual, direction=direction))
    assert _directive(proposal.statement) == Directive(rule.slot, guess, False)


@pytest.mark.parametrize("kind", KINDS)
def test_instance_complaint_does_not_depend_on_the_persona_value(kind: str) -> None:
    """Personas holding different values get the same complaint, so the learner writes the
    same guess for both: every value but the guess is unreachable from this tier."""
    task = _task(kind)
    by_rule: dict[str, dict[str, tuple[Value, str]]] = {}
    for persona in ENV.personas():
        history = ENV.initial_history(persona)
        text, violated = _default_feedback(persona, task, "instance")
        values = {p.rule: p.value_at(None) for p in ENV.persona(persona).preferences}
        for rule, line in zip(violated, text.splitlines(), strict=True):
            if rule == "payment_visibility":
                continue  # shows the agent's actual visibility, which is the same default here
            by_rule.setdefault(rule, {})[persona] = (values[rule], line)
        assert history == ENV.initial_history(persona)
    for rule, seen in by_rule.items():
        lines = {line for _, line in seen.values()}
        assert len(lines) == 1, (rule, lines)
        held = {repr(v) for v, _ in seen.values()}
        if len(held) > 1:  # different values, one complaint: at most one value is reachable
            guess = INSTANCE_GUESS[rule]
            unreachable = {v for v, _ in seen.values() if v != guess}
            assert unreachable


def test_unreachable_persona_values_from_instance_feedback() -> None:
    """The values no instance complaint can lead the sim's learner to (docs/sim.md)."""
    unreachable = set()
    for persona in ENV.personas():
        for pref in ENV.persona(persona).preferences:
            if pref.rule == "payment_visibility":
                continue  # reachable by stepping (private in two steps)
            if pref.value_at(None) != INSTANCE_GUESS[pref.rule]:
                unreachable.add((persona, pref.rule))
    assert ("blair", "sms_signoff") in unreachable  # 'B'
    assert ("dana", "sms_signoff") in unreachable  # initials
    assert ("dana", "email_subject_prefix") in unreachable  # '[Home]'
    assert ("casey", "note_title_format") in unreachable  # caps
    assert ("alex", "sms_signoff") not in unreachable  # first name
    assert ("blair", "email_subject_prefix") not in unreachable  # '[Personal]'


# --- lines the learner cannot use -----------------------------------------------------------

FUNCTIONAL_FAILURES = [
    "The task wasn't done: nothing was sent or saved.",
    "The task was done more than once.",
    "The text went to the wrong person.",
    "The text didn't say what I asked.",
    "The payment went to the wrong person.",
    "The payment was for the wrong amount.",
    "The note has the wrong title.",
    "The note is missing some items.",
    "The email went to the wrong person.",
    "The email didn't say what I asked.",
    "The task was never marked complete.",
]


@pytest.mark.parametrize("line", FUNCTIONAL_FAILURES)
def test_functional_failure_lines_produce_nothing(line: str) -> None:
    assert proposals_from_complaint(line) == []
    assert _ask(line) == []


def test_a_mixed_complaint_keeps_only_the_rule_lines() -> None:
    statement = RULES_BY_NAME["email_cc_self"].statement("self")
    complaint = "\n".join(
        ["The task was never marked complete.", "", f"- {statement}", "Thanks for trying."]
    )
    assert proposals_from_complaint(complaint)[0].statement == statement
    assert _ask(complaint) == [statement]


def test_no_complaint_gives_no_statements() -> None:
    assert _ask("") == []
    assert complaint_of([Message("user", "no tags here")]) == ""


def test_complaint_of_reads_the_last_user_message_with_one() -> None:
    messages = [
        Message("user", "<complaint>\nold\n</complaint>"),
        Message("assistant", "<complaint>\nnot mine\n</complaint>"),
        Message("user", "intro\n<complaint>\nnew line\n</complaint>\noutro"),
        Message("user", "no complaint here"),
    ]
    assert complaint_of(messages) == "new line"


def test_slot_of() -> None:
    for rule in RULES:
        value = INSTANCE_GUESS.get(rule.name, "friends")
        assert slot_of(rule.statement(value)) == rule.slot
    assert slot_of("Be nice.") is None


def test_statements_role_is_deterministic() -> None:
    text, _ = _default_feedback("dana", _task("email"), "corrective")
    assert _ask(text, seed=1) == _ask(text, seed=1) == _ask(text, seed=2)
    assert all(re.search(r"\w", s) for s in _ask(text))
