"""The support desk's checkers (PROTECTED, like all of evalset/).

`check`: is the customer's question answered? `rule_<name>`: the desk's house rules. Each
returns None (does not apply), True (kept), or the complaint: one string, or a pair (what the
customer says in the instance tier, the rule stated in the corrective tier).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from evolve.envs import ApiCall
from evolve.envs.files import FilesTask

SIGN_OFF = "Best, the Support Desk"
Verdict = bool | str | tuple[str, str] | None


def _first_name(task: FilesTask) -> str:
    return str(task.inputs["customer"]).split()[0]


def check(task: FilesTask, answer: Any, calls: Sequence[ApiCall]) -> Verdict:
    order = task.inputs["order_id"]
    looked = any(
        c.api == "lookup_order" and c.ok and c.args.get("order_id") == order for c in calls
    )
    if not looked:
        return "You answered without even looking at my order."
    if str(task.expected["says"]).lower() not in str(answer).lower():
        return "That does not answer my question."
    return True


def rule_greeting(task: FilesTask, answer: Any) -> Verdict:
    first = _first_name(task)
    if str(answer).startswith(f"Hi {first},"):
        return True
    return (
        "You did not greet me by name.",
        "Start every reply with 'Hi <first name>,' (the customer's first name).",
    )


def rule_sign_off(answer: Any) -> Verdict:
    if str(answer).rstrip().endswith(SIGN_OFF):
        return True
    return ("The reply has no proper sign-off.", f"End every reply with '{SIGN_OFF}'.")


def rule_order_reference(task: FilesTask, answer: Any) -> Verdict:
    if f"#{task.inputs['order_id']}" in str(answer):
        return True
    return (
        "You did not quote my order number the way your shop does.",
        "Quote the order number with a hash sign in front (#A1234).",
    )


def rule_no_late_refund(task: FilesTask, answer: Any) -> Verdict:
    if task.expected.get("refund_allowed") is not False:
        return None  # a refund request within 30 days of delivery, or no refund at all
    text = str(answer).lower()
    if "store credit" in text and "we will refund" not in text:
        return True
    return (
        "You promised me a refund your shop does not give.",
        "Never promise a refund for an order delivered more than 30 days ago; "
        "offer store credit instead.",
    )
