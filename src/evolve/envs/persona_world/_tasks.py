"""Task families of `persona_world`.

A family is a template over one *kind* of action (a text, a payment, a note, an email). The
task instances with their parameters are frozen data in the workspace's `evalset/tasks.yaml`;
this module holds what is code: the instruction templates, the reference arguments of each
kind's final call (no preference applied), and the functional success check.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from evolve.envs._protocol import ApiCall, Task
from evolve.envs.persona_world._world import CONTACTS_BY_KEY, Contact


@dataclass(frozen=True)
class Family:
    name: str
    kind: str
    template: str


FAMILIES: tuple[Family, ...] = (
    Family("text_update", "sms", "Text {contact_name} to let them know: {message}"),
    Family("text_invite", "sms", "Send {contact_name} a text inviting them: {message}"),
    Family("text_thanks", "sms", "Text {contact_name} to thank them: {message}"),
    Family("pay_back", "payment", "Pay {contact_name} back ${amount:.2f} on Venmo for {reason}."),
    Family(
        "pay_gift", "payment", "Send {contact_name} ${amount:.2f} on Venmo as a gift for {reason}."
    ),
    Family("pay_share", "payment", "Venmo {contact_name} ${amount:.2f}, my share of {reason}."),
    Family("note_todo", "note", "Make a note titled '{title}' with these to-dos: {item_list}."),
    Family(
        "note_recipe", "note", "Save a note titled '{title}' listing the ingredients: {item_list}."
    ),
    Family(
        "note_packing", "note", "Create a packing-list note titled '{title}' with: {item_list}."
    ),
    Family(
        "email_followup",
        "email",
        "Email {contact_name} with the subject '{subject}' and say: {message}",
    ),
    Family(
        "email_invite",
        "email",
        "Email {contact_name} an invitation with the subject '{subject}': {message}",
    ),
    Family(
        "email_thanks",
        "email",
        "Send {contact_name} a thank-you email with the subject '{subject}': {message}",
    ),
)
FAMILIES_BY_NAME = {f.name: f for f in FAMILIES}

MAIN_TOOL = {
    "sms": "phone__send_text_message",
    "payment": "venmo__send_payment",
    "note": "simple_note__create_note",
    "email": "gmail__send_email",
}


def instruction(family: Family, params: Mapping[str, Any]) -> str:
    values = dict(params)
    contact = values.get("contact")
    if contact is not None:
        values["contact_name"] = CONTACTS_BY_KEY[str(contact)].name
    if "items" in values:
        values["item_list"] = "; ".join(values["items"])
    return family.template.format(**values)


def contact_of(task: Task) -> Contact | None:
    key = task.params.get("contact")
    return CONTACTS_BY_KEY.get(str(key)) if key is not None else None


def reference_args(task: Task) -> dict[str, Any]:
    """The final call's arguments with no preference applied (the world's defaults).

    Credentials (the access token) are left for the agent to fill in.
    """
    contact = contact_of(task)
    p = task.params
    if task.kind == "sms":
        assert contact is not None
        return {"phone_number": contact.phone_number, "message": str(p["message"])}
    if task.kind == "payment":
        assert contact is not None
        return {
            "receiver_email": contact.email,
            "amount": float(p["amount"]),
            "note": str(p["reason"]).capitalize(),
        }
    if task.kind == "note":
        return {"title": str(p["title"]), "content": "\n".join(p["items"])}
    if task.kind == "email":
        assert contact is not None
        return {"to": contact.email, "subject": str(p["subject"]), "body": str(p["message"])}
    raise ValueError(f"unknown task kind {task.kind!r}")


def main_call(task: Task, calls: Sequence[ApiCall]) -> ApiCall | None:
    """The last successful call of the task's kind (the one the checkers judge)."""
    tool = MAIN_TOOL[task.kind]
    done = [c for c in calls if c.ok and c.tool == tool]
    return done[-1] if done else None


def functional_failure(task: Task, calls: Sequence[ApiCall], completed: bool) -> str | None:
    """None if the task itself was done, else one sentence saying what is missing."""
    tool = MAIN_TOOL[task.kind]
    done = [c for c in calls if c.ok and c.tool == tool]
    contact = contact_of(task)
    p = task.params
    if not done:
        return "The task wasn't done: nothing was sent or saved."
    if len(done) > 1:
        return "The task was done more than once."
    args = done[0].args
    if task.kind == "sms":
        assert contact is not None
        if args.get("phone_number") != contact.phone_number:
            return "The text went to the wrong person."
        if str(p["message"]) not in str(args.get("message", "")):
            return "The text didn't say what I asked."
    elif task.kind == "payment":
        assert contact is not None
        if args.get("receiver_email") != contact.email:
            return "The payment went to the wrong person."
        if abs(float(args.get("amount", 0)) - float(p["amount"])) > 0.005:
            return "The payment was for the wrong amount."
    elif task.kind == "note":
        content = str(args.get("content", ""))
        if str(p["title"]).lower() not in str(args.get("title", "")).lower():
            return "The note has the wrong title."
        if not all(item in content for item in p["items"]):
            return "The note is missing some items."
    elif task.kind == "email":
        assert contact is not None
        if args.get("to") != contact.email:
            return "The email went to the wrong person."
        if str(p["subject"]) not in str(args.get("subject", "")) or str(p["message"]) not in str(
            args.get("body", "")
        ):
            return "The email didn't say what I asked."
    if not completed:
        return "The task was never marked complete."
    return None
