"""The mechanical filter refuses lessons that name their source task's specifics."""

from __future__ import annotations

import json
from collections.abc import Sequence

import pytest

from evolve.llm import JsonSchema, Message, MockLLM
from evolve.skills import Reflection, reflect, screen, specifics

INSTRUCTION = "Pay Jamie Lee back $12.50 on Venmo for lunch at Nopa."
NOTE = "Make a note titled 'Weekend Trip' with these to-dos: pack; book hotel."
ACTIONS = "\n".join(
    [
        'phone__search_contacts({"query": "Jamie"}) -> [{"name": "Jamie Lee", "phone": "+1 415 555 0134", '
        '"email": "jamie.lee@example.com"}]',
        'venmo__send_payment({"amount": 12.5, "receiver_email": "jamie.lee@example.com", '
        '"note": "lunch"}) -> {"transaction_id": 48213}',
    ]
)
TOOLS = [
    "venmo__send_payment",
    "phone__search_contacts",
    "gmail__send_email",
    "supervisor__complete_task",
]
TASK = specifics("pay_back-3", INSTRUCTION, ACTIONS, ["venmo", "phone", "gmail"])


@pytest.mark.parametrize(
    ("lesson", "why"),
    [
        ("When paying Jamie, read the payment back.", "names 'Jamie'"),
        ("Check the Lee account before paying.", "names 'Lee'"),
        ("Pay back 12.50 only after checking the balance.", "amount"),
        ("Never send more than $12.5 without a check.", "amount"),
        ("See pay_back-3 for how to confirm payments.", "task's id"),
        ("Send receipts to jamie.lee@example.com after paying.", "e-mail"),
        ("Call +1 415 555 0134 to confirm.", "number"),
        ("Read /home/alex/payments.csv before paying.", "path"),
        ("Open https://venmo.com/pay to confirm.", "URL"),
        ("Confirm transaction 48213 went through.", "number"),
        ("Mention Nopa in the payment note.", "names 'Nopa'"),
    ],
)
def test_the_filter_refuses_ids_names_amounts_paths_and_urls(lesson: str, why: str) -> None:
    reason = screen(lesson, TASK)
    assert reason is not None and why in reason, reason


@pytest.mark.parametrize(
    "lesson",
    [
        "After the last venmo write, read the payment back and confirm it matches the request.",
        "Look up the recipient with a search call and use the identifier it returns.",
        "Set the visibility explicitly before paying; never leave it at the default.",
        "Use read/write calls in order: search first, then send.",
        "In phone, check the contact's number from the search result, not from memory.",
    ],
)
def test_the_filter_keeps_generic_lessons(lesson: str) -> None:
    assert screen(lesson, TASK) is None


def test_quoted_titles_from_the_instruction_are_specifics() -> None:
    note = specifics("note_todo-1", NOTE, "", ["simple_note"])
    assert screen("Title every note Weekend Trip.", note) is not None
    assert screen("Put every to-do on its own line in the note.", note) is None


def _reply(lesson: str, trigger: str = "a venmo payment") -> str:
    return json.dumps({"lesson": lesson, "trigger": trigger, "evidence": "payment was public",
                       "scope_hint": "topic", "topic": "venmo"})  # fmt: skip


def _reflect(llm: MockLLM) -> Reflection:
    return reflect(
        llm, ref="c1", episode=3, task_id="pay_back-3", instruction=INSTRUCTION, actions=ACTIONS,
        verifier="My payment to Jamie Lee was public.", tools=TOOLS, seed=1,
    )  # fmt: skip


def test_reflect_screens_the_candidate_and_logs_the_refusal() -> None:
    found = _reflect(MockLLM([_reply("Read the payment back; this matters with Jamie.")]))
    assert found.candidate is None
    [refusal] = found.refused
    assert refusal.op == "filter" and "Jamie" in refusal.reason
    kept = _reflect(MockLLM([_reply("Read the payment back before completing the task.")]))
    cand = kept.candidate
    assert cand is not None and cand.topic == "venmo" and cand.evidence == "payment was public"


def test_reflect_does_not_see_the_library_and_refuses_bad_replies() -> None:
    seen: list[Sequence[Message]] = []

    def answer(messages: Sequence[Message], schema: JsonSchema | None) -> str:
        seen.append(messages)
        return "not json at all"

    found = _reflect(MockLLM(answer))
    assert found.candidate is None and found.refused[0].op == "reflect"
    prompt = seen[0][-1].content
    assert "<verifier>" in prompt and "My payment to Jamie Lee was public." in prompt
    assert "<shelves>" not in prompt and "skill-" not in prompt
