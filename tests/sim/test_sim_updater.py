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
from evolve.sim import (
    Proposal,
    SimLLM,
    SimRates,
    complaint_of,
    proposals_from_complaint,
    read_directives,
    slot_of,
    user_name,
    vague_slot_of,
)
from evolve.sim._updater import Shown, replaced_ids

REPO = Path(__file__).resolve().parents[2]
ENV = PersonaWorldEnv(REPO / "evalset")
TASKS = [t for split in ("train", "dev", "holdout") for t in ENV.tasks(split)]
KINDS = ("sms", "payment", "note", "email")
STATEMENTS = JsonSchema("statements", {"type": "object"})

# The rules whose instance complaint line itself shows the value, and that value
# (docs/sim.md, "What each tier can teach"); visibility steps from the value it shows.
INSTANCE_SHOWS: dict[str, Value] = {
    "habitual_card": Computed("habitual_card"),
    "running_total": Computed("running_total"),
    "note_checksum": Computed("checksum"),
    "email_cc_self": "self",
}
NO_VALUE_SHOWN = [
    r.name for r in RULES if r.name not in INSTANCE_SHOWS and r.name != "payment_visibility"
]


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


def _ask(complaint: str, seed: int = 0, rates: SimRates | None = None) -> list[str]:
    llm = SimLLM(ENV, seed=seed, rates=rates)
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


def test_no_rule_has_a_default_guess() -> None:
    """The old source of instance-tier values (one fixed guess per rule) is gone."""
    for rule in RULES:
        assert not hasattr(rule, "default_guess"), rule.name
        assert not hasattr(rule, "guess"), rule.name


@pytest.mark.parametrize("rule_name", list(INSTANCE_SHOWS))
def test_an_instance_line_that_shows_the_value_gives_it(rule_name: str) -> None:
    rule = RULES_BY_NAME[rule_name]
    line = _instance_line(rule)
    match = rule.instance_regex().fullmatch(line)
    assert match is not None
    assert rule.instance_value(match) == INSTANCE_SHOWS[rule_name]
    [proposal] = proposals_from_complaint(line)
    assert proposal.fixes_value
    assert _directive(proposal.statement) == Directive(rule.slot, INSTANCE_SHOWS[rule_name], False)


@pytest.mark.parametrize("rule_name", NO_VALUE_SHOWN)
def test_an_instance_line_that_shows_no_value_gives_a_vague_statement(rule_name: str) -> None:
    rule = RULES_BY_NAME[rule_name]
    line = _instance_line(rule)
    match = rule.instance_regex().fullmatch(line)
    assert match is not None
    assert rule.instance_value(match) is None
    [proposal] = proposals_from_complaint(line, "Alex")
    assert proposal == Proposal(rule.slot, rule.vague("Alex"), fixes_value=False)
    assert proposal.statement.startswith("Alex ")
    assert recognize(proposal.statement) == []  # the agent cannot act on it
    assert read_directives(proposal.statement) == {}
    assert vague_slot_of(proposal.statement) == rule.slot


@pytest.mark.parametrize("rule", RULES, ids=[r.name for r in RULES])
def test_every_vague_statement_fixes_no_value_and_names_its_slot(rule: Rule) -> None:
    for who in ("The user", *(ENV.persona(p).first_name for p in ENV.personas())):
        text = rule.vague(who)
        assert recognize(text) == [], text
        assert vague_slot_of(text) == rule.slot
        assert slot_of(text) is None


VISIBILITY_STEPS = [
    ("public", "more", "friends"),
    ("friends", "more", "private"),
    ("private", "fewer", "friends"),
    ("friends", "fewer", "public"),
]


@pytest.mark.parametrize(("actual", "direction", "guess"), VISIBILITY_STEPS)
def test_visibility_instance_line_steps_from_the_value_it_shows(
    actual: str, direction: str, guess: str
) -> None:
    rule = RULES_BY_NAME["payment_visibility"]
    line = _instance_line(rule, actual=actual, direction=direction)
    match = rule.instance_regex().fullmatch(line)
    assert match is not None
    assert rule.instance_value(match) == guess
    [proposal] = proposals_from_complaint(line)
    assert _directive(proposal.statement) == Directive(rule.slot, guess, False)


