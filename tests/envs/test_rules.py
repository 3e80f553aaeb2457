"""The 12 preference rules: checkers (passing and failing calls, history) and recognition."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from evolve.agent import build_system_prompt, read_prompt_files
from evolve.envs import Task
from evolve.envs.persona_world import (
    RULES,
    RULES_BY_NAME,
    CheckContext,
    Computed,
    Directive,
    Payment,
    PersonaWorldEnv,
    Preference,
    Ref,
    Rule,
    Value,
    api_docs,
    contact_of,
    format_items,
    most_used_card,
    note_checksum,
    recognize,
    reference_args,
    split_sentences,
    total_paid,
)
from evolve.sim import read_directives

REPO = Path(__file__).resolve().parents[2]
ENV = PersonaWorldEnv(REPO / "evalset")
RULE_NAMES = [r.name for r in RULES]


def _persona_values() -> list[tuple[str, str, Value]]:
    """(persona, rule, value) for every value a persona holds, drift included."""
    out: list[tuple[str, str, Value]] = []
    for name in ENV.personas():
        for pref in ENV.persona(name).preferences:
            episodes: list[int | None] = [0, *(c.at_episode for c in pref.changes)]
            for episode in episodes:
                item = (name, pref.rule, pref.value_at(episode))
                if item not in out:
                    out.append(item)
    return out


PERSONA_VALUES = _persona_values()
VALUE_IDS = [f"{p}-{r}-{v}" for p, r, v in PERSONA_VALUES]


def _task(kind: str) -> Task:
    return next(t for t in ENV.tasks("train") if t.kind == kind)


def _ctx(rule: Rule, persona: str) -> CheckContext:
    return ENV.context(_task(rule.kind), persona, ENV.initial_history(persona))


def _make_task(kind: str, **params: Any) -> Task:
    family = {
        "sms": "text_update",
        "payment": "pay_back",
        "note": "note_todo",
        "email": "email_followup",
    }
    return Task("t-1", family[kind], kind, "train", "instruction", params)


def _ctx_for(
    kind: str, persona: str = "alex", history: tuple[Payment, ...] = (), **params: Any
) -> CheckContext:
    p = ENV.persona(persona)
    task = _make_task(kind, **params)
    return CheckContext(task, p.profile, p.card_objects, history, contact_of(task))


# --- the rule table --------------------------------------------------------------------


def test_there_are_twelve_rules_with_distinct_names_and_slots() -> None:
    assert len(RULES) == 12
    assert len({r.name for r in RULES}) == 12
    assert len({r.slot for r in RULES}) == 12
    assert {r.rule_class for r in RULES} == {"format", "choice", "computed"}
    assert {r.kind for r in RULES} == {"sms", "payment", "note", "email"}
    assert {
        "sms_signoff",
        "private_note_format",
        "note_checksum",
        "habitual_card",
        "running_total",
    } <= set(RULE_NAMES)


def test_every_rule_is_held_by_some_persona() -> None:
    assert {r for _, r, _ in PERSONA_VALUES} == set(RULE_NAMES)


# --- checkers: generic passing and failing call, for every value a persona holds ----------


@pytest.mark.parametrize(("persona", "rule_name", "value"), PERSONA_VALUES, ids=VALUE_IDS)
def test_checker_passes_the_rendered_call(persona: str, rule_name: str, value: Value) -> None:
    rule = RULES_BY_NAME[rule_name]
    ctx = _ctx(rule, persona)
    args = reference_args(ctx.task)
    resolved = rule.resolve(ctx, value)
    assert resolved, f"{rule_name} resolved {value!r} to nothing"
    rule.render(ctx, args, resolved)
    assert rule.check(ctx, args, value) is None


@pytest.mark.parametrize(("persona", "rule_name", "value"), PERSONA_VALUES, ids=VALUE_IDS)
def test_checker_fails_the_default_call(persona: str, rule_name: str, value: Value) -> None:
    rule = RULES_BY_NAME[rule_name]
    ctx = _ctx(rule, persona)
    detail = rule.check(ctx, reference_args(ctx.task), value)
    assert detail is not None and detail.strip()
    # The complaint is the rule's instance template, which the sim's updater can read back.
    assert rule.instance_regex().fullmatch(detail)


# --- checkers: literal calls, written out by hand ----------------------------------------


def test_sms_signoff_literal_and_profile_reference() -> None:
    rule = RULES_BY_NAME["sms_signoff"]
    ctx = _ctx_for("sms", "dana", contact="sam", message="Running late.")
    assert rule.check(ctx, {"message": "Running late.\n- B"}, "B") is None
    assert rule.check(ctx, {"message": "Running late.\n- B  \n"}, "B") is None
    assert rule.check(ctx, {"message": "Running late.\n- Blair"}, "B") is not None
    assert rule.check(ctx, {"message": "Running late. B"}, "B") is not None
    assert rule.check(ctx, {"message": "Running late.\n- DW"}, Ref("initials")) is None
    assert rule.check(ctx, {"message": "Running late.\n- Dana"}, Ref("initials")) is not None
    assert rule.check(ctx, {"message": "Running late.\n- Dana"}, Ref("first_name")) is None
    assert rule.check(ctx, {"message": "x\n- Dana Whitfield"}, Ref("full_name")) is None


def test_sms_greeting_uses_the_contacts_first_name() -> None:
    rule = RULES_BY_NAME["sms_greeting"]
    ctx = _ctx_for("sms", contact="sam", message="See you.")
    assert rule.check(ctx, {"message": "Hey Sam, see you."}, "Hey") is None
    assert rule.check(ctx, {"message": "Hi Sam, see you."}, "Hey") is not None
    assert rule.check(ctx, {"message": "Hey Sam see you."}, "Hey") is not None
    assert rule.check(ctx, {"message": "Hey Jordan, see you."}, "Hey") is not None


@pytest.mark.parametrize(
    ("want", "actual", "direction"),
    [
        ("private", "public", "more"),
        ("private", "friends", "more"),
        ("friends", "public", "more"),
        ("friends", "private", "fewer"),
        ("public", "private", "fewer"),
    ],
)
def test_payment_visibility_complaint_names_actual_and_direction(
    want: str, actual: str, direction: str
) -> None:
    rule = RULES_BY_NAME["payment_visibility"]
    ctx = _ctx_for("payment", contact="sam", amount=10.0, reason="lunch")
    assert rule.check(ctx, {"visibility": want}, want) is None
    detail = rule.check(ctx, {"visibility": actual}, want)
    assert (
        detail
        == f"My payment to Sam Lee was {actual}, visible to {direction} people than I wanted."
    )


def test_payment_visibility_missing_argument_means_public() -> None:
    rule = RULES_BY_NAME["payment_visibility"]
    ctx = _ctx_for("payment", contact="sam", amount=10.0, reason="lunch")
    assert rule.check(ctx, {}, "public") is None
    assert rule.check(ctx, {}, "private") is not None


def test_habitual_card_is_the_most_used_card_in_history() -> None:
    rule = RULES_BY_NAME["habitual_card"]
    history = (Payment("sam", 5, 1003), Payment("sam", 5, 1002), Payment("omar", 5, 1002))
    ctx = _ctx_for("payment", history=history, contact="sam", amount=10.0, reason="lunch")
    habit = Computed("habitual_card")
    assert rule.check(ctx, {"payment_card_id": 1002}, habit) is None
    assert rule.check(ctx, {"payment_card_id": 1003}, habit) is not None
    # No card given: the world's default is the first card, which is not the habit.
    assert rule.check(ctx, {}, habit) is not None


def test_habitual_card_tie_goes_to_the_most_recent_card() -> None:
    rule = RULES_BY_NAME["habitual_card"]
    habit = Computed("habitual_card")
    # 2-2 tie; 1003 was used first, 1002 last: the most recent one wins.
    tie = (
        Payment("sam", 5, 1003),
        Payment("sam", 5, 1002),
        Payment("omar", 5, 1003),
        Payment("x", 5, 1002),
    )
    ctx = _ctx_for("payment", history=tie, contact="sam", amount=10.0, reason="lunch")
    assert rule.check(ctx, {"payment_card_id": 1002}, habit) is None
    assert rule.check(ctx, {"payment_card_id": 1003}, habit) is not None
    # A count beats recency: 1003 x3 against 1002 x3 used last would tie, so add one more 1003.
    counted = (*tie, Payment("x", 5, 1003), Payment("x", 5, 1003), Payment("x", 5, 1002))
    ctx = _ctx_for("payment", history=counted, contact="sam", amount=10.0, reason="lunch")
    assert rule.check(ctx, {"payment_card_id": 1003}, habit) is None


def test_habitual_card_literal_last_four_digits() -> None:
    rule = RULES_BY_NAME["habitual_card"]
    ctx = _ctx_for("payment", contact="sam", amount=10.0, reason="lunch")
    assert rule.check(ctx, {"payment_card_id": 1003}, "7731") is None
    assert rule.check(ctx, {"payment_card_id": 1001}, "7731") is not None
    assert rule.check(ctx, {}, "4242") is None  # default is the first card, Visa ending 4242


def test_running_total_is_history_total_plus_this_payment() -> None:
    rule = RULES_BY_NAME["running_total"]
    history = (
        Payment("sam", 20.0, 1001),
        Payment("jordan", 12.5, 1001),
        Payment("sam", 15.25, 1002),
    )
    ctx = _ctx_for("payment", history=history, contact="sam", amount=10.0, reason="lunch")
    total = Computed("running_total")
    assert rule.check(ctx, {"note": "Lunch (total to Sam: $45.25)"}, total) is None
    wrong = [
        "Lunch (total to Sam: $35.25)",  # the history only, without this payment
        "Lunch (total to Sam: $57.75)",  # every contact's payments
        "Lunch (total to Jordan: $45.25)",  # the wrong name
        "(total to Sam: $45.25) Lunch",  # not at the end
        "Lunch",
    ]
    for note in wrong:
        assert rule.check(ctx, {"note": note}, total) is not None, note


def test_running_total_with_no_history_is_this_amount() -> None:
    rule = RULES_BY_NAME["running_total"]
    ctx = _ctx_for("payment", contact="omar", amount=7.5, reason="lunch")
    assert (
        rule.check(ctx, {"note": "Lunch (total to Omar: $7.50)"}, Computed("running_total")) is None
    )


@pytest.mark.parametrize(
    ("style", "content", "ok"),
    [
        ("numbered", "1. milk\n2. eggs", True),
        ("numbered", "1. milk\n2. eggs\nChecksum: 7", True),
        ("numbered", "- milk\n- eggs", False),
        ("bullets", "- milk\n- eggs", True),
        ("bullets", "milk\neggs", False),
        ("checkbox", "[ ] milk\n[ ] eggs", True),
        ("checkbox", "[ ] milk", False),
    ],
)
def test_private_note_format(style: str, content: str, ok: bool) -> None:
    rule = RULES_BY_NAME["private_note_format"]
    ctx = _ctx_for("note", title="Groceries", items=["milk", "eggs"], date="2026-03-02")
    assert (rule.check(ctx, {"title": "Groceries", "content": content}, style) is None) is ok


def test_note_title_format() -> None:
    rule = RULES_BY_NAME["note_title_format"]
    ctx = _ctx_for("note", title="Groceries", items=["milk"], date="2026-03-02")
    assert rule.check(ctx, {"title": "2026-03-02 Groceries"}, "date") is None
    assert rule.check(ctx, {"title": "Groceries 2026-03-02"}, "date") is not None
    assert rule.check(ctx, {"title": "GROCERIES"}, "caps") is None
    assert rule.check(ctx, {"title": "Groceries"}, "caps") is not None


def test_note_checksum_counts_the_characters_of_the_items() -> None:
    rule = RULES_BY_NAME["note_checksum"]
    ctx = _ctx_for(
        "note", title="Groceries", items=["milk", "eggs", "rye bread"], date="2026-03-02"
    )
    value = Computed("checksum")
    assert note_checksum(["milk", "eggs", "rye bread"]) == 17
    assert rule.check(ctx, {"content": "milk\neggs\nrye bread\nChecksum: 17"}, value) is None
    assert rule.check(ctx, {"content": "milk\neggs\nrye bread\nChecksum: 17\n"}, value) is None
    assert rule.check(ctx, {"content": "milk\neggs\nrye bread\nChecksum: 18"}, value) is not None
    assert rule.check(ctx, {"content": "Checksum: 17\nmilk\neggs\nrye bread"}, value) is not None
    assert rule.check(ctx, {"content": ""}, value) is not None


def test_email_signoff_needs_the_closing_and_the_users_first_name() -> None:
    rule = RULES_BY_NAME["email_signoff"]
    ctx = _ctx_for("email", "casey", contact="riley", subject="Hi", message="Thanks.")
    assert rule.check(ctx, {"body": "Thanks.\n\nCheers,\nCasey"}, "Cheers") is None
    assert rule.check(ctx, {"body": "Thanks.\n\nCheers,\nCasey\n"}, "Cheers") is None
    assert rule.check(ctx, {"body": "Thanks.\n\nBest,\nCasey"}, "Cheers") is not None
    assert rule.check(ctx, {"body": "Thanks.\n\nCheers,\nRiley"}, "Cheers") is not None


def test_email_subject_prefix() -> None:
    rule = RULES_BY_NAME["email_subject_prefix"]
    ctx = _ctx_for("email", "dana", contact="riley", subject="Plans", message="x")
    assert rule.check(ctx, {"subject": "[Home] Plans"}, "[Home]") is None
    assert rule.check(ctx, {"subject": "[Home]Plans"}, "[Home]") is not None
    assert rule.check(ctx, {"subject": "Plans [Home]"}, "[Home]") is not None
    assert rule.check(ctx, {"subject": "[Work] Plans"}, "[Home]") is not None


def test_email_cc_self() -> None:
    rule = RULES_BY_NAME["email_cc_self"]
    ctx = _ctx_for("email", "dana", contact="riley", subject="Plans", message="x")
    me = "dana.whitfield@example.com"
    assert rule.check(ctx, {"cc": [me]}, "self") is None
    assert rule.check(ctx, {"cc": ["riley.chen@example.com", me]}, "self") is None
    assert rule.check(ctx, {"cc": ["riley.chen@example.com"]}, "self") is not None
    assert rule.check(ctx, {"cc": None}, "self") is not None
    assert rule.check(ctx, {}, "self") is not None


def test_email_greeting() -> None:
    rule = RULES_BY_NAME["email_greeting"]
    ctx = _ctx_for("email", "blair", contact="riley", subject="Plans", message="x")
    assert rule.check(ctx, {"body": "Dear Riley,\n\nx"}, "Dear") is None
    assert rule.check(ctx, {"body": "Hi Riley,\n\nx"}, "Dear") is not None
    assert rule.check(ctx, {"body": "x\n\nDear Riley,"}, "Dear") is not None


def test_rules_apply_only_to_their_kind() -> None:
    for rule in RULES:
        for kind in ("sms", "payment", "note", "email"):
            assert rule.applies(_task(kind)) is (kind == rule.kind)


# --- helpers -----------------------------------------------------------------------------


def test_most_used_card_and_total_paid() -> None:
    assert most_used_card(()) is None
    history = (
        Payment("sam", 1.0, 2),
        Payment("sam", 2.5, 1),
        Payment("jo", 4.0, 2),
        Payment("sam", 1.0, 1),
    )
    assert most_used_card(history) == 1  # tie 2-2; card 2 used first, card 1 last
    assert total_paid(history, "sam") == 4.5
    assert total_paid(history, "nobody") == 0


def test_format_items() -> None:
    assert format_items(["a", "b"], "numbered") == ["1. a", "2. b"]
    assert format_items(["a", "b"], "bullets") == ["- a", "- b"]
    assert format_items(["a", "b"], "checkbox") == ["[ ] a", "[ ] b"]


def test_split_sentences_strips_bullets_and_leading_tags() -> None:
    text = (
        "- [a1b2c3] Keep payments private. Sign off texts with '- B'.\n"
        "\n"
        "* [sms.signoff] Hello there!"
    )
    assert split_sentences(text) == [
        "Keep payments private.",
        "Sign off texts with '- B'.",
        "Hello there!",
    ]


# --- recognition -----------------------------------------------------------------------

# Every value each rule can state: the persona values and a few more.
STATABLE: list[tuple[str, Value]] = sorted(
    {(r, v) for _, r, v in PERSONA_VALUES}
    | {
        ("sms_signoff", Ref("first_name")),
        ("sms_signoff", Ref("initials")),
        ("sms_signoff", Ref("full_name")),
        ("sms_signoff", "Z"),
        ("sms_greeting", "Howdy"),
        ("payment_visibility", "private"),
        ("payment_visibility", "friends"),
        ("payment_visibility", "public"),
        ("habitual_card", "4242"),
        ("habitual_card", "9999"),
        ("private_note_format", "bullets"),
        ("private_note_format", "numbered"),
        ("private_note_format", "checkbox"),
        ("note_title_format", "date"),
        ("note_title_format", "caps"),
        ("email_signoff", "Sincerely"),
        ("email_subject_prefix", "[Work]"),
        ("email_greeting", "Hello"),
    },
    key=repr,
)
STATABLE_IDS = [f"{r}-{v}" for r, v in STATABLE]


@pytest.mark.parametrize(("rule_name", "value"), STATABLE, ids=STATABLE_IDS)
def test_statement_round_trips(rule_name: str, value: Value) -> None:
    rule = RULES_BY_NAME[rule_name]
    statement = rule.statement(value)
    assert rule.recognize(statement) == Directive(rule.slot, value, False)
    # ...and no other rule claims the sentence.
    assert recognize(statement) == [Directive(rule.slot, value, False)]


@pytest.mark.parametrize(("rule_name", "value"), STATABLE, ids=STATABLE_IDS)
def test_statement_survives_case_and_bullets(rule_name: str, value: Value) -> None:
    rule = RULES_BY_NAME[rule_name]
    statement = rule.statement(value)
    [sentence] = split_sentences(f"- [x1] {statement}")
    assert rule.recognize(sentence) == Directive(rule.slot, value, False)
    # Lower-casing leaves quoted values and tags alone only when they are not cased words,
    # so only check that the slot is still recognized.
    assert any(d.slot == rule.slot for d in recognize(statement.lower()))


PARAPHRASES: list[tuple[str, str, Value]] = [
    ("End my texts with '- B'.", "sms.signoff", "B"),
    ("My SMS messages should close with '- B'.", "sms.signoff", "B"),
    ("When texting, sign off with my first name after a dash.", "sms.signoff", Ref("first_name")),
    ("sign off texts with my initials.", "sms.signoff", Ref("initials")),
    ("Begin texts with 'Hey <first name>,'.", "sms.greeting", "Hey"),
    ("When I text someone, greet them with Hello and their first name.", "sms.greeting", "Hello"),
    ("TEXT MESSAGES SHOULD START WITH 'HEY'.", "sms.greeting", "Hey"),
    ("Venmo payments should be friends-only.", "payment.visibility", "friends"),
    ("Make my payments visible to friends only.", "payment.visibility", "friends"),
    ("I want my payments private.", "payment.visibility", "private"),
    ("KEEP ALL MY VENMO PAYMENTS PRIVATE.", "payment.visibility", "private"),
    ("Payments: only friends should see them.", "payment.visibility", "friends"),
    ("For Venmo payments, use the card I normally use.", "payment.card", Computed("habitual_card")),
    ("Use my usual card when paying.", "payment.card", Computed("habitual_card")),
    ("Pay with my card ending 4242.", "payment.card", "4242"),
    (
        "In each payment note, add the running total I have paid that person.",
        "payment.note_total",
        Computed("running_total"),
    ),
    (
        "Payment notes should include a running total.",
        "payment.note_total",
        Computed("running_total"),
    ),
    ("Notes: use a numbered list for items.", "note.body_format", "numbered"),
    ("Format the items in my notes as a checklist.", "note.body_format", "checkbox"),
    ("Keep note items in bullets.", "note.body_format", "bullets"),
    ("Note titles should begin with the date.", "note.title_format", "date"),
    ("Put my note titles in all caps.", "note.title_format", "caps"),
    ("Add a checksum line at the end of each note.", "note.checksum", Computed("checksum")),
    ("Sign my emails with 'Cheers,' and my name.", "email.signoff", "Cheers"),
    ("End emails with Warmly and my first name.", "email.signoff", "Warmly"),
    ("Email subjects should begin with [Home].", "email.subject_prefix", "[Home]"),
    ("Always copy me on emails.", "email.cc", "self"),
    ("cc myself on every email.", "email.cc", "self"),
    ("Begin emails with 'Dear <first name>,'.", "email.greeting", "Dear"),
    ("Greet people in emails with Dear and their first name.", "email.greeting", "Dear"),
]


@pytest.mark.parametrize(
    ("sentence", "slot", "value"), PARAPHRASES, ids=[p[0] for p in PARAPHRASES]
)
def test_paraphrases_are_recognized(sentence: str, slot: str, value: Value) -> None:
    assert Directive(slot, value, False) in recognize(sentence)


def test_paraphrase_with_a_contraction_before_the_quote() -> None:
    assert Directive("sms.signoff", "B", False) in recognize("I'd like my texts to end with '- B'.")


def test_paraphrase_card_that_ends_in() -> None:
    assert Directive("payment.card", "4242", False) in recognize(
        "Pay with the card that ends in 4242."
    )


# (persona, rule, a value that persona does not hold)
WRONG_VALUES: list[tuple[str, str, Value]] = [
    ("blair", "sms_signoff", "Z"),
    ("alex", "sms_signoff", Ref("full_name")),
    ("casey", "sms_greeting", "Howdy"),
    ("alex", "payment_visibility", "public"),
    ("blair", "payment_visibility", "private"),
    ("alex", "habitual_card", "9999"),
    ("alex", "private_note_format", "numbered"),
    ("casey", "private_note_format", "checkbox"),
    ("blair", "note_title_format", "caps"),
    ("casey", "note_title_format", "date"),
    ("alex", "email_signoff", "Sincerely"),
    ("dana", "email_subject_prefix", "[Work]"),
    ("blair", "email_greeting", "Hello"),
]


@pytest.mark.parametrize(
    ("persona", "rule_name", "wrong"),
    WRONG_VALUES,
    ids=[f"{p}-{r}-{v}" for p, r, v in WRONG_VALUES],
)
def test_a_wrong_value_is_recognized_as_that_wrong_value(
    persona: str, rule_name: str, wrong: Value
) -> None:
    rule = RULES_BY_NAME[rule_name]
    held = {v for p, r, v in PERSONA_VALUES if r == rule_name and p == persona}
    assert held and wrong not in held
    assert rule.recognize(rule.statement(wrong)) == Directive(rule.slot, wrong, False)


DO_NOT_CASES = [pytest.param(r, v, id=f"{r}-{v}") for r, v in STATABLE]


@pytest.mark.parametrize(("rule_name", "value"), DO_NOT_CASES)
def test_do_not_negates_the_statement(rule_name: str, value: Value) -> None:
    rule = RULES_BY_NAME[rule_name]
    statement = rule.statement(value)
    negated = f"Do not {statement[0].lower()}{statement[1:]}"
    assert rule.recognize(negated) == Directive(rule.slot, value, True)


NEGATION_CASES = [pytest.param(r, v, id=f"{r}-{v}") for r, v in STATABLE]


@pytest.mark.parametrize(("rule_name", "value"), NEGATION_CASES)
def test_dont_negates_the_statement(rule_name: str, value: Value) -> None:
    rule = RULES_BY_NAME[rule_name]
    statement = rule.statement(value)
    negated = f"Don't {statement[0].lower()}{statement[1:]}"
    assert rule.recognize(negated) == Directive(rule.slot, value, True)


@pytest.mark.parametrize(
    ("sentence", "expected"),
    [
        ("Never make my Venmo payments public.", Directive("payment.visibility", "public", True)),
        (
            "Stop starting my email subjects with '[Home]'.",
            Directive("email.subject_prefix", "[Home]", True),
        ),
        ("Avoid a checksum in my notes.", Directive("note.checksum", Computed("checksum"), True)),
        ("Do not CC me on emails.", Directive("email.cc", "self", True)),
        # A positive clause beats a negated one in the same sentence.
        ("Sign off texts with '- Alex', not '- B'.", Directive("sms.signoff", "Alex", False)),
        (
            "Do not sign off texts with '- B', sign off with '- Alex' instead.",
            Directive("sms.signoff", "Alex", False),
        ),
    ],
)
def test_negation_per_clause(sentence: str, expected: Directive) -> None:
    assert expected in recognize(sentence)


@pytest.mark.parametrize(
    "sentence",
    [
        "My Venmo payments shouldn't be public.",
        "I won't have my Venmo payments public.",
        "Venmo payments aren't to be public.",
        "Don’t make my Venmo payments public.",
    ],
)
def test_other_negated_contractions(sentence: str) -> None:
    assert recognize(sentence) == [Directive("payment.visibility", "public", True)]


NEUTRAL = [
    "Follow the user's preferences carefully.",
    "Look up the contact before sending a text.",
    "The user has three payment cards.",
    "Do each task exactly once, then call supervisor__complete_task.",
    "Emails should be polite and short.",
    "Notes are private.",
]


@pytest.mark.parametrize("sentence", NEUTRAL)
def test_neutral_sentences_yield_no_directive(sentence: str) -> None:
    assert recognize(sentence) == []


def test_shipped_system_prompt_yields_no_directive() -> None:
    text = (REPO / "prompts" / "system.md").read_text(encoding="utf-8")
    found = {s: recognize(s) for s in split_sentences(text)}
    assert {s: d for s, d in found.items() if d} == {}


def test_api_docs_yield_no_directive() -> None:
    found = {s: recognize(s) for s in split_sentences(api_docs())}
    assert {s: d for s, d in found.items() if d} == {}


def test_rendered_prompt_without_memory_yields_no_directive() -> None:
    files = read_prompt_files(REPO / "prompts")
    prompt = build_system_prompt(files, api_docs=api_docs(), memory="")
    assert read_directives(prompt) == {}


# --- a preference's value: given, or implied by a computed rule (no default guesses) --------


def test_only_computed_rules_imply_a_value() -> None:
    implied = {r.name: r.implied_value for r in RULES if r.implied_value is not None}
    assert implied == {
        "habitual_card": Computed("habitual_card"),
        "running_total": Computed("running_total"),
        "note_checksum": Computed("checksum"),
    }


@pytest.mark.parametrize("rule", [r.name for r in RULES if r.implied_value is None])
def test_a_preference_without_a_value_is_rejected_unless_its_rule_implies_one(rule: str) -> None:
    with pytest.raises(ValidationError, match="needs a value"):
        Preference.validate({"rule": rule})
    with pytest.raises(ValueError, match="needs a value"):
        Preference(rule=rule)  # built without pydantic: the same check
    with pytest.raises(ValidationError, match="needs a value"):
        Preference.validate({"rule": rule, "changes": [{"at_episode": 3, "value": "x"}]})


def test_a_change_to_no_value_is_rejected_unless_the_rule_implies_one() -> None:
    with pytest.raises(ValidationError, match="needs a value"):
        Preference.validate(
            {"rule": "sms_signoff", "value": "B", "changes": [{"at_episode": 3, "value": None}]}
        )
    held = Preference.validate(
        {"rule": "note_checksum", "changes": [{"at_episode": 3, "value": None}]}
    )
    assert held.value_at(5) == Computed("checksum")


def test_a_computed_preference_without_a_value_holds_the_implied_one() -> None:
    assert Preference(rule="running_total").value_at(None) == Computed("running_total")
