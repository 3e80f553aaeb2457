"""Adversarial review (issue 13): a lesson from a trajectory that called no app never counts as
a topic toward promotion, whatever the reflector's reply says its topic is."""

from __future__ import annotations

import json

from evolve.llm import MockLLM
from evolve.skills import reflect
from evolve.skills._reflect import NO_APP_TOPIC

INSTRUCTION = "Pay Jamie Lee back $12.50 on Venmo for lunch."
TOOLS = ["venmo__send_payment", "gmail__send_email", "supervisor__complete_task"]


def _topic(actions: str, named: str) -> str:
    reply = json.dumps(
        {"lesson": "Finish the task instead of giving up.", "trigger": "a task with a write",
         "evidence": "nothing was paid", "scope_hint": "topic", "topic": named}
    )  # fmt: skip
    found = reflect(
        MockLLM([reply]), ref="c1", episode=1, task_id="pay_back-3", instruction=INSTRUCTION,
        actions=actions, verifier="Nothing was paid.", tools=TOOLS, seed=1,
    )  # fmt: skip
    assert found.candidate is not None, found.refused
    return found.candidate.topic


def test_a_reply_cannot_give_a_trajectory_that_called_no_app_an_app() -> None:
    """The agent gave up (only the supervisor and the docs were called); the model, reading the
    task, names the app the task is about. Taking it would file a give-up lesson under that
    app, and two such lessons from tasks of two apps would promote as a cross-app shape: the
    very case the no-app shelf keeps out of promotion."""
    gave_up = 'supervisor__complete_task({"status": "fail"}) -> null'
    assert _topic(gave_up, "venmo") == NO_APP_TOPIC
    assert _topic("", "gmail") == NO_APP_TOPIC


def test_a_reply_may_still_correct_the_app_of_a_trajectory_that_called_apps() -> None:
    both = 'gmail__send_email({"to": "x"}) -> {}\nvenmo__send_payment({"amount": 1}) -> {}'
    assert _topic(both, "gmail") == "gmail"
    assert _topic(both, "no_such_app") == "venmo"