@pytest.mark.parametrize("kind", KINDS)
def test_instance_complaint_does_not_depend_on_the_persona_value(kind: str) -> None:
    """Personas holding different values get the same complaint line, so the learner writes
    the same thing for both; where the line shows no value it states none."""
    task = _task(kind)
    by_rule: dict[str, dict[str, tuple[Value, str]]] = {}
    for persona in ENV.personas():
        text, violated = _default_feedback(persona, task, "instance")
        values = {p.rule: p.value_at(None) for p in ENV.persona(persona).preferences}
        for rule, line in zip(violated, text.splitlines(), strict=True):
            if rule == "payment_visibility":
                continue  # shows the agent's actual visibility, which is the same default here
            by_rule.setdefault(rule, {})[persona] = (values[rule], line)
    for rule, seen in by_rule.items():
        lines = {line for _, line in seen.values()}
        assert len(lines) == 1, (rule, lines)
        proposals = {repr(proposals_from_complaint(line)) for line in lines}
        assert len(proposals) == 1
        held = {repr(v) for v, _ in seen.values()}
        if len(held) > 1:  # different values, one complaint: the learner may fix none
            [proposal] = proposals_from_complaint(next(iter(lines)))
            assert not proposal.fixes_value, rule


def _registry_personas() -> list[str]:
    """Every persona of the shipped registry (`evalset/personas/`, which `evolve init` copies),
    including any added later."""
    names = sorted(p.stem for p in (REPO / "evalset" / "personas").glob("*.yaml"))
    assert names == ENV.personas()
    return names


@pytest.mark.parametrize("persona", _registry_personas())
def test_no_persona_preference_is_taught_by_the_instance_tier_without_evidence(
    persona: str,
) -> None:
    """For every persona and every task kind: the instance complaint of the world's default
    call, written into memory by the learner (every vague statement kept), teaches a value
    only for rules whose complaint line shows it; every other violated preference stays
    unstated, whatever value the persona holds (no value coincides with a sim default)."""
    always = SimRates(instance_vague=1.0)
    for kind in KINDS:
        text, violated = _default_feedback(persona, _task(kind), "instance")
        if not violated:
            continue
        statements = _ask(text, rates=always)
        directives = read_directives("\n".join(statements))
        for rule_name in violated:
            rule = RULES_BY_NAME[rule_name]
            if rule_name in INSTANCE_SHOWS:
                assert directives[rule.slot].value == INSTANCE_SHOWS[rule_name]
            elif rule_name == "payment_visibility":
                shown = re.search(r"was (\w+), visible", text)
                assert shown is not None
                assert directives[rule.slot].value != shown.group(1)  # a step away from it
            else:
                assert rule.slot not in directives, (persona, rule_name, statements)
                assert rule.vague("The user") in statements


def test_instance_feedback_teaches_less_than_corrective_feedback() -> None:
    """Over the registry: corrective lines state every violated value; instance lines only
    those the complaint shows."""
    taught = {"instance": 0, "corrective": 0}
    for persona in _registry_personas():
        for kind in KINDS:
            for tier in taught:
                text, violated = _default_feedback(persona, _task(kind), tier)
                directives = read_directives("\n".join(_ask(text)))
                values = {p.rule: p.value_at(None) for p in ENV.persona(persona).preferences}
                taught[tier] += sum(
                    1
                    for r in violated
                    if r in values
                    and RULES_BY_NAME[r].slot in directives
                    and directives[RULES_BY_NAME[r].slot].value == values[r]
                )
    assert taught["instance"] < taught["corrective"]


def test_the_vague_statement_is_written_at_the_documented_rate() -> None:
    line = _instance_line(RULES_BY_NAME["email_signoff"])
    assert _ask(line, rates=SimRates(instance_vague=0.0)) == []
    assert _ask(line, rates=SimRates(instance_vague=1.0)) == [
        RULES_BY_NAME["email_signoff"].vague("The user")
    ]
    written = sum(bool(_ask(line, seed=seed)) for seed in range(400))
    assert abs(written / 400 - SimRates().instance_vague) < 0.08


def test_the_rate_draws_only_for_vague_statements() -> None:
    """A corrective complaint gives the same answer whatever the vague rate."""
    text, _ = _default_feedback("casey", _task("email"), "corrective")
    assert (
        _ask(text, rates=SimRates(instance_vague=0.0))
        == _ask(text, rates=SimRates(instance_vague=1.0))
        != []
    )


def test_the_user_is_named_from_the_profile_in_the_actions() -> None:
    actions = 'supervisor__show_profile({}) -> {"first_name": "Dana", "last_name": "Whitfield"}'
    messages = [Message("user", f"<actions>\n{actions}\n</actions>")]
    assert user_name(messages) == "Dana"
    assert user_name([Message("user", "<actions>\nnothing\n</actions>")]) == "The user"
    odd = 'supervisor__show_profile({}) -> {"first_name": "\'B\' sign"}'
    assert user_name([Message("user", f"<actions>\n{odd}\n</actions>")]) == "The user"


def test_a_vague_statement_replaces_nothing_and_a_value_replaces_a_vague_unit() -> None:
    vague = RULES_BY_NAME["sms_signoff"].vague("Blair")
    stated = RULES_BY_NAME["sms_signoff"].statement("B")
    shown = [Shown("u-vague", vague), Shown("u-stated", stated)]
    assert replaced_ids(shown, "sms.signoff", vague) == []
    other = RULES_BY_NAME["sms_signoff"].statement(Ref("first_name"))
    assert replaced_ids(shown, "sms.signoff", other) == ["u-vague", "u-stated"]


def _role(name: str, prompt: str, rates: SimRates | None = None) -> Any:
    llm = SimLLM(ENV, rates=rates or SimRates(instance_vague=1.0))
    completion = llm.complete([Message("user", prompt)], json_schema=JsonSchema(name, {}))
    return json.loads(completion.text)


def test_no_role_buries_a_stated_value_under_a_vague_statement() -> None:
    """With a unit that states the slot's value shown, an instance line that shows no value
    makes no recipe write the vague statement (nor modify, replace or drop that unit)."""
    line = _instance_line(RULES_BY_NAME["sms_signoff"])
    stated = RULES_BY_NAME["sms_signoff"].statement("B")
    complaint = f"<complaint>\n{line}\n</complaint>"
    ace = _role("ace_deltas", f"{complaint}\n<bullets>\n[ace-1] {stated}\n</bullets>")
    # No operation; the bullet on the complained slot is still tagged as it was before.
    assert ace == {"operations": [], "bullet_tags": [{"id": "ace-1", "tag": "harmful"}]}
    assert (
        _role(
            "tepa_precedent",
            f"{complaint}\n<precedents>\n[tepa-1] [sms.signoff] {stated}\n</precedents>",
        )["precedents"]
        == []
    )
    assert _role("assertions", f"{complaint}\n<pool>\n[topl-1] {stated}\n</pool>") == {
        "assertions": []
    }
    rewrite = _role("memory_rewrite", f"{complaint}\n<memory>\n{stated}\n</memory>")
    assert stated in rewrite["memory"]
    assert "cares about" not in rewrite["memory"]
    # With nothing shown, the vague statement is written (and compiles to no TRACE check).
    ace = _role("ace_deltas", f"{complaint}\n<bullets>\n</bullets>")
    assert ace["operations"] == [
        {
            "op": "add",
            "text": RULES_BY_NAME["sms_signoff"].vague("The user"),
            "subject": "sms signoff",
        }
    ]
    assert _role("trace_checks", f"{complaint}\n<checks>\n</checks>") == {"checks": []}


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
    for persona in ENV.personas():
        for pref in ENV.persona(persona).preferences:
            rule = RULES_BY_NAME[pref.rule]
            assert slot_of(rule.statement(pref.value_at(None))) == rule.slot
    assert slot_of("Be nice.") is None


def test_statements_role_is_deterministic() -> None:
    text, _ = _default_feedback("dana", _task("email"), "corrective")
    assert _ask(text, seed=1) == _ask(text, seed=1) == _ask(text, seed=2)
    assert all(re.search(r"\w", s) for s in _ask(text))
